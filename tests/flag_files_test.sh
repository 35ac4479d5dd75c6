#!/usr/bin/env bash
# End-to-end: every file named by a flag, in every binary, is checked to be a regular file under
# a size cap (common/file.h) before it is read: a device (/dev/zero), a FIFO with no writer, a
# directory and a file over the cap are each refused at once with a message naming the path and
# what is wrong — not read until memory runs out, not blocked on forever, not a crash.
set -euo pipefail

source "$1"  # tests/cli_lib.sh: TMP, fail, expect_error, tiny_trace
shift
PLANNER="$1"
ENGINE="$2"
MAKE_TINY="$3"
SIM="$4"
ROUTER="$5"
CLUSTER="$6"

tiny_trace "$MAKE_TINY" "$ENGINE" "$TMP/t.trace"
DB="$TMP/planner.db"
"$PLANNER" build --db="$DB" --model=tiny --traces="$TMP/t.trace" --devices=2 >/dev/null
mkfifo "$TMP/fifo" "$TMP/bigpipe"
mkdir "$TMP/dir"
truncate -s 100M "$TMP/huge"  # Sparse: over the 64 MiB cap for configuration files.
# A model directory whose config.json is a device.
mkdir "$TMP/devmodel"
cp -r "$TMP/model/." "$TMP/devmodel/"
ln -sf /dev/zero "$TMP/devmodel/config.json"

# refuses WHAT -- COMMAND...: fails (not by a signal or the 30 s timeout) naming WHAT.
refuses() {
  local what="$1" out rc=0
  shift 2
  out="$(timeout -s KILL 30 "$@" 2>&1 </dev/null)" || rc=$?
  ((rc != 0)) || fail "accepted: $* -- $out"
  ((rc < 124)) || fail "exit $rc (a signal or the timeout) from: $* -- $(tail -c 2000 <<<"$out")"
  grep -qF -- "$what" <<<"$out" || fail "no '$what' in the answer to: $* -- $(tail -c 2000 <<<"$out")"
}

# Each flag with each bad file: the kind named, and the path. Pipes are read (`--flag=<(jq ...)`)
# up to the cap: one that brings more is refused as it reads, one whose writer never comes reads
# as empty (refused as whatever the flag wanted, never a hang).
bad_files() {  # bad_files COMMAND... {}: {} replaced by each bad file
  local file kind writer
  for file in /dev/zero "$TMP/dir" "$TMP/huge" "$TMP/bigpipe" "$TMP/fifo"; do
    case "$file" in
      /dev/zero) kind="/dev/zero is a character device" ;;
      */dir) kind="$TMP/dir is a directory" ;;
      */huge) kind="$TMP/huge holds 104857600 bytes; the most read is 67108864" ;;
      */bigpipe) kind="$TMP/bigpipe holds more than 67108864 bytes" ;;
      */fifo) kind="" ;;
    esac
    writer=""
    if [[ "$file" == */bigpipe ]]; then
      head -c 70000000 /dev/zero >"$file" 2>/dev/null &
      writer=$!
    fi
    refuses "$kind" -- "${@//\{\}/$file}"
    [[ -z "$writer" ]] || { kill "$writer" 2>/dev/null || true; wait "$writer" 2>/dev/null || true; }
  done
  echo "refused: $*"
}

ROUTER_FLAGS=(--engines=127.0.0.1:1 --model="$TMP/model" --port=0 --http_port=0)
bad_files "$PLANNER" build --db="$DB" --model=tiny --traces="$TMP/t.trace" --devices=2 --topology={}
bad_files "$PLANNER" import --db="$DB" --model=tiny --file={}
bad_files "$SIM" --model="$TMP/model" --db="$DB" --traces="$TMP/t.trace" --version=1 --cluster={}
bad_files "$ROUTER" "${ROUTER_FLAGS[@]}" --chat_template={}
bad_files "$ROUTER" "${ROUTER_FLAGS[@]}" --topology={}
bad_files "$ENGINE" serve --model="$TMP/model" --rendezvous="$TMP/rdv" --ranks=2 --rank=0 \
  --port=0 --topology={}
bad_files "$ENGINE" serve --model="$TMP/model" --rendezvous="$TMP/rdv1" --ranks=1 --rank=0 \
  --port=0 --placement={}
# Affinity tables are data (a 16 GiB cap): only the kind is checked.
for file in /dev/zero "$TMP/dir"; do
  refuses "--affinity: $file is a" -- "$ROUTER" "${ROUTER_FLAGS[@]}" \
    --placement="$TMP/model/config.json" --affinity="$file" --version=1
done
refuses "--placement: /dev/zero is a character device" -- "$ENGINE" serve --model="$TMP/model" \
  --rendezvous="$TMP/rdv1" --ranks=1 --rank=0 --port=0 --placement=/dev/zero
bad_files "$CLUSTER" --model="$TMP/model" --ranks=2 --run_dir="$TMP/cluster" --topology={}
# Traces are streamed (a trace may be larger than any cap), so only the kind is checked; a
# directory is an array trace, which must hold index.json.
refuses "truncated at byte 0" -- "$PLANNER" build --db="$DB" --model=tiny \
  --traces="$TMP/fifo" --devices=2
for file in /dev/zero; do
  refuses "$file is a" -- "$PLANNER" build --db="$DB" --model=tiny --traces="$file" --devices=2
done
refuses "dir/index.json" -- "$PLANNER" build --db="$DB" --model=tiny --traces="$TMP/dir" --devices=2
# JSONL inputs are streamed with a cap on one line.
for file in /dev/zero "$TMP/dir"; do
  refuses "$file is a" -- "$ENGINE" trace --model="$TMP/model" --prompts="$file" --out="$TMP/x.trace"
done
head -c 70000000 /dev/zero | tr '\0' 'x' >"$TMP/long.jsonl"
refuses "long.jsonl:1: a line longer than 67108864 bytes" -- \
  "$ENGINE" trace --model="$TMP/model" --prompts="$TMP/long.jsonl" --out="$TMP/x.trace"
refuses "config.json is a character device" -- \
  "$ENGINE" generate --model="$TMP/devmodel" --prompt=hi --max_tokens=1
echo "PASS"

#!/usr/bin/env bash
# End-to-end, on the shared trained model (qwen3-moe-a, real text): an A/B experiment routes each
# arm exactly as its version is routed when served alone. Two G = 2 versions from one profile
# trace (eplb = 1, semantic = 2), an experiment at 50/50, `local_cluster --experiment`, then
# held-out prompts one at a time (so the rebatcher's choice depends on the tables alone); then
# each version served alone (`local_cluster --placement V`) gets the prompts its arm got. Every
# request must land on the same rank with the same LAR, each arm's LAR must equal the alone
# cluster's, the stats must name each arm's table version with no tables error, and the
# semantic arm must beat blind placement (0.5 at G = 2).
set -euo pipefail

source "$1"  # tests/cli_lib.sh: TMP, fail, expect_error
shift
CLUSTER="$1"
ENGINE="$2"
PLANNER="$3"
ROUTER="$4"
RCLIENT="$5"

if [[ -z "${SEMMOE_SHARED_DIR:-}" ]]; then
  echo "SKIPPED: SEMMOE_SHARED_DIR is unset (./semmoe test sets it to ../shared)"
  exit 0
fi
MODEL="$SEMMOE_SHARED_DIR/models/qwen3-moe-a"
PROMPTS="$SEMMOE_SHARED_DIR/data/prompts.jsonl"
[[ -f "$MODEL/config.json" && -f "$PROMPTS" ]] || fail "no qwen3-moe-a or prompts in $SEMMOE_SHARED_DIR"

# Prompts' token ids, the first 256 of each: lines 1-150 profile, 1001-1040 are served.
sed -n '1,150p' "$PROMPTS" | ids_of | awk '{ printf "{\"id\": \"p%d\", \"token_ids\": [%s]}\n", NR, $0 }' \
  >"$TMP/profile.jsonl"
sed -n '1001,1040p' "$PROMPTS" | ids_of >"$TMP/serve.ids"

"$ENGINE" trace --model="$MODEL" --prompts="$TMP/profile.jsonl" --out="$TMP/p.trace" 2>/dev/null
DB="$TMP/ab.db"
"$PLANNER" build --db="$DB" --model=qwen3 --traces="$TMP/p.trace" --devices=2 --mode=dp \
  --algo=eplb >/dev/null
"$PLANNER" build --db="$DB" --model=qwen3 --traces="$TMP/p.trace" --devices=2 --mode=dp >/dev/null
"$PLANNER" experiment create --db="$DB" --model=qwen3 --a=1 --b=2 --share=50 >/dev/null
"$PLANNER" experiment start --db="$DB" --id=1 >/dev/null

start_cluster() {  # start_cluster NAME FLAGS... ; sets PID and ROUTER_AT (cli_lib.sh)
  local name="$1"
  shift
  launch_cluster "$name" "$CLUSTER" --model="$MODEL" --ranks=2 --db="$DB" \
    --engine_binary="$ENGINE" --planner_binary="$PLANNER" --router_binary="$ROUTER" \
    --kv_cache_mb=64 "$@"
  ROUTER_AT="$RADDR"
}

field() {  # field NAME < final JSON: the value (proto3 leaves zeros out: "0")
  local v
  v="$(grep -o "\"$1\":\"\\{0,1\\}[A-Za-z0-9.e-]*" | head -1 | sed 's/.*://; s/"//g' || true)"
  echo "${v:-0}"
}

# send ARM_FILTER OUT: each served prompt whose experiment arm is ARM_FILTER ("" = all), one at a
# time with its user key; one line per request: "i arm rank lar version".
send() {
  local want="$1" out="$2" i=0 final arm
  : >"$out"
  while read -r ids; do
    i=$((i + 1))
    if [[ -n "$want" ]]; then
      grep -q "^$i $want " "$TMP/experiment.rec" || continue
    fi
    final="$("$RCLIENT" generate --target="$ROUTER_AT" --token_ids="$ids" --max_tokens=4 \
      --user="user-$i" --json)"
    arm="$(grep -o '"arm":"[A-Z]*"' <<<"$final" | cut -d'"' -f4 || true)"
    echo "$i ${arm:-${want:-?}} $(field rank <<<"$final") $(field lar <<<"$final")" \
      "$(field placement_version <<<"$final")" >>"$out"
  done <"$TMP/serve.ids"
}

# --- The experiment.
start_cluster ab --experiment=1
send "" "$TMP/experiment.rec"
stats="$("$RCLIENT" stats --target="$ROUTER_AT" --json)"
grep -q '"tables_error":"[^"]' <<<"$stats" && fail "tables error in the experiment: $stats"
text="$("$RCLIENT" stats --target="$ROUTER_AT")"
grep -q "arm A: tables of version 1, arm B: tables of version 2" <<<"$text" ||
  fail "stats do not name the arms' tables: $text"
stop_cluster ab
grep -q " A " "$TMP/experiment.rec" && grep -q " B " "$TMP/experiment.rec" ||
  fail "one arm got everything: $(cat "$TMP/experiment.rec")"
awk '$2 == "A" && $5 != 1 || $2 == "B" && $5 != 2 { exit 1 }' "$TMP/experiment.rec" ||
  fail "requests not placed with their arm's version: $(cat "$TMP/experiment.rec")"

# --- Each version alone, with its arm's prompts: the same rank and LAR for every request.
for arm in A B; do
  version=$([[ "$arm" == A ]] && echo 1 || echo 2)
  start_cluster "alone$version" --placement="$version" --router_policy=semantic
  send "$arm" "$TMP/alone$version.rec"
  stop_cluster "alone$version"
  grep " $arm " "$TMP/experiment.rec" | awk '{ print $1, $3, $4, $5 }' >"$TMP/want$version"
  awk '{ print $1, $3, $4, $5 }' "$TMP/alone$version.rec" >"$TMP/got$version"
  # LAR per request within 0.005 (the same rank runs the same tokens; only float noise).
  paste -d' ' "$TMP/want$version" "$TMP/got$version" | awk -v arm="$arm" '
    $1 != $5 || $2 != $6 || $4 != $8 { print "arm " arm ", request " $1 ": rank/version " $2 "/" $4 \
      " in the experiment, " $6 "/" $8 " alone"; bad = 1 }
    ($3 - $7 > 0.005 || $7 - $3 > 0.005) { print "arm " arm ", request " $1 ": LAR " $3 " vs " $7; bad = 1 }
    END { exit bad }' || fail "arm $arm is not routed as version $version alone"
  [[ "$(wc -l <"$TMP/want$version")" == "$(wc -l <"$TMP/got$version")" ]] ||
    fail "arm $arm: $(wc -l <"$TMP/want$version") requests in the experiment, $(wc -l <"$TMP/got$version") alone"
done

# The semantic arm beats blind placement: mean request LAR over its requests.
mean_b="$(awk '$2 == "B" { s += $4; n++ } END { printf "%.4f", s / n }' "$TMP/experiment.rec")"
awk -v m="$mean_b" 'BEGIN { exit !(m > 0.53) }' ||
  fail "semantic arm B's mean LAR $mean_b is not above blind placement's 0.5"
echo "arm B (semantic) mean request LAR $mean_b; every request routed as when served alone"
echo "PASS"

# Helpers shared by the end-to-end CLI tests (sourced; the BUILD passes its path first).
TMP="${TEST_TMPDIR:-$(mktemp -d)}"

fail() { echo "FAIL: $*" >&2; exit 1; }

# ids_of < PROMPTS.jsonl: each prompt's token ids, the first 256, comma-separated, a line each.
ids_of() { grep -o '"token_ids": \[[0-9, ]*\]' | sed 's/"token_ids": \[//; s/\]//; s/ //g' |
  cut -d, -f1-256; }

# run_tty CMD...: the command on a pseudo-terminal (`script`), its output with \r as newlines;
# have_tty: whether `script` works here.
run_tty() { script -qec "$*" /dev/null </dev/null | tr '\r' '\n'; }
have_tty() { script -qec true /dev/null </dev/null >/dev/null 2>&1; }

expect_error() {  # expect_error CODE SUBSTRING -- command...
  local code="$1" text="$2"
  shift 3
  local out rc=0
  out="$("$@" 2>&1)" || rc=$?
  [[ "$rc" == "$code" ]] || fail "exit $rc (want $code) from: $* -- $out"
  grep -qF -- "$text" <<<"$out" || fail "no '$text' in: $out"
}

# tokens_of: the first "token_ids" array of a client's JSON on stdin.
tokens_of() { grep -o '"token_ids":\[[0-9,]*\]' | head -1; }

# want_tokens ENGINE MODEL: WANT[prompt] (an associative array the caller declared) = the single
# device's 6 greedy tokens for every prompt in PROMPTS.
want_tokens() {
  local p
  for p in "${PROMPTS[@]}"; do
    WANT["$p"]="$("$1" generate --model="$2" --prompt="$p" --max_tokens=6 --greedy \
      --ignore_eos --json 2>/dev/null | tokens_of)"
    [[ -n "${WANT[$p]}" ]] || fail "no single-device tokens for '$p'"
  done
}

# tp_version ENGINE PLANNER MODEL DB: traces 16 short prompts on MODEL and builds a semantic
# Attention-TP version for 2 devices (version 1 in a fresh DB) with its affinity and A tables;
# the trace stays in $TMP/t.trace.
tp_version() {
  local engine="$1" planner="$2" model="$3" db="$4"
  : >"$TMP/tp_prompts.jsonl"
  for i in $(seq 1 16); do
    printf '{"id": "p%d", "text": "The router sends request %d to the rank that holds its experts."}\n' \
      "$i" "$i" >>"$TMP/tp_prompts.jsonl"
  done
  "$engine" trace --model="$model" --prompts="$TMP/tp_prompts.jsonl" --out="$TMP/t.trace" \
    2>/dev/null
  "$planner" build --db="$db" --model=tiny --traces="$TMP/t.trace" --devices=2 --mode=tp \
    >/dev/null
}

# tiny_trace MAKE_TINY ENGINE: a tiny qwen3_moe checkpoint (8 experts, top-2) in $TMP/model and
# the routing trace of 24 prompts of three kinds (code, prose, Python) in OUT (default
# $TMP/t.trace).
tiny_trace() {
  local make_tiny="$1" engine="$2" out="${3:-$TMP/t.trace}" i text
  "$make_tiny" --arch=qwen3_moe --out="$TMP/model" --seed=5 --experts=8 --top_k=2 >/dev/null
  : >"$TMP/prompts.jsonl"
  for i in $(seq 1 24); do
    case $((i % 3)) in
      0) text="int main(int argc, char** argv) { return run(argc, argv); } // $i" ;;
      1) text="The planner reads the traces and writes a new placement, version $i." ;;
      2) text="def forward(self, x): return self.down(self.act(self.gate(x))) # $i" ;;
    esac
    printf '{"id": "p%d", "text": "%s"}\n' "$i" "$text" >>"$TMP/prompts.jsonl"
  done
  "$engine" trace --model="$TMP/model" --prompts="$TMP/prompts.jsonl" --out="$out" 2>/dev/null
}

# launch_cluster NAME COMMAND...: runs a local_cluster COMMAND (the binary and its flags) in the
# background with --run_dir $TMP/NAME and an endpoints file, and waits until it serves; sets PID,
# EP (the endpoints file) and RADDR (the router's address). Fails with the cluster's output if it
# exits or does not start in 2 minutes.
launch_cluster() {
  local name="$1"
  shift
  EP="$TMP/$name.endpoints"
  "$@" --run_dir="$TMP/$name" --endpoints_file="$EP" >"$TMP/$name.out" 2>&1 &
  PID=$!
  for _ in $(seq 1 1200); do
    [[ -s "$EP" ]] && break
    kill -0 "$PID" 2>/dev/null || fail "cluster $name exited early: $(cat "$TMP/$name.out")"
    sleep 0.1
  done
  [[ -s "$EP" ]] || fail "cluster $name did not start: $(cat "$TMP/$name.out")"
  RADDR="$(grep -o '"router":"[^"]*"' "$EP" | cut -d'"' -f4)"
}

# start_cluster NAME FLAGS...: launch_cluster of $CLUSTER on $TMP/model, 2 ranks, 16 MiB of KV
# cache, with the binaries $ENGINE, $PLANNER, $ROUTER and the planner database $DB.
start_cluster() {
  local name="$1"
  shift
  launch_cluster "$name" "$CLUSTER" --model="$TMP/model" --engine_binary="$ENGINE" \
    --planner_binary="$PLANNER" --router_binary="$ROUTER" --db="$DB" --ranks=2 --kv_cache_mb=16 \
    "$@"
}

# stop_cluster NAME: Ctrl-C to the cluster launch_cluster started; it must exit 0.
stop_cluster() {
  kill -INT "$PID"
  local rc=0
  wait "$PID" || rc=$?
  [[ "$rc" == 0 ]] || fail "cluster $1: Ctrl-C: exit $rc: $(cat "$TMP/$1.out")"
}

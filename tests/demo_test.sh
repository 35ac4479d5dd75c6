#!/usr/bin/env bash
# End-to-end: the demo behind `./semmoe demo` on a generated model — builds a semantic placement
# from a trace, runs vanilla + round-robin and semantic + rebatching on real local clusters, prints
# both rows; a second run reuses the stored version. Bad flags are clear errors.
set -euo pipefail

source "$1"  # tests/cli_lib.sh: TMP, fail, expect_error
shift
DEMO="$1"
MAKE_TINY="$2"
CLUSTER="$3"
ENGINE="$4"
PLANNER="$5"
ROUTER="$6"

"$MAKE_TINY" --arch=qwen3_moe --out="$TMP/model" --seed=1 --experts=16 --top_k=4 >/dev/null
mkdir -p "$TMP/corpus"
for i in $(seq 1 30); do
  printf 'int function_%d(int x) { return x * %d; }\n#define LIMIT_%d %d\n' "$i" "$i" "$i" "$i" \
    >"$TMP/corpus/header$i.h"
  printf 'The quick brown fox %d jumps over the lazy dog, and the license grants permission.\n' \
    "$i" >"$TMP/corpus/prose$i.txt"
done

run_demo() {
  "$DEMO" --model="$TMP/model" --db="$TMP/p.db" --run_dir="$TMP/run" --corpus="$TMP/corpus" \
    --num_prompts=40 --prompt_chars=120 --duration_s=2 --concurrency=4 --max_tokens=8 \
    --noserve --http_port=0 --local_cluster_binary="$CLUSTER" --engine_binary="$ENGINE" \
    --planner_binary="$PLANNER" "$@"
}

out="$(run_demo 2>&1)" || fail "demo failed: $out"
grep -q "planning a semantic DP placement" <<<"$out" || fail "no planning step: $out"
for row in "vanilla + round-robin" "semantic + rebatching"; do
  line="$(grep "^$row " <<<"$out")" || fail "no '$row' row: $out"
  lar="$(awk '{print $(NF-8)}' <<<"$line")"
  awk -v x="$lar" 'BEGIN { exit !(x > 0 && x <= 1) }' || fail "'$row' LAR '$lar': $line"
done
grep -q "the autopilot follows version 1 (active)" <<<"$out" || fail "no autopilot: $out"
# The semantic cluster's planner ran the autopilot on the version, now active.
"$PLANNER" list --db="$TMP/p.db" --model=model | grep -q "active" || fail "no active version"
grep -q "the planner's autopilot re-plans 'model'" "$TMP/run/semantic/cluster.log" ||
  fail "the semantic cluster ran no autopilot: $(cat "$TMP/run/semantic/cluster.log")"
out="$(run_demo 2>&1)" || fail "second demo failed: $out"
grep -q "using semantic placement version 1" <<<"$out" || fail "version not reused: $out"
out="$(run_demo --noautopilot 2>&1)" || fail "demo without the autopilot failed: $out"
grep -q "the autopilot follows" <<<"$out" && fail "--noautopilot still runs the autopilot: $out"

expect_error 2 "--model is required" -- "$DEMO"
expect_error 1 "no text to make prompts from" -- "$DEMO" --model="$TMP/model" \
  --db="$TMP/p2.db" --run_dir="$TMP/run2" --corpus="$TMP/nothing-here" --noserve
echo "PASS"

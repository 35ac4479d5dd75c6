#!/usr/bin/env bash
# End-to-end: a deepseek_v3 model (MLA, a dense first layer, sigmoid noaux_tc routing with group
# limits, a shared expert) through the whole product: `engine trace` (MoE layers 1 and 2 only),
# `planner build` and `planner drift` over those layers, a local cluster in Attention-DP and
# Attention-TP whose every answer equals the single device, live sampled routing traces, and a
# live rollout (`placements activate`) that loads the gained experts from the checkpoint.
set -euo pipefail

source "$1"  # tests/cli_lib.sh: TMP, fail, expect_error, tokens_of, want_tokens, start_cluster,
             # stop_cluster
shift
CLUSTER="$1"
ENGINE="$2"
PLANNER="$3"
MAKE_TINY="$4"
ROUTER="$5"
RCLIENT="$6"
CONSOLE="$7"

"$MAKE_TINY" --arch=deepseek_v3 --out="$TMP/model" --seed=3 --layers=3 --experts=16 --top_k=2 \
  --q_lora_rank=24 --groups=4 --topk_groups=2 --routed_scaling=2.5 >/dev/null
grep -q '"first_k_dense_replace": 1' "$TMP/model/config.json" || fail "no dense first layer"
DB="$TMP/p.db"
: >"$TMP/prompts.jsonl"
for i in $(seq 1 16); do
  printf '{"id": "p%d", "text": "The router sends request %d to the rank that holds its experts."}\n' \
    "$i" "$i" >>"$TMP/prompts.jsonl"
done
"$ENGINE" trace --model="$TMP/model" --prompts="$TMP/prompts.jsonl" --out="$TMP/t.trace" 2>/dev/null
"$ENGINE" score --model="$TMP/model" --input=<(echo '{"id": 0, "token_ids": [5, 6, 7]}') \
  --out="$TMP/score.jsonl" >/dev/null 2>&1
# Two MoE layers (model layers 1 and 2), three tokens each, top-2: six [a,b] pairs.
routing="$(grep -o '"routing": *\[.*\]' "$TMP/score.jsonl")"
[[ "$(grep -o '\[[0-9]*, *[0-9]*\]' <<<"$routing" | wc -l)" == 6 ]] &&
  grep -q '^"routing": *\[\[\[' <<<"$routing" || fail "score routing: $routing"
build() { "$PLANNER" build --db="$DB" --traces="$TMP/t.trace" "$@" >/dev/null; }
build --model=ds --devices=2 --mode=dp                # 1
build --model=ds --devices=2 --mode=dp --algo=random  # 2
build --model=dstp --devices=2 --mode=tp              # 3
"$PLANNER" activate --db="$DB" --version=1 >/dev/null
"$PLANNER" activate --db="$DB" --version=3 >/dev/null
out="$("$PLANNER" drift --db="$DB" --version=1 --traces="$TMP/t.trace")"
[[ "$(grep -c '^[12] ' <<<"$out")" == 2 && "$(grep -c '^0 ' <<<"$out")" == 0 ]] ||
  fail "drift should list model layers 1 and 2: $out"

PROMPTS=()
for i in $(seq 1 6); do PROMPTS+=("Request $i: the router sends it to rank $((i % 2))"); done
declare -A WANT
want_tokens "$ENGINE" "$TMP/model"
console() { "$CONSOLE" --endpoints="$EP" --yes "$@"; }
check_answers() {  # check_answers WHAT: every prompt through the router equals the single device
  local p got
  for p in "${PROMPTS[@]}"; do
    got="$("$RCLIENT" generate --target="$RADDR" --prompt="$p" --max_tokens=6 --json | tokens_of)"
    [[ "$got" == "${WANT[$p]}" ]] || fail "$1: '$p': got $got, want ${WANT[$p]}"
  done
  echo "$1: ${#PROMPTS[@]} prompts equal to the single device"
}

# --- Attention-DP on version 1, sampling every request; then version 2 rolled out live.
start_cluster dp --attn=dp --placement=1 --sample_routing=1
check_answers "dp, version 1"
console placements activate 2 >"$TMP/activate2.out" || fail "activate 2: $(cat "$TMP/activate2.out")"
grep -q "the group serves version 2 on every rank" "$TMP/activate2.out" ||
  fail "activate: $(cat "$TMP/activate2.out")"
grep -hq "serving placement version 2 from round" "$TMP"/dp/rank*.log ||
  fail "no switch in the rank logs"
check_answers "dp, version 2 after a live rollout"
for _ in $(seq 1 300); do  # The ranks flush their live traces every 10 s.
  [[ -s "$TMP/dp/rank0.trace" && -s "$TMP/dp/rank1.trace" ]] && break
  sleep 0.1
done
out="$("$PLANNER" drift --db="$DB" --version=2 --traces="$TMP/dp/rank0.trace,$TMP/dp/rank1.trace")"
[[ "$(grep -c '^[12] ' <<<"$out")" == 2 ]] || fail "live drift: $out"
stop_cluster dp

# --- Attention-TP (MLA sliced by query heads), shuffled with version 3's tables.
start_cluster tp --attn=tp --placement=3
check_answers "tp, version 3"
stop_cluster tp
echo PASS

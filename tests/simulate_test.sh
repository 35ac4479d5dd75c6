#!/usr/bin/env bash
# End-to-end: `simulate` (docs/SIMULATE.md) as an operator runs it — a placement built by the
# planner on a trace of a tiny model, predicted on the built-in profiles at one rate and over a
# sweep, the lab's fit and check on a lab setting's JSON — and its refusals.
set -euo pipefail

source "$1"  # tests/cli_lib.sh: TMP, fail, expect_error
shift
SIM="$1"
PLANNER="$2"
ENGINE="$3"
MAKE_TINY="$4"

tiny_trace "$MAKE_TINY" "$ENGINE" "$TMP/s.trace"
DB="$TMP/planner.db"
"$PLANNER" build --db="$DB" --model=tiny --traces="$TMP/s.trace" --devices=2 --algo=semantic >/dev/null
"$PLANNER" build --db="$DB" --model=tiny --traces="$TMP/s.trace" --devices=2 --algo=vanilla >/dev/null
sim() { "$SIM" --model="$TMP/model" --db="$DB" --traces="$TMP/s.trace" "$@"; }
num() { jq -e ".$1 | numbers" <<<"$2" >/dev/null || fail "no number $1 in: $2"; jq ".$1" <<<"$2"; }

# One rate: the interface's fields, the router the version's tables give.
out="$(sim --version=1 --cluster=h200 --rate=20 --requests=200 --json)"
for f in moe_layer_ms a2a_share step_ms ttft_p99_ms goodput_rps dispatch_ms experts_ms; do
  num "$f" "$out" >/dev/null
done
[[ "$(jq -r .router <<<"$out")" == affinity ]] || fail "router: $out"
[[ "$(jq -r .topology <<<"$out")" == 1x2 ]] || fail "2 GPUs of an 8-GPU node: $out"
awk -v s="$(num a2a_share "$out")" 'BEGIN { exit !(s > 0 && s < 1) }' || fail "a2a_share: $out"

# The link matters: two hosts, the lab's shared link, slow against fast.
slow="$(sim --version=2 --router=round_robin --cluster=lab --hosts=2 --ranks_per_host=1 --link_mbit=10 --json)"
fast="$(sim --version=2 --router=round_robin --cluster=lab --hosts=2 --ranks_per_host=1 --link_mbit=100000 --json)"
awk -v a="$(num dispatch_ms "$slow")" -v b="$(num dispatch_ms "$fast")" 'BEGIN { exit !(a > b) }' ||
  fail "a 10 Mbit/s link is not slower: $slow vs $fast"
# Vanilla without a database gives what version 2 (vanilla) gives.
van="$("$SIM" --model="$TMP/model" --traces="$TMP/s.trace" --devices=2 --cluster=lab \
  --hosts=2 --ranks_per_host=1 --link_mbit=10 --json)"
[[ "$(jq .moe_layer_ms <<<"$van")" == "$(jq .moe_layer_ms <<<"$slow")" ]] ||
  fail "vanilla by --devices differs from the stored vanilla: $van vs $slow"

# A sweep, as loadgen sweeps the lab.
out="$(sim --version=1 --cluster=lab --rates=1,2,50 --point_s=4 --json)"
[[ "$(jq '.sweep | length' <<<"$out")" == 3 ]] || fail "sweep points: $out"
num max_rate_in_slo "$out" >/dev/null

# The profile, overridden.
"$SIM" --cluster=h100 --set=wire_bytes=4 --print_profile >"$TMP/p.json"
[[ "$(jq -r .wire_bytes.source "$TMP/p.json")" == "--set on the command line" ]] || fail "--set"
sim --version=1 --cluster="$TMP/p.json" --json >/dev/null

# The lab: a setting as bench.sh records it, its work dir holding planner.db and s.trace.
jq -n --arg w "$TMP" '{setting: "dp_semantic", placement: "1", router_policy: "semantic",
  attn: "dp", netlab_flags: "", work_dir: $w, rates: "1,2", point_s: 4, ranks: 2,
  ranks_per_host: 1, link_mbit: 100, moe_layer_ms: 6, wait_ms: 2, dispatch_ms: 1.8,
  experts_ms: 0.3, combine_ms: 1.9, attention_ms: 0.3, max_rate_in_slo: 2}' >"$TMP/lab1.json"
"$SIM" fit --model="$TMP/model" --cluster=lab --lab="$TMP/lab1.json" --out="$TMP/fitted.json" \
  >"$TMP/fit.out" || fail "fit: $(cat "$TMP/fit.out")"
grep -q "fitted by \`simulate fit\`" "$TMP/fitted.json" || fail "fitted sources: $(cat "$TMP/fitted.json")"
out="$("$SIM" check --model="$TMP/model" --cluster="$TMP/fitted.json" --lab="$TMP/lab1.json" --json)"
[[ "$(jq '.settings | length' <<<"$out")" == 1 ]] || fail "check: $out"
num 'settings[0].error' "$out" >/dev/null

# A trace at DeepSeek-V3's shape from the synthetic router fitted to the tiny model's trace, and
# a prediction on it (vanilla over 16 GPUs: two H200 nodes).
out="$("$SIM" synth --shape=deepseek-v3 --like="$TMP/s.trace" --requests_synth=48 \
  --out="$TMP/dsv3.trace")" || fail "synth: $out"
[[ "$(jq .moe_layers <<<"$out")" == 58 && "$(jq .experts <<<"$out")" == 256 &&
   "$(jq .requests <<<"$out")" == 48 ]] || fail "synth shape: $out"
num params.token_bias "$out" >/dev/null
num achieved.token_lift "$out" >/dev/null
out="$("$SIM" --shape=deepseek-v3 --traces="$TMP/dsv3.trace" --devices=16 --cluster=h200 \
  --rate=20 --requests=100 --json)"
[[ "$(jq -r .topology <<<"$out")" == 2x8 ]] || fail "16 GPUs as 2 nodes of 8: $out"
num moe_layer_ms "$out" >/dev/null
expect_error 1 "does not match the trace" -- "$SIM" --shape=qwen3-235b --traces="$TMP/dsv3.trace" \
  --devices=16 --cluster=h200

# Refusals, named.
expect_error 1 "nosuch" -- sim --version=1 --cluster=nosuch
expect_error 1 "99" -- sim --version=99 --cluster=h200
expect_error 1 "warp" -- sim --version=1 --cluster=h200 --set=warp=1
expect_error 1 "does not match the trace" -- "$SIM" --shape=deepseek-v3 --db="$DB" --version=1 \
  --traces="$TMP/s.trace" --cluster=h200
expect_error 1 "topology 3x1" -- sim --version=1 --cluster=h200 --hosts=3 --ranks_per_host=1
expect_error 2 "give --model" -- "$SIM" --db="$DB" --version=1 --traces="$TMP/s.trace" --cluster=h200
expect_error 1 "rerun tools/netlab/bench.sh" -- "$SIM" check --model="$TMP/model" --cluster=lab \
  --lab=<(jq 'del(.placement)' "$TMP/lab1.json")
expect_error 2 "unknown command" -- "$SIM" simulate
echo "simulate_test: ok"

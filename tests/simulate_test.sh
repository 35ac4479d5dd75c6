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

# The time rule routes with the version's tables and the profile's figures (its never-worse
# property is router/rebatch:assigner_test's; what it gains is tools/simulate_scale.sh's).
timed="$(sim --version=1 --router=time --cluster=h200 --rate=20 --requests=200 --json)"
[[ "$(jq -r .router <<<"$timed")" == time ]] || fail "router time: $timed"
num moe_layer_ms "$timed" >/dev/null
# Without tables (vanilla) it still runs: its prompts' shares are even.
timed="$(sim --version=2 --router=time --cluster=h200 --rate=20 --requests=200 --json)"
num moe_layer_ms "$timed" >/dev/null

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

# The prediction against vanilla (planner build --cluster / planner predict) is stored, shown,
# and guards activation: a version predicted more than 2% slower is refused unless --force.
# The tiny model's shape as the planner takes it (the planner reads no config.json itself).
"$SIM" --model="$TMP/model" --print_shape >"$TMP/shape.json" || fail "print_shape"
[[ "$(jq -r .format "$TMP/shape.json")" == semmoe-model-shape ]] || fail "shape: $(cat "$TMP/shape.json")"
out="$("$PLANNER" predict --db="$DB" --version=1 --traces="$TMP/s.trace" --cluster=lab \
  --shape="$TMP/shape.json")" || fail "predict: $out"
grep -q "predicted on lab 1x2 (dp, router time)" <<<"$out" || fail "predict: $out"
shown="$("$PLANNER" show --db="$DB" --version=1)"
ratio="$(jq '.predictions["lab 1x2"].predicted_vs_vanilla' <<<"$shown")"
awk -v r="$ratio" 'BEGIN { exit !(r > 0) }' || fail "show: no predicted_vs_vanilla: $shown"
rate="$(jq '.predictions["lab 1x2"].predicted_max_rate_vs_vanilla' <<<"$shown")"
if awk -v r="$ratio" -v m="$rate" 'BEGIN { exit !(r > 1.02 || (m > 0 && m < 1 / 1.02)) }'; then
  expect_error 1 "predicted slower than vanilla on lab 1x2" -- "$PLANNER" activate --db="$DB" --version=1
  "$PLANNER" activate --db="$DB" --version=1 --force | grep -q "^--force: activating although" ||
    fail "activate --force"
else
  "$PLANNER" activate --db="$DB" --version=1 >/dev/null || fail "activate within 2% of vanilla"
fi
out="$("$PLANNER" build --db="$DB" --model=tiny --traces="$TMP/s.trace" --devices=2 \
  --algo=semantic --cluster=h200 --shape="$TMP/shape.json" --name=predicted --quiet)" ||
  fail "build --cluster: $out"
grep -q "predicted on h200 1x2" <<<"$out" || fail "build --cluster: $out"
# Choosing by predicted time: one line per candidate, EPLB beside, the choice; the chosen
# version's stored prediction names the candidates and is the fastest of those the guard passes.
grep -q "^candidate flat " <<<"$out" || fail "build --cluster: no flat candidate: $out"
grep -q "^candidate flat+r1 " <<<"$out" || fail "build --cluster: no replica candidate: $out"
grep -q "^candidate flat.*+eps0.1 " <<<"$out" || fail "build --cluster: no balance candidate: $out"
grep -q "^beside: eplb" <<<"$out" || fail "build --cluster: no EPLB beside: $out"
chosen="$(sed -n 's/^chosen: version \([0-9]*\) .*/\1/p' <<<"$out")"
[[ -n "$chosen" ]] || fail "build --cluster: no choice: $out"
shown="$("$PLANNER" show --db="$DB" --version="$chosen")"
p="$(jq '.predictions["h200 1x2"]' <<<"$shown")"
[[ "$(jq '.candidates | length' <<<"$p")" -ge 4 ]] || fail "choice: candidates: $p"
[[ "$(jq -r '.name' <<<"$shown")" == "predicted:$(jq -r .chosen <<<"$p")" ]] ||
  fail "choice: the chosen version's name: $shown"
jq -e '.eplb.moe_layer_ms > 0 and .predicted_vs_eplb > 0' <<<"$p" >/dev/null ||
  fail "choice: EPLB beside: $p"
# The chosen is the fastest predicted among the candidates the guard passes (ties within 0.5%).
jq -e '([.candidates[] | select(.predicted_vs_vanilla <= 1.02 and
          (.predicted_max_rate_vs_vanilla == 0 or .predicted_max_rate_vs_vanilla >= 1/1.02))
         | .predicted_moe_layer_ms] | if length == 0 then true
         else min * 1.005 >= $c.predicted_moe_layer_ms end)' --argjson c "$p" <<<"$p" \
  >/dev/null || fail "choice: not the fastest candidate: $p"
# --choose=none builds the options as given; a re-plan is not chosen among.
out="$("$PLANNER" build --db="$DB" --model=tiny --traces="$TMP/s.trace" --devices=2 \
  --algo=semantic --cluster=h200 --shape="$TMP/shape.json" --choose=none --quiet)" ||
  fail "build --choose=none: $out"
grep -q "^candidate" <<<"$out" && fail "build --choose=none built candidates: $out"
grep -q "predicted on h200 1x2" <<<"$out" || fail "build --choose=none: $out"
expect_error 2 "--choose: 'fast' is not time or none" -- "$PLANNER" build --db="$DB" --model=tiny \
  --traces="$TMP/s.trace" --devices=2 --cluster=h200 --shape="$TMP/shape.json" --choose=fast
expect_error 1 "give --choose=none" -- "$PLANNER" build --db="$DB" --model=tiny \
  --traces="$TMP/s.trace" --devices=2 --cluster=h200 --shape="$TMP/shape.json" --relative_to=1
expect_error 1 "the prediction needs the model's shape" -- "$PLANNER" predict --db="$DB" \
  --version=1 --traces="$TMP/s.trace" --cluster=h200
expect_error 1 "cluster profile \"nosuch\"" -- "$PLANNER" predict --db="$DB" --version=1 \
  --traces="$TMP/s.trace" --cluster=nosuch --shape="$TMP/shape.json"
echo '{"format": "semmoe-model-shape", "hidden": -1}' >"$TMP/bad_shape.json"
expect_error 1 "bad_shape.json: \"hidden\" must be a whole number" -- "$PLANNER" predict \
  --db="$DB" --version=1 --traces="$TMP/s.trace" --cluster=h200 --shape="$TMP/bad_shape.json"

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
# One row per bad value: each refused at once (not a SIGFPE, a bad_alloc, a spin or null
# timings with status 0), naming its flag or figure. --set passes the profile file's checks.
while IFS='|' read -r code text flags; do
  [[ -n "$code" ]] || continue
  read -ra argv <<<"$flags"
  out="$(timeout -s KILL 20 "$SIM" --model="$TMP/model" --db="$DB" --traces="$TMP/s.trace" \
    --version=1 --cluster=h200 "${argv[@]}" 2>&1)" && rc=0 || rc=$?
  [[ "$rc" == "$code" ]] || fail "exit $rc (want $code) for $flags: $out"
  grep -qF -- "$text" <<<"$out" || fail "no '$text' for $flags: $out"
done <<'ROWS'
1|--set: ranks_per_node: 0 must be positive|--set=ranks_per_node=0
1|--set: ranks_per_node: must be a whole number from 1 to 1024|--set=ranks_per_node=1e12
1|--set: flops: 0 must be positive|--set=flops=0
1|--set: flops: nan must be finite|--set=flops=nan
1|--set: a2a_efficiency: must be at most 1|--set=a2a_efficiency=2
1|--set: inter_per_node: must be 0 or 1|--set=inter_per_node=0.5
1|gives non-finite moe_layer_ms|--set=flops=1e-300
1|--rates 1e12 × --point_s 12 simulates 1.2e+13 requests|--rates=1e12
1|--rates: "inf" is not a rate > 0|--rates=1,inf
1|--rates: 1 to 64 rates, got 65|--rates=1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1
1|1e+09 tokens|--requests=1000000 --output_tokens=100000
2|--point_s 1e+12 must be above 0 to 86400|--rates=1,2 --point_s=1e12
2|--point_s 0 must be above 0|--rates=1 --point_s=0
2|--rate nan must be above 0|--rate=nan
2|--rate -1 must be above 0|--rate=-1
2|--tp_batch_tokens 0 must be from 1|--mode=tp --tp_batch_tokens=0
2|--output_tokens 2147483647 must be from 1 to 131072|--output_tokens=2147483647
2|--output_tokens 0 must be from 1|--output_tokens=0
2|--requests 0 must be from 1 to 1000000|--requests=0
2|--requests -5 must be from 1|--requests=-5
2|--max_batch_tokens 0 must be from 1|--max_batch_tokens=0
2|--max_running 0 must be from 1|--max_running=0
2|--max_prompt_tokens -1 must be from 0|--max_prompt_tokens=-1
2|--hosts -1 must be from 0|--hosts=-1
2|--ranks_per_host 100000 must be from 0 to 1024|--ranks_per_host=100000
2|--slo_ttft_ms 0 must be above 0|--slo_ttft_ms=0
2|--slo_tpot_ms inf must be above 0|--slo_tpot_ms=inf
2|--link_mbit -1 must be from 0|--link_mbit=-1
2|--requests_synth -1 must be from 0|--requests_synth=-1
2|--devices -3 must be from 0|--devices=-3
ROWS
expect_error 2 "--devices G for vanilla" -- "$SIM" --model="$TMP/model" --traces="$TMP/s.trace" \
  --devices=0 --cluster=h200
expect_error 2 "--requests_synth 2000000 must be from 0 to 1000000" -- "$SIM" synth \
  --shape=deepseek-v3 --like="$TMP/s.trace" --requests_synth=2000000 --out="$TMP/x.trace"
expect_error 1 "--params: \"1e300\" is not a number from 0 to 100" -- "$SIM" synth \
  --shape=deepseek-v3 --like="$TMP/s.trace" --params=1e300,0,0,0 --out="$TMP/x.trace"
# The localities: none turns the biases off; a bad locality or group limit is refused, named.
out="$("$SIM" synth --shape=deepseek-v3 --like="$TMP/s.trace" --requests_synth=8 \
  --params=0.5,2,1,1 --calibrate=none --node_limit=8:4 --out="$TMP/none.trace")" ||
  fail "synth none: $out"
[[ "$(jq -c '[.params.token_bias, .params.domain_bias, .params.layer_bias, .params.groups]' <<<"$out")" == "[0,0,0,8]" ]] ||
  fail "synth --calibrate none --node_limit 8:4: $out"
expect_error 1 "--calibrate far: expected trained, paper or none" -- "$SIM" synth \
  --shape=deepseek-v3 --like="$TMP/s.trace" --params=0,0,0,0 --calibrate=far --out="$TMP/x.trace"
expect_error 1 "group-limited routing: 5 groups" -- "$SIM" synth --shape=deepseek-v3 \
  --like="$TMP/s.trace" --params=0,0,0,0 --node_limit=5:2 --out="$TMP/x.trace"
expect_error 1 "--node_limit 8: expected GROUPS:TOP" -- "$SIM" synth --shape=deepseek-v3 \
  --like="$TMP/s.trace" --params=0,0,0,0 --node_limit=8 --out="$TMP/x.trace"
# A skew at the bound still generates (the draw over the rest, not rejection for ever).
timeout -s KILL 60 "$SIM" synth --shape=deepseek-v3 --like="$TMP/s.trace" --requests_synth=4 \
  --params=100,100,100,100 --out="$TMP/steep.trace" >/dev/null || fail "a skew of 100 did not generate"
echo "simulate_test: ok"

#!/usr/bin/env bash
# How the scale model's verdict moves (docs/PERFORMANCE.md, "At scale", the sensitivity
# tables): one configuration — the shape at G (default 32) on H200 nodes of 8, 2,000 requests at
# G × 1.25 req/s, 128 output tokens, vanilla (round-robin) against semantic (affinity) —
#   profile: each assumed figure of the h200 profile halved or doubled (--set), on the traces
#            and placements tools/simulate_scale.sh left in OUT;
#   traces:  each synthetic-router parameter changed (its traces regenerated, both placements
#            rebuilt), printing the held-out trace's statistics beside the times.
#
#   tools/simulate_sensitivity.sh [--shape deepseek-v3] [--g 32] [--out DIR]   (after simulate_scale.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
SHAPE=deepseek-v3
G=32
OUT="${TMPDIR:-/tmp}/semmoe-scale"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --shape) SHAPE="$2"; shift 2 ;;
    --g) G="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    *) echo "usage: $0 [--shape S] [--g G] [--out DIR]" >&2; exit 2 ;;
  esac
done
source tools/heldout_lib.sh
heldout_setup "$OUT"
simulate_setup
DB="$OUT/$SHAPE.g$G.db" HELD="$OUT/$SHAPE.heldout.trace"
[[ -s "$DB" && -s "$HELD" && -s "$OUT/$SHAPE.synth.json" ]] ||
  { echo "run tools/simulate_scale.sh --out $OUT first (no $DB)" >&2; exit 1; }
RATE="$(awk -v g="$G" 'BEGIN { print g * 1.25 }')"
moe() {  # moe DB TRACE VERSION ROUTER [--set=...] → MoE-layer ms and the a2a share
  "$SIM" --shape="$SHAPE" --db="$1" --version="$3" --router="$4" --traces="$2" --cluster=h200 \
    --rate="$RATE" --requests=2000 --output_tokens=128 --json "${@:5}" |
    jq -r '"\(.moe_layer_ms) \(.a2a_share)"'
}
row() {  # row LABEL VANILLA SEMANTIC
  read -r v share <<<"$2"
  read -r s _ <<<"$3"
  awk -v l="$1" -v v="$v" -v s="$s" -v a="$share" \
    'BEGIN { printf "%-34s %8.2f %8.2f %8.2f %6.2f\n", l, v, s, s / v, a }'
}
echo "== the profile's assumed figures (G = $G, $RATE req/s): vanilla, semantic ms, ratio, vanilla a2a share"
row "h200 as is" "$(moe "$DB" "$HELD" 1 round_robin)" "$(moe "$DB" "$HELD" 3 affinity)"
declare -A base
while read -r name value; do base[$name]="$value"; done < <(
  "$SIM" --cluster=h200 --print_profile | jq -r 'to_entries[] | select(.value | type == "object") | "\(.key) \(.value.value)"')
for f in collective_latency a2a_efficiency inter_bw mem_bw flops kernel_overhead; do
  for factor in 0.5 2; do
    value="$(awk -v b="${base[$f]}" -v x="$factor" 'BEGIN { v = b * x; if (v > 1 && b <= 1) v = 1; print v }')"
    row "$f × $factor" "$(moe "$DB" "$HELD" 1 round_robin --set="$f=$value")" \
      "$(moe "$DB" "$HELD" 3 affinity --set="$f=$value")"
  done
done
echo "== the synthetic router's parameters (skew,token,domain,layer), each trace set regenerated"
fitted="$(jq -r '.params | "\(.popularity_skew),\(.token_bias),\(.domain_bias),\(.layer_bias)"' "$OUT/$SHAPE.synth.json")"
IFS=, read -r sk tk dm ly <<<"$fitted"
for params in "$fitted" "$sk,$tk,$(awk -v d="$dm" 'BEGIN{print d*2}'),$ly" "$sk,$tk,0,$ly" \
              "$sk,$(awk -v t="$tk" 'BEGIN{print t/2}'),$dm,$ly" "$sk,$tk,$dm,$(awk -v l="$ly" 'BEGIN{print l/2}')" \
              "$(awk -v s="$sk" 'BEGIN{print s+0.5}'),$tk,$dm,$ly"; do
  d="$OUT/sensitivity/${params//,/_}"
  mkdir -p "$d"
  "$SIM" synth --shape="$SHAPE" --like="$PROFILE" --domains="$SHARED/data/prompts.jsonl" \
    --params="$params" --requests_synth=400 --out="$d/p.trace" >/dev/null
  "$SIM" synth --shape="$SHAPE" --like="$HELDOUT" --params="$params" --requests_synth=300 \
    --out="$d/h.trace" >"$d/h.json"
  rm -f "$d/db" "$d/db-wal" "$d/db-shm"
  for algo in vanilla semantic; do
    "$P" build --db="$d/db" --model="$SHAPE" --traces="$d/p.trace" --devices="$G" --mode=dp \
      --algo="$algo" --seed=1 --quiet >/dev/null
  done
  row "$params $(jq -r '.achieved | "req \(.request_lift * 100 | round / 100)"' "$d/h.json")" \
    "$(moe "$d/db" "$d/h.trace" 1 round_robin)" "$(moe "$d/db" "$d/h.trace" 2 affinity)"
done

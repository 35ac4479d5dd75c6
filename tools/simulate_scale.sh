#!/usr/bin/env bash
# The scale model's predictions at real shapes (docs/SIMULATE.md; docs/PERFORMANCE.md, "At
# scale"): synthetic traces at the shape fitted to qwen3-moe-a's profile trace (a profile set and
# a held-out set from other prompts), DP placements built on the profile set for every G
# (vanilla, EPLB, semantic), and each predicted on the held-out set on H200 and H100 nodes of 8
# over a sweep of G × (0.5 … 2.5) requests/s (128 output tokens), routed by the router's rule
# (vanilla round-robin, EPLB least-loaded, semantic affinity). Prints one table row per cluster,
# G and placement, with the MoE layer against vanilla's; with gnuplot, plots in OUT.
#
#   tools/simulate_scale.sh [--shape deepseek-v3] [--gs "8 16 32 64"] [--clusters "h200 h100"]
#                           [--out DIR]
#
# Needs an opt build of //engine, //planner and //tools:simulate and the shared model (for the
# trace it imitates: tools/planner_heldout.sh's profile trace, made here if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
SHAPE=deepseek-v3
GS="8 16 32 64"
CLUSTERS="h200 h100"
OUT="${TMPDIR:-/tmp}/semmoe-scale"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --shape) SHAPE="$2"; shift 2 ;;
    --gs) GS="$2"; shift 2 ;;
    --clusters) CLUSTERS="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    *) echo "usage: $0 [--shape S] [--gs \"8 16\"] [--clusters \"h200\"] [--out DIR]" >&2; exit 2 ;;
  esac
done
source tools/heldout_lib.sh
heldout_setup "$OUT"
SIM=bazel-out/k8-opt/bin/tools/simulate
[[ -x "$SIM" ]] || { echo "$SIM is missing: bazel build -c opt --config=opt //tools:simulate" >&2; exit 1; }

PROF="$OUT/$SHAPE.profile.trace" HELD="$OUT/$SHAPE.heldout.trace"
if [[ ! -s "$HELD" ]]; then
  echo "fitting the synthetic router at $SHAPE (about 2 minutes)..." >&2
  "$SIM" synth --shape="$SHAPE" --like="$PROFILE" --domains="$SHARED/data/prompts.jsonl" \
    --requests_synth=400 --out="$PROF" | tee "$OUT/$SHAPE.synth.json" >&2
  params="$(jq -r '.params | "\(.popularity_skew),\(.token_bias),\(.domain_bias),\(.layer_bias)"' \
    "$OUT/$SHAPE.synth.json")"
  "$SIM" synth --shape="$SHAPE" --like="$HELDOUT" --params="$params" --requests_synth=300 \
    --out="$HELD" >&2
fi
RESULTS="$OUT/$SHAPE.predictions.jsonl"
: >"$RESULTS"
for g in $GS; do
  DB="$OUT/$SHAPE.g$g.db"
  if [[ ! -s "$DB" ]]; then
    for algo in vanilla eplb semantic; do
      echo "building $algo for G = $g..." >&2
      "$P" build --db="$DB" --model="$SHAPE" --traces="$PROF" --devices="$g" --mode=dp \
        --algo="$algo" --seed=1 --quiet >/dev/null
    done
  fi
  rates="$(awk -v g="$g" 'BEGIN { printf "%g,%g,%g,%g,%g", g*0.5, g, g*1.5, g*2, g*2.5 }')"
  for cluster in $CLUSTERS; do
    for spec in "1 round_robin" "2 least_loaded" "3 affinity"; do
      set -- $spec
      "$SIM" --shape="$SHAPE" --db="$DB" --version="$1" --router="$2" --traces="$HELD" \
        --cluster="$cluster" --rates="$rates" --point_s=60 --output_tokens=128 --json \
        >>"$RESULTS"
    done
  done
done
table() {
  jq -rs '
    (map(select(.algorithm == "vanilla")) | map({key: "\(.cluster) \(.devices)", value: .moe_layer_ms})
     | from_entries) as $van
    | .[] | [.cluster, .devices, .topology, .algorithm, .router,
             (.moe_layer_ms * 100 | round / 100), (.moe_layer_ms / $van["\(.cluster) \(.devices)"] * 1000 | round / 1000),
             (.a2a_share * 100 | round / 100), (.step_ms | round), .max_rate_in_slo,
             (.sweep[-1].goodput_rps * 10 | round / 10), (.sweep[-1].ttft_p99_ms | round)]
    | @tsv' "$RESULTS"
}
echo -e "cluster\tG\tnodes\tplacement\trouter\tMoE ms\tvs vanilla\ta2a share\tstep ms\tmax rate in SLO\tgoodput at top rate\tp99 TTFT at top rate"
table
if command -v gnuplot >/dev/null; then
  for cluster in $CLUSTERS; do
    for algo in vanilla eplb semantic; do
      jq -r --arg c "$cluster" --arg a "$algo" 'select(.cluster == $c and .algorithm == $a)
        | "\(.devices) \(.moe_layer_ms) \(.a2a_share)"' "$RESULTS" >"$OUT/$cluster.$algo.dat"
    done
    gnuplot <<GP
set terminal svg size 640,400
set output "$OUT/$SHAPE.$cluster.moe_layer.svg"
set title "$SHAPE on $cluster nodes of 8: MoE-layer time (DP, the scale model)"
set xlabel "GPUs (expert parallelism)"
set ylabel "ms per MoE layer"
set logscale x 2
set key top left
plot "$OUT/$cluster.vanilla.dat" using 1:2 with linespoints title "vanilla (round-robin)", \
     "$OUT/$cluster.eplb.dat" using 1:2 with linespoints title "EPLB (least-loaded)", \
     "$OUT/$cluster.semantic.dat" using 1:2 with linespoints title "semantic (affinity)"
GP
  done
  echo "plots: $OUT/$SHAPE.*.moe_layer.svg" >&2
fi

#!/usr/bin/env bash
# The scale model's predictions at real shapes (docs/SIMULATE.md; docs/PERFORMANCE.md, "At
# scale"): synthetic traces at the shape fitted to qwen3-moe-a's profile trace (a profile set and
# a held-out set from other prompts); for every G, placements built on the profile set — DP:
# vanilla, EPLB, semantic, semantic with one replica slot a device and layer, semantic
# topology-aware (nodes of 8); TP: vanilla and semantic — each predicted on the held-out set on
# H200 and H100 nodes of 8 over a sweep of G × (0.5 … 2.5) requests/s (128 output tokens). DP
# requests are routed by the router's rule (vanilla round-robin, EPLB least-loaded, semantic
# affinity); TP batches are contiguous chunks (plain) or the SRS rule (shuffled); node dedup (the
# two-stage exchange) for vanilla and topology-aware semantic from two nodes on. Prints one row a
# cluster, G and setting, MoE layer and max rate in SLO against vanilla's in the same mode; with
# gnuplot, plots in OUT.
#
#   tools/simulate_scale.sh [--shape deepseek-v3|qwen3-235b] [--gs "8 16 32 64"]
#                           [--clusters "h200 h100"] [--out DIR] [--report]
#                           [--localities "trained paper none"] [--node_limit 8:4]
#
# --localities: the traces' locality (simulate synth --calibrate): trained (the trained model's
# statistics), paper (the planner's DP placement reaches the paper's in-sample LAR, 62-68 % at
# EP 4 on DeepSeek-V2-Lite's / Qwen3-30B-A3B's shape), none (no locality); every table is
# printed for each. --node_limit: group-limited routing in the traces (DeepSeek-V3's 8:4).
# --report: only the table, matrices and plots from the rows already in OUT (for --gs).
# --only "vanilla-tp semantic-tp": run these settings (labels below), keeping the others' rows.
#
# Needs an opt build of //engine, //planner and //tools:simulate and the shared model (for the
# trace it imitates: tools/planner_heldout.sh's profile trace, made here if missing). Versions
# already in OUT's databases (by name) are reused.
set -euo pipefail
cd "$(dirname "$0")/.."
SHAPE=deepseek-v3
GS="8 16 32 64"
CLUSTERS="h200 h100"
REPORT=""
ONLY=""
LOCALITIES="trained"
NODE_LIMIT=""
OUT="${TMPDIR:-/tmp}/semmoe-scale"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --shape) SHAPE="$2"; shift 2 ;;
    --gs) GS="$2"; shift 2 ;;
    --clusters) CLUSTERS="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --report) REPORT=1; shift ;;
    --only) ONLY=" $2 "; shift 2 ;;
    --localities) LOCALITIES="$2"; shift 2 ;;
    --node_limit) NODE_LIMIT="$2"; shift 2 ;;
    *) echo "usage: $0 [--shape S] [--gs \"8 16\"] [--clusters \"h200\"] [--out DIR] [--report] [--only \"L1 L2\"]" >&2; exit 2 ;;
  esac
done
source tools/heldout_lib.sh
heldout_setup "$OUT"
simulate_setup

BASE="$SHAPE"  # The trained fit (trace names without a locality, as before).
if [[ ! -s "$OUT/$BASE.synth.json" ]]; then
  echo "fitting the synthetic router at $SHAPE (about 2 minutes)..." >&2
  "$SIM" synth --shape="$SHAPE" --like="$PROFILE" --domains="$SHARED/data/prompts.jsonl" \
    --requests_synth=400 --out="$OUT/$BASE.profile.trace" | tee "$OUT/$BASE.synth.json" >&2
fi
fitted="$(jq -r '.params | "\(.popularity_skew),\(.token_bias),\(.domain_bias),\(.layer_bias)"' \
  "$OUT/$BASE.synth.json")"
limit_flag=""; [[ -z "$NODE_LIMIT" ]] || limit_flag="--node_limit=$NODE_LIMIT"
for LOC in $LOCALITIES; do
# Each locality's files: $SHAPE (trained, as before) or $SHAPE-paper, $SHAPE-none; with a node
# limit, -n8:4 after.
SHAPE_LOC="$SHAPE"; [[ "$LOC" == trained ]] || SHAPE_LOC="$SHAPE-$LOC"
[[ -z "$NODE_LIMIT" ]] || SHAPE_LOC="$SHAPE_LOC-n${NODE_LIMIT/:/of}"
PROF="$OUT/$SHAPE_LOC.profile.trace" HELD="$OUT/$SHAPE_LOC.heldout.trace"
if [[ ! -s "$PROF" ]]; then
  echo "synthetic profile trace at $SHAPE, locality $LOC..." >&2
  "$SIM" synth --shape="$SHAPE" --like="$PROFILE" --domains="$SHARED/data/prompts.jsonl" \
    --params="$fitted" --calibrate="$LOC" $limit_flag --requests_synth=400 --out="$PROF" \
    | tee "$OUT/$SHAPE_LOC.synth.json" >&2
fi
if [[ ! -s "$HELD" ]]; then
  params="$(jq -r '.params | "\(.popularity_skew),\(.token_bias),\(.domain_bias),\(.layer_bias)"' \
    "$OUT/$SHAPE_LOC.synth.json")"
  "$SIM" synth --shape="$SHAPE" --like="$HELDOUT" --params="$params" $limit_flag \
    --requests_synth=300 --out="$HELD" >&2
fi
RESULTS="$OUT/$SHAPE_LOC.predictions.jsonl"  # Every G's rows ($SHAPE.gG.jsonl) for the report.
# label | version name (without -gG) | algorithm | mode | build flags | router | simulate flags | from G
SETTINGS="
vanilla-dp|vanilla-dp|vanilla|dp||round_robin||8
eplb-dp|eplb-dp|eplb|dp||least_loaded||8
semantic-dp|semantic-dp|semantic|dp||affinity||8
semantic-dp-rep1|semantic-dp-rep1|semantic|dp|--replicas=1|affinity||8
vanilla-dp-dedup|vanilla-dp|vanilla|dp||round_robin|--node_dedup|16
semantic-dp-topo-dedup|semantic-dp-topo|semantic|dp|--topology=NODESx8|affinity|--node_dedup|16
semantic-dp-time|semantic-dp|semantic|dp||time||8
semantic-dp-time-dedup|semantic-dp|semantic|dp||time|--node_dedup|16
semantic-dp-topo-time-dedup|semantic-dp-topo|semantic|dp|--topology=NODESx8|time|--node_dedup|16
vanilla-tp|vanilla-tp|vanilla|tp||round_robin|--mode=tp|8
semantic-tp|semantic-tp|semantic|tp|--balance_eps=TPEPS|affinity|--mode=tp|8"
version_id() { "$P" list --db="$1" --model="$SHAPE" | awk -v n="$2" '$3 == n { print $1 }'; }
for g in $GS; do
  [[ -z "$REPORT" ]] || break
  DB="$OUT/$SHAPE_LOC.g$g.db"
  nodes=$(( (g + 7) / 8 ))
  # The TP build balances whole requests over the devices: at EP 64 a device's share of the
  # profile trace (~1,600 tokens) is less than its longest request, so the cap is relaxed there.
  tp_eps=0.05; ((g >= 64)) && tp_eps=1
  while IFS='|' read -r label name algo mode flags router simflags from; do
    [[ -n "$label" && "$g" -ge "$from" ]] || continue
    [[ -z "$ONLY" || "$ONLY" == *" $label "* ]] || continue
    flags="${flags//NODES/$nodes}"; flags="${flags//TPEPS/$tp_eps}"
    if [[ -z "$(version_id "$DB" "$name-g$g")" ]]; then
      echo "building $name for G = $g..." >&2
      "$P" build --db="$DB" --model="$SHAPE" --traces="$PROF" --devices="$g" --mode="$mode" \
        --algo="$algo" $flags --seed=1 --name="$name-g$g" --quiet >/dev/null
    fi
  done <<<"$SETTINGS"
  rows="$OUT/$SHAPE_LOC.g$g.jsonl"
  if [[ -n "$ONLY" && -s "$rows" ]]; then
    jq -c --arg only "$ONLY" '.label as $l | select($only | index(" \($l) ") | not)' "$rows" >"$rows.tmp"
    mv "$rows.tmp" "$rows"
  else
    : >"$rows"
  fi
  # DP: G × 0.5 … 2.5 requests/s. TP: one batch (engine serve's 64 sequences) for the G ranks
  # serves far fewer, whatever G (DeepSeek-V3's MLA cache and Qwen3-235B's 4 KV heads do not
  # shard over more ranks), so a fixed sweep.
  dp_rates="$(awk -v g="$g" 'BEGIN { printf "%g,%g,%g,%g,%g", g*0.5, g, g*1.5, g*2, g*2.5 }')"
  tp_rates="2,4,6,8,12"
  for cluster in $CLUSTERS; do
    while IFS='|' read -r label name algo mode flags router simflags from; do
      [[ -n "$label" && "$g" -ge "$from" ]] || continue
      [[ -z "$ONLY" || "$ONLY" == *" $label "* ]] || continue
      rates="$dp_rates"; [[ "$mode" == tp ]] && rates="$tp_rates"
      "$SIM" --shape="$SHAPE" --db="$DB" --version="$(version_id "$DB" "$name-g$g")" \
        --router="$router" $simflags --traces="$HELD" --cluster="$cluster" --rates="$rates" \
        --point_s=60 --output_tokens=128 --json | jq -c --arg l "$label" '. + {label: $l}' \
        >>"$rows"
    done <<<"$SETTINGS"
  done
done
for g in $GS; do cat "$OUT/$SHAPE_LOC.g$g.jsonl"; done >"$RESULTS"
echo "== $SHAPE, traces at locality $LOC${NODE_LIMIT:+, group-limited $NODE_LIMIT} ($(jq -c '.calibration | del(.steps)' "$OUT/$SHAPE_LOC.synth.json" 2>/dev/null))"
table() {
  jq -rs '
    def key: "\(.cluster) \(.devices) \(.mode)";
    (map(select(.label == "vanilla-dp" or .label == "vanilla-tp")) | map({key: key, value: .})
     | from_entries) as $van
    | .[] | $van[key] as $v
    | [.cluster, .devices, .topology, .label, .router,
       (.moe_layer_ms * 100 | round / 100), (.moe_layer_ms / $v.moe_layer_ms * 1000 | round / 1000),
       (.wait_ms * 100 | round / 100), (.dispatch_ms * 100 | round / 100),
       (.experts_ms * 100 | round / 100), (.a2a_share * 100 | round / 100),
       ((.srs_ms + .sag_ms) * 100 | round / 100), (.step_ms | round), .max_rate_in_slo,
       (if $v.max_rate_in_slo > 0 then (.max_rate_in_slo / $v.max_rate_in_slo * 100 | round / 100)
        else "-" end),
       (.sweep[-1].ttft_p99_ms | round)]
    | @tsv' "$RESULTS"
}
echo -e "cluster\tG\tnodes\tsetting\trouter\tMoE ms\tvs vanilla\twait\tdispatch\texperts\ta2a share\tSRS+SAG ms\tstep ms\tmax rate in SLO\tvs vanilla\tp99 TTFT at top rate"
table
# The same as matrices (docs/PERFORMANCE.md): a row a setting, a column a G; the MoE layer in ms
# and the max rate in SLO, each with its ratio to vanilla's in the same mode.
matrix() {  # matrix CLUSTER
  jq -rs --arg c "$1" --arg order "$(awk -F'|' 'NF > 1 { print $1 }' <<<"$SETTINGS" | paste -sd,)" '
    map(select(.cluster == $c)) as $rows
    | ($rows | map(.devices) | unique) as $gs
    | def cell($l; $g; f):
        ($rows | map(select(.label == $l and .devices == $g)) | .[0]) as $r
        | ($rows | map(select(.label == "vanilla-\($r.mode // "dp")" and .devices == $g)) | .[0]) as $v
        | if $r == null then "-"
          elif ($v | f) > 0 then "\($r | f * 100 | round / 100) (\(($r | f) / ($v | f) * 100 | round / 100)×)"
          else "\($r | f * 100 | round / 100)" end;
    ("| \($c): MoE layer ms (× vanilla) | " + ($gs | map("EP \(.)") | join(" | ")) + " |"),
    ("|---|" + ($gs | map("---") | join("|")) + "|"),
    ($order | split(",")[] as $l | "| \($l) | " + ($gs | map(cell($l; .; .moe_layer_ms)) | join(" | ")) + " |"),
    "",
    ("| \($c): max rate in SLO, req/s (× vanilla) | " + ($gs | map("EP \(.)") | join(" | ")) + " |"),
    ("|---|" + ($gs | map("---") | join("|")) + "|"),
    ($order | split(",")[] as $l | "| \($l) | " + ($gs | map(cell($l; .; .max_rate_in_slo)) | join(" | ")) + " |"),
    ""' "$RESULTS"
}
for cluster in $CLUSTERS; do matrix "$cluster"; done
if command -v gnuplot >/dev/null; then
  for cluster in $CLUSTERS; do
    plots=()
    while IFS='|' read -r label _; do
      [[ -n "$label" ]] || continue
      jq -r --arg c "$cluster" --arg l "$label" 'select(.cluster == $c and .label == $l)
        | "\(.devices) \(.moe_layer_ms) \(.max_rate_in_slo)"' "$RESULTS" >"$OUT/$SHAPE_LOC.$cluster.$label.dat"
      plots+=("\"$OUT/$SHAPE_LOC.$cluster.$label.dat\" using 1:COL with linespoints title \"$label\"")
    done <<<"$SETTINGS"
    for what in "moe_layer 2 ms per MoE layer" "max_rate 3 max rate in SLO (requests/s)"; do
      set -- $what
      plot="$(IFS=,; echo "${plots[*]}")"
      gnuplot <<GP
set terminal svg size 720,440
set output "$OUT/$SHAPE_LOC.$cluster.$1.svg"
set title "$SHAPE_LOC on $cluster nodes of 8 (the scale model): ${*:3}"
set xlabel "GPUs (expert parallelism)"
set ylabel "${*:3}"
set logscale x 2
set key top left
plot ${plot//COL/$2}
GP
    done
  done
  echo "plots: $OUT/$SHAPE_LOC.*.svg" >&2
fi
done  # localities

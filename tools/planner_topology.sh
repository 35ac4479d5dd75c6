#!/usr/bin/env bash
# The planner's topology study (docs/PLANNER.md, "Topology"): qwen3-moe-a planned on the profile
# prompts, evaluated on the shared reference trace (held out), at G = 8 as 2 nodes × 4 ranks and
# 4 nodes × 2. Per topology it builds vanilla, flat semantic, semantic for the topology (the node
# grouping alone, then with the solver's node credit), and EPLB flat and hierarchical, and prints
# LAR, node-local activation rate and the token rows crossing nodes per token (dispatch +
# combine, all MoE layers) with node-level dedup and with the per-rank dispatch — the ratios the
# issue's targets speak of. Needs an opt build of //engine and //planner and the profile trace of
# tools/planner_heldout.sh (made here if missing).
#
#   tools/planner_topology.sh [--topologies "2x4 4x2"] [--weights "0.25 0.5"] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
TOPOLOGIES="2x4 4x2"
WEIGHTS="0.25 0.5"
OUT="${TMPDIR:-/tmp}/semmoe-heldout"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --topologies) TOPOLOGIES="$2"; shift 2 ;;
    --weights) WEIGHTS="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    *) echo "usage: $0 [--topologies \"2x4 4x2\"] [--weights \"0.25 0.5\"] [--out DIR]" >&2; exit 2 ;;
  esac
done
source tools/heldout_lib.sh
heldout_setup "$OUT"
HIDDEN="$(jq .hidden_size "$MODEL/config.json")"
for topo in $TOPOLOGIES; do
  g=$(( ${topo%x*} * ${topo#*x} ))
  DB="$OUT/topology-$topo.db"
  rm -f "$DB" "$DB-wal" "$DB-shm"
  b() { "$P" build --db="$DB" --model=qwen3-moe-a --traces="$PROFILE" --seed=1 --quiet \
          --devices="$g" --mode=dp "$@" >/dev/null; }
  b --algo=vanilla --name=vanilla
  b --algo=semantic --name=semantic-flat
  b --algo=semantic --topology="$topo" --name="semantic-$topo"
  n=3
  for w in $WEIGHTS; do
    b --algo=semantic --topology="$topo" --node_weight="$w" --name="semantic-$topo-w$w"
    n=$((n + 1))
  done
  b --algo=eplb --name=eplb-flat
  b --algo=eplb --topology="$topo" --name="eplb-hier-$topo"
  n=$((n + 2))
  "$P" eval --db="$DB" --versions="$(seq -s, 1 "$n")" --traces="$HELDOUT" --profile="$PROFILE" \
    --topology="$topo" --hidden_size="$HIDDEN" --json --quiet >"$OUT/topology-$topo.json"
  echo "== G = $g as $topo: held-out reference trace, DP under the router's rule =="
  jq -r --argjson h "$HIDDEN" '
    (.[] | select(.name == "vanilla")) as $v | (.[] | select(.name == "semantic-flat")) as $f |
    ($f.dp_cross_node_bytes_per_token_rank_dedup_affinity / ($h * 2)) as $f_rank |
    ($v.dp_cross_node_bytes_per_token_rank_dedup_affinity / ($h * 2)) as $v_rank |
    ["version", "LAR", "node LAR", "x-node rows/tok", "per-rank dispatch", "/ flat sem.",
     "/ vanilla", "/ flat sem. per-rank", "/ vanilla per-rank"],
    (.[] | (.dp_cross_node_bytes_per_token_rank_dedup_affinity / ($h * 2)) as $rank |
      [.name, (.lar * 1000 | round / 1000), (.node_lar * 1000 | round / 1000),
       (.cross_node_rows_per_token * 1000 | round / 1000), ($rank * 1000 | round / 1000),
       (.cross_node_rows_per_token / $f.cross_node_rows_per_token * 1000 | round / 1000),
       (.cross_node_rows_per_token / $v.cross_node_rows_per_token * 1000 | round / 1000),
       (.cross_node_rows_per_token / $f_rank * 1000 | round / 1000),
       (.cross_node_rows_per_token / $v_rank * 1000 | round / 1000)])
    | @tsv' "$OUT/topology-$topo.json" | column -t -s$'\t'
done

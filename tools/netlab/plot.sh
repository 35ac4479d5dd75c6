#!/usr/bin/env bash
# The network lab's plots, from tools/netlab/bench.sh's JSON, drawn by gnuplot (SVG):
#   netlab_goodput.svg     goodput under the SLO against request rate, one curve per setting
#   netlab_ttft_p99.svg    p99 TTFT against request rate
#   netlab_moe_layer.svg   MoE-layer time per call of the slowest rank: the wait for the slowest
#                          peer, dispatch, experts, combine
#   netlab_lar_layers.svg  LAR per MoE layer
#
#   tools/netlab/plot.sh BENCH.json OUT_DIR [G]   (needs jq and gnuplot: ./semmoe setup)
#
# G (default 4) picks one group size's settings: G = 4's keys have no prefix and its files are
# netlab_*.svg; another G's keys and files carry gN_ (g8_dp_semantic → netlab_g8_goodput.svg).
set -euo pipefail
J="$1"
O="$2"
G="${3:-4}"
[[ "$G" =~ ^[0-9]+$ ]] || { echo "plot.sh: G must be a number, got $G" >&2; exit 2; }
command -v jq >/dev/null && command -v gnuplot >/dev/null ||
  { echo "plot.sh: needs jq and gnuplot (./semmoe setup installs them)" >&2; exit 1; }
mkdir -p "$O"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
if [[ "$G" == 4 ]]; then KEYS='test("^g[0-9]+_") | not'; P=""
else KEYS="startswith(\"g${G}_\")"; P="g${G}_"; fi
mapfile -t settings < <(jq -r "keys[] | select($KEYS)" "$J")
((${#settings[@]})) || { echo "plot.sh: $J has no settings for G = $G" >&2; exit 1; }
rate_curves="" ttft_curves="" lar_curves=""
for s in "${settings[@]}"; do
  jq -r --arg s "$s" '.[$s].sweep[] | "\(.rate) \(.goodput_rps) \(.ttft_ms.p99)"' "$J" >"$T/$s.rate"
  jq -r --arg s "$s" '.[$s].lar_per_layer[] | "\(.layer) \(.lar)"' "$J" >"$T/$s.lar"
  rate_curves+="'$T/$s.rate' using 1:2 with linespoints title '${s//_/\\_}', "
  ttft_curves+="'$T/$s.rate' using 1:3 with linespoints title '${s//_/\\_}', "
  lar_curves+="'$T/$s.lar' using 1:2 with linespoints title '${s//_/\\_}', "
done
jq -r "to_entries[] | select(.key | $KEYS)"' | "\(.key) \(.value.wait_ms // 0) \(.value.dispatch_ms) \(.value.experts_ms) \(.value.combine_ms)"' \
  "$J" | sed 's/_/\\\\_/g' >"$T/moe.dat"
link="$(jq -r "[to_entries[] | select(.key | $KEYS) | .value.link_mbit] | first" "$J")"

gnuplot <<GNUPLOT
set terminal svg size 900,520 dynamic font "sans,12"
set key outside right
set grid
set output '$O/netlab_${P}goodput.svg'
set title 'Goodput under the SLO (network lab, G = $G, links of $link Mbit/s)'
set xlabel 'offered rate (requests/s)'
set ylabel 'goodput (requests/s)'
plot ${rate_curves%, }
set output '$O/netlab_${P}ttft_p99.svg'
set title 'p99 time to first token'
set ylabel 'TTFT p99 (ms)'
plot ${ttft_curves%, }
set output '$O/netlab_${P}lar_layers.svg'
set title 'Local activation ratio per MoE layer'
set xlabel 'model layer'
set ylabel 'LAR'
set yrange [0:1]
plot ${lar_curves%, }
set output '$O/netlab_${P}moe_layer.svg'
set title 'MoE-layer time per call, slowest rank'
set xlabel ''
set ylabel 'ms'
set yrange [0:*]
set style data histograms
set style histogram rowstacked
set style fill solid 0.8 border -1
set boxwidth 0.7
set xtics rotate by -30
plot '$T/moe.dat' using 2:xtic(1) title 'wait for the slowest peer', '' using 3 title 'dispatch', \
     '' using 4 title 'experts', '' using 5 title 'combine'
GNUPLOT
echo "plot.sh: wrote $O/netlab_${P}{goodput,ttft_p99,moe_layer,lar_layers}.svg"

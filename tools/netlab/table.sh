#!/usr/bin/env bash
# The network lab's results as Markdown tables, from tools/netlab/bench.sh's JSON, for one group
# size (keys as bench.sh writes them: G = 4 without a prefix, others gN_), plus each setting's
# change against its baseline (DP settings against dp_vanilla_rr, TP ones against
# tp_plain_vanilla) and the Attention-TP layer's parts, so docs/PERFORMANCE.md copies figures
# rather than retyping them.
#
#   tools/netlab/table.sh BENCH.json [G]      (needs jq)
set -euo pipefail
J="$1"
G="${2:-4}"
[[ "$G" =~ ^[0-9]+$ ]] || { echo "table.sh: G must be a number, got $G" >&2; exit 2; }
command -v jq >/dev/null || { echo "table.sh: needs jq (./semmoe setup installs it)" >&2; exit 1; }
P="g${G}_"
[[ "$G" == 4 ]] && P=""
jq -r --arg p "$P" '
  def sel: to_entries
    | map(select(if $p == "" then (.key | test("^g[0-9]+_") | not) else (.key | startswith($p)) end))
    | map(.key |= ltrimstr($p));
  def f(n): if n == null then "—" else (n * 100 | round / 100 | tostring) end;
  def f3(n): if n == null then "—" else (n * 1000 | round / 1000 | tostring) end;
  def pct(a; b): if a == null or b == null or b == 0 then "—"
                 else ((a / b - 1) * 100 | round | tostring) + "%" end;
  sel as $s
  | ($s | from_entries) as $by
  | if ($s | length) == 0 then error("no settings for this G") else . end
  | "link \($s[0].value.link_mbit) Mbit/s, \($s[0].value.ranks) ranks, \($s[0].value.ranks_per_host // 2) per host\(if $s[0].value.pinned then ", pinned" else "" end)\n",
    "| setting | LAR | a2a B/token | MoE layer (ms) | wait | dispatch | experts | combine | link transfer (model) | link share (model) | whole a2a share | busiest experts / mean | max rate in SLO | goodput there | p99 TTFT there | p50 TPOT there |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ($s[] | .value as $v | "| \(.key) | \(f3($v.lar)) | \($v.a2a_bytes_per_token | round) | \(f($v.moe_layer_ms)) | \(f($v.wait_ms)) | \(f($v.dispatch_ms)) | \(f($v.experts_ms)) | \(f($v.combine_ms)) | \(f3($v.link_transfer_ms)) ms | \(f($v.a2a_share)) | \(f($v.a2a_share_raw)) | \(f($v.experts_busiest_over_mean)) | \($v.max_rate_in_slo) | \(f($v.goodput_rps)) | \($v.ttft_p99_ms | round) ms | \($v.tpot_p50_ms | round) ms |"),
    "",
    "Attention-TP, ms per model layer and forward pass (mean over ranks; the MoE layer is the slowest rank'"'"'s per call):",
    "",
    "| setting | attention | SRS | MoE layer | SAG |",
    "|---|---|---|---|---|",
    ($s[] | select(.key | startswith("tp_")) | .value as $v
     | "| \(.key) | \(f($v.attention_ms)) | \(f($v.srs_ms)) | \(f($v.moe_layer_ms)) | \(f($v.sag_ms)) |"),
    "",
    "| setting | against | MoE layer | goodput | p99 TTFT (at the baseline'"'"'s highest rate in SLO) |",
    "|---|---|---|---|---|",
    ($s[] | select(.key != "dp_vanilla_rr" and .key != "tp_plain_vanilla")
     | .key as $k | .value as $v
     | (if ($k | startswith("dp_")) then "dp_vanilla_rr" else "tp_plain_vanilla" end) as $b
     | $by[$b] as $base
     | select($base != null)
     | ($v.sweep // [] | map(select(.rate == $base.max_rate_in_slo)) | first) as $same
     | "| \($k) | \($b) | \(pct($v.moe_layer_ms; $base.moe_layer_ms)) | \(pct($v.goodput_rps; $base.goodput_rps)) | \(pct($same.ttft_ms.p99; $base.ttft_p99_ms)) |")
' "$J"

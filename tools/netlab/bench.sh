#!/usr/bin/env bash
# The network lab's comparison: Sem-MoE's settings side by side on emulated hosts with a link
# calibrated so that vanilla's all-to-all is 50–60% of the MoE-layer time (the share the
# published DeepSeek-V2-Lite EP profile shows on 8 GPUs). This 2-core machine computes far slower
# than a GPU, so the link is slowed in proportion: what is emulated is the compute-to-
# communication ratio, not the absolute speeds.
#
#   sudo tools/netlab/bench.sh [--quick] --json OUT [--gs 2,4,8] [--link_mbit M] [--only S1,S2]
#       [--model DIR] [--prompts F] [--per_host M]
#
# --quick: G = 4 (2 hosts × 2 ranks), short load points (under 15 minutes here); otherwise
# G = 2, 4 and 8 (--gs picks some). G = 2 runs 2 hosts × 1 rank with each rank pinned to its own
# core (netlab --pin_cores); G = 4 and 8 run 2 ranks per host (--per_host M: M, e.g. G = 8 as
# 2 hosts × 4). Each G is calibrated on its own
# unshaped vanilla run (its expert time and bytes per call); --link_mbit skips that. The share
# calibrated ("a2a_share") is the link's own transfer against itself plus the experts' time; on
# this machine a CPU collective through veths costs ~1 ms a call at any rate, which is not the
# network being emulated ("a2a_share_raw" keeps the whole all-to-all's share).
#
# Writes one JSON object keyed by setting
# (dp_vanilla_rr, dp_eplb_ll, dp_semantic, dp_semantic_replicas, dp_semantic_balanced,
# tp_plain_vanilla, tp_shuffled_semantic (T + A tables), tp_shuffled_t (T tables alone),
# tp_shuffled_replicas; and with the hosts as the engines' topology (netlab --node_topology: a
# token crosses to each other host once): dp_semantic_dedup (the flat semantic placement),
# dp_semantic_topo (built for the topology, planner build --topology), dp_vanilla_dedup), each
# with ranks, cross_node_bytes_per_token (0 without a topology), lar, a2a_bytes_per_token, a2a_share, moe_layer_ms
# (+ dispatch_ms, experts_ms, combine_ms, wait_ms, a2a_link_ms), goodput_rps, max_rate_in_slo,
# ttft_p99_ms, tpot_p50_ms, link_mbit, the host's CPU over the sweep (host_cpu,
# host_cpu_per_request_s) and the sweep; keys of G = 4 have no prefix, the others
# gN_ (g8_dp_semantic, g2_tp_plain_vanilla, ...). --quick runs the first three DP and the first
# two TP settings unless --only names others.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROOT="$PWD"

QUICK=""
ONLY=""
OUT=""
LINK=""
FIXED_LINK=""
GS_FLAG=""
PER_HOST_FLAG=""
MODEL="${SEMMOE_SHARED_DIR:-$ROOT/../shared}/models/qwen3-moe-a"
PROMPTS="${SEMMOE_SHARED_DIR:-$ROOT/../shared}/data/prompts.jsonl"
while (($#)); do
  case "$1" in
    --quick) QUICK=1 ;;
    --json) OUT="$2"; shift ;;
    --link_mbit) FIXED_LINK="$2"; shift ;;
    --model) MODEL="$2"; shift ;;
    --prompts) PROMPTS="$2"; shift ;;
    --only) ONLY=",$2,"; shift ;;
    --gs) GS_FLAG="${2//,/ }"; shift ;;
    --per_host) PER_HOST_FLAG="$2"; shift ;;
    *) echo "bench.sh: unknown flag $1" >&2; exit 2 ;;
  esac
  shift
done
[[ -n "$OUT" ]] || { echo "usage: bench.sh [--quick] --json OUT [--gs 2,4,8] [--link_mbit M]" >&2; exit 2; }
[[ "$(id -u)" == 0 ]] || { echo "bench.sh: the network lab needs root" >&2; exit 1; }
[[ -f "$MODEL/config.json" && -f "$PROMPTS" ]] || { echo "bench.sh: no model/prompts" >&2; exit 1; }
OUT="$(realpath -m "$OUT")"

bazel build --config=opt //engine //planner //router //tools/netlab //tools/netlab:lab_report \
  //tools/loadgen >&2
B="$ROOT/bazel-bin"
W="$(mktemp -d /tmp/semmoe-bench-XXXXXX)"
echo "bench.sh: work in $W" >&2
log() { echo "[bench $(date +%T)] $*" >&2; }

if [[ -n "$QUICK" ]]; then
  PROFILE_N=200; SERVE_N=200; RATES="1,2,4,6"; POINT_S=12; GS="4"
else
  PROFILE_N=600; SERVE_N=600; RATES=""; POINT_S=15; GS="2 4 8"
fi
# The full run's sweep for G ranks: past the knee (where p50 TPOT nears the SLO's 200 ms), which
# moves up with G here because a step's time is mostly collectives whose cost hardly grows with
# the batch.
sweep_rates() {
  if [[ -n "$QUICK" ]]; then echo "$RATES"; return; fi
  case "$1" in
    2) echo "1,2,3,4,5,6,7,8" ;;
    4) echo "2,4,6,8,10,12,14" ;;
    *) echo "2,4,6,8,10,12,14,16,18,20" ;;
  esac
}
[[ -n "$GS_FLAG" ]] && GS="$GS_FLAG"
for g in $GS; do
  [[ "$g" =~ ^[0-9]+$ && "$g" -ge 2 && $((g % 2)) == 0 ]] ||
    { echo "bench.sh: --gs takes even group sizes ≥ 2, got $g" >&2; exit 2; }
done
# Odd lines profile, even lines serve (as docs/PERFORMANCE.md's router comparison).
awk -v n="$PROFILE_N" 'NR % 2 == 1 && ++c <= n' "$PROMPTS" >"$W/profile.jsonl"
awk -v n="$SERVE_N" 'NR % 2 == 0 && ++c <= n' "$PROMPTS" >"$W/serve.jsonl"
log "tracing $PROFILE_N profile prompts"
"$B/engine/engine" trace --model="$MODEL" --prompts="$W/profile.jsonl" --out="$W/p.trace" \
  --max_prompt_tokens=256 2>/dev/null
# The served prompts' routing as loadgen sends them (cut to --max_prompt_chars 600), for the
# scale model to replay (tools/simulate --lab_run, docs/SIMULATE.md).
jq -c '.text |= .[0:600]' "$W/serve.jsonl" >"$W/serve_cut.jsonl"
"$B/engine/engine" trace --model="$MODEL" --prompts="$W/serve_cut.jsonl" --out="$W/s.trace" \
  2>/dev/null

DB="$W/planner.db"
version() {  # version G ARGS... → prints the new version number
  "$B/planner/planner" build --db="$DB" --model=qwen3 --traces="$W/p.trace" --devices="$1" \
    "${@:2}" | grep -o '^version [0-9]*' | cut -d' ' -f2
}

# The host's CPU seconds so far: all of it (user, nice, system, irq, softirq, steal), interrupts
# apart, and the engine, router and planner processes' own (every thread's, /proc/PID/stat), as
# JSON. Over a sweep (with loadgen's own, from `times`): what the ranks got, and what the
# serving path beside them took from the same cores — router, planner and loadgen per request
# sent ("host_cpu_per_request_s"), which the scale model charges to the ranks' cores
# (docs/SIMULATE.md). "other_s" (the host less interrupts and engines) is kept for the record: the
# kernel charges part of the network's interrupt work to the engines too, so it reads low.
cpu_snapshot() {
  local busy irq wall
  read -r busy irq < <(awk '$1 == "cpu" { printf "%.2f %.2f\n", ($2 + $3 + $4 + $7 + $8 + $9) / 100,
                                                  ($7 + $8) / 100; exit }' /proc/stat)
  wall="$(cut -d' ' -f1 /proc/uptime)"
  { cat /proc/[0-9]*/stat 2>/dev/null || true; } | awk -v busy="$busy" -v irq="$irq" -v wall="$wall" \
      -v cores="$(nproc)" '
    { t = ($14 + $15) / 100 }
    $2 == "(engine)" { e += t } $2 == "(router)" { r += t } $2 == "(planner)" { p += t }
    END { printf "{\"wall_s\":%s,\"cores\":%d,\"busy_s\":%s,\"irq_s\":%s,\"engine_s\":%.2f,\"router_s\":%.2f,\"planner_s\":%.2f}\n",
                 wall, cores, busy, irq, e, r, p }'
}

# run NAME G PLACEMENT POLICY ATTN [NETLAB FLAGS...] → one summary JSON line in $W/NAME.json,
# on $HOSTS hosts × $PER_HOST ranks ($PIN: pinned) with links of $LINK Mbit/s.
run() {
  local name="$1" g="$2" placement="$3" policy="$4" attn="$5"
  shift 5
  if [[ -n "$ONLY" && "$name" != calibrate_* && "$ONLY" != *",${name#g[0-9]*_},"* &&
        "$ONLY" != *",$name,"* ]]; then
    return 0
  fi
  local ep="$W/$name.endpoints" pinned=false
  [[ -n "$PIN" ]] && pinned=true
  log "$name: G = $g ($HOSTS hosts × $PER_HOST ranks${PIN:+, pinned}, $attn, placement" \
    "$placement, $policy, $LINK Mbit/s${*:+, $*})"
  "$B/tools/netlab/netlab" --model="$MODEL" --hosts="$HOSTS" --ranks_per_host="$PER_HOST" \
    --attn="$attn" --placement="$placement" --db="$DB" --router_policy="$policy" \
    --link_mbit="$LINK" --kv_cache_mb=128 --run_dir="$W/$name" --endpoints_file="$ep" $PIN "$@" \
    >"$W/$name.out" 2>&1 &
  local pid=$!
  for _ in $(seq 1 1800); do [[ -s "$ep" ]] && break; sleep 0.1; done
  [[ -s "$ep" ]] || { cat "$W/$name.out" >&2; kill -INT "$pid"; wait "$pid" || true; return 1; }
  local router engines
  router="$(grep -o '"router":"[^"]*"' "$ep" | cut -d'"' -f4)"
  engines="$(grep -o '"address":"[^"]*"' "$ep" | cut -d'"' -f4 | paste -sd, -)"
  # Warm-up, then the measured sweep between two snapshots of the engines' counters.
  "$B/tools/loadgen/loadgen" --target="$router" --prompts="$W/serve.jsonl" --concurrency=2 \
    --duration_s=3 --max_tokens=16 --max_prompt_chars=600 >/dev/null 2>&1 || true
  "$B/tools/netlab/lab_report" snapshot --engines="$engines" --out="$W/$name.before.json"
  cpu_snapshot >"$W/$name.cpu.before.json"
  times >"$W/$name.times.before"  # This shell's reaped children: loadgen's CPU, after it.
  "$B/tools/loadgen/loadgen" --target="$router" --prompts="$W/serve.jsonl" --sweep \
    --rates="$RATES" --duration_s="$POINT_S" --drain_s=30 --max_tokens=32 \
    --max_prompt_chars=600 --out="$W/$name.sweep.json" >"$W/$name.loadgen.out" 2>&1
  times >"$W/$name.times.after"
  cpu_snapshot >"$W/$name.cpu.after.json"
  local loadgen_cpu
  loadgen_cpu="$(awk 'FNR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/)
                                 v = u[1] * 60 + u[2] + s[1] * 60 + s[2]
                                 if (NR == FNR) before = v; else after = v }
                      END { printf "%.3f", after - before }' \
                   "$W/$name.times.before" "$W/$name.times.after")"
  "$B/tools/netlab/lab_report" snapshot --engines="$engines" --out="$W/$name.after.json"
  "$B/tools/netlab/lab_report" summary --before="$W/$name.before.json" \
    --after="$W/$name.after.json" --loadgen="$W/$name.sweep.json" --setting="$name" |
    jq -c --argjson per_host "$PER_HOST" --argjson link "$LINK" --argjson pinned "$pinned" \
      --arg placement "$placement" --arg policy "$policy" --arg attn "$attn" --arg flags "$*" \
      --arg rates "$RATES" --argjson point_s "$POINT_S" --arg work "$W" \
      '.ranks_per_host = $per_host | .link_mbit = $link | .pinned = $pinned
       | .placement = $placement | .router_policy = $policy | .attn = $attn
       | .netlab_flags = $flags | .rates = $rates | .point_s = $point_s | .work_dir = $work' |
    jq -c --slurpfile b "$W/$name.cpu.before.json" --slurpfile a "$W/$name.cpu.after.json" \
      --slurpfile sweep "$W/$name.sweep.json" --argjson loadgen "$loadgen_cpu" '
      ($a[0]) as $a | ($b[0]) as $b | ([$sweep[0].points[].sent] | add) as $sent
      | .host_cpu = {wall_s: ($a.wall_s - $b.wall_s), cores: $a.cores,
                     busy_s: ($a.busy_s - $b.busy_s), irq_s: ($a.irq_s - $b.irq_s),
                     engine_s: ($a.engine_s - $b.engine_s), router_s: ($a.router_s - $b.router_s),
                     planner_s: ($a.planner_s - $b.planner_s), loadgen_s: $loadgen,
                     requests: $sent}
      | .host_cpu.other_s = ([.host_cpu.busy_s - .host_cpu.irq_s - .host_cpu.engine_s, 0] | max)
      | .host_cpu_per_request_s =
          (if $sent > 0
           then (.host_cpu.router_s + .host_cpu.planner_s + .host_cpu.loadgen_s) / $sent
           else 0 end)' \
      >"$W/$name.json"
  kill -INT "$pid"
  wait "$pid" || true
  [[ "$name" == calibrate_*_unshaped ]] || with_link_share "$W/$name.json"
  log "$name: $(jq -c '{lar, a2a_bytes_per_token, moe_layer_ms, dispatch_ms, experts_ms, combine_ms, a2a_share, max_rate_in_slo}' "$W/$name.json")"
}

# The link's share, as emulated: the busiest rank's bytes per MoE-layer call that cross its link
# (a rank's peers on other hosts are (ranks - ranks_per_host) / (ranks - 1) of its peers) over
# the link rate ("link_transfer_ms"), against itself plus the experts' time measured in the same
# run ("a2a_share"): the compute-to-communication ratio the calibration aims at 55%. Also kept:
# the all-to-all time above the unshaped lab's ("a2a_link_ms"; the unshaped run is at a light
# load, so under a sweep this holds the load's CPU sharing as well as the link) and the whole
# all-to-all's measured share of the MoE layer ("a2a_share_raw", from lab_report): on this
# machine a CPU collective through veths costs ~1 ms a call and more with more ranks than cores,
# which is not the network being emulated.
BASE_A2A=0
LINK_FRACTION='(.ranks - .ranks_per_host) / (.ranks - 1)'
with_link_share() {  # with_link_share FILE: adds a2a_link_ms, link_transfer_ms and a2a_share
  jq -c --argjson base "$BASE_A2A" "
    .a2a_link_ms = ([.dispatch_ms + .combine_ms - \$base, 0] | max)
    | .link_transfer_ms = (if .link_mbit > 0
                           then .peer_bytes_per_call_max * $LINK_FRACTION * 8
                                / (.link_mbit * 1e6) * 1000
                           else 0 end)
    | .a2a_share = (if .link_transfer_ms + .experts_ms > 0
                    then .link_transfer_ms / (.link_transfer_ms + .experts_ms) else 0 end)" "$1" \
    >"$1.tmp"
  mv "$1.tmp" "$1"
}

# Calibrate one G: vanilla DP on unshaped links measures the experts' time per MoE-layer call
# and the bytes a rank sends its peers per call; the rate that makes the link's share of them
# take 55% of (transfer + experts) follows, and a run at that rate checks it. (Subtracting the
# unshaped lab's all-to-all time from a shaped one's, as the first version of this did, is
# dominated by noise: the link adds ~0.1-0.5 ms to a ~5 ms, jittery collective.)
calibrate() {  # calibrate G: sets LINK and BASE_A2A
  local g="$1" rates="$RATES" point="$POINT_S"
  RATES="2"; POINT_S=15
  LINK=0
  run "calibrate_g${g}_unshaped" "$g" vanilla round_robin dp
  BASE_A2A="$(jq '.dispatch_ms + .combine_ms' "$W/calibrate_g${g}_unshaped.json")"
  if [[ -z "$FIXED_LINK" ]]; then
    LINK="$(jq ".peer_bytes_per_call_max * $LINK_FRACTION * 8
                / ((.experts_ms * 0.55 / 0.45) / 1000) / 1e6
                | if . < 1 then 1 else . end | floor" "$W/calibrate_g${g}_unshaped.json")"
    log "calibration G = $g: experts $(jq .experts_ms "$W/calibrate_g${g}_unshaped.json") ms and" \
      "$(jq .peer_bytes_per_call_max "$W/calibrate_g${g}_unshaped.json") B to peers per call" \
      "→ $LINK Mbit/s"
    run "calibrate_g${g}_$LINK" "$g" vanilla round_robin dp
    log "calibration check at $LINK Mbit/s: the link's share $(jq .a2a_share \
      "$W/calibrate_g${g}_$LINK.json"); the whole all-to-all's share of the MoE layer" \
      "$(jq .a2a_share_raw "$W/calibrate_g${g}_$LINK.json")"
  else
    LINK="$FIXED_LINK"
  fi
  RATES="$rates"; POINT_S="$point"
  log "G = $g: links of $LINK Mbit/s"
}

for g in $GS; do
  prefix="g${g}_"; [[ "$g" == 4 ]] && prefix=""
  PER_HOST="${PER_HOST_FLAG:-2}"; HOSTS=$((g / PER_HOST)); PIN=""
  if [[ "$g" == 2 ]]; then HOSTS=2; PER_HOST=1; PIN="--pin_cores"; fi
  ((HOSTS * PER_HOST == g && HOSTS >= 2)) ||
    { echo "bench.sh: G = $g is not 2 or more hosts of --per_host $PER_HOST" >&2; exit 2; }
  RATES="$(sweep_rates "$g")"
  calibrate "$g"
  if [[ -n "${CALIBRATE_ONLY:-}" ]]; then continue; fi
  full=""; [[ -z "$QUICK" || -n "$ONLY" ]] && full=1  # Quick runs the rest only when --only names them.
  eplb="$(version "$g" --mode=dp --algo=eplb)"
  sem="$(version "$g" --mode=dp)"
  tp="$(version "$g" --mode=tp)"
  run "${prefix}dp_vanilla_rr" "$g" vanilla round_robin dp
  run "${prefix}dp_eplb_ll" "$g" "$eplb" least_loaded dp
  run "${prefix}dp_semantic" "$g" "$sem" semantic dp
  if [[ -n "$full" ]]; then
    topo="$(version "$g" --mode=dp --topology="${HOSTS}x${PER_HOST}")"
    run "${prefix}dp_vanilla_dedup" "$g" vanilla round_robin dp --node_topology
    run "${prefix}dp_semantic_dedup" "$g" "$sem" semantic dp --node_topology
    run "${prefix}dp_semantic_topo" "$g" "$topo" semantic dp --node_topology
  fi
  if [[ -n "$full" ]]; then
    rep="$(version "$g" --mode=dp --replicas=1)"
    bal="$(version "$g" --mode=dp --expert_balance_eps=0.1)"
    run "${prefix}dp_semantic_replicas" "$g" "$rep" semantic dp
    run "${prefix}dp_semantic_balanced" "$g" "$bal" semantic dp
  fi
  run "${prefix}tp_plain_vanilla" "$g" vanilla least_loaded tp
  run "${prefix}tp_shuffled_semantic" "$g" "$tp" least_loaded tp
  if [[ -n "$full" ]]; then
    tprep="$(version "$g" --mode=tp --replicas=1)"
    run "${prefix}tp_shuffled_t" "$g" "$tp" least_loaded tp --tp_layer_tables=false
    run "${prefix}tp_shuffled_replicas" "$g" "$tprep" least_loaded tp
  fi
done

# One object keyed by setting (calibration runs left out), each with its G's link rate.
{
  echo "{"
  first=1
  for f in "$W"/*.json; do
    case "$f" in *.before.json|*.after.json|*.sweep.json|*/calibrate_*) continue ;; esac
    [[ -n "$first" ]] || echo ","
    first=""
    printf '"%s": %s' "$(basename "$f" .json)" "$(cat "$f")"
  done
  echo "}"
} >"$OUT"
log "wrote $OUT"

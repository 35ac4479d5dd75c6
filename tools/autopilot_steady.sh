#!/usr/bin/env bash
# The autopilot on steady traffic (issue 37's "no rollouts in a steady 10-minute run"): version 1
# planned on prose prompts of ../shared/data/prompts.jsonl, a 2-rank local cluster with
# --autopilot serving other prose prompts one at a time for DURATION_S seconds (default 600),
# then the autopilot's decisions counted by action. Not a CI test (it runs for minutes).
#   bazel build //tools:local_cluster //engine //planner //router //tools:router_client //console
#   SHARED=../shared tools/autopilot_steady.sh [DURATION_S]
set -euo pipefail
SHARED="${SHARED:-../shared}"
DURATION_S="${1:-600}"
B=bazel-bin
MODEL="$SHARED/models/qwen3-moe-a"
PROMPTS="$SHARED/data/prompts.jsonl"
TMP="$(mktemp -d)"
ids_of() { grep -o '"token_ids": \[[0-9, ]*\]' | sed 's/"token_ids": \[//; s/\]//; s/ //g' |
  cut -d, -f1-256; }
grep '"domain": "prose"' "$PROMPTS" | ids_of >"$TMP/prose.ids"
sed -n '1,60p' "$TMP/prose.ids" |
  awk '{ printf "{\"id\": \"p%d\", \"token_ids\": [%s]}\n", NR, $0 }' >"$TMP/profile.jsonl"
sed -n '61,400p' "$TMP/prose.ids" >"$TMP/serve.ids"
"$B/engine/engine" trace --model="$MODEL" --prompts="$TMP/profile.jsonl" --out="$TMP/p.trace" 2>/dev/null
"$B/planner/planner" build --db="$TMP/a.db" --model=qwen3 --traces="$TMP/p.trace" --devices=2 \
  --mode=dp --quiet >/dev/null
"$B/planner/planner" activate --db="$TMP/a.db" --version=1 >/dev/null
"$B/tools/local_cluster" --model="$MODEL" --ranks=2 --db="$TMP/a.db" --placement=1 \
  --engine_binary="$B/engine/engine" --planner_binary="$B/planner/planner" \
  --router_binary="$B/router/router" --kv_cache_mb=64 --sample_routing=1 \
  --routing_sample_tokens=16384 --autopilot \
  --planner_flags=--autopilot_period=2s,--autopilot_min_interval=20s,--autopilot_min_window_tokens=2048 \
  --run_dir="$TMP/run" --endpoints_file="$TMP/ep.json" >"$TMP/cluster.out" 2>&1 &
PID=$!
trap 'kill -INT "$PID" 2>/dev/null || true' EXIT
for _ in $(seq 1 1200); do [[ -s "$TMP/ep.json" ]] && break; sleep 0.1; done
RADDR="$(grep -o '"router":"[^"]*"' "$TMP/ep.json" | cut -d'"' -f4)"
start="$(date +%s)"
sent=0 failed=0
while (($(date +%s) - start < DURATION_S)); do
  while read -r ids && (($(date +%s) - start < DURATION_S)); do
    if "$B/tools/router_client" generate --target="$RADDR" --token_ids="$ids" --max_tokens=4 \
      >/dev/null 2>&1; then sent=$((sent + 1)); else failed=$((failed + 1)); fi
  done <"$TMP/serve.ids"
done
metrics_port="$(cat "$TMP/run/planner.metrics_port")"
echo "steady prose traffic for ${DURATION_S} s: $sent requests, $failed failed"
curl -sf "http://127.0.0.1:$metrics_port/metrics" | grep '^semmoe_planner_autopilot_decisions_total'
"$B/console/console" --endpoints="$TMP/ep.json" --model=qwen3 autopilot status | head -3

#!/usr/bin/env bash
# Overload at about 25x capacity (docs/PERFORMANCE.md, "Overload"): a 2-rank local cluster of
# MODEL, then loadgen's open loop at 200 requests/s for 20 s (30 s drain, 16 tokens each). One
# run per bound given; prints each run's counts and TTFT percentiles.
#
#   bazel build -c opt --config=opt //engine //router //tools:local_cluster //tools/loadgen
#   tools/bench_overload.sh ../shared/models/qwen3-moe-a 2000 0     # bound 2 s, then none
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
MODEL="$1"
shift
PROMPTS="${PROMPTS:-../shared/data/prompts.jsonl}"
B=bazel-bin
TMP="$(mktemp -d)"
trap 'pkill -KILL -f -- "$TMP/run" 2>/dev/null || true; rm -rf "$TMP"' EXIT
for wait_ms in "$@"; do
  rm -rf "$TMP/run" "$TMP/ep.json"
  "$B/tools/local_cluster" --model "$MODEL" --ranks 2 --kv_cache_mb 64 --router_policy least_loaded \
    --http_port -1 --endpoints_file "$TMP/ep.json" --run_dir "$TMP/run" \
    --router_flags=--max_predicted_wait_ms="$wait_ms" >"$TMP/cluster.log" 2>&1 &
  cluster=$!
  for _ in $(seq 1 1800); do [[ -s "$TMP/ep.json" ]] && break; sleep 0.1; done
  [[ -s "$TMP/ep.json" ]] || { cat "$TMP/cluster.log" >&2; exit 1; }
  sleep 2  # The router's first stats poll.
  "$B/tools/loadgen/loadgen" --target="$(jq -r .router "$TMP/ep.json")" --prompts="$PROMPTS" \
    --max_prompt_chars=300 --max_tokens=16 --quiet --out="$TMP/out.json" --rate=200 \
    --duration_s=20 --drain_s=30 >"$TMP/load.log" 2>&1
  kill -INT "$cluster"
  wait "$cluster" 2>/dev/null || true
  printf 'max_predicted_wait_ms=%s ' "$wait_ms"
  jq -c '{sent, completed, rejected, failed, ttft_p50_ms: .ttft_ms.p50, ttft_p99_ms: .ttft_ms.p99}' \
    "$TMP/out.json"
done

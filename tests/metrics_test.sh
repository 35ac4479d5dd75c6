#!/usr/bin/env bash
# End-to-end: Prometheus /metrics on every component of a local cluster — the router (on its HTTP
# port), each engine rank and the planner — scraped after real traffic and checked by a real
# parser (`promtool check metrics`, Debian's prometheus package), then read for the figures an
# operator watches: requests by outcome, latency histograms, tokens, queue depth and KV-cache use,
# LAR and all-to-all bytes per MoE layer, the placement version each group serves.
set -euo pipefail

source "$1"  # tests/cli_lib.sh: TMP, fail, launch_cluster, start_cluster, stop_cluster
shift
CLUSTER="$1" ENGINE="$2" PLANNER="$3" ROUTER="$4" MAKE_TINY="$5"
command -v promtool >/dev/null || fail "promtool is missing (./semmoe setup installs prometheus)"

"$MAKE_TINY" --arch=qwen3_moe --out="$TMP/model" --seed=5 --experts=8 --top_k=2 >/dev/null
DB="$TMP/p.db"
: >"$TMP/prompts.jsonl"
for i in $(seq 1 12); do
  printf '{"id": "p%d", "text": "The router sends request %d to the rank."}\n' "$i" "$i" \
    >>"$TMP/prompts.jsonl"
done
"$ENGINE" trace --model="$TMP/model" --prompts="$TMP/prompts.jsonl" --out="$TMP/t.trace" 2>/dev/null
"$PLANNER" build --db="$DB" --model=tiny --traces="$TMP/t.trace" --devices=2 --mode=dp >/dev/null
"$PLANNER" activate --db="$DB" --version=1 >/dev/null
start_cluster m --attn=dp --placement=1
trap 'kill -INT $PID 2>/dev/null || true' EXIT
HTTP="$(jq -r .http "$EP")"
[[ "$HTTP" != null ]] || fail "no HTTP address: $(cat "$EP")"

N=6
for i in $(seq 1 $N); do
  curl -sS -o /dev/null -H 'Content-Type: application/json' \
    -d "{\"prompt\": \"request $i\", \"max_tokens\": 5, \"ignore_eos\": true}" "$HTTP/v1/completions"
done
curl -sS -o /dev/null -H 'Content-Type: application/json' -d '{"prompt": [999999]}' \
  "$HTTP/v1/completions"  # Invalid: counted apart from failures.
sleep 1  # One more stats poll of the engines.

scrape() {  # scrape NAME HOST:PORT: its /metrics into $TMP/NAME.prom, checked by promtool
  curl -sS -D "$TMP/$1.headers" "http://$2/metrics" >"$TMP/$1.prom" || fail "$1: no /metrics at $2"
  grep -qi '^content-type: text/plain; version=0.0.4' "$TMP/$1.headers" ||
    fail "$1: content type: $(cat "$TMP/$1.headers")"
  promtool check metrics <"$TMP/$1.prom" >"$TMP/$1.lint" 2>&1 ||
    fail "$1: promtool: $(cat "$TMP/$1.lint")"
}
value() {  # value FILE SERIES: the sample's value (the series as written, labels included)
  awk -v s="$2" '$1 == s { print $2; found = 1 } END { exit !found }' "$1" ||
    fail "no series $2 in $1"
}

scrape router "$HTTP"
R="$TMP/router.prom"
[[ "$(value "$R" 'semmoe_router_requests_total{outcome="completed"}')" == "$N" ]] || fail "completed"
[[ "$(value "$R" 'semmoe_router_requests_total{outcome="invalid"}')" == 1 ]] || fail "invalid"
[[ "$(value "$R" 'semmoe_router_requests_total{outcome="failed"}')" == 0 ]] || fail "failed"
[[ "$(value "$R" 'semmoe_router_time_to_first_token_seconds_count{arm="default"}')" == "$N" ]] ||
  fail "TTFT histogram"
value "$R" 'semmoe_router_e2e_request_latency_seconds_bucket{arm="default",le="+Inf"}' >/dev/null
[[ "$(value "$R" 'semmoe_router_generation_tokens_total{arm="default"}')" == $((5 * N)) ]] ||
  fail "tokens out"
value "$R" 'semmoe_router_queue_depth' >/dev/null
[[ "$(value "$R" 'semmoe_router_placement_version{arm="default",of="tables"}')" == 1 ]] ||
  fail "tables version: $(grep placement_version "$R")"
[[ "$(value "$R" 'semmoe_router_tables_ok{arm="default"}')" == 1 ]] || fail "tables ok"

completed=0
declare -A served=() activations=()
for r in 0 1; do
  scrape "rank$r" "$(jq -r ".engines[$r].metrics" "$EP")"
  E="$TMP/rank$r.prom"
  completed=$((completed + $(value "$E" "semmoe_engine_requests_total{rank=\"$r\",outcome=\"completed\"}")))
  [[ "$(value "$E" "semmoe_engine_placement_version{rank=\"$r\"}")" == 1 ]] || fail "rank $r version"
  value "$E" "semmoe_engine_kv_cache_usage_ratio{rank=\"$r\"}" >/dev/null
  value "$E" "semmoe_engine_requests_waiting{rank=\"$r\"}" >/dev/null
  for layer in 0 1; do  # Both layers are MoE layers.
    value "$E" "semmoe_engine_moe_local_activation_ratio{rank=\"$r\",layer=\"$layer\"}" >/dev/null
    value "$E" "semmoe_engine_all_to_all_bytes_total{rank=\"$r\",layer=\"$layer\",phase=\"dispatch\",direction=\"sent\"}" >/dev/null
    served[$layer]=$((${served[$layer]:-0} + $(value "$E" "semmoe_engine_moe_served_activations_total{rank=\"$r\",layer=\"$layer\"}")))
    for where in local remote; do
      activations[$layer]=$((${activations[$layer]:-0} + $(value "$E" "semmoe_engine_moe_activations_total{rank=\"$r\",layer=\"$layer\",where=\"$where\"}")))
    done
  done
done
((completed == N)) || fail "the engines completed $completed, not $N"
for layer in 0 1; do  # Every activation ran on exactly one rank's experts.
  ((served[$layer] > 0 && served[$layer] == activations[$layer])) ||
    fail "layer $layer: the ranks' experts ran ${served[$layer]} activations of ${activations[$layer]}"
  imbalance="$(value "$R" "semmoe_router_moe_expert_load_imbalance{arm=\"default\",layer=\"$layer\"}")"
  awk -v x="$imbalance" 'BEGIN { exit !(x >= 0 && x <= 1) }' ||
    fail "layer $layer: the router's expert-load imbalance over 2 ranks is $imbalance"
  # The hottest experts: at most 8 places, most first, within the layer's activations; without
  # replicas the group's hottest expert ran on one rank, which reports the same count for it.
  hot="$(grep "^semmoe_router_moe_hot_expert_activations{arm=\"default\",layer=\"$layer\"," "$R")" ||
    fail "layer $layer: no hottest experts from the router"
  places="$(wc -l <<<"$hot")"
  ((places >= 1 && places <= 8)) || fail "layer $layer: $places hot-expert places: $hot"
  awk -v all="${served[$layer]}" '{ if (NR > 1 && $2 > last) bad = 1; last = $2; sum += $2 }
    END { exit !(bad == 0 && sum <= all && sum > 0) }' <<<"$hot" ||
    fail "layer $layer: hot experts not ordered or more than the ${served[$layer]} activations: $hot"
  top="$(head -1 <<<"$hot")"
  expert="$(sed -E 's/.*expert="([0-9]+)".*/\1/' <<<"$top")"
  on_ranks="$(cat "$TMP"/rank*.prom | grep "^semmoe_engine_moe_hot_expert_activations{.*layer=\"$layer\",.*expert=\"$expert\"}" | awk '{ s += $2 } END { print s + 0 }')"
  [[ "$on_ranks" == "$(awk '{ print $2 }' <<<"$top")" ]] ||
    fail "layer $layer: the router's hottest expert $expert ran ${top##* } activations, the ranks say $on_ranks"
done

scrape planner "$(jq -r .planner_metrics "$EP")"
[[ "$(value "$TMP/planner.prom" 'semmoe_planner_active_version{model="tiny"}')" == 1 ]] ||
  fail "planner active version: $(cat "$TMP/planner.prom")"

trap - EXIT
stop_cluster m
echo "metrics_test: ok ($(grep -vc '^#' "$R") router, $(grep -vc '^#' "$TMP/rank0.prom") rank-0 and $(grep -vc '^#' "$TMP/planner.prom") planner samples)"

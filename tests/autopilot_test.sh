#!/usr/bin/env bash
# End-to-end, on the shared trained model (qwen3-moe-a, real text): the planner's autopilot
# re-plans a domain shift by itself, at a small scale (G = 2).
#   - version 1 is planned on prose prompts and active; `local_cluster --autopilot` follows it and
#     its ranks sample every request's routing (the last 16,384 tokens each, flushed every 10 s);
#   - prose traffic: the loop decides, and rolls nothing out;
#   - code traffic (python and C headers) until the migration ends (at most 480 s): without an
#     operator, rollouts within the expert budget step by step until a candidate gains too little, the group serves the newest version, the group's reports reach the planner
#     and a rollout passes the served check (rank 0's LAR and failures after the switch), and no
#     request fails;
#   - the version it serves then beats version 1 on held-out code prompts and reaches ≥ 90% of the
#     LAR of a version built offline on code (the issue's target, 95%, is measured in
#     docs/PERFORMANCE.md);
#   - every decision is in `console autopilot status` and the planner's /metrics.
set -euo pipefail

source "$1"  # tests/cli_lib.sh: TMP, fail, launch_cluster, stop_cluster
shift
CLUSTER="$1"
ENGINE="$2"
PLANNER="$3"
ROUTER="$4"
RCLIENT="$5"
CONSOLE="$6"

if [[ -z "${SEMMOE_SHARED_DIR:-}" ]]; then
  echo "SKIPPED: SEMMOE_SHARED_DIR is unset (./semmoe test sets it to ../shared)"
  exit 0
fi
MODEL="$SEMMOE_SHARED_DIR/models/qwen3-moe-a"
PROMPTS="$SEMMOE_SHARED_DIR/data/prompts.jsonl"
[[ -f "$MODEL/config.json" && -f "$PROMPTS" ]] || fail "no qwen3-moe-a or prompts in $SEMMOE_SHARED_DIR"

# Prompts' token ids (the first 256 of each) by domain.
as_jsonl() { awk -v p="$1" '{ printf "{\"id\": \"%s%d\", \"token_ids\": [%s]}\n", p, NR, $0 }'; }
grep '"domain": "prose"' "$PROMPTS" | ids_of >"$TMP/prose.ids"
grep -E '"domain": "(python|c_headers)"' "$PROMPTS" | ids_of >"$TMP/code.ids"
sed -n '1,60p' "$TMP/prose.ids" | as_jsonl prose >"$TMP/prose_profile.jsonl"
sed -n '61,100p' "$TMP/prose.ids" >"$TMP/prose_serve.ids"
sed -n '1,60p' "$TMP/code.ids" >"$TMP/code_serve.ids"
sed -n '61,160p' "$TMP/code.ids" | awk 'NR % 2 == 1' | as_jsonl code >"$TMP/code_offline.jsonl"
sed -n '61,160p' "$TMP/code.ids" | awk 'NR % 2 == 0' | as_jsonl held >"$TMP/code_heldout.jsonl"

"$ENGINE" trace --model="$MODEL" --prompts="$TMP/prose_profile.jsonl" --out="$TMP/prose.trace" \
  2>/dev/null
DB="$TMP/auto.db"
"$PLANNER" build --db="$DB" --model=qwen3 --traces="$TMP/prose.trace" --devices=2 --mode=dp \
  --quiet >/dev/null
"$PLANNER" activate --db="$DB" --version=1 >/dev/null

# A latency margin of 100% for the served check: these requests are 4 tokens each, so their time
# per token is mostly the prompt's and the machine's (CI runs other tests beside this one).
launch_cluster auto "$CLUSTER" --model="$MODEL" --ranks=2 --db="$DB" --placement=1 \
  --engine_binary="$ENGINE" --planner_binary="$PLANNER" --router_binary="$ROUTER" \
  --kv_cache_mb=64 --sample_routing=1 --routing_sample_tokens=16384 --autopilot \
  --planner_flags=--autopilot_period=2s,--autopilot_min_interval=20s,--autopilot_min_window_tokens=2048,--autopilot_served_latency_margin=1
trap 'kill -INT "$PID" 2>/dev/null || true' EXIT  # The cluster stops with the test, however it ends.
grep -q "the planner's autopilot re-plans 'qwen3'" "$TMP/auto.out" ||
  fail "no autopilot: $(cat "$TMP/auto.out")"
console() { "$CONSOLE" --endpoints="$EP" --model=qwen3 "$@"; }
decisions() { console autopilot status --json; }
# summary: the decisions in one short line each (for failure messages: CI shows only a tail).
summary() { console autopilot status | sed -n '1,16p' | cut -c1-240; }

# send IDS: each prompt through the router, 4 tokens; a failure fails the test.
send() {
  local ids out
  while read -r ids; do
    out="$("$RCLIENT" generate --target="$RADDR" --token_ids="$ids" --max_tokens=4 --json 2>&1)" ||
      fail "a request failed: $out"
  done <"$1"
}
# until_flushed: both ranks' live traces were rewritten since now.
until_flushed() {
  local t0
  t0="$(date +%s)"
  for _ in $(seq 1 300); do
    local a b
    a="$(stat -c %Y "$TMP/auto/rank0.trace" 2>/dev/null || echo 0)"
    b="$(stat -c %Y "$TMP/auto/rank1.trace" 2>/dev/null || echo 0)"
    ((a > t0 && b > t0)) && return 0
    sleep 0.1
  done
  fail "the ranks did not flush their live traces: $(ls -l "$TMP/auto")"
}

# --- Steady: prose traffic, the traffic version 1 was planned for.
send "$TMP/prose_serve.ids"
until_flushed
sleep 5  # A few ticks on the flushed window.
d="$(decisions)"
grep -q '"action":"steady"' <<<"$d" || fail "no steady decision on prose traffic: $(summary)"
grep -Eq '"action":"(rollout|rollback|error)"' <<<"$d" && fail "the loop acted on steady traffic: $(summary)"

# --- The shift: code traffic until the migration has ended — a rollout passed its served check
# and the loop's newest change is a refused candidate (nothing gains enough any more) or a rollout
# within the budget — and at least MIN_SHIFT_S; at most 480 s (a cold CI machine builds other
# targets beside it). Progress, not a clock, ends it: the held-out check below compares the end of
# the migration with an offline build.
MIN_SHIFT_S="${AUTOPILOT_TEST_MIN_SHIFT_S:-0}"
MAX_SHIFT_S=480
# one_per_line < DECISIONS_JSON: a decision per line, newest first.
one_per_line() { sed 's/{"id":/\n{"id":/g' | grep '^{"id":'; }
shift_at="$(date +%s)"
first=""
served=""
ended=""
: >"$TMP/rollouts"
while (($(date +%s) - shift_at < MAX_SHIFT_S)); do
  if [[ -n "$first" && -n "$served" && -n "$ended" ]] &&
    (($(date +%s) - shift_at >= MIN_SHIFT_S)); then break; fi
  send "$TMP/code_serve.ids"
  d="$(decisions)"
  grep -q '"action":"error"' <<<"$d" && fail "the autopilot failed: $(summary)"
  grep -q 'served_check_passed' <<<"$d" && served=1
  # Every rollout seen so far: "id moved".
  grep -o '"id":"[0-9]*","at_unix_micros":"[0-9]*","action":"rollout"[^}]*' <<<"$d" |
    sed -E 's/^"id":"([0-9]*)".*"moved_experts":([0-9]*).*/\1 \2/' >>"$TMP/rollouts" || true
  if [[ -z "$first" && -s "$TMP/rollouts" ]]; then
    first="$(($(date +%s) - shift_at))"
    echo "first rollout $first s after the shift"
  fi
  # The newest change: a refusal or a rollback ends a migration, so does a rollout that moved
  # less than the whole budget (its figures: "budget_spent": false).
  change="$(one_per_line <<<"$d" | grep -m1 -E '"action":"(rollout|refuse|rollback)"' || true)"
  ended=""
  if [[ -n "$first" ]]; then
    grep -Eq '"action":"(refuse|rollback)"' <<<"$change" && ended=1
    grep -q 'budget_spent\\":false' <<<"$change" && ended=1
  fi
done
echo "the shift ran $(($(date +%s) - shift_at)) s (served check passed: ${served:-no}, migration ended: ${ended:-no})"
[[ -n "$first" ]] || fail "no rollout within $MAX_SHIFT_S s of the shift: $(summary)"
[[ -n "$ended" ]] || fail "the migration did not end within $MAX_SHIFT_S s of the shift: $(summary)"
sort -u "$TMP/rollouts" -o "$TMP/rollouts"
while read -r id moved; do
  ((moved <= 32)) || fail "rollout $id moved $moved experts, over the budget of 32 (a quarter of 128)"
done <"$TMP/rollouts"
# The version it serves now: the newest decision's (its candidate if it rolled one out or back).
newest="$(grep -o '"action":"[a-z]*","reason":"[^"]*","served_version":"[0-9]*","candidate_version":"[0-9]*"' <<<"$d" | sed -n 1p)"
rolled="$(grep -o '"served_version":"[0-9]*"' <<<"$newest" | grep -o '[0-9]*')"
grep -Eq '"action":"(rollout|rollback)"' <<<"$newest" &&
  rolled="$(grep -o '"candidate_version":"[0-9]*"' <<<"$newest" | grep -o '[0-9]*')"
[[ "$rolled" -gt 1 ]] || fail "the newest decision does not serve a new version: $newest"
for _ in $(seq 1 600); do  # The group switches to it (docs/ROLLOUT.md).
  st="$("$RCLIENT" stats --target="$RADDR" --json)"
  grep -q "\"engines_version\":\"$rolled\"" <<<"$st" && break
  sleep 0.1
done
grep -q "\"engines_version\":\"$rolled\"" <<<"$st" || fail "the group does not serve v$rolled: $st"
grep -q '"failed":"[1-9]' <<<"$st" && fail "requests failed: $st"
echo "$(wc -l <"$TMP/rollouts") rollouts in $(($(date +%s) - shift_at)) s (moved: $(awk '{ printf "%s ", $2 }' "$TMP/rollouts")), serving v$rolled"
# The group reports what it serves (rank 0 → the planner every 2 s): the decisions carry it.
for _ in $(seq 1 100); do
  out="$(console autopilot status)"
  grep -q "^groups: 127.0.0.1:[0-9]* serves v$rolled\($\|;\)" <<<"$out" && break
  sleep 0.1
done
grep -q "^autopilot for qwen3: [a-z]* at .* UTC, serving v$rolled: " <<<"$out" ||
  fail "console autopilot status: $out"
grep -q "^groups: 127.0.0.1:[0-9]* serves v$rolled\($\|;\)" <<<"$out" ||
  fail "console autopilot status has no report of the group serving v$rolled: $out"
# And a rollout was checked where it serves: rank 0's LAR and failures after the switch against
# before it (the served check passed; a served rollback would have been a decision above).
[[ -n "$served" ]] || fail "no rollout passed the served check: $(summary)"
# On the whole group's counters, the time per output token included.
grep -q 'served_after\\":{[^}]*ms_per_output_token\\":[0-9.]*[1-9]' <<<"$(decisions)" ||
  fail "the served check saw no time per output token: $(summary)"
metrics_port="$(cat "$TMP/auto/planner.metrics_port")"
curl -sf "http://127.0.0.1:$metrics_port/metrics" |
  grep -q 'semmoe_planner_autopilot_decisions_total{model="qwen3",action="rollout"} [1-9]' ||
  fail "no rollout in the planner's /metrics"
console autopilot status | sed -n '1,12p'  # For the log: the latest decisions.
trap - EXIT
stop_cluster auto

# --- What it rolled out against a version built offline on code, on held-out code prompts.
"$ENGINE" trace --model="$MODEL" --prompts="$TMP/code_offline.jsonl" --out="$TMP/code.trace" \
  2>/dev/null
"$ENGINE" trace --model="$MODEL" --prompts="$TMP/code_heldout.jsonl" --out="$TMP/held.trace" \
  2>/dev/null
offline="$("$PLANNER" build --db="$DB" --model=qwen3 --traces="$TMP/code.trace" --devices=2 \
  --mode=dp --quiet | grep -o '^version [0-9]*' | cut -d' ' -f2)"
rows="$("$PLANNER" eval --db="$DB" --versions="1,$rolled,$offline" --traces="$TMP/held.trace" \
  --json --quiet)"
lar() { grep -o '"dp_lar_affinity":[0-9.e-]*' <<<"$rows" | sed -n "$1p" | cut -d: -f2; }
echo "held-out code LAR: version 1 (prose) $(lar 1), autopilot's v$rolled $(lar 2), offline v$offline $(lar 3)"
# The issue's target is 95% (docs/PERFORMANCE.md has the runs); the windows the ranks flush vary
# from run to run (93-96% in docs/PERFORMANCE.md), so the test holds the autopilot to a gain over
# version 1 and 90%.
awk -v v1="$(lar 1)" -v a="$(lar 2)" -v o="$(lar 3)" 'BEGIN {
  printf "the autopilot'"'"'s version reaches %.1f%% of the offline build'"'"'s LAR\n", 100 * a / o
  exit !(a >= 0.9 * o && a > v1) }' ||
  fail "the autopilot's version reaches $(lar 2): not above version 1's $(lar 1), or under 90% of the offline build's $(lar 3)"
echo "PASS"

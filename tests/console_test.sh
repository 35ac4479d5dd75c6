#!/usr/bin/env bash
# End-to-end: every console subcommand against a real planner and router (a local cluster on
# loopback): tables and JSON, confirmation, exit codes and one-line errors.
set -euo pipefail

source "$1"  # tests/cli_lib.sh: TMP, fail, expect_error
shift
CONSOLE="$1"
CLUSTER="$2"
ENGINE="$3"
PLANNER="$4"
ROUTER="$5"
MAKE_TINY="$6"
RCLIENT="$7"

"$MAKE_TINY" --arch=qwen3_moe --out="$TMP/model" --seed=5 --experts=8 --top_k=2 >/dev/null
: >"$TMP/prompts.jsonl"
for i in $(seq 1 16); do
  printf '{"id": "p%d", "text": "The console shows request %d and its experts."}\n' "$i" "$i" \
    >>"$TMP/prompts.jsonl"
done
"$ENGINE" trace --model="$TMP/model" --prompts="$TMP/prompts.jsonl" --out="$TMP/t.trace" 2>/dev/null
DB="$TMP/p.db"
"$PLANNER" build --db="$DB" --model=tiny --traces="$TMP/t.trace" --devices=2 >/dev/null  # v1
"$PLANNER" build --db="$DB" --model=tiny --traces="$TMP/t.trace" --devices=2 --algo=vanilla \
  >/dev/null                                                                                 # v2
"$PLANNER" activate --db="$DB" --version=1 >/dev/null

EP="$TMP/endpoints.json"
"$CLUSTER" --model="$TMP/model" --ranks=2 --db="$DB" --placement=1 --engine_binary="$ENGINE" \
  --planner_binary="$PLANNER" --router_binary="$ROUTER" --run_dir="$TMP/run" \
  --endpoints_file="$EP" --kv_cache_mb=16 >"$TMP/cluster.out" 2>&1 &
PID=$!
trap 'kill -INT $PID 2>/dev/null || true; wait $PID 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do
  [[ -s "$EP" ]] && break
  kill -0 "$PID" 2>/dev/null || fail "cluster exited: $(cat "$TMP/cluster.out")"
  sleep 0.1
done
[[ -s "$EP" ]] || fail "cluster did not start: $(cat "$TMP/cluster.out")"
C=("$CONSOLE" --endpoints="$EP")
"$RCLIENT" generate --target="$(grep -o '"router":"[^"]*"' "$EP" | cut -d'"' -f4)" \
  --prompt="The console shows" --max_tokens=4 >/dev/null

# placements
out="$("${C[@]}" placements list --model=tiny)"
grep -q "^version  status" <<<"$out" || fail "list header: $out"
grep -q "1  active  semantic-dp-g2" <<<"$out" || fail "list: $out"
"${C[@]}" placements list --model=tiny --json | grep -q '"versions"' || fail "list --json"
out="$("${C[@]}" placements show 1)"
grep -q "version 1 of tiny: semantic-dp-g2" <<<"$out" || fail "show: $out"
grep -q "device 1" <<<"$out" || fail "show placement: $out"
out="$("${C[@]}" placements diff 1 2)"
grep -q "experts move to another device" <<<"$out" || fail "diff: $out"
grep -q "lar_affinity" <<<"$out" || fail "diff metrics: $out"
grep -q "^a2a_rows_per_token " <<<"$out" || fail "diff bytes: $out"
grep -q "^bound " <<<"$out" || fail "diff bound: $out"
expect_error 1 "pass --yes" -- "${C[@]}" placements activate 2 </dev/null
# The cluster follows the active version: activate and rollback wait for the rollout.
out="$("${C[@]}" placements activate 2 --yes)" || fail "activate: $out"
grep -q "version 2 is active" <<<"$out" || fail "activate: $out"
grep -q "the group serves version 2 on every rank" <<<"$out" || fail "activate's rollout: $out"
"$PLANNER" list --db="$DB" --model=tiny | grep -q "^2 .*active" || fail "not active in the DB"
out="$("${C[@]}" placements rollback --model=tiny --yes)" || fail "rollback: $out"
grep -q "version 1 (semantic-dp-g2) is active" <<<"$out" || fail "rollback: $out"
grep -q "the group serves version 1 on every rank" <<<"$out" || fail "rollback's rollout: $out"
out="$("${C[@]}" placements eval 1 2 --traces="$TMP/t.trace")"
[[ "$(grep -c "dp-g2" <<<"$out")" == 2 ]] || fail "eval: $out"
expect_error 1 "planner: " -- "${C[@]}" placements show 99
expect_error 2 "needs --model" -- "${C[@]}" placements list
expect_error 2 "unknown command 'placements bogus'" -- "${C[@]}" placements bogus

# experiments
out="$("${C[@]}" experiments create --model=tiny --a=2 --b=1 --share=30)"
grep -q "experiment 1 is running: A = version 2 (70%), B = version 1 (30%)" <<<"$out" ||
  fail "create: $out"
"${C[@]}" experiments list --model=tiny | grep -q "running .*A=v2 70%, B=v1 30%" || fail "list"
out="$("${C[@]}" experiments status 1)"
grep -q "experiment 1 (v2 vs v1, tiny): running" <<<"$out" || fail "status: $out"
grep -q "^B .* 30%" <<<"$out" || fail "status arms: $out"
expect_error 1 "no recorded metrics" -- "${C[@]}" experiments promote 1 --yes
"${C[@]}" experiments promote 1 --arm=B --yes | grep -q "version 1 is active (experiment stopped)" ||
  fail "promote"
"${C[@]}" experiments create --model=tiny --a=1 --b=2 --share=10 >/dev/null
expect_error 1 "pass --yes" -- "${C[@]}" experiments stop 2 </dev/null
"${C[@]}" experiments stop 2 --yes | grep -q "experiment 2 is stopped" || fail "stop"

# autopilot: this planner runs without it
"${C[@]}" autopilot status --model=tiny | grep -q "no decisions (is the planner serving with --autopilot?)" ||
  fail "autopilot status without decisions"
"${C[@]}" autopilot status --model=tiny --json | grep -q '^{"decisions":\[\]}$' || fail "autopilot status --json"
expect_error 2 "needs --model" -- "${C[@]}" autopilot status

# cluster
out="$("${C[@]}" cluster status)"
grep -q "policy semantic, 2 ranks (2 answering)" <<<"$out" || fail "cluster: $out"
grep -q " serving " <<<"$out" || fail "cluster health: $out"
grep -q "^MoE layer" <<<"$out" || fail "cluster layers: $out"
grep -q "load imbalance" <<<"$out" || fail "cluster: no expert-load table: $out"
grep -Eq "hottest experts \(share\)" <<<"$out" && grep -Eq " e[0-9]+ [0-9.]+%" <<<"$out" ||
  fail "cluster: no hottest experts per layer: $out"
grep -q "a2a MiB from rank .*to 0 .*to 1" <<<"$out" || fail "cluster: no traffic matrix: $out"
json="$("${C[@]}" cluster status --json)"
grep -q '"lar_per_layer"' <<<"$json" || fail "cluster --json"
grep -q '"expert_load_per_layer":\[{"arm":"[^"]*","hot_experts":\[{"activations":[1-9][0-9]*,"expert":[0-9]*}[^]]*\],"imbalance":[0-9.e+-]*,"layer":[0-9]*,"served_activations":\[[0-9]*,[0-9]*\]' <<<"$json" ||
  fail "cluster --json: no expert load per layer over the 2 ranks: $json"
grep -q '"all_to_all_bytes":\[{"arm":"[^"]*","bytes_to":\[0,[0-9]*\],"rank":0},{"arm":"[^"]*","bytes_to":\[[0-9]*,0\],"rank":1}' <<<"$json" ||
  fail "cluster --json: no rank x rank traffic: $json"
grep -q " v1 " <<<"$out" || fail "cluster: the group's tables are not named: $out"
grep -q "!! tables" <<<"$out" && fail "cluster: a tables error with version 1's tables: $out"

# A router with the semantic policy and no tables says so at start, and the console shows it.
engines="$(grep -o '"address":"[^"]*"' "$EP" | cut -d'"' -f4 | paste -sd, -)"
"$ROUTER" --engines="$engines" --model="$TMP/model" --port=0 --port_file="$TMP/blind.port" \
  >"$TMP/blind.out" 2>&1 &
BLIND=$!
trap 'kill $BLIND 2>/dev/null || true; kill -INT $PID 2>/dev/null || true; wait $PID 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  [[ -s "$TMP/blind.port" ]] && break
  sleep 0.1
done
grep -q "WARNING: no affinity tables" "$TMP/blind.out" || fail "no warning: $(cat "$TMP/blind.out")"
out="$("$CONSOLE" --router="127.0.0.1:$(cat "$TMP/blind.port")" cluster status)"
grep -q "!! tables: no affinity tables .*places by load alone" <<<"$out" ||
  fail "cluster status hides the missing tables: $out"
kill "$BLIND"

# Unreachable services: one line, exit 1.
expect_error 1 "is unreachable" -- "$CONSOLE" --planner=127.0.0.1:1 --deadline_ms=2000 \
  placements list --model=tiny
expect_error 1 "the router at 127.0.0.1:1 is unreachable" -- "$CONSOLE" --router=127.0.0.1:1 \
  --deadline_ms=2000 cluster status
expect_error 2 "usage" -- "$CONSOLE"
echo "PASS"

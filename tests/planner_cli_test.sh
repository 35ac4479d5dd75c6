#!/usr/bin/env bash
# End-to-end: the `planner` binary as an operator runs it — a trace from `engine trace` on a tiny
# model, builds, evaluation, the version lifecycle, serve start/stop — and its error exits.
set -euo pipefail

source "$1"  # tests/cli_lib.sh: TMP, fail, expect_error
shift
PLANNER="$1"
ENGINE="$2"
MAKE_TINY="$3"

tiny_trace "$MAKE_TINY" "$ENGINE" "$TMP/t.trace"

DB="$TMP/planner.db"
out="$("$PLANNER" build --db="$DB" --model=tiny --traces="$TMP/t.trace" --devices=2 --algo=semantic)"
[[ "$out" == "version 1 (semantic-dp-g2, draft)"* ]] || fail "build: $out"
"$PLANNER" build --db="$DB" --model=tiny --traces="$TMP/t.trace" --devices=2 --algo=vanilla >/dev/null
"$PLANNER" build --db="$DB" --model=tiny --traces="$TMP/t.trace" --devices=2 --mode=tp \
  --model_dir="$TMP/model" >/dev/null  # Embedding fallback for unseen tokens.
json="$("$PLANNER" eval --db="$DB" --versions=1,2,3 --traces="$TMP/t.trace" --profile="$TMP/t.trace" --json)"
[[ "$json" == '[{"version":1'* ]] || fail "eval json: $json"
[[ "$(grep -o '"dp_lar_affinity"' <<<"$json" | wc -l)" == 3 ]] || fail "eval rows: $json"
# Progress: steps on a terminal (stderr), nothing with --quiet or off a terminal.
if have_tty; then
  out="$(run_tty "$PLANNER" build --db="$TMP/p.db" --model=tiny --traces="$TMP/t.trace" --devices=2)"
  grep -q "^planner build: 5/5 steps (100.0%), .* steps/s, took " <<<"$out" ||
    fail "no build progress on a terminal: $out"
  grep -q "planner build: 1/5 steps .*\[solving (semantic, dp)\]" <<<"$out" ||
    fail "build progress does not name the step: $out"
  out="$(run_tty "$PLANNER" eval --db="$DB" --versions=1,2 --traces="$TMP/t.trace")"
  grep -q "^planner eval: 3/3 steps (100.0%)" <<<"$out" || fail "no eval progress: $out"
  out="$(run_tty "$PLANNER" eval --quiet --db="$DB" --versions=1 --traces="$TMP/t.trace")"
  ! grep -q "planner eval:" <<<"$out" || fail "--quiet still shows progress: $out"
else
  echo "no pseudo-terminal here (script failed): progress on a terminal not checked"
fi
out="$("$PLANNER" eval --db="$DB" --versions=1 --traces="$TMP/t.trace" 2>&1)"
! grep -q "planner eval:" <<<"$out" || fail "progress on a non-terminal: $out"

"$PLANNER" activate --db="$DB" --version=2 | grep -q "version 2 is active" || fail "activate"
"$PLANNER" activate --db="$DB" --version=1 >/dev/null
"$PLANNER" rollback --db="$DB" --model=tiny | grep -q "version 2 is active again" || fail "rollback"
"$PLANNER" list --db="$DB" --model=tiny | grep -q "^2 .*active" || fail "list"
"$PLANNER" diff --db="$DB" --versions=2,1 | grep -q "experts move" || fail "diff"
"$PLANNER" export --db="$DB" --version=1 --out="$TMP/p.json"
"$PLANNER" import --db="$DB" --model=tiny --file="$TMP/p.json" | grep -q "as version 4" || fail "import"

# serve: starts, answers on its port, stops cleanly on SIGTERM.
"$PLANNER" serve --db="$DB" --port=0 >"$TMP/serve.log" 2>&1 &
pid=$!
for _ in $(seq 1 50); do grep -q "planner serving" "$TMP/serve.log" && break; sleep 0.1; done
grep -q "planner serving .* on 127.0.0.1:[0-9]" "$TMP/serve.log" || fail "serve: $(cat "$TMP/serve.log")"
kill -TERM "$pid"
wait "$pid" || fail "serve exited non-zero"
grep -q "stopping on signal" "$TMP/serve.log" || fail "serve did not stop cleanly"

expect_error 2 "expected exactly one command" -- "$PLANNER" --db="$DB"
expect_error 2 "--db is required" -- "$PLANNER" list --model=tiny
expect_error 2 "unknown command 'plan'" -- "$PLANNER" plan --db="$DB"
expect_error 2 "build needs --model and --traces" -- "$PLANNER" build --db="$DB"
expect_error 2 "--versions: 'x' is not a number" -- "$PLANNER" eval --db="$DB" --versions=x --traces="$TMP/t.trace"
expect_error 2 "diff needs --versions V1,V2" -- "$PLANNER" diff --db="$DB" --versions=1
expect_error 1 "--algo 'magic'" -- "$PLANNER" build --db="$DB" --model=tiny --traces="$TMP/t.trace" --algo=magic
# Weights and margins that are not finite (--node_weight inf never finished) or out of range.
for bad in "--node_weight=inf" "--node_weight=1e308" "--node_weight=nan" "--node_weight=-1"; do
  expect_error 1 "--node_weight must be a number between 0 and 1000" -- "$PLANNER" build \
    --db="$DB" --model=tiny --traces="$TMP/t.trace" --devices=2 "$bad"
done
for bad in "--max_lar_loss=nan" "--max_lar_loss=inf" "--balance_eps=nan"; do
  expect_error 1 "must be a finite number" -- "$PLANNER" build \
    --db="$DB" --model=tiny --traces="$TMP/t.trace" --devices=2 "$bad"
done
expect_error 1 "--max_lar_loss is LAR given up (at most 1)" -- "$PLANNER" build \
  --db="$DB" --model=tiny --traces="$TMP/t.trace" --devices=2 --max_lar_loss=5
expect_error 1 "no placement version 99" -- "$PLANNER" show --db="$DB" --version=99
head -c 200 "$TMP/t.trace" >"$TMP/cut.trace"
expect_error 1 "truncated" -- "$PLANNER" build --db="$DB" --model=tiny --traces="$TMP/cut.trace"
head -c 4096 /dev/zero | tr '\0' 'x' >"$TMP/bad.db"
expect_error 1 "bad.db" -- "$PLANNER" list --db="$TMP/bad.db" --model=tiny
json="$("$PLANNER" eval --db="$DB" --versions=3 --traces="$TMP/t.trace" --balanced_bound --json)"
[[ "$json" == *'"tp_balanced_bound":'* ]] || fail "eval --balanced_bound lacks its bound: $json"
json="$("$PLANNER" eval --db="$DB" --versions=3 --traces="$TMP/t.trace" --json)"
[[ "$json" != *'"tp_balanced_bound"'* ]] || fail "eval reports the bound unasked: $json"
# Balance: the build records the cap the time model chose (or off), and takes a fixed one.
"$PLANNER" show --db="$DB" --version=1 | grep -q '"expert_balance_auto": true' ||
  fail "the default build does not record its automatic balance choice"
out="$("$PLANNER" build --db="$DB" --model=tiny --traces="$TMP/t.trace" --devices=2 --name=capped \
  --expert_balance_eps=0.1)"
v="${out#version }"
"$PLANNER" show --db="$DB" --version="${v%% *}" | grep -q '"expert_balance_eps": 0.1' ||
  fail "--expert_balance_eps=0.1 not recorded"
expect_error 2 "--expert_balance_eps: 'lots' is not a number, off or auto" -- "$PLANNER" build \
  --db="$DB" --model=tiny --traces="$TMP/t.trace" --expert_balance_eps=lots
# The Pareto curve (no database needed): off first, one chosen point, imbalance ≥ 1.
out="$("$PLANNER" eval --pareto --profile="$TMP/t.trace" --traces="$TMP/t.trace" --devices=2)"
[[ "$out" == *"off "*"(chosen)"* ]] || fail "eval --pareto: $out"
json="$("$PLANNER" eval --pareto --profile="$TMP/t.trace" --traces="$TMP/t.trace" --devices=2 --json)"
[[ "$(grep -o '"chosen":true' <<<"$json" | wc -l)" == 1 ]] || fail "pareto: one chosen point: $json"
expect_error 2 "need --profile and --traces" -- "$PLANNER" eval --pareto --traces="$TMP/t.trace"
# The zero-shot matrix by domain: three domains named in a JSONL file, and "all".
awk -F'"' '{ printf "{\"id\": \"%s\", \"domain\": \"d%d\"}\n", $4, NR % 3 }' \
  "$TMP/prompts.jsonl" >"$TMP/domains.jsonl"
out="$("$PLANNER" eval --zero_shot --profile="$TMP/t.trace" --traces="$TMP/t.trace" --devices=2 \
  --domains="$TMP/domains.jsonl")"
grep -q "^profile .*d1 .*d2 .*d0 .*all" <<<"$out" || fail "zero-shot columns: $out"
[[ "$(grep -c '^d[012] (8)' <<<"$out")" == 6 ]] || fail "zero-shot rows (DP and TP): $out"
echo '{"id": "p1"}' >"$TMP/bad_domains.jsonl"
expect_error 1 "bad_domains.jsonl:1: needs a JSON object with \"id\" and \"domain\"" -- \
  "$PLANNER" eval --zero_shot --profile="$TMP/t.trace" --traces="$TMP/t.trace" --devices=2 \
  --domains="$TMP/bad_domains.jsonl"
# --dp_bounds: the fitted optimum ≤ the capacity bound ≤ the per-request bound.
json="$("$PLANNER" eval --db="$DB" --versions=1 --traces="$TMP/t.trace" --dp_bounds --json)"
field() { sed -E "s/.*\"$1\":([0-9.e+-]+).*/\1/" <<<"$json"; }
[[ "$json" == *'"dp_capacity_bound":'* ]] || fail "eval --dp_bounds lacks its bound: $json"
awk -v f="$(field dp_fitted_optimum)" -v c="$(field dp_capacity_bound)" -v b="$(field dp_bound)" \
  'BEGIN { exit !(f > 0 && f <= c + 1e-9 && c <= b + 1e-9) }' || fail "dp bounds out of order: $json"
# The offline schedule starts from the router's and only improves it; the per-request bound caps
# both; the in-sample router figure is there.
awk -v a="$(field dp_lar_affinity)" -v o="$(field dp_lar_offline)" -v p="$(field dp_lar_perfect)" \
  -v r="$(field dp_fitted_router)" -v b="$(field dp_bound)" \
  'BEGIN { exit !(a > 0 && a <= o + 1e-9 && o <= b + 1e-9 && p > 0 && p <= b + 1e-9 && r > 0) }' ||
  fail "dp router / perfect / offline out of order: $json"
out="$("$PLANNER" eval --db="$DB" --versions=1 --traces="$TMP/t.trace" --dp_bounds)"
[[ "$out" == *"in-sample router"*"fitted optimum"*"capacity bound"* ]] ||
  fail "eval --dp_bounds table: $out"
grep -q "^1 .*router [0-9.]*  perfect [0-9.]*  offline [0-9.]*$" <<<"$out" ||
  fail "eval --dp_bounds per-version line: $out"

# Replicated hot experts: a separate version whose JSON lists them.
out="$("$PLANNER" build --db="$DB" --model=tiny --traces="$TMP/t.trace" --devices=2 --replicas=1)"
[[ "$out" == *"semantic-dp-g2-r1"* ]] || fail "replicas build: $out"
v="${out#version }"
v="${v%% *}"
"$PLANNER" export --db="$DB" --version="$v" --out="$TMP/r.json"
grep -q '"replicas":' "$TMP/r.json" || fail "exported placement lacks replicas: $(cat "$TMP/r.json")"
expect_error 1 "--replicas 9 is not in" -- "$PLANNER" build --db="$DB" --model=tiny \
  --traces="$TMP/t.trace" --devices=2 --replicas=9
expect_error 1 "nowhere/model.safetensors" -- "$PLANNER" build --db="$DB" --model=tiny --traces="$TMP/t.trace" \
  --model_dir="$TMP/nowhere"

# A/B experiments: create, start, show, promote (activates B's version and stops), list; errors.
out="$("$PLANNER" experiment create --db="$DB" --model=tiny --a=1 --b=2 --share=30 --name=ab)"
[[ "$out" == "experiment 1 (ab, draft): A = version 1 (70%), B = version 2 (30%)" ]] ||
  fail "experiment create: $out"
expect_error 1 "has not run" -- "$PLANNER" experiment promote --db="$DB" --id=1 --arm=B
"$PLANNER" experiment start --db="$DB" --id=1 | grep -q "is running" || fail "start"
expect_error 1 "FAILED_PRECONDITION" -- "$PLANNER" experiment start --db="$DB" --id=1
"$PLANNER" experiment show --db="$DB" --id=1 | grep -q '"status": "running"' || fail "show"
"$PLANNER" experiment list --db="$DB" --model=tiny | grep -q "running .*ab" || fail "list"
"$PLANNER" experiment promote --db="$DB" --id=1 --arm=B | grep -q "version 2 is active" ||
  fail "promote"
"$PLANNER" list --db="$DB" --model=tiny | grep -q "^2 .*active" || fail "B's version not active"
"$PLANNER" experiment show --db="$DB" --id=1 | grep -q '"status": "stopped"' || fail "not stopped"
expect_error 1 "has no arm 'C'" -- "$PLANNER" experiment promote --db="$DB" --id=1 --arm=C
expect_error 1 "1 to 99" -- "$PLANNER" experiment create --db="$DB" --model=tiny --a=1 --b=2 \
  --share=100
expect_error 1 "no placement version 99" -- "$PLANNER" experiment create --db="$DB" --model=tiny \
  --a=1 --b=99 --share=10
expect_error 2 "needs --id" -- "$PLANNER" experiment show --db="$DB"
expect_error 2 "unknown experiment command 'launch'" -- "$PLANNER" experiment launch --db="$DB" \
  --id=1
expect_error 1 "--hidden_size -4 must be from 0" -- "$PLANNER" eval --db="$DB" --versions=1 \
  --traces="$TMP/t.trace" --hidden_size=-4
expect_error 1 "metrics port 99999 is not a TCP port" -- "$PLANNER" serve --db="$DB" --port=0 \
  --metrics_port=99999
echo "PASS"

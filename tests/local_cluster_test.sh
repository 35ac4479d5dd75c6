#!/usr/bin/env bash
# End-to-end: `local_cluster` starts real engine processes on loopback. Attention-DP (file
# rendezvous) and Attention-TP (the planner's gRPC rendezvous, a semantic version from its
# database with affinity tables, so the shuffled collectives run) must stream the single-device
# greedy tokens from every accepting rank, and under Attention-DP through the router too (with a
# semantic DP version's tables, placed by affinity); Ctrl-C stops cleanly; a rank killed with
# SIGKILL is restarted and its group re-forms around it (the other ranks' processes stay) and
# serves the same tokens; with --restart=false the cluster exits 1 quickly, naming it, with no
# process left behind; and local_cluster killed with SIGKILL leaves no child behind.
set -euo pipefail

source "$1"  # tests/cli_lib.sh: TMP, fail, expect_error
shift
CLUSTER="$1"
ENGINE="$2"
PLANNER="$3"
CLIENT="$4"
MAKE_TINY="$5"
ROUTER="$6"
RCLIENT="$7"
BUILD_HAS_CUDA="$8"  # "cuda" or "nocuda": whether the engine linked the CUDA backend.

"$MAKE_TINY" --arch=qwen3_moe --out="$TMP/model" --seed=5 --experts=8 --top_k=2 >/dev/null

start_cluster() {  # start_cluster NAME FLAGS... ; sets PID and EP
  local name="$1"
  shift
  EP="$TMP/$name.endpoints"
  "$CLUSTER" --model="$TMP/model" --engine_binary="$ENGINE" --planner_binary="$PLANNER" \
    --router_binary="$ROUTER" \
    --run_dir="$TMP/$name" --endpoints_file="$EP" --kv_cache_mb=16 "$@" >"$TMP/$name.out" 2>&1 &
  PID=$!
  for _ in $(seq 1 1200); do
    [[ -s "$EP" ]] && return 0
    kill -0 "$PID" 2>/dev/null || fail "cluster $name exited early: $(cat "$TMP/$name.out")"
    sleep 0.1
  done
  fail "cluster $name did not start: $(cat "$TMP/$name.out")"
}

address() {  # address RANK
  grep -o '"address":"[^"]*"' "$EP" | sed -n "$(($1 + 1))p" | cut -d'"' -f4
}


expect_single_device_tokens() {  # expect_single_device_tokens RANK PROMPT
  local want got
  want="$("$ENGINE" generate --model="$TMP/model" --prompt="$2" --max_tokens=8 --greedy \
    --ignore_eos --json 2>/dev/null | tokens_of)"
  got="$("$CLIENT" generate --target="$(address "$1")" --prompt="$2" --max_tokens=8 --json \
    | tokens_of)"
  [[ -n "$want" && "$got" == "$want" ]] || fail "rank $1, '$2': got $got, want $want"
}

router_address() { grep -o '"router":"[^"]*"' "$EP" | cut -d'"' -f4; }

expect_single_device_tokens_via_router() {  # ... PROMPT; sets FINAL (the router's JSON answer)
  local want got
  want="$("$ENGINE" generate --model="$TMP/model" --prompt="$1" --max_tokens=8 --greedy \
    --ignore_eos --json 2>/dev/null | tokens_of)"
  FINAL="$("$RCLIENT" generate --target="$(router_address)" --prompt="$1" --max_tokens=8 --json)"
  got="$(tokens_of <<<"$FINAL")"
  [[ -n "$want" && "$got" == "$want" ]] || fail "router, '$1': got $got, want $want"
}

no_processes_left() {  # no_processes_left NAME
  for _ in $(seq 1 100); do
    pgrep -f -- "$TMP/$1/" >/dev/null || return 0
    sleep 0.1
  done
  fail "processes of $1 left behind: $(pgrep -af -- "$TMP/$1/")"
}

# --- Attention-DP, vanilla placement, 2 ranks: both ranks serve; SIGINT stops cleanly.
start_cluster dp --ranks=2 --attn=dp
grep -q "rank 1 .*(EngineService)" "$TMP/dp.out" || fail "endpoints: $(cat "$TMP/dp.out")"
expect_single_device_tokens 0 "The planner reads the traces"
expect_single_device_tokens 1 "def forward(self, x): return"
stats="$("$CLIENT" stats --target="$(address 0)" --json)"
grep -q '"completed":"1"' <<<"$stats" || fail "stats: $stats"
grep -q '"remote_activations"' <<<"$stats" || fail "stats layers: $stats"
grep -q "router    127.0.0.1:" "$TMP/dp.out" || fail "router endpoint: $(cat "$TMP/dp.out")"
for prompt in "The planner reads the traces" "def forward(self, x): return" "Hello"; do
  expect_single_device_tokens_via_router "$prompt"
done
rstats="$("$RCLIENT" stats --target="$(router_address)" --json)"
grep -q '"completed":"3"' <<<"$rstats" || fail "router stats: $rstats"
kill -INT "$PID"
rc=0
wait "$PID" || rc=$?
[[ "$rc" == 0 ]] || fail "Ctrl-C: exit $rc: $(cat "$TMP/dp.out")"
grep -q "stopped cleanly" "$TMP/dp.out" || fail "no clean stop: $(cat "$TMP/dp.out")"
no_processes_left dp

# --- The router's time rule (--router_policy time: the lab profile by default): outputs are the
# single device's, and the stats say which rule each window's placement kept.
start_cluster timed --ranks=2 --attn=dp --router_policy=time
for prompt in "The planner reads the traces" "Hello"; do
  expect_single_device_tokens_via_router "$prompt"
done
rstats="$("$RCLIENT" stats --target="$(router_address)" --json)"
grep -q '"policy":"time"' <<<"$rstats" || fail "router policy: $rstats"
grep -q '"cluster":"lab"' <<<"$rstats" || fail "time rule's cluster: $rstats"
kept="$(jq '[.time_rule.kept_time, .time_rule.kept_least_loaded, .time_rule.kept_round_robin]
  | map(tonumber? // 0) | add' <<<"$rstats")"
[[ "$kept" == 2 ]] || fail "time rule windows: $rstats"
kill -INT "$PID"
wait "$PID" || fail "time cluster stop: $(cat "$TMP/timed.out")"
no_processes_left timed

# --- local_cluster itself killed with SIGKILL (no chance to stop anything): its children get
# SIGTERM from the kernel (PR_SET_PDEATHSIG) and each stops within its own bound.
start_cluster orphan --ranks=2 --attn=dp
children="$(pgrep -P "$PID" | tr '\n' ' ')"
[[ "$(wc -w <<<"$children")" -ge 3 ]] || fail "expected 2 ranks and a router under $PID: $children"
kill -KILL "$PID"
wait "$PID" 2>/dev/null || true
for _ in $(seq 1 200); do
  left=""
  for child in $children; do kill -0 "$child" 2>/dev/null && left+="$child "; done
  [[ -z "$left" ]] && break
  sleep 0.1
done
[[ -z "$left" ]] || fail "children of a killed local_cluster left behind: $(for c in $left; do ps -o pid=,args= -p "$c"; done)"
no_processes_left orphan

# --- A rank that dies is restarted on its port; the others re-form the group with it in epoch 1
# (their processes stay) and every rank serves the single-device tokens again.
start_cluster restart --ranks=4 --attn=dp
survivors="$(pgrep -f -- "--rank [023] .*$TMP/restart/" | sort | tr '\n' ' ')"
victim="$(pgrep -f -- "--rank 1 .*$TMP/restart/")"
kill -KILL "$victim"
start=$SECONDS
for r in 0 1 2 3; do
  until "$CLIENT" stats --target="$(address $r)" --json 2>/dev/null |
    grep -q '"group_epoch":"1".*"accepts_requests":true\|"accepts_requests":true.*"group_epoch":"1"'; do
    ((SECONDS - start < 60)) || fail "rank $r did not re-form: $(cat "$TMP/restart.out")"
    sleep 0.2
  done
done
grep -q "rank 1 exited (signal 9); restarting it" "$TMP/restart.out" ||
  fail "cause: $(cat "$TMP/restart.out")"
[[ "$(pgrep -f -- "--rank [023] .*$TMP/restart/" | sort | tr '\n' ' ')" == "$survivors" ]] ||
  fail "the surviving ranks' processes changed"
grep -q "re-formed as epoch 1" "$TMP/restart/rank0.log" || fail "rank 0: $(cat "$TMP/restart/rank0.log")"
expect_single_device_tokens 1 "The planner reads the traces"
expect_single_device_tokens 2 "def forward(self, x): return"
expect_single_device_tokens_via_router "Hello"

# --- A stalled rank (SIGSTOP): within seconds its peers say so in their stats and take no
# requests; resumed before the collective timeout, the group goes on without re-forming.
stalled="$(pgrep -f -- "--rank 2 .*$TMP/restart/")"
kill -STOP "$stalled"
start=$SECONDS
until "$CLIENT" stats --target="$(address 0)" --json 2>/dev/null |
  grep -q '"unavailable":"a collective has waited'; do
  ((SECONDS - start < 20)) || { kill -CONT "$stalled"; fail "rank 0 did not report the stall"; }
  sleep 0.2
done
((SECONDS - start < 10)) || fail "the stall took $((SECONDS - start)) s to show"
kill -CONT "$stalled"
until "$CLIENT" stats --target="$(address 0)" --json 2>/dev/null | grep -q '"accepts_requests":true'; do
  ((SECONDS - start < 40)) || fail "rank 0 did not come back after the stall"
  sleep 0.2
done
expect_single_device_tokens 2 "The planner reads the traces"
grep -q "re-formed as epoch 2" "$TMP/restart/rank0.log" && fail "a short stall re-formed the group"
kill -INT "$PID"
rc=0
wait "$PID" || rc=$?
[[ "$rc" == 0 ]] || fail "Ctrl-C after a restart: exit $rc: $(cat "$TMP/restart.out")"
no_processes_left restart

# --- --restart=false: a rank that dies stops the cluster: exit 1 within seconds, naming it,
# nothing left behind.
start_cluster crash --ranks=2 --attn=dp --restart=false
victim="$(pgrep -f -- "--rank 1 .*$TMP/crash/")"
kill -KILL "$victim"
start=$SECONDS
rc=0
wait "$PID" || rc=$?
[[ "$rc" == 1 ]] || fail "after a rank died: exit $rc"
((SECONDS - start < 30)) || fail "took $((SECONDS - start)) s to notice the dead rank"
grep -q "rank 1 exited (signal 9)" "$TMP/crash.out" || fail "cause: $(cat "$TMP/crash.out")"
no_processes_left crash

# --- Attention-TP with the planner: a semantic TP version and its affinity tables.
tp_version "$ENGINE" "$PLANNER" "$TMP/model" "$TMP/p.db"
start_cluster tp --ranks=2 --attn=tp --db="$TMP/p.db" --placement=1
grep -q "placement: version 1" "$TMP/tp.out" || fail "version: $(cat "$TMP/tp.out")"
grep -q "planner   127.0.0.1:" "$TMP/tp.out" || fail "planner endpoint: $(cat "$TMP/tp.out")"
grep -q -- "--placement 1 .*--planner 127.0.0.1:" <<<"$(pgrep -af -- "$TMP/tp/")" ||
  fail "the ranks do not fetch version 1: $(pgrep -af -- "$TMP/tp/")"
grep -q "predicts tokens' devices with version 1 (planner .*)'s affinity tables and version 1 .*layer tables" \
  "$TMP/tp/rank0.log" || fail "rank 0 has no tables: $(cat "$TMP/tp/rank0.log")"
expect_single_device_tokens 0 "The router sends request 3 to"
expect_single_device_tokens_via_router "The router sends request 4 to"  # The router fronts rank 0.
expect_error 1 "Attention-TP follower" -- "$CLIENT" generate --target="$(address 1)" --prompt=x
kill -INT "$PID"
rc=0
wait "$PID" || rc=$?
[[ "$rc" == 0 ]] || fail "TP Ctrl-C: exit $rc: $(cat "$TMP/tp.out")"
no_processes_left tp

# --- Attention-DP with a semantic DP version: the router places by its tables.
"$PLANNER" build --db="$TMP/p.db" --model=tiny --traces="$TMP/t.trace" --devices=2 --mode=dp \
  >/dev/null
start_cluster dpsem --ranks=2 --attn=dp --db="$TMP/p.db" --placement=2
grep -q -- "router .*--planner 127.0.0.1:[0-9]* --version 2" <<<"$(pgrep -af -- "$TMP/dpsem/")" ||
  fail "the router got no tables: $(pgrep -af -- "$TMP/dpsem/")"
for i in 1 5 9; do
  expect_single_device_tokens_via_router "The router sends request $i to"
  grep -q '"placement_version":"2"' <<<"$FINAL" || fail "not placed with version 2: $FINAL"
done
kill -INT "$PID"
rc=0
wait "$PID" || rc=$?
[[ "$rc" == 0 ]] || fail "DP semantic Ctrl-C: exit $rc: $(cat "$TMP/dpsem.out")"
no_processes_left dpsem

# --- An A/B experiment: two engine groups (vanilla vs the semantic DP version) behind one router.
"$PLANNER" build --db="$TMP/p.db" --model=tiny --traces="$TMP/t.trace" --devices=2 --mode=dp \
  --algo=vanilla >/dev/null
"$PLANNER" experiment create --db="$TMP/p.db" --model=tiny --a=3 --b=2 --share=50 >/dev/null
expect_error 1 "start it first" -- "$CLUSTER" --model="$TMP/model" --ranks=2 --db="$TMP/p.db" \
  --experiment=1 --engine_binary="$ENGINE" --planner_binary="$PLANNER" --run_dir="$TMP/ab0"
"$PLANNER" experiment start --db="$TMP/p.db" --id=1 >/dev/null
start_cluster ab --ranks=2 --db="$TMP/p.db" --experiment=1
grep -q "arm B (50%): version 2" "$TMP/ab.out" || fail "arms: $(cat "$TMP/ab.out")"
grep -q "B rank 1 " "$TMP/ab.out" || fail "arm endpoints: $(cat "$TMP/ab.out")"
arms=""
for i in $(seq 1 24); do
  FINAL="$("$RCLIENT" generate --target="$(router_address)" --prompt="Request $i" --max_tokens=2 \
    --user="user-$i" --json)"
  arms+="$(grep -o '"arm":"[AB]"' <<<"$FINAL" | cut -d'"' -f4)"
done
[[ "$arms" == *A* && "$arms" == *B* ]] || fail "one arm got everything: $arms"
expect_single_device_tokens_via_router "The router sends request 7 to"
for _ in $(seq 1 100); do  # The router records both arms' metrics (every 5 s).
  show="$("$PLANNER" experiment show --db="$TMP/p.db" --id=1)"
  [[ "$(grep -c '"completed"' <<<"$show")" == 2 ]] && break
  sleep 0.2
done
[[ "$(grep -c '"completed"' <<<"$show")" == 2 ]] || fail "arm metrics not recorded: $show"
# Each arm's measured MoE layer (its engines' counters), and B's against the vanilla arm A's:
# what `experiment promote` refuses above 1.02.
for _ in $(seq 1 100); do
  show="$("$PLANNER" experiment show --db="$TMP/p.db" --id=1)"
  jq -e '[.arms[].metrics.moe_layer_ms // 0 | select(. > 0)] | length == 2' <<<"$show" \
    >/dev/null && break
  sleep 0.2
done
jq -e '.vanilla_arm == "A" and ([.arms[].metrics.moe_layer_ms | select(. > 0)] | length == 2)
       and (.arms[] | select(.name == "B") | .moe_vs_vanilla_arm > 0)' <<<"$show" >/dev/null ||
  fail "measured MoE layer per arm: $show"
kill -INT "$PID"
rc=0
wait "$PID" || rc=$?
[[ "$rc" == 0 ]] || fail "A/B Ctrl-C: exit $rc: $(cat "$TMP/ab.out")"
no_processes_left ab

# --- Bad input: clear errors, exit 2 / 1.
expect_error 2 "--model is required" -- "$CLUSTER" --ranks=2
expect_error 1 "needs --db" -- "$CLUSTER" --model="$TMP/model" --placement=3 \
  --engine_binary="$ENGINE" --run_dir="$TMP/bad"
expect_error 1 "--device must be cpu or cuda" -- "$CLUSTER" --model="$TMP/model" --device=tpu \
  --engine_binary="$ENGINE" --run_dir="$TMP/bad2"
# CI has no GPU: the ranks say so (rank0.log's line comes back in the error); a build without
# CUDA says that instead.
if [[ "$BUILD_HAS_CUDA" == cuda ]]; then
  no_gpu="this machine has no CUDA device"
else
  no_gpu="this build has no CUDA support"
fi
expect_error 1 "$no_gpu" -- "$CLUSTER" --model="$TMP/model" --ranks=2 \
  --device=cuda --engine_binary="$ENGINE" --run_dir="$TMP/nogpu" --startup_timeout_s=30
expect_error 2 "--ranks must be from 1 to 128" -- "$CLUSTER" --model="$TMP/model" --ranks=100000
expect_error 2 "--http_port 70000 is not a TCP port" -- "$CLUSTER" --model="$TMP/model" --http_port=70000
echo "PASS"

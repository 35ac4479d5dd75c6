#!/usr/bin/env bash
# End-to-end: live placement rollout (engine/parallel/placement_rollout.h). A local cluster that
# follows the planner's active version, under closed-loop load through the router:
#   - `console placements activate` rolls a new version out while serving: no request fails, every
#     output equals the single device, every rank switches in the same agreement round, the router
#     places with the new version's tables, and each request's rank and LAR after the switch equal
#     what a cluster started on that version gives it;
#   - `placements rollback` returns to the old placement the same way;
#   - a version for 4 devices is refused by every rank with a clear error, the group stays, and
#     the previous version is active again; `--no-wait` returns at once and the rollout finishes;
#   - under Attention-TP (shuffled, with the versions' tables) the same, and the shuffle tables
#     switch with the placement;
#   - `experiments promote` rolls the winner out to the other arm's group too;
#   - live routing traces (--sample_routing): their drift in `cluster status`, `planner drift`,
#     and a version planned from them (`planner build`) rolled out live;
#   - a rank killed mid-rollout: the console says so, the group stops, no rank switched.
set -euo pipefail

source "$1"  # tests/cli_lib.sh: TMP, fail, expect_error, tokens_of, want_tokens, start_cluster,
             # stop_cluster
shift
CLUSTER="$1"
ENGINE="$2"
PLANNER="$3"
MAKE_TINY="$4"
ROUTER="$5"
RCLIENT="$6"
CONSOLE="$7"

"$MAKE_TINY" --arch=qwen3_moe --out="$TMP/model" --seed=5 --experts=16 --top_k=2 >/dev/null
DB="$TMP/p.db"
: >"$TMP/prompts.jsonl"
for i in $(seq 1 16); do
  printf '{"id": "p%d", "text": "The router sends request %d to the rank that holds its experts."}\n' \
    "$i" "$i" >>"$TMP/prompts.jsonl"
done
"$ENGINE" trace --model="$TMP/model" --prompts="$TMP/prompts.jsonl" --out="$TMP/t.trace" 2>/dev/null
build() { "$PLANNER" build --db="$DB" --traces="$TMP/t.trace" "$@" >/dev/null; }
build --model=tiny --devices=2 --mode=dp                # 1
build --model=tiny --devices=2 --mode=dp --algo=random  # 2
build --model=tiny --devices=4 --mode=dp                # 3: for another rank count
build --model=tinytp --devices=2 --mode=tp              # 4
build --model=tinytp --devices=2 --mode=tp --algo=random  # 5
"$PLANNER" activate --db="$DB" --version=1 >/dev/null
"$PLANNER" activate --db="$DB" --version=4 >/dev/null

PROMPTS=()
for i in $(seq 1 8); do PROMPTS+=("Request $i: the router sends it to rank $((i % 2))"); done
declare -A WANT
want_tokens "$ENGINE" "$TMP/model"

console() { "$CONSOLE" --endpoints="$EP" --yes "$@"; }

# Closed-loop load: two clients, each sends the prompts in turn, one request at a time, and
# records every answer that is not the single device's (or fails).
start_load() {
  rm -f "$TMP/load.stop"
  : >"$TMP/load.bad"
  : >"$TMP/load.ok"
  LOADERS=()
  for c in 0 1; do
    (
      n=0
      while [[ ! -f "$TMP/load.stop" ]]; do
        p="${PROMPTS[$(((n * 2 + c) % ${#PROMPTS[@]}))]}"
        n=$((n + 1))
        out="$("$RCLIENT" generate --target="$RADDR" --prompt="$p" --max_tokens=6 --json 2>&1)" ||
          { echo "client $c: '$p' failed: $out" >>"$TMP/load.bad"; continue; }
        got="$(tokens_of <<<"$out")"
        if [[ "$got" == "${WANT[$p]}" ]]; then echo ok >>"$TMP/load.ok"; else
          echo "client $c: '$p': got $got, want ${WANT[$p]}" >>"$TMP/load.bad"
        fi
      done
    ) &
    LOADERS+=($!)
  done
}
stop_load() {  # stop_load WHAT: every request answered right, and some were sent
  touch "$TMP/load.stop"
  wait "${LOADERS[@]}"
  [[ ! -s "$TMP/load.bad" ]] || fail "$1: $(head -5 "$TMP/load.bad")"
  local n
  n="$(wc -l <"$TMP/load.ok")"
  ((n >= 4)) || fail "$1: only $n requests answered"
  echo "$1: $n requests, all equal to the single device"
}
wait_requests() {  # wait_requests N: until N more answers arrived
  local until=$(($(wc -l <"$TMP/load.ok") + $1))
  for _ in $(seq 1 600); do
    (($(wc -l <"$TMP/load.ok") >= until)) && return 0
    [[ ! -s "$TMP/load.bad" ]] || fail "load: $(head -5 "$TMP/load.bad")"
    sleep 0.1
  done
  fail "load stalled"
}
switch_rounds() {  # switch_rounds NAME VERSION [ARM]: the agreement rounds the ranks switched in
  grep -ho "serving placement version $2 from round [0-9]*" "$TMP/$1"/${3:+$3-}rank*.log |
    awk '{print $NF}' | sort -u
}
# One prompt at a time through the router: "rank LAR" per prompt, from the final records (JSON
# leaves out a zero).
placements_of() {
  local p out rank lar
  for p in "${PROMPTS[@]}"; do
    out="$("$RCLIENT" generate --target="$RADDR" --prompt="$p" --max_tokens=6 --json)"
    rank="$(grep -o '"rank":[0-9]*' <<<"$out" | cut -d: -f2 || true)"
    lar="$(grep -o '"lar":[0-9.e-]*' <<<"$out" | cut -d: -f2 || true)"
    echo "${rank:-0} ${lar:-0}"
  done
}
arm_field() {  # arm_field KEY: the group's KEY in the router's stats
  "$RCLIENT" stats --target="$RADDR" --json | grep -o "\"$1\":\"*[0-9]*" | head -1 |
    grep -o '[0-9]*$'
}

# --- Attention-DP: activate under load.
start_cluster dp --attn=dp --placement=1
grep -q "the group follows the active version of 'tiny'" "$TMP/dp.out" ||
  fail "not following: $(cat "$TMP/dp.out")"
start_load
wait_requests 4
console placements activate 2 >"$TMP/activate2.out" || fail "activate 2: $(cat "$TMP/activate2.out")"
grep -q "the group serves version 2 on every rank" "$TMP/activate2.out" ||
  fail "activate did not wait: $(cat "$TMP/activate2.out")"
wait_requests 4
stop_load "activate 2 under load"
[[ "$(switch_rounds dp 2 | wc -l)" == 1 ]] ||
  fail "ranks switched in different rounds: $(grep -h "serving placement" "$TMP"/dp/rank*.log)"
for _ in $(seq 1 50); do  # The router swaps tables at its next poll.
  [[ "$(arm_field placement_version)" == 2 ]] && break
  sleep 0.1
done
[[ "$(arm_field placement_version)" == 2 && "$(arm_field engines_version)" == 2 ]] ||
  fail "router: $("$RCLIENT" stats --target="$RADDR" --json)"
"$RCLIENT" stats --target="$RADDR" --json | grep -q '"tables_error"' &&
  fail "tables error: $("$RCLIENT" stats --target="$RADDR" --json)"
placements_of >"$TMP/after_switch.txt"

# --- Rollback under load.
start_load
wait_requests 2
console placements rollback --model=tiny >"$TMP/rollback.out" ||
  fail "rollback: $(cat "$TMP/rollback.out")"
grep -q "the group serves version 1 on every rank" "$TMP/rollback.out" ||
  fail "rollback did not wait: $(cat "$TMP/rollback.out")"
wait_requests 4
stop_load "rollback under load"
[[ "$(switch_rounds dp 1 | wc -l)" == 1 ]] || fail "rollback: ranks switched in different rounds"

# --- A version for 4 devices: refused, the group stays on 1, version 1 active again.
# Both ranks refuse; whichever finishes staging first is the one named (either is right).
rc=0
out="$(console placements activate 3 2>&1)" || rc=$?
[[ "$rc" == 1 ]] || fail "activate 3: exit $rc: $out"
grep -q "rollout failed: the group: version 3 refused: rank [01]: version 3 (planner 127.0.0.1:[0-9]*)'s placement places experts on 4 devices but the group has 2 ranks; the group stays on version 1; version 1 is active again" <<<"$out" ||
  fail "refusal: $out"
"$PLANNER" list --db="$DB" --model=tiny | grep -q "^ *1 .*active" ||
  fail "version 1 not active again: $("$PLANNER" list --db="$DB" --model=tiny)"
expect_single_device() {
  local got
  got="$("$RCLIENT" generate --target="$RADDR" --prompt="${PROMPTS[0]}" --max_tokens=6 --json |
    tokens_of)"
  [[ "$got" == "${WANT[${PROMPTS[0]}]}" ]] || fail "$1: got $got"
}
expect_single_device "after the refusal"

# --- --no-wait: returns once the planner has it; the rollout finishes anyway.
console placements activate 2 --no-wait >"$TMP/nowait.out"
grep -q "serves version" "$TMP/nowait.out" && fail "--no-wait waited: $(cat "$TMP/nowait.out")"
for _ in $(seq 1 100); do
  [[ "$(arm_field engines_version)" == 2 ]] && break
  sleep 0.1
done
[[ "$(arm_field engines_version)" == 2 ]] || fail "--no-wait: the rollout did not finish"
stop_cluster dp

# --- The same prompts on a cluster started on version 2: the same ranks and LAR as after the
# switch.
"$PLANNER" activate --db="$DB" --version=2 >/dev/null
start_cluster dp2 --attn=dp --placement=2 --follow_active=false
placements_of >"$TMP/alone.txt"
diff "$TMP/after_switch.txt" "$TMP/alone.txt" >/dev/null ||
  fail "after the switch vs version 2 alone (rank LAR per prompt): $(paste "$TMP/after_switch.txt" "$TMP/alone.txt")"
grep -q "^1 " "$TMP/alone.txt" && grep -q "^0 " "$TMP/alone.txt" && grep -q " 0\.[0-9]" "$TMP/alone.txt" ||
  fail "one rank got every prompt, or no LAR: $(cat "$TMP/alone.txt")"
stop_cluster dp2

# --- Attention-TP, shuffled with the versions' tables: activate 5 under load.
start_cluster tp --attn=tp --placement=4
grep -q "the group follows the active version of 'tinytp'" "$TMP/tp.out" ||
  fail "TP not following: $(cat "$TMP/tp.out")"
start_load
wait_requests 4
console placements activate 5 >"$TMP/activate5.out" || fail "TP activate: $(cat "$TMP/activate5.out")"
wait_requests 4
stop_load "TP activate 5 under load"
[[ "$(switch_rounds tp 5 | wc -l)" == 1 ]] || fail "TP: ranks switched in different rounds"
stop_cluster tp

# --- An A/B experiment (versions 1 and 2), then `experiments promote --arm B`: arm A's group rolls
# out version 2 while serving (B's already serves it), and the router places each with version 2's tables.
"$PLANNER" experiment create --db="$DB" --model=tiny --a=1 --b=2 --share=50 >/dev/null
"$PLANNER" experiment start --db="$DB" --id=1 >/dev/null
start_cluster ab --experiment=1
start_load
wait_requests 4
console experiments promote 1 --arm=B >"$TMP/promote.out" ||
  fail "promote: $(cat "$TMP/promote.out")"
grep -q "arm A's group serves version 2 on every rank" "$TMP/promote.out" &&
  grep -q "arm B's group serves version 2 on every rank" "$TMP/promote.out" ||
  fail "promote did not roll out to both groups: $(cat "$TMP/promote.out")"
wait_requests 4
stop_load "promote under load"
# Arm A switched (both ranks in one round); arm B already served version 2.
[[ "$(switch_rounds ab 2 A | wc -l)" == 1 ]] || fail "arm A's ranks switched in different rounds"
[[ -z "$(switch_rounds ab 2 B)" ]] || fail "arm B switched to the version it served"
for _ in $(seq 1 50); do  # Both arms' tables follow at the router's next poll.
  [[ "$("$RCLIENT" stats --target="$RADDR" --json | grep -o '"placement_version":"2"' | wc -l)" -ge 2 ]] && break
  sleep 0.1
done
[[ "$("$RCLIENT" stats --target="$RADDR" --json | grep -o '"engines_version":"2"' | wc -l)" == 2 ]] ||
  fail "router after promote: $("$RCLIENT" stats --target="$RADDR" --json)"
stop_cluster ab

# --- Live routing traces: a cluster sampling every request; `cluster status` shows the drift of
# the version it serves; `planner build` plans a version from the live traffic (its drift on the
# same traffic is 0 at every layer: the plan is that traffic), and it is rolled out live.
"$PLANNER" activate --db="$DB" --version=1 >/dev/null
start_cluster live --attn=dp --placement=1 --sample_routing=1
for p in "${PROMPTS[@]}"; do
  "$RCLIENT" generate --target="$RADDR" --prompt="$p" --max_tokens=6 >/dev/null
done
for _ in $(seq 1 300); do  # The ranks flush their traces every 10 s, each on its own clock:
  st="$(console cluster status --json)"  # the drift may show before the second rank's file.
  grep -q '"live_tokens"' <<<"$st" && [[ -s "$TMP/live/rank0.trace" && -s "$TMP/live/rank1.trace" ]] &&
    break
  sleep 0.1
done
grep -q '"live_tokens"' <<<"$st" || fail "no drift in cluster status --json: $st"
[[ -s "$TMP/live/rank0.trace" && -s "$TMP/live/rank1.trace" ]] ||
  fail "a rank wrote no live trace: $(ls -l "$TMP/live")"
out="$(console cluster status)"
grep -q "drift of the group, version 1 on [1-9][0-9]* live tokens: LAR" <<<"$out" ||
  fail "cluster status: $out"
[[ "$(grep -c "  serving  v1 " <<<"$out")" == 2 ]] || fail "cluster status placements: $out"
LIVE="$TMP/live/rank0.trace,$TMP/live/rank1.trace"
out="$("$PLANNER" drift --db="$DB" --version=1 --traces="$LIVE")"
grep -q "^layer .*planned LAR" <<<"$out" && [[ "$(grep -c '^[01] ' <<<"$out")" == 2 ]] ||
  fail "planner drift: $out"
out="$(console placements drift 1 --traces="$LIVE")"
grep -q "drift of the live traces, version 1" <<<"$out" || fail "console drift: $out"
expect_error 1 "version 99" -- "$PLANNER" drift --db="$DB" --version=99 --traces="$LIVE"
expect_error 1 "$TMP/none.trace" -- "$PLANNER" drift --db="$DB" --version=1 --traces="$TMP/none.trace"
"$PLANNER" build --db="$DB" --model=tiny --devices=2 --mode=dp --name=from-live --traces="$LIVE" \
  >/dev/null
v="$("$PLANNER" list --db="$DB" --model=tiny | grep from-live | awk '{print $1}')"
[[ -n "$v" ]] || fail "no version built from the live traces"
json="$("$PLANNER" drift --db="$DB" --version="$v" --traces="$LIVE" --json)"
[[ "$(grep -o '"lar_drift":[-0-9.e]*' <<<"$json" | cut -d: -f2 | sort -u)" == 0 ||
   "$(grep -o '"lar_drift":[-0-9.e]*' <<<"$json" | cut -d: -f2 | sort -u)" == 0.0 ]] ||
  fail "in-sample drift of the live-planned version is not 0: $json"
console placements activate "$v" >"$TMP/activate_live.out" ||
  fail "activate $v: $(cat "$TMP/activate_live.out")"
grep -q "the group serves version $v on every rank" "$TMP/activate_live.out" ||
  fail "live-planned version not rolled out: $(cat "$TMP/activate_live.out")"
stop_cluster live

# --- A rank killed mid-rollout (loading capped, so it takes seconds), restarted by local_cluster:
# the group re-forms on the launch placement, the leader proposes the active version again, and
# the rollout completes on every rank — the console's wait ends well.
# activate_and_kill NAME: `console placements activate 2` in the background (CPID), then rank 1
# of cluster NAME killed once the rollout is under way.
activate_and_kill() {
  console placements activate 2 >"$TMP/$1_activate.out" 2>&1 &
  CPID=$!
  for _ in $(seq 1 100); do
    "$RCLIENT" stats --target="$RADDR" --json | grep -q '"target_version":"2"' && break
    sleep 0.1
  done
  "$RCLIENT" stats --target="$RADDR" --json | grep -q '"target_version":"2"' ||
    fail "no rollout under way: $("$RCLIENT" stats --target="$RADDR" --json)"
  kill -KILL "$(pgrep -f -- "--rank 1 .*$TMP/$1/")"
}
"$PLANNER" activate --db="$DB" --version=1 >/dev/null
start_cluster heal --attn=dp --placement=1 --rollout_mb_per_s=0.02
activate_and_kill heal
rc=0
wait "$CPID" || rc=$?
[[ "$rc" == 0 ]] || fail "console after a healed kill: exit $rc: $(cat "$TMP/heal_activate.out")"
grep -q "the group serves version 2 on every rank" "$TMP/heal_activate.out" ||
  fail "heal: $(cat "$TMP/heal_activate.out")"
grep -q "re-formed as epoch 1" "$TMP/heal/rank0.log" || fail "no re-form: $(cat "$TMP/heal/rank0.log")"
grep -q "rank 1 exited (signal 9); restarting it" "$TMP/heal.out" || fail "$(cat "$TMP/heal.out")"
stop_cluster heal

# --- The same without a supervisor's restart (--restart=false): the console says the rollout
# failed, the group stops, and no rank served version 2.
"$PLANNER" activate --db="$DB" --version=1 >/dev/null
start_cluster kill --attn=dp --placement=1 --rollout_mb_per_s=0.02 --restart=false
activate_and_kill kill
rc=0
wait "$CPID" || rc=$?
[[ "$rc" == 1 ]] || fail "console after the kill: exit $rc: $(cat "$TMP/kill_activate.out")"
# The console names the rank when the router outlives it; local_cluster stops its router with the
# group.
grep -Eq 'rollout of version 2 failed: (the group, rank 1 .* has been down for|lost the router)' \
  "$TMP/kill_activate.out" || fail "kill: $(cat "$TMP/kill_activate.out")"
rc=0
wait "$PID" || rc=$?
[[ "$rc" == 1 ]] || fail "cluster after the kill: exit $rc"
grep -q "rank 1 exited (signal 9)" "$TMP/kill.out" || fail "cause: $(cat "$TMP/kill.out")"
grep -q "serving placement version 2" "$TMP"/kill/rank0.log &&
  fail "rank 0 switched without rank 1: $(grep "placement version" "$TMP"/kill/rank0.log)"
grep -q "version 1 is active again" "$TMP/kill_activate.out" ||
  fail "version 1 not re-activated: $(cat "$TMP/kill_activate.out")"
echo PASS

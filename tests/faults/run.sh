#!/usr/bin/env bash
# tests/faults/run.sh [--quick|--ci] [--model DIR] [--out FILE]
#
# Fault, overload and store scenarios on a 2-rank local cluster (planner with its SQLite
# database, engines on a semantic version they fetch and follow, router with its tables) under a
# closed-loop load, as an operator would try them:
#   1. kill -9 one engine rank: time until the router reports it (dead_rank_detect_s); the
#      supervisor restarts it, the survivor re-forms the group without restarting
#      (recovered_after_rank_restart);
#   2. kill -9 the planner: requests keep completing (planner_death_outage: any failed request or
#      unusable rank while it is down);
#   3. SIGSTOP one rank for a few seconds: time until reported (stall_detect_s), then SIGCONT;
#   4. kill -9 the router: restarted on its port, serving again (router_restart_s);
#   5. overload (open loop far past capacity): rejections apart from failures, then Ctrl-C must
#      stop the cluster within 5 s (ctrl_c_stop_s);
#   6. a soak under steady load: resident memory growth of the engines and router
#      (soak_rss_growth_pct);
#   7. the store: SIGKILL during concurrent writes (store_trials, corrupt_databases);
#   8. the fuzzers, briefly (fuzz_crashes_open: crashes found and not fixed).
# Every request loadgen sends is accounted for by id: completed, refused, or failed with a
# reason; requests_lost counts any that is not. Prints one JSON line on stdout (progress on
# stderr); exit 0 when the figures meet docs/RELIABILITY.md's bars, else 1.
#
# Binaries come from $SEMMOE_BIN (a bazel-bin-like tree; under `bazel test`, the runfiles) or
# are built with bazel. --quick: < 15 minutes here; --ci: the short version CI runs (a tiny
# model, shorter phases, no fuzzing — CI runs the fuzzers itself).
set -euo pipefail

MODE=full
MODEL=""
OUT=""
while (($#)); do
  case "$1" in
    --quick) MODE=quick ;;
    --ci) MODE=ci ;;
    --model) MODEL="$2"; shift ;;
    --model=*) MODEL="${1#--model=}" ;;
    --out) OUT="$2"; shift ;;
    --out=*) OUT="${1#--out=}" ;;
    *) echo "usage: tests/faults/run.sh [--quick|--ci] [--model DIR] [--out FILE]" >&2; exit 2 ;;
  esac
  shift
done

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TMP="${TEST_TMPDIR:-$(mktemp -d /tmp/semmoe-faults-XXXXXX)}"
log() { echo "faults: $*" >&2; }
die() { echo "faults: FAIL: $*" >&2; exit 1; }

case "$MODE" in
  full) SOAK_S=600; FUZZ_RUNS=20000; STORE_TRIALS=100; LOAD_C=4; LOAD_S=100; OVER_S=20 ;;
  quick) SOAK_S=90; FUZZ_RUNS=2000; STORE_TRIALS=100; LOAD_C=4; LOAD_S=100; OVER_S=20 ;;
  ci) SOAK_S=30; FUZZ_RUNS=0; STORE_TRIALS=20; LOAD_C=2; LOAD_S=60; OVER_S=8 ;;
esac

BIN="${SEMMOE_BIN:-}"
if [[ -z "$BIN" ]]; then
  log "building the binaries"
  # Optimised, as served — except under --ci, which reuses what `./semmoe test` built.
  config=(--config=opt)
  [[ "$MODE" == ci ]] && config=()
  (cd "$ROOT" && bazel build "${config[@]}" //engine //planner //router //tools:local_cluster \
    //tools/loadgen //tools:router_client //tools:make_tiny_model \
    //planner/store:store_crash_test >&2)
  BIN="$ROOT/bazel-bin"
fi
for b in engine/engine planner/planner router/router tools/local_cluster tools/loadgen/loadgen \
  tools/router_client planner/store/store_crash_test; do
  [[ -x "$BIN/$b" ]] || die "missing $BIN/$b"
done

# --- The model and the workload.
if [[ -z "$MODEL" ]]; then
  if [[ "$MODE" != ci && -d "$ROOT/../shared/models/qwen3-moe-a" ]]; then
    MODEL="$ROOT/../shared/models/qwen3-moe-a"
  else
    MODEL="$TMP/model"
    "$BIN/tools/make_tiny_model" --arch=qwen3_moe --out="$MODEL" --seed=5 --experts=8 \
      --top_k=2 >/dev/null
  fi
fi
PROMPTS="$TMP/prompts.jsonl"
if [[ -f "$ROOT/../shared/data/prompts.jsonl" && "$MODE" != ci ]]; then
  head -n 64 "$ROOT/../shared/data/prompts.jsonl" |
    jq -c '{id: .id, text: (.text[0:300])}' >"$PROMPTS"
else
  for i in $(seq 1 32); do
    printf '{"id": "p%d", "text": "Request %d asks the router which rank holds its experts."}\n' \
      "$i" "$i" >>"$PROMPTS"
  done
fi
log "model $MODEL; tracing and building a semantic version"
DB="$TMP/faults.db"
"$BIN/engine/engine" trace --model="$MODEL" --prompts="$PROMPTS" --out="$TMP/profile.trace" \
  --max_prompt_tokens=128 2>/dev/null
"$BIN/planner/planner" build --db="$DB" --model=faults --traces="$TMP/profile.trace" \
  --devices=2 --mode=dp --quiet >/dev/null
"$BIN/planner/planner" activate --db="$DB" --version=1 >/dev/null 2>&1 || true

# --- The cluster (the local supervisor restarts what dies).
CLUSTER_PID=""
cleanup() {
  [[ -n "$CLUSTER_PID" ]] && kill -KILL "$CLUSTER_PID" 2>/dev/null || true
  pkill -KILL -f -- "$TMP/run/" 2>/dev/null || true
  [[ -n "${LOAD_PID:-}" ]] && kill -KILL "$LOAD_PID" 2>/dev/null || true
}
trap cleanup EXIT
EP="$TMP/endpoints.json"
start_cluster() {
  rm -f "$EP"
  "$BIN/tools/local_cluster" --model="$MODEL" --ranks=2 --db="$DB" --placement=1 \
    --engine_binary="$BIN/engine/engine" --planner_binary="$BIN/planner/planner" \
    --router_binary="$BIN/router/router" --run_dir="$TMP/run" --endpoints_file="$EP" \
    --kv_cache_mb=64 --http_port=-1 >"$TMP/cluster.out" 2>&1 &
  CLUSTER_PID=$!
  for _ in $(seq 1 1800); do
    [[ -s "$EP" ]] && break
    kill -0 "$CLUSTER_PID" 2>/dev/null || die "the cluster exited: $(cat "$TMP/cluster.out")"
    sleep 0.1
  done
  [[ -s "$EP" ]] || die "the cluster did not start: $(cat "$TMP/cluster.out")"
  ROUTER="$(jq -r .router "$EP")"
}
rank_pid() { pgrep -f -- "engine serve .*--rank $1 .*$TMP/run/" | head -1; }
stats() { "$BIN/tools/router_client" stats --target="$ROUTER" --json 2>/dev/null || echo '{}'; }
# down_reason RANK: the router's reason rank RANK is unusable ("" while it is usable).
down_reason() { stats | jq -r ".ranks[$1].down_reason // \"\""; }
rank_down() { [[ -n "$(down_reason "$1")" ]]; }
all_usable() { [[ "$(stats | jq '[.ranks[]? | select(.usable == true)] | length')" == 2 ]]; }
now() { date +%s.%N; }
since() { echo "$(now) - $1" | bc -l | xargs printf '%.2f'; }
# wait_until SECONDS CMD...: polls CMD every 0.1 s; false after SECONDS.
wait_until() {
  local end=$((SECONDS + $1))
  shift
  until "$@"; do
    ((SECONDS < end)) || return 1
    sleep 0.1
  done
}
load() {  # load NAME loadgen-flags...: in the background; sets LOAD_PID
  local name="$1"
  shift
  "$BIN/tools/loadgen/loadgen" --target="$ROUTER" --prompts="$PROMPTS" --max_prompt_chars=300 \
    --max_tokens=16 --quiet --out="$TMP/$name.json" --requests_out="$TMP/$name.requests" "$@" \
    >"$TMP/$name.log" 2>&1 &
  LOAD_PID=$!
}

start_cluster
log "cluster up ($ROUTER); faults under load"
load faults --concurrency="$LOAD_C" --duration_s="$LOAD_S" --backoff_ms=50
T0="$(now)"
sleep 5

# 1. A dead rank.
survivor="$(rank_pid 0)"
kill -KILL "$(rank_pid 1)"
t="$(now)"
wait_until 30 rank_down 1 || die "rank 1's death was not reported"
DEAD_DETECT="$(since "$t")"
DEAD_REASON="$(down_reason 1)"
RECOVERED=false
if wait_until 90 all_usable && [[ "$(rank_pid 0)" == "$survivor" ]]; then RECOVERED=true; fi
RECOVER_S="$(since "$t")"
log "dead rank reported in ${DEAD_DETECT}s ($DEAD_REASON); recovered=$RECOVERED in ${RECOVER_S}s"

# 2. The planner dies (restarted by the supervisor): serving must not notice.
sleep 2
P_KILL="$(echo "$(now) - $T0" | bc -l)"
kill -KILL "$(pgrep -f -- "planner serve .*--db $DB" | head -1)"
PLANNER_OUTAGE=false
for _ in $(seq 1 40); do
  all_usable || PLANNER_OUTAGE=true
  sleep 0.25
done
P_END="$(echo "$(now) - $T0" | bc -l)"
log "planner killed at ${P_KILL}s; ranks unusable meanwhile: $PLANNER_OUTAGE"

# 3. A stalled rank (SIGSTOP), resumed before the collective timeout.
sleep 2
stalled="$(rank_pid 1)"
kill -STOP "$stalled"
t="$(now)"
wait_until 30 rank_down 1 || { kill -CONT "$stalled"; die "the stall was not reported"; }
STALL_DETECT="$(since "$t")"
STALL_REASON="$(down_reason 1)"
sleep 3
kill -CONT "$stalled"
STALL_RECOVERED=false
wait_until 60 all_usable && STALL_RECOVERED=true
log "stall reported in ${STALL_DETECT}s ($STALL_REASON); recovered=$STALL_RECOVERED"

# 4. The router dies: restarted on its port, finds its engines.
sleep 2
kill -KILL "$(pgrep -f -- "router/router .*$TMP/run/" | head -1)"
t="$(now)"
wait_until 60 all_usable || die "the router did not come back: $(tail -5 "$TMP/cluster.out")"
ROUTER_RESTART="$(since "$t")"
log "router back in ${ROUTER_RESTART}s"

wait "$LOAD_PID" || true
LOAD_PID=""
# Every request accounted for: each id sent has an outcome, each failure a reason.
SENT="$(jq -r .sent "$TMP/faults.json")"
ENDED="$(jq -r .id "$TMP/faults.requests" | sort -u | wc -l)"
UNEXPLAINED="$(jq -c 'select(.outcome != "completed" and (.message == "" or .code == "UNKNOWN"))' \
  "$TMP/faults.requests" | wc -l)"
LOST=$((SENT - ENDED + UNEXPLAINED))
COMPLETED="$(jq -r .completed "$TMP/faults.json")"
FAILED="$(jq -r .failed "$TMP/faults.json")"
# Requests that failed while only the planner was down are an outage too.
PLANNER_FAILED="$(jq -c --argjson a "$P_KILL" --argjson b "$P_END" \
  'select(.outcome == "failed" and .end_s >= $a and .end_s <= $b)' "$TMP/faults.requests" | wc -l)"
((PLANNER_FAILED == 0)) || PLANNER_OUTAGE=true
log "requests: sent $SENT, completed $COMPLETED, failed $FAILED (all with reasons), lost $LOST"

# 5. Overload, then Ctrl-C.
load overload --rate=200 --duration_s="$OVER_S" --drain_s=30
wait "$LOAD_PID" || true
LOAD_PID=""
OVER_REJECTED="$(jq -r .rejected "$TMP/overload.json")"
OVER_COMPLETED="$(jq -r .completed "$TMP/overload.json")"
OVER_FAILED="$(jq -r .failed "$TMP/overload.json")"
OVER_TTFT_P99="$(jq -r .ttft_ms.p99 "$TMP/overload.json")"
OVER_SENT="$(jq -r .sent "$TMP/overload.json")"
OVER_ENDED="$(jq -r .id "$TMP/overload.requests" | sort -u | wc -l)"
LOST=$((LOST + OVER_SENT - OVER_ENDED))
log "overload: sent $OVER_SENT, completed $OVER_COMPLETED, rejected $OVER_REJECTED, failed $OVER_FAILED, TTFT p99 ${OVER_TTFT_P99} ms"
load overload2 --rate=200 --duration_s=30 --drain_s=5
sleep 5  # In the thick of it.
t="$(now)"
kill -INT "$CLUSTER_PID"
wait "$CLUSTER_PID" || true
CTRL_C="$(since "$t")"
CLUSTER_PID=""
kill -KILL "$LOAD_PID" 2>/dev/null || true
LOAD_PID=""
log "Ctrl-C under overload stopped the cluster in ${CTRL_C}s"

# 6. Soak: steady load, resident memory at a quarter of the way and at the end.
start_cluster
load soak --concurrency=2 --duration_s="$SOAK_S" --backoff_ms=50
rss() {  # total RSS (kB) of the ranks and the router
  local total=0 pid
  for pid in $(pgrep -f -- "(engine serve|router/router) .*$TMP/run/"); do
    total=$((total + $(awk '/VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)))
  done
  echo "$total"
}
sleep "$((SOAK_S / 4))"
RSS_A="$(rss)"
wait "$LOAD_PID" || true
LOAD_PID=""
RSS_B="$(rss)"
SOAK_GROWTH="$(echo "100 * ($RSS_B - $RSS_A) / $RSS_A" | bc -l | xargs printf '%.1f')"
SOAK_FAILED="$(jq -r .failed "$TMP/soak.json")"
log "soak ${SOAK_S}s: RSS ${RSS_A} → ${RSS_B} kB (${SOAK_GROWTH}%), failed $SOAK_FAILED"
kill -INT "$CLUSTER_PID"
wait "$CLUSTER_PID" || true
CLUSTER_PID=""

# 7. The store.
log "store: SIGKILL during concurrent writes, $STORE_TRIALS trials"
store_out="$(cd "$TMP" && TEST_TMPDIR="$TMP" SEMMOE_STORE_TRIALS="$STORE_TRIALS" \
  "$BIN/planner/store/store_crash_test" 2>&1)" || true
line="$(grep -o 'store crash trials: [0-9]*, corrupt databases: [0-9]*' <<<"$store_out" || true)"
[[ -n "$line" ]] || die "the store test did not report: $(tail -20 <<<"$store_out")"
TRIALS="$(sed 's/.*trials: \([0-9]*\),.*/\1/' <<<"$line")"
CORRUPT="$(sed 's/.*databases: \([0-9]*\)/\1/' <<<"$line")"
if ! grep -q "^\[  PASSED  \]" <<<"$store_out" || grep -q "^\[  FAILED  \]" <<<"$store_out"; then
  log "the store test failed: $(grep -A3 "Failure" <<<"$store_out" | head -20)"
  CORRUPT=$((CORRUPT > 0 ? CORRUPT : 1))
fi

# 8. The fuzzers (not under --ci: CI runs them on its own).
FUZZ_OPEN=0
if ((FUZZ_RUNS > 0)); then
  log "fuzzers: $FUZZ_RUNS runs each"
  if ! (cd "$ROOT" && ./semmoe fuzz --runs "$FUZZ_RUNS" >"$TMP/fuzz.log" 2>&1); then
    # "fuzz: crashes in A B (inputs and logs in .semmoe/fuzz/)"; anything else: it did not run.
    FUZZ_OPEN="$(grep -o 'crashes in [^(]*' "$TMP/fuzz.log" | head -1 | awk '{print NF - 2}')"
    FUZZ_OPEN="${FUZZ_OPEN:-0}"
    ((FUZZ_OPEN > 0)) || die "./semmoe fuzz failed without a crash: $(tail -20 "$TMP/fuzz.log")"
  fi
fi

json="$(jq -cn \
  --argjson lost "$LOST" --argjson corrupt "$CORRUPT" --argjson trials "$TRIALS" \
  --argjson detect "$DEAD_DETECT" --argjson recovered "$RECOVERED" \
  --argjson outage "$PLANNER_OUTAGE" --argjson soak "$SOAK_GROWTH" --argjson fuzz "$FUZZ_OPEN" \
  --argjson stall "$STALL_DETECT" --argjson stall_rec "$STALL_RECOVERED" \
  --argjson recover_s "$RECOVER_S" --argjson router_s "$ROUTER_RESTART" --argjson ctrlc "$CTRL_C" \
  --argjson sent "$SENT" --argjson completed "$COMPLETED" --argjson failed "$FAILED" \
  --argjson rejected "$OVER_REJECTED" --argjson over_completed "$OVER_COMPLETED" \
  --argjson over_failed "$OVER_FAILED" --argjson over_p99 "$OVER_TTFT_P99" \
  --arg mode "$MODE" --arg model "$(basename "$MODEL")" --argjson soak_s "$SOAK_S" \
  '{requests_lost: $lost, corrupt_databases: $corrupt, store_trials: $trials,
    dead_rank_detect_s: $detect, recovered_after_rank_restart: $recovered,
    planner_death_outage: $outage, soak_rss_growth_pct: $soak, fuzz_crashes_open: $fuzz,
    stall_detect_s: $stall, recovered_after_stall: $stall_rec, rank_recovery_s: $recover_s,
    router_restart_s: $router_s, ctrl_c_stop_s: $ctrlc,
    faults_load: {sent: $sent, completed: $completed, failed: $failed},
    overload: {completed: $over_completed, rejected: $rejected, failed: $over_failed,
               ttft_p99_ms: $over_p99},
    mode: $mode, model: $model, soak_s: $soak_s}')"
echo "$json"
[[ -n "$OUT" ]] && echo "$json" >"$OUT"
ok=true
((LOST == 0)) || ok=false
((CORRUPT == 0)) || ok=false
[[ "$RECOVERED" == true && "$PLANNER_OUTAGE" == false && "$STALL_RECOVERED" == true ]] || ok=false
(($(echo "$DEAD_DETECT < 5 && $STALL_DETECT < 5 && $CTRL_C < 5" | bc -l))) || ok=false
((FUZZ_OPEN == 0)) || ok=false
$ok

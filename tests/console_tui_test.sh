#!/usr/bin/env bash
# End-to-end: `console tui` in a real terminal (tmux). It shows the planner's versions, activates
# the selected one after a y/n prompt (the planner's active version changes), survives a resize,
# shows a banner instead of crashing when the planner goes away, and quits cleanly on q.
set -euo pipefail

source "$1"  # tests/cli_lib.sh: TMP, fail, expect_error
shift
CONSOLE="$1"
PLANNER="$2"
ENGINE="$3"
MAKE_TINY="$4"

command -v tmux >/dev/null || fail "tmux is not installed (./semmoe setup installs it)"
"$MAKE_TINY" --arch=qwen3_moe --out="$TMP/model" --seed=5 --experts=8 --top_k=2 >/dev/null
: >"$TMP/p.jsonl"
for i in $(seq 1 8); do
  printf '{"id": %d, "text": "The console shows version %d."}\n' "$i" "$i" >>"$TMP/p.jsonl"
done
"$ENGINE" trace --model="$TMP/model" --prompts="$TMP/p.jsonl" --out="$TMP/t.trace" 2>/dev/null
DB="$TMP/p.db"
"$PLANNER" build --db="$DB" --model=tiny --traces="$TMP/t.trace" --devices=2 >/dev/null  # v1
"$PLANNER" build --db="$DB" --model=tiny --traces="$TMP/t.trace" --devices=2 --algo=vanilla \
  >/dev/null                                                                                 # v2
"$PLANNER" activate --db="$DB" --version=2 >/dev/null
"$PLANNER" serve --db="$DB" --port=0 --port_file="$TMP/planner.port" >"$TMP/planner.out" 2>&1 &
PLANNER_PID=$!
for _ in $(seq 1 100); do [[ -s "$TMP/planner.port" ]] && break; sleep 0.1; done
PORT="$(cat "$TMP/planner.port")"

# A private tmux server (its socket path must be short: /tmp, not the test's temp dir).
SOCK="$(mktemp -u /tmp/semmoe-tui-XXXXXX)"
tmux() { command tmux -S "$SOCK" "$@"; }
S=semmoe-tui
cleanup() {
  tmux kill-server 2>/dev/null || true
  rm -f "$SOCK"
  kill "$PLANNER_PID" 2>/dev/null || true
}
trap cleanup EXIT
tmux new-session -d -s "$S" -x 120 -y 40 \
  "'$CONSOLE' tui --planner=127.0.0.1:$PORT --router=127.0.0.1:1 --model=tiny; echo \"exit \$?\" >'$TMP/exit'; sleep 30"
screen() { tmux capture-pane -p -t "$S"; }
wait_for() {  # wait_for TEXT
  for _ in $(seq 1 100); do
    screen | grep -qF -- "$1" && return 0
    sleep 0.1
  done
  fail "no '$1' on the screen:
$(screen)"
}

wait_for "[1] placements"
wait_for "semantic-dp-g2"
wait_for "!! router 127.0.0.1:1 unreachable"
screen | grep -q "^>2 .*active" || fail "the newest version is not selected first: $(screen)"
# Select version 1: its details; activate it, confirm.
tmux send-keys -t "$S" Down
wait_for ">1 "
tmux send-keys -t "$S" Enter
wait_for "recorded metrics (in-sample):"
tmux send-keys -t "$S" x
tmux send-keys -t "$S" a
wait_for "activate version 1 (semantic-dp-g2)? (y/n)"
tmux send-keys -t "$S" y
wait_for "version 1 is active"
"$PLANNER" list --db="$DB" --model=tiny | grep -q "^1 .*active" ||
  fail "the planner's active version did not change: $("$PLANNER" list --db="$DB" --model=tiny)"
# Help, other panes, a resize.
tmux send-keys -t "$S" '?'
wait_for "this help"
tmux send-keys -t "$S" x
tmux send-keys -t "$S" 2
wait_for "(no experiments)"
tmux send-keys -t "$S" 3
wait_for "throughput (requests/s"
tmux resize-window -t "$S" -x 70 -y 20
sleep 1.5
wait_for "Sem-MoE console"
# The planner goes away: a banner, not a crash.
kill "$PLANNER_PID"
wait "$PLANNER_PID" 2>/dev/null || true
wait_for "!! planner 127.0.0.1:$PORT unreachable"
[[ ! -e "$TMP/exit" ]] || fail "the TUI exited: $(cat "$TMP/exit")"
tmux send-keys -t "$S" q
for _ in $(seq 1 50); do [[ -s "$TMP/exit" ]] && break; sleep 0.1; done
[[ "$(cat "$TMP/exit" 2>/dev/null)" == "exit 0" ]] || fail "q: $(cat "$TMP/exit" 2>/dev/null)"
echo "PASS"

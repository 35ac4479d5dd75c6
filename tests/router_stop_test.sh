#!/usr/bin/env bash
# End-to-end: the router stops on SIGINT within a bound whatever it is doing — probing a chat
# template that loops at start, or with its HTTP workers mid-render (both used to ignore SIGINT
# for as long as the render ran) — and bad thread counts and render bounds are refused at once.
set -euo pipefail

source "$1"  # tests/cli_lib.sh: TMP, fail, expect_error
shift
ROUTER="$1"
MAKE_TINY="$2"

"$MAKE_TINY" --out="$TMP/model" --seed=2 --layers=1 --experts=4 --top_k=2 >/dev/null
# Loops (for minutes) only when a user says "loop"; every other conversation renders.
loop='{% for i in range(1000000) %}{% for j in range(1000000) %}{{ "" }}{% endfor %}{% endfor %}'
printf '{%% for m in messages %%}{%% if m.content == "loop" %%}%s{%% endif %%}{{ m.content }}{%% endfor %%}' \
  "$loop" >"$TMP/sometimes.jinja"
printf '%s' "$loop" >"$TMP/always.jinja"
ROUTER_FLAGS=(--engines=127.0.0.1:1 --model="$TMP/model" --port=0 --http_port=0 --poll_ms=100)

# stops_within SECONDS PID LOG: the process exits (status 0) within SECONDS.
stops_within() {
  local bound="$1" pid="$2" log="$3" start=$SECONDS rc=0
  for _ in $(seq 1 $((bound * 10))); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$pid" 2>/dev/null && { kill -9 "$pid"; fail "still running ${bound} s after SIGINT: $(cat "$log")"; }
  wait "$pid" || rc=$?
  [[ "$rc" == 0 ]] || fail "exit $rc after SIGINT: $(cat "$log")"
  echo "stopped in $((SECONDS - start)) s"
}

# 1. Stuck at start: the load-time probes of a template that loops on every conversation (a
#    render bound of a minute, so only the signal can stop it).
"$ROUTER" "${ROUTER_FLAGS[@]}" --chat_template="$TMP/always.jinja" --chat_template_render_ms=60000 \
  >"$TMP/start.log" 2>&1 &
pid=$!
sleep 1
kill -0 "$pid" 2>/dev/null || fail "the router did not stay in its start: $(cat "$TMP/start.log")"
kill -INT "$pid"
stops_within 5 "$pid" "$TMP/start.log"
grep -q "stopped on signal 2 while starting" "$TMP/start.log" || fail "$(cat "$TMP/start.log")"

# Without the signal, the same template stops the start by itself at its render bound, naming why.
expect_error 1 "could not render a probe conversation" -- \
  "$ROUTER" "${ROUTER_FLAGS[@]}" --chat_template="$TMP/always.jinja" --chat_template_render_ms=200

# 2. Serving, both workers mid-render: SIGINT stops it.
"$ROUTER" "${ROUTER_FLAGS[@]}" --chat_template="$TMP/sometimes.jinja" \
  --chat_template_render_ms=60000 --http_port_file="$TMP/http_port" >"$TMP/serve.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do [[ -s "$TMP/http_port" ]] && break; sleep 0.1; done
[[ -s "$TMP/http_port" ]] || fail "no HTTP port: $(cat "$TMP/serve.log")"
port="$(cat "$TMP/http_port")"
for _ in 1 2 3; do
  curl -s -m 30 "http://127.0.0.1:$port/v1/chat/completions" -H 'Content-Type: application/json' \
    -d '{"messages": [{"role": "user", "content": "loop"}]}' >/dev/null 2>&1 &
done
sleep 1
kill -INT "$pid"
stops_within 5 "$pid" "$TMP/serve.log"
wait || true  # The clients.

# 3. Refused before anything starts, naming the flag.
expect_error 2 "between 1 and 256" -- "$ROUTER" "${ROUTER_FLAGS[@]}" --http_workers=100000
expect_error 2 "--http_threads" -- "$ROUTER" "${ROUTER_FLAGS[@]}" --http_threads=0
expect_error 2 "--chat_template_render_ms" -- "$ROUTER" "${ROUTER_FLAGS[@]}" --chat_template_render_ms=0
expect_error 2 "--chat_template_render_ms" -- "$ROUTER" "${ROUTER_FLAGS[@]}" --chat_template_render_ms=nan
for bad in --window_ms=nan --balance_eps=nan --slo_ttft_ms=-1 --report_s=0 --http_idle_timeout_s=inf \
  --max_queue_ms=1e300 --http_port=70000 --port=-5; do
  expect_error 2 "${bad%%=*} " -- "$ROUTER" "${ROUTER_FLAGS[@]}" "$bad"
done
expect_error 2 "--message_special_tokens must be text or control" -- "$ROUTER" "${ROUTER_FLAGS[@]}" \
  --message_special_tokens=maybe
echo "PASS"

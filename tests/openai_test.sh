#!/usr/bin/env bash
# End-to-end: the router's OpenAI-compatible HTTP on a 2-rank local cluster (tiny model, which
# ships a ChatML chat template): curl and the official `openai` npm client (node), streamed and
# not, chat and completions; greedy answers equal across modes and equal to the router's gRPC
# answer; OpenAI error bodies; /v1/models and /health; a client that hangs up mid-stream gets its
# request cancelled in the engine. Tools: the router serves a tools-aware template
# (--chat_template) and the real engine answers a forced call (what the random model writes is
# no call: content, never an error); the official client's function calling runs against the
# door over a scripted model (tests/testing/scripted_door) with the real Qwen3 template.
set -euo pipefail

source "$1"  # tests/cli_lib.sh
shift
CLUSTER="$1" ENGINE="$2" ROUTER="$3" MAKE_TINY="$4" ROUTER_CLIENT="$5" ENGINE_CLIENT="$6"
OPENAI_CLIENT="$7" SCRIPTED_DOOR="$8" TOOLS_CLIENT="$9"

# 8192 positions: room for a request long enough to hang up in the middle of.
"$MAKE_TINY" --arch=qwen3_moe --out="$TMP/model" --seed=3 --experts=8 --top_k=2 \
  --max_positions=8192 >/dev/null
# ChatML that lists tools and renders calls and results (the tiny model's own knows no tools).
cat >"$TMP/tools.jinja" <<'JINJA'
{%- if tools %}<|im_start|>system
<tools>{% for t in tools %}
{{ t | tojson }}{% endfor %}
</tools><|im_end|>
{% endif %}{% for m in messages %}<|im_start|>{{ 'user' if m.role == 'tool' else m.role }}
{{ m.content or '' }}{% for c in m.tool_calls or [] %}<tool_call>
{"name": "{{ c.function.name }}", "arguments": {{ c.function.arguments }}}
</tool_call>{% endfor %}<|im_end|>
{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant
{% endif %}
JINJA
launch_cluster http "$CLUSTER" --model="$TMP/model" --engine_binary="$ENGINE" \
  --router_binary="$ROUTER" --ranks=2 --kv_cache_mb=16 --router_policy=round_robin \
  --router_flags="--chat_template=$TMP/tools.jinja"
trap 'kill -INT $PID 2>/dev/null || true' EXIT
HTTP="http://$(grep -o '"http":"[^"]*"' "$EP" | cut -d'"' -f4)"
[[ "$HTTP" != "http://" ]] || fail "no HTTP address in $(cat "$EP")"
grep -q "curl $HTTP/v1/completions" "$TMP/http.out" || fail "the cluster does not print the curl"

post() { curl -sS -H 'Content-Type: application/json' -d "$2" "$HTTP$1"; }
status() { curl -s -o "$TMP/body" -w '%{http_code}' -H 'Content-Type: application/json' -d "$2" "$HTTP$1"; }

# Health and models.
for _ in $(seq 1 100); do
  [[ "$(curl -s -o /dev/null -w '%{http_code}' "$HTTP/health")" == 200 ]] && break
  sleep 0.1
done
curl -sS "$HTTP/health" | jq -e '.status == "ok" and .ranks_usable == 2' >/dev/null ||
  fail "health: $(curl -sS "$HTTP/health")"
curl -sS "$HTTP/v1/models" | jq -e '.data[0].id == "model"' >/dev/null || fail "models"

# Completions: whole and streamed agree, and equal the router's gRPC answer.
body='{"model": "model", "prompt": "The history of", "max_tokens": 16, "temperature": 0, "ignore_eos": true}'
whole="$(post /v1/completions "$body")"
text="$(jq -r '.choices[0].text' <<<"$whole")"
jq -e '.usage.completion_tokens == 16 and .choices[0].finish_reason == "length"' <<<"$whole" \
  >/dev/null || fail "completion: $whole"
grpc="$("$ROUTER_CLIENT" generate --target="$RADDR" --prompt="The history of" --max_tokens=16 \
  --ignore_eos --json | jq -r '.final.text')"
[[ "$text" == "$grpc" ]] || fail "HTTP '$text' != gRPC '$grpc'"
streamed="$(curl -sSN -H 'Content-Type: application/json' \
  -d "$(jq -c '. + {stream: true}' <<<"$body")" "$HTTP/v1/completions")"
[[ "$(tail -n 1 <<<"$streamed")" == "data: [DONE]" ]] || fail "no [DONE]: $streamed"
joined="$(grep '^data: {' <<<"$streamed" | sed 's/^data: //' | jq -rj '.choices[0].text')"
[[ "$joined" == "$text" ]] || fail "streamed '$joined' != whole '$text'"

# Chat.
chat='{"messages": [{"role": "user", "content": "Hello"}], "max_tokens": 8, "temperature": 0, "ignore_eos": true}'
answer="$(post /v1/chat/completions "$chat" | jq -r '.choices[0].message.content')"
joined="$(curl -sSN -H 'Content-Type: application/json' -d "$(jq -c '. + {stream: true}' <<<"$chat")" \
  "$HTTP/v1/chat/completions" | grep '^data: {' | sed 's/^data: //' | jq -rj '.choices[0].delta.content // ""')"
[[ "$joined" == "$answer" ]] || fail "chat streamed '$joined' != whole '$answer'"

# Errors: OpenAI's shape and status.
[[ "$(status /v1/completions '{"prompt": "x", "logprobs": 2}')" == 400 ]] || fail "logprobs"
jq -e '.error.param == "logprobs" and .error.code == "unsupported_parameter"' "$TMP/body" >/dev/null ||
  fail "logprobs error body: $(cat "$TMP/body")"
[[ "$(status /v1/chat/completions '{"messages": [{"role": "user", "content": "x"}], "n": 3}')" == 400 ]] ||
  fail "n=3"
[[ "$(status /v1/completions '{"prompt": "x", "model": "gpt-x"}')" == 404 ]] || fail "model"
[[ "$(status /v1/completions 'not json')" == 400 ]] || fail "bad JSON"

# The official client.
if [[ -n "${SEMMOE_NPM_OPENAI:-}" ]]; then
  node "$OPENAI_CLIENT" "$SEMMOE_NPM_OPENAI" "$HTTP/v1" model >"$TMP/node.out" 2>&1 ||
    fail "openai client: $(cat "$TMP/node.out")"
  node_completion="$(tail -n 1 "$TMP/node.out" | jq -r '.completion')"
  # Its prompt and limit differ from curl's (12 tokens): the first 12 tokens' text is a prefix.
  [[ "$text" == "$node_completion"* ]] || fail "openai client '$node_completion' vs curl '$text'"
  echo "openai client: $(tail -n 1 "$TMP/node.out")"
else
  echo "SKIPPED the openai client: SEMMOE_NPM_OPENAI unset (./semmoe test fetches it)"
fi

# Tools through the real engine: a call forced by name opens in the prompt; the random model's
# continuation is no JSON, so the answer is content — the opening included — whole and streamed.
tool='{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}'
forced="{\"messages\": [{\"role\": \"user\", \"content\": \"Weather?\"}], \"tools\": [$tool],
  \"tool_choice\": {\"type\": \"function\", \"function\": {\"name\": \"get_weather\"}},
  \"max_tokens\": 8, \"temperature\": 0, \"ignore_eos\": true}"
[[ "$(status /v1/chat/completions "$forced")" == 200 ]] || fail "forced tool call: $(cat "$TMP/body")"
content="$(jq -r '.choices[0].message.content' "$TMP/body")"
opening=$'<tool_call>\n{"name": "get_weather", "arguments": '
[[ "$content" == "$opening"* ]] || fail "forced call's content '$content'"
jq -e '.choices[0].finish_reason == "length" and (.choices[0].message.tool_calls == null)' \
  "$TMP/body" >/dev/null || fail "forced call: $(cat "$TMP/body")"
joined="$(curl -sSN -H 'Content-Type: application/json' -d "$(jq -c '. + {stream: true}' <<<"$forced")" \
  "$HTTP/v1/chat/completions" | grep '^data: {' | sed 's/^data: //' | jq -rj '.choices[0].delta.content // ""')"
[[ "$joined" == "$content" ]] || fail "forced call streamed '$joined' != whole '$content'"
[[ "$(status /v1/chat/completions '{"messages": [{"role": "user", "content": "x"}],
  "tool_choice": "required"}')" == 400 ]] || fail "tool_choice without tools"
grep -q "tool calls: parsed as hermes" "$TMP/http/router.log" ||
  fail "no tools line: $(cat "$TMP/http/router.log")"

# Bad tool flags stop the router's start, naming the flag.
engine0="$(jq -r '.engines[0].address' "$EP")"
for flag in --tool_call_parser=pythonic --chat_template="$TMP/missing.jinja"; do
  if "$ROUTER" --model="$TMP/model" --engines="$engine0" --port=0 --http_port=0 "$flag" \
    >"$TMP/bad_router.out" 2>&1; then
    fail "router started with $flag"
  fi
  grep -v "started as" "$TMP/bad_router.out" | grep -q -- "${flag%%=*}: " ||
    fail "$flag: $(cat "$TMP/bad_router.out")"
done

# The official client's function calling, over the scripted model with Qwen3's template.
if [[ -n "${SEMMOE_NPM_OPENAI:-}" && -n "${SEMMOE_QWEN3_TOKENIZER:-}" ]]; then
  "$SCRIPTED_DOOR" --tokenizer_config="$(dirname "$SEMMOE_QWEN3_TOKENIZER")/tokenizer_config.json" \
    --tool_call_parser=hermes --port_file="$TMP/door.port" >"$TMP/door.out" 2>&1 &
  DOOR=$!
  for _ in $(seq 1 100); do [[ -s "$TMP/door.port" ]] && break; sleep 0.1; done
  [[ -s "$TMP/door.port" ]] || fail "scripted door did not start: $(cat "$TMP/door.out")"
  node "$TOOLS_CLIENT" "$SEMMOE_NPM_OPENAI" "http://127.0.0.1:$(cat "$TMP/door.port")/v1" agent \
    >"$TMP/tools.out" 2>&1 || fail "openai client tools: $(cat "$TMP/tools.out")"
  kill "$DOOR"
  echo "openai client tools: $(tail -n 1 "$TMP/tools.out")"
else
  echo "SKIPPED the openai client's tools: SEMMOE_NPM_OPENAI or SEMMOE_QWEN3_TOKENIZER unset (./semmoe test fetches them)"
fi

# A client that hangs up mid-stream: its request is cancelled in the engine.
cancelled() {
  local sum=0 addr
  for addr in $(jq -r '.engines[].address' "$EP"); do
    sum=$((sum + $("$ENGINE_CLIENT" stats --target="$addr" --json | jq '(.cancelled // 0) | tonumber')))
  done
  echo "$sum"
}
before="$(cancelled)"
curl -sSN --max-time 1.5 -H 'Content-Type: application/json' \
  -d '{"prompt": "Once upon a time", "max_tokens": 8000, "ignore_eos": true, "stream": true}' \
  "$HTTP/v1/completions" >"$TMP/hung_up" 2>&1 || true
grep -q '"finish_reason":null' "$TMP/hung_up" || fail "the long request did not stream: $(head -c 300 "$TMP/hung_up")"
for _ in $(seq 1 50); do
  (($(cancelled) > before)) && break
  sleep 0.1
done
(($(cancelled) == before + 1)) || fail "the hung-up request was not cancelled ($(cancelled) vs $before)"

trap - EXIT
stop_cluster http
echo "openai_test: ok"

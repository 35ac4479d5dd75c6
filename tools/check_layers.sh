#!/usr/bin/env bash
# Checks the dependency rules of docs/ARCHITECTURE.md ("Dependency rules") with `bazel query`:
# every rule below names sources that must have no path to the targets it forbids. Bazel
# `visibility` enforces the same rules target by target at build time; this catches a rule made
# too wide. `./semmoe test` runs it after the tests; exit 1 names each path found.
#
#   bash tools/check_layers.sh [bazel flags, e.g. --config=nocuda]
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# The planner's trace analysis, solvers, store, CLI, evaluation and server, and the builders of
# its tables: what engines (and router binaries) must never link.
PLANNER_INTERNALS='//planner/trace:trace_set + //planner/trace:array_trace + //planner/solver/...
  + //planner/store/... + //planner/cli/... + //planner/eval/... + //planner/server/...
  + //planner/affinity:token_affinity_builder + //planner/affinity:layer_affinity'
COMPONENTS='//engine/... + //planner/... + //router/... + //console/... + //tools/...'

BAZEL_FLAGS=("$@")
failures=0
check() {  # check DESCRIPTION FROM TO
  local path err
  err="$(mktemp)"
  if ! path="$(bazel query "${BAZEL_FLAGS[@]}" --noshow_progress "somepath($2, $3)" 2>"$err")"; then
    echo "layers: query failed for '$1':" >&2
    cat "$err" >&2
    rm -f "$err"
    failures=$((failures + 1))
    return
  fi
  rm -f "$err"
  if [[ -n "$path" ]]; then
    echo "layers: $1 — a path exists:" >&2
    sed 's/^/  /' <<<"$path" >&2
    failures=$((failures + 1))
  fi
}

check "the engine depends on no planner internals" '//engine/...' "$PLANNER_INTERNALS"
check "the planner depends on no engine target" '//planner/...' '//engine/...'
check "router binaries and libraries depend on no planner internals" \
  'kind("cc_binary|cc_library", //router/...) except attr(testonly, 1, //router/...)' \
  "$PLANNER_INTERNALS"
check "the router depends on no engine core (only its proto and tokenizer)" \
  'kind("cc_binary|cc_library", //router/...) except attr(testonly, 1, //router/...)' \
  '//engine/parallel/... + //engine/runtime/... + //engine/server/... + //engine/forward/... + //engine/gpu/...'
check "the router uses the text stack, not engine/model" \
  'kind("cc_binary|cc_library", //router/...) except attr(testonly, 1, //router/...)' \
  '//engine/model/... + //kernels/cpu/...'
check "the text stack is below the engine's compute" \
  '//engine/text/... except attr(testonly, 1, //engine/text/...)' \
  '//engine/model/... + //engine/runtime/... + //engine/parallel/... + //engine/forward/... + //engine/gpu/... + //kernels/cpu/...'
check "inside the engine, the core depends on no server (gRPC adapter)" \
  '//engine/model/... + //engine/runtime/... + //engine/parallel/... + //engine/offline/... + //engine/backend/... + //engine/forward/... + //engine/gpu/...' \
  '//engine/server/...'
check "the forward pass is device-neutral: nothing of a GPU below it" \
  '//engine/forward/...' '//engine/gpu/... + //kernels/cuda/... + @local_cuda//...'
check "the engine and the router depend on nothing under tools/" \
  '//engine/... + //router/...' '//tools/...'
check "the router core depends on no door (its gRPC service, its HTTP door)" \
  '//router/core/... except attr(testonly, 1, //router/core/...)' \
  '//router/server/... + //router/http/... + //router/openai/...'
check "the HTTP door reaches the core, never the router's gRPC service" \
  'kind("cc_library", //router/http/...)' '//router/server/... + //router/proto:router_cc_grpc'
check "kernels depend on no component" '//kernels/...' "$COMPONENTS"
check "common depends on no component" '//common/...' "$COMPONENTS + //kernels/..."
# Without the toolkit (--config=nocuda), the CPU product reaches nothing of CUDA: the GPU path
# joins a binary only through if_cuda() (tools/build_defs/cuda.bzl).
if [[ " ${BAZEL_FLAGS[*]} " == *" --config=nocuda "* ]]; then
  check "the CPU product links no CUDA target" \
    '//engine:engine + //planner:planner + //router:router + //console:console + //tools:local_cluster + //tools/demo:demo' \
    '@local_cuda//... + //kernels/cuda/... + //engine/gpu:cuda_backend + //engine/gpu:nccl_communicator'
fi

# Public CUDA launcher headers name CUDA's types through kernels/cuda/launch.h only.
if grep -lE '^#include <(cuda|cublas|nccl|cuda_runtime)' kernels/cuda/*.h >/dev/null 2>&1; then
  echo "layers: public kernels/cuda headers include CUDA headers:" \
    "$(grep -lE '^#include <(cuda|cublas|nccl|cuda_runtime)' kernels/cuda/*.h | tr '\n' ' ')" >&2
  failures=$((failures + 1))
fi

if ((failures > 0)); then
  echo "layers: $failures rule(s) broken (docs/ARCHITECTURE.md, Dependency rules)" >&2
  exit 1
fi
echo "layers: every dependency rule holds"

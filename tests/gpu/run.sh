#!/usr/bin/env bash
# Runs every GPU test binary that tests/gpu/build.sh produced, in one call, on a machine with a
# GPU. Prints each test's output tail, then one "N passed, N failed" line; exits non-zero if any
# failed or none ran. Logs are copied to $OUT (the device tool's result folder) when it is set.
#
#   bash tests/gpu/run.sh [DIR]     (default: the repository's .gpu_tests/)
#   bash .gpu_tests/run.sh          (the copy build.sh leaves there runs its own directory)
set -uo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [[ -d "$script_dir/bin" ]]; then
  default_dir="$script_dir"
else
  default_dir="$script_dir/../../.gpu_tests"
fi
dir="${1:-$default_dir}"
if [[ ! -d "$dir/bin" ]]; then
  echo "gpu run: $dir/bin not found; run tests/gpu/build.sh first (and carry $dir)" >&2
  exit 1
fi
export LD_LIBRARY_PATH="$(cd "$dir/bin" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# What `bazel test` would give the tests: a scratch directory and the shared data build.sh packed.
TEST_TMPDIR="$(mktemp -d)"
export TEST_TMPDIR
[[ -d "$dir/shared/models" ]] && export SEMMOE_SHARED_DIR="$(cd "$dir/shared" && pwd)"
command -v nvidia-smi >/dev/null && nvidia-smi -L

passed=0
failed=0
logs="${OUT:-$dir}/gpu_logs"
mkdir -p "$logs"
for test in "$dir"/bin/*__*; do
  [[ -x "$test" ]] || continue
  name="$(basename "$test")"
  [[ "$name" == bench__* ]] && continue
  if timeout 300 "$test" --gtest_color=no >"$logs/$name.log" 2>&1; then
    passed=$((passed + 1))
    echo "PASSED $name"
  else
    failed=$((failed + 1))
    echo "FAILED $name"
    tail -n 30 "$logs/$name.log"
  fi
done
# Then the benchmarks; their tables go to the summary with the test results.
summary="$logs/summary.txt"
{
  echo "GPU tests: ${passed} passed, ${failed} failed"
  # Each kernel's largest error against its CPU reference (kernels/cuda/testing/error_report.h).
  grep -h "^kernel error:" "$logs"/*.log 2>/dev/null
  for bench in "$dir"/bin/bench__*; do
    [[ -x "$bench" ]] || continue
    echo
    timeout 300 "$bench" --json 2>&1 || echo "$(basename "$bench") failed"
  done
} >"$summary"
cat "$summary"
echo "${passed} passed, ${failed} failed"
((passed > 0 && failed == 0))

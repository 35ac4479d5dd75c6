#!/usr/bin/env bash
# Runs every GPU test binary that tests/gpu/build.sh produced, then the GPU benchmarks, in one
# call, on a machine with a GPU. Prints each test's result (a failure's output tail), then one
# "N passed, N failed" line; exits non-zero if any failed or none ran.
#
#   bash tests/gpu/run.sh [DIR]     (default: the repository's .gpu_tests/)
#   bash .gpu_tests/run.sh          (the copy build.sh leaves there runs its own directory)
#
# Written for the device tool (docs/PERFORMANCE.md, "GPU kernels and the GPU forward"): one
# command of at most 10 minutes, and only 8 files come back from $OUT. So the whole run keeps
# to a budget (GPU_RUN_BUDGET_S, default 540 s, of which the tests may take GPU_TESTS_BUDGET_S,
# 330 s; each test at most GPU_TEST_TIMEOUT_S, 120 s, each benchmark GPU_BENCH_TIMEOUT_S, 200 s;
# what no longer fits is reported as skipped), and it writes two files to $OUT/gpu_logs, updated
# after every step so that a run cut short still returns what it did: summary.txt (results,
# kernel errors, benchmark tables) and tests.log (every log).
set -uo pipefail

start_s=$SECONDS
budget_s="${GPU_RUN_BUDGET_S:-540}"
test_timeout_s="${GPU_TEST_TIMEOUT_S:-120}"
tests_budget_s="${GPU_TESTS_BUDGET_S:-330}"  # the rest is kept for the benchmarks
bench_timeout_s="${GPU_BENCH_TIMEOUT_S:-200}"

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [[ -d "$script_dir/bin" || -f "$script_dir/bin.tar.gz" ]]; then
  default_dir="$script_dir"
else
  default_dir="$script_dir/../../.gpu_tests"
fi
dir="${1:-$default_dir}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# build.sh packs the binaries (they compress about 3x; the device tool carries 64 MiB).
if [[ -f "$dir/bin.tar.gz" ]]; then
  tar -xzf "$dir/bin.tar.gz" -C "$work" || { echo "gpu run: cannot unpack $dir/bin.tar.gz" >&2; exit 1; }
  bin="$work/bin"
elif [[ -d "$dir/bin" ]]; then
  bin="$(cd "$dir/bin" && pwd)"
else
  echo "gpu run: neither $dir/bin nor $dir/bin.tar.gz; run tests/gpu/build.sh first (and carry $dir)" >&2
  exit 1
fi

logs="${OUT:-$dir}/gpu_logs"
mkdir -p "$logs"
summary="$logs/summary.txt"
all_logs="$logs/tests.log"
: >"$summary"
: >"$all_logs"
say() { echo "$*" | tee -a "$summary"; }

export LD_LIBRARY_PATH="$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# NCCL and cuBLAS are too big to carry; the binaries find them through their rpath
# (/usr/local/cuda/lib64). Where the machine keeps them elsewhere (a Python wheel's
# nvidia/nccl/lib, say), look for each library the loader cannot find and add its folder.
mapfile -t missing < <(for b in "$bin"/*__*; do ldd "$b" 2>/dev/null; done |
  awk '/not found/ { print $1 }' | sort -u)
for lib in "${missing[@]}"; do
  found="$(timeout 60 find /usr/local /opt /usr/lib /usr/lib64 /root -name "$lib" -print -quit 2>/dev/null)"
  if [[ -n "$found" ]]; then
    LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(dirname "$found")"
    say "gpu run: $lib from $(dirname "$found")"
  else
    say "gpu run: $lib is not on this machine: the binaries that need it will fail to start"
  fi
done
# What `bazel test` would give the tests: a scratch directory and the shared data build.sh packed.
export TEST_TMPDIR="$work/tmp"
mkdir -p "$TEST_TMPDIR"
[[ -d "$dir/shared/models" ]] && export SEMMOE_SHARED_DIR="$(cd "$dir/shared" && pwd)"
command -v nvidia-smi >/dev/null && nvidia-smi -L | tee -a "$summary"

# Runs one step within what is left of the budget; its output goes to tests.log.
#   step NAME BUDGET_S TIMEOUT_S COMMAND...   BUDGET_S counts from the run's start; sets step_rc
#                                             (124: timed out, 125: skipped for the budget)
step() {
  local name="$1" until_s="$2" limit="$3"
  shift 3
  local left=$((until_s - (SECONDS - start_s)))
  : >"$work/step.log"
  if ((left < 5)); then
    step_rc=125
    return
  fi
  ((limit > left)) && limit=$left
  local t0=$SECONDS
  {
    echo "===== $name (limit ${limit} s)"
    timeout "$limit" "$@" 2>&1
    step_rc=$?
    echo "===== $name: exit $step_rc after $((SECONDS - t0)) s"
  } >"$work/step.log"
  cat "$work/step.log" >>"$all_logs"
}

passed=0
failed=0
skipped=0
# Runs one test binary (with gtest arguments) as a step and counts it under `label`.
run_test() {
  local label="$1" test="$2"
  shift 2
  step "$label" "$tests_budget_s" "$test_timeout_s" "$test" --gtest_color=no "$@"
  if ((step_rc == 125)); then
    skipped=$((skipped + 1))
    say "SKIPPED $label (the tests' ${tests_budget_s} s budget is spent)"
  elif ((step_rc == 0)); then
    passed=$((passed + 1))
    say "PASSED $label"
  else
    failed=$((failed + 1))
    say "FAILED $label (exit $step_rc$( ((step_rc == 124)) && echo ": timed out"))"
    tail -n 30 "$work/step.log"
  fi
  # Each kernel's largest error against its CPU reference (kernels/cuda/testing/error_report.h).
  grep -h "^kernel error:" "$work/step.log" >>"$summary"
}
# How many of a binary's tests a gtest filter selects.
count_tests() { "$1" --gtest_list_tests --gtest_filter="$2" 2>/dev/null | grep -c '^  '; }
# NCCL is the part most likely to hang on a new machine (it probes transports even for one
# rank), and a timeout ends the whole binary: a binary with NCCL tests among others runs them as
# a step of their own, so that a hang there does not take the rest with it.
export NCCL_DEBUG="${NCCL_DEBUG:-WARN}"
for test in "$bin"/*__*; do
  [[ -x "$test" ]] || continue
  name="$(basename "$test")"
  [[ "$name" == bench__* ]] && continue
  if (($(count_tests "$test" '*Nccl*') > 0 && $(count_tests "$test" '-*Nccl*') > 0)); then
    run_test "$name" "$test" --gtest_filter='-*Nccl*'
    run_test "$name[nccl]" "$test" --gtest_filter='*Nccl*'
  else
    run_test "$name" "$test"
  fi
done
say "GPU tests: ${passed} passed, ${failed} failed, ${skipped} skipped"
# Then the benchmarks; their tables go to the summary with the test results.
for bench in "$bin"/bench__*; do
  [[ -x "$bench" ]] || continue
  name="$(basename "$bench")"
  # Line-buffered, so that a benchmark stopped at its limit still leaves the rows it printed.
  line_buffered=()
  command -v stdbuf >/dev/null && line_buffered=(stdbuf -oL -eL)
  step "$name" "$budget_s" "$bench_timeout_s" "${line_buffered[@]}" "$bench" --json
  if ((step_rc == 125)); then
    say "SKIPPED $name (the run's ${budget_s} s budget is spent)"
  else
    { echo; sed '1d;$d' "$work/step.log"; } >>"$summary"
    ((step_rc == 0)) || say "$name failed (exit $step_rc$( ((step_rc == 124)) && echo ": timed out"))"
  fi
done
say "gpu run: $((SECONDS - start_s)) s"
echo "${passed} passed, ${failed} failed"
((passed > 0 && failed == 0 && skipped == 0))

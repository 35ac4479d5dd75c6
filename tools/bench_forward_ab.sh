#!/usr/bin/env bash
# bench_forward_ab.sh: two bench_forward binaries (say, this commit's and the previous one's)
# side by side in one run: each round runs both at once, each pinned to a core of its own, and
# the next round swaps the cores, so both see the same machine at the same time (this VM's speed
# drifts by ±15% within a minute, and separate runs of one binary differ by up to ±35%). Prints,
# for every row (model, phase, batch), B's tokens/s over A's in each round and the median.
#
#   A="/tmp/bench_forward_old --forward=transformer" B="bazel-bin/tools/bench_forward" \
#     ROUNDS=6 tools/bench_forward_ab.sh --model=DIR[,DIR...] [more bench_forward flags]
#
# A and B: a bench_forward binary and its own flags; the arguments go to both. Needs two cores
# that nothing else uses (the forward is single-threaded); build nothing while it runs.
set -euo pipefail

: "${A:?A: the baseline bench_forward command}"
: "${B:?B: the candidate bench_forward command}"
ROUNDS="${ROUNDS:-6}"
if ! [[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]]; then
  echo "bench_forward_ab: ROUNDS must be a positive integer, got '$ROUNDS'" >&2
  exit 2
fi
if (( $(nproc) < 2 )); then
  echo "bench_forward_ab: needs two cores, this machine has $(nproc)" >&2
  exit 2
fi

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
for ((r = 0; r < ROUNDS; ++r)); do
  a_core=$((r % 2)) b_core=$((1 - r % 2))
  # shellcheck disable=SC2086  # A and B are a command and its flags, split on purpose.
  taskset -c "$a_core" $A "$@" >"$out/a$r" 2>&1 &
  a_pid=$!
  # shellcheck disable=SC2086
  taskset -c "$b_core" $B "$@" >"$out/b$r" 2>&1 || { cat "$out/b$r" >&2; exit 1; }
  wait "$a_pid" || { cat "$out/a$r" >&2; exit 1; }
  echo "round $((r + 1))/$ROUNDS done (A on core $a_core, B on core $b_core)" >&2
done

# Rows: "CONTENDER PHASE BATCH TOKENS/S ..." (bench_forward's table).
awk -v rounds="$ROUNDS" '
  $1 ~ /^[0-9]+$/ && ($2 == "prefill" || $2 == "decode") && $3 ~ /^[0-9]+$/ {
    n = split(FILENAME, parts, "/"); f = parts[n]; s = substr(f, 1, 1); r = substr(f, 2)
    key = $1 " " $2 " " $3
    if (!(key in seen)) { seen[key] = 1; order[++rows] = key }
    tps[s, r, key] = $4
  }
  function median(v, n,   i, j, t) {
    for (i = 2; i <= n; ++i) for (j = i; j > 1 && v[j - 1] > v[j]; --j) {
      t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
    }
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
  }
  END {
    printf "%-6s %-8s %-6s  %-8s  %s\n", "model", "phase", "batch", "median", "B/A per round"
    for (i = 1; i <= rows; ++i) {
      key = order[i]; n = 0; line = ""
      for (r = 0; r < rounds; ++r) {
        if (!(("a", r, key) in tps) || !(("b", r, key) in tps) || tps["a", r, key] == 0) continue
        v[++n] = tps["b", r, key] / tps["a", r, key]; line = line sprintf(" %.2f", v[n])
      }
      if (n == 0) { printf "%s: missing from A or B\n", key; continue }
      split(key, k, " ")
      printf "%-6s %-8s %-6s  %.2fx    %s\n", k[1], k[2], k[3], median(v, n), line
    }
  }' "$out"/a* "$out"/b*

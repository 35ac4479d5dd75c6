# Sourced by the planner's held-out studies (tools/planner_heldout.sh, tools/planner_topology.sh) and
# the scale model's (tools/simulate_scale.sh, tools/simulate_sensitivity.sh):
# the shared model, its held-out reference trace and the profile trace, the opt binaries.
# `heldout_setup OUT` sets SHARED, MODEL, HELDOUT, PROFILE, BIN, P (the planner) and E (the engine),
# checks the binaries and the shared model, and traces the profile prompts
# (../shared/data/prompts.jsonl, 1,500 prompts, 5 domains) into OUT/prompts.trace once.
heldout_setup() {
  local out="$1"
  SHARED="${SEMMOE_SHARED_DIR:-../shared}"
  MODEL="$SHARED/models/qwen3-moe-a"
  HELDOUT="$MODEL/reference/trace"
  BIN=bazel-out/k8-opt/bin
  P="$BIN/planner/planner"
  E="$BIN/engine/engine"
  local b
  for b in "$E" "$P"; do
    [[ -x "$b" ]] || { echo "$b is missing: bazel build -c opt --config=opt //engine //planner" >&2; exit 1; }
  done
  [[ -d "$HELDOUT" ]] || { echo "no shared model at $MODEL (set SEMMOE_SHARED_DIR)" >&2; exit 1; }
  mkdir -p "$out"
  PROFILE="$out/prompts.trace"
  if [[ ! -s "$PROFILE" ]]; then
    echo "tracing the profile prompts on one device (about 2 minutes)..." >&2
    "$E" trace --model="$MODEL" --prompts="$SHARED/data/prompts.jsonl" --out="$PROFILE.tmp" >&2
    mv "$PROFILE.tmp" "$PROFILE"
  fi
}

# `simulate_setup`: sets SIM (the scale model's opt binary) and checks it is built.
simulate_setup() {
  SIM=bazel-out/k8-opt/bin/tools/simulate
  [[ -x "$SIM" ]] || { echo "$SIM is missing: bazel build -c opt --config=opt //tools:simulate" >&2; exit 1; }
}

#!/usr/bin/env bash
# The planner's held-out protocol (docs/PLANNER.md, "Held-out protocol"): plan on one prompt set,
# evaluate on another the planner has not seen. Profile: `engine trace` over
# ../shared/data/prompts.jsonl (1,500 prompts, 5 domains); evaluated: the shared model's
# reference trace (2,000 other prompts, 6 domains, one of them — perl — absent from the profile).
#
#   tools/planner_heldout.sh [--devices "4 8"] [--seeds "1 2 3 4 5"] [--out DIR]
#
# Prints, per G: every algorithm side by side (`planner eval`, with the DP fitted optimum and
# capacity bound and the TP balanced bound), the Pareto curve of LAR against expert-load
# imbalance, the DP router rule of `semantic` and `paper` over several seeds (one seed's
# comparison is a draw: the paper's algorithm is randomised, and our starts are seeded), and (for
# the last G) the zero-shot matrix by domain. Needs an opt build of
# //engine and //planner (`bazel build -c opt --config=opt //engine //planner`).
set -euo pipefail

cd "$(dirname "$0")/.."
DEVICES="4 8"
SEEDS="1 2 3 4 5"
OUT="${TMPDIR:-/tmp}/semmoe-heldout"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --devices) DEVICES="$2"; shift 2 ;;
    --seeds) SEEDS="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    *) echo "usage: $0 [--devices \"4 8\"] [--seeds \"1 2 3 4 5\"] [--out DIR]" >&2; exit 2 ;;
  esac
done
source tools/heldout_lib.sh
heldout_setup "$OUT"
DB="$OUT/heldout.db"
rm -f "$DB" "$DB-wal" "$DB-shm"
build() { "$P" build --db="$DB" --model=qwen3-moe-a --traces="$PROFILE" --seed=1 --quiet "$@" >/dev/null; }
v=0
for g in $DEVICES; do
  first=$((v + 1))
  build --devices="$g" --mode=dp --algo=semantic --name="semantic-dp-g$g"
  build --devices="$g" --mode=dp --algo=semantic --expert_balance_eps=off --name="semantic-dp-g$g-unbal"
  for algo in paper coact eplb random vanilla; do build --devices="$g" --mode=dp --algo="$algo"; done
  build --devices="$g" --mode=tp --algo=semantic
  v=$((v + 8))
  echo "== G=$g: profile prompts.jsonl, evaluated on the reference trace =="
  "$P" eval --db="$DB" --versions="$(seq -s, "$first" "$v")" --traces="$HELDOUT" \
    --profile="$PROFILE" --balanced_bound --dp_bounds --quiet
  "$P" eval --db="$DB" --versions="$(seq -s, "$first" "$v")" --traces="$HELDOUT" \
    --profile="$PROFILE" --json --quiet >"$OUT/eval-g$g.json"
  echo "== G=$g: expert-load balance (DP) =="
  "$P" eval --pareto --profile="$PROFILE" --traces="$HELDOUT" --devices="$g" --seed=1
  echo "== G=$g: DP router rule by seed (semantic against paper) =="
  seeds_first=$((v + 1))
  for seed in $SEEDS; do
    for algo in semantic paper; do
      "$P" build --db="$DB" --model=qwen3-moe-a --traces="$PROFILE" --seed="$seed" --quiet \
        --devices="$g" --mode=dp --algo="$algo" --name="$algo-dp-g$g-seed$seed" >/dev/null
      v=$((v + 1))
    done
  done
  "$P" eval --db="$DB" --versions="$(seq -s, "$seeds_first" "$v")" --traces="$HELDOUT" \
    --profile="$PROFILE" --quiet | awk '
      NR > 1 { split($2, n, "-dp-"); a = n[1]; s = $2; sub(/.*seed/, "", s); lar = $5 + 0
               line[a] = line[a] sprintf(" %s:%.4f", s, lar); sum[a] += lar; cnt[a]++
               if (!(a in lo) || lar < lo[a]) lo[a] = lar
               if (!(a in hi) || lar > hi[a]) hi[a] = lar
               if (a == "semantic") sem[s] = lar; else pap[s] = lar }
      END { for (a in sum) printf "%-9s mean %.4f  min %.4f  max %.4f  by seed%s\n", a,
                                  sum[a] / cnt[a], lo[a], hi[a], line[a]
            w = 0; for (s in sem) if (sem[s] >= pap[s]) w++
            printf "semantic >= paper on %d of %d seeds\n", w, cnt["semantic"] }'
  last_g="$g"
done
echo "== G=$last_g: zero-shot by domain =="
"$P" eval --zero_shot --profile="$PROFILE" --traces="$HELDOUT" --devices="$last_g" \
  --domains="$SHARED/data/prompts.jsonl" --seed=1

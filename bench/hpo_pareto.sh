#!/usr/bin/env bash
# Several objectives: the hypervolume (fixed reference points: ZDT (1.1, 11), DTLZ2 (2.5, 2.5, 2.5))
# of baton's nsga2, motpe and random (build/bin/hpo_bench) against Optuna 5's NSGAIISampler,
# TPESampler (MOTPE) and RandomSampler (.venv-peers/, bench/peers/optuna_bench.py) on ZDT1, ZDT2,
# ZDT3 (30-d) and DTLZ2 (3 objectives, 12-d), after 100, 300 and 1,000 trials (prefixes of one
# run per seed), over SEEDS seeds; prints the table of bench/README.md and the cost per trial.
#
#   bench/hpo_pareto.sh [SEEDS] [OUT_DIR]          # SEEDS default 20; JSON lines kept in OUT_DIR
#   HPO_TRIALS=300 ...                             # shorter runs (the 1,000 column is then absent)
#   HPO_OPTUNA_MOTPE_TRIALS=300 ...                # Optuna's MOTPE costs seconds per trial at 1,000
#   HPO_FUNCTIONS="zdt1 dtlz2" ...
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seeds=${1:-20}
out=${2:-$(mktemp -d)}
trials=${HPO_TRIALS:-1000}
motpe_trials=${HPO_OPTUNA_MOTPE_TRIALS:-$trials}
functions=${HPO_FUNCTIONS:-zdt1 zdt2 zdt3 dtlz2}
mkdir -p "$out"
bench="$root/build/bin/hpo_bench"
[ -x "$bench" ] || { echo "hpo_pareto: build/bin/hpo_bench is missing (make build)"; exit 2; }
venv_python=$("$root/bench/peers/make-venv.sh" | tail -n1)
for f in $functions; do
  for s in nsga2 motpe random; do
    "$bench" --function "$f" --trials "$trials" --seeds "$seeds" --strategy $s >"$out/baton-$s-$f.jsonl"
  done
  for s in nsga2 random; do
    "$venv_python" "$root/bench/peers/optuna_bench.py" --function "$f" --trials "$trials" --seeds "$seeds" \
      --sampler $s >"$out/optuna-$s-$f.jsonl"
  done
  "$venv_python" "$root/bench/peers/optuna_bench.py" --function "$f" --trials "$motpe_trials" --seeds "$seeds" \
    --sampler motpe >"$out/optuna-motpe-$f.jsonl"
done
python3 "$root/bench/hpo_pareto_table.py" "$out"
echo "(JSON lines in $out)"

#!/usr/bin/env bash
# Search quality at 30, 60 and 100 trials over 20 seeds: baton's TPE and GP (build/bin/hpo_bench)
# against Optuna's TPE (the pinned current release in .venv-peers/, and Debian's 3.1) and its
# GPSampler, on branin, hartmann6 and the mixed space; prints the table of bench/README.md
# (median and worst best value; lower is better) and the suggestion costs.
#
#   bench/hpo_quality.sh [SEEDS] [OUT_DIR]       # SEEDS default 20; JSON lines kept in OUT_DIR
#   HPO_FIRST_SEED=100 bench/hpo_quality.sh 60   # seeds 100..159 (held out: not the ones tuned on)
#   HPO_PEER_GP=0 ...                            # without Optuna's GPSampler (45 minutes for hartmann6)
#   HPO_GROUPS=20 ...                            # also issue 20's test per group of 20 seeds
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seeds=${1:-20}
first=${HPO_FIRST_SEED:-0}
peer_gp=${HPO_PEER_GP:-1}
out=${2:-$(mktemp -d)}
mkdir -p "$out"
bench="$root/build/bin/hpo_bench"
[ -x "$bench" ] || { echo "hpo_quality: build/bin/hpo_bench is missing (make build)"; exit 2; }
venv_python=$("$root/bench/peers/make-venv.sh" | tail -n1)
for f in branin hartmann6 mixed; do
  "$bench" --function $f --trials 100 --seed "$first" --seeds "$seeds" --strategy tpe >"$out/baton-tpe-$f.jsonl"
  "$bench" --function $f --trials 60 --seed "$first" --seeds "$seeds" --strategy gp >"$out/baton-gp-$f.jsonl"
  "$venv_python" "$root/bench/peers/optuna_bench.py" --function $f --trials 100 --seed "$first" --seeds "$seeds" >"$out/optuna5-tpe-$f.jsonl"
  if /usr/bin/python3 -c 'import optuna' 2>/dev/null; then
    /usr/bin/python3 "$root/bench/peers/optuna_bench.py" --function $f --trials 100 --seed "$first" --seeds "$seeds" >"$out/optuna3-tpe-$f.jsonl"
  fi
  [ $f = mixed ] || [ "$peer_gp" = 0 ] && continue  # GPSampler on the mixed space: not measured (minutes per seed)
  "$venv_python" "$root/bench/peers/optuna_bench.py" --function $f --trials 60 --seed "$first" --seeds "$seeds" --sampler gp >"$out/optuna5-gp-$f.jsonl"
done
for s in tpe gp; do  # 4 parallel workers: 4 suggestions out at a time (sequential: the rows above)
  "$bench" --function hartmann6 --trials 60 --seed "$first" --seeds "$seeds" --strategy $s --parallel 4 >"$out/baton-$s-hartmann6-p4.jsonl"
done
python3 "$root/bench/hpo_table.py" "$out" ${HPO_GROUPS:+--groups "$HPO_GROUPS"}
echo "(JSON lines in $out)"

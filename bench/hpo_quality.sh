#!/usr/bin/env bash
# Search quality at 30, 60 and 100 trials over 20 seeds: baton's TPE and GP (build/bin/hpo_bench)
# against Optuna's TPE (the pinned current release in .venv-peers/, and Debian's 3.1) and its
# GPSampler, on branin, hartmann6 and the mixed space; prints the table of bench/README.md
# (median and worst best value; lower is better) and the suggestion costs.
#
#   bench/hpo_quality.sh [SEEDS] [OUT_DIR]       # SEEDS default 20; JSON lines kept in OUT_DIR
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seeds=${1:-20}
out=${2:-$(mktemp -d)}
mkdir -p "$out"
bench="$root/build/bin/hpo_bench"
[ -x "$bench" ] || { echo "hpo_quality: build/bin/hpo_bench is missing (make build)"; exit 2; }
venv_python=$("$root/bench/peers/make-venv.sh" | tail -n1)
for f in branin hartmann6 mixed; do
  "$bench" --function $f --trials 100 --seeds "$seeds" --strategy tpe >"$out/baton-tpe-$f.jsonl"
  "$bench" --function $f --trials 60 --seeds "$seeds" --strategy gp >"$out/baton-gp-$f.jsonl"
  "$venv_python" "$root/bench/peers/optuna_bench.py" --function $f --trials 100 --seeds "$seeds" >"$out/optuna5-tpe-$f.jsonl"
  if /usr/bin/python3 -c 'import optuna' 2>/dev/null; then
    /usr/bin/python3 "$root/bench/peers/optuna_bench.py" --function $f --trials 100 --seeds "$seeds" >"$out/optuna3-tpe-$f.jsonl"
  fi
  [ $f = mixed ] && continue  # GPSampler on the mixed space: not measured (minutes per seed)
  "$venv_python" "$root/bench/peers/optuna_bench.py" --function $f --trials 60 --seeds "$seeds" --sampler gp >"$out/optuna5-gp-$f.jsonl"
done
for p in 1 4; do  # parallel workers: the same search with 4 suggestions out at a time
  for s in tpe gp; do
    "$bench" --function hartmann6 --trials 60 --seeds "$seeds" --strategy $s --parallel $p >"$out/baton-$s-hartmann6-p$p.jsonl"
  done
done
python3 "$root/bench/hpo_table.py" "$out"
echo "(JSON lines in $out)"

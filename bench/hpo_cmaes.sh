#!/usr/bin/env bash
# CMA-ES: baton's cmaes (build/bin/hpo_bench) against Optuna 5's CmaEsSampler with IPOP restarts
# (the cmaes package; .venv-peers/, bench/peers/optuna_bench.py) on sphere and rosenbrock (10-d)
# and hartmann6, at 100 and 300 trials over SEEDS seeds from FIRST: the median and worst best
# value (lower is better).
#
#   bench/hpo_cmaes.sh [SEEDS] [FIRST]     # 20 seeds from 0 by default; FIRST=100: held-out seeds
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seeds=${1:-20}
first=${2:-0}
bench="$root/build/bin/hpo_bench"
[ -x "$bench" ] || { echo "hpo_cmaes: build/bin/hpo_bench is missing (make build)"; exit 2; }
venv_python=$("$root/bench/peers/make-venv.sh" | tail -n1)
stats='import json, statistics, sys
v = [json.loads(l)["best"] for l in sys.stdin if "seed" in json.loads(l)]
print(f"{statistics.median(v):.4g} | {max(v):.4g}")'
echo "| function | trials | baton cmaes median | worst | Optuna CmaEsSampler median | worst |"
echo "|---|---:|---:|---:|---:|---:|"
for f in sphere rosenbrock hartmann6; do
  for n in 100 300; do
    b=$("$bench" --function $f --trials $n --seeds "$seeds" --seed "$first" --strategy cmaes | python3 -c "$stats")
    o=$("$venv_python" "$root/bench/peers/optuna_bench.py" --function $f --trials $n --seeds "$seeds" --seed "$first" \
      --sampler cmaes 2>/dev/null | python3 -c "$stats")
    echo "| $f | $n | $b | $o |"
  done
done

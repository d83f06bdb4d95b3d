#!/usr/bin/env bash
# Constraints: the best feasible value (lower is better) of baton's tpe and gp (build/bin/hpo_bench)
# against Optuna 5's TPESampler and GPSampler with constraints_func (.venv-peers/), at 60 trials
# over SEEDS seeds from FIRST, on
#   branin_constrained:    branin with (x1 - 2.5)^2 + (x2 - 7.5)^2 <= 50 (one of its 3 minima, 0.397887, is feasible)
#   hartmann6_constrained: hartmann6 with |x|^2 <= 1 (BoTorch's; the minimum -3.32237 is feasible)
#
#   bench/hpo_constrained.sh [SEEDS] [FIRST]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seeds=${1:-20}
first=${2:-0}
bench="$root/build/bin/hpo_bench"
[ -x "$bench" ] || { echo "hpo_constrained: build/bin/hpo_bench is missing (make build)"; exit 2; }
venv_python=$("$root/bench/peers/make-venv.sh" | tail -n1)
stats='import json, statistics, sys
v = [json.loads(l)["best"] for l in sys.stdin if "seed" in json.loads(l)]
print(f"{statistics.median(v):.6g} | {max(v):.6g}")'
echo "| function | sampler | baton median | worst | Optuna median | worst |"
echo "|---|---|---:|---:|---:|---:|"
for f in branin_constrained hartmann6_constrained; do
  for s in tpe gp; do
    b=$("$bench" --function $f --trials 60 --seeds "$seeds" --seed "$first" --strategy $s | python3 -c "$stats")
    o=$("$venv_python" "$root/bench/peers/optuna_bench.py" --function $f --trials 60 --seeds "$seeds" --seed "$first" \
      --sampler $s 2>/dev/null | python3 -c "$stats")
    echo "| $f | $s | $b | $o |"
  done
done

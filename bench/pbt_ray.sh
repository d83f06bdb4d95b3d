#!/usr/bin/env bash
# Population-based training: `baton search --strategy pbt` against Ray Tune's PopulationBasedTraining
# (ray[tune] in .venv-peers/, bench/peers/ray_pbt.py) on the same recipe (bench/pbt_fashion.yaml:
# Fashion-MNIST, FashionCNN, SGD at a constant lr, batch 128, 1,000 batches per trial, one thread per
# trial, two trials at once) and the same PBT (population 8, interval 250 batches, quantile 0.25,
# perturb 0.8:1.2, resample probability 0.25, lr and momentum explored, synchronous), SEEDS seeds,
# alternating: each one's best final test accuracy and wall time, then the medians and the ratio.
#
#   bench/pbt_ray.sh [SEEDS]     # 5 by default
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seeds=${1:-5}
baton="$root/build/bin/baton"
[ -x "$baton" ] || { echo "pbt_ray: build/bin/baton is missing (make build)"; exit 2; }
venv_python=$("$root/bench/peers/make-venv.sh" | tail -n1)
"$venv_python" -c "import ray.tune" 2>/dev/null || "$(dirname "$venv_python")/pip" install -q "ray[tune]==2.60.0"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "| seed | baton best accuracy | baton wall s | Ray Tune best accuracy | Ray wall s | wall ratio (baton / Ray) |"
echo "|---:|---:|---:|---:|---:|---:|"
for seed in $(seq 0 $((seeds - 1))); do
  start=$(date +%s.%N)
  "$baton" search "$root/bench/pbt_space.yaml" --recipe "$root/bench/pbt_fashion.yaml" --set seed="$seed" \
    --strategy pbt --strategy-option population=8,interval=250ba,quantile=0.25,perturb=0.8:1.2,resample_probability=0.25 \
    --parallel 2 --seed "$seed" --run-dir "$tmp/b$seed" >"$tmp/b$seed.log" 2>&1
  b_wall=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$start" "$(date +%s.%N)")
  b_acc=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['best']['value'])" "$tmp/b$seed/summary.json")
  r=$("$venv_python" "$root/bench/peers/ray_pbt.py" --population 8 --interval 250 --batches 1000 --seed "$seed" \
    --cpus 2 2>"$tmp/r$seed.err" | tail -n1)
  r_acc=$(python3 -c "import json, sys; print(json.loads(sys.argv[1])['best_accuracy'])" "$r")
  r_wall=$(python3 -c "import json, sys; print(json.loads(sys.argv[1])['wall_s'])" "$r")
  echo "| $seed | $b_acc | $b_wall | $r_acc | $r_wall | $(python3 -c "print(f'{$b_wall / $r_wall:.2f}')") |"
done

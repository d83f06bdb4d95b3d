#!/usr/bin/env bash
# The main job's accuracy (label slow): the default recipe reaches >= 87% test accuracy after one
# epoch and >= 91% after three. Usage: fashion_accuracy.sh BATON_BINARY SOURCE_DIR
set -euo pipefail
baton=$1
src=$2
source "$(dirname "$0")/../common/lib.sh"
require_fashion
"$baton" train "$src/recipes/fashion_mnist.yaml" --set progress_bar=false --run-dir "$tmp/run" >"$tmp/out"
python3 - "$tmp/run/metrics.jsonl" "$tmp/run/summary.json" <<'PY'
import json, sys
evals = [json.loads(l) for l in open(sys.argv[1]) if '"eval/accuracy"' in l]
summary = json.load(open(sys.argv[2]))
first, last = evals[0]["eval/accuracy"], summary["metrics"]["eval/accuracy"]
print(f"after 1 epoch {first:.4f} (goal 0.87), after 3 epochs {last:.4f} (goal 0.91), {summary['samples_per_s']:.0f} samples/s")
sys.exit(0 if first >= 0.87 and last >= 0.91 else 1)
PY

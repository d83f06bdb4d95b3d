#!/usr/bin/env bash
# baton against the peer (PyTorch eager from Python, bench/peers/pytorch_fashion.py) on the
# same task: the FashionCNN on Fashion-MNIST, 300 steps of batch 128, samples/s in training.
# Runs alternate (baton, peer, baton, peer, …) so that both see the same machine; prints every run,
# the medians and the ratio, and a last line of JSON.
#
#   bench/peer_fashion.sh [REPS] [STEPS]       (defaults: 3, 300)
#   BATON_SET=precision=fp32 bench/peer_fashion.sh   (one more --set for baton)
#
# baton runs with make demo's defaults (recipes/fashion_mnist.yaml); the peer runs --tuned (one
# OpenBLAS thread) with Debian's python3-torch and the OpenBLAS kernels baton uses (OPENBLAS_CORETYPE
# from `baton --version`: where OpenBLAS mistakes this processor for a Prescott, baton picks the
# kernels its instruction sets allow, and the peer is given the same).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
reps=${1:-3}
steps=${2:-300}
peer=${PEER:-$root/bench/peers/pytorch_fashion.py}
baton=$root/build/bin/baton
[ -x "$baton" ] || { echo "peer_fashion: build first (make build)" >&2; exit 2; }
[ -f "$peer" ] || { echo "peer_fashion: no peer script at $peer (set PEER=...)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
core=$("$baton" --version | grep -o "OpenBLAS [A-Za-z0-9]*" | cut -d' ' -f2 || true)

ours=()
theirs=()
for i in $(seq "$reps"); do
  "$baton" train "$root/recipes/fashion_mnist.yaml" --set max_duration="${steps}ba" --set eval_interval=0 \
    ${BATON_SET:+--set "$BATON_SET"} --run-dir "$tmp/run" --overwrite >"$tmp/baton.out"
  b=$(python3 -c "import json;print(round(json.load(open('$tmp/run/summary.json'))['samples_per_s'],1))")
  p=$(env ${core:+OPENBLAS_CORETYPE=$core} /usr/bin/python3 "$peer" --max-steps "$steps" --tuned 2>/dev/null | tail -1 |
      python3 -c "import json,sys;print(json.loads(sys.stdin.read())['samples_per_s'])")
  ours+=("$b")
  theirs+=("$p")
  echo "rep $i: baton $b samples/s, peer (tuned) $p samples/s"
done
precision=$(grep -o "precision [a-z0-9_]*" "$tmp/baton.out" | head -1)
python3 - "$precision" "${ours[*]}" "${theirs[*]}" <<'PY'
import json, statistics, sys
precision, ours, theirs = sys.argv[1], [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()]
b, p = statistics.median(ours), statistics.median(theirs)
print(f"median: baton {b:.0f} samples/s ({precision}), peer {p:.0f} samples/s, ratio {b / p:.2f}")
print(json.dumps({"baton_samples_per_s": b, "peer_samples_per_s": p, "ratio": round(b / p, 3), "baton": precision}))
PY

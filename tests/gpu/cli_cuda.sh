#!/usr/bin/env bash
# baton eval, predict and export with --device cuda (label gpu): a run trained on the GPU is
# evaluated, predicted and exported there, and gives what the same commands give on the CPU
# (accuracy to 3 decimals, the same predicted classes for 99.9% of the test set, a TorchScript file
# whose outputs on the CPU match). Exit 77 (skipped) with the reason where there is no CUDA device.
# Usage: cli_cuda.sh BATON_BINARY SOURCE_DIR
set -uo pipefail
baton=$1
src=$2
# shellcheck source=../common/lib.sh
source "$(dirname "$0")/../common/lib.sh"
require_cuda "$baton"
require_fashion
recipe=$src/recipes/fashion_mnist.yaml

"$baton" train "$recipe" --set device=cuda --set max_duration=200ba --set eval_interval=0 --set progress_bar=false \
  --run-dir "$tmp/run" >"$tmp/train.out" 2>&1 || { fail "training on cuda"; cat "$tmp/train.out"; }

accuracy() { grep -o 'eval/accuracy[^0-9]*[0-9.]*' "$1" | grep -o '[0-9.]*$' | head -1; }
for device in cuda cpu; do
  "$baton" eval "$recipe" --load "$tmp/run/model.pt" --device "$device" >"$tmp/eval-$device.out" 2>&1 ||
    { fail "baton eval --device $device"; cat "$tmp/eval-$device.out"; }
  "$baton" predict "$recipe" --load "$tmp/run/model.pt" --device "$device" --out "$tmp/p-$device.npy" \
    >"$tmp/predict-$device.out" 2>&1 || { fail "baton predict --device $device"; cat "$tmp/predict-$device.out"; }
done
a_gpu=$(accuracy "$tmp/eval-cuda.out")
a_cpu=$(accuracy "$tmp/eval-cpu.out")
python3 -c "import sys; sys.exit(0 if abs(float('$a_gpu' or 0) - float('$a_cpu' or 1)) < 1e-3 else 1)" ||
  fail "eval/accuracy on cuda $a_gpu, on the CPU $a_cpu"
python3 - "$tmp/p-cuda.npy" "$tmp/p-cpu.npy" <<'PY' || fail "predictions on cuda and on the CPU differ"
import ast, struct, sys
def load(path):
    b = open(path, "rb").read()
    n = struct.unpack("<H", b[8:10])[0]
    h = ast.literal_eval(b[10:10 + n].decode())
    rows, cols = h["shape"]
    v = struct.unpack("<%df" % (rows * cols), b[10 + n:10 + n + 4 * rows * cols])
    return [max(range(cols), key=lambda j: v[i * cols + j]) for i in range(rows)]
a, b = load(sys.argv[1]), load(sys.argv[2])
same = sum(x == y for x, y in zip(a, b)) / len(a)
print("the same class for %.4f of %d examples" % (same, len(a)))
sys.exit(0 if len(a) == len(b) == 10000 and same >= 0.999 else 1)
PY
"$baton" export "$tmp/run/checkpoints/latest" --torchscript "$tmp/model.ts" --device cuda >"$tmp/export.out" 2>&1 &&
  [ -s "$tmp/model.ts" ] || { fail "baton export --device cuda"; cat "$tmp/export.out"; }
if [ "$failures" -eq 0 ]; then
  echo "cli_cuda: ok (eval/accuracy $a_gpu on cuda, $a_cpu on the CPU)"
  exit 0
fi
exit 1

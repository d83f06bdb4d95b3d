#!/usr/bin/env bash
# baton's command line on bad input: each case is one short error on stderr (at most 3 lines,
# no LibTorch stack), an exit code below 128 (2: usage or recipe, 1: the run failed), and it
# names what and where. Also a short real run: the run directory gets its files.
# Usage: cli_test.sh BATON_BINARY SOURCE_DIR
set -uo pipefail
baton=$1
src=$2
source "$(dirname "$0")/../common/lib.sh"
EXPECT_TIMEOUT=120  # some cases train a few steps before their error


cat >"$tmp/typo.yaml" <<'Y'
max_duration: 1ep
optimizer:
  name: sgd
  lrr: 0.1
Y
expect 2 "typo.yaml:4:3: unknown key 'optimizer.lrr'" -- "$baton" train "$tmp/typo.yaml"
expect 2 "missing.yaml: cannot open the recipe" -- "$baton" train "$tmp/missing.yaml"
mkdir -p "$tmp/folder.yaml"
expect 2 "folder.yaml: a folder, not a recipe file" -- "$baton" train "$tmp/folder.yaml"
printf 'seed: 1\nseed: 2\n' >"$tmp/twice.yaml"
expect 2 "twice.yaml:2:1: key 'seed' is given twice (first at line 1)" -- "$baton" train "$tmp/twice.yaml"
printf 'model: [unclosed\n' >"$tmp/broken.yaml"
expect 2 "broken.yaml:2:1: not valid YAML" -- "$baton" train "$tmp/broken.yaml"
expect 2 "--set optimizer.name: unknown optimizer 'lion'" -- "$baton" train "$src/recipes/fashion_mnist.yaml" --set optimizer.name=lion
expect 2 "unknown model 'vgg'" -- "$baton" train "$src/recipes/fashion_mnist.yaml" --set model.name=vgg
expect 2 "--set max_duration: invalid time 'three'" -- "$baton" train "$src/recipes/fashion_mnist.yaml" --set max_duration=three
expect 2 "train-images-idx3-ubyte.gz: not found; install Debian's dataset-fashion-mnist" -- "$baton" train "$src/recipes/fashion_mnist.yaml" --set data.dir="$tmp"
expect 2 "frobnicate" -- "$baton" frobnicate
expect 2 "(baton train --help)" -- "$baton" train "$src/recipes/fashion_mnist.yaml" --frobnicate
[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "^baton: " "$tmp/err" || { echo "FAIL: a usage error is not one line starting baton:"; cat "$tmp/err"; failures=$((failures + 1)); }
printf 'optimizer:\n  name: sgd\n  lr: .nan\n' >"$tmp/nan.yaml"
expect 2 "nan.yaml:3:7: optimizer.lr: expected a finite number, got '.nan'" -- "$baton" train "$tmp/nan.yaml"
expect 2 "--set optimizer.lr: expected a finite number, got '.inf'" -- "$baton" train "$src/recipes/fashion_mnist.yaml" --set optimizer.lr=.inf
printf 'not an idx file at all' >"$tmp/corrupt.idx"
cat >"$tmp/files.yaml" <<Y
data: {dataset: files, train_inputs: $tmp/corrupt.idx, train_labels: $tmp/corrupt.idx}
Y
expect 2 "data.train_inputs: $tmp/corrupt.idx: not an IDX file" -- "$baton" train "$tmp/files.yaml"

# Devices and precision this machine or this LibTorch cannot run: exit 2, nothing written.
expect 2 "--set device: 'tpu': unknown device (expected auto, cpu, cuda or cuda:N)" -- "$baton" train "$src/recipes/fashion_mnist.yaml" --set device=tpu --run-dir "$tmp/dev"
printf 'device: cuda:7\nmax_duration: 1ba\n' >"$tmp/gpu.yaml"
expect 2 "gpu.yaml:1:9: device: 'cuda:7': " -- "$baton" train "$tmp/gpu.yaml" --run-dir "$tmp/dev"
expect 2 "--set precision: amp_fp16 needs a CUDA device" -- "$baton" train "$src/recipes/fashion_mnist.yaml" --set device=cpu --set precision=amp_fp16 --run-dir "$tmp/dev"
expect 2 "--set log_interval: expected a whole number of batches of at least 1, or auto" -- "$baton" train "$src/recipes/fashion_mnist.yaml" --set log_interval=0 --run-dir "$tmp/dev"
expect 2 "--set ddp_backend: expected auto, nccl or mpi, got 'gloo'" -- "$baton" train "$src/recipes/fashion_mnist.yaml" --set ddp_backend=gloo --run-dir "$tmp/dev"
expect 2 "--device 'tpu': unknown device" -- "$baton" eval "$src/recipes/fashion_mnist.yaml" --load "$tmp/none.pt" --device tpu
expect 2 "typo.yaml: neither a baton checkpoint, a model.pt written by baton train, nor safetensors" -- "$baton" eval "$src/recipes/fashion_mnist.yaml" --load "$tmp/typo.yaml"
expect 2 "missing.pt: cannot open the weights" -- "$baton" predict "$src/recipes/fashion_mnist.yaml" --load "$tmp/missing.pt"
expect 2 "--device 'cuda:7': " -- "$baton" predict "$src/recipes/fashion_mnist.yaml" --load "$tmp/none.pt" --device cuda:7
expect 2 "--device 'cuda:7': " -- "$baton" export "$tmp/none.ckpt" --torchscript "$tmp/none.ts" --device cuda:7
[ ! -e "$tmp/dev" ] && [ ! -e "$tmp/none.ts" ] || { echo "FAIL: a refused device left files behind"; failures=$((failures + 1)); }

if [ -d /usr/share/datasets/fashion-mnist ]; then
  # A model whose input does not fit the data: mlp built for the data, but fashion_cnn with 3 channels cannot be asked for,
  # so feed mlp-shaped weights to eval instead.
  "$baton" train "$src/recipes/fashion_mnist.yaml" --set max_duration=20ba --set eval_interval=0 --set progress_bar=false \
    --run-dir "$tmp/run" >"$tmp/train.out" 2>&1 || { echo "FAIL: a short run failed"; cat "$tmp/train.out"; failures=$((failures + 1)); }
  for f in recipe.yaml metrics.jsonl summary.json model.pt checkpoints/latest checkpoints/ep0-ba20.ckpt; do
    [ -s "$tmp/run/$f" ] || { echo "FAIL: the run directory has no $f"; failures=$((failures + 1)); }
  done
  grep -q '"steps": 20' "$tmp/run/summary.json" || { echo "FAIL: summary.json:"; cat "$tmp/run/summary.json"; failures=$((failures + 1)); }
  [ "$(grep -c '"train/loss"' "$tmp/run/metrics.jsonl")" -eq 20 ] || { echo "FAIL: metrics.jsonl has $(grep -c train/loss "$tmp/run/metrics.jsonl") train/loss lines"; failures=$((failures + 1)); }
  [ "$(grep -c '^[0-9]' "$tmp/run/metrics.csv")" -eq 20 ] && head -1 "$tmp/run/metrics.csv" | grep -q "throughput/samples_per_sec" ||
    { echo "FAIL: metrics.csv:"; head -3 "$tmp/run/metrics.csv"; failures=$((failures + 1)); }
  ls "$tmp/run/tensorboard/" | grep -q "^events.out.tfevents." || { echo "FAIL: no TensorBoard event file"; failures=$((failures + 1)); }
  grep -q "max_duration: 20ba" "$tmp/run/recipe.yaml" || { echo "FAIL: recipe.yaml is not the resolved recipe"; failures=$((failures + 1)); }
  # A run folder that holds a run is continued, started over with its files moved aside, or refused.
  expect 2 "a run is already there (recipe.yaml, metrics.jsonl" -- "$baton" train "$src/recipes/fashion_mnist.yaml" --set max_duration=2ba --run-dir "$tmp/run"
  cp -r "$tmp/run" "$tmp/over"
  "$baton" train "$src/recipes/fashion_mnist.yaml" --set max_duration=3ba --set eval_interval=0 --set progress_bar=false \
    --run-dir "$tmp/over" --overwrite >"$tmp/over.out" 2>&1 && grep -q '"steps": 3' "$tmp/over/summary.json" &&
    [ -s "$(ls -d "$tmp"/over/replaced-*/checkpoints/ep0-ba20.ckpt)" ] && [ "$(grep -c train/loss "$tmp/over/metrics.jsonl")" -eq 3 ] ||
    { echo "FAIL: --overwrite"; cat "$tmp/over.out"; ls -R "$tmp/over"; failures=$((failures + 1)); }
  # Checkpoint names that would lose checkpoints, or write outside their folder: refused before training.
  expect 2 "--set save_filename: 'latest': 'latest' is the link to the newest checkpoint" -- "$baton" train "$src/recipes/fashion_mnist.yaml" --set save_filename=latest --run-dir "$tmp/names"
  expect 2 "--set save_filename: '../x.ckpt': a checkpoint is written in the checkpoint folder" -- "$baton" train "$src/recipes/fashion_mnist.yaml" --set save_filename=../x.ckpt --run-dir "$tmp/names"
  [ ! -e "$tmp/names" ] || { echo "FAIL: a refused save_filename left $tmp/names"; failures=$((failures + 1)); }
  # Every checkpoint unreadable: --autoresume stops, naming them; --restart moves them aside and starts over.
  cp -r "$tmp/run" "$tmp/corrupt"
  for f in "$tmp"/corrupt/checkpoints/*.ckpt; do head -c 100 "$f" >"$f.cut" && mv "$f.cut" "$f"; done
  expect 2 "no checkpoint can be resumed from" -- "$baton" train "$src/recipes/fashion_mnist.yaml" --set max_duration=25ba --run-dir "$tmp/corrupt" --autoresume
  [ "$(stat -c %s "$tmp"/corrupt/checkpoints/ep0-ba20.ckpt)" -eq 100 ] || { echo "FAIL: an unreadable checkpoint was written over"; failures=$((failures + 1)); }
  "$baton" train "$src/recipes/fashion_mnist.yaml" --set max_duration=2ba --set eval_interval=0 --set progress_bar=false \
    --run-dir "$tmp/corrupt" --autoresume --restart >"$tmp/restart.out" 2>&1 && [ -e "$(ls -d "$tmp"/corrupt/replaced-*/checkpoints/ep0-ba20.ckpt)" ] ||
    { echo "FAIL: --restart"; cat "$tmp/restart.out"; failures=$((failures + 1)); }
  expect 1 "cannot load the model's weights" -- "$baton" eval "$src/recipes/fashion_mnist.yaml" --load "$tmp/run/model.pt" --set model.name=mlp
  "$baton" eval "$src/recipes/fashion_mnist.yaml" --load "$tmp/run/model.pt" >"$tmp/eval.out" 2>&1 && grep -q "eval/accuracy" "$tmp/eval.out" ||
    { echo "FAIL: baton eval"; cat "$tmp/eval.out"; failures=$((failures + 1)); }
  # Checkpoints: inspect, resume, a damaged file, a folder that cannot be written.
  "$baton" checkpoint inspect "$tmp/run/checkpoints/latest" --json >"$tmp/inspect.json" &&
    python3 -c "import json,sys; d=json.load(open('$tmp/inspect.json')); sys.exit(0 if len(d['weights_sha256'])==64 and d['timestamp']['batch']==20 else 1)" ||
    { echo "FAIL: checkpoint inspect"; cat "$tmp/inspect.json"; failures=$((failures + 1)); }
  "$baton" train "$src/recipes/fashion_mnist.yaml" --set max_duration=25ba --set eval_interval=0 --set progress_bar=false \
    --run-dir "$tmp/run" --autoresume >"$tmp/resume.out" 2>&1 && grep -q "resuming from .*latest at \[ep=0\]\[ba=20\]" "$tmp/resume.out" &&
    grep -q '"steps": 25' "$tmp/run/summary.json" || { echo "FAIL: --autoresume"; cat "$tmp/resume.out"; failures=$((failures + 1)); }
  # The resumed run continues the metrics: each of the 25 batches once, in order.
  python3 -c "
import json, sys
steps = [j['step'] for j in map(json.loads, open('$tmp/run/metrics.jsonl')) if 'train/loss' in j]
sys.exit(0 if steps == list(range(1, 26)) else 1)" && [ "$(grep -c '^[0-9]' "$tmp/run/metrics.csv")" -eq 25 ] ||
    { echo "FAIL: metrics after --autoresume:"; grep -c train/loss "$tmp/run/metrics.jsonl"; failures=$((failures + 1)); }
  head -c 1000 "$tmp/run/checkpoints/latest" >"$tmp/cut.ckpt"
  expect 2 "cut.ckpt: truncated" -- "$baton" checkpoint inspect "$tmp/cut.ckpt"
  expect 2 "cut.ckpt: truncated" -- "$baton" train "$src/recipes/fashion_mnist.yaml" --set load_path="$tmp/cut.ckpt" --run-dir "$tmp/run2"
  expect 2 "cannot create the checkpoint folder" -- "$baton" train "$src/recipes/fashion_mnist.yaml" --set save_folder=/proc/baton/ckpt --run-dir "$tmp/run3"
  "$baton" eval "$src/recipes/fashion_mnist.yaml" --load "$tmp/run/checkpoints/latest" >"$tmp/eval2.out" 2>&1 && grep -q "eval/accuracy" "$tmp/eval2.out" ||
    { echo "FAIL: baton eval from a checkpoint"; cat "$tmp/eval2.out"; failures=$((failures + 1)); }
  # SIGTERM: finish the batch, write a checkpoint, exit 143; then resume from it.
  "$baton" train "$src/recipes/fashion_mnist.yaml" --set max_duration=2000ba --set eval_interval=0 --set progress_bar=false \
    --set save_interval=5000ba --run-dir "$tmp/sig" >"$tmp/sig.out" 2>&1 &
  pid=$!
  for _ in $(seq 100); do [ -s "$tmp/sig/metrics.jsonl" ] && [ "$(wc -l <"$tmp/sig/metrics.jsonl")" -ge 3 ] && break; sleep 0.2; done
  kill -TERM "$pid"
  wait "$pid"
  rc=$?
  if [ "$rc" -ne 143 ] || ! grep -q "stopped by signal 15" "$tmp/sig.out" || [ ! -s "$tmp/sig/checkpoints/latest" ]; then
    echo "FAIL: SIGTERM -> exit $rc"; cat "$tmp/sig.out"; ls "$tmp/sig/checkpoints"; failures=$((failures + 1))
  else
    stopped=$(python3 -c "import json; print(json.load(open('$tmp/sig/summary.json'))['steps'])")
    "$baton" train "$src/recipes/fashion_mnist.yaml" --set max_duration=$((stopped + 3))ba --set eval_interval=0 \
      --set progress_bar=false --set save_interval=5000ba --run-dir "$tmp/sig" --autoresume >"$tmp/sig2.out" 2>&1 &&
      grep -q "resuming from .*\[ba=$stopped\]" "$tmp/sig2.out" || { echo "FAIL: resume after SIGTERM"; cat "$tmp/sig2.out"; failures=$((failures + 1)); }
    [ "$(grep -c '"train/loss"' "$tmp/sig/metrics.jsonl")" -eq $((stopped + 3)) ] ||
      { echo "FAIL: the history before SIGTERM was lost: $(grep -c train/loss "$tmp/sig/metrics.jsonl") train/loss lines, want $((stopped + 3))"; failures=$((failures + 1)); }
  fi
  "$baton" predict "$src/recipes/fashion_mnist.yaml" --load "$tmp/run/model.pt" --out "$tmp/p.npy" >"$tmp/predict.out" 2>&1 &&
    grep -q "predicted 10000 examples: outputs \[10000, 10\]" "$tmp/predict.out" && [ -s "$tmp/p.npy" ] ||
    { echo "FAIL: baton predict"; cat "$tmp/predict.out"; failures=$((failures + 1)); }
  # --inputs as the docs say: prepared as training prepared its inputs, so the test images given as a
  # file give the accuracy of the recipe's own evaluation data.
  "$baton" predict "$src/recipes/fashion_mnist.yaml" --load "$tmp/run/model.pt" --out "$tmp/p2.npy" \
    --inputs /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz >"$tmp/predict2.out" 2>&1 &&
    python3 - "$tmp/p.npy" "$tmp/p2.npy" >"$tmp/predict2.cmp" 2>&1 <<'PY' || { echo "FAIL: predict --inputs"; cat "$tmp/predict2.out" "$tmp/predict2.cmp"; failures=$((failures + 1)); }
import array, gzip, sys
labels = gzip.open("/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz").read()[8:]
def accuracy(path):
    data = open(path, "rb").read()
    logits = array.array("f")
    logits.frombytes(data[10 + int.from_bytes(data[8:10], "little"):])
    right = sum(max(range(10), key=lambda k: logits[i * 10 + k]) == labels[i] for i in range(len(labels)))
    return right / len(labels)
a, b = accuracy(sys.argv[1]), accuracy(sys.argv[2])
print("eval data", a, "--inputs", b)
sys.exit(0 if abs(a - b) < 0.002 else 1)
PY
  # --profile: a Chrome trace of batches 2..6 in RUN_DIR/traces.
  "$baton" train "$src/recipes/fashion_mnist.yaml" --set max_duration=8ba --set eval_interval=0 --set progress_bar=false \
    --set 'callbacks={checkpoint_saver: false}' --set loggers.tensorboard=false --set loggers.csv=false --profile \
    --run-dir "$tmp/prof" >"$tmp/prof.out" 2>&1 && [ ! -e "$tmp/prof/tensorboard" ] && [ ! -e "$tmp/prof/metrics.csv" ] &&
    python3 -c "import json, sys; t = json.load(open('$tmp/prof/traces/ep0-ba1.json')); sys.exit(0 if sum(e['name'] == 'event/batch' and e['ph'] == 'B' for e in t['traceEvents']) == 5 else 1)" &&
    [ ! -e "$tmp/prof/checkpoints" ] || { echo "FAIL: --profile"; cat "$tmp/prof.out"; ls -R "$tmp/prof"; failures=$((failures + 1)); }
  # A model changed by surgery: eval, predict and export rebuild it from the checkpoint (the recipe
  # without the algorithm), and give what training's own evaluation gave.
  for algo in blurpool squeeze_excite; do
    "$baton" train "$src/recipes/fashion_mnist.yaml" --set max_duration=20ba --set eval_interval=20ba --set progress_bar=false \
      --set "algorithms={$algo: }" --set precision=fp32 --run-dir "$tmp/$algo" >"$tmp/$algo.out" 2>&1 || { echo "FAIL: train with $algo"; cat "$tmp/$algo.out"; failures=$((failures + 1)); continue; }
    want=$(python3 -c "import json; print('%.4f' % json.load(open('$tmp/$algo/summary.json'))['metrics']['eval/accuracy'])")
    "$baton" eval "$src/recipes/fashion_mnist.yaml" --set precision=fp32 --load "$tmp/$algo/checkpoints/latest" >"$tmp/$algo.eval" 2>&1 &&
      grep -q "eval/accuracy $want" "$tmp/$algo.eval" ||
      { echo "FAIL: baton eval of a $algo checkpoint (want $want)"; cat "$tmp/$algo.eval"; failures=$((failures + 1)); }
    "$baton" predict "$src/recipes/fashion_mnist.yaml" --set precision=fp32 --load "$tmp/$algo/checkpoints/latest" \
      --out "$tmp/$algo.npy" >"$tmp/$algo.pred" 2>&1 || { echo "FAIL: baton predict of a $algo checkpoint"; cat "$tmp/$algo.pred"; failures=$((failures + 1)); }
    "$baton" export "$tmp/$algo/checkpoints/latest" --torchscript "$tmp/$algo.ts" >"$tmp/$algo.exp" 2>&1 ||
      { echo "FAIL: baton export of a $algo checkpoint"; cat "$tmp/$algo.exp"; failures=$((failures + 1)); }
  done
  python3 -c "import sys, zipfile; z = zipfile.ZipFile('$tmp/blurpool.ts'); sys.exit(0 if any(b'blur_filter' in z.read(n) for n in z.namelist() if n.endswith('.pkl')) else 1)" ||
    { echo "FAIL: the blurpool export has no blur"; failures=$((failures + 1)); }
  # A recipe's profiler writes into the run directory, not the working folder.
  (cd "$tmp" && "$baton" train "$src/recipes/fashion_mnist.yaml" --set max_duration=4ba --set eval_interval=0 --set progress_bar=false \
    --set "callbacks={profiler: {warmup: 0, active: 2}}" --run-dir "$tmp/profrun" >"$tmp/profrun.out" 2>&1) &&
    ls "$tmp/profrun/traces/" | grep -q "\.json$" && [ ! -e "$tmp/traces" ] || { echo "FAIL: the profiler callback's traces"; cat "$tmp/profrun.out"; ls "$tmp"; failures=$((failures + 1)); }
  # Plot: an SVG of a metric for the runs, one path per run.
  "$baton" plot "$tmp/run" "$tmp/sig" --metric train/loss --out "$tmp/loss.svg" >"$tmp/plot.out" 2>&1 &&
    python3 -c "import sys, xml.dom.minidom as m; d = m.parse('$tmp/loss.svg'); sys.exit(0 if len([p for p in d.getElementsByTagName('path') if p.getAttribute('class') == 'series']) == 2 else 1)" ||
    { echo "FAIL: baton plot"; cat "$tmp/plot.out"; failures=$((failures + 1)); }
  expect 2 "no run has the metric 'eval/nothing'" -- "$baton" plot "$tmp/run" --metric eval/nothing --out "$tmp/n.svg"
  # A metrics file whose last line is still being written (or was cut by a kill) plots what is whole.
  mkdir -p "$tmp/cut" && cp "$tmp/run/metrics.jsonl" "$tmp/cut/" && printf '{"step": 21, "train/lo' >>"$tmp/cut/metrics.jsonl"
  "$baton" plot "$tmp/cut" --metric train/loss --out "$tmp/cut.svg" >"$tmp/cut.out" 2>&1 || { echo "FAIL: plot of a cut metrics file"; cat "$tmp/cut.out"; failures=$((failures + 1)); }
  # Export: the checkpoint's model as TorchScript; Python's torch.jit.load gets baton eval's accuracy.
  "$baton" export "$tmp/run/checkpoints/latest" --torchscript "$tmp/model.ts" >"$tmp/export.out" 2>&1 && [ -s "$tmp/model.ts" ] ||
    { echo "FAIL: baton export"; cat "$tmp/export.out"; failures=$((failures + 1)); }
  expect 2 "cut.ckpt: truncated" -- "$baton" export "$tmp/cut.ckpt" --torchscript "$tmp/cut.ts"
  [ ! -e "$tmp/cut.ts" ] || { echo "FAIL: a failed export left $tmp/cut.ts"; failures=$((failures + 1)); }
  expect 2 "pass --recipe" -- "$baton" export "$tmp/run/model.pt" --torchscript "$tmp/m2.ts"
  cp "$tmp/run/checkpoints/ep0-ba20.ckpt" "$tmp/self.ckpt"
  expect 2 "an input of this command" -- "$baton" export "$tmp/self.ckpt" --torchscript "$tmp/self.ckpt"
  cmp -s "$tmp/self.ckpt" "$tmp/run/checkpoints/ep0-ba20.ckpt" || { echo "FAIL: export wrote over its input"; failures=$((failures + 1)); }
  "$baton" export "$tmp/run/model.pt" --recipe "$src/recipes/fashion_mnist.yaml" --torchscript "$tmp/m2.ts" >"$tmp/export2.out" 2>&1 ||
    { echo "FAIL: baton export model.pt --recipe"; cat "$tmp/export2.out"; failures=$((failures + 1)); }
  if /usr/bin/python3 -c 'import torch, numpy' 2>/dev/null; then
    # In fp32: the export is fp32, and the recipe's precision auto evaluates in bf16 on some CPUs.
    "$baton" eval "$src/recipes/fashion_mnist.yaml" --load "$tmp/run/checkpoints/latest" --set precision=fp32 >"$tmp/eval3.out" 2>&1
    want=$(grep -o "eval/accuracy [0-9.]*" "$tmp/eval3.out" | cut -d' ' -f2)
    /usr/bin/python3 - "$tmp/model.ts" "$want" >"$tmp/py.out" 2>&1 <<'PY' || { echo "FAIL: Python's torch.jit.load of the export"; cat "$tmp/py.out"; failures=$((failures + 1)); }
import gzip, sys, numpy, torch
def idx(name):
    with gzip.open("/usr/share/datasets/fashion-mnist/" + name) as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return numpy.frombuffer(data, numpy.uint8, offset=4 + 4 * dims).reshape(shape)
train = torch.from_numpy(idx("train-images-idx3-ubyte.gz").copy()).float().div(255)
x = (torch.from_numpy(idx("t10k-images-idx3-ubyte.gz").copy()).float().div(255) - train.mean()) / train.std()
y = torch.from_numpy(idx("t10k-labels-idx1-ubyte.gz").astype(numpy.int64))
model = torch.jit.load(sys.argv[1])
with torch.no_grad():
    accuracy = (model(x.unsqueeze(1)).argmax(1) == y).float().mean().item()
print("python accuracy", accuracy, "baton eval", sys.argv[2])
sys.exit(0 if abs(accuracy - float(sys.argv[2])) < 5e-4 else 1)
PY
  fi
fi

[ "$failures" -eq 0 ] && echo "cli: ok"
exit $((failures > 0))

#!/usr/bin/env bash
# make demo: install what is missing, build the library and the `baton` program (nothing else: the
# tests, benchmarks and examples wait for `make test`), train on Fashion-MNIST, say what came out.
#
# One line per step; each step's whole output goes to build/logs/<step>.log, and a step that fails
# prints the last lines of its log and where the rest is. With an NVIDIA GPU (nvidia-smi answers)
# it builds against LibTorch with CUDA in build-torch2/ and trains there.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
logs=build/logs
mkdir -p "$logs"
jobs=${JOBS:-$(nproc)}
begin=$(date +%s)

# step NAME LOG COMMAND...: runs COMMAND with its output in $logs/LOG.
step() {
  local name=$1 log=$logs/$2 t0
  shift 2
  t0=$(date +%s)
  printf 'demo: %-44s' "$name"
  if "$@" >"$log" 2>&1; then
    echo " $(($(date +%s) - t0)) s"
  else
    echo " failed"
    tail -n 25 "$log" | sed 's/^/  | /'
    echo "demo: the whole output of this step: $log"
    exit 1
  fi
}

if nvidia-smi -L >/dev/null 2>&1; then
  dir=build-torch2 preset=torch2 device=cuda
  step "install what is missing (apt)" install.log scripts/install-deps.sh --torch2
  prefix=$(BATON_TORCH2_PREFER_INSTALLED=1 scripts/torch2-env.sh 2>>"$logs/install.log" | tail -n1)
  step "configure (LibTorch with CUDA: $dir/)" configure.log env BATON_TORCH2_PREFIX="$prefix" cmake --preset torch2
else
  dir=build preset=default device=cpu
  step "install what is missing, configure ($dir/)" configure.log scripts/configure.sh
  sed -n 's/^configure: /demo: /p' "$logs/configure.log"
fi
step "build libbaton_* and baton ($jobs jobs)" build.log cmake --build --preset "$preset" -j "$jobs" --target baton_cli

run=runs/fashion_mnist
echo "demo: train recipes/fashion_mnist.yaml on the $device (output below; also in $run/)"
if ! "$dir/bin/baton" train recipes/fashion_mnist.yaml --set device="$device" --overwrite; then
  echo "demo: training failed (above); the run so far is in $run/"
  exit 1
fi
accuracy=$(sed -n 's/.*"eval\/accuracy": *\([0-9.]*\).*/\1/p' "$run/summary.json" | head -n1)
[ -n "$accuracy" ] && accuracy=$(printf '%.4f' "$accuracy")
cat <<EOF

demo: done in $(($(date +%s) - begin)) s. Trained FashionCNN (recipes/fashion_mnist.yaml) on Fashion-MNIST:
      test accuracy ${accuracy:-?}; the run is in $run/ (recipe.yaml, metrics.jsonl, checkpoints/).
Next:
  $dir/bin/baton dashboard $run   # its curves in a browser (open the URL it prints)
  $dir/bin/baton train recipes/fashion_mnist_fast.yaml --set device=$device   # 91% sooner (label smoothing, EMA, ...)
  $dir/bin/baton search recipes/search_fashion_mnist.yaml --recipe recipes/fashion_mnist.yaml \\
      --set max_duration=1ep --trials 20 --parallel 2 --run-dir runs/search   # a search (TPE)
  make test   # builds the tests, benchmarks and examples, runs the unit tests
  docs/cli.md, docs/recipes.md   # every command and recipe key
EOF

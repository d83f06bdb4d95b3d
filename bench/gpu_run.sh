#!/usr/bin/env bash
# The GPU machine's part of issue 19 in three device calls (each under the 10-minute limit), run from
# the project root there with `.device/` taken along (made here by ../shared/gpu/prepare.sh):
#
#   bench/gpu_run.sh build   # build-cuda/ against the machine's torch wheel (LibTorch 2.x, CUDA)
#   bench/gpu_run.sh test    # ctest label gpu (graphs vs eager to 1e-5, bitwise resume, ...)
#   bench/gpu_run.sh bench   # bench/speed_bench.py --device cuda: baton eager/graphs fp32/bf16
#                            # against PyTorch eager, torch.compile, Lightning and Composer; gpt_char
#
# Composer's row needs its wheels taken along: here, after prepare.sh,
# `bench/peers/make-venv.sh --composer-wheels .device/wheels-composer` (23 MB, Python 3.12); there
# `bench` installs them over the machine's torch (make-venv.sh --composer-offline). Without them the
# Composer rows are left out.
#
# Logs and JSON go to $OUT (the device tool brings that folder back) or ./gpu-out. Nothing here
# downloads: the machine reaches no registry.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root" || exit 2
out="${OUT:-$root/gpu-out}"
mkdir -p "$out"
[ -f .device/setup.sh ] || { echo "gpu_run: .device/setup.sh is missing (run ../shared/gpu/prepare.sh here, carry .device)"; exit 2; }
# shellcheck disable=SC1091
source .device/setup.sh >"$out/setup.log" 2>&1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >"$out/gpu.txt" 2>&1
jobs=$(nproc)
case "${1:-}" in
  build)
    # shellcheck disable=SC2086  # BATON_CUDA_CMAKE_ARGS is a list of -D arguments
    cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release $BATON_CUDA_CMAKE_ARGS \
      -DBATON_BUILD_EXAMPLES=OFF >"$out/configure.log" 2>&1 || { tail -40 "$out/configure.log"; exit 1; }
    /usr/bin/time -f "build: %e s" cmake --build build-cuda -j "$jobs" >"$out/build.log" 2>&1
    rc=$?
    grep -E "error|build: " "$out/build.log" | tail -20
    exit $rc
    ;;
  test | bench)
    [ -x build-cuda/bin/baton ] || { echo "gpu_run: build-cuda/bin/baton is missing (bench/gpu_run.sh build first)"; exit 2; }
    ;;&
  test)
    ctest --test-dir build-cuda -L gpu --output-on-failure --timeout 500 >"$out/gpu-tests.log" 2>&1
    rc=$?
    tail -40 "$out/gpu-tests.log"
    exit $rc
    ;;
  bench)
    composer=none
    if [ -d .device/wheels-composer ]; then
      composer=$(bench/peers/make-venv.sh --composer-offline .device/wheels-composer 2>"$out/composer-venv.log") || composer=none
    fi
    timeout 560 python3 bench/speed_bench.py --baton build-cuda/bin/baton --python python3 --device cuda \
      --composer-python "$composer" >"$out/speed.jsonl" 2>"$out/speed.log"
    rc=$?
    tail -5 "$out/speed.log"
    tail -3 "$out/speed.jsonl"
    exit $rc
    ;;
  *)
    echo "usage: bench/gpu_run.sh build|test|bench   (on the GPU machine, with .device/ taken along)"
    exit 2
    ;;
esac

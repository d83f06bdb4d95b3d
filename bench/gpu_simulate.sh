#!/usr/bin/env bash
# The GPU machine's software as far as this machine can have it, and the kit's build and CPU part
# run in it (bench/gpu_run.sh build, then test), before a device call is spent:
#   - python3 is the interpreter of the pinned torch 2.11+cu130 wheel (.venv-torch2): the GPU
#     machine's LibTorch, found the way the kit finds it (torch.utils.cmake_prefix_path);
#   - CMake 4.4 and Ninja from PyPI, as there (Debian has CMake 3.25);
#   - SQLite's and OpenSSL's headers and libraries from the carried packages (GPU_KIT_CARRIED=1), not
#     Debian's, as on a machine that has none;
#   - no GPU and no nvidia-smi: every gpu test must skip with its reason, and exit 0.
# What still differs: GCC 12 here against 13.3 there, Python 3.11 against 3.12, Debian's fmt, spdlog
# and yaml-cpp against Ubuntu's, and 2 cores against 16 (the build's deadline is raised to match).
#
#   bench/gpu_prepare.sh && bench/gpu_simulate.sh     # a 2-core build of the kit's targets: ~20 min
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
tools=${GPU_SIM_TOOLS:-$root/build-sim-tools}  # a venv of CMake 4.4 and Ninja (ignored: /build-*/)
if [ ! -x "$tools/bin/cmake" ] || [ ! -x "$tools/bin/ninja" ]; then
  python3 -m venv "$tools"
  "$tools/bin/pip" install -q "cmake>=4.4,<4.5" ninja
fi
scripts/torch2-env.sh >/dev/null  # makes .venv-torch2 with the pinned wheel when it is missing
venv=${BATON_TORCH2_VENV:-$root/.venv-torch2}
export PATH="$venv/bin:$tools/bin:$PATH"  # python3: the venv's (a link to it elsewhere is not the venv)
export GPU_KIT_CARRIED=1 GPU_KIT_BUILD_S=${GPU_KIT_BUILD_S:-3600} GPU_KIT_TOTAL_S=${GPU_KIT_TOTAL_S:-3900}
export OUT=${OUT:-$root/gpu-out/simulated}
mkdir -p "$OUT"
echo "gpu_simulate: $(cmake --version | head -1), $(ninja --version) ninja, python3 $(python3 -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__)')"
rc=0
bench/gpu_run.sh build || rc=$?
grep -E "SQLite3|OpenSSL|Torch|NCCL" "$OUT/configure.log" | head -8
[ $rc -eq 0 ] || { echo "gpu_simulate: the kit's build failed (exit $rc): $OUT/build.log"; exit $rc; }
bench/gpu_run.sh test || rc=$?
grep -cE "^\[  SKIPPED \]" "$OUT/gpu-tests.log" | sed 's/^/gpu_simulate: gpu tests skipped: /'
# The benchmark program the kit runs first, on this machine's CPU (no GPU here).
build-cuda/bin/trainer_bench --host-time --steps 500 --reps 1 2>/dev/null | grep -E "^median" || rc=$?
echo "gpu_simulate: done (exit $rc)"
exit $rc

#!/usr/bin/env bash
# Configures build/ (preset default) for `make build`, `make test` and `make demo`, against the
# LibTorch it picks, and says which in one line:
#
#   python3's PyTorch, when it is 2.11 or later (the oldest baton is tested with), built with the
#   C++11 ABI (as every wheel since 2.7 is) and, with CUDA, a CUDA toolkit of its major is here;
#   otherwise Debian's libtorch-dev 1.13 (CPU), the fallback of a bare machine.
#
#   BATON_LIBTORCH=auto     the choice above (the default)
#   BATON_LIBTORCH=system   Debian's LibTorch 1.13, even where python3 has PyTorch 2.x
#   BATON_LIBTORCH=python   python3's PyTorch, whatever its version (an error without one)
#   BATON_LIBTORCH=DIR      the LibTorch whose TorchConfig.cmake is under DIR (a CMake prefix)
#
# A build/ configured against another LibTorch is configured afresh (its cache removed; ccache keeps
# the compiled files). Extra arguments go to cmake. docs/building.md says more.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
choice=${BATON_LIBTORCH:-auto}
oldest=2.11.0

# "VERSION ABI CUDA PREFIX" of python3's torch ("-" for no CUDA); nothing without one.
python_torch() {
  python3 - <<'EOF' 2>/dev/null || true
import torch
print(torch.__version__.split("+")[0], int(torch.compiled_with_cxx11_abi()), torch.version.cuda or "-",
      torch.utils.cmake_prefix_path)
EOF
}
at_least() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n1)" = "$1" ]; }
nvcc_major() {
  local nvcc
  nvcc=$(command -v nvcc || true)
  for candidate in "${CUDA_HOME:-}/bin/nvcc" /usr/local/cuda/bin/nvcc; do
    [ -n "$nvcc" ] || { [ -x "$candidate" ] && nvcc=$candidate; }
  done
  [ -n "$nvcc" ] && "$nvcc" --version | sed -n 's/.*release \([0-9]*\)\..*/\1/p' | head -n1
}

# Sets prefix (empty: the system's LibTorch) and what (the line that says which), or says why not.
pick_python() {
  local strict=$1 version abi cuda path
  read -r version abi cuda path <<<"$(python_torch)" || true
  if [ -z "${version:-}" ]; then
    [ "$strict" = 1 ] && { echo "configure: BATON_LIBTORCH=python, but python3 has no torch (pip install torch)" >&2; exit 2; }
    why="python3 has no PyTorch"
    return 1
  fi
  if [ "$strict" = 0 ] && ! at_least "$oldest" "$version"; then
    why="python3's PyTorch $version is older than $oldest, the oldest baton is tested with (BATON_LIBTORCH=python tries it)"
    return 1
  fi
  if [ "$abi" != 1 ]; then
    why="python3's PyTorch $version is built with the old C++ ABI, which Debian's libraries do not use"
    [ "$strict" = 1 ] && { echo "configure: $why" >&2; exit 2; }
    return 1
  fi
  if [ "$cuda" != - ] && [ "$(nvcc_major)" != "${cuda%%.*}" ]; then
    why="python3's PyTorch $version has CUDA $cuda, and no CUDA ${cuda%%.*} toolkit (nvcc) is here for its headers"
    [ "$strict" = 1 ] && { echo "configure: $why" >&2; exit 2; }
    return 1
  fi
  prefix=$path
  what="PyTorch $version's LibTorch$([ "$cuda" != - ] && echo " with CUDA $cuda") (python3: ${path%/share/cmake})"
}

why=""
case "$choice" in
  auto) pick_python 0 || { prefix=""; what="Debian's LibTorch 1.13 ($why)"; } ;;
  system) prefix="" what="Debian's LibTorch 1.13 (BATON_LIBTORCH=system)" ;;
  python) pick_python 1 ;;
  *)
    [ -d "$choice" ] || { echo "configure: BATON_LIBTORCH=$choice: no such folder (auto, system, python or a LibTorch's CMake prefix)" >&2; exit 2; }
    prefix=$(cd "$choice" && pwd) what="the LibTorch in $prefix (BATON_LIBTORCH)" ;;
esac

if [ -n "$prefix" ]; then scripts/install-deps.sh --torch2; else scripts/install-deps.sh; fi

# A cache made against another LibTorch is dropped: CMake keeps Torch_DIR and its libraries' paths.
stamp=build/.libtorch
if [ -f build/CMakeCache.txt ] && [ "$(cat "$stamp" 2>/dev/null || true)" != "$prefix" ]; then
  echo "configure: build/ was configured against another LibTorch: configuring it afresh"
  rm -rf build/CMakeCache.txt build/CMakeFiles
fi
echo "configure: $what"
cmake --preset default -DCMAKE_PREFIX_PATH="$prefix" "$@" >/dev/null
printf '%s' "$prefix" >"$stamp"

#!/usr/bin/env bash
# Prints the CMake prefix of the LibTorch 2.x that `make build-torch2` builds against (its last line),
# making the project's virtual environment with the pinned torch wheel first when needed.
#
#   scripts/torch2-env.sh                          # .venv-torch2/ with scripts/torch2-requirements.txt's pin
#   BATON_TORCH2_PYTHON=python3 scripts/torch2-env.sh   # the torch that interpreter already has
#   BATON_TORCH2_PREFER_INSTALLED=1 ...            # python3's torch when it is 2.11 or later with CUDA
#                                                  # (make demo on a GPU machine: nothing to download)
#
# The venv's torch comes from PyPI (pip's cache makes another install quick) with CUDA's libraries as
# nvidia-* wheels, which LibTorch loads itself; nothing else is downloaded.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${BATON_TORCH2_VENV:-$root/.venv-torch2}"
pin=$(grep -E '^torch==' "$root/scripts/torch2-requirements.txt" | head -n1)
want=${pin#torch==}

# "2.11.0 cuda" / "2.11.0 cpu" for an interpreter's torch, nothing without one.
torch_of() { "$1" -c 'import torch; print(torch.__version__.split("+")[0], "cuda" if torch.version.cuda else "cpu")' 2>/dev/null || true; }
prefix_of() { "$1" -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null; }
supported() { [ "$(printf '%s\n%s\n' 2.11.0 "$1" | sort -V | head -n1)" = 2.11.0 ]; }

if [ -n "${BATON_TORCH2_PYTHON:-}" ]; then
  read -r version kind <<<"$(torch_of "$BATON_TORCH2_PYTHON")" || true
  [ -n "${version:-}" ] || { echo "torch2-env: $BATON_TORCH2_PYTHON has no torch (pip install torch==$want)" >&2; exit 1; }
  supported "$version" || echo "torch2-env: torch $version is older than 2.11, the oldest baton is tested with" >&2
  echo "torch2-env: torch $version ($kind) of $BATON_TORCH2_PYTHON" >&2
  prefix_of "$BATON_TORCH2_PYTHON"
  exit 0
fi
if [ "${BATON_TORCH2_PREFER_INSTALLED:-0}" = 1 ]; then
  read -r version kind <<<"$(torch_of python3)" || true
  if [ -n "${version:-}" ] && [ "$kind" = cuda ] && supported "$version"; then
    echo "torch2-env: using the installed torch $version with CUDA of python3" >&2
    prefix_of python3
    exit 0
  fi
fi

python="$venv/bin/python"
have=""
[ -x "$python" ] && have=$("$python" -c 'import importlib.metadata as m; print(m.version("torch"))' 2>/dev/null || true)
if [ "$have" != "$want" ]; then
  echo "torch2-env: installing torch $want into ${venv#"$root"/} (PyPI; about 4 GB with CUDA's libraries)" >&2
  python3 -m venv "$venv"
  "$python" -m pip install --quiet --disable-pip-version-check -r "$root/scripts/torch2-requirements.txt" >&2
elif ! "$python" -c 'import torchvision, safetensors, numpy' >/dev/null 2>&1; then
  echo "torch2-env: installing the tests' torchvision, safetensors and numpy into ${venv#"$root"/}" >&2
  "$python" -m pip install --quiet --disable-pip-version-check -r "$root/scripts/torch2-requirements.txt" >&2
fi
prefix_of "$python"

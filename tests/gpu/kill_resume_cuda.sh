#!/usr/bin/env bash
# kill -9 + --autoresume on a GPU (label gpu): tests/slow/kill_resume.sh with device: cuda and
# deterministic: true ends bitwise equal to a run that never stopped. Exit 77 (skipped) with the
# reason where there is no CUDA device. Usage: kill_resume_cuda.sh BATON_BINARY SOURCE_DIR
set -uo pipefail
baton=$1
src=$2
version=$("$baton" --version)
case "$version" in
  *"CPU only"*) echo "skipped: this baton's LibTorch has no CUDA ($version); make test-gpu builds against one"; exit 77 ;;
  *" 0 GPU(s)"*) echo "skipped: no CUDA device on this machine ($version)"; exit 77 ;;
esac
# A GPU trains the default recipe's 600 steps in about a second: more steps, so that kills land mid-run.
STEPS=${STEPS:-4000} exec "$src/tests/slow/kill_resume.sh" "$baton" "$src" --set device=cuda

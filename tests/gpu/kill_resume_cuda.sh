#!/usr/bin/env bash
# kill -9 + --autoresume on a GPU (label gpu): tests/slow/kill_resume.sh with device: cuda and
# deterministic: true ends bitwise equal to a run that never stopped. Exit 77 (skipped) with the
# reason where there is no CUDA device. Usage: kill_resume_cuda.sh BATON_BINARY SOURCE_DIR
set -uo pipefail
baton=$1
src=$2
# shellcheck source=../common/lib.sh
source "$(dirname "$0")/../common/lib.sh"
require_cuda "$baton"
require_fashion
# A GPU trains the default recipe's 600 steps in about a second: more steps, so that kills land mid-run.
STEPS=${STEPS:-4000} exec "$src/tests/slow/kill_resume.sh" "$baton" "$src" --set device=cuda

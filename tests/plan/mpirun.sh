#!/usr/bin/env bash
# Runs a program as N local MPI ranks (oversubscribed; allowed as root, as in a container).
# Usage: mpirun.sh N PROGRAM [ARGS...]. Skips (exit 77, with the reason) without mpirun.
set -uo pipefail
n=$1
shift
command -v mpirun >/dev/null || { echo "skipped: no mpirun (scripts/install-deps.sh installs openmpi-bin)"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
exec mpirun -np "$n" "$@"

#!/usr/bin/env bash
# baton search under mpirun: every rank is a worker of one search (no flag needed), the trial
# count is the whole search's, and no trial runs twice.
# Usage: search_mpi_test.sh BATON_BINARY
set -uo pipefail
baton=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
command -v mpirun >/dev/null || { echo "skipped: no mpirun (scripts/install-deps.sh installs openmpi-bin)"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
printf 'x: {_type: uniform, _value: [0, 1]}\n' >"$tmp/space.yaml"
cat >"$tmp/trial.sh" <<Y
#!/bin/sh
echo "\$BATON_TRIAL_ID" >> "$tmp/ran.txt"
echo "\${OMPI_COMM_WORLD_SIZE:-none}" >> "$tmp/mpi_env.txt"
echo 'baton: {"final": 1}'
Y
chmod +x "$tmp/trial.sh"
mpirun -np 3 "$baton" search "$tmp/space.yaml" --command "$tmp/trial.sh" --trials 30 --run-dir "$tmp/run" \
  >"$tmp/out" 2>&1 || { echo "FAIL: mpirun"; cat "$tmp/out"; exit 1; }
ranks=$(grep -c "(rank [0-2] of 3) joins" "$tmp/out")
ran=$(wc -l <"$tmp/ran.txt")
distinct=$(sort -u "$tmp/ran.txt" | wc -l)
if [ "$ranks" -ne 3 ] || [ "$ran" -ne 30 ] || [ "$distinct" -ne 30 ]; then
  echo "FAIL: $ranks ranks joined, $ran runs, $distinct distinct (want 3, 30, 30)"; cat "$tmp/out"; exit 1
fi
if grep -qv '^none$' "$tmp/mpi_env.txt"; then
  echo "FAIL: a trial saw the search's MPI launcher variables (it would start MPI itself)"; exit 1
fi
echo "search under mpirun: ok"

#!/usr/bin/env bash
# plan_example's last line: the outputs the docstring group must compute (local), and the same
# line from 3 MPI ranks (mpi).
# Usage: plan_example_test.sh local|mpi PLAN_EXAMPLE
set -uo pipefail
mode=$1
example=$2
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
want='{"outputs":{"n2_reported":true,"s1_sum":5050.0,"s2_weights":[[0.0,0.5,1.0],[1.5,2.0,2.5]],"s3_total":30,"s4_mean":0.35000000000000003,"s5_iterations":7}}'
"$example" --session local >"$tmp/local" 2>"$tmp/local.err" || { echo "FAIL: --session local"; cat "$tmp/local.err"; exit 1; }
local_line=$(tail -n 1 "$tmp/local")
if [ "$local_line" != "$want" ]; then
  echo "FAIL: --session local printed"; echo "  $local_line"; echo "want"; echo "  $want"; exit 1
fi
grep -q "n2 task s3: setup (once, before both instances)" "$tmp/local.err" || { echo "FAIL: no task setup line"; exit 1; }
if [ "$mode" = mpi ]; then
  command -v mpirun >/dev/null || { echo "skipped: no mpirun (scripts/install-deps.sh installs openmpi-bin)"; exit 77; }
  "$here/mpirun.sh" 3 "$example" --session mpi >"$tmp/mpi" 2>"$tmp/mpi.err" || { echo "FAIL: mpirun"; cat "$tmp/mpi.err"; exit 1; }
  mpi_line=$(tail -n 1 "$tmp/mpi")
  if [ "$mpi_line" != "$local_line" ]; then
    echo "FAIL: --session mpi printed"; echo "  $mpi_line"; echo "--session local printed"; echo "  $local_line"; exit 1
  fi
  for r in "local runs on rank 0" "n2 runs on rank 1" "n1 runs on rank 2"; do
    grep -q "node $r of 3" "$tmp/mpi.err" || { echo "FAIL: no 'node $r of 3'"; cat "$tmp/mpi.err"; exit 1; }
  done
fi
echo "plan_example --session $mode: ok"

#!/usr/bin/env bash
# Data parallelism side by side on this machine: 1 process x 2 threads against 2 MPI ranks x 1
# thread on the same global batch (alternating, best of R), reduction overlapped with backward or
# not, and MPI allreduce time against size.
# Usage: bench/ddp_bench.sh [BUILD_DIR] [REPEATS]
set -euo pipefail
build=${1:-build}
repeats=${2:-3}
bench=$build/bin/ddp_bench
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
field() { python3 -c "import json,sys; print(json.loads(sys.stdin.readline())['$1'])"; }
best_single=0 best_ddp=0 best_ddp_no=0
for r in $(seq 1 "$repeats"); do
  single=$("$bench" --threads 2 | tail -n 1)
  ddp=$(mpirun -np 2 "$bench" --threads 1 | tail -n 1)
  ddp_no=$(mpirun -np 2 "$bench" --threads 1 --overlap 0 | tail -n 1)
  echo "$single"; echo "$ddp"; echo "$ddp_no"
  s=$(field samples_per_s <<<"$single"); d=$(field samples_per_s <<<"$ddp"); n=$(field samples_per_s <<<"$ddp_no")
  best_single=$(python3 -c "print(max($best_single, $s))")
  best_ddp=$(python3 -c "print(max($best_ddp, $d))")
  best_ddp_no=$(python3 -c "print(max($best_ddp_no, $n))")
done
python3 -c "print('best samples/s: 1x2 threads %.0f, 2 ranks x 1 thread %.0f (ratio %.2f), without overlap %.0f (ratio %.2f)' % ($best_single, $best_ddp, $best_ddp / $best_single, $best_ddp_no, $best_ddp_no / $best_single))"
echo "reduction overlapped with backward or not, by bucket size (fashion_cnn: 1.6 MB of gradients, 1.5 MB in one tensor):"
for mb in 0.25 1 4; do
  for overlap in 1 0; do mpirun -np 2 "$bench" --threads 1 --bucket-mb "$mb" --overlap "$overlap" | tail -n 1; done
done
mpirun -np 2 "$bench" --allreduce

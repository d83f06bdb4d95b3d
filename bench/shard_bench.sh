#!/usr/bin/env bash
# Sharded training side by side on this machine, the same gpt (4 layers, width 256, context 128),
# global batch 16, fp32, AdamW, one thread a rank: baton's data parallelism (sharding: none), baton's
# sharding: full, and PyTorch FSDP2 (fully_shard per block and at the root, over gloo; the torch
# 2.11 venv), alternating, best of R; at 2 and 4 ranks. Prints each run's JSON line and the ratios.
# Usage: bench/shard_bench.sh [BUILD_DIR] [REPEATS] [TORCH_PYTHON]
set -euo pipefail
build=${1:-build}
repeats=${2:-3}
python=${3:-.venv-torch2/bin/python}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
field() { python3 -c "import json,sys; d=json.loads(sys.stdin.readline()); print(eval('d' + sys.argv[1]))" "$1"; }
for ranks in 2 4; do
  best_none=0 best_full=0 best_fsdp=0 peak_full=0 peak_fsdp=0
  for _ in $(seq 1 "$repeats"); do
    none=$(mpirun -np "$ranks" "$build/bin/shard_bench" --sharding none | tail -n 1)
    full=$(mpirun -np "$ranks" "$build/bin/shard_bench" --sharding full | tail -n 1)
    fsdp=$(mpirun -np "$ranks" "$python" bench/peers/fsdp2_gpt.py --steps 20 | grep "^{" | tail -n 1)
    echo "$none"; echo "$full"; echo "$fsdp"
    best_none=$(python3 -c "print(max($best_none, $(field "['tokens_per_s']" <<<"$none")))")
    best_full=$(python3 -c "print(max($best_full, $(field "['tokens_per_s']" <<<"$full")))")
    best_fsdp=$(python3 -c "print(max($best_fsdp, $(field "['tokens_per_s']" <<<"$fsdp")))")
    peak_full=$(field "['per_rank'][0]['peak_mb']" <<<"$full")
    peak_fsdp=$(field "['peak_mb_per_rank'][0]" <<<"$fsdp")
  done
  python3 -c "print('%d ranks: tokens/s baton full %.0f, baton data parallel %.0f (full/dp %.2f), FSDP2 %.0f (baton full/FSDP2 %.2f); peak RSS rank 0: baton full %.0f MB, FSDP2 %.0f MB' % ($ranks, $best_full, $best_none, $best_full / $best_none, $best_fsdp, $best_full / $best_fsdp, $peak_full, $peak_fsdp))"
done

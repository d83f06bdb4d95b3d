#!/usr/bin/env bash
# A model too big for data parallelism's ranks trains under sharding: full within a stated limit:
# the zoo's gpt with 8 layers of width 768 (57M parameters; AdamW in fp32 holds 16 bytes a parameter,
# 0.9 GB) on 4 ranks of this machine, and a limit of 1 GiB of peak resident memory per rank. Under
# data parallelism every rank's peak passes it; under full sharding, with a sharded checkpoint
# written at each step, every rank stays under it, and the run trains (a finite loss, a complete
# checkpoint), and resumed from that checkpoint too (each rank reads its block of the state). The peak is the kernel's (getrusage), as summary.json reports it.
# Usage: sharding_memory_mpi_test.sh BATON_BINARY
set -uo pipefail
baton=$1
source "$(dirname "$0")/../common/lib.sh"
trap 'rm -rf "$tmp"; pkill -9 -f "$tmp" 2>/dev/null' EXIT
require_command mpirun "scripts/install-deps.sh installs openmpi-bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
limit_mb=1024

random_words "$tmp/text.txt" 20000
cat >"$tmp/recipe.yaml" <<EOF
seed: 0
precision: fp32
device: cpu
num_threads: 1
progress_bar: false
eval_interval: 0
data: {dataset: text, path: $tmp/text.txt, tokens: chars, context: 32, batch_size: 8, validation_fraction: 0.1, drop_last: true}
model: {name: gpt, layers: 8, width: 768, heads: 4, dropout: 0.0}
optimizer: {name: adamw, lr: 3.0e-4, weight_decay: 0.1}
loggers: {tensorboard: false}
EOF
train() {  # SHARDING RUN_DIR STEPS [ARGS...]
  local sharding=$1 dir=$2 steps=$3
  shift 3
  mpirun -np 4 "$baton" train "$tmp/recipe.yaml" --set sharding="$sharding" --set max_duration="$steps" \
    --run-dir "$dir" "$@" >"$dir.out" 2>&1 || { cat "$dir.out"; fail_now "mpirun -np 4 baton train sharding $sharding"; }
}
# Every rank's peak resident memory in MiB, and the state (parameters, gradients, optimizer) in MB.
peaks() {
  python3 -c "
import json, sys
s = json.load(open(sys.argv[1]))
print(' '.join(str(r['peak_bytes'] >> 20) for r in s['memory_per_rank']))
print(' '.join(str((r['params_bytes'] + r['grads_bytes'] + r['optimizer_bytes']) // 10**6) for r in s['memory_per_rank']))
print(s['metrics']['train/loss'])" "$1/summary.json"
}

train none "$tmp/dp" 2ba
train full "$tmp/full" 2ba --set save_format=sharded --set save_interval=1ba
cp -r "$tmp/full" "$tmp/resumed"
train full "$tmp/resumed" 3ba --set save_format=sharded --autoresume
{
  read -r -a dp_peak
  read -r -a dp_state
  read -r _
} < <(peaks "$tmp/dp")
{
  read -r -a full_peak
  read -r -a full_state
  read -r full_loss
} < <(peaks "$tmp/full")
{
  read -r -a resumed_peak
  read -r _
  read -r _
} < <(peaks "$tmp/resumed")
echo "limit $limit_mb MiB a rank; peak MiB: data parallel ${dp_peak[*]} (state MB ${dp_state[*]}), full ${full_peak[*]} (state MB ${full_state[*]}), resumed ${resumed_peak[*]}"
[ "${#dp_peak[@]}" = 4 ] && [ "${#full_peak[@]}" = 4 ] || fail_now "summary.json: not 4 ranks' memory"
for r in 0 1 2 3; do
  [ "${dp_peak[$r]}" -gt "$limit_mb" ] || fail "data parallelism's rank $r is under the limit (${dp_peak[$r]} MiB): the model is too small to show it"
  [ "${full_peak[$r]}" -lt "$limit_mb" ] || fail "full sharding's rank $r passes the limit (${full_peak[$r]} MiB)"
  [ "${resumed_peak[$r]}" -lt "$limit_mb" ] || fail "resuming, full sharding's rank $r passes the limit (${resumed_peak[$r]} MiB)"
done
python3 -c "import math, sys; assert math.isfinite(float(sys.argv[1]))" "$full_loss" || fail "full sharding's loss: $full_loss"
[ -f "$tmp/full/checkpoints/ep0-ba2.ckpt" ] && [ -f "$tmp/full/checkpoints/ep0-ba2.ckpt.rank3-of-4" ] ||
  fail "no sharded checkpoint of batch 2"
grep -q "resuming from .*ba=2" "$tmp/resumed.out" || { cat "$tmp/resumed.out"; fail "the run did not resume at batch 2"; }
finish sharding_memory_mpi

#!/usr/bin/env bash
# baton train under mpirun: data parallelism with no flag, only rank 0 writes the run directory,
# a rank that fails or is killed ends the whole job promptly.
# Usage: train_mpi_test.sh BATON_BINARY SOURCE_DIR
set -uo pipefail
baton=$1
src=$2
source "$(dirname "$0")/../common/lib.sh"
trap 'rm -rf "$tmp"; pkill -9 -f "$tmp" 2>/dev/null' EXIT
require_command mpirun "scripts/install-deps.sh installs openmpi-bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
recipe=$src/recipes/fashion_mnist.yaml
common=(--set progress_bar=false --set precision=fp32 --set eval_subset_num_batches=2 --set loggers.tensorboard=false)

# 1. Two ranks, 30 global batches of 128.
mpirun -np 2 "$baton" train "$recipe" "${common[@]}" --set progress_bar=true --set max_duration=30ba --run-dir "$tmp/run" >"$tmp/out" 2>&1 ||
  { cat "$tmp/out"; fail_now "mpirun -np 2 baton train"; }
[ "$(grep -c '^data parallel: 2 ranks' "$tmp/out")" -eq 1 ] || { cat "$tmp/out"; fail_now "no single 'data parallel: 2 ranks' line"; }
[ "$(grep -c '^done: 30 steps' "$tmp/out")" -eq 1 ] || { cat "$tmp/out"; fail_now "rank 0 alone prints the end"; }
# A log file gets lines, not a terminal's redraws (a rank's output can be a pseudo-terminal).
! grep -q $'\r\|\033\[K' "$tmp/out" || fail_now "the log has the progress bar's redraw codes"
samples=$(python3 -c "import json;print(json.load(open('$tmp/run/summary.json'))['samples'])")
[ "$samples" -eq 3840 ] || fail_now "summary samples $samples, want 30 global batches x 128 = 3840"
losses=$(grep -c '"train/loss"' "$tmp/run/metrics.jsonl")
[ "$losses" -eq 30 ] || fail_now "metrics.jsonl has $losses train/loss lines, want 30 (one writer)"
ls "$tmp/run/checkpoints/"*.ckpt >/dev/null 2>&1 || fail_now "no checkpoint"

# 2. Resume the 2-rank run's checkpoint in one process, to 40 batches.
"$baton" train "$recipe" "${common[@]}" --set max_duration=40ba --run-dir "$tmp/run" --autoresume >"$tmp/out1" 2>&1 ||
  { cat "$tmp/out1"; fail_now "resume in one process"; }
grep -q "resuming from .* at .*ba=30" "$tmp/out1" || { cat "$tmp/out1"; fail_now "did not resume at batch 30"; }
grep -q "^done: 40 steps" "$tmp/out1" || { cat "$tmp/out1"; fail_now "did not end at batch 40"; }

# 3. A rank that fails (here: rank 1 cannot read its checkpoint) ends the job, with its rank and cause.
start=$(date +%s)
mpirun -np 1 "$baton" train "$recipe" "${common[@]}" --set max_duration=2ep --run-dir "$tmp/bad" : \
       -np 1 "$baton" train "$recipe" "${common[@]}" --set max_duration=2ep --run-dir "$tmp/bad" \
       --set load_path="$tmp/missing.ckpt" >"$tmp/out2" 2>&1
code=$?
took=$(( $(date +%s) - start ))
[ "$code" -eq 2 ] || { cat "$tmp/out2"; fail_now "exit $code, want 2 (the failing rank's: bad input)"; }
[ "$took" -lt 30 ] || fail_now "the job took $took s to end after a rank failed"
grep -q "rank 1: .*missing.ckpt" "$tmp/out2" || { cat "$tmp/out2"; fail_now "no 'rank 1: ... missing.ckpt' message"; }

# 4. A rank killed mid-run ends the job within 30 s.
mpirun -np 2 "$baton" train "$recipe" "${common[@]}" --set max_duration=5ep --run-dir "$tmp/kill" >"$tmp/out3" 2>&1 &
job=$!
for _ in $(seq 1 120); do
  [ -s "$tmp/kill/metrics.jsonl" ] && break
  sleep 0.5
done
[ -s "$tmp/kill/metrics.jsonl" ] || { cat "$tmp/out3"; fail_now "training did not start"; }
victim=$(pgrep -f -n "baton train .*$tmp/kill")
[ -n "$victim" ] || fail_now "no rank to kill"
kill -9 "$victim"
start=$(date +%s)
for _ in $(seq 1 60); do
  kill -0 "$job" 2>/dev/null || break
  sleep 0.5
done
took=$(( $(date +%s) - start ))
if kill -0 "$job" 2>/dev/null; then kill -9 "$job"; fail_now "the job still runs 30 s after a rank was killed"; fi
wait "$job"
code=$?
[ "$code" -ne 0 ] || fail_now "the job exited 0 after a rank was killed"
grep -q "rank [01] .*signal 9" "$tmp/out3" || { cat "$tmp/out3"; fail_now "the job's output does not name the killed rank"; }
echo "baton train under mpirun: ok (failed rank ended the job; killed rank: job ended in ${took} s, exit $code)"

#!/usr/bin/env bash
# baton train with sharding: full under mpirun: a checkpoint of 4 ranks resumes with 1, 2 and 3
# (one file, or save_format: sharded) and each run ends at the weights of an uninterrupted 4-rank run
# (1e-5); consolidate and inspect read sharded checkpoints; a rank killed while the
# ranks save leaves latest a whole checkpoint that --autoresume takes; bad input is refused.
# Usage: sharding_mpi_test.sh BATON_BINARY
set -uo pipefail
baton=$1
source "$(dirname "$0")/../common/lib.sh"
trap 'rm -rf "$tmp"; pkill -9 -f "$tmp" 2>/dev/null' EXIT
require_command mpirun "scripts/install-deps.sh installs openmpi-bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

# A small character-level gpt on generated text; no dropout (each rank would draw its own masks).
random_words "$tmp/text.txt" 40000
cat >"$tmp/recipe.yaml" <<EOF
seed: 0
precision: fp32
device: cpu
num_threads: 1
progress_bar: false
eval_interval: 0
data: {dataset: text, path: $tmp/text.txt, tokens: chars, context: 32, batch_size: 16, validation_fraction: 0.1, drop_last: true}
model: {name: gpt, layers: 2, width: 64, heads: 4, dropout: 0.0}
optimizer: {name: adamw, lr: 3.0e-4, weight_decay: 0.1}
sharding: full
save_interval: 6ba
loggers: {tensorboard: false}
EOF
train() {  # RANKS RUN_DIR STEPS [ARGS...]
  local n=$1 dir=$2 steps=$3
  shift 3
  mpirun -np "$n" "$baton" train "$tmp/recipe.yaml" --set max_duration="$steps" --run-dir "$dir" "$@" \
    >"$dir.out" 2>&1 || { cat "$dir.out"; fail_now "mpirun -np $n baton train $steps $*"; }
}
weights() {  # CHECKPOINT OUT: the weights as safetensors
  "$baton" export "$1" --format safetensors --out "$2" >/dev/null 2>&1 || fail_now "baton export $1"
}
# The largest difference between two safetensors files' tensors (float32).
difference() {
  python3 - "$1" "$2" <<'EOF'
import json, struct, sys, array
def read(path):
    data = open(path, 'rb').read()
    n = struct.unpack('<Q', data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == '__metadata__':
            continue
        begin, end = t['data_offsets']
        out[name] = array.array('f', data[8 + n + begin:8 + n + end])
    return out
a, b = read(sys.argv[1]), read(sys.argv[2])
assert a.keys() == b.keys(), (sorted(a), sorted(b))
print(max(max(abs(x - y) for x, y in zip(a[k], b[k])) for k in a))
EOF
}

# 1. Uninterrupted: 4 ranks, 12 steps. The same run saved at 6 steps.
train 4 "$tmp/whole" 12ba
grep -q "sharding: full: each of 4 ranks holds 1/4" "$tmp/whole.out" || { cat "$tmp/whole.out"; fail_now "no sharding line"; }
weights "$tmp/whole/checkpoints/latest" "$tmp/whole.safetensors"
# 2. Resharding: the 4 ranks' checkpoint (one file, or a file a rank of the optimizer's state: save_format
# sharded) resumes with 1, 2 and 3 ranks, each ending at the whole run's weights.
for format in full sharded; do
  train 4 "$tmp/half-$format" 6ba --set save_format=$format
  [ -f "$tmp/half-$format/checkpoints/ep0-ba6.ckpt" ] || fail_now "no checkpoint at batch 6 ($format)"
  for n in 1 2 3; do
    run="$tmp/on$n-$format"
    cp -r "$tmp/half-$format" "$run"
    train "$n" "$run" 12ba --autoresume --set save_format=$format
    grep -q "resuming from .*ba=6" "$run.out" || { cat "$run.out"; fail "$n ranks did not resume at batch 6 ($format)"; }
    weights "$run/checkpoints/latest" "$run.safetensors"
    d=$(difference "$tmp/whole.safetensors" "$run.safetensors")
    python3 -c "import sys; sys.exit(0 if $d < 1e-5 else 1)" || fail "$format, resumed with $n ranks: weights differ by $d"
    echo "$format checkpoint resumed with $n rank(s): largest weight difference $d"
  done
done
half="$tmp/half-sharded/checkpoints"
[ -f "$half/ep0-ba6.ckpt.rank3-of-4" ] || fail "save_format sharded: no file of rank 3 beside the checkpoint"

# consolidate: one file that resumes and exports alone; inspect reads the sharded one.
"$baton" checkpoint consolidate "$tmp/half-sharded/checkpoints" --out "$tmp/one.ckpt" >/dev/null 2>&1 ||
  fail "baton checkpoint consolidate"
"$baton" checkpoint inspect "$half/ep0-ba6.ckpt" >"$tmp/inspect.out" 2>&1 || fail "inspect of a sharded checkpoint"
grep -q "optimizer_state/0/" "$tmp/inspect.out" || { cat "$tmp/inspect.out"; fail "inspect: no optimizer_state tensors"; }
weights "$tmp/one.ckpt" "$tmp/one.safetensors"
weights "$half/ep0-ba6.ckpt" "$tmp/half.safetensors"
[ "$(difference "$tmp/one.safetensors" "$tmp/half.safetensors")" = "0.0" ] || fail "consolidated weights differ"
# A rank's file missing: refused by name, nothing written.
mv "$half/ep0-ba6.ckpt.rank2-of-4" "$tmp/rank2"
expect 2 "rank 2's file, " -- "$baton" checkpoint consolidate "$half/ep0-ba6.ckpt" --out "$tmp/two.ckpt"
[ ! -e "$tmp/two.ckpt" ] || fail "consolidate wrote a file from an incomplete checkpoint"

# 3. A rank killed while the ranks save (a checkpoint every batch): latest names a whole checkpoint,
# and --autoresume goes on from it to the whole run's weights.
mkdir -p "$tmp/kill"
mpirun -np 4 "$baton" train "$tmp/recipe.yaml" --set max_duration=12ba --set save_interval=1ba --set save_format=sharded \
  --run-dir "$tmp/kill" >"$tmp/kill.out" 2>&1 &
job=$!
for _ in $(seq 1 400); do
  [ "$(ls "$tmp/kill/checkpoints/" 2>/dev/null | grep -c '\.ckpt$')" -ge 3 ] && break
  sleep 0.05
done
victim=$(pgrep -f -n "baton train .*$tmp/kill")
[ -n "$victim" ] && kill -9 "$victim"
wait "$job" 2>/dev/null
"$baton" checkpoint inspect "$tmp/kill/checkpoints/latest" >/dev/null 2>&1 || fail "after the kill, latest is not a whole checkpoint"
echo "killed a rank at $(readlink "$tmp/kill/checkpoints/latest")"
train 4 "$tmp/kill" 12ba --autoresume --set save_interval=1ba --set save_format=sharded
grep -q "resuming from" "$tmp/kill.out" || { cat "$tmp/kill.out"; fail "the killed run did not resume"; }
weights "$tmp/kill/checkpoints/latest" "$tmp/kill.safetensors"
d=$(difference "$tmp/whole.safetensors" "$tmp/kill.safetensors")
python3 -c "import sys; sys.exit(0 if $d < 1e-5 else 1)" || fail "resumed after the kill: weights differ by $d"

# 4. A search whose trials are sharded jobs (--launcher 'mpirun -np 2'): each trial trains over 2
# ranks with the learning rate it was given, writes its sharded checkpoints, and reports its value.
printf 'optimizer.lr: {_type: choice, _value: [1.0e-3, 3.0e-3]}\n' >"$tmp/space.yaml"
"$baton" search "$tmp/space.yaml" --recipe "$tmp/recipe.yaml" --launcher "mpirun -np 2" --strategy grid \
  --set max_duration=4ba --set save_format=sharded --set eval_interval=2ba --metric eval/loss --direction minimize \
  --trials 2 --run-dir "$tmp/search" >"$tmp/search.out" 2>&1 || { cat "$tmp/search.out"; fail_now "sharded search"; }
grep -q "trials 2/2 done, 0 running, 0 failed" "$tmp/search.out" || { cat "$tmp/search.out"; fail "sharded trials failed"; }
for t in 0 1; do
  grep -q "sharding: full: each of 2 ranks" "$tmp/search/trials/$t/stdout.log" || fail "trial $t is not a sharded job"
  [ -f "$tmp/search/trials/$t/checkpoints/ep0-ba4.ckpt.rank1-of-2" ] || fail "trial $t: no sharded checkpoint"
done
[ "$(grep -ho 'lr: [0-9.e-]*' "$tmp/search/trials/"{0,1}/recipe.yaml | sort -u | wc -l)" = 2 ] ||
  fail "the trials did not train with their own learning rates"
expect 2 "--launcher starts a recipe's trials" -- "$baton" search "$tmp/space.yaml" --command true --launcher "mpirun -np 2"

# 5. Bad input: a unit kind the model lacks (exit 2, named; nothing trained).
mpirun -np 2 "$baton" train "$tmp/recipe.yaml" --set max_duration=2ba --set shard_unit=Bottleneck \
  --run-dir "$tmp/bad" >"$tmp/bad.out" 2>&1
code=$?
[ "$code" -eq 2 ] || { cat "$tmp/bad.out"; fail "shard_unit Bottleneck: exit $code, want 2"; }
grep -q "shard_unit: the model has no Bottleneck block (its blocks: Block)" "$tmp/bad.out" ||
  { cat "$tmp/bad.out"; fail "shard_unit Bottleneck: not named"; }
finish "sharded training under mpirun"

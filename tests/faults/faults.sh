#!/usr/bin/env bash
# Fault injection: kill -9 and SIGTERM at random moments (a fixed list of seeds) of a training run,
# of its checkpoint writes, of a search and of a task group; a disk that fills up during a
# checkpoint and during a metrics write; a read-only run folder. After each fault, what was saved
# before is there unchanged, the next run resumes (or refuses in one line), and the metrics hold
# each batch once. Prints the table of docs/reliability.md; exits 1 on any loss.
#
#   faults.sh BATON_BINARY SOURCE_DIR [ROUNDS] [PLAN_EXAMPLE]     # ROUNDS per kind (default 30)
#   FAULTS_KINDS="checkpoint search" faults.sh ...   # only these of: train checkpoint search taskgroup disk
set -uo pipefail
baton=$1
src=$2
rounds=${3:-30}
plan_example=${4:-}
recipe=$src/recipes/fashion_mnist.yaml
tmp=$(mktemp -d)
cleanup() {
  for m in "$tmp"/mnt-*; do mountpoint -q "$m" 2>/dev/null && umount "$m"; done
  rm -rf "$tmp"
}
trap cleanup EXIT
losses=0
table=()
kinds=" ${FAULTS_KINDS:-train checkpoint search taskgroup disk} "
want() { [[ "$kinds" == *" $1 "* ]]; }
row() { table+=("| $1 | $2 | $3 | $4 |"); }  # kind, rounds, faults injected, losses
lost() { echo "LOST ($1): $2"; losses=$((losses + 1)); }

# A pause drawn from `seed` (the same moments on every run of this script).
pause() { python3 -c "import random; r = random.Random($1); print(round(r.uniform($2, $3), 3))"; }
sums() { (cd "$1" 2>/dev/null && sha256sum -- *.ckpt 2>/dev/null) | sort; }
steps_once() {  # the run's train/loss steps are 1..N, each once
  python3 - "$1" "$2" <<'P'
import json, sys
steps = [j["step"] for j in map(json.loads, open(sys.argv[1])) if "train/loss" in j]
sys.exit(0 if steps == list(range(1, int(sys.argv[2]) + 1)) else 1)
P
}
weights() { "$baton" checkpoint inspect "$1" --json | python3 -c "import json,sys; print(json.load(sys.stdin)['weights_sha256'])"; }

if [ ! -d "${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}" ]; then
  echo "skipped: no Fashion-MNIST (scripts/install-deps.sh installs dataset-fashion-mnist, or set FASHION_MNIST_DIR)"
  exit 77
fi

# ---- training, killed at random moments, then resumed ------------------------------------------
steps=150
train=(train "$recipe" --set max_duration=${steps}ba --set eval_interval=50ba --set deterministic=true
       --set precision=fp32 --set progress_bar=false --set loggers.tensorboard=false
       --set save_num_checkpoints_to_keep=-1)  # every checkpoint kept: none saved may change or vanish
"$baton" "${train[@]}" --set save_interval=5ba --run-dir "$tmp/clean" >/dev/null 2>&1 || { echo "faults: the clean run failed"; exit 1; }
clean=$(weights "$tmp/clean/checkpoints/latest")

train_rounds() {  # kind, save_interval, pause range
  local kind=$1 every=$2 lo=$3 hi=$4 faults=0 before=$losses
  for i in $(seq "$rounds"); do
    local run="$tmp/train-$every-$i" sig=KILL
    [ $((i % 2)) -eq 0 ] && sig=TERM
    "$baton" "${train[@]}" --set save_interval="$every" --run-dir "$run" >"$run.log" 2>&1 &
    local pid=$!
    sleep "$(pause "$i" "$lo" "$hi")"
    kill -"$sig" "$pid" 2>/dev/null && faults=$((faults + 1))
    wait "$pid" 2>/dev/null
    local saved
    saved=$(sums "$run/checkpoints")
    if ! "$baton" "${train[@]}" --set save_interval="$every" --run-dir "$run" --autoresume >>"$run.log" 2>&1; then
      lost "$kind $i" "the resumed run failed: $(tail -2 "$run.log")"
      continue
    fi
    # Every checkpoint saved before the fault is still there, byte for byte: the resumed run starts
    # from the newest (even one the killed run had not yet linked as latest) and never writes one
    # again (its wall-clock times would differ).
    if [ -n "$saved" ] && comm -23 <(echo "$saved") <(sums "$run/checkpoints") | grep -q .; then
      lost "$kind $i" "a checkpoint saved before the $sig changed or vanished"
    fi
    steps_once "$run/metrics.jsonl" "$steps" || lost "$kind $i" "metrics.jsonl does not hold each batch once"
    [ "$(weights "$run/checkpoints/latest")" = "$clean" ] || lost "$kind $i" "the weights differ from a run never stopped"
    rm -rf "$run"
  done
  row "$kind" "$rounds" "$faults" $((losses - before))
}
want train && train_rounds "train: kill -9 / SIGTERM" 10ba 0.5 3.5
want checkpoint && train_rounds "checkpoint write: kill -9 / SIGTERM (a checkpoint every batch)" 1ba 0.5 3.5

# ---- a search, killed and resumed ---------------------------------------------------------------
printf 'x: {_type: uniform, _value: [0, 1]}\n' >"$tmp/space.yaml"
cat >"$tmp/trial.sh" <<'Y'
#!/bin/sh
sleep 0.2
x=$(echo "$BATON_TRIAL_PARAMETERS" | sed 's/.*"x":\([-0-9.e+]*\).*/\1/')
echo "baton: {\"final\": $x}"
Y
chmod +x "$tmp/trial.sh"
search_rounds() {
  local faults=0 before=$losses
  for i in $(seq "$rounds"); do
    local dir="$tmp/search-$i" sig=KILL
    [ $((i % 2)) -eq 0 ] && sig=TERM
    local args=(search "$tmp/space.yaml" --command "$tmp/trial.sh" --trials 10 --parallel 2 --strategy random --seed "$i" --run-dir "$dir")
    "$baton" "${args[@]}" >"$dir.log" 2>&1 &
    local pid=$!
    sleep "$(pause "$i" 0.2 1.5)"
    kill -"$sig" "$pid" 2>/dev/null && faults=$((faults + 1))
    wait "$pid" 2>/dev/null
    "$baton" trials ls --storage "$dir/search.db" --json >"$dir.before" 2>/dev/null || echo "[]" >"$dir.before"
    if ! "$baton" "${args[@]}" --resume >>"$dir.log" 2>&1; then
      lost "search $i" "the resumed search failed: $(tail -2 "$dir.log")"
      continue
    fi
    "$baton" trials ls --storage "$dir/search.db" --json >"$dir.after"
    python3 - "$dir.before" "$dir.after" <<'P' || lost "search $i" "a finished trial changed, or not every trial finished once"
import json, sys
before, after = (json.load(open(p)) for p in sys.argv[1:3])
done = {r["id"]: (r["parameters"], r["final"]) for r in before if r["status"] == "trained"}
assert len(after) == 10 and all(r["status"] == "trained" for r in after), after
assert all((r["parameters"], r["final"]) == done[r["id"]] for r in after if r["id"] in done)
P
    rm -rf "$dir"
  done
  row "search: kill -9 / SIGTERM" "$rounds" "$faults" $((losses - before))
}
want search && search_rounds

# ---- a task group, killed and run again ---------------------------------------------------------
if ! want taskgroup; then
  :
elif [ -n "$plan_example" ] && [ -x "$plan_example" ]; then
  want=$("$plan_example" --session local 2>/dev/null | tail -1)
  faults=0
  before=$losses
  for i in $(seq "$rounds"); do
    "$plan_example" --session local >/dev/null 2>&1 &
    pid=$!
    sleep "$(pause "$i" 0.0 0.1)"
    kill -9 "$pid" 2>/dev/null && faults=$((faults + 1))
    wait "$pid" 2>/dev/null
    [ "$("$plan_example" --session local 2>/dev/null | tail -1)" = "$want" ] || lost "task group $i" "the run after the kill gave other outputs"
  done
  row "task group: kill -9" "$rounds" "$faults" $((losses - before))
else
  row "task group: kill -9" "skipped (no plan_example)" 0 0
fi

# ---- a full disk, a read-only folder (a tmpfs of a set size: root only) -------------------------
mnt() {  # mnt NAME OPTIONS: a tmpfs at $tmp/mnt-NAME
  mkdir -p "$tmp/mnt-$1" && mount -t tmpfs -o "$2" tmpfs "$tmp/mnt-$1" 2>/dev/null
}
if ! want disk; then
  :
elif [ "$(id -u)" -eq 0 ] && mnt probe size=1m; then
  before=$losses
  # Checkpoints: two fit (about 1.7 MB each with momentum), the third does not.
  mnt ckpt size=5m
  run="$tmp/mnt-ckpt/run"
  "$baton" "${train[@]}" --set save_interval=20ba --run-dir "$run" >"$tmp/full.log" 2>&1
  rc=$?
  { [ "$rc" -eq 1 ] && grep -q "No space left on device" "$tmp/full.log" && [ "$(wc -l <"$tmp/full.log")" -lt 12 ] &&
    "$baton" checkpoint inspect "$run/checkpoints/latest" >/dev/null 2>&1; } ||
    lost "full disk" "a checkpoint write: exit $rc, or the last good checkpoint is unreadable: $(tail -2 "$tmp/full.log")"
  # Metrics: no checkpoints, a folder too small for the run's metrics.
  mnt metrics size=8k
  run="$tmp/mnt-metrics/run"
  "$baton" "${train[@]}" --set "callbacks={checkpoint_saver: false}" --set loggers.csv=false --run-dir "$run" >"$tmp/full2.log" 2>&1
  rc=$?
  { [ "$rc" -eq 1 ] && grep -q "cannot write" "$tmp/full2.log"; } || lost "full disk" "a metrics write: exit $rc: $(tail -2 "$tmp/full2.log")"
  python3 -c "
import json, sys
lines = open('$run/metrics.jsonl').read().split('\n')
[json.loads(l) for l in lines[:-1]]  # every whole line is JSON" 2>/dev/null || lost "full disk" "metrics.jsonl has a broken line before its last"
  row "disk full during a checkpoint and a metrics write" 2 2 $((losses - before))
  # Read-only: an existing run behind a read-only view; resuming or starting there is refused.
  before=$losses
  "$baton" "${train[@]}" --set max_duration=10ba --set save_interval=5ba --run-dir "$tmp/ro-run" >/dev/null 2>&1
  saved=$(sums "$tmp/ro-run/checkpoints")
  mkdir -p "$tmp/mnt-ro" && mount --bind "$tmp/ro-run" "$tmp/mnt-ro" && mount -o remount,bind,ro "$tmp/mnt-ro"
  "$baton" "${train[@]}" --set max_duration=20ba --run-dir "$tmp/mnt-ro" --autoresume >"$tmp/ro.log" 2>&1
  rc=$?
  { [ "$rc" -ge 1 ] && [ "$rc" -lt 128 ] && [ "$(wc -l <"$tmp/ro.log")" -lt 6 ] && grep -qi "read-only" "$tmp/ro.log"; } ||
    lost "read-only" "resuming in a read-only folder: exit $rc: $(tail -2 "$tmp/ro.log")"
  [ "$(sums "$tmp/ro-run/checkpoints")" = "$saved" ] || lost "read-only" "checkpoints changed"
  row "read-only run folder" 1 1 $((losses - before))
else
  row "disk full, read-only folder" "skipped (needs root to mount a tmpfs)" 0 0
fi

echo "| fault | rounds | faults injected | losses |"
echo "|---|---|---|---|"
printf '%s\n' "${table[@]}"
[ "$losses" -eq 0 ] && echo "faults: ok" || echo "faults: $losses loss(es)"
exit $((losses > 0))

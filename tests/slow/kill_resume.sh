#!/usr/bin/env bash
# kill -9 at random moments (label slow): a deterministic run killed with SIGKILL 5 times (past the
# checkpoints at 1/6 ... 5/6 of the run, a random moment later, on a fast machine or a slow one) and
# resumed with --autoresume each time ends with the same weights (weights_sha256) as a run that
# never stopped. Usage: kill_resume.sh BATON_BINARY SOURCE_DIR [--set key=value]... (more recipe keys);
# RECIPE=file.yaml trains another recipe than recipes/fashion_mnist.yaml, STEPS=N for N batches.
set -uo pipefail
baton=$1
src=$2
shift 2
source "$(dirname "$0")/../common/lib.sh"
[ -n "${RECIPE:-}" ] || require_fashion
steps=${STEPS:-600}
recipe=${RECIPE:-$src/recipes/fashion_mnist.yaml}
common=(--set max_duration=${steps}ba --set eval_interval=0 --set progress_bar=false --set deterministic=true
        --set save_interval=7ba --set precision=fp32 "$@")

"$baton" train "$recipe" "${common[@]}" --run-dir "$tmp/clean" >/dev/null || { echo "FAIL: clean run"; exit 1; }
expected=$("$baton" checkpoint inspect "$tmp/clean/checkpoints/latest" --json | python3 -c "import json,sys; print(json.load(sys.stdin)['weights_sha256'])")

kills=0
for attempt in $(seq 40); do
  "$baton" train "$recipe" "${common[@]}" --run-dir "$tmp/killed" --autoresume >>"$tmp/killed.log" 2>&1 &
  pid=$!
  if [ "$kills" -lt 5 ]; then
    # Kill i lands past the checkpoint at i/6 of the run, a random moment later (mid-batch, or
    # mid-write of the next checkpoint), whatever this machine's speed.
    goal=$(( (kills + 1) * steps / 6 ))
    while kill -0 "$pid" 2>/dev/null; do
      at=$(readlink "$tmp/killed/checkpoints/latest" 2>/dev/null | sed -n 's/.*ba\([0-9]*\)\.ckpt/\1/p')
      [ "${at:-0}" -ge "$goal" ] && break
      sleep 0.05
    done
    sleep "$(python3 -c "import random; print(round(random.uniform(0, 0.3), 3))")"
    if kill -9 "$pid" 2>/dev/null; then kills=$((kills + 1)); fi
    wait "$pid" 2>/dev/null
  else
    wait "$pid" || { echo "FAIL: the last resumed run failed"; tail -5 "$tmp/killed.log"; exit 1; }
    break
  fi
done
got=$("$baton" checkpoint inspect "$tmp/killed/checkpoints/latest" --json | python3 -c "import json,sys; d=json.load(sys.stdin); print(d['weights_sha256'], d['timestamp']['batch'])")
echo "kills: $kills; uninterrupted $expected; killed and resumed $got"
[ "$kills" -eq 5 ] || { echo "FAIL: the run ended after $kills kills, before 5: raise STEPS"; exit 1; }
[ "$got" = "$expected $steps" ] || { echo "FAIL: the weights differ"; grep -E "resuming|done" "$tmp/killed.log"; exit 1; }
echo "kill_resume: ok"

#!/usr/bin/env bash
# The best checkpoints (label integration, under a minute): save_top_k keeps the K best checkpoints
# by save_monitor plus the latest, best.ckpt names the best, a checkpoint is written after each
# evaluation of the monitor's set; and all of it survives kill -9 (runs killed at random moments,
# then resumed with --autoresume: best.ckpt always names one whole checkpoint, the best of those
# on disk, and at the end the best of every evaluation the run's timeline holds). Bad keys: exit 2.
# Usage: top_k_test.sh BATON_BINARY
set -uo pipefail
baton=$1
source "$(dirname "$0")/../common/lib.sh"
cd "$tmp" || exit 1

/usr/bin/python3 - <<'PY'
import numpy as np
r = np.random.default_rng(11)
x = r.normal(size=(3400, 16)).astype(np.float32)
y = (x[:, :3].sum(1) > 0).astype(np.int64) + (x[:, 3] > 0.7)
np.save("x.npy", x[:3000]); np.save("y.npy", y[:3000]); np.save("vx.npy", x[3000:]); np.save("vy.npy", y[3000:])
PY
cat >k.yaml <<'YAML'
max_duration: 8ep
progress_bar: false
model: {name: mlp, hidden: [64]}
optimizer: {name: sgd, lr: 0.5, momentum: 0.9}
data: {dataset: files, train_inputs: x.npy, train_labels: y.npy, batch_size: 100}
eval: {val: {inputs: vx.npy, labels: vy.npy, metrics: [accuracy, loss], interval: 7ba}}
save_top_k: 3
save_monitor: eval/val/accuracy
YAML

# check RUN_DIR [final]: best.ckpt names a readable checkpoint holding the best value on disk; the
# ranked files are at most K (+ the latest); with "final", they are the K best evaluations of the
# timeline in metrics.jsonl (ties: the newer), plus the latest.
check() {
  local run=$1 final=${2:-}
  for f in "$run"/checkpoints/*.ckpt; do
    [ -e "$f" ] || continue
    "$baton" checkpoint inspect "$f" --json >"$f.json" 2>&1 || { fail "$f cannot be read: $(head -c 200 "$f.json")"; continue; }
  done
  /usr/bin/python3 - "$run" "$final" <<'PY' || fail "$run: the best checkpoints ($final)"
import glob, json, os, sys
run, final = sys.argv[1], sys.argv[2]
folder = f"{run}/checkpoints"
files = {}
for j in glob.glob(f"{folder}/*.ckpt.json"):
    name = os.path.basename(j)[:-5]
    meta = json.load(open(j))
    files[name] = (meta["timestamp"]["batch"], meta.get("monitor", {}).get("value"))
best_link = os.path.join(folder, "best.ckpt")
ranked = {n: v for n, v in files.items() if v[1] is not None and n != "best.ckpt"}
if os.path.islink(best_link):
    target = os.readlink(best_link)
    assert target in files, f"best.ckpt -> {target}, which is not a whole checkpoint ({sorted(files)})"
    top = max(v[1] for v in ranked.values())
    assert files[target][1] == top, f"best.ckpt -> {target} ({files[target][1]}), but {top} is on disk"
else:
    assert not ranked, f"ranked checkpoints but no best.ckpt: {ranked}"
if final:
    rows = [r for r in map(json.loads, open(f"{run}/metrics.jsonl")) if "eval/val/accuracy" in r]
    evals = sorted(((r["eval/val/accuracy"], r["step"]) for r in rows), reverse=True)
    want = {step for _, step in evals[:3]}
    latest = os.readlink(f"{folder}/latest")
    steps = json.load(open(f"{run}/summary.json"))["steps"]
    assert files[latest][0] == steps, (files[latest], steps)
    got = {b for b, v in ranked.values()} - ({steps} - want)  # the latest is kept whatever its rank
    assert got == want, f"kept {sorted(got)}, the 3 best evaluations were at {sorted(want)} of {evals[:5]}"
    assert files[os.readlink(best_link)][0] == evals[0][1], (os.readlink(best_link), evals[0])
    assert len({n for n in files if n != "best.ckpt"} - set(ranked) - {latest}) == 0, sorted(files)
PY
  rm -f "$run"/checkpoints/*.json
}

# Straight through.
"$baton" train k.yaml --run-dir run >train.log 2>&1 || fail "train: $(tail -2 train.log)"
check run final
"$baton" checkpoint inspect run/checkpoints/best.ckpt | grep -q "ranked by eval/val/accuracy" ||
  fail "checkpoint inspect does not say what best.ckpt was ranked by"

# kill -9 at random moments, then --autoresume: nothing best ever lost, never a dangling best.ckpt.
/usr/bin/python3 -c "
import random
random.seed(7)
print(' '.join(str(round(random.uniform(0.0, 2.0), 2)) for _ in range(5)))" >delays
for delay in $(cat delays); do
  "$baton" train k.yaml --run-dir killed --autoresume --set max_duration=30ep >>killed.log 2>&1 &
  pid=$!
  # From its first checkpoint on (a slow start, as under the sanitizers, must not have every kill
  # land before one: then nothing would be resumed).
  for _ in $(seq 1200); do [ -e killed/checkpoints/latest ] || ! kill -0 "$pid" 2>/dev/null && break; sleep 0.1; done
  sleep "$delay"
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  check killed
done
"$baton" train k.yaml --run-dir killed --autoresume --set max_duration=30ep >>killed.log 2>&1 ||
  fail "resume after the kills: $(tail -3 killed.log)"
check killed final
grep -q "resuming from" killed.log || fail "no run was resumed: $(tail -3 killed.log)"

refused "save_top_k without a monitor" "save_monitor: '' must be <evaluation set>/<metric>" \
  "$baton" train k.yaml --run-dir bad --set save_monitor=
refused "a monitor the set does not log" "save_monitor: eval/val/f1: eval/val logs accuracy, loss, not f1" \
  "$baton" train k.yaml --run-dir bad --set save_monitor=eval/val/f1
refused "top-k beside newest-N" "save_num_checkpoints_to_keep: and save_top_k" \
  "$baton" train k.yaml --run-dir bad --set save_num_checkpoints_to_keep=2
refused "a save_mode" "save_mode: " "$baton" train k.yaml --run-dir bad --set save_mode=best
refused "a checkpoint named best.ckpt" "'best.ckpt' is the link to the best checkpoint" \
  "$baton" train k.yaml --run-dir bad --set save_filename=best.ckpt
[ ! -e bad ] || fail "a refused run left its folder"

[ "$failures" -eq 0 ] && echo "top_k_test: ok" || exit 1

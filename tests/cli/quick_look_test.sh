#!/usr/bin/env bash
# Lightning's conveniences for a quick look at a recipe (label integration, seconds): the model
# summary (when training starts, and baton summary), max_duration in wall-clock time, fast_dev_run
# (a few batches of training and of each evaluation set, nothing written: no run folder, checkpoint
# or logger file), overfit_batches (the same first batches every epoch), limit_train_batches and
# limit_eval_batches (a count or a fraction), and their refusals (exit 2, one line).
# Usage: quick_look_test.sh BATON_BINARY
set -uo pipefail
baton=$1
source "$(dirname "$0")/../common/lib.sh"
cd "$tmp" || exit 1

/usr/bin/python3 - <<'PY'
import numpy as np
r = np.random.default_rng(5)
x = r.normal(size=(1200, 8)).astype(np.float32)
y = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0.5)
np.save("x.npy", x[:1000]); np.save("y.npy", y[:1000]); np.save("vx.npy", x[1000:]); np.save("vy.npy", y[1000:])
PY
cat >r.yaml <<'YAML'
max_duration: 3ep
progress_bar: false
model: {name: mlp, hidden: [16]}
optimizer: {name: sgd, lr: 0.1}
loggers: {csv: {}, jsonl: {}, tensorboard: {}}
data: {dataset: files, train_inputs: x.npy, train_labels: y.npy, eval_inputs: vx.npy, eval_labels: vy.npy,
       batch_size: 100, eval_batch_size: 50}
eval: {val: {inputs: vx.npy, labels: vy.npy, metrics: [accuracy, confusion_matrix], interval: 5ba}}
YAML

# fast_dev_run: 2 batches, every set evaluated once, nothing at all written here.
mkdir before && touch before/stamp && sleep 1
"$baton" train r.yaml --set fast_dev_run=2 --set save_folder=ckpt >fast.log 2>&1 || fail "fast_dev_run: $(tail -2 fast.log)"
grep -q "fast_dev_run: 2 training batches and 2 of each evaluation set ran; nothing written" fast.log ||
  fail "fast_dev_run says: $(cat fast.log)"
grep -q "^  eval/val/accuracy" fast.log && grep -q "^  eval/accuracy" fast.log || fail "fast_dev_run: no metrics: $(cat fast.log)"
written=$(find . -newer before/stamp ! -name out.log ! -name fast.log ! -path . | head -5)
[ -z "$written" ] || fail "fast_dev_run wrote: $written"
"$baton" train r.yaml --set fast_dev_run=true >fast1.log 2>&1 || fail "fast_dev_run true: $(tail -2 fast1.log)"
grep -q "1 training batch and 1 of each" fast1.log || fail "fast_dev_run true: $(cat fast1.log)"
[ ! -e runs ] || fail "fast_dev_run made runs/"

# limit_train_batches (a fraction) and limit_eval_batches (a count): 3 of 10 batches an epoch.
"$baton" train r.yaml --run-dir lim --set limit_train_batches=0.3 --set limit_eval_batches=1 >lim.log 2>&1 ||
  fail "limits: $(tail -2 lim.log)"
/usr/bin/python3 - <<'PY' || fail "limit_train_batches / limit_eval_batches"
import json
rows = [json.loads(l) for l in open("lim/metrics.jsonl")][1:]
assert max(r["step"] for r in rows) == 9, max(r["step"] for r in rows)       # 3 epochs of 3 batches
assert [r["step"] for r in rows if "eval/val/accuracy" in r] == [5, 9]
summary = json.load(open("lim/summary.json"))
assert summary["samples"] == 900, summary["samples"]
PY
# One evaluation batch of 50 examples: the confusion matrix counts 50.
/usr/bin/python3 -c "
import csv
rows = list(csv.reader(open('lim/eval/val/confusion_matrix.csv')))[1:]
total = sum(int(v) for r in rows for v in r[1:])
assert total == 50, total" || fail "limit_eval_batches: the evaluation did not stop at one batch"

# overfit_batches: the same 2 batches every epoch, in the same order; the loss falls on them.
"$baton" train r.yaml --run-dir over --set overfit_batches=2 --set max_duration=40ep \
  --set 'optimizer={name: adam, lr: 0.01}' >over.log 2>&1 ||
  fail "overfit_batches: $(tail -2 over.log)"
/usr/bin/python3 - <<'PY' || fail "overfit_batches"
import json
rows = [json.loads(l) for l in open("over/metrics.jsonl")][1:]
loss = [r["train/loss"] for r in rows if "train/loss" in r]
assert len(loss) == 80, len(loss)
assert loss[-1] < 0.25 * loss[0], (loss[0], loss[-1])  # 200 examples, learnt by heart
PY

# The model summary: printed when training starts, and by baton summary (text and JSON).
grep -q "195 parameters (195 trainable, 0 frozen), 0.00 MB, 352 FLOPs per example" lim.log ||
  fail "no model summary when training starts: $(head -8 lim.log)"
"$baton" summary r.yaml >summary.txt 2>&1 || fail "baton summary: $(cat summary.txt)"
[ "$(grep -c ' Linear ' summary.txt)" -eq 2 ] || fail "baton summary: $(cat summary.txt)"
"$baton" summary r.yaml --set 'model={name: mlp, hidden: [16, 16]}' --json >summary.json 2>&1 || fail "summary --json"
/usr/bin/python3 -c "
import json
s = json.load(open('summary.json'))
assert s['parameters'] == 8 * 16 + 16 + 16 * 16 + 16 + 16 * 3 + 3, s['parameters']
assert s['flops_per_example'] == 2 * (8 * 16 + 16 * 16 + 16 * 3), s['flops_per_example']
assert [p['type'] for p in s['parts']].count('Linear') == 3, s['parts']" || fail "summary --json: $(head -c 300 summary.json)"
refused "a summary of a recipe that is not there" "nope.yaml: cannot open the recipe" "$baton" summary nope.yaml

# max_duration in wall-clock time: training stops after the batch that reaches it, with a checkpoint;
# --autoresume with a longer one goes on, and the time already trained counts.
"$baton" train r.yaml --run-dir clock --set max_duration=1s --set 'eval={}' --set eval_interval=100ba \
  --set 'loggers={}' >clock.log 2>&1 || fail "max_duration 1s: $(tail -2 clock.log)"
grep -q "max_duration 1s of training reached" clock.log || fail "max_duration 1s: $(tail -3 clock.log)"
"$baton" checkpoint inspect clock/checkpoints/latest --json >clock1.json 2>&1 || fail "no checkpoint at the end"
"$baton" train r.yaml --run-dir clock --autoresume --set max_duration=2s --set 'eval={}' --set eval_interval=100ba \
  --set 'loggers={}' >clock2.log 2>&1 || fail "resume to 2s: $(tail -2 clock2.log)"
"$baton" checkpoint inspect clock/checkpoints/latest --json >clock2.json 2>&1 || fail "no checkpoint after the resume"
/usr/bin/python3 - <<'PY' || fail "max_duration in seconds"
import json
one, two = json.load(open("clock1.json")), json.load(open("clock2.json"))
summary = json.load(open("clock/summary.json"))
assert 1.0 <= one["timestamp"]["total_wct"] < 1.5, one["timestamp"]
assert 2.0 <= two["timestamp"]["total_wct"] < 2.5, two["timestamp"]
assert two["timestamp"]["batch"] > one["timestamp"]["batch"] > 10, (one["timestamp"], two["timestamp"])
assert summary["steps"] == two["timestamp"]["batch"] and not summary["stopped_early"], summary
assert summary["trainable_params"] == summary["params"] > 100, summary  # the MLP's 195: every one trains
PY
refused "dur under a wall-clock max_duration" "eval_interval: '0.5dur' is a fraction of the run" \
  "$baton" train r.yaml --run-dir bad --set max_duration=30m --set eval_interval=0.5dur
refused "one_cycle under a wall-clock max_duration" "scheduler: one_cycle spans the run" \
  "$baton" train r.yaml --run-dir bad --set max_duration=2h --set 'scheduler={name: one_cycle, max_lr: 0.1}'

refused "a limit of 0" "limit_train_batches: expected a number of batches" \
  "$baton" train r.yaml --run-dir bad --set limit_train_batches=0
refused "a fraction above 1" "limit_eval_batches: expected a number of batches" \
  "$baton" train r.yaml --run-dir bad --set limit_eval_batches=1.5
refused "overfit_batches with a limit" "overfit_batches sets the batches already" \
  "$baton" train r.yaml --run-dir bad --set overfit_batches=2 --set limit_train_batches=3
refused "fast_dev_run -1" "fast_dev_run: expected true, false or a number of batches" \
  "$baton" train r.yaml --run-dir bad --set fast_dev_run=-1
refused "fast_dev_run with --autoresume" "fast_dev_run writes nothing" \
  "$baton" train r.yaml --run-dir bad --set fast_dev_run=1 --autoresume
[ ! -e bad ] || fail "a refused run left its folder"

[ "$failures" -eq 0 ] && echo "quick_look_test: ok" || exit 1

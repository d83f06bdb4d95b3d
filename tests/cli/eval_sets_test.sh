#!/usr/bin/env bash
# Several evaluation sets (label integration, seconds): a recipe's `eval: {NAME: {...}}` sets, each
# with its own metrics and interval, logged as eval/NAME/METRIC beside the data set's own eval/...;
# a stopper that watches one of them; a resumed run that goes on evaluating each at its interval;
# `baton eval` over every set; the text and fashion_mnist kinds' sets; and the refusals (exit 2,
# one line naming the key, nothing written). Images, WebDataset and token shards: their own tests.
# Usage: eval_sets_test.sh BATON_BINARY
set -uo pipefail
baton=$1
source "$(dirname "$0")/../common/lib.sh"
cd "$tmp" || exit 1
REFUSED_ONE_LINE=1

/usr/bin/python3 - <<'PY'
import numpy as np
r = np.random.default_rng(3)
x = r.normal(size=(1400, 8)).astype(np.float32)
y = (x[:, 0] + x[:, 1] > 0).astype(np.int64) + (x[:, 2] > 0.8)
for name, a, b in (("train", 0, 1000), ("val", 1000, 1200), ("test", 1200, 1400)):
    np.save(f"{name}_x.npy", x[a:b]); np.save(f"{name}_y.npy", y[a:b])
PY
cat >sets.yaml <<'YAML'
max_duration: 4ep
progress_bar: false
eval_interval: 2ep
model: {name: mlp, hidden: [32]}
optimizer: {name: sgd, lr: 0.1}
data: {dataset: files, train_inputs: train_x.npy, train_labels: train_y.npy, eval_inputs: test_x.npy,
       eval_labels: test_y.npy, batch_size: 50}
eval:
  val:  {inputs: val_x.npy, labels: val_y.npy, metrics: [accuracy, f1], interval: 10ba}
  test: {inputs: test_x.npy, labels: test_y.npy, metrics: [accuracy, confusion_matrix], interval: 1ep, batch_size: 7}
YAML

# Each set at its own interval with its own metrics; the data set's own set keeps eval/accuracy.
"$baton" train sets.yaml --run-dir run >train.log 2>&1 || fail "train: $(tail -3 train.log)"
/usr/bin/python3 - <<'PY' || fail "the sets' metrics"
import json
rows = [json.loads(l) for l in open("run/metrics.jsonl")][1:]
steps = lambda key: [r["step"] for r in rows if key in r]
assert steps("eval/val/accuracy") == [10, 20, 30, 40, 50, 60, 70, 80], steps("eval/val/accuracy")
assert steps("eval/val/f1") == steps("eval/val/accuracy")
assert steps("eval/test/accuracy") == [20, 40, 60, 80], steps("eval/test/accuracy")
assert steps("eval/accuracy") == [40, 80], steps("eval/accuracy")  # eval_interval 2ep
assert not steps("eval/test/f1") and not steps("eval/val/confusion_matrix")
# The same examples as the data set's own evaluation set, in batches of 7: the same accuracy.
last = lambda key: [r[key] for r in rows if key in r][-1]
assert last("eval/test/accuracy") == last("eval/accuracy"), (last("eval/test/accuracy"), last("eval/accuracy"))
PY
[ -f run/eval/test/confusion_matrix.csv ] || fail "no run/eval/test/confusion_matrix.csv: $(ls -R run | head -20)"

# A stopper watching one set (the label is all before the last '/').
"$baton" train sets.yaml --run-dir stopped --set max_duration=20ep \
  --set 'callbacks={threshold_stopper: {monitor: eval/val/accuracy, threshold: 0.5}}' >stop.log 2>&1 ||
  fail "train with a stopper: $(tail -2 stop.log)"
grep -q "threshold_stopper: eval/val/accuracy" stop.log || fail "the stopper did not stop on eval/val/accuracy: $(tail -3 stop.log)"
/usr/bin/python3 -c "
import json
rows = [json.loads(l) for l in open('stopped/metrics.jsonl')][1:]
assert max(r['step'] for r in rows) < 400, max(r['step'] for r in rows)" || fail "the stopped run trained on"

# Resumed: each set goes on at its own interval, none evaluated twice at the step it resumed from.
"$baton" train sets.yaml --run-dir resumed --set max_duration=2ep >first.log 2>&1 || fail "train 2ep: $(tail -2 first.log)"
"$baton" train sets.yaml --run-dir resumed --autoresume >second.log 2>&1 || fail "resume: $(tail -2 second.log)"
/usr/bin/python3 - <<'PY' || fail "the resumed run's evaluations"
import json
rows = [json.loads(l) for l in open("resumed/metrics.jsonl") if '"step"' in l]
steps = lambda key: [r["step"] for r in rows if key in r]
assert steps("eval/val/accuracy") == [10, 20, 30, 40, 50, 60, 70, 80], steps("eval/val/accuracy")
assert steps("eval/test/accuracy") == [20, 40, 60, 80], steps("eval/test/accuracy")
PY

# baton eval: every set.
"$baton" eval sets.yaml --load run/model.pt >eval.txt 2>&1 || fail "baton eval: $(tail -2 eval.txt)"
for key in eval/accuracy eval/val/f1 eval/test/accuracy; do
  grep -q "^$key " eval.txt || fail "baton eval printed no $key: $(cat eval.txt)"
done

# The text kind: a set of another text, in the training text's characters.
/usr/bin/python3 -c "
import random
random.seed(1)
w = 'a rose is a rose and a cat sat on the mat by the sea'.split()
open('train.txt', 'w').write(' '.join(random.choice(w) for _ in range(3000)))
open('other.txt', 'w').write(' '.join(random.choice(w) for _ in range(300)))
open('alien.txt', 'w').write('QQQ ' * 200)"
cat >text.yaml <<'YAML'
max_duration: 6ba
progress_bar: false
model: {name: gpt, layers: 1, width: 16, heads: 2}
data: {dataset: text, path: train.txt, context: 16, batch_size: 8, eval_batch_size: 8}
eval: {other: {path: other.txt, metrics: [loss, perplexity], interval: 3ba}}
YAML
"$baton" train text.yaml --run-dir text_run >text.log 2>&1 || fail "text eval set: $(tail -2 text.log)"
[ "$(grep -c '"eval/other/perplexity"' text_run/metrics.jsonl)" -eq 2 ] || fail "text: eval/other twice: $(tail -2 text.log)"
refused "a text set with characters the training text lacks" "eval.other.path: alien.txt: byte 0 is character 81" \
  "$baton" train text.yaml --run-dir bad_text --set 'eval={other: {path: alien.txt}}'

# fashion_mnist: a set of another folder's test files.
if [ -f /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz ]; then
  "$baton" train sets.yaml --run-dir fm --set 'data={dataset: fashion_mnist, batch_size: 500}' \
    --set max_duration=4ba --set 'model={name: mlp}' \
    --set 'eval={copy: {dir: /usr/share/datasets/fashion-mnist, interval: 2ba}}' >fm.log 2>&1 ||
    fail "fashion_mnist eval set: $(tail -2 fm.log)"
  [ "$(grep -c '"eval/copy/accuracy"' fm/metrics.jsonl 2>/dev/null)" -eq 2 ] || fail "fashion_mnist: no eval/copy/accuracy twice"
fi

# Refusals: one line, exit 2, the key named, no run folder.
refused "an unknown key in a set" "unknown key 'eval.val.labls'" \
  "$baton" train sets.yaml --run-dir bad --set 'eval={val: {inputs: val_x.npy, labls: val_y.npy}}'
refused "a metric that does not fit the loss" "eval.val.metrics: metric 'r2' needs values" \
  "$baton" train sets.yaml --run-dir bad --set 'eval={val: {inputs: val_x.npy, labels: val_y.npy, metrics: [r2]}}'
refused "an interval in tokens" "eval.val.interval: '3tok' must be in ep, ba, sp or dur" \
  "$baton" train sets.yaml --run-dir bad --set 'eval={val: {inputs: val_x.npy, labels: val_y.npy, interval: 3tok}}'
refused "a missing file" "eval.val.inputs: nope.npy: cannot open" \
  "$baton" train sets.yaml --run-dir bad --set 'eval={val: {inputs: nope.npy, labels: val_y.npy}}'
refused "inputs without labels" "eval.val.labels: inputs and labels go together" \
  "$baton" train sets.yaml --run-dir bad --set 'eval={val: {inputs: val_x.npy}}'
refused "a name with a slash" "an evaluation set's name is letters" \
  "$baton" train sets.yaml --run-dir bad --set 'eval={"a/b": {inputs: val_x.npy, labels: val_y.npy}}'
refused "eval not a mapping" "eval: expected evaluation sets by name" \
  "$baton" train sets.yaml --run-dir bad --set 'eval=[val]'
/usr/bin/python3 -c "import numpy as np; np.save('small.npy', np.zeros((200, 3), np.float32))"
refused "examples of another shape" "eval.val.inputs: examples of shape \[3\]" \
  "$baton" train sets.yaml --run-dir bad --set 'eval={val: {inputs: small.npy, labels: val_y.npy}}'
[ ! -e bad ] && [ ! -e bad_text ] || fail "a refused run left its folder"

[ "$failures" -eq 0 ] && echo "eval_sets_test: ok" || exit 1

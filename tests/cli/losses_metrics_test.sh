#!/usr/bin/env bash
# Losses and metrics by recipe (label integration): for each kind of task — regression with one and
# with two outputs (mse, l1, smooth_l1), binary and multi-label classification
# (binary_cross_entropy), classes (cross_entropy) — baton trains a small MLP, and every evaluation
# metric it logs at the end equals scikit-learn's on the predictions `baton predict` writes for the
# same evaluation set, to 1e-6; the confusion matrix file equals scikit-learn's. Then the refusals:
# a metric that does not fit the loss, a loss that does not fit the labels, a bad label.
# Usage: losses_metrics_test.sh BATON_BINARY
set -uo pipefail
baton=$1
py=/usr/bin/python3
"$py" -c "import sklearn, numpy" 2>/dev/null ||
  { echo "skipped: scikit-learn is not installed for $py (scripts/install-deps.sh installs python3-sklearn)"; exit 77; }
source "$(dirname "$0")/../common/lib.sh"
cd "$tmp" || exit 1

"$py" - <<'PY'
import numpy as np
r = np.random.default_rng(7)
n = 1200
x = r.normal(size=(n, 8)).astype(np.float32)
y = (x @ r.normal(size=(8, 2)) + 0.4 * r.normal(size=(n, 2))).astype(np.float32)
np.save("x_train.npy", x[:1000]); np.save("x_eval.npy", x[1000:])
def save(name, v):
    np.save(f"{name}_train.npy", v[:1000]); np.save(f"{name}_eval.npy", v[1000:])
save("values", y[:, 0])                      # [N] floats: one output
save("values2", y)                           # [N, 2]
save("binary", (y[:, 0] > 0).astype(np.float32))
save("multilabel", (np.concatenate([y, x[:, :1]], 1) > 0).astype(np.float32))
save("classes", np.digitize(y[:, 0], [-1.0, 0.0, 1.0]).astype(np.int64))
PY

# train NAME LABELS LOSS METRICS: trains, predicts the evaluation set, compares with scikit-learn.
check() {
  local name=$1 labels=$2 loss=$3 metrics=$4 launcher=()
  [ "${MPI_RANKS:-1}" -gt 1 ] && launcher=(mpirun -np "$MPI_RANKS")
  cat >"$name.yaml" <<EOF
max_duration: 4ep
eval_interval: 2ep
precision: fp32
progress_bar: false
seed: 5
loss: $loss
eval_metrics: $metrics
data: {dataset: files, train_inputs: x_train.npy, train_labels: ${labels}_train.npy, eval_inputs: x_eval.npy,
       eval_labels: ${labels}_eval.npy, batch_size: 50, eval_batch_size: 1000}
model: {name: mlp, hidden: [16]}
optimizer: {name: adamw, lr: 0.01}
EOF
  "${launcher[@]}" "$baton" train "$name.yaml" --run-dir "run_$name" >"$name.train.log" 2>&1 ||
    { fail "$name: train"; cat "$name.train.log"; return; }
  "$baton" predict "$name.yaml" --load "run_$name/model.pt" --out "$name.pred.npy" >"$name.pred.log" 2>&1 ||
    { fail "$name: predict"; cat "$name.pred.log"; return; }
  "$py" - "$name" "$labels" "$loss" >"$name.cmp" 2>&1 <<'PY' || { fail "$name: metrics differ from scikit-learn"; cat "$name.cmp"; }
import json, sys
import numpy as np
from sklearn import metrics as m
name, labels, loss = sys.argv[1:4]
out = np.load(f"{name}.pred.npy").astype(np.float64)
y = np.load(f"{labels}_eval.npy")
logged = json.load(open(f"run_{name}/summary.json"))["metrics"]
want = {}
if loss.startswith("cross_entropy"):
    p = np.exp(out - out.max(1, keepdims=True)); p /= p.sum(1, keepdims=True)
    pred = out.argmax(1)
    want["accuracy"] = m.accuracy_score(y, pred)
    want["loss"] = m.log_loss(y, p, labels=range(out.shape[1]))
    want["perplexity"] = np.exp(want["loss"])
    want["f1"] = m.f1_score(y, pred, average="macro")
    want["f1_micro"] = m.f1_score(y, pred, average="micro")
    want["precision"] = m.precision_score(y, pred, average="macro", zero_division=0)
    want["recall_micro"] = m.recall_score(y, pred, average="micro")
    want["auroc"] = m.roc_auc_score(y, p, multi_class="ovr", average="macro")
    want["top2_accuracy"] = m.top_k_accuracy_score(y, out, k=2, labels=range(out.shape[1]))
    cm = m.confusion_matrix(y, pred, labels=range(out.shape[1]))
elif loss.startswith("binary"):
    yy = y.reshape(out.shape)
    pred = (out > 0).astype(int)
    if out.shape[1] == 1:
        t, s = yy[:, 0].astype(int), out[:, 0]
        want["accuracy"] = m.accuracy_score(t, pred[:, 0])
        want["f1"] = m.f1_score(t, pred[:, 0])                       # binary: the positive class
        want["f1_macro"] = m.f1_score(t, pred[:, 0], average="macro")
        want["precision"] = m.precision_score(t, pred[:, 0], zero_division=0)
        want["recall"] = m.recall_score(t, pred[:, 0])
        want["auroc"] = m.roc_auc_score(t, s)
        cm = m.confusion_matrix(t, pred[:, 0], labels=[0, 1])
    else:
        t = yy.astype(int)
        want["accuracy"] = m.accuracy_score(t, pred)                  # subset accuracy
        want["f1"] = m.f1_score(t, pred, average="macro", zero_division=0)
        want["f1_micro"] = m.f1_score(t, pred, average="micro")
        want["precision_micro"] = m.precision_score(t, pred, average="micro", zero_division=0)
        want["recall"] = m.recall_score(t, pred, average="macro", zero_division=0)
        want["auroc"] = m.roc_auc_score(t, out, average="macro")
        cm = None
    p = 1 / (1 + np.exp(-out))
    want["loss"] = float(np.mean(-(yy * np.log(p) + (1 - yy) * np.log(1 - p))))
else:
    yy = y.reshape(out.shape)
    want["mse"] = m.mean_squared_error(yy, out)
    want["mae"] = m.mean_absolute_error(yy, out)
    want["r2"] = m.r2_score(yy, out)
    d = out - yy
    beta = 0.5 if "smooth" in loss else None
    want["loss"] = float(np.mean(d * d)) if loss == "mse" else float(np.mean(np.abs(d))) if loss == "l1" else \
        float(np.mean(np.where(np.abs(d) < beta, 0.5 * d * d / beta, np.abs(d) - 0.5 * beta)))
    cm = None
bad = 0
for k, v in sorted(want.items()):
    got = logged.get("eval/" + k)
    tol = 1e-5 if k in ("loss", "perplexity") else 1e-6  # the loss is summed in float32 by the model
    ok = got is not None and abs(got - v) <= tol * max(1.0, abs(v))
    print(f"{name} eval/{k}: baton {got} scikit-learn {v} {'ok' if ok else 'DIFFERENT'}")
    bad += not ok
if cm is not None:
    rows = [l.strip().split(",")[1:] for l in open(f"run_{name}/eval/confusion_matrix.csv")][1:]
    got = np.array(rows, dtype=float)
    ok = got.shape == cm.shape and (got == cm).all()
    print(f"{name} confusion matrix: {'ok' if ok else 'DIFFERENT'}\n{got}\n{cm}")
    bad += not ok
sys.exit(1 if bad else 0)
PY
}

check regression values mse "[mse, mae, r2, loss]"
check regression2 values2 l1 "[mse, mae, r2, loss]"
check smooth values2 "{smooth_l1: {beta: 0.5}}" "[mse, mae, r2, loss]"
check binary binary binary_cross_entropy "[accuracy, f1, {f1: {average: macro}}, precision, recall, auroc, loss, confusion_matrix]"
check multilabel multilabel binary_cross_entropy "[accuracy, f1, f1_micro, precision_micro, recall, auroc, loss]"
check classes classes cross_entropy "[accuracy, loss, perplexity, f1, f1_micro, precision, recall_micro, auroc, top2_accuracy, confusion_matrix]"

# Data parallelism: each rank evaluates half of the set; the logged metrics are the whole set's
# (sums added, AUROC's scores concatenated), equal to scikit-learn's on the predictions again.
# (Left out under the sanitizers: Open MPI's own allocations read as leaks there; label mpi covers it.)
# (ldd's output is read whole first: `grep -q` stops early, and under pipefail ldd's SIGPIPE would
# make the pipeline fail and the sanitizer build look like a plain one.)
links=$(ldd "$baton" 2>/dev/null)
if command -v mpirun >/dev/null && [[ $links != *libasan* ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  MPI_RANKS=2 check classes_mpi classes cross_entropy "[accuracy, loss, perplexity, f1, f1_micro, precision, recall_micro, auroc, top2_accuracy, confusion_matrix]"
  MPI_RANKS=2 check regression_mpi values2 mse "[mse, mae, r2, loss]"
  grep -q "data parallel: 2 ranks" classes_mpi.train.log || fail "classes_mpi did not train on 2 ranks"
else
  echo "losses_metrics: no mpirun here (or under the sanitizers): the data-parallel part is left out"
fi

# The output sizes followed the labels: [N] -> 1, [N, 2] -> 2, 3 labels -> 3, 4 classes -> 4.
for pair in regression:1 regression2:2 multilabel:3 classes:4 binary:1; do
  name=${pair%%:*} k=${pair##*:}
  "$py" -c "import numpy as np, sys; sys.exit(0 if np.load('$name.pred.npy').shape[1] == $k else 1)" ||
    fail "$name: the model has not $k outputs"
done

# refuse KEY=VALUE EXPECTED: exit 2 before anything is written, one line naming the key.
refuse() {
  local recipe=$1 expected=$2
  shift 2
  local out rc=0
  out=$("$baton" train "$recipe" --run-dir refused "$@" 2>&1) || rc=$?
  if [ "$rc" -ne 2 ] || ! grep -q -- "$expected" <<<"$out" || [ -e refused ]; then
    fail "$* -> exit $rc, wanted 2 with '$expected': $out"
  fi
}
refuse classes.yaml "metric 'r2' needs values" --set "eval_metrics=[accuracy, r2]"
refuse classes.yaml "metric 'accuracy' needs class logits or yes/no logits" --set loss=mse --set data.train_labels=values_train.npy \
  --set data.eval_labels=values_eval.npy --set "eval_metrics=[accuracy]"
refuse classes.yaml "unknown loss 'hinge'" --set loss=hinge
printf 'loss: mse\neval_metrics: [mse]\nmodel: {name: mlp}\n' >fashion.yaml
refuse fashion.yaml "mse compares values, but data.dataset fashion_mnist gives class indices"
refuse classes.yaml "beta is smooth_l1's option" --set "loss={mse: {beta: 2}}" --set "eval_metrics=[mse]"
refuse classes.yaml "average" --set "eval_metrics=[{f1: {mean: micro}}]"
refuse classes.yaml "unknown metric 'f1_weighted'" --set "eval_metrics=[f1_weighted]"
"$py" -c "import numpy as np; y = np.load('values_train.npy'); y[17] = np.nan; np.save('nan_train.npy', y)"
refuse classes.yaml "row 17 holds a value that is not finite" --set loss=mse --set data.train_labels=nan_train.npy \
  --set data.eval_labels=values_eval.npy --set "eval_metrics=[mse]"
refuse classes.yaml "labels must be from 0 to 1" --set loss=binary_cross_entropy --set data.train_labels=values_train.npy \
  --set data.eval_labels=values_eval.npy --set "eval_metrics=[auroc]"
refuse classes.yaml "but the labels hold 2 values" --set loss=mse --set data.train_labels=values2_train.npy \
  --set data.eval_labels=values2_eval.npy --set "eval_metrics=[mse]" --set model.outputs=3

# A TorchScript model (here: regression2's exported) trains with any loss its outputs fit; outputs
# that do not fit are refused before training, naming the file.
"$baton" export run_regression2/model.pt --recipe regression2.yaml --torchscript two.ts >export.log 2>&1 ||
  { fail "export"; cat export.log; }
"$baton" train regression2.yaml --run-dir ts_ok --set "model={name: torchscript, path: two.ts}" --set loss=mse >ts.log 2>&1 ||
  { fail "a TorchScript model with mse"; cat ts.log; }
refuse regression.yaml "two.ts: its outputs do not fit loss mse: loss mse: outputs \[2, 2\] and targets \[2\]" \
  --set "model={name: torchscript, path: two.ts}"
refuse classes.yaml "two.ts: its outputs do not fit loss cross_entropy: outputs \[2, 2\], but the labels have 4 classes" \
  --set "model={name: torchscript, path: two.ts}"
refuse regression.yaml "label_smoothing smooths class probabilities: it needs loss cross_entropy, not mse" \
  --set "algorithms={label_smoothing: {smoothing: 0.1}}"
# MixUp mixes values as it mixes classes: a regression trains with it.
"$baton" train regression.yaml --run-dir mixup --set "algorithms={mixup: {alpha: 0.2}}" >mixup.log 2>&1 ||
  { fail "mse with mixup"; cat mixup.log; }

[ $failures -eq 0 ] && echo "losses_metrics: ok" || { echo "losses_metrics: $failures failure(s)"; exit 1; }

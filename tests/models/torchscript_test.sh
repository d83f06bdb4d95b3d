#!/usr/bin/env bash
# Models written in Python (label integration, seconds): a small nn.Module written and scripted with
# the project's PyPI torch trains 50 steps in baton and in PyTorch from the same initial weights
# (the same file) and the same batches: the losses are equal within 1e-4 at every step, with
# cross_entropy and with mse. Then the refusals, one line naming the file, exit 2: a module traced
# in eval mode, a module without forward, outputs that do not fit the loss.
# Usage: torchscript_test.sh BATON_BINARY SOURCE_DIR. Exit 77 when the venv has no torch.
set -uo pipefail
baton=$1
src=$2
python=${BATON_TEST_PYTHON:-$src/.venv-torch2/bin/python}
if ! "$python" -c "import torch, numpy" >/dev/null 2>&1; then
  echo "skipped: $python has no torch and numpy (scripts/torch2-env.sh installs them)"
  exit 77
fi
source "$(dirname "$0")/../common/lib.sh"
cd "$tmp" || exit 1

cat >make.py <<'PY'
import numpy as np, torch
torch.manual_seed(0)
class Net(torch.nn.Module):  # batch norm: its batch statistics in training mode, as baton must keep them
    def __init__(self, outputs):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 32)
        self.norm = torch.nn.BatchNorm1d(32)
        self.fc2 = torch.nn.Linear(32, outputs)
    def forward(self, x):
        return self.fc2(torch.relu(self.norm(self.fc1(x))))
class Dropping(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 3)
        self.drop = torch.nn.Dropout(0.3)
    def forward(self, x):
        return self.drop(self.fc(x))
class NoForward(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 3)
    @torch.jit.export
    def run(self, x):
        return self.fc(x)
torch.jit.script(Net(3)).save("classes.pt")
torch.jit.script(Net(2)).save("values.pt")
traced = Dropping().eval()
torch.jit.trace(traced, torch.zeros(2, 8)).save("traced_eval.pt")
torch.jit.script(NoForward()).save("no_forward.pt")
r = np.random.default_rng(0)
x = r.normal(size=(1000, 8)).astype(np.float32)
np.save("x.npy", x)
np.save("classes.npy", ((x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0.5)))
np.save("values.npy", (x[:, :2] * [1.5, -0.5] + 0.1 * r.normal(size=(1000, 2))).astype(np.float32))
PY
"$python" make.py || { echo "FAIL: writing the modules"; exit 1; }

# The same 50 steps in PyTorch: the scripted file loaded, SGD with momentum, batches in order.
cat >peer.py <<'PY'
import json, sys, numpy as np, torch
module, labels, loss_name = sys.argv[1:4]
torch.manual_seed(0)
net = torch.jit.load(module)
net.train()
x = torch.from_numpy(np.load("x.npy"))
y = torch.from_numpy(np.load(labels))
loss_fn = torch.nn.functional.cross_entropy if loss_name == "cross_entropy" else torch.nn.functional.mse_loss
sgd = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
losses = []
for step in range(50):
    xb, yb = x[20 * step:20 * step + 20], y[20 * step:20 * step + 20]
    loss = loss_fn(net(xb), yb)
    sgd.zero_grad()
    loss.backward()
    sgd.step()
    losses.append(loss.item())
json.dump(losses, open(f"peer_{loss_name}.json", "w"))
PY

for case in "classes cross_entropy" "values mse"; do
  set -- $case
  name=$1 loss=$2
  cat >"$name.yaml" <<YAML
max_duration: 50ba
precision: fp32
eval_interval: 0
progress_bar: false
loss: $loss
model: {name: torchscript, path: $name.pt}
data: {dataset: files, train_inputs: x.npy, train_labels: $name.npy, batch_size: 20, shuffle: false, standardize: false}
optimizer: {name: sgd, lr: 0.05, momentum: 0.9, weight_decay: 0}
YAML
  "$baton" train "$name.yaml" --run-dir "run_$name" >"$name.log" 2>&1 || { fail "$name: train: $(tail -2 "$name.log")"; continue; }
  "$python" peer.py "$name.pt" "$name.npy" "$loss" || { fail "$name: the PyTorch peer"; continue; }
  "$python" - "$name" "$loss" <<'PY' || fail "$name: baton's losses are not PyTorch's"
import json, sys
name, loss = sys.argv[1:3]
ours = [r["train/loss"] for r in map(json.loads, open(f"run_{name}/metrics.jsonl")) if "train/loss" in r]
peer = json.load(open(f"peer_{loss}.json"))
assert len(ours) == 50, len(ours)
worst = max(abs(a - b) for a, b in zip(ours, peer))
assert worst <= 1e-4, f"largest difference {worst:.3g}: {list(zip(ours, peer))[:5]}"
assert ours[-1] < 0.7 * ours[0], (ours[0], ours[-1])  # it learnt
print(f"{name}: 50 steps, largest difference from PyTorch {worst:.2e}")
PY
done

# refused WHAT PATTERN ARGS...: exit 2, one line naming the file.
refused() {
  local what=$1 pattern=$2
  shift 2
  "$baton" train classes.yaml --run-dir bad "$@" >bad.log 2>&1
  local rc=$?
  [ "$rc" -eq 2 ] || fail "$what: exit $rc, expected 2: $(tail -1 bad.log)"
  grep -q -- "$pattern" bad.log || fail "$what: no '$pattern' in: $(cat bad.log)"
  [ "$(wc -l <bad.log)" -eq 1 ] || fail "$what: more than one line: $(cat bad.log)"
}
refused "traced in eval mode" "traced_eval.pt: the module was traced in eval mode (its dropout is fixed to eval)" \
  --set model.path=traced_eval.pt
refused "no forward" "no_forward.pt: the TorchScript module has no forward method" --set model.path=no_forward.pt
refused "outputs that do not fit" "values.pt: its outputs do not fit loss cross_entropy" --set model.path=values.pt
[ ! -e bad ] || fail "a refused run left its folder"

[ "$failures" -eq 0 ] && echo "torchscript_test: ok" || exit 1

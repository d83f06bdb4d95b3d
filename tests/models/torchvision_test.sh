#!/usr/bin/env bash
# torchvision's ResNets in baton (seconds): weights of torchvision's resnet18 and resnet50 saved as
# safetensors from Python (the project's venv: PyPI's torch and torchvision) load into baton's
# resnet18 and resnet50 and give torchvision's logits (1e-5); a baton checkpoint exported with
# --format safetensors loads into torchvision with load_state_dict(strict=True) and gives baton's.
# Usage: torchvision_test.sh BATON_BINARY SOURCE_DIR. Exit 77 when the venv has no torchvision.
set -uo pipefail
baton=$1
src=$2
python=${BATON_TEST_PYTHON:-$src/.venv-torch2/bin/python}
if ! "$python" -c "import torch, torchvision, safetensors, numpy" >/dev/null 2>&1; then
  echo "skipped: $python has no torch, torchvision, safetensors and numpy (scripts/torch2-env.sh installs them)"
  exit 77
fi
source "$(dirname "$0")/../common/lib.sh"
cd "$tmp" || exit 1

"$python" - <<'PY' || { echo "FAIL: writing torchvision's weights"; exit 1; }
import numpy as np, torch, torchvision
from safetensors.torch import save_file
torch.manual_seed(0)
x = torch.randn(4, 3, 64, 64)
np.save("x.npy", x.numpy())
np.save("labels.npy", np.array([0, 999, 1, 2], dtype=np.int64))  # 1000 classes, as torchvision's
for arch in ("resnet18", "resnet50"):
    m = getattr(torchvision.models, arch)(weights=None)
    with torch.no_grad():  # BatchNorm statistics of real activations, as a trained network's
        for mod in m.modules():
            if isinstance(mod, torch.nn.BatchNorm2d):
                mod.momentum = None  # a cumulative average
                mod.reset_running_stats()
                mod.weight.uniform_(0.8, 1.2)
                mod.bias.uniform_(-0.1, 0.1)
        m.train()
        m(torch.randn(32, 3, 64, 64))
    m.eval()
    with torch.no_grad():
        np.save(f"{arch}_logits.npy", m(x).numpy())
    save_file(m.state_dict(), f"{arch}.safetensors")
PY

for arch in resnet18 resnet50; do
  cat >"$arch.yaml" <<YAML
model: {name: $arch}
optimizer: {name: sgd, lr: 0.001}
max_duration: 1ba
precision: fp32
memory_format: contiguous
progress_bar: false
data: {dataset: files, train_inputs: x.npy, train_labels: labels.npy, standardize: false, batch_size: 4}
YAML
  "$baton" predict "$arch.yaml" --load "$arch.safetensors" --inputs x.npy --out "$arch.got.npy" >"$arch.log" 2>&1 ||
    fail "$arch: predict with torchvision's weights: $(tail -1 "$arch.log")"
  "$python" -c "
import numpy as np, sys
got, want = np.load('$arch.got.npy'), np.load('${arch}_logits.npy')
err = abs(got - want).max()
print('$arch: largest difference from torchvision\'s logits', err, 'of logits up to', abs(want).max())
sys.exit(0 if got.shape == want.shape and err < 1e-5 else 1)" || fail "$arch: other logits than torchvision's"
done

# baton's weights out: a trained checkpoint as safetensors, into torchvision.
"$baton" train resnet18.yaml --set model.weights=resnet18.safetensors --run-dir run >train.log 2>&1 ||
  fail "train from torchvision's weights: $(tail -1 train.log)"
"$baton" export run/checkpoints/latest --format safetensors --out exported.safetensors >export.log 2>&1 ||
  fail "export --format safetensors: $(tail -1 export.log)"
"$baton" predict resnet18.yaml --load run/checkpoints/latest --inputs x.npy --out trained.npy >/dev/null 2>&1 ||
  fail "predict with the trained checkpoint"
"$python" - <<'PY' || fail "the exported weights in torchvision"
import numpy as np, torch, torchvision
from safetensors.torch import load_file
m = torchvision.models.resnet18(weights=None)
m.load_state_dict(load_file("exported.safetensors"), strict=True)
m.eval()
with torch.no_grad():
    got = m(torch.from_numpy(np.load("x.npy"))).numpy()
want = np.load("trained.npy")
err = abs(got - want).max()
print("exported resnet18 in torchvision: largest difference from baton's logits", err)
assert err < 1e-5
PY

# Bad weights: a file that is not safetensors, the weights of another model.
"$baton" train resnet18.yaml --set model.weights=x.npy --run-dir bad >bad.log 2>&1
[ $? -eq 2 ] && grep -q "model.weights: x.npy: not a safetensors file" bad.log || fail "weights that are not safetensors: $(tail -1 bad.log)"
"$baton" train resnet18.yaml --set model.weights=resnet50.safetensors --run-dir bad >bad.log 2>&1
[ $? -eq 2 ] && grep -q "resnet50.safetensors: tensor 'conv1.weight' has shape\|resnet50.safetensors: no tensor for\|resnet50.safetensors: tensor '.*' has shape" bad.log ||
  fail "another model's weights: $(tail -1 bad.log)"
[ ! -e bad ] || fail "bad weights left a run directory"

[ "$failures" -eq 0 ] && echo "torchvision: ok"
exit $((failures > 0))

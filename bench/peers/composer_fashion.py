#!/usr/bin/env python3
"""Peer: the FashionCNN and recipe of pytorch_fashion.py, written as a Composer (MosaicML) user writes it
(ComposerClassifier, composer.Trainer, a DataLoader over the in-memory data set). Its own environment:

  $(bench/peers/make-venv.sh --composer) bench/peers/composer_fashion.py --device cuda --epochs 3 --target 0.91

Prints one JSON line per evaluation and a summary: train samples/s over the timed steps (from the 50th
on), the time to --target test accuracy in training (evaluation excluded), the wall time from process
start to it and the final test accuracy.
"""
import argparse, gzip, json, os, time

T0 = time.perf_counter()
DATA = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")

p = argparse.ArgumentParser()
p.add_argument("--device", default="cpu", help="cpu or cuda")
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--target", type=float, default=0.91, help="test accuracy that ends the clock")
p.add_argument("--eval-every", type=int, default=100, help="batches between test evaluations")
p.add_argument("--batch-size", type=int, default=128)
p.add_argument("--precision", default="fp32", help="Composer precision: fp32, amp_bf16")
p.add_argument("--threads", type=int, default=os.cpu_count())
a = p.parse_args()

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from composer import Callback, Trainer
from composer.models import ComposerClassifier


def read_idx(path, offset):
    with gzip.open(path, "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)


torch.set_num_threads(a.threads)
X = torch.tensor(read_idx(f"{DATA}/train-images-idx3-ubyte.gz", 16).reshape(-1, 1, 28, 28), dtype=torch.float32) / 255
Y = torch.tensor(read_idx(f"{DATA}/train-labels-idx1-ubyte.gz", 8), dtype=torch.long)
Xt = torch.tensor(read_idx(f"{DATA}/t10k-images-idx3-ubyte.gz", 16).reshape(-1, 1, 28, 28), dtype=torch.float32) / 255
Yt = torch.tensor(read_idx(f"{DATA}/t10k-labels-idx1-ubyte.gz", 8), dtype=torch.long)
mean, std = X.mean(), X.std()
X, Xt = (X - mean) / std, (Xt - mean) / std


class FashionCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 32, 3, padding=1)
        self.c2 = nn.Conv2d(32, 64, 3, padding=1)
        self.f1 = nn.Linear(64 * 7 * 7, 128)
        self.f2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        return self.f2(F.relu(self.f1(x.flatten(1))))


class Clock(Callback):
    """Train time (evaluation excluded), samples/s from the 50th step, the time to the target accuracy."""

    def __init__(self, total):
        self.total = total
        self.train_s, self.seg, self.timed_s, self.hit_s, self.hit_wall, self.acc = 0.0, None, 0.0, None, None, 0.0

    def _sync(self, dev):
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)

    def fit_start(self, state, logger):
        self.dev = next(state.model.parameters()).device
        self.xt, self.yt = Xt.to(self.dev), Yt.to(self.dev)
        self._sync(self.dev)
        self.seg = time.perf_counter()

    def batch_end(self, state, logger):
        step = int(state.timestamp.batch)
        last = step == self.total
        if step == 50 or step % a.eval_every == 0 or last:
            self._sync(self.dev)
            now = time.perf_counter()
            self.train_s += now - self.seg
            if step > 50:
                self.timed_s += now - self.seg
            self.seg = now
        if step % a.eval_every == 0 or last:
            m = state.model
            m.eval()
            with torch.no_grad(), torch.autocast(self.dev.type, torch.bfloat16, enabled="bf16" in a.precision):
                correct = sum((m.module(self.xt[j:j + 1000]).argmax(1) == self.yt[j:j + 1000]).sum().item()
                              for j in range(0, len(self.xt), 1000))
            m.train()
            self.acc = correct / len(self.xt)
            print(json.dumps({"step": step, "train_s": round(self.train_s, 3), "test_acc": self.acc}), flush=True)
            if self.hit_s is None and self.acc >= a.target:
                self.hit_s, self.hit_wall = self.train_s, time.perf_counter() - T0
            self._sync(self.dev)
            self.seg = time.perf_counter()


torch.manual_seed(0)
train = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, Y), batch_size=a.batch_size, shuffle=True,
                                    drop_last=True)
steps = a.epochs * (len(X) // a.batch_size)
model = ComposerClassifier(module=FashionCNN(), num_classes=10)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4)
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=steps)
clock = Clock(steps)
trainer = Trainer(model=model, train_dataloader=train, max_duration=f"{a.epochs}ep", optimizers=opt, schedulers=sched,
                  step_schedulers_every_batch=True, device="gpu" if a.device.startswith("cuda") else "cpu",
                  precision=a.precision, callbacks=[clock], progress_bar=False, log_to_console=False, loggers=[],
                  seed=0)
trainer.fit()
timed_steps = int(trainer.state.timestamp.batch) - 50
import composer  # noqa: E402 - its version, after the run
print(json.dumps({
    "peer": "composer", "composer": composer.__version__, "torch": torch.__version__, "device": a.device,
    "precision": a.precision, "batch_size": a.batch_size, "steps": int(trainer.state.timestamp.batch),
    "train_s": round(clock.train_s, 3), "samples_per_s": round(timed_steps * a.batch_size / clock.timed_s, 1),
    "final_test_acc": clock.acc, "target": a.target,
    "time_to_target_s": None if clock.hit_s is None else round(clock.hit_s, 3),
    "wall_to_target_s": None if clock.hit_wall is None else round(clock.hit_wall, 3),
}), flush=True)

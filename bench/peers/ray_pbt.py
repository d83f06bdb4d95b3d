#!/usr/bin/env python3
"""Peer: Ray Tune's PopulationBasedTraining driving the peer's PyTorch FashionCNN (pytorch_fashion.py)
on the recipe of bench/pbt_fashion.yaml: SGD with Nesterov momentum, weight decay 5e-4, a constant
learning rate, batch 128, `--batches` per trial, the test set evaluated at each interval's end.

PBT as `baton search --strategy pbt` runs it: `--population` trials, `--interval` batches between
exploits, quantile 0.25, perturbation factors 0.8 and 1.2, resample probability 0.25, synchronous
(synch=True), lr and momentum explored. Each trial saves its whole state (weights, optimizer, data
position) as a Ray checkpoint; an exploited trial restores another's and sets its new lr/momentum.
Prints one JSON line: the best trial's final test accuracy and the wall time (ray.init included).
Runs in .venv-peers (pip install "ray[tune]==2.60.0").
"""
import argparse, json, os, sys, tempfile, time

T0 = time.perf_counter()
p = argparse.ArgumentParser()
p.add_argument("--population", type=int, default=8)
p.add_argument("--interval", type=int, default=500)
p.add_argument("--batches", type=int, default=1500)
p.add_argument("--seed", type=int, default=0)
p.add_argument("--cpus", type=int, default=os.cpu_count())
A = p.parse_args()

import numpy as np
import torch
import torch.nn.functional as F
import ray
from ray import tune
from ray.tune.schedulers import PopulationBasedTraining

PEERS = os.path.dirname(os.path.abspath(__file__))


def peer():
    """pytorch_fashion, imported without its command line (it reads its flags when imported)."""
    if PEERS not in sys.path:
        sys.path.insert(0, PEERS)
    argv, sys.argv = sys.argv, sys.argv[:1]
    try:
        import pytorch_fashion
    finally:
        sys.argv = argv
    return pytorch_fashion


BATCH = 128
_DATA = {}


def data():
    if not _DATA:
        m = peer()
        X = torch.tensor(m.read_idx(f"{m.DATA}/train-images-idx3-ubyte.gz", 16).reshape(-1, 1, 28, 28),
                         dtype=torch.float32) / 255
        Y = torch.tensor(m.read_idx(f"{m.DATA}/train-labels-idx1-ubyte.gz", 8), dtype=torch.long)
        Xt = torch.tensor(m.read_idx(f"{m.DATA}/t10k-images-idx3-ubyte.gz", 16).reshape(-1, 1, 28, 28),
                          dtype=torch.float32) / 255
        Yt = torch.tensor(m.read_idx(f"{m.DATA}/t10k-labels-idx1-ubyte.gz", 8), dtype=torch.long)
        mean, std = X.mean(), X.std()
        _DATA.update(X=(X - mean) / std, Y=Y, Xt=(Xt - mean) / std, Yt=Yt)
    return _DATA


def train_fn(config):
    torch.set_num_threads(1)
    d = data()
    torch.manual_seed(config["seed"])
    net = peer().FashionCNN()
    opt = torch.optim.SGD(net.parameters(), lr=config["lr"], momentum=config["momentum"], nesterov=True,
                          weight_decay=5e-4)
    step = 0
    checkpoint = tune.get_checkpoint()
    if checkpoint:
        with checkpoint.as_directory() as folder:
            state = torch.load(os.path.join(folder, "state.pt"), weights_only=False)
        net.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        step = state["step"]
        for group in opt.param_groups:  # the explored hyperparameters, not the checkpoint's
            group["lr"], group["momentum"] = config["lr"], config["momentum"]
    per_epoch = len(d["X"]) // BATCH
    while step < A.batches:
        end = min(A.batches, (step // A.interval + 1) * A.interval)
        net.train()
        while step < end:
            epoch, k = divmod(step, per_epoch)
            perm = torch.randperm(len(d["X"]), generator=torch.Generator().manual_seed(config["seed"] * 1000 + epoch))
            j = perm[k * BATCH:(k + 1) * BATCH]
            opt.zero_grad()
            F.cross_entropy(net(d["X"][j]), d["Y"][j]).backward()
            opt.step()
            step += 1
        net.eval()
        with torch.no_grad():
            correct = sum((net(d["Xt"][i:i + 1000]).argmax(1) == d["Yt"][i:i + 1000]).sum().item()
                          for i in range(0, len(d["Xt"]), 1000))
        with tempfile.TemporaryDirectory() as folder:
            torch.save({"model": net.state_dict(), "optimizer": opt.state_dict(), "step": step},
                       os.path.join(folder, "state.pt"))
            tune.report({"accuracy": correct / len(d["Xt"]), "step": step},
                        checkpoint=tune.Checkpoint.from_directory(folder))


def main():
    ray.init(num_cpus=A.cpus, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    space = {"lr": tune.loguniform(0.005, 0.2), "momentum": tune.uniform(0.5, 0.95)}
    pbt = PopulationBasedTraining(time_attr="step", perturbation_interval=A.interval, metric="accuracy", mode="max",
                                  hyperparam_mutations=space, quantile_fraction=0.25, resample_probability=0.25,
                                  perturbation_factors=(1.2, 0.8), synch=True)
    with tempfile.TemporaryDirectory() as storage:
        tuner = tune.Tuner(tune.with_resources(train_fn, {"cpu": 1}),
                           param_space={**space, "seed": A.seed},
                           tune_config=tune.TuneConfig(scheduler=pbt, num_samples=A.population),
                           run_config=tune.RunConfig(storage_path=storage, verbose=0,
                                                     checkpoint_config=tune.CheckpointConfig(num_to_keep=2)))
        results = tuner.fit()
        finals = [r.metrics.get("accuracy", 0.0) for r in results if r.metrics]
    ray.shutdown()
    print(json.dumps({"peer": "ray-tune-pbt", "ray": ray.__version__, "torch": torch.__version__,
                      "population": A.population, "interval": A.interval, "batches": A.batches, "seed": A.seed,
                      "best_accuracy": max(finals) if finals else None, "trials": len(finals),
                      "wall_s": round(time.perf_counter() - T0, 1)}), flush=True)


if __name__ == "__main__":
    main()

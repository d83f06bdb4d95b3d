"""NNI 3.0's multi-trial NAS strategies on baton's benchmark table (bench/nas_table.csv), through
NNI's own Python API: each strategy searches the table's space (its parameter columns as
nni.choice's of an evaluator) on NNI's SequentialExecutionEngine, whose trials look the sampled
architecture up in the table and report its final eval/accuracy. One JSON line per seed (the best
accuracy after 10, 20, ... trials), as bench/hpo_bench prints them.

  python bench/peers/nni_table.py bench/nas_table.csv --strategy regularized_evolution --trials 100 --seeds 50
"""
import argparse
import csv
import json
import logging
import random
import warnings

import numpy as np

warnings.filterwarnings("ignore")
import nni  # noqa: E402
from nni.nas import strategy as strategies  # noqa: E402
from nni.nas.evaluator import FunctionalEvaluator  # noqa: E402
from nni.nas.execution import SequentialExecutionEngine  # noqa: E402
from nni.nas.nn.pytorch import ModelSpace  # noqa: E402
from nni.nas.space import RawFormatModelSpace  # noqa: E402

logging.disable(logging.CRITICAL)
# NNI's strategies poll their engine once a second (time.sleep(1.0) between submissions); its
# sequential engine has answered every trial by the time submit_models returns, so the wait changes
# nothing but the wall time: the strategies' modules get a clock without it.
import time as _time  # noqa: E402
import types  # noqa: E402

from nni.nas.strategy import base as _base, hpo as _hpo  # noqa: E402

_base.time = _hpo.time = types.SimpleNamespace(sleep=lambda seconds: None, time=_time.time,
                                               monotonic=_time.monotonic, perf_counter=_time.perf_counter)
COUNTS = [10, 20, 30, 50, 60, 100, 150, 200]


def value(cell):
    try:
        v = float(cell)
        return int(v) if v.is_integer() else v
    except ValueError:
        return cell


def read_table(path):
    rows = [r for r in csv.reader(line for line in open(path) if not line.startswith("#"))]
    header, rows = rows[0], rows[1:]
    s = header.index("step")
    metric = header[s + 1]
    last = {}
    for r in rows:
        key = tuple(value(c) for c in r[:s])
        step = int(r[s])
        if key not in last or step > last[key][0]:
            last[key] = (step, float(r[s + 1]))
    space = {c: list(dict.fromkeys(k[i] for k in last)) for i, c in enumerate(header[:s])}
    return header[:s], {k: v[1] for k, v in last.items()}, space, metric


class Empty(ModelSpace):  # the architecture is the evaluator's choices
    def forward(self, x):
        return x


def make(name, seed, population, sample_size):
    if name == "random":
        return strategies.Random(seed=seed)
    if name == "regularized_evolution":
        return strategies.RegularizedEvolution(population_size=population, sample_size=sample_size, seed=seed)
    if name == "tpe":
        return strategies.TPE(seed=seed)
    raise SystemExit(f"unknown strategy {name} (random, regularized_evolution, tpe)")


def run(args, columns, table, space, seed):
    random.seed(seed)
    np.random.seed(seed)
    found = []

    def evaluate(model, **arch):
        accuracy = table[tuple(arch[c] for c in columns)]
        found.append(accuracy)
        nni.report_final_result(accuracy)

    choices = {c: nni.choice(c, values) for c, values in space.items()}
    model_space = RawFormatModelSpace(Empty(), FunctionalEvaluator(evaluate, **choices))
    engine = SequentialExecutionEngine(max_model_count=args.trials, continue_on_failure=True)
    make(args.strategy, seed, args.population, args.sample_size)(model_space, engine)
    best = np.maximum.accumulate(found) if found else []
    return {"peer": "nni", "sampler": args.strategy, "function": "table:" + args.table, "trials": len(found),
            "seed": seed, "best": float(best[-1]),
            "best_at": {str(n): float(best[n - 1]) for n in COUNTS if n <= len(best)}}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("table")
    p.add_argument("--strategy", default="regularized_evolution")
    p.add_argument("--trials", type=int, default=100)
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--population", type=int, default=20)
    p.add_argument("--sample-size", type=int, default=5)
    args = p.parse_args()
    columns, table, space, metric = read_table(args.table)
    for s in range(args.seed, args.seed + args.seeds):
        print(json.dumps(run(args, columns, table, space, s)), flush=True)


if __name__ == "__main__":
    main()

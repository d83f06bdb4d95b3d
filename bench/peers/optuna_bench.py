#!/usr/bin/env python3
"""Peer: Optuna's samplers on the test functions of build/bin/hpo_bench, as a user would run them.

Runs with Debian's python3-optuna (3.1) or the pinned current Optuna of bench/peers/requirements.txt
(bench/peers/make-venv.sh makes .venv-peers/; its GPSampler needs torch and scipy, which it pins too).
Prints one JSON line per seed: wall time per trial (sampler + objective, in-process, in-memory
storage), the same over the last 10 trials (wall and CPU: `last_trials_ms`, `last_trials_cpu_ms`) and
the best value found (lower is better).

  optuna_bench.py --function hartmann6 --trials 60 --seed 0
  optuna_bench.py --function mixed --trials 60 --seeds 20          # one line per seed 0..19
  optuna_bench.py --function branin --trials 60 --sampler gp       # Optuna >= 3.6
  optuna_bench.py --function zdt1 --trials 300 --seeds 20 --sampler nsga2   # several objectives:
      the hypervolume of all trials' values against the fixed reference point (as hpo_bench's)
"""
import argparse
import json
import math
import sys
import time

import optuna

H6_A = [[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14], [3, 3.5, 1.7, 10, 17, 8], [17, 8, 0.05, 10, 0.1, 14]]
H6_P = [[.1312, .1696, .5569, .0124, .8283, .5886], [.2329, .4135, .8307, .3736, .1004, .9991],
        [.2348, .1451, .3522, .2883, .3047, .6650], [.4047, .8828, .8732, .5743, .1091, .0381]]
H6_ALPHA = [1.0, 1.2, 3.0, 3.2]


def hartmann6(t, dims=6):  # 6 dims in [0,1]; global minimum -3.32237
    x = [t.suggest_float(f"x{j}", 0.0, 1.0) for j in range(dims)]
    return -sum(H6_ALPHA[i] * math.exp(-sum(H6_A[i][j] * (x[j] - H6_P[i][j]) ** 2 for j in range(6))) for i in range(4))


def hartmann6_10d(t):  # hartmann6 over x0..x5; x6..x9 do nothing (a search has to find that out)
    return hartmann6(t, dims=10)


def branin(t):  # x1 in [-5,10], x2 in [0,15]; global minimum 0.397887
    x1, x2 = t.suggest_float("x1", -5, 10), t.suggest_float("x2", 0, 15)
    return (x2 - 5.1 / (4 * math.pi ** 2) * x1 ** 2 + 5 / math.pi * x1 - 6) ** 2 + 10 * (1 - 1 / (8 * math.pi)) * math.cos(x1) + 10


def mixed(t):
    """A training-like space: a log-uniform learning rate, an integer, a categorical with a nested
    parameter under one branch, a quantized value. The same function as hpo_bench's `mixed`;
    minimum 0 (adam, lr 10^-3.5, 3 layers, dropout 0.2); the sgd branch's best is 0.1."""
    lr = t.suggest_float("lr", 1e-5, 1e-1, log=True)
    layers = t.suggest_int("layers", 1, 5)
    optimizer = t.suggest_categorical("optimizer", ["sgd", "adam"])
    a = math.log10(lr)
    if optimizer == "sgd":
        momentum = t.suggest_float("momentum", 0.0, 0.99)
        value = 0.1 + (a + 2.0) ** 2 + 4.0 * (momentum - 0.9) ** 2
    else:
        value = (a + 3.5) ** 2
    dropout = t.suggest_float("dropout", 0.0, 0.5, step=0.05)
    return value + 0.05 * (layers - 3) ** 2 + 4.0 * (dropout - 0.2) ** 2


def zdt(t, which):  # ZDT1-3 (Zitzler, Deb and Thiele 2000): 30 variables in [0, 1], both minimized
    x = [t.suggest_float(f"x{j}", 0.0, 1.0) for j in range(30)]
    f1 = x[0]
    g = 1 + 9 * sum(x[1:]) / 29
    r = f1 / g
    h = {1: 1 - math.sqrt(r), 2: 1 - r * r, 3: 1 - math.sqrt(r) - r * math.sin(10 * math.pi * f1)}[which]
    return f1, g * h


def dtlz2(t):  # DTLZ2 (Deb et al. 2002): 3 objectives over 12 variables in [0, 1]
    x = [t.suggest_float(f"x{j}", 0.0, 1.0) for j in range(12)]
    g = sum((v - 0.5) ** 2 for v in x[2:])
    a, b = x[0] * math.pi / 2, x[1] * math.pi / 2
    return (1 + g) * math.cos(a) * math.cos(b), (1 + g) * math.cos(a) * math.sin(b), (1 + g) * math.sin(a)


# Several objectives: the function and the hypervolume's fixed reference point (hpo_bench's).
MULTI = {"zdt1": (lambda t: zdt(t, 1), [1.1, 11.0]), "zdt2": (lambda t: zdt(t, 2), [1.1, 11.0]),
         "zdt3": (lambda t: zdt(t, 3), [1.1, 11.0]), "dtlz2": (dtlz2, [2.5, 2.5, 2.5])}


def hypervolume(points, ref):
    """The volume the points dominate below `ref` (minimized): exact, a sweep in 2-d, slices above."""
    points = [p for p in points if all(v < r for v, r in zip(p, ref))]
    if not points:
        return 0.0
    if len(ref) == 1:
        return ref[0] - min(p[0] for p in points)
    if len(ref) == 2:
        area, low = 0.0, ref[1]
        for p in sorted(points):
            if p[1] < low:
                area += (ref[0] - p[0]) * (low - p[1])
                low = p[1]
        return area
    front = [p for p in points if not any(all(a <= b for a, b in zip(q, p)) and q != p for q in points)]
    front.sort(key=lambda p: p[-1])
    total = 0.0
    for i, p in enumerate(front):
        top = front[i + 1][-1] if i + 1 < len(front) else ref[-1]
        if top > p[-1]:
            total += hypervolume([q[:-1] for q in front[:i + 1]], ref[:-1]) * (top - p[-1])
    return total


def branin_constrained(t):  # branin within 50 of (2.5, 7.5) (squared distance): one of its 3 minima
    value = branin(t)
    x1, x2 = t.params["x1"], t.params["x2"]
    t.set_user_attr("constraint", (x1 - 2.5) ** 2 + (x2 - 7.5) ** 2 - 50)
    return value


def hartmann6_constrained(t):  # BoTorch's constrained Hartmann: |x|^2 <= 1
    value = hartmann6(t)
    t.set_user_attr("constraint", sum(t.params[f"x{j}"] ** 2 for j in range(6)) - 1)
    return value


def sphere(t):  # 10-d in [-5, 5]; minimum 0 at 0.3 (off the centre, where CMA-ES starts)
    return sum((t.suggest_float(f"x{j}", -5.0, 5.0) - 0.3) ** 2 for j in range(10))


def rosenbrock(t):  # 10-d in [-2, 2]; minimum 0 at 1
    x = [t.suggest_float(f"x{j}", -2.0, 2.0) for j in range(10)]
    return sum(100 * (x[j + 1] - x[j] ** 2) ** 2 + (1 - x[j]) ** 2 for j in range(9))


def trivial(t):  # measures pure framework overhead per trial
    return t.suggest_float("x", 0.0, 1.0)


FUNCTIONS = {"hartmann6": (hartmann6, -3.32237), "hartmann6_10d": (hartmann6_10d, -3.32237),
             "branin": (branin, 0.397887), "mixed": (mixed, 0.0),
             "branin_constrained": (branin_constrained, 0.397887),
             "hartmann6_constrained": (hartmann6_constrained, -3.32237), "sphere": (sphere, 0.0), "rosenbrock": (rosenbrock, 0.0), "trivial": (trivial, 0.0)}


def sampler_for(name, seed, multivariate, constrained=False):
    kwargs = {} if multivariate is None else {"multivariate": multivariate}
    if constrained:  # Optuna's constraints: values <= 0 are feasible
        kwargs["constraints_func"] = lambda trial: [trial.user_attrs["constraint"]]
    if name == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=seed)
    if name == "cmaes":  # with IPOP restarts, as baton's cmaes
        return optuna.samplers.CmaEsSampler(seed=seed, restart_strategy="ipop")
    if name in ("tpe", "motpe"):  # with several directions Optuna's TPESampler is MOTPE
        return optuna.samplers.TPESampler(seed=seed, **kwargs)
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    kwargs.pop("multivariate", None)
    if not hasattr(optuna.samplers, "GPSampler"):
        sys.exit(f"optuna {optuna.__version__} has no GPSampler (it came in 3.6): use bench/peers/make-venv.sh")
    return optuna.samplers.GPSampler(seed=seed, **kwargs)


def best_feasible(study):
    """The best value of the trials that keep the constraint (all of them when there is none)."""
    values = [t.value for t in study.trials if t.value is not None and t.user_attrs.get("constraint", -1) <= 0]
    return min(values) if values else None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--function", choices=sorted(FUNCTIONS) + sorted(MULTI), default="hartmann6")
    p.add_argument("--trials", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--seeds", type=int, default=0, help="run seeds S..S+N-1 from --seed S (one line each)")
    p.add_argument("--sampler", choices=["tpe", "random", "gp", "nsga2", "motpe", "cmaes"], default="tpe")
    p.add_argument("--multivariate", choices=["default", "0", "1"], default="default",
                   help="TPE: Optuna's default (5.x: multivariate for one objective; 3.x: not), or set it")
    a = p.parse_args()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    multivariate = None if a.multivariate == "default" else a.multivariate == "1"
    if a.function in MULTI:
        return several_objectives(a, multivariate)
    fn, optimum = FUNCTIONS[a.function]
    for seed in (range(a.seed, a.seed + a.seeds) if a.seeds > 0 else [a.seed]):
        constrained = a.function.endswith("_constrained")
        study = optuna.create_study(sampler=sampler_for(a.sampler, seed, multivariate, constrained))
        best_at = {}

        marks = {}  # wall and CPU time when the 10th-last trial ended: the last 10 trials' cost

        def record(study, trial):  # the best so far after 30, 60, 100 trials (the same run's prefix)
            if trial.number + 1 in (30, 60, 100):
                best_at[str(trial.number + 1)] = best_feasible(study)
            if trial.number + 1 == a.trials - 10:
                marks["wall"], marks["cpu"] = time.perf_counter(), time.process_time()

        t0 = time.perf_counter()
        study.optimize(fn, n_trials=a.trials, callbacks=[record])
        dt = time.perf_counter() - t0
        last10 = {}
        if marks:  # per trial (the sampler's suggestion and the objective), mean of the last 10
            last10 = {"last_trials_ms": round((time.perf_counter() - marks["wall"]) * 100, 3),
                      "last_trials_cpu_ms": round((time.process_time() - marks["cpu"]) * 100, 3)}
        print(json.dumps({
            "peer": "optuna", "version": optuna.__version__, "sampler": a.sampler, "function": a.function,
            "trials": a.trials, "seed": seed, "total_s": round(dt, 4), "ms_per_trial": round(dt / a.trials * 1e3, 4),
            "best": best_feasible(study), "best_at": best_at, "optimum": optimum, **last10,
        }), flush=True)


def several_objectives(a, multivariate):
    """One line per seed with the hypervolume (at 100, 300, 1000 trials too), then the median and worst."""
    fn, ref = MULTI[a.function]
    volumes = []
    t_all = time.perf_counter()
    for seed in (range(a.seed, a.seed + a.seeds) if a.seeds > 0 else [a.seed]):
        study = optuna.create_study(directions=["minimize"] * len(ref), sampler=sampler_for(a.sampler, seed, multivariate))
        at = {}

        def record(study, trial):
            n = trial.number + 1
            if n in (100, 300, 1000) or n == a.trials:
                at[str(n)] = hypervolume([t.values for t in study.trials if t.values], ref)

        t0 = time.perf_counter()
        study.optimize(fn, n_trials=a.trials, callbacks=[record])
        dt = time.perf_counter() - t0
        hv = hypervolume([t.values for t in study.trials if t.values], ref)
        volumes.append(hv)
        print(json.dumps({"peer": "optuna", "version": optuna.__version__, "sampler": a.sampler,
                          "function": a.function, "trials": a.trials, "seed": seed, "total_s": round(dt, 4),
                          "ms_per_trial": round(dt / a.trials * 1e3, 4), "hypervolume": hv,
                          "hypervolume_at": at}), flush=True)
    volumes.sort()
    n = len(volumes)
    median = volumes[n // 2] if n % 2 else 0.5 * (volumes[n // 2 - 1] + volumes[n // 2])
    print(json.dumps({"peer": "optuna", "version": optuna.__version__, "sampler": a.sampler, "function": a.function,
                      "trials": a.trials, "seeds": n, "median": median, "worst": volumes[0], "hypervolume": median,
                      "reference": ref,
                      "ms_per_trial": round((time.perf_counter() - t_all) / (a.trials * n) * 1e3, 4)}), flush=True)


if __name__ == "__main__":
    sys.exit(main())

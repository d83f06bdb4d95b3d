#!/usr/bin/env python3
"""The table of bench/hpo_pareto.sh: per function and number of trials, each sampler's median and
worst hypervolume over the seeds (larger is better), the best of each peer marked, and whether
baton's best multi-objective strategy holds the goal (median >= Optuna's best median and worst >=
Optuna's best worst); then the cost per trial."""
import collections
import json
import pathlib
import statistics
import sys


def main():
    folder = pathlib.Path(sys.argv[1])
    volumes = collections.defaultdict(list)  # (function, trials, peer, sampler) -> hypervolumes
    cost = {}
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            d = json.loads(line)
            if "seed" in d:
                for n, hv in d["hypervolume_at"].items():
                    volumes[(d["function"], int(n), d["peer"], d["sampler"])].append(hv)
            else:
                cost[(d["function"], d["peer"], d["sampler"], d["trials"])] = d["ms_per_trial"]
    cells = sorted({(f, n) for f, n, _, _ in volumes}, key=lambda c: (c[0], c[1]))
    print("| function | trials | sampler | median | worst |")
    print("|---|---:|---|---:|---:|")
    verdicts = []
    for f, n in cells:
        rows = {(p, s): v for (ff, nn, p, s), v in volumes.items() if (ff, nn) == (f, n)}
        stats = {k: (statistics.median(v), min(v), len(v)) for k, v in rows.items()}
        for (p, s), (med, worst, count) in sorted(stats.items()):
            print(f"| {f} | {n} | {p} {s} ({count} seeds) | {med:.4f} | {worst:.4f} |")
        baton = [v for (p, s), v in stats.items() if p == "baton" and s != "random"]
        optuna = [v for (p, s), v in stats.items() if p == "optuna"]
        if baton and optuna:
            b_med, b_worst = max(v[0] for v in baton), max(v[1] for v in baton)
            o_med, o_worst = max(v[0] for v in optuna), max(v[1] for v in optuna)
            best = max(baton, key=lambda v: v[0])
            ok = best[0] >= o_med and best[1] >= o_worst
            verdicts.append(f"{f} {n}: baton's best median {best[0]:.4f} (worst {best[1]:.4f}) vs Optuna's best "
                            f"median {o_med:.4f}, best worst {o_worst:.4f}: {'holds' if ok else 'MISSED'}")
    print()
    for v in verdicts:
        print(v)
    print()
    for (f, p, s, n), ms in sorted(cost.items()):
        print(f"cost {f} {p} {s} {n} trials: {ms:.3f} ms per trial")


if __name__ == "__main__":
    sys.exit(main())

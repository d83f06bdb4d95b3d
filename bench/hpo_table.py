#!/usr/bin/env python3
"""The table of bench/README.md from the JSON lines of bench/hpo_quality.sh: per function and trial
count, each sampler's median and worst best value over the seeds (lower is better).

    bench/hpo_table.py OUT_DIR               # the table and the suggestion costs
    bench/hpo_table.py OUT_DIR --groups 20   # also issue 20's test per group of 20 seeds: in how
                                             # many groups baton's median and worst are at most the
                                             # best Optuna's (the one with the lower median)"""
import argparse
import glob
import json
import os
import statistics

p = argparse.ArgumentParser()
p.add_argument("out")
p.add_argument("--groups", type=int, default=0, help="seeds per group for the per-group test")
args = p.parse_args()
rows = {}  # (function, trials, who) -> {seed: best}
cost = {}
for path in sorted(glob.glob(os.path.join(args.out, "*.jsonl"))):
    name = os.path.basename(path)[:-len(".jsonl")]
    last = name.rsplit("-", 1)[-1]
    parallel = last[1:] if last.startswith("p") and last[1:].isdigit() else ""
    for line in open(path):
        j = json.loads(line)
        if "seed" not in j:
            if "last_suggestions_cpu_ms" in j:
                cost[name] = j["last_suggestions_cpu_ms"]
            continue
        who = ("baton " if j["peer"] == "baton" else f"optuna {j['version']} ") + j["sampler"]
        if parallel:
            who += f" --parallel {parallel}"
        for trials, best in j.get("best_at", {}).items():
            rows.setdefault((j["function"], int(trials), who), {})[j["seed"]] = best
        if "ms_per_trial" in j and j["peer"] == "optuna":
            cost[name] = max(cost.get(name, 0), j["ms_per_trial"])

print("| function | trials | sampler | median best | worst best | seeds |")
print("|---|---|---|---|---|---|")
for (function, trials, who), bests in sorted(rows.items()):
    v = list(bests.values())
    print(f"| {function} | {trials} | {who} | {statistics.median(v):.4f} | {max(v):.4f} | {len(v)} |")
print()
print("| run | baton: CPU time of the last 10 suggestions; Optuna: wall time per trial |")
print("|---|---|")
for name, ms in sorted(cost.items()):
    print(f"| {name} | {ms:.2f} ms |")

if args.groups:
    print()
    print(f"| function | trials | sampler | groups of {args.groups} seeds | median <= Optuna's | worst <= Optuna's |")
    print("|---|---|---|---|---|---|")
    for (function, trials, who), bests in sorted(rows.items()):
        if not who.startswith("baton") or "--parallel" in who:
            continue
        kind = who.split()[-1]
        peers = [b for (f, t, w), b in rows.items() if f == function and t == trials and w.startswith("optuna")
                 and w.endswith(" " + kind)]
        if not peers:
            continue
        seeds = sorted(set(bests).intersection(*peers))
        groups = [seeds[i:i + args.groups] for i in range(0, len(seeds) - args.groups + 1, args.groups)]
        med = worst = 0
        for g in groups:
            peer = min(peers, key=lambda b: statistics.median(b[s] for s in g))
            med += statistics.median(bests[s] for s in g) <= statistics.median(peer[s] for s in g)
            worst += max(bests[s] for s in g) <= max(peer[s] for s in g)
        print(f"| {function} | {trials} | {who} | {len(groups)} | {med} | {worst} |")

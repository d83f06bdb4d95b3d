#!/usr/bin/env python3
"""The table of bench/README.md from the JSON lines of bench/hpo_quality.sh: per function and trial
count, each sampler's median and worst best value over the seeds (lower is better)."""
import glob
import json
import os
import statistics
import sys

out = sys.argv[1]
rows = {}  # (function, trials, who) -> [best per seed]
cost = {}
for path in sorted(glob.glob(os.path.join(out, "*.jsonl"))):
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
            rows.setdefault((j["function"], int(trials), who), []).append(best)
        if "ms_per_trial" in j and j["peer"] == "optuna":
            cost[name] = max(cost.get(name, 0), j["ms_per_trial"])

print("| function | trials | sampler | median best | worst best | seeds |")
print("|---|---|---|---|---|---|")
for (function, trials, who), bests in sorted(rows.items()):
    print(f"| {function} | {trials} | {who} | {statistics.median(bests):.4f} | {max(bests):.4f} | {len(bests)} |")
print()
print("| run | baton: CPU time of the last 10 suggestions; Optuna: wall time per trial |")
print("|---|---|")
for name, ms in sorted(cost.items()):
    print(f"| {name} | {ms:.2f} ms |")

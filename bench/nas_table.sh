#!/usr/bin/env bash
# Builds baton's tabular NAS benchmark, bench/nas_table.csv: every architecture of the reduced CNN
# space (bench/nas_table_space.yaml, 250) trained with bench/nas_table.yaml by a grid search (two
# trials at once, one thread each), then one CSV row per architecture and evaluation: the
# architecture's parameters, the step (batch), eval/accuracy there, params (the model's size) and
# trial_seconds (the whole trial's wall time). A killed run goes on where it stopped (run it again).
# `baton search --engine table:bench/nas_table.csv` and `hpo_bench --function table:...` read it.
# Usage: bench/nas_table.sh [BATON] [RUN_DIR]   (default build/bin/baton, bench/results/nas_table)
set -euo pipefail
baton=${1:-build/bin/baton}
run=${2:-bench/results/nas_table}
resume=()
[ -f "$run/search.db" ] && resume=(--resume)
start=$(date +%s)
"$baton" search bench/nas_table_space.yaml --recipe bench/nas_table.yaml --strategy grid --trials 250 \
  --parallel 2 --objective eval/accuracy:max --objective params:min --run-dir "$run" "${resume[@]}"
"$baton" trials ls --storage "$run/search.db" --json >"$run/trials.json"
python3 - "$run/trials.json" bench/nas_table.csv "$(($(date +%s) - start))" "$("$baton" --version)" <<'P'
import csv, datetime, json, sys
trials = json.load(open(sys.argv[1]))
bad = [t["id"] for t in trials if t["status"] != "trained"]
assert not bad, f"trials {bad} did not train: run bench/nas_table.sh again"
keys = sorted(trials[0]["parameters"])
rows = []
for t in trials:
    for v in t["intermediate"]:
        rows.append([t["parameters"][k] for k in keys] +
                    [v["step"], v["value"], int(t["values"][1]), round(t["ended_at"] - t["started_at"], 2)])
rows.sort(key=lambda r: [str(x) for x in r[:len(keys)]] + [r[len(keys)]])
cpu = sum(t["ended_at"] - t["started_at"] for t in trials)
with open(sys.argv[2], "w", newline="") as f:
    f.write(f"# baton's tabular NAS benchmark: bench/nas_table.sh on {datetime.date.today()} ({sys.argv[4]}), "
            f"{len(trials)} architectures of bench/nas_table_space.yaml trained with bench/nas_table.yaml (seed 0); "
            f"this run {sys.argv[3]} s wall, {cpu:.0f} s of trials\n")
    w = csv.writer(f, lineterminator="\n")
    w.writerow(keys + ["step", "eval/accuracy", "params", "trial_seconds"])
    w.writerows(rows)
best = max(trials, key=lambda t: t["final"])
print(f"bench/nas_table.csv: {len(trials)} architectures, {len(rows)} rows; best eval/accuracy {best['final']} "
      f"({best['parameters']}); trials {cpu:.0f} s")
P

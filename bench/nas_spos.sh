#!/usr/bin/env bash
# One-shot search (SPOS) against a 100-trial multi-trial search, on the reduced CNN space of baton's
# benchmark table (bench/nas_table_space.yaml, 250 architectures, each trained by bench/nas_table.yaml).
# SPOS: `baton search --strategy spos` trains the supernet, evaluates TRIALS architectures with its
# weights (regularized evolution) and retrains the best from scratch with the same recipe; its
# CPU seconds are RUN_DIR/spos.json's. The multi-trial side is read from bench/nas_table.csv, whose
# every architecture was trained here with that recipe: a 100-trial search's best (100 distinct
# architectures drawn at random, median over 50 seeds; regularized evolution's figures are in
# bench/nas_regret.sh), and its CPU seconds on this machine: 100 times the retrain's (one trial of
# the same recipe, measured in this run; the table's own trial_seconds were measured where the
# table was made).
# Usage: bench/nas_spos.sh [BATON] [SUPERNET_DURATION] [TRIALS] [SAMPLING]
#        (default build/bin/baton, 3000ba, 100, uniform)
set -euo pipefail
baton=${1:-build/bin/baton}
duration=${2:-3000ba}
trials=${3:-100}
sampling=${4:-uniform}
run=bench/results/nas_spos_${duration}_${sampling}
rm -rf "$run"
"$baton" search bench/nas_table_space.yaml --model-space cnn_space --recipe bench/nas_table.yaml --strategy spos \
  --trials "$trials" --strategy-option "supernet_duration=$duration,sampling=$sampling,population=20,sample_size=5" \
  --run-dir "$run" | grep '^spos:'
"$baton" trials ls --storage "$run/search.db" --json >"$run/trials.json"
python3 - "$run/spos.json" "$run/trials.json" bench/nas_table.csv <<'P'
import csv, json, random, statistics, sys
report, trials = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
rows = [r for r in csv.reader(l for l in open(sys.argv[3]) if not l.startswith("#"))]
head, s = rows[0], rows[0].index("step")
final, seconds = {}, {}
for r in rows[1:]:
    key = json.dumps({k: r[i] for i, k in enumerate(head[:s])}, sort_keys=True)
    if key not in final or int(r[s]) > final[key][0]:
        final[key] = (int(r[s]), float(r[s + 1]))
    seconds[key] = float(r[head.index("trial_seconds")])
acc = {k: v[1] for k, v in final.items()}
keyof = lambda p: json.dumps({k: str(v) for k, v in p.items()}, sort_keys=True)
best = [max(random.Random(seed).sample(sorted(acc.values()), 100)) for seed in range(50)]
multi_best, multi_cpu = statistics.median(best), 100 * statistics.mean(seconds.values())
chosen = report["search"]["best"]["parameters"]
rank = sorted(acc.values(), reverse=True).index(acc[keyof(chosen)]) + 1
inherited = {keyof(t["parameters"]): t["final"] for t in trials}
pairs = [(inherited[k], acc[k]) for k in inherited]
def spearman(pairs):
    n = len(pairs)
    if n < 3: return float("nan")
    def rank(v): o = sorted(range(n), key=lambda i: v[i]); r = [0.0] * n; [r.__setitem__(i, float(j)) for j, i in enumerate(o)]; return r
    a, b = rank([p[0] for p in pairs]), rank([p[1] for p in pairs])
    ma, mb = sum(a) / n, sum(b) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(a, b))
    return cov / (sum((x - ma) ** 2 for x in a) * sum((y - mb) ** 2 for y in b)) ** 0.5
spos_cpu = report["total"]["cpu_seconds"]
multi_cpu_here = 100 * report["retrain"]["cpu_seconds"]
retrained = report["retrain"]["eval/accuracy"]
print(json.dumps({"supernet": report["supernet"], "evaluations": len(trials), "chosen": chosen,
                  "retrained": retrained, "chosen_in_table": acc[keyof(chosen)], "chosen_rank": rank,
                  "table_best": max(acc.values()), "multi_trial_best_median": multi_best,
                  "gap_points": round(100 * (multi_best - retrained), 2),
                  "gap_points_in_table": round(100 * (multi_best - acc[keyof(chosen)]), 2),
                  "spos_cpu_s": round(spos_cpu, 1), "multi_trial_cpu_s_here": round(multi_cpu_here, 1),
                  "cpu_ratio": round(spos_cpu / multi_cpu_here, 3),
                  "multi_trial_cpu_s_table": round(multi_cpu, 1),
                  "spearman_inherited_vs_table": round(spearman(pairs), 3)}, indent=1))
P

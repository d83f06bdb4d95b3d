#!/usr/bin/env bash
# Regret curves on baton's benchmark table (bench/nas_table.csv, made by bench/nas_table.sh): each
# strategy searches the table's 250 architectures at no training cost, 50 seeds, and the table
# below gives the median and mean regret (the table's best eval/accuracy minus the best found, in
# points) after 10 ... 100 trials. baton's strategies through bench/hpo_bench; NNI 3.0's through its
# own API (bench/peers/nni_table.py) when PYTHON (default .venv-nni's) imports nni.
# Usage: bench/nas_regret.sh [TRIALS] [SEEDS]   (default 100, 50)
set -euo pipefail
trials=${1:-100}
seeds=${2:-50}
table=bench/nas_table.csv
python=${PYTHON:-.venv-nni/bin/python}  # bench/peers/make-venv.sh --nni makes it
out=bench/results/nas_regret
mkdir -p "$out"
evo=(--option population=20,sample_size=5)
for s in random tpe gp evolution regularized_evolution; do
  options=()
  [[ $s == *evolution ]] && options=("${evo[@]}")
  build/bin/hpo_bench --function "table:$table" --trials "$trials" --seeds "$seeds" --strategy "$s" "${options[@]}" \
    | grep '"seed"' >"$out/baton_$s.jsonl"
done
if "$python" -c 'import nni' 2>/dev/null; then
  for s in random tpe regularized_evolution; do
    "$python" bench/peers/nni_table.py "$table" --strategy "$s" --trials "$trials" --seeds "$seeds" \
      --population 20 --sample-size 5 >"$out/nni_$s.jsonl"
  done
else
  echo "NNI: $python does not import nni (bench/peers/make-venv.sh --nni); its rows are left out"
fi
python3 - "$out" "$table" <<'P'
import csv, glob, json, os, statistics, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[2]) if not l.startswith("#"))]
s = rows[0].index("step")
last = {}
for r in rows[1:]:
    k = tuple(r[:s])
    if k not in last or int(r[s]) > last[k][0]:
        last[k] = (int(r[s]), float(r[s + 1]))
optimum = max(v[1] for v in last.values())
counts = ["10", "20", "30", "50", "60", "100"]
print(f"table: {len(last)} architectures, best eval/accuracy {optimum:.4f}; regret in points (median / mean of the seeds)")
print("| peer | strategy | " + " | ".join(f"{c} trials" for c in counts) + " |")
print("|---|---|" + "---:|" * len(counts))
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.jsonl"))):
    lines = [json.loads(l) for l in open(path) if l.strip()]
    if not lines:
        continue
    cells = []
    for c in counts:
        best = [abs(l["best_at"][c]) for l in lines if c in l["best_at"]]  # hpo_bench prints -accuracy
        if not best:
            cells.append("-")
            continue
        regret = [100 * (optimum - b) for b in best]
        cells.append(f"{statistics.median(regret):.2f} / {statistics.mean(regret):.2f}")
    print(f"| {lines[0]['peer']} | {lines[0]['sampler']} ({len(lines)} seeds) | " + " | ".join(cells) + " |")
P

#!/usr/bin/env bash
# The architectures a search chose, trained again and judged on the whole test set: the table's top 5
# (what a 100-trial multi-trial search finds: a random 100 of its 250 architectures holds one of the
# table's top 3 in 79% of draws, its top 5 in 92%) against the architectures one-shot searches chose (RUN_DIRs of
# bench/nas_spos.sh). Each is trained with bench/nas_table.yaml, the table's recipe (150 batches),
# with SEEDS seeds, and evaluated once at its end on all 10,000 test images: the table itself holds
# one run on the first 2,000, whose final accuracy moves by up to 17 points between batches 100 and
# 150, so the table's best of 100 is partly a lucky draw, and a retrain's one run on 2,000 images
# is off by about 0.8 points (one standard error) on its own.
# Usage: bench/nas_retrain.sh BATON SEEDS SPOS_RUN_DIR...   (prints one JSON line per architecture)
set -euo pipefail
baton=$1
seeds=$2
shift 2
out=bench/results/nas_retrain
mkdir -p "$out"
archs=$(python3 - bench/nas_table.csv "$@" <<'P'
import csv, json, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if not l.startswith("#"))]
head, s = rows[0], rows[0].index("step")
final = {}
for r in rows[1:]:
    key = tuple(r[:s])
    if key not in final or int(r[s]) > final[key][0]:
        final[key] = (int(r[s]), float(r[s + 1]))
ranked = sorted(final.items(), key=lambda kv: -kv[1][1])
for i, (key, (_, acc)) in enumerate(ranked[:5]):
    print(json.dumps({"who": f"table_top{i + 1}", "table": acc, "arch": dict(zip(head[:s], key))}))
for run in sys.argv[2:]:
    chosen = json.load(open(run + "/spos.json"))["search"]["best"]["parameters"]
    key = tuple(str(chosen[k]) for k in head[:s])
    print(json.dumps({"who": run.rsplit("/", 1)[-1], "table": final[key][1], "arch": {k: str(v) for k, v in chosen.items()}}))
P
)
# One run: ARCH_JSON SEED -> the test accuracy on all 10,000 images.
train() {
  local sets=() dir
  while read -r kv; do sets+=(--set "$kv"); done < <(python3 -c 'import json,sys; [print(f"{k}={v}") for k, v in json.loads(sys.argv[1]).items()]' "$1")
  dir=$out/$(echo "$1" | md5sum | cut -c1-8)_seed$2
  rm -rf "$dir"
  "$baton" train bench/nas_table.yaml "${sets[@]}" --set seed="$2" --set limit_eval_batches=1.0 \
    --set eval_interval=150ba --run-dir "$dir" >"$dir.log" 2>&1
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["metrics"]["eval/accuracy"])' "$dir/summary.json"
}
export -f train
export baton out
while read -r line; do
  arch=$(python3 -c 'import json,sys; print(json.dumps(json.loads(sys.argv[1])["arch"], sort_keys=True))' "$line")
  # The seeds two at a time (each run one thread: num_threads 1 in the recipe).
  accs=$(seq 1 "$seeds" | xargs -P 2 -I{} bash -c 'train "$0" {}' "$arch" | tr '\n' ' ')
  python3 - "$line" "$accs" <<'P'
import json, statistics, sys
row, accs = json.loads(sys.argv[1]), [float(a) for a in sys.argv[2].split()]
print(json.dumps({"who": row["who"], "table_2000_images": row["table"], "retrained_10000_images": accs,
                  "mean": round(statistics.mean(accs), 4),
                  "sd": round(statistics.stdev(accs), 4) if len(accs) > 1 else None,
                  "arch": {k.split(".")[-1]: v for k, v in row["arch"].items() if not k.endswith(("width", "depth")) or k.endswith("stage3_depth")}}))
P
done <<<"$archs"

#!/usr/bin/env bash
# Fused trials against separate processes: the same TRIALS architectures of the benchmark table's
# space (bench/nas_table_space.yaml, drawn by the random strategy with seed 0) trained with the
# table's recipe (bench/nas_table.yaml: 150 batches of 128, one thread a trial), as
# `baton search --fuse TRIALS` (one process, one data stream) and as `--parallel 2` (a process a
# trial, two at once: this machine's 2 cores), on two data sets:
#   idx  the Fashion-MNIST IDX files, in memory (a batch is one gather)
#   png  the same 70,000 images as PNG files, decoded and augmented (random crop, flip) per batch
# Prints, for each, the wall seconds and trials per hour each way, their ratio, and the data
# pipeline's share: the seconds spent making the batches once (RUN_DIR/fused.json) against the
# CPU seconds of the separate processes, which each make them again.
# Usage: bench/nas_fused.sh [BATON] [TRIALS] [DATA...]   (default build/bin/baton, 8, idx png)
set -euo pipefail
baton=$(realpath "${1:-build/bin/baton}")
trials=${2:-8}
shift $(($# < 2 ? $# : 2))
datas=${*:-idx png}
src=$(pwd)
out=$src/bench/results/nas_fused
png=$src/bench/results/nas_fused_png  # written once, kept
mkdir -p "$out"
[ -f "$png/test.csv" ] || python3 - "${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}" "$png" <<'P'
import gzip, os, struct, sys, zlib
idx, root = sys.argv[1], sys.argv[2]
def read(name, offset):
    with gzip.open(os.path.join(idx, name)) as f:
        return f.read()[offset:]
def png(path, pixels):
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
    raw = b"".join(b"\x00" + pixels[r * 28:(r + 1) * 28] for r in range(28))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 28, 28, 8, 0, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw, 1)) + chunk(b"IEND", b""))
for split, prefix in (("train", "train"), ("test", "t10k")):
    images, labels = read(f"{prefix}-images-idx3-ubyte.gz", 16), read(f"{prefix}-labels-idx1-ubyte.gz", 8)
    os.makedirs(os.path.join(root, split))
    with open(os.path.join(root, f"{split}.csv"), "w") as out:
        out.write("path,label\n")
        for i, label in enumerate(labels):
            png(os.path.join(root, split, f"{i:05d}.png"), images[i * 784:(i + 1) * 784])
            out.write(f"{split}/{i:05d}.png,{label}\n")
P
png_sets=(--set data.dataset=images --set "data.train_list=$png/train.csv" --set "data.eval_list=$png/test.csv"
  --set data.channels=1 --set data.image_size=28 --set data.workers=1
  --set 'data.train_transforms=[{random_resized_crop: {scale: [0.64, 1.0]}}, horizontal_flip]'
  --set 'data.eval_transforms=[]' --set 'data.normalize={mean: [0.286], std: [0.353]}')

# One search: NAME FLAGS... -> "wall_seconds cpu_seconds" (the search and its trial processes).
search() {
  local name=$1
  shift
  /usr/bin/time -f "%e %U %S" -o "$out/$name.time" "$baton" search "$src/bench/nas_table_space.yaml" \
    --model-space cnn_space --recipe "$src/bench/nas_table.yaml" --strategy random --seed 0 --trials "$trials" \
    --run-dir "$out/$name" "$@" >"$out/$name.log" 2>&1
  awk '{printf "%s %.1f\n", $1, $2 + $3}' "$out/$name.time"
}
for data in $datas; do
  rm -rf "$out/${data}_fused" "$out/${data}_apart"
  sets=()
  [ "$data" = png ] && sets=("${png_sets[@]}")
  read -r fused_wall fused_cpu < <(search "${data}_fused" --fuse "$trials" "${sets[@]}")
  read -r apart_wall apart_cpu < <(search "${data}_apart" --parallel 2 "${sets[@]}")
  "$baton" trials ls --storage "$out/${data}_fused/search.db" --json >"$out/${data}_fused.json"
  "$baton" trials ls --storage "$out/${data}_apart/search.db" --json >"$out/${data}_apart.json"
  python3 - "$data" "$trials" "$fused_wall" "$fused_cpu" "$apart_wall" "$apart_cpu" "$out/${data}_fused/fused.json" \
    "$out/${data}_fused.json" "$out/${data}_apart.json" <<'P'
import json, sys
data, n, fw, fc, aw, ac = sys.argv[1], int(sys.argv[2]), *map(float, sys.argv[3:7])
report = json.load(open(sys.argv[7]))
# The architectures trained (a repeat of one is answered without training: replayed when it comes
# after the first ended, refused as invalid while the first still runs), and their accuracies.
def trials(path):
    return {json.dumps(r["parameters"], sort_keys=True): r["final"] for r in json.load(open(path)) if r["status"] == "trained"}
fused, apart = trials(sys.argv[8]), trials(sys.argv[9])
assert fused.keys() == apart.keys(), (fused, apart)
# Each separate process makes every batch it takes; fused, each was made once. The seconds of one
# making are wall seconds on a thread among TRIALS on 2 cores: the share is an upper bound.
per_batch = report["data_seconds"] / max(1, report["batches_made"])
print(json.dumps({"data": data, "trials": n, "fused_wall_s": fw, "apart_wall_s": aw,
                  "fused_trials_per_hour": round(3600 * n / fw, 1), "apart_trials_per_hour": round(3600 * n / aw, 1),
                  "speedup": round(aw / fw, 3), "fused_cpu_s": fc, "apart_cpu_s": ac,
                  "batches_made": report["batches_made"], "batches_taken": report["batches_taken"],
                  "data_wall_s_fused": round(report["data_seconds"], 1),
                  "data_share_apart_at_most": round(per_batch * report["batches_taken"] / ac, 3),
                  "architectures": len(fused), "same_accuracy": sum(fused[k] == apart[k] for k in fused)}))
P
done

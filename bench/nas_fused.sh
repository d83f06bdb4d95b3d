#!/usr/bin/env bash
# Fused trials against separate processes: the same TRIALS architectures of the benchmark table's
# space (bench/nas_table_space.yaml, drawn by the random strategy with seed 0) trained with the
# table's recipe (bench/nas_table.yaml: 150 batches of 128, one thread a trial), as
# `baton search --fuse TRIALS` (one process, one data stream) and as `--parallel 2` (a process a
# trial, two at once: this machine's 2 cores), on these data sets:
#   idx   the Fashion-MNIST IDX files, in memory (a batch is one gather)
#   png   the same 70,000 images as PNG files, decoded and augmented (random crop, flip) per batch
#   jpeg  the first 20,000 training and 2,000 test images upscaled to 224x224 JPEGs (quality 90,
#         written with the pinned torchvision of .venv-torch2), decoded to 28x28 (DCT scaling),
#         cropped and flipped per batch: what a search at low resolution over photos reads
# Prints, for each, the wall seconds and trials per hour each way, their ratio, and the data
# pipeline's share: the seconds spent making the batches once (RUN_DIR/fused.json) against the
# CPU seconds of the separate processes, which each make them again.
# Usage: bench/nas_fused.sh [BATON] [TRIALS] [DATA...]   (default build/bin/baton, 8, idx png jpeg)
# NAS_FUSED_PARALLEL: the separate processes at once (default 2, this machine's cores). On a GPU
# (the recipe's device is auto) the fused trials train on streams of their own (bench/gpu_run.sh
# runs `NAS_FUSED_PARALLEL=8 bench/nas_fused.sh BATON 8 idx` there).
set -euo pipefail
baton=$(realpath "${1:-build/bin/baton}")
trials=${2:-8}
shift $(($# < 2 ? $# : 2))
datas=${*:-idx png jpeg}
src=$(pwd)
out=$src/bench/results/nas_fused
png=$src/bench/results/nas_fused_png  # written once, kept
mkdir -p "$out"
[[ " $datas " != *" png "* || -f "$png/test.csv" ]] || python3 - "${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}" "$png" <<'P'
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
jpeg=$src/bench/results/nas_fused_jpeg  # written once, kept
if [[ " $datas " == *" jpeg "* && ! -f "$jpeg/test.csv" ]]; then
  scripts/torch2-env.sh >/dev/null
  "${BATON_TORCH2_VENV:-$src/.venv-torch2}/bin/python" - "${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}" "$jpeg" <<'P'
import gzip, os, sys, torch
from torchvision.io import encode_jpeg
idx, root = sys.argv[1], sys.argv[2]
torch.set_num_threads(1)
for split, prefix, n in (("train", "train", 20000), ("test", "t10k", 2000)):
    with gzip.open(os.path.join(idx, f"{prefix}-images-idx3-ubyte.gz")) as f:
        images = torch.frombuffer(bytearray(f.read()[16:]), dtype=torch.uint8).view(-1, 1, 28, 28)[:n]
    with gzip.open(os.path.join(idx, f"{prefix}-labels-idx1-ubyte.gz")) as f:
        labels = f.read()[8:]
    big = torch.nn.functional.interpolate(images.float(), size=(224, 224), mode="bilinear")
    big = big.round().clamp(0, 255).to(torch.uint8)
    os.makedirs(os.path.join(root, split))
    with open(os.path.join(root, f"{split}.csv"), "w") as out:
        out.write("path,label\n")
        for i in range(n):
            with open(os.path.join(root, split, f"{i:05d}.jpg"), "wb") as f:
                f.write(encode_jpeg(big[i], quality=90).numpy().tobytes())
            out.write(f"{split}/{i:05d}.jpg,{labels[i]}\n")
P
fi
# The images' pipeline (after data.dataset and the lists of a folder).
image_sets=(--set data.channels=1 --set data.image_size=28 --set data.workers=1
  --set 'data.train_transforms=[{random_resized_crop: {scale: [0.64, 1.0]}}, horizontal_flip]'
  --set 'data.eval_transforms=[]' --set 'data.normalize={mean: [0.286], std: [0.353]}')

# One search: NAME FLAGS... -> "wall_seconds cpu_seconds" (the search and its trial processes).
search() {
  local name=$1
  shift
  # bash's own time (the GPU machine's image has no /usr/bin/time): wall, and the user and system
  # seconds of the search and its trial processes.
  local TIMEFORMAT='%R %U %S'
  { time "$baton" search "$src/bench/nas_table_space.yaml" --model-space cnn_space --recipe "$src/bench/nas_table.yaml" \
    --strategy random --seed 0 --trials "$trials" --run-dir "$out/$name" "$@" >"$out/$name.log" 2>&1; } 2>"$out/$name.time" ||
    { echo "nas_fused: the search $name failed: $(tail -3 "$out/$name.log")" >&2; return 1; }
  awk '{printf "%s %.1f\n", $1, $2 + $3}' "$out/$name.time"
}
for data in $datas; do
  rm -rf "$out/${data}_fused" "$out/${data}_apart"
  sets=()
  for folder in png jpeg; do
    [ "$data" = $folder ] && sets=(--set data.dataset=images --set "data.train_list=${!folder}/train.csv"
      --set "data.eval_list=${!folder}/test.csv" "${image_sets[@]}")
  done
  read -r fused_wall fused_cpu < <(search "${data}_fused" --fuse "$trials" "${sets[@]}")
  read -r apart_wall apart_cpu < <(search "${data}_apart" --parallel "${NAS_FUSED_PARALLEL:-2}" "${sets[@]}")
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
# The evaluation sets' batches likewise.
per_batch = report["data_seconds"] / max(1, report["batches_made"])
per_eval = report["eval_data_seconds"] / max(1, report["eval_batches_made"])
apart_data = per_batch * report["batches_taken"] + per_eval * report["eval_batches_taken"]
print(json.dumps({"data": data, "trials": n, "fused_wall_s": fw, "apart_wall_s": aw,
                  "fused_trials_per_hour": round(3600 * n / fw, 1), "apart_trials_per_hour": round(3600 * n / aw, 1),
                  "speedup": round(aw / fw, 3), "fused_cpu_s": fc, "apart_cpu_s": ac,
                  "batches_made": report["batches_made"], "batches_taken": report["batches_taken"],
                  "eval_batches_made": report["eval_batches_made"], "eval_batches_taken": report["eval_batches_taken"],
                  "data_wall_s_fused": round(report["data_seconds"] + report["eval_data_seconds"], 1),
                  "data_share_apart_at_most": round(apart_data / ac, 3),
                  "architectures": len(fused), "same_accuracy": sum(fused[k] == apart[k] for k in fused)}))
P
done

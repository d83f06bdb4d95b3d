#!/usr/bin/env bash
# Fashion-MNIST written out as PNG files trains as the IDX files do (label slow): the default
# recipe on a folder of 70,000 PNGs (listed in the IDX files' order, normalised with the IDX
# loader's statistics, no augmentation) ends within 0.5 points of its test accuracy on the IDX files.
# Usage: png_accuracy.sh BATON_BINARY SOURCE_DIR
set -uo pipefail
baton=$1
src=$2
source "$(dirname "$0")/../common/lib.sh"
require_fashion
idx=$fashion_mnist
cd "$tmp" || exit 1

# The PNGs (8-bit gray, written with zlib alone), train.csv and test.csv in the IDX order, and the
# training set's mean and standard deviation of pixels / 255, as the IDX loader standardises.
stats=$(/usr/bin/python3 - "$idx" <<'PY'
import gzip, os, struct, sys, zlib
import numpy as np
def read(name, offset):
    with gzip.open(os.path.join(sys.argv[1], name)) as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)
def png(path, pixels):
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
    raw = b"".join(b"\x00" + row.tobytes() for row in pixels)
    ihdr = struct.pack(">IIBBBBB", 28, 28, 8, 0, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 1)) + chunk(b"IEND", b""))
for split, prefix in (("train", "train"), ("test", "t10k")):
    images = read(f"{prefix}-images-idx3-ubyte.gz", 16).reshape(-1, 28, 28)
    labels = read(f"{prefix}-labels-idx1-ubyte.gz", 8)
    os.makedirs(split)
    with open(f"{split}.csv", "w") as out:
        out.write("path,label\n")
        for i, (pixels, label) in enumerate(zip(images, labels)):
            png(f"{split}/{i:05d}.png", pixels)
            out.write(f"{split}/{i:05d}.png,{label}\n")
    if split == "train":
        x = images.astype(np.float32) / 255.0
        print(f"{x.mean():.8f} {x.std(ddof=1):.8f}")
PY
) || { echo "FAIL: writing the PNGs"; exit 1; }
read -r mean std <<<"$stats"

common=(--set progress_bar=false)
"$baton" train "$src/recipes/fashion_mnist.yaml" "${common[@]}" --run-dir idx >idx.log 2>&1 || { echo "FAIL: the IDX run"; tail -3 idx.log; exit 1; }
"$baton" train "$src/recipes/fashion_mnist.yaml" "${common[@]}" --run-dir png \
  --set data.dataset=images --set data.train_list=train.csv --set data.eval_list=test.csv --set data.channels=1 \
  --set data.image_size=28 --set "data.train_transforms=[]" --set "data.eval_transforms=[]" \
  --set "data.normalize={mean: [$mean], std: [$std]}" >png.log 2>&1 || { echo "FAIL: the PNG run"; tail -3 png.log; exit 1; }
/usr/bin/python3 - <<'PY'
import json, sys
idx = json.load(open("idx/summary.json"))["metrics"]["eval/accuracy"]
png = json.load(open("png/summary.json"))["metrics"]["eval/accuracy"]
print(f"test accuracy: IDX files {idx:.4f}, PNG folder {png:.4f}, difference {abs(idx - png) * 100:.2f} points (at most 0.5)")
sys.exit(0 if abs(idx - png) <= 0.005 else 1)
PY

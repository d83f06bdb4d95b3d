#!/usr/bin/env bash
# kill -9 + --autoresume on a user's own data (label slow): tests/slow/kill_resume.sh on an image
# folder (random crops and flips decoded on 2 threads), the same pictures in WebDataset shards
# (shuffled chunks and a shuffle buffer), or token shards (random window offsets) that this script
# writes; each run killed 5 times mid-epoch ends bitwise equal to one that never stopped.
# Usage: kill_resume_data.sh BATON_BINARY SOURCE_DIR images|webdataset|tokens
set -uo pipefail
baton=$1
src=$2
kind=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1

case "$kind" in
  images | webdataset)
    # Two classes of 24x24 RGB PNGs, written with zlib alone.
    /usr/bin/python3 - <<'PY'
import os, random, struct, zlib
def png(path, rows):
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
    raw = b"".join(b"\x00" + bytes(v for px in r for v in px) for r in rows)
    ihdr = struct.pack(">IIBBBBB", len(rows[0]), len(rows), 8, 2, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
random.seed(2)
for label, name in enumerate(("dark", "light")):
    os.makedirs(f"train/{name}", exist_ok=True)
    for i in range(150):
        base = 60 + 100 * label
        rows = [[(random.randrange(base, base + 90), random.randrange(256), x * 10) for x in range(24)] for _ in range(24)]
        png(f"train/{name}/{i:03d}.png", rows)
PY
    if [ "$kind" = webdataset ]; then  # the same files, three shards of KEY.png + KEY.cls, interleaved
      /usr/bin/python3 - <<'PY'
import io, os, tarfile
files = sorted((f"{i:03d}", label, f"train/{name}/{i:03d}.png") for label, name in enumerate(("dark", "light")) for i in range(150))
for s in range(3):
    with tarfile.open(f"train-{s}.tar", "w") as tar:
        for key, label, path in files[s::3]:
            for ext, data in (("png", open(path, "rb").read()), ("cls", str(label).encode())):
                info = tarfile.TarInfo(f"{key}_{label}.{ext}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
PY
      cat >recipe.yaml <<'YAML'
model: {name: fashion_cnn}
optimizer: {name: sgd, lr: 0.05, momentum: 0.9}
data: {dataset: webdataset, train_shards: "train-{0..2}.tar", shuffle_buffer: 32, channels: 3, image_size: 20,
       batch_size: 10, workers: 2, train_transforms: [{random_resized_crop: {scale: [0.5, 1.0]}}, horizontal_flip]}
YAML
    else
      cat >recipe.yaml <<'YAML'
model: {name: fashion_cnn}
optimizer: {name: sgd, lr: 0.05, momentum: 0.9}
data: {dataset: images, train_dir: train, channels: 3, image_size: 20, batch_size: 10, workers: 2,
       train_transforms: [{random_resized_crop: {scale: [0.5, 1.0]}}, horizontal_flip]}
YAML
    fi
    steps=600
    ;;
  tokens)
    mkdir corpus
    /usr/bin/python3 - <<'PY'
import random
random.seed(4)
words = "the quick brown fox jumps over lazy dog and then runs away from a river under trees at night".split()
with open("corpus/a.txt", "w") as f:
    for i in range(6000):
        f.write(" ".join(random.choice(words) for _ in range(random.randrange(3, 12))) + ".\n")
PY
    "$baton" tokenize corpus --out shards --vocab-size 320 >/dev/null || { echo "FAIL: tokenize"; exit 1; }
    cat >recipe.yaml <<'YAML'
model: {name: gpt, layers: 2, width: 64, heads: 4}
optimizer: {name: adamw, lr: 0.003}
data: {dataset: tokens, train_files: "shards/train_*.bin", context: 64, batch_size: 8}
YAML
    steps=1500
    ;;
  *) echo "usage: kill_resume_data.sh BATON_BINARY SOURCE_DIR images|webdataset|tokens" >&2; exit 2 ;;
esac
RECIPE="$tmp/recipe.yaml" STEPS=${STEPS:-$steps} "$src/tests/slow/kill_resume.sh" "$baton" "$src"

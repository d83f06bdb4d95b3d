#!/usr/bin/env bash
# baton on a folder of images (seconds): train on class folders of PNGs, the class list in the run
# directory and its checkpoints, predict on a folder and on one file with class names, bad input.
# Usage: images_test.sh BATON_BINARY
set -uo pipefail
baton=$1
source "$(dirname "$0")/../common/lib.sh"
cd "$tmp" || exit 1

# Two classes of 16x16 gray PNGs (a bright left or right half), written with zlib alone.
python3 - <<'PY'
import os, random, struct, zlib
def png(path, rows):
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
    raw = b"".join(b"\x00" + bytes(r) for r in rows)
    ihdr = struct.pack(">IIBBBBB", len(rows[0]), len(rows), 8, 0, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
random.seed(1)
for split, count in (("train", 40), ("val", 10)):
    for label, name in enumerate(("left", "right")):
        os.makedirs(f"{split}/{name}", exist_ok=True)
        for i in range(count):
            rows = [[random.randrange(60) + (150 if (x >= 8) == bool(label) else 0) for x in range(16)] for _ in range(16)]
            png(f"{split}/{name}/{i}.png", rows)
os.makedirs("unknown/bird", exist_ok=True)
png("unknown/bird/0.png", [[0] * 16] * 16)
PY
cat >images.yaml <<YAML
max_duration: 4ep
progress_bar: false
model: {name: fashion_cnn}
optimizer: {name: adam, lr: 0.003}
data: {dataset: images, train_dir: train, eval_dir: val, channels: 1, image_size: 16, batch_size: 16,
       train_transforms: [{random_resized_crop: {scale: [0.8, 1.0]}}], eval_transforms: [{center_crop: 16}]}
YAML
if ! "$baton" train images.yaml --run-dir run >train.log 2>&1; then fail "train"; cat train.log; fi
[ "$(cat run/classes.txt 2>/dev/null)" = "$(printf 'left\nright')" ] || fail "run/classes.txt: $(cat run/classes.txt 2>&1)"
checkpoint=run/checkpoints/latest
"$baton" checkpoint inspect "$checkpoint" >inspect.txt 2>&1 || fail "checkpoint inspect $checkpoint"
grep -q "2 classes: left, right" inspect.txt || fail "the checkpoint does not keep the classes: $(head -c 400 inspect.txt)"
"$baton" checkpoint inspect "$checkpoint" --json | grep -q '"classes"' || fail "checkpoint inspect --json: no classes"
grep -q "test accuracy 1.0000\|test accuracy 0.9" train.log || fail "accuracy: $(tail -2 train.log)"

# Predict on a folder and on one file: a line per image with its class.
"$baton" predict images.yaml --load run/model.pt --inputs val/right --out p.npy >predict.txt 2>&1 || fail "predict folder: $(cat predict.txt)"
[ "$(grep -c ': right (' predict.txt)" -ge 9 ] || fail "predictions on val/right: $(head -5 predict.txt)"
grep -q "predicted 10 examples" predict.txt || fail "predict folder: $(tail -1 predict.txt)"
"$baton" predict images.yaml --load run/model.pt --inputs val/left/3.png >one.txt 2>&1 || fail "predict one: $(cat one.txt)"
grep -q "val/left/3.png: left (" one.txt || fail "predict one file: $(cat one.txt)"

# Named evaluation sets (eval: {NAME: {dir|list}}): each logged as eval/NAME/METRIC at its own interval.
printf 'path,label\nval/left/0.png,0\nval/right/0.png,1\nval/right/1.png,1\n' >few.csv
"$baton" train images.yaml --run-dir sets --set max_duration=2ep \
  --set 'eval={folder: {dir: val, metrics: [accuracy, f1]}, listed: {list: few.csv, interval: 5ba}}' >sets.log 2>&1 ||
  fail "train with eval sets: $(tail -2 sets.log)"
/usr/bin/python3 - <<'PY' || fail "the eval sets' metrics: $(tail -3 sets.log)"
import json
rows = [json.loads(l) for l in open("sets/metrics.jsonl")][1:]
folder = [r["step"] for r in rows if "eval/folder/f1" in r]
listed = [r["step"] for r in rows if "eval/listed/accuracy" in r]
assert folder == [5, 10], folder      # 1ep = 5 batches of 16, and at the end
assert listed == [5, 10], listed
assert "eval/listed/f1" not in str(rows) and "eval/accuracy" in str(rows), rows[-3:]
PY

# Bad input: exit 2 with a line naming the key or file, nothing trained.
expect_bad() {
  local needle=$1
  shift
  "$@" >out 2>err
  local rc=$?
  if [ "$rc" -ne 2 ] || ! grep -qF -- "$needle" err || [ "$(wc -l <err)" -gt 3 ]; then
    fail "$* -> exit $rc (want 2 and '$needle'):"
    cat err
  fi
}
expect_bad "data.eval_dir: unknown/bird: a class the training set does not have" \
  "$baton" train images.yaml --run-dir bad1 --set data.eval_dir=unknown
[ ! -e bad1 ] || fail "a refused run left bad1/"
expect_bad "data.train_dir: nowhere: nothing, not a folder of class folders" \
  "$baton" train images.yaml --run-dir bad2 --set data.train_dir=nowhere
printf 'not an image' >train/left/zz.png
expect_bad "train/left/zz.png: not a JPEG or PNG file" "$baton" train images.yaml --run-dir bad3
rm train/left/zz.png
expect_bad "val/nothing.png: nothing, not an image file or a folder of them" \
  "$baton" predict images.yaml --load run/model.pt --inputs val/nothing.png

# The same pictures as WebDataset shards (KEY.png + KEY.cls, two shards): trains as the folder does.
/usr/bin/python3 - <<'PY'
import glob, io, tarfile
files = sorted(glob.glob("train/*/*.png"))
for s in range(2):
    with tarfile.open(f"shard-{s}.tar", "w") as tar:
        for path in files[s::2]:
            label = b"0" if "/left/" in path else b"1"
            key = path[len("train/"):-len(".png")]
            for ext, data in (("png", open(path, "rb").read()), ("cls", label)):
                info = tarfile.TarInfo(f"{key}.{ext}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
PY
sed -e 's/dataset: images, train_dir: train, eval_dir: val/dataset: webdataset, train_shards: "shard-{0..1}.tar"/' \
  images.yaml >shards.yaml
if ! "$baton" train shards.yaml --run-dir shards_run >shards.log 2>&1; then fail "train on shards"; cat shards.log; fi
[ "$(cat shards_run/classes.txt 2>/dev/null)" = "$(printf '0\n1')" ] || fail "shards_run/classes.txt: $(cat shards_run/classes.txt 2>&1)"
grep -q "train/loss" shards.log || fail "train on shards: $(tail -2 shards.log)"
expect_bad "data.train_shards: shard-2.tar: cannot open the shard (No such file or directory)" \
  "$baton" train shards.yaml --run-dir bad4 --set 'data.train_shards=shard-{0..2}.tar'
expect_bad "data.train_shards: shard-{0..1.tar: braces that do not pair" \
  "$baton" train shards.yaml --run-dir bad5 --set 'data.train_shards=shard-{0..1.tar'
[ ! -e bad4 ] && [ ! -e bad5 ] || fail "a refused run left its run folder"
"$baton" train shards.yaml --run-dir shards_sets --set max_duration=1ep --set 'eval={odd: {shards: shard-1.tar}}' \
  >shards_sets.log 2>&1 || fail "webdataset eval set: $(tail -2 shards_sets.log)"
grep -q '"eval/odd/accuracy"' shards_sets/metrics.jsonl || fail "webdataset eval set: no eval/odd/accuracy"
expect_bad "eval.odd.shards: shard-7.tar: cannot open the shard" \
  "$baton" train shards.yaml --run-dir bad6 --set 'eval={odd: {shards: shard-7.tar}}'

[ "$failures" -eq 0 ] && echo "images_test: ok" || exit 1

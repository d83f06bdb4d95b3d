#!/usr/bin/env bash
# Issue 57's classes at the command line, on small data (seconds each):
#  1. One output path: no writing command writes over one of its inputs (however named) or over
#     what is not a regular file, and a failed one leaves nothing behind (predict, export, plot, nas
#     export, tokenize, mlflow sync).
#  2. --autoresume never starts over in a folder that holds a run it does not continue.
#  3. Sizes from input bounded before anything is written: a class folder whose name is not UTF-8,
#     a list's label of 999999999, image_size 40000.
#  4. Silently wrong no more: an evaluation set named "", --devices that are no devices, predictions
#     rounded by a precision nobody chose, a newline in a file name splitting a prediction line.
#  5. What a newcomer met is said: distributed=on without a launcher, TPE's random start, a typo.
# Every refusal: exit 2, one line, within 10 s, no library's text.
# Usage: outputs_test.sh BATON_BINARY
set -uo pipefail
baton=$1
source "$(dirname "$0")/../common/lib.sh"
cd "$tmp" || exit 1
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT

EXPECT_LINES=1
unchanged() {  # FILE SUMFILE: the file is what it was
  sha256sum -c --quiet "$2" >/dev/null 2>&1 || fail "$1 was changed"
}

/usr/bin/python3 - <<'PY'
import os, struct, zlib
import numpy as np
x = np.random.default_rng(0).random((64, 4), dtype=np.float32)
np.save("x.npy", x)
np.save("y.npy", (x.sum(1) > 2).astype(np.int64))
np.save("v.npy", (3 * x[:, 0] + x[:, 1] + 0.123456).astype(np.float32))
# Gray 8x8 PNGs (no PIL: chunks by hand).
def png(path, shade):
    raw = b"".join(b"\x00" + bytes([(shade + 13 * r + 7 * c) % 256 for c in range(8)]) for r in range(8))
    chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 8, 8, 8, 0, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
for cls, shade in ((b"cat", 10), (b"caf\xe9", 200)):  # the second: Latin-1, not UTF-8
    os.makedirs(b"img/" + cls, exist_ok=True)
    for i in range(3): png(b"img/" + cls + b"/%d.png" % i, shade + i)
os.makedirs("ok/a", exist_ok=True); os.makedirs("ok/b", exist_ok=True)
os.makedirs("single/a", exist_ok=True)
for i in range(4): png("ok/a/%d.png" % i, 10 + i); png("ok/b/%d.png" % i, 200 + i); png("single/a/%d.png" % i, i)
with open("list.csv", "w") as f: f.write("path,label\nok/a/0.png,0\nok/b/0.png,999999999\n")
PY
cat >r.yaml <<'Y'
max_duration: 10ba
eval_interval: 0
progress_bar: false
console_log_interval: 0ep
save_interval: 5ba
data: {dataset: files, train_inputs: x.npy, train_labels: y.npy, eval_inputs: x.npy, eval_labels: y.npy, batch_size: 8}
model: {name: mlp, hidden: [8]}
optimizer: {name: sgd, lr: 0.1}
Y
"$baton" train r.yaml --run-dir base >base.log 2>&1 || { fail "a short run: $(tail -2 base.log)"; exit 1; }
cp base/recipe.yaml base/metrics.jsonl .  # as they were
sha256sum base/model.pt x.npy r.yaml base/metrics.jsonl >inputs.sum

# ---- 1. one output path ----
expect 2 "base/model.pt: --out is base/model.pt, an input of this command" -- \
  "$baton" predict r.yaml --load base/model.pt --out base/model.pt
expect 2 "--out is x.npy, an input" -- "$baton" predict r.yaml --load base/model.pt --inputs x.npy --out x.npy
expect 2 "--out is r.yaml, an input" -- "$baton" predict r.yaml --load base/model.pt --out ./r.yaml
expect 2 "--out is y.npy, an input" -- "$baton" predict r.yaml --load base/model.pt --out y.npy  # the recipe's data
ln -s base/model.pt weights.pt
expect 2 "an input of this command" -- "$baton" predict r.yaml --load weights.pt --out base/model.pt
mkfifo fifo.npy
expect 2 "fifo.npy: --out: a FIFO is there" -- "$baton" predict r.yaml --load base/model.pt --out fifo.npy
expect 2 "an input of this command" -- "$baton" export base/checkpoints/latest --format safetensors \
  --out base/checkpoints/latest
expect 2 "base/metrics.jsonl: --out is base/metrics.jsonl, an input" -- "$baton" plot base --metric train/loss \
  --out base/metrics.jsonl
unchanged "an input" inputs.sum
"$baton" predict r.yaml --load base/model.pt >p1.log 2>&1 || fail "predict: $(tail -1 p1.log)"
"$baton" predict r.yaml --load base/model.pt >p2.log 2>&1 || fail "predict again: $(tail -1 p2.log)"
grep -q "replacing" p1.log && fail "the first predict said it replaced a file"
grep -q "written to predictions.npy (replacing the file there)" p2.log || fail "predict replaced predictions.npy without a word"
[ "$(ls -a | grep -c '\.tmp\.')" -eq 0 ] || fail "temporary files left: $(ls -a | grep tmp)"

# nas export never over the search's storage (every trial in it).
cat >space.yaml <<'Y'
optimizer.lr: {_type: choice, _value: [0.1]}
Y
"$baton" search space.yaml --recipe r.yaml --set eval_interval=5ba --trials 1 --run-dir s >s.log 2>&1 || fail "a search: $(tail -2 s.log)"
sha256sum s/search.db >db.sum
expect 2 "s/search.db: --out is s/search.db, an input of this command" -- \
  "$baton" nas export --storage s/search.db --out s/search.db
unchanged s/search.db db.sum

# tokenize: --out never its input folder (its own files tokenized), never inside it; a failure leaves
# nothing that blocks the retry.
mkdir -p corpus && for i in $(seq 400); do echo "the quick brown fox $i jumps over the lazy dog $((i * 7))"; done >corpus/a.txt
expect 2 "corpus: --out is corpus, an input of this command" -- "$baton" tokenize corpus --vocab-size 300 --out corpus
expect 2 "--out is inside corpus" -- "$baton" tokenize corpus --vocab-size 300 --out corpus/shards
printf 'caf\xe9\n' >corpus/b.txt
expect 2 "corpus/b.txt:1: byte 3 (0xe9) is not UTF-8" -- "$baton" tokenize corpus --vocab-size 300 --out shards
[ ! -e shards ] || fail "a failed tokenize left shards/: $(ls -a shards)"
[ "$(ls -a | grep -c '\.shards\.tmp')" -eq 0 ] || fail "a failed tokenize left its staging folder"
rm corpus/b.txt
"$baton" tokenize corpus --vocab-size 300 --out shards >t.log 2>&1 || fail "tokenize after the failure: $(tail -1 t.log)"
[ -f shards/tokenizer.model ] && [ -f shards/train_000000.bin ] || fail "tokenize wrote: $(ls shards)"

# mlflow sync: a folder that is not a run's is bad input; --wait bounded and finite.
mkdir notarun
expect 2 "notarun: not the folder of a run that logged to MLflow" -- "$baton" mlflow sync notarun
expect 2 "--wait: expected a number from 0 to 3600, got '-5'" -- "$baton" mlflow sync base --wait -5
expect 2 "got 'nan'" -- "$baton" mlflow sync base --wait nan

# ---- 2. --autoresume never starts over a run it does not continue ----
sha256sum base/model.pt base/summary.json base/recipe.yaml base/metrics.jsonl >run.sum
expect 2 "base: --autoresume has nothing to resume here: the folder holds a finished run" -- \
  "$baton" train r.yaml --run-dir base --autoresume --set save_folder=elsewhere
unchanged "the finished run" run.sum
mkdir -p other/checkpoints && cp recipe.yaml metrics.jsonl other/ && echo x >other/checkpoints/snap-5.bin
expect 2 "other: --autoresume has nothing to resume here: the folder holds checkpoints this recipe's save_filename" -- \
  "$baton" train r.yaml --run-dir other --autoresume
mkdir -p another && cp metrics.jsonl another/ && sed 's/lr: 0.1/lr: 0.2/' recipe.yaml >another/recipe.yaml
expect 2 "the folder holds the run of another recipe (its recipe.yaml differs)" -- \
  "$baton" train r.yaml --run-dir another --autoresume
# Killed before its first checkpoint (the same recipe): starts over, the old files moved aside.
mkdir k && cp recipe.yaml metrics.jsonl k/
"$baton" train r.yaml --run-dir k --autoresume >k.log 2>&1 || fail "--autoresume with no checkpoint yet: $(tail -1 k.log)"
grep -q "no checkpoint in k to resume from: starting over (the files there moved to k/replaced-" k.log ||
  fail "starting over was not said: $(head -2 k.log)"
ls k/replaced-*/metrics.jsonl >/dev/null 2>&1 || fail "the old metrics were not kept"

# ---- 3. sizes and names from input bounded, before a run folder is made ----
expect 2 "a class folder whose name is not UTF-8" -- "$baton" train r.yaml --run-dir i1 \
  --set 'data={dataset: images, train_dir: img, channels: 1, image_size: 8, batch_size: 2}'
expect 2 "list.csv:3: the label 999999999 is more than 1,000,000 classes can have" -- "$baton" train r.yaml \
  --run-dir i2 --set 'data={dataset: images, train_list: list.csv, channels: 1, image_size: 8, batch_size: 2}'
expect 2 "image_size: expected a size in pixels from 1 to 8192" -- "$baton" train r.yaml --run-dir i3 \
  --set 'data={dataset: images, train_dir: ok, channels: 1, image_size: 40000, batch_size: 2}'
expect 2 "data.train_dir: one class folder" -- "$baton" train r.yaml --run-dir i4 \
  --set 'data={dataset: images, train_dir: single, channels: 1, image_size: 8, batch_size: 2}'
[ ! -e i1 ] && [ ! -e i2 ] && [ ! -e i3 ] && [ ! -e i4 ] || fail "a refused recipe made its run folder"
# A run folder inside the data it reads: its checkpoints/ would become a class folder.
expect 2 "ok/a: the run folder is inside ok, which the recipe reads; give another --run-dir" -- "$baton" train r.yaml \
  --run-dir ok/a --set 'data={dataset: images, train_dir: ok, channels: 1, image_size: 8, batch_size: 2}'
[ "$(ls ok/a | grep -vc png)" -eq 0 ] || fail "the refused run wrote into the image folder: $(ls ok/a)"

# ---- 4. silently wrong ----
expect 2 "an evaluation set's name is letters" -- "$baton" train r.yaml --run-dir e1 --set 'eval={"": {inputs: x.npy, labels: y.npy}}'
for junk in -1 gpu0 cuda:0; do
  expect 2 "--devices: '$junk' is not a device" -- "$baton" search space.yaml --command true --devices "0,$junk" \
    --trials 1 --run-dir d1
done
expect 2 "CUDA device(s), so the trials would train on the CPU" -- "$baton" search space.yaml --recipe r.yaml \
  --devices 0 --trials 1 --run-dir d2
# A regression's predictions are not rounded by a precision the recipe never chose.
"$baton" train r.yaml --run-dir reg --set loss=mse --set data.train_labels=v.npy --set data.eval_labels=v.npy \
  --set max_duration=40ba >reg.log 2>&1 || fail "a regression run: $(tail -1 reg.log)"
"$baton" predict r.yaml --set loss=mse --set data.train_labels=v.npy --set data.eval_labels=v.npy \
  --load reg/model.pt --out reg.npy >regp.log 2>&1 || fail "predict of a regression: $(tail -1 regp.log)"
/usr/bin/python3 - <<'PY' || fail "predictions rounded to bfloat16"
import struct
raw = open("reg.npy", "rb").read()
n = struct.unpack("<H", raw[8:10])[0]
vals = struct.unpack("<64f", raw[10 + n:10 + n + 256])
# bfloat16 keeps the top 16 bits of a float32: values that all fit there were rounded
fits = sum(1 for v in vals if struct.unpack("<I", struct.pack("<f", v))[0] & 0xFFFF == 0)
assert fits < 8, f"{fits} of 64 predictions are bfloat16 values"
PY
# A newline in an image's name: one prediction line still.
cp -r ok named && mv named/a/0.png "named/a/new
line.png"
"$baton" train r.yaml --run-dir imgrun --set 'data={dataset: images, train_dir: ok, channels: 1, image_size: 8, batch_size: 4}' \
  --set 'model={name: mlp, hidden: [8]}' --set max_duration=2ba >img.log 2>&1 || fail "an image run: $(tail -1 img.log)"
"$baton" predict r.yaml --set 'data={dataset: images, train_dir: ok, channels: 1, image_size: 8, batch_size: 4}' \
  --set 'model={name: mlp, hidden: [8]}' --load imgrun/model.pt --inputs named/a --out n.npy >named.log 2>&1 ||
  fail "predict on images: $(tail -1 named.log)"
[ "$(grep -c ': [ab] (' named.log)" -eq 4 ] || fail "prediction lines: $(cat named.log)"
grep -qF 'new\nline.png: ' named.log || fail "the newline was not written out: $(cat named.log)"

# ---- 5. what a newcomer met, said ----
"$baton" train r.yaml --run-dir dist --set distributed=on >dist.log 2>&1 || fail "distributed=on alone: $(tail -1 dist.log)"
grep -q "distributed: on, but this process was not started by mpirun or srun" dist.log ||
  fail "distributed=on without a launcher trained alone without a word"
printf 'optimizer.lr: {_type: loguniform, _value: [0.01, 0.1]}\n' >tpe.yaml
"$baton" search tpe.yaml --command true --trials 1 --strategy tpe --run-dir tpe >tpe.log 2>&1
grep -q "tpe: the first 10 trials are spread over the space at random" tpe.log || fail "TPE's random start not said"
expect 2 "did you mean 'max_duration'?" -- "$baton" train r.yaml --run-dir typo --set max_duraton=3ba

[ "$failures" -eq 0 ] || exit 1
echo "outputs: all passed"

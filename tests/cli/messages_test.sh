#!/usr/bin/env bash
# The property: whatever a user gets wrong, baton answers in at most 3 lines of its own words. Over
# every recipe key of docs/recipes.md's table (and the data set kinds' keys) set to values of every
# wrong kind (empty, negative, NaN, huge, a list, a mapping, 5,000 characters, an ANSI escape,
# bytes that are not UTF-8), and every command given files that are not what it needs (missing,
# a folder, a FIFO, /dev/zero, a name with a line break, an empty file, garbage): the exit is 0,
# 1 or 2 (never a signal, never a hang), stderr holds at most 3 lines, and none of them is a
# library's text (a LibTorch, nlohmann, CLI11, curl or C++ library message or stack).
# Usage: messages_test.sh BATON_BINARY SOURCE_DIR
set -uo pipefail
baton=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$(cd "$2" && pwd)
source "$(dirname "$0")/../common/lib.sh"
cd "$tmp" || exit 1
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT

/usr/bin/python3 - <<'PY'
import numpy as np
x = np.random.default_rng(0).random((64, 4), dtype=np.float32)
np.save("x.npy", x); np.save("y.npy", (x.sum(1) > 2).astype(np.int64))
PY
cat >r.yaml <<'Y'
max_duration: 4ba
eval_interval: 0
progress_bar: false
console_log_interval: 0ep
data: {dataset: files, train_inputs: x.npy, train_labels: y.npy, batch_size: 8}
model: {name: mlp, hidden: [8]}
optimizer: {name: sgd, lr: 0.1}
Y
"$baton" train r.yaml --run-dir good >good.log 2>&1 || { fail "a good run: $(tail -1 good.log)"; exit 1; }
mkfifo fifo && mkdir folder && : >empty && head -c 3000 /dev/urandom >garbage
printf 'bad\nname' >"$(printf 'line\nbreak.yaml')"

# Each case a line: the arguments to baton, NUL-separated by Python (values hold spaces and bytes).
/usr/bin/python3 - "$src" <<'PY' >cases.bin
import random, re, sys
src = sys.argv[1]
keys = re.findall(r"^\| `([a-z_]+)` \|", open(f"{src}/docs/recipes.md").read(), re.M)
keys += ["data." + k for k in ("dataset", "batch_size", "eval_batch_size", "train_inputs", "train_labels", "shuffle",
                               "drop_last", "image_size", "channels", "train_dir", "context", "train_files",
                               "train_shards", "retry_seconds", "path", "workers", "standardize")]
keys += ["model.name", "model.hidden", "model.layers", "model.width", "model.dropout", "optimizer.name",
         "optimizer.lr", "optimizer.momentum", "scheduler.name", "scheduler.t_warmup", "algorithms", "callbacks",
         "loggers", "eval", "loss", "eval_metrics"]
values = ["", "-1", "nan", "1e400", "[1, 2]", "{a: 1}", "x" * 5000, "\x1b[31mred", "caf\udce9", "null", "0",
          "99999999999999999999", "'1ep'", "-3ba"]
random.seed(57)
cases = []
for key in sorted(set(keys)):
    for value in random.sample(values, 2):
        cases.append(["train", "r.yaml", "--run-dir", "x", "--set", f"{key}={value}"])
bad_files = ["missing.yaml", "folder", "fifo", "/dev/zero", "line\nbreak.yaml", "empty", "garbage"]
for f in bad_files:
    cases += [["train", f, "--run-dir", "x", "--set", "fast_dev_run=true"],  # an empty recipe is the defaults ["eval", "r.yaml", "--load", f], ["predict", "r.yaml", "--load", f],
              ["predict", "r.yaml", "--load", "good/model.pt", "--inputs", f, "--out", "p.npy"],
              ["export", f, "--torchscript", "t.pt"], ["checkpoint", "inspect", f], ["plot", f, "--out", "p.svg"],
              ["summary", f], ["tokenize", f, "--vocab-size", "300", "--out", "tok"],
              ["search", f, "--command", "true", "--run-dir", "s"], ["trials", "ls", "--storage", f],
              ["nas", "export", "--storage", f, "--out", "e.yaml"], ["mlflow", "sync", f],
              ["train", "r.yaml", "--run-dir", "x", "--set", f"data.train_inputs={f}"]]
for flag, value in (("--wait", "nan"), ("--wait", "-5"), ("--max-output-mib", "0"), ("--device", "cuda:99"),
                    ("--device", "\x1b[2J"), ("--trials", "-1"), ("--val-fraction", "nan"), ("--frobnicate", "1")):
    command = {"--wait": ["mlflow", "sync", "good"], "--max-output-mib": ["predict", "r.yaml", "--load", "good/model.pt"],
               "--device": ["eval", "r.yaml", "--load", "good/model.pt"], "--trials": ["search", "r.yaml", "--command", "true"],
               "--val-fraction": ["tokenize", "r.yaml", "--vocab-size", "300", "--out", "tok"],
               "--frobnicate": ["train", "r.yaml"]}[flag]
    cases.append(command + [flag, value])
cases.append(["frobnicate"])
for c in cases:
    sys.stdout.buffer.write(b"\0".join(a.encode("utf-8", "surrogateescape") for a in c) + b"\n\0")
PY

checked=0
library='Exception raised from|INTERNAL ASSERT|json\.exception|\[json\.|terminate called|what\(\):|c10::|std::|basic_string|Segmentation|core dumped|CLI11|libcurl|Traceback'
/usr/bin/python3 - <<'PY' >cases.list
import sys
data = open("cases.bin", "rb").read().split(b"\n\0")
for c in data:
    if c:
        print(c.replace(b"\0", b"\x1f").hex())
PY
while read -r hex; do
  mapfile -d $'\x1f' -t args < <(printf '%s' "$hex" | xxd -r -p)
  rm -rf x s tok
  timeout 20 "$baton" "${args[@]}" >out 2>err
  rc=$?
  checked=$((checked + 1))
  shown=$(printf '%q ' "${args[@]}" | cut -c1-200)
  if [ "$rc" -gt 2 ]; then
    fail "baton $shown: exit $rc (a signal, a hang or an abort): $(head -c 300 err)"
  elif [ "$(wc -l <err)" -gt 3 ]; then
    fail "baton $shown: $(wc -l <err) lines on stderr: $(head -c 300 err)"
  elif grep -qE "$library" err; then
    fail "baton $shown: a library's text: $(head -c 300 err)"
  elif grep -q $'\x1b' err; then
    fail "baton $shown: an escape sequence reached the terminal"
  fi
done <cases.list
[ "$checked" -gt 250 ] || fail "only $checked cases ran"
[ "$failures" -eq 0 ] || exit 1
echo "messages: $checked bad inputs, each answered in at most 3 lines of baton's own words"

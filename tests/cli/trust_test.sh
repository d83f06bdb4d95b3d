#!/usr/bin/env bash
# Issue 36's classes at the command line, on a small data set (seconds): files that are not files,
# documents that explode, names that escape, runs that must not be overwritten (the run directory
# lock, a refused resume, every checkpoint the run's save_filename makes, num_checkpoints_to_keep
# across a resume, stale temporaries), errors that name their key, and what must not be written.
# Usage: trust_test.sh BATON_BINARY
set -uo pipefail
baton=$1
source "$(dirname "$0")/../common/lib.sh"
cd "$tmp" || exit 1
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
# One level down, so that what a name escaping to ../ would write lands in this test's own folder
# (a shared /tmp may hold a ../x of someone else's).
mkdir "$tmp/w" && cd "$tmp/w" || exit 1

# A small data set: 64 examples of 4 features (.npy written here, no numpy needed).
python3 - <<'PY'
import random, struct
def save(path, descr, shape, values, fmt):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, ", ".join(map(str, shape)) + ("," if len(shape) == 1 else ""))
    header += " " * (63 - (len(header) + 10) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + struct.pack("<%d%s" % (len(values), fmt), *values))
random.seed(0)
x = [random.random() for _ in range(64 * 4)]
save("x.npy", "<f4", (64, 4), x, "f")
save("y.npy", "<i8", (64,), [int(sum(x[i * 4:i * 4 + 4]) > 2) for i in range(64)], "q")
PY
cat >r.yaml <<'Y'
run_name: small
max_duration: 10ba
eval_interval: 0
progress_bar: false
console_log_interval: 0ep
loggers: {jsonl: , csv: , tensorboard: }
save_interval: 5ba
data: {dataset: files, train_inputs: x.npy, train_labels: y.npy, batch_size: 8}
model: {name: mlp, hidden: [8]}
optimizer: {name: sgd, lr: 0.1}
Y

# ---- files that are not files, documents that explode ----
mkfifo fifo.yaml
expect 2 "fifo.yaml: a FIFO, not a regular file; the recipe must be one" -- "$baton" train fifo.yaml
expect 2 "/dev/zero: a character device, not a regular file" -- "$baton" train /dev/zero
mkfifo fifo.npy
expect 2 "data.train_inputs: fifo.npy: a FIFO, not a regular file" -- "$baton" train r.yaml --set data.train_inputs=fifo.npy --run-dir f1
expect 2 "data.train_labels: /dev/zero: a character device" -- "$baton" train r.yaml --set data.train_labels=/dev/zero --run-dir f1
python3 -c "
s = 'a0: &a0 [x, x, x, x, x, x, x, x, x]\n'
for i in range(1, 12): s += 'a%d: &a%d [%s]\n' % (i, i, ', '.join(['*a%d' % (i - 1)] * 9))
open('bomb.yaml', 'w').write(s)"
expect 2 "bomb.yaml:1:" -- "$baton" train bomb.yaml
cp bomb.yaml bomb_space.yaml
expect 2 "more than 200000 values once its aliases are expanded" -- "$baton" search bomb_space.yaml --command true --trials 1 --run-dir s0
[ ! -e f1 ] && [ ! -e s0/search.db ] || fail "a refused input left files behind"

# ---- names that escape, writes over what is not a file ----
expect 2 "--set run_name: '../../x' must be a plain name" -- "$baton" train r.yaml --set run_name=../../x
[ ! -e ../x ] && [ ! -e runs ] || fail "run_name ../../x wrote outside runs/"
mkdir -p dir.pt && mkfifo fifo.pt
"$baton" train r.yaml --run-dir base >/dev/null 2>&1 || fail "a short run failed"
expect 2 "/dev/full: --torchscript: a character device is there, not a regular file" -- "$baton" export base/checkpoints/latest --torchscript /dev/full
expect 2 "fifo.pt: --torchscript: a FIFO is there" -- "$baton" export base/checkpoints/latest --torchscript fifo.pt
expect 2 "dir.pt: --torchscript: a folder is there" -- "$baton" export base/checkpoints/latest --torchscript dir.pt
[ -c /dev/full ] || fail "/dev/full was replaced"

# ---- errors that name their key ----
expect 2 "--set optimizer.lr: optimizer 'sgd': lr must be a positive number" -- "$baton" train r.yaml --set optimizer.lr=-1 --run-dir k
expect 2 "--set model.hidden: model 'mlp': every hidden width must be from 1" -- "$baton" train r.yaml --set 'model.hidden=[0]' --run-dir k
expect 2 "--set num_threads: expected a whole number from 1 to 4096, or 0 for every core" -- "$baton" train r.yaml --set num_threads=-1 --run-dir k
expect 2 "--set scheduler.step_size: scheduler 'step': step_size must be more than 0" -- "$baton" train r.yaml --set scheduler.name=step --set scheduler.step_size=0ba --run-dir k
expect 2 "--set optimizer.beta2: optimizer 'adam': beta2 must be in [0, 1)" -- "$baton" train r.yaml --set optimizer.name=adam --set optimizer.beta2=1 --run-dir k
expect 2 "base/checkpoints: a folder, not a regular file; a checkpoint must be one" -- "$baton" train r.yaml --set load_path=base/checkpoints --run-dir k
[ ! -e k ] || fail "a refused recipe left its run folder"
echo 'x: {_type: uniform, _value: [0, 1]}' >space.yaml
expect 2 "--trials must be from 1 to 1,000,000,000" -- "$baton" search space.yaml --command true --trials 99999999999999999999 --run-dir q
expect 2 "--trial-timeout must be a positive number of seconds" -- "$baton" search space.yaml --command true --trial-timeout -5 --run-dir q
echo 'x: {_type: randint, _value: [0.2, 0.8]}' >randint.yaml
expect 2 "randint.yaml: 'x': randint takes whole numbers [low, high)" -- "$baton" search randint.yaml --command true --run-dir q
[ ! -e q ] || fail "a refused search left its run folder"
expect 2 "--port 99999: a port is a number from 1 to 65535" -- "$baton" dashboard base --port 99999

# ---- runs that must not be overwritten ----
# A resume with another optimizer, or another model: refused in one line, the run as it was.
cp -r base keep && cp keep/recipe.yaml recipe.before && cp keep/metrics.jsonl metrics.before
expect 2 "holds the state of optimizer sgd, but this run's optimizer is adam" -- "$baton" train r.yaml --set optimizer.name=adam --set max_duration=20ba --run-dir keep --autoresume
expect 2 "has shape [8, 4] but the model's is [16, 4]" -- "$baton" train r.yaml --set 'model.hidden=[16]' --set max_duration=20ba --run-dir keep --autoresume
cmp -s keep/recipe.yaml recipe.before && cmp -s keep/metrics.jsonl metrics.before || fail "a refused resume changed recipe.yaml or metrics.jsonl"
[ "$(ls keep/tensorboard 2>/dev/null | wc -l)" -eq "$(ls base/tensorboard 2>/dev/null | wc -l)" ] || fail "a refused resume left a TensorBoard file"
# save_filename of another extension: --autoresume finds its checkpoints; keep 2 counts those of before.
"$baton" train r.yaml --set 'save_filename=ep{epoch}-ba{batch}.pt' --set save_num_checkpoints_to_keep=2 --run-dir pt >/dev/null 2>&1
touch "pt/checkpoints/.ep9-ba99.pt.tmp.999999"  # a write a kill cut short
"$baton" train r.yaml --set 'save_filename=ep{epoch}-ba{batch}.pt' --set save_num_checkpoints_to_keep=2 --set max_duration=20ba \
  --run-dir pt --autoresume >pt.out 2>&1 && grep -q "resuming from pt/checkpoints/latest at \[ep=1\]\[ba=10\]" pt.out ||
  { fail "--autoresume with .pt checkpoints"; cat pt.out; }
[ "$(ls pt/checkpoints | grep -c '\.pt$')" -eq 2 ] || fail "num_checkpoints_to_keep 2 across a resume: $(ls pt/checkpoints)"
[ ! -e "pt/checkpoints/.ep9-ba99.pt.tmp.999999" ] || fail "a stale temporary file was kept"
[ "$(grep -c '"train/loss"' pt/metrics.jsonl)" -eq 20 ] || fail "metrics.jsonl after the resume: $(grep -c train/loss pt/metrics.jsonl) lines, want 20"
# Two processes on one run directory: the second is refused, naming the first; the first's files are
# whole. The first trains until it is told to stop (SIGTERM: it ends its batch, checkpoints, exits
# 143), so a loaded machine cannot let it finish before the second one asks.
"$baton" train r.yaml --set max_duration=1000000ba --set save_interval=1000ba --run-dir two --autoresume >two.out 2>&1 &
first=$!
for _ in $(seq 300); do [ -s two/metrics.jsonl ] && break; sleep 0.1; done
expect 2 "two: another baton (pid $first) is training in this run directory" -- "$baton" train r.yaml --set max_duration=3000ba --run-dir two --autoresume
kill -TERM "$first"
wait "$first"
rc=$?
[ "$rc" -eq 143 ] || { fail "the first run, stopped by SIGTERM, exited $rc (want 143)"; cat two.out; }
rows=$(grep -c '^[0-9]' two/metrics.csv)
lines=$(grep -c '"train/loss"' two/metrics.jsonl)
[ "$rows" -gt 0 ] && [ "$rows" -eq "$lines" ] ||
  fail "two processes: metrics.csv $rows rows, metrics.jsonl $lines lines (want the same, more than 0)"
# kill -9 leaves no stale lock: the next run gets it.
"$baton" train r.yaml --set max_duration=100000ba --set save_interval=1000ba --run-dir killed >/dev/null 2>&1 &
victim=$!
for _ in $(seq 300); do [ -s killed/metrics.jsonl ] && break; sleep 0.1; done
kill -9 "$victim"; wait "$victim" 2>/dev/null
"$baton" train r.yaml --set max_duration=5ba --run-dir killed --restart >/dev/null 2>&1 || fail "the run after a kill -9 was refused"

# ---- the dashboard never shows a storage password ----
timeout 3 "$baton" dashboard "postgresql://baton:hunter2@127.0.0.1:1/none" --port 0 >dash.out 2>dash.err
grep -q "hunter2" dash.out dash.err && { fail "the dashboard showed a password"; cat dash.out dash.err; }
grep -q "baton:\*\*\*@127.0.0.1:1" dash.err || { fail "the dashboard's problem line"; cat dash.err; }

[ "$failures" -eq 0 ] && echo "trust: ok"
exit $((failures > 0))

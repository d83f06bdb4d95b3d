#!/usr/bin/env bash
# MLflow (label mlflow, about two minutes): a real MLflow server from PyPI (.venv-mlflow, SQLite
# backend, artifacts served by it) on a loopback port, read back with MLflow's own Python client.
#  1. A run during which the server is killed (kill -9) and started again: training never waits
#     (no gap of 2 s between metrics.jsonl's lines), and every metric of metrics.jsonl is in MLflow
#     at its step with its value; params (the resolved recipe), tags (baton's version, the recipe's
#     git commit, the host, the model summary as the note), the files, status FINISHED.
#  2. A server that is down for the whole run: one line, exit 0, the rest in mlflow_unsent.jsonl
#     (what the buffer could not hold read back from mlflow_pending.jsonl); `baton mlflow sync`
#     sends all of it later.
#  3. A server that accepts and never answers: the run ends within flush_seconds of its training.
#  4. A run killed with kill -9 and resumed with --autoresume continues its MLflow run.
#  5. `baton search`: one run for the search, each trial a child run with its parameters.
#  6. Bad options: one line, exit 2, nothing written.
# Usage: mlflow_test.sh BATON_BINARY SOURCE_DIR. Exit 77 without .venv-mlflow
# (bench/peers/make-venv.sh --mlflow makes it).
set -uo pipefail
baton=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$(cd "$2" && pwd)
venv=${BATON_MLFLOW_VENV:-$src/.venv-mlflow}
if ! "$venv/bin/python" -c "import mlflow" >/dev/null 2>&1; then
  echo "skipped: $venv has no mlflow (bench/peers/make-venv.sh --mlflow makes it)"
  exit 77
fi
command -v curl >/dev/null || { echo "skipped: no curl"; exit 77; }
source "$(dirname "$0")/../common/lib.sh"
cd "$tmp" || exit 1
REFUSED_ONE_LINE=1
py=$venv/bin/python
free_port() { /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
port=$(free_port)
uri=http://127.0.0.1:$port
server=""
start_server() {
  setsid "$venv/bin/mlflow" server --backend-store-uri "sqlite:///$tmp/mlflow.db" --artifacts-destination \
    "$tmp/artifacts" --host 127.0.0.1 --port "$port" --workers 1 >>server.log 2>&1 &
  server=$!
}
wait_up() {
  for _ in $(seq 240); do
    curl -sf "$uri/health" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  echo "FAIL: the MLflow server did not start: $(tail -5 server.log)"
  exit 1
}
stop_server() { [ -n "$server" ] && kill -9 -- "-$server" 2>/dev/null; wait "$server" 2>/dev/null; server=""; }
trap 'stop_server; [ -n "${hang:-}" ] && kill "$hang" 2>/dev/null; rm -rf "$tmp"' EXIT
start_server

/usr/bin/python3 - <<'PY'
import numpy as np
r = np.random.default_rng(5)
x = r.normal(size=(1400, 8)).astype(np.float32)
y = (x[:, 0] + x[:, 1] > 0).astype(np.int64)
for name, a, b in (("train", 0, 1200), ("test", 1200, 1400)):
    np.save(f"{name}_x.npy", x[a:b]); np.save(f"{name}_y.npy", y[a:b])
PY
mkdir repo && mv train_*.npy test_*.npy repo/
cat >repo/r.yaml <<YAML
max_duration: 20s
progress_bar: false
console_log_interval: 0ep
eval_interval: 100ba
save_interval: 200ba
model: {name: mlp, hidden: [1024, 1024]}
optimizer: {name: sgd, lr: 0.05}
data: {dataset: files, train_inputs: $tmp/repo/train_x.npy, train_labels: $tmp/repo/train_y.npy,
       eval_inputs: $tmp/repo/test_x.npy, eval_labels: $tmp/repo/test_y.npy, batch_size: 100}
loggers: {jsonl: , mlflow: {tracking_uri: "$uri", experiment: baton-test, flush_seconds: 60, max_buffered: 200}}
YAML
git -C repo init -q && git -C repo add r.yaml && git -C repo -c user.email=t@t -c user.name=t commit -qm recipe
commit=$(git -C repo rev-parse HEAD)
wait_up

# Reads a run back with MLflow's client and compares it with the run folder's metrics.jsonl.
cat >check.py <<'PY'
import json, math, sys
from mlflow.tracking import MlflowClient
uri, folder, status = sys.argv[1:4]
extra = dict(a.split("=", 1) for a in sys.argv[4:])
c = MlflowClient(uri)
run = c.get_run(json.load(open(f"{folder}/mlflow.json"))["run_id"])
assert run.info.status == status, (run.info.status, status)
want = {}
for line in open(f"{folder}/metrics.jsonl"):
    row = json.loads(line)
    for k, v in row.items():
        if k not in ("step", "time", "hyperparameters", "traces"):
            want.setdefault(k, []).append((row["step"], v))
assert want, "metrics.jsonl holds no metric"
for key, values in want.items():
    got = sorted((m.step, m.value) for m in c.get_metric_history(run.info.run_id, key))
    assert got == sorted(values), (key, len(got), len(values), [v for v in sorted(values) if v not in got][:3])
p = run.data.params
assert p["optimizer.lr"] == "0.05" and p["model.name"] == "mlp" and p["loggers.mlflow.experiment"] == "baton-test", p
t = run.data.tags
assert t["baton.version"] and t["baton.host"], t
for k, v in extra.items():
    assert t.get(k) == v, (k, t.get(k), v)
assert "params" in t.get("mlflow.note.content", ""), t.get("mlflow.note.content")
files = sorted(a.path for a in c.list_artifacts(run.info.run_id))
assert files == ["metrics.jsonl", "model.pt", "recipe.yaml", "summary.json"], files
sent = open(c.download_artifacts(run.info.run_id, "metrics.jsonl", sys.argv[0] + ".d"), "rb").read()
assert sent == open(f"{folder}/metrics.jsonl", "rb").read(), "metrics.jsonl differs"
print(f"{folder}: {sum(len(v) for v in want.values())} values of {len(want)} metrics, {len(p)} params, {len(files)} files")
PY
# The longest gap between two lines of a metrics.jsonl, and how many lines fell between two times.
cat >gaps.py <<'PY'
import json, sys
times = [json.loads(l)["time"] for l in open(sys.argv[1]) if '"time"' in l]
gap = max(b - a for a, b in zip(times, times[1:]))
inside = sum(float(sys.argv[2]) <= t <= float(sys.argv[3]) for t in times) if len(sys.argv) > 3 else 0
print(f"{gap:.3f} {inside}")
PY

# 1. The server killed and started again in the middle of a run.
(cd repo && exec "$baton" train r.yaml --run-dir ../a) >a.log 2>&1 &
trainer=$!
for _ in $(seq 100); do [ -f a/mlflow.json ] && break; sleep 0.1; done
[ -f a/mlflow.json ] || fail "no a/mlflow.json: the run was not made: $(tail -3 a.log)"
sleep 2
down=$(date +%s.%N)
stop_server
sleep 3
start_server
while ! curl -sf "$uri/health" >/dev/null 2>&1; do sleep 0.2; done
up=$(date +%s.%N)
wait "$trainer" || fail "the run with the server restarted: exit $?: $(tail -3 a.log)"
grep -q "not sent" a.log && fail "entries not sent though the server came back: $(grep mlflow a.log)"
read -r gap outage < <(/usr/bin/python3 gaps.py a/metrics.jsonl "$down" "$up")
echo "server down for $(/usr/bin/python3 -c "print(round($up - $down, 1))") s: $outage metrics lines meanwhile, longest gap $gap s"
/usr/bin/python3 -c "import sys; sys.exit(0 if $gap < 2 else 1)" || fail "training waited for the server: a gap of $gap s"
# More than max_buffered (200) waited: some were read back from mlflow_pending.jsonl.
[ "$outage" -gt 200 ] || fail "only $outage lines while the server was down: the buffer never filled"
"$py" check.py "$uri" a FINISHED "mlflow.source.git.commit=$commit" "mlflow.runName=r" || fail "run a in MLflow"
[ ! -e a/mlflow_unsent.jsonl ] && [ ! -e a/mlflow_pending.jsonl ] || fail "unsent or pending files left: $(ls a)"

# 2. A server that is down for the whole run, then sync.
stop_server
"$baton" train repo/r.yaml --run-dir b --set max_duration=1500ba --set loggers.mlflow.flush_seconds=1 >b.log 2>&1 ||
  fail "a run with the server down: exit $?: $(tail -3 b.log)"
[ "$(grep -c 'mlflow' b.log)" -eq 1 ] || fail "not one line about MLflow: $(grep mlflow b.log)"
grep -q "not sent to $uri.*kept in b/mlflow_unsent.jsonl" b.log || fail "the unsent line: $(grep mlflow b.log)"
[ "$(wc -l <b/mlflow_unsent.jsonl)" -gt 1500 ] || fail "mlflow_unsent.jsonl: $(wc -l <b/mlflow_unsent.jsonl) lines"
start_server
wait_up
"$baton" mlflow sync b >sync.log 2>&1 || fail "mlflow sync: exit $?: $(cat sync.log)"
[ ! -e b/mlflow_unsent.jsonl ] || fail "b/mlflow_unsent.jsonl left after sync"
"$py" check.py "$uri" b FINISHED || fail "run b in MLflow after sync"
"$baton" mlflow sync b | grep -q "nothing to send" || fail "a second sync"

# 3. A server that never answers: the run ends within flush_seconds (+ a little) of its training.
/usr/bin/python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", 0)); s.listen(64)
print(s.getsockname()[1], flush=True)
held = []
while True: held.append(s.accept()[0])' >hang.port &
hang=$!
for _ in $(seq 50); do [ -s hang.port ] && break; sleep 0.1; done
start=$(date +%s.%N)
"$baton" train repo/r.yaml --run-dir c --set max_duration=300ba --set loggers.mlflow.flush_seconds=2 \
  --set "loggers.mlflow.tracking_uri=http://127.0.0.1:$(cat hang.port)" >c.log 2>&1 || fail "c: exit $?: $(tail -3 c.log)"
elapsed=$(/usr/bin/python3 -c "import time; print(time.time() - $start)")
trained=$(/usr/bin/python3 -c "import json; s = json.load(open('c/summary.json')); print(s['train_s'] + s['eval_s'])")
echo "a server that never answers: the run took $elapsed s, its training and evaluation $trained s"
/usr/bin/python3 -c "import sys; sys.exit(0 if $elapsed < $trained + 2 + 6 else 1)" ||
  fail "the run took $elapsed s for $trained s of training (flush_seconds 2)"
grep -q "no answer in\|given up\|not sent" c.log || fail "c: no line about what was not sent: $(tail -2 c.log)"
kill "$hang" 2>/dev/null

# 4. kill -9, then --autoresume: the same MLflow run goes on to its end.
"$baton" train repo/r.yaml --run-dir d --set max_duration=1200ba --set save_interval=100ba >d.log 2>&1 &
trainer=$!
for _ in $(seq 200); do [ -e d/checkpoints/latest ] && break; sleep 0.05; done
sleep 0.5
kill -9 "$trainer"
wait "$trainer" 2>/dev/null
first=$(/usr/bin/python3 -c "import json; print(json.load(open('d/mlflow.json'))['run_id'])")
"$baton" train repo/r.yaml --run-dir d --set max_duration=1200ba --set save_interval=100ba --autoresume >d2.log 2>&1 ||
  fail "resume: exit $?: $(tail -3 d2.log)"
second=$(/usr/bin/python3 -c "import json; print(json.load(open('d/mlflow.json'))['run_id'])")
[ "$first" = "$second" ] || fail "the resumed run made a new MLflow run ($first, then $second)"
"$py" - "$uri" "$second" <<'PY' || fail "the resumed MLflow run"
import sys
from mlflow.tracking import MlflowClient
c = MlflowClient(sys.argv[1])
run = c.get_run(sys.argv[2])
steps = {m.step for m in c.get_metric_history(sys.argv[2], "train/loss")}
assert run.info.status == "FINISHED", run.info.status
assert steps == set(range(1, 1201)), (min(steps), max(steps), len(steps))
PY

# 5. A search: one run for the search, its trials its children.
cat >space.yaml <<'YAML'
optimizer.lr: {_type: choice, _value: [0.01, 0.05, 0.2]}
YAML
"$baton" search space.yaml --recipe repo/r.yaml --set max_duration=100ba --set model.hidden=[16] --trials 3 \
  --strategy grid --run-dir s >s.log 2>&1 || fail "search: exit $?: $(tail -3 s.log)"
"$py" - "$uri" <<'PY' || fail "the search's runs"
import json, sys
from mlflow.tracking import MlflowClient
c = MlflowClient(sys.argv[1])
parent = c.get_run(json.load(open("s/mlflow.json"))["run_id"])
assert parent.info.status == "FINISHED", parent.info.status
assert parent.data.params["search.strategy"] == "grid", parent.data.params
best = json.load(open("s/summary.json"))
kids = c.search_runs([parent.info.experiment_id], f"tags.`mlflow.parentRunId` = '{parent.info.run_id}'")
assert len(kids) == 3, len(kids)
assert sorted(k.data.params["optimizer.lr"] for k in kids) == ["0.01", "0.05", "0.2"], [k.data.params for k in kids]
assert max(k.data.metrics["eval/accuracy"] for k in kids) == parent.data.metrics["best/eval/accuracy"]
assert all(k.info.run_name.startswith("r-trial-") for k in kids), [k.info.run_name for k in kids]
PY

# 6. Bad options: one line, exit 2, no run folder.
refused "no tracking_uri" "tracking_uri is required" "$baton" train repo/r.yaml --run-dir e \
  --set 'loggers={mlflow: {experiment: x}}'
refused "not a URL" "http:// or https://" "$baton" train repo/r.yaml --run-dir e --set loggers.mlflow.tracking_uri=localhost:5000
refused "an unknown key" "experimnt" "$baton" train repo/r.yaml --run-dir e --set loggers.mlflow.experimnt=x
[ ! -e e ] || fail "a refused recipe wrote e/"
refused "sync of no run" "no such run folder" "$baton" mlflow sync nowhere

[ "$failures" -eq 0 ] || { echo "server log: $(tail -5 server.log)"; exit 1; }
echo "mlflow: all passed"

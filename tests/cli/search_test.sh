#!/usr/bin/env bash
# baton search and baton trials from the command line: a command search ends with the best
# trial in summary.json; a search killed with SIGKILL resumes with nothing finished run again and
# the same suggestions as a search never stopped; trials ls --json; a recipe search reports its
# evaluations; bad input gets one short error and exit 2.
# Usage: search_test.sh BATON_BINARY SOURCE_DIR
set -uo pipefail
baton=$1
src=$2
source "$(dirname "$0")/../common/lib.sh"

EXPECT_TIMEOUT=300  # a search may run a trial before its error

cat >"$tmp/space.yaml" <<'Y'
x: {_type: uniform, _value: [-5, 10]}
k: {_type: choice, _value: [1, 2, 3]}
Y
# f = (x - 2)^2 + k, minimum 1 at x = 2, k = 1; each run is logged to runs.txt.
cat >"$tmp/trial.sh" <<Y
#!/bin/sh
echo "\$BATON_TRIAL_ID" >> "$tmp/runs.txt"
sleep "\${SLEEP:-0}"
x=\$(echo "\$BATON_TRIAL_PARAMETERS" | sed 's/.*"x":\([-0-9.e+]*\).*/\1/')
k=\$(echo "\$BATON_TRIAL_PARAMETERS" | sed 's/.*"k":\([0-9]*\).*/\1/')
echo 'baton: {"intermediate": 5, "step": 1}'
awk -v x="\$x" -v k="\$k" 'BEGIN { printf "baton: {\"final\": %.10g}\\n", (x - 2) ^ 2 + k }'
Y
chmod +x "$tmp/trial.sh"

"$baton" search "$tmp/space.yaml" --command "$tmp/trial.sh" --trials 40 --parallel 2 --direction minimize \
  --seed 1 --run-dir "$tmp/a" >"$tmp/a.log" 2>&1 || { fail "command search"; cat "$tmp/a.log"; }
python3 - "$tmp/a/summary.json" <<'P' || fail "summary.json"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["trials"]["total"] == 40 and s["trials"]["by_status"] == {"trained": 40}, s
assert s["best"]["value"] < 2.0 and set(s["best"]["parameters"]) == {"x", "k"}, s
P
"$baton" trials ls --storage "$tmp/a/search.db" --json >"$tmp/ls.json" || fail "trials ls"
python3 - "$tmp/ls.json" <<'P' || fail "trials ls --json"
import json, sys
rows = json.load(open(sys.argv[1]))
assert len(rows) == 40 and {"id", "status", "parameters", "final", "intermediate"} <= set(rows[0]), rows[0]
assert rows[0]["intermediate"] == [{"step": 1, "value": 5.0}], rows[0]
P
"$baton" trials show 3 --storage "$tmp/a/search.db" | grep -q '"attempts": 1' || fail "trials show"

# Kill a search mid-way; --resume finishes it: no finished trial runs again, and the trials are
# the ones a search that never stopped suggests.
rm -f "$tmp/runs.txt"
touch "$tmp/runs.txt"
SLEEP=0.3 "$baton" search "$tmp/space.yaml" --command "$tmp/trial.sh" --trials 12 --parallel 2 --strategy random \
  --run-dir "$tmp/b" >"$tmp/b.log" 2>&1 &
pid=$!
for _ in $(seq 100); do [ "$(wc -l <"$tmp/runs.txt" 2>/dev/null || echo 0)" -ge 5 ] && break; sleep 0.05; done
kill -9 $pid
wait $pid 2>/dev/null
"$baton" trials ls --storage "$tmp/b/search.db" --json >"$tmp/before.json"
SLEEP=0 "$baton" search "$tmp/space.yaml" --command "$tmp/trial.sh" --trials 12 --parallel 2 --strategy random \
  --run-dir "$tmp/b" --resume >"$tmp/b2.log" 2>&1 || { fail "resume"; cat "$tmp/b2.log"; }
SLEEP=0 "$baton" search "$tmp/space.yaml" --command "$tmp/trial.sh" --trials 12 --parallel 2 --strategy random \
  --run-dir "$tmp/c" >/dev/null 2>&1 || fail "uninterrupted search"
"$baton" trials ls --storage "$tmp/b/search.db" --json >"$tmp/after.json"
"$baton" trials ls --storage "$tmp/c/search.db" --json >"$tmp/never.json"
python3 - "$tmp/before.json" "$tmp/after.json" "$tmp/never.json" "$tmp/runs.txt" <<'P' || fail "resume kept and re-ran the right trials"
import json, sys, collections
before, after, never = (json.load(open(p)) for p in sys.argv[1:4])
done_before = {r["id"] for r in before if r["status"] == "trained"}
assert 0 < len(done_before) < 12, before
assert [r["status"] for r in after] == ["trained"] * 12, after
assert [r["parameters"] for r in after] == [r["parameters"] for r in never]
runs = collections.Counter(int(l) for l in open(sys.argv[4]) if l.strip())
# the runs file has the first search's runs, then the resumed ones, then the third search's (ids 0..11 again)
for i in done_before:
    assert runs[i] == 2, (i, runs)  # once in the killed search, once in the uninterrupted one
P
"$baton" search "$tmp/space.yaml" --command "$tmp/trial.sh" --trials 3 --run-dir "$tmp/b" >"$tmp/out" 2>&1
[ $? -eq 2 ] && grep -q "add --resume" "$tmp/out" || fail "a second search into the same storage is refused"

# The model strategies too: a GP search killed after its model took over resumes with the
# suggestions of a search never stopped (one trial at a time: the order is the same).
rm -f "$tmp/runs.txt"
touch "$tmp/runs.txt"
gp=(search "$tmp/space.yaml" --command "$tmp/trial.sh" --trials 14 --strategy gp --direction minimize)
SLEEP=0.3 "$baton" "${gp[@]}" --run-dir "$tmp/g" >"$tmp/g.log" 2>&1 &
pid=$!
for _ in $(seq 200); do [ "$(wc -l <"$tmp/runs.txt" 2>/dev/null || echo 0)" -ge 12 ] && break; sleep 0.05; done
kill -9 $pid
wait $pid 2>/dev/null
SLEEP=0 "$baton" "${gp[@]}" --run-dir "$tmp/g" --resume >"$tmp/g2.log" 2>&1 || { fail "gp resume"; cat "$tmp/g2.log"; }
SLEEP=0 "$baton" "${gp[@]}" --run-dir "$tmp/h" >/dev/null 2>&1 || fail "uninterrupted gp search"
"$baton" trials ls --storage "$tmp/g/search.db" --json >"$tmp/g.json"
"$baton" trials ls --storage "$tmp/h/search.db" --json >"$tmp/h.json"
python3 - "$tmp/g.json" "$tmp/h.json" <<'P' || fail "a resumed gp search suggests what one never stopped does"
import json, sys
resumed, never = (json.load(open(p)) for p in sys.argv[1:3])
assert [r["status"] for r in resumed] == ["trained"] * 14, resumed
assert [r["parameters"] for r in resumed] == [r["parameters"] for r in never]
P
expect 2 "strategy gp.candidate: unknown option (known: startup_trials, candidates" -- \
  "$baton" search "$tmp/space.yaml" --command true --strategy gp --strategy-option candidate=5 --run-dir "$tmp/x"
expect 2 "needs KEY=VALUE" -- "$baton" search "$tmp/space.yaml" --command true --strategy-option 5 --run-dir "$tmp/x"

# SIGTERM stops a search cleanly: its running trials' processes end too (none left as orphans),
# they are stored as interrupted, and --resume runs them again.
rm -f "$tmp/runs.txt"
touch "$tmp/runs.txt"
SLEEP=30 "$baton" search "$tmp/space.yaml" --command "$tmp/trial.sh" --trials 4 --parallel 2 --strategy random \
  --run-dir "$tmp/t" >"$tmp/t.log" 2>&1 &
pid=$!
for _ in $(seq 200); do [ "$(wc -l <"$tmp/runs.txt")" -ge 2 ] && break; sleep 0.05; done
kill -TERM $pid
start=$SECONDS
wait $pid
rc=$?
sleep 0.5
orphans=$(pgrep -f "sleep 30" | while read -r p; do tr '\0' ' ' </proc/"$p"/environ 2>/dev/null | grep -q "BATON_TRIAL_ID" && echo "$p"; done | wc -l)
[ "$rc" -eq 143 ] && [ $((SECONDS - start)) -lt 15 ] && [ "$orphans" -eq 0 ] && grep -q "stopped by signal 15: 2 trial(s) interrupted" "$tmp/t.log" ||
  { fail "SIGTERM to a search: exit $rc, $orphans orphan trial(s)"; cat "$tmp/t.log"; }
"$baton" trials ls --storage "$tmp/t/search.db" --json >"$tmp/t1.json"
SLEEP=0 "$baton" search "$tmp/space.yaml" --command "$tmp/trial.sh" --trials 4 --parallel 2 --strategy random \
  --run-dir "$tmp/t" --resume >"$tmp/t2.log" 2>&1 || { fail "resume after SIGTERM"; cat "$tmp/t2.log"; }
"$baton" trials ls --storage "$tmp/t/search.db" --json >"$tmp/t2.json"
python3 - "$tmp/t1.json" "$tmp/t2.json" <<'P' || fail "interrupted trials stored, then run again"
import json, sys
before, after = (json.load(open(p)) for p in sys.argv[1:3])
assert sorted(r["status"] for r in before) == ["interrupted", "interrupted"], before
assert [r["status"] for r in after] == ["trained"] * 4, after
assert [r["parameters"] for r in after][:2] == [r["parameters"] for r in before], (before, after)
P

# --resume with another space is refused, with the difference; --new-study starts over beside it.
printf 'x: {_type: uniform, _value: [0, 3]}\nk: {_type: choice, _value: [1, 2, 3]}\n' >"$tmp/other.yaml"
expect 2 "is not the space of the search in" -- "$baton" search "$tmp/other.yaml" --command "$tmp/trial.sh" --trials 4 --run-dir "$tmp/t" --resume
grep -q 'x was {"_type":"uniform","_value":\[-5,10\]}, now' "$tmp/err" || { fail "the space difference is not named"; cat "$tmp/err"; }
"$baton" search "$tmp/other.yaml" --command "$tmp/trial.sh" --trials 2 --run-dir "$tmp/t" --new-study >"$tmp/ns.log" 2>&1 &&
  [ "$("$baton" trials ls --storage "$tmp/t/search.db" --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" -eq 2 ] &&
  ls "$tmp/t" | grep -q "^search.db.replaced-" || { fail "--new-study"; cat "$tmp/ns.log"; ls "$tmp/t"; }

# Failing and hanging trials end Failed and the search goes on.
"$baton" search "$tmp/space.yaml" --command 'echo boom >&2; exit 4' --trials 2 --run-dir "$tmp/d" >"$tmp/d.log" 2>&1
[ $? -eq 1 ] && grep -q "exit status 4; stderr: boom" "$tmp/d.log" || { fail "failing trials"; cat "$tmp/d.log"; }
"$baton" search "$tmp/space.yaml" --command 'sleep 20' --trial-timeout 0.5 --trials 1 --run-dir "$tmp/e" >"$tmp/e.log" 2>&1
grep -q "timed out after 0.5" "$tmp/e.log" || { fail "trial timeout"; cat "$tmp/e.log"; }

# Median stopping kills running trials (SIGTERM to the command) whose curve is below the median.
cat >"$tmp/curve.sh" <<'Y'
#!/bin/sh
x=$(echo "$BATON_TRIAL_PARAMETERS" | sed 's/.*"x":\([-0-9.e+]*\).*/\1/')
for s in 1 2 3 4 5; do
  awk -v x="$x" -v s="$s" 'BEGIN { printf "baton: {\"intermediate\": %.6f, \"step\": %d}\n", x * s, s }'
  sleep 0.05
done
awk -v x="$x" 'BEGIN { printf "baton: {\"final\": %.6f}\n", x * 5 }'
Y
chmod +x "$tmp/curve.sh"
printf 'x: {_type: uniform, _value: [0, 1]}\n' >"$tmp/x.yaml"
"$baton" search "$tmp/x.yaml" --command "$tmp/curve.sh" --trials 16 --strategy random --median-stop 3 \
  --run-dir "$tmp/m" >"$tmp/m.log" 2>&1 || { fail "median stop search"; cat "$tmp/m.log"; }
"$baton" trials ls --storage "$tmp/m/search.db" --json >"$tmp/m.json"
python3 - "$tmp/m.json" <<'P' || fail "median stopping"
import json, sys
rows = json.load(open(sys.argv[1]))
stopped = [r for r in rows if r["status"] == "interrupted"]
trained = [r for r in rows if r["status"] == "trained"]
assert stopped and len(trained) >= 3, rows
assert all(r["final"] is None for r in stopped), stopped
# a stopped trial was below the median of the trials completed before it, so below the best
assert max(r["parameters"]["x"] for r in stopped) < max(r["parameters"]["x"] for r in trained)
P

# A recipe search: each trial is a short baton train reporting its evaluations.
if [ -d /usr/share/datasets/fashion-mnist ] || [ -n "${BATON_DATA_DIR:-}" ]; then
  printf 'optimizer.lr: {_type: loguniform, _value: [0.01, 0.1]}\n' >"$tmp/lr.yaml"
  "$baton" search "$tmp/lr.yaml" --recipe "$src/recipes/fashion_mnist.yaml" --set max_duration=20ba \
    --set eval_interval=10ba --set 'loggers={}' --set 'callbacks={}' --trials 2 --run-dir "$tmp/r" >"$tmp/r.log" 2>&1 ||
    { fail "recipe search"; cat "$tmp/r.log"; }
  python3 - "$tmp/r/summary.json" "$tmp/r/search.db" "$baton" <<'P' || fail "recipe search results"
import json, subprocess, sys
s = json.load(open(sys.argv[1]))
assert s["trials"]["by_status"] == {"trained": 2} and 0.1 < s["best"]["value"] <= 1, s
rows = json.loads(subprocess.check_output([sys.argv[3], "trials", "ls", "--storage", sys.argv[2], "--json"]))
assert [v["step"] for v in rows[0]["intermediate"]] == [10, 20], rows[0]
P
  # Several objectives of a recipe: a logged metric and params (the model's size).
  "$baton" search "$tmp/lr.yaml" --recipe "$src/recipes/fashion_mnist.yaml" --set max_duration=10ba \
    --set eval_interval=10ba --set 'loggers={}' --set 'callbacks={}' --trials 2 --objective eval/accuracy:max \
    --objective params:min --constraint 'eval/loss<=100' --run-dir "$tmp/rmo" >"$tmp/rmo.log" 2>&1 ||
    { fail "recipe search, several objectives"; cat "$tmp/rmo.log"; }
  python3 - "$tmp/rmo/summary.json" <<'P' || fail "recipe search, several objectives: the front"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["pareto"] and all(0 < t["values"][0] <= 1 and t["values"][1] > 1000 for t in s["pareto"]), s
P
  # A metric the run never logs: the first trial says which it did, the search stops (not 5 failures).
  expect 2 "the metric was never logged: 'eval/acc' (the run logged: eval/accuracy" -- "$baton" search "$tmp/lr.yaml" \
    --recipe "$src/recipes/fashion_mnist.yaml" --set max_duration=10ba --set 'loggers={}' --set 'callbacks={}' \
    --trials 5 --objective eval/acc:max --objective params:min --run-dir "$tmp/rbad"
  [ "$("$baton" trials ls --storage "$tmp/rbad/search.db" --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" = 1 ] ||
    fail "the search went on after a trial without its metric"
fi

expect 2 "unknown strategy 'anneal'" -- "$baton" search "$tmp/space.yaml" --command true --strategy anneal --run-dir "$tmp/x"
printf 'lr: {_type: unifrom, _value: [0, 1]}\n' >"$tmp/typo.yaml"
expect 2 "'lr': unknown _type 'unifrom'" -- "$baton" search "$tmp/typo.yaml" --command true --run-dir "$tmp/x"
# ---- a search shared by several workers (--join): no trial twice, all in one storage ----
: >"$tmp/runs.txt"
for w in 1 2 3; do
  SLEEP=0.2 "$baton" search "$tmp/space.yaml" --command "$tmp/trial.sh" --join --trials 24 --parallel 2 --strategy random \
    --direction minimize --run-dir "$tmp/shared" >"$tmp/join$w.out" 2>&1 &
done
wait
ran=$(wc -l <"$tmp/runs.txt")
distinct=$(sort -u "$tmp/runs.txt" | wc -l)
[ "$ran" -eq 24 ] && [ "$distinct" -eq 24 ] || fail "3 workers x 24 trials: $ran runs, $distinct distinct (want 24, 24)"
"$baton" trials ls --storage "$tmp/shared/search.db" --json >"$tmp/shared.json"
python3 - "$tmp/shared.json" <<'P' || fail "shared search storage: $(cat "$tmp/shared.json" | head -c 300)"
import json, sys
rows = json.load(open(sys.argv[1]))
assert len(rows) == 24 and sorted(r["id"] for r in rows) == list(range(24)), len(rows)
assert all(r["status"] == "trained" for r in rows), [r["status"] for r in rows]
assert len({r["worker"] for r in rows}) >= 2, {r["worker"] for r in rows}
P
grep -q '"best"' "$tmp/shared/summary.json" || fail "shared search: no summary.json"

# A worker killed with SIGKILL while its trial runs: another worker finds the trial's worker gone,
# stops the orphaned trial command, and runs the trial again; nothing is lost.
cat >"$tmp/slow.sh" <<Y
#!/bin/sh
echo "\$BATON_TRIAL_ID" >> "$tmp/slow_runs.txt"
if [ "\$BATON_TRIAL_ID" = 0 ] && [ ! -e "$tmp/slow_once" ]; then touch "$tmp/slow_once"; sleep 4; touch "$tmp/orphan_finished"; fi
echo 'baton: {"final": 1}'
Y
chmod +x "$tmp/slow.sh"
"$baton" search "$tmp/space.yaml" --command "$tmp/slow.sh" --join --trials 3 --heartbeat 0.2 --run-dir "$tmp/dead" \
  >"$tmp/dead1.out" 2>&1 &
victim=$!
for _ in $(seq 100); do [ -e "$tmp/slow_once" ] && break; sleep 0.05; done
kill -9 $victim; wait $victim 2>/dev/null
"$baton" search "$tmp/space.yaml" --command "$tmp/slow.sh" --join --trials 3 --heartbeat 0.2 --run-dir "$tmp/dead" \
  >"$tmp/dead2.out" 2>&1 || fail "the worker after a dead one: $(tail -3 "$tmp/dead2.out")"
grep -q "ended while running trials" "$tmp/dead2.out" || fail "dead worker not noticed: $(cat "$tmp/dead2.out")"
sleep 4.5
[ -e "$tmp/orphan_finished" ] && fail "the dead worker's trial command kept running"
"$baton" trials ls --storage "$tmp/dead/search.db" --json >"$tmp/dead.json"
python3 - "$tmp/dead.json" <<'P' || fail "after a dead worker: $(cat "$tmp/dead.json" | head -c 400)"
import json, sys
rows = json.load(open(sys.argv[1]))
assert [r["status"] for r in rows] == ["trained"] * 3, rows
P

# A silent worker (stopped, not dead): after 10 heartbeats of silence its trial goes back to the
# queue and another worker runs it; the stopped worker, continued, gives it up. Nothing twice.
rm -f "$tmp/slow_once" "$tmp/slow_runs.txt"
"$baton" search "$tmp/space.yaml" --command "$tmp/slow.sh" --join --trials 3 --heartbeat 0.2 --run-dir "$tmp/silent" \
  >"$tmp/silent1.out" 2>&1 &
sleeper=$!
for _ in $(seq 100); do [ -e "$tmp/slow_once" ] && break; sleep 0.05; done
kill -STOP $sleeper
"$baton" search "$tmp/space.yaml" --command "$tmp/slow.sh" --join --trials 3 --heartbeat 0.2 --run-dir "$tmp/silent" \
  >"$tmp/silent2.out" 2>&1 &
helper=$!
sleep 3
kill -CONT $sleeper
wait $helper || fail "the helper worker: $(tail -3 "$tmp/silent2.out")"
wait $sleeper || fail "the silent worker: $(tail -3 "$tmp/silent1.out")"
grep -q "put 1 trial(s) of silent workers back" "$tmp/silent2.out" || fail "silent worker not noticed: $(cat "$tmp/silent2.out")"
"$baton" trials ls --storage "$tmp/silent/search.db" --json >"$tmp/silent.json"
python3 - "$tmp/silent.json" <<'P' || fail "after a silent worker: $(cat "$tmp/silent.json" | head -c 400)"
import json, sys
rows = json.load(open(sys.argv[1]))
assert [r["status"] for r in rows] == ["trained"] * 3, rows
P

# A single search killed with SIGKILL leaves its trial commands running (own process groups);
# --resume stops them before it runs those trials again. A search still running is not resumed.
rm -f "$tmp/slow_once" "$tmp/orphan_finished"
"$baton" search "$tmp/space.yaml" --command "$tmp/slow.sh" --trials 2 --run-dir "$tmp/orphan" >"$tmp/orphan1.out" 2>&1 &
victim=$!
for _ in $(seq 100); do [ -e "$tmp/slow_once" ] && break; sleep 0.05; done
"$baton" search "$tmp/space.yaml" --command "$tmp/slow.sh" --trials 2 --run-dir "$tmp/orphan" --resume >"$tmp/out" 2>&1
[ $? -eq 2 ] && grep -q "is still running" "$tmp/out" || fail "resuming a running search: $(cat "$tmp/out")"
kill -9 $victim; wait $victim 2>/dev/null
"$baton" search "$tmp/space.yaml" --command "$tmp/slow.sh" --trials 2 --run-dir "$tmp/orphan" --resume \
  >"$tmp/orphan2.out" 2>&1 || fail "resume after kill: $(tail -3 "$tmp/orphan2.out")"
grep -q "process(es) left running by the killed search" "$tmp/orphan2.out" ||
  fail "orphans not stopped: $(cat "$tmp/orphan2.out")"
sleep 4.5
[ -e "$tmp/orphan_finished" ] && fail "the killed search's trial command kept running"

# A device per trial: with --devices 0,1,2,3 --devices-per-trial 2, each trial sees its own pair
# (CUDA_VISIBLE_DEVICES, the search's own replaced), two run at once by default, and two trials that
# run at the same time never share one.
mkdir -p "$tmp/devs"
DIR="$tmp/devs" CUDA_VISIBLE_DEVICES=7 "$baton" search "$tmp/space.yaml" --trials 6 --devices 0,1,2,3 --devices-per-trial 2 \
  --command 'echo "$CUDA_VISIBLE_DEVICES $(date +%s%N)" >"$DIR/$BATON_TRIAL_ID"; sleep 0.3; date +%s%N >>"$DIR/$BATON_TRIAL_ID"; echo "baton: {\"final\": 1}"' \
  --run-dir "$tmp/dev" >"$tmp/dev.log" 2>&1 || { fail "a search with --devices"; cat "$tmp/dev.log"; }
grep -q "2 at once" "$tmp/dev.log" || fail "--parallel is not the number of slots: $(head -1 "$tmp/dev.log")"
python3 - "$tmp/devs" <<'P' || fail "trials' devices"
import os, sys
seen = []
for name in os.listdir(sys.argv[1]):
    if name.isdigit():
        devices, start, end = open(os.path.join(sys.argv[1], name)).read().split()
        seen.append((set(devices.split(",")), int(start), int(end)))
assert len(seen) == 6 and all(d in ({"0", "1"}, {"2", "3"}) for d, _, _ in seen), seen
for i, (a, s1, e1) in enumerate(seen):
    for b, s2, e2 in seen[i + 1:]:
        assert e1 < s2 or e2 < s1 or not (a & b), (a, b)
P
expect 2 "device 1 is named twice" -- "$baton" search "$tmp/space.yaml" --command true --devices 0,1,1 --run-dir "$tmp/x"
expect 2 "--devices-per-trial 3: expected 1 to 2" -- "$baton" search "$tmp/space.yaml" --command true --devices 0,1 --devices-per-trial 3 --run-dir "$tmp/x"
expect 2 "--parallel 3: only 2 trial slots" -- "$baton" search "$tmp/space.yaml" --command true --devices 0,1 --parallel 3 --run-dir "$tmp/x"
expect 2 "--devices-per-trial needs --devices" -- "$baton" search "$tmp/space.yaml" --command true --devices-per-trial 2 --run-dir "$tmp/x"
expect 2 "needs 2048 cores" -- "$baton" search "$tmp/space.yaml" --command true --threads-per-trial 1024 --parallel 2 --run-dir "$tmp/x"

printf 'lr: {_type: uniform, _value: [0, 1\n' >"$tmp/broken.yaml"
expect 2 "broken.yaml:2:1" -- "$baton" search "$tmp/broken.yaml" --command true --run-dir "$tmp/x"
expect 2 "give exactly one of --command" -- "$baton" search "$tmp/space.yaml" --run-dir "$tmp/x"
expect 2 "--direction must be maximize or minimize" -- "$baton" search "$tmp/space.yaml" --command true --direction up --run-dir "$tmp/x"
expect 2 "cannot connect" -- "$baton" search "$tmp/space.yaml" --command true --storage postgresql://127.0.0.1:1/x --run-dir "$tmp/x"
expect 2 "--heartbeat must be" -- "$baton" search "$tmp/space.yaml" --command true --join --heartbeat 0 --run-dir "$tmp/hb"
expect 2 "--brackets needs --asha" -- "$baton" search "$tmp/space.yaml" --command true --brackets 3 --run-dir "$tmp/br"
expect 2 "no such storage file" -- "$baton" trials ls --storage "$tmp/none.db"

# ---- several objectives and a constraint: minimise x and (x - 5)^2 with x >= 0: the front is x in [0, 5] ----
printf 'x: {_type: uniform, _value: [-5, 10]}\n' >"$tmp/mo.yaml"
cat >"$tmp/mo.sh" <<'Y'
#!/bin/sh
x=$(echo "$BATON_TRIAL_PARAMETERS" | sed 's/.*"x":\([-0-9.e+]*\).*/\1/')
awk -v x="$x" 'BEGIN { printf "baton: {\"final\": [%.10g, %.10g], \"constraints\": [%.10g]}\n", x, (x - 5) ^ 2, x }'
Y
chmod +x "$tmp/mo.sh"
"$baton" search "$tmp/mo.yaml" --command "$tmp/mo.sh" --objective a:min --objective b:min --constraint 'a>=0' \
  --strategy nsga2 --strategy-option population=6 --trials 24 --parallel 2 --run-dir "$tmp/mo" >"$tmp/mo.log" 2>&1 ||
  { fail "several objectives"; cat "$tmp/mo.log"; }
grep -q "^Pareto front: [0-9]* trial(s) (a min, b min)" "$tmp/mo.log" || fail "the front is printed: $(tail -3 "$tmp/mo.log")"
"$baton" trials pareto --storage "$tmp/mo/search.db" --json >"$tmp/mo.json" || fail "trials pareto"
python3 - "$tmp/mo/summary.json" "$tmp/mo.json" <<'P' || fail "several objectives: the front"
import json, sys
s, p = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
front = s["pareto"]
assert front and all(0 <= t["parameters"]["x"] <= 5 for t in front), front
assert [t["id"] for t in p["pareto"]] == [t["id"] for t in front], (p, front)
assert all(len(t["values"]) == 2 and t["constraints"][0] >= 0 for t in p["pareto"]), p
assert s["objectives"] == [{"metric": "a", "direction": "minimize"}, {"metric": "b", "direction": "minimize"}], s
assert 0 < s["trials"]["feasible"] < 24, s["trials"]
P
expect 2 "give either --objective" -- "$baton" search "$tmp/mo.yaml" --command true --objective a:min --direction minimize --run-dir "$tmp/x"
expect 2 "strategy gp optimises one objective" -- "$baton" search "$tmp/mo.yaml" --command true --objective a:min --objective b:max --strategy gp --run-dir "$tmp/x"
expect 2 "expected METRIC<=VALUE or METRIC>=VALUE" -- "$baton" search "$tmp/mo.yaml" --command true --constraint 'a=<1' --run-dir "$tmp/x"
expect 2 "has one objective" -- "$baton" trials pareto --storage "$tmp/a/search.db"
printf 'act: {_type: choice, _value: [relu, gelu]}\n' >"$tmp/choices.yaml"
expect 2 "strategy cmaes: the space has only choices" -- "$baton" search "$tmp/choices.yaml" --command true --strategy cmaes --run-dir "$tmp/x"

[ $failures -eq 0 ] && echo "search cli: ok"
exit $((failures > 0))

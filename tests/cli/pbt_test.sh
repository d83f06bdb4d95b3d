#!/usr/bin/env bash
# baton search --strategy pbt: a trial that exploits another takes its state bitwise (with the
# parameters left as they were, its next evaluation is the other's, to the last digit); every
# exploit is in trials ls --json; a PBT search killed with SIGKILL and resumed ends exactly as one
# never stopped; PBT with a --command trial, without an interval, with several objectives or with
# --asha is refused with one line and exit 2.
# Usage: pbt_test.sh BATON_BINARY SOURCE_DIR
set -uo pipefail
baton=$1
src=$2
# shellcheck source=../common/lib.sh
source "$(dirname "$0")/../common/lib.sh"
cd "$tmp" || exit 1
trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
export REFUSED_ONE_LINE=1

printf 'optimizer.lr: {_type: loguniform, _value: [0.01, 0.2]}\noptimizer.momentum: {_type: uniform, _value: [0.5, 0.95]}\n' \
  >"$tmp/space.yaml"
recipe=$src/recipes/fashion_mnist.yaml
pbt=(search "$tmp/space.yaml" --recipe "$recipe" --set max_duration=30ba --set eval_interval=10ba
  --set eval_subset_num_batches=2 --set 'loggers={}' --set scheduler.name=constant --strategy pbt
  --strategy-option population=4 --strategy-option interval=10ba --parallel 2)

# Bad input first: nothing trains.
refused "pbt with --command" "--strategy pbt copies the checkpoints of a recipe's trials" \
  "$baton" search "$tmp/space.yaml" --command true --strategy pbt --strategy-option interval=10ba --run-dir "$tmp/x"
refused "pbt without an interval" "strategy pbt needs interval=TIME" \
  "$baton" search "$tmp/space.yaml" --recipe "$recipe" --strategy pbt --run-dir "$tmp/x"
refused "pbt interval in dur" "interval 10dur must be" \
  "$baton" search "$tmp/space.yaml" --recipe "$recipe" --strategy pbt --strategy-option interval=10dur --run-dir "$tmp/x"
refused "pbt malformed perturb" "perturb" "$baton" search "$tmp/space.yaml" --recipe "$recipe" --strategy pbt \
  --strategy-option interval=10ba --strategy-option perturb=0.8:x --run-dir "$tmp/x"
refused "pbt with two objectives" "strategy pbt optimises one objective" "$baton" search "$tmp/space.yaml" --recipe "$recipe" \
  --strategy pbt --strategy-option interval=10ba --objective eval/accuracy:max --objective params:min --run-dir "$tmp/x"
refused "pbt with --asha" "leave out --asha" "$baton" search "$tmp/space.yaml" --recipe "$recipe" --strategy pbt \
  --strategy-option interval=10ba --asha 10 --run-dir "$tmp/x"
[ ! -e "$tmp/x/search.db" ] || fail "a refused PBT search wrote its storage"

if ! [ -d /usr/share/datasets/fashion-mnist ] && [ -z "${BATON_DATA_DIR:-}" ]; then
  echo "skipped the training part: no Fashion-MNIST (Debian's dataset-fashion-mnist)"
  [ "$failures" -eq 0 ] || exit 1
  exit 77
fi

# With perturb=1:1 and no resampling an exploit copies the other trial's parameters unchanged: the
# trial's next evaluation is then the other's, exactly (the same weights, optimizer, data position).
"$baton" "${pbt[@]}" --strategy-option perturb=1:1 --strategy-option resample_probability=0 \
  --run-dir "$tmp/same" >"$tmp/same.log" 2>&1 || { fail "PBT search"; cat "$tmp/same.log"; }
"$baton" trials ls --storage "$tmp/same/search.db" --json >"$tmp/same.json" || fail "trials ls --json"
python3 - "$tmp/same.json" <<'P' || fail "PBT exploits: the copied state"
import json, sys
trials = {t["id"]: t for t in json.load(open(sys.argv[1]))}
assert len(trials) == 4 and all(t["status"] == "trained" and "paused_at" not in t for t in trials.values()), trials
exploits = [(t["id"], e) for t in trials.values() for e in t["exploits"]]
assert len(exploits) == 2, exploits  # quantile 0.25 of 4: one trial at each of the 2 interval ends
for who, e in exploits:
    assert e["at"] in ("10ba", "20ba") and e["step"] in (10, 20) and e["from"] != who, e
    assert e["changes"] == {} or set(e["changes"]) <= {"optimizer.lr", "optimizer.momentum"}, e
    mine = {v["step"]: v["value"] for v in trials[who]["intermediate"]}
    theirs = {v["step"]: v["value"] for v in trials[e["from"]]["intermediate"]}
    nxt = e["step"] + 10
    assert e["from_score"] == theirs[e["step"]] and e["score"] == mine[e["step"]], (e, mine, theirs)
    assert e["from_score"] >= e["score"], e
    assert mine[nxt] == theirs[nxt], ("not the same state", who, e, mine, theirs)
P
python3 -c "import json, sys; s = json.load(open(sys.argv[1])); assert s['exploits'] == 2 and s['trials']['total'] == 4, s" \
  "$tmp/same/summary.json" || fail "summary.json: the exploits and the population"
out=$("$baton" trials ls --storage "$tmp/same/search.db")
grep -qE " <- [0-3] at (10|20)ba" <<<"$out" || fail "trials ls shows no lineage: $out"

# Killed with SIGKILL after its first exploit, resumed: the same trials, values and exploits as the
# search above, never stopped.
"$baton" "${pbt[@]}" --strategy-option perturb=1:1 --strategy-option resample_probability=0 \
  --run-dir "$tmp/killed" >"$tmp/killed.log" 2>&1 &
pid=$!
for _ in $(seq 600); do
  if [ -f "$tmp/killed/search.db" ] &&
    "$baton" trials ls --storage "$tmp/killed/search.db" --json 2>/dev/null | grep -q '"from"'; then
    break
  fi
  sleep 0.1
done
kill -9 "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
"$baton" trials ls --storage "$tmp/killed/search.db" --json | grep -q '"from"' || fail "no exploit before the kill"
"$baton" "${pbt[@]}" --strategy-option perturb=1:1 --strategy-option resample_probability=0 \
  --run-dir "$tmp/killed" --resume >"$tmp/resumed.log" 2>&1 ||
  { fail "PBT resume"; cat "$tmp/resumed.log"; }
python3 - "$baton" "$tmp/same/search.db" "$tmp/killed/search.db" <<'P' || fail "a resumed PBT search is the one never stopped"
import json, subprocess, sys
def trials(db):
    out = {}
    for t in json.loads(subprocess.check_output([sys.argv[1], "trials", "ls", "--storage", db, "--json"])):
        curve = {v["step"]: v["value"] for v in t["intermediate"]}  # a run again reports its step again
        out[t["id"]] = (t["status"], t["final"], t["parameters"], curve,
                        [(e["from"], e["step"], e["changes"]) for e in t["exploits"]])
    return out
whole, resumed = trials(sys.argv[2]), trials(sys.argv[3])
assert whole == resumed, (whole, resumed)
assert sum(len(t[4]) for t in whole.values()) == 2, whole
P
# A PBT state baton did not write (edited, or another version's) is refused, not followed.
cp -r "$tmp/killed" "$tmp/edited"
python3 -c 'import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); db.execute("UPDATE meta SET value = ? WHERE key = ?", (sys.argv[2], "pbt")); db.commit(); assert db.total_changes == 1' \
  "$tmp/edited/search.db" '{"round": "two"}' || fail "could not edit the PBT state"
refused "an edited PBT state" "meta pbt) is not what baton writes" "$baton" "${pbt[@]}" --strategy-option perturb=1:1 \
  --strategy-option resample_probability=0 --run-dir "$tmp/edited" --resume
grep -q "resuming: 4 trials" "$tmp/resumed.log" || { fail "the resume did not say what it resumed"; cat "$tmp/resumed.log"; }

[ "$failures" -eq 0 ] || exit 1
echo "pbt_test: all checks passed"

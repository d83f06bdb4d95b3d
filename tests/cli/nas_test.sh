#!/usr/bin/env bash
# baton search --model-space and baton nas export: a search of the zoo's cnn_space (its choices as
# model.arch.* parameters, with a space file's own parameters beside them) trains architectures of
# it; the best trial and a named one export as recipes that `baton train` runs and that hold the
# trial's architecture; --resume goes on with the same space; bad input gets one short error, exit
# 2, and writes nothing.
# Usage: nas_test.sh BATON_BINARY SOURCE_DIR
set -uo pipefail
baton=$1
src=$2
if [ ! -d /usr/share/datasets/fashion-mnist ] && [ -z "${BATON_DATA_DIR:-}" ]; then
  echo "skipped: no Fashion-MNIST (/usr/share/datasets/fashion-mnist or BATON_DATA_DIR)"
  exit 77
fi
source "$(dirname "$0")/../common/lib.sh"
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT

EXPECT_TIMEOUT=300  # a search may run a trial before its error

recipe="$src/recipes/fashion_mnist.yaml"
short=(--set max_duration=8ba --set eval_interval=8ba --set limit_eval_batches=1 --set 'loggers={}'
  --set 'callbacks={}')
printf 'optimizer.lr: {_type: loguniform, _value: [0.01, 0.1]}\n' >"$tmp/lr.yaml"
"$baton" search "$tmp/lr.yaml" --model-space cnn_space --recipe "$recipe" "${short[@]}" --trials 3 \
  --strategy regularized_evolution --strategy-option population=2,sample_size=2 --run-dir "$tmp/s" \
  >"$tmp/s.log" 2>&1 || { fail "model-space search"; cat "$tmp/s.log"; }
grep -q "model space cnn_space" "$tmp/s.log" || fail "the search names its space: $(head -1 "$tmp/s.log")"
"$baton" trials ls --storage "$tmp/s/search.db" --json >"$tmp/ls.json" || fail "trials ls"
python3 - "$tmp/s/model_space.json" "$tmp/ls.json" <<'P' || fail "the written space and the trials"
import json, sys
space = json.load(open(sys.argv[1]))
labels = {f"stage{s}_{c}" for s in (1, 2, 3) for c in ("op", "width", "depth")}
assert set(space) == {"optimizer.lr"} | {"model.arch." + l for l in labels}, sorted(space)
assert space["model.arch.stage2_op"]["_value"] == ["conv3x3", "conv5x5", "dwsep3x3", "maxpool", "identity"], space
rows = json.load(open(sys.argv[2]))
assert [(r["id"], r["status"]) for r in rows] == [(0, "trained"), (1, "trained"), (2, "trained")], rows
assert all(set(r["parameters"]) == set(space) and 0 < r["final"] <= 1 for r in rows), rows
assert len({json.dumps(r["parameters"], sort_keys=True) for r in rows}) == 3, rows
P

# The best trial, and trial 2, as recipes: the search's recipe with its overrides and the trial's
# architecture; they train.
"$baton" nas export --storage "$tmp/s/search.db" --out "$tmp/best.yaml" >"$tmp/export.log" 2>&1 ||
  { fail "nas export"; cat "$tmp/export.log"; }
"$baton" nas export --storage "$tmp/s/search.db" --trial 2 --out "$tmp/two.yaml" >/dev/null 2>&1 || fail "nas export --trial 2"
python3 - "$tmp/ls.json" "$tmp/best.yaml" "$tmp/two.yaml" <<'P' || fail "the exported recipes"
import json, sys, yaml
rows = json.load(open(sys.argv[1]))
best = max(rows, key=lambda r: r["final"])
by_id = {r["id"]: r for r in rows}
for row, path in ((best, sys.argv[2]), (by_id[2], sys.argv[3])):
    r = yaml.safe_load(open(path))
    assert r["model"]["name"] == "cnn_space", r["model"]
    arch = {"model.arch." + k: v for k, v in r["model"]["arch"].items()}
    assert arch == {k: v for k, v in row["parameters"].items() if k.startswith("model.arch.")}, (arch, row)
    assert abs(r["optimizer"]["lr"] - row["parameters"]["optimizer.lr"]) < 1e-12 and r["max_duration"] == "8ba", r
    assert open(path).readline().startswith("# trial %d " % row["id"]), path
P
"$baton" train "$tmp/two.yaml" --set fast_dev_run=2 >"$tmp/t.log" 2>&1 || { fail "train the exported recipe"; cat "$tmp/t.log"; }

# --resume: the same space (made again from the recipe) goes on.
"$baton" search "$tmp/lr.yaml" --model-space cnn_space --recipe "$recipe" "${short[@]}" --trials 4 \
  --strategy regularized_evolution --strategy-option population=2,sample_size=2 --run-dir "$tmp/s" --resume \
  >"$tmp/r.log" 2>&1 || { fail "resume a model-space search"; cat "$tmp/r.log"; }
[ "$("$baton" trials ls --storage "$tmp/s/search.db" --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" = 4 ] ||
  fail "the resumed search did not end with 4 trials"

# One-shot search (SPOS): a space file narrows the choices (the widths to one value each); the
# supernet trains, architectures are evaluated with its weights by evolution, the best retrains.
cat >"$tmp/narrow.yaml" <<'Y'
model.arch.stage1_width: {_type: choice, _value: [16]}
model.arch.stage2_width: {_type: choice, _value: [32]}
model.arch.stage3_width: {_type: choice, _value: [32]}
model.arch.stage1_op: {_type: choice, _value: [conv3x3, maxpool, identity]}
Y
{ cat "$tmp/narrow.yaml"; cat "$tmp/lr.yaml"; } >"$tmp/narrow_lr.yaml"
spos=(search "$tmp/narrow.yaml" --model-space cnn_space --recipe "$recipe" --strategy spos "${short[@]}"
  --strategy-option supernet_duration=12ba,sampling=fair,population=3,sample_size=2,recalibrate_batches=2 --run-dir "$tmp/o")
"$baton" "${spos[@]}" --trials 6 >"$tmp/o.log" 2>&1 || { fail "spos search"; cat "$tmp/o.log"; }
grep -q "spos: supernet trained 12 batches" "$tmp/o.log" || fail "spos: the supernet's line: $(cat "$tmp/o.log")"
grep -q "spos: trial [0-9]* retrained: eval/accuracy" "$tmp/o.log" || fail "spos: the retrain's line"
[ -f "$tmp/o/supernet.ckpt" ] || fail "spos: no supernet.ckpt"
"$baton" trials ls --storage "$tmp/o/search.db" --json >"$tmp/o.json" || fail "spos: trials ls"
python3 - "$tmp/o/model_space.json" "$tmp/o.json" "$tmp/o/spos.json" <<'P' || fail "spos: its space, trials and report"
import json, sys
space, rows, report = (json.load(open(p)) for p in sys.argv[1:])
assert space["model.arch.stage1_op"]["_value"] == ["conv3x3", "maxpool", "identity"], space
assert space["model.arch.stage3_width"]["_value"] == [32] and len(space["model.arch.stage2_op"]["_value"]) == 5, space
assert [r["status"] for r in rows] == ["trained"] * 6, rows
assert all(r["parameters"]["model.arch.stage1_op"] in ("conv3x3", "maxpool", "identity") for r in rows), rows
assert all(0 <= r["final"] <= 1 for r in rows), rows
best = max(rows, key=lambda r: r["final"])
assert report["search"]["best"]["trial"] == best["id"] and report["supernet"]["batches"] == 12, report
assert 0 <= report["retrain"]["eval/accuracy"] <= 1 and report["total"]["cpu_seconds"] > 0, report
P
"$baton" "${spos[@]}" --trials 8 --resume >"$tmp/o2.log" 2>&1 || { fail "spos --resume"; cat "$tmp/o2.log"; }
grep -q "spos: supernet read back from" "$tmp/o2.log" || fail "spos --resume trained the supernet again"
python3 -c 'import json, sys; s = json.load(open(sys.argv[1]))["supernet"]; assert s["batches"] == 12 and s["read_back_from"], s' \
  "$tmp/o/spos.json" || fail "spos --resume: the report lost the supernet's figures"
[ "$("$baton" trials ls --storage "$tmp/o/search.db" --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" = 8 ] ||
  fail "the resumed spos search did not end with 8 trials"
"$baton" nas export --storage "$tmp/o/search.db" --out "$tmp/o_best.yaml" >/dev/null 2>&1 || fail "spos: nas export"

# The GPT space on Debian's fortunes: its four choices, architectures that train.
if [ -f /usr/share/games/fortunes/fortunes ] || [ -d /usr/share/games/fortunes ]; then
  "$baton" search --model-space gpt_space --recipe "$src/recipes/gpt_char.yaml" --set max_duration=2ba \
    --set eval_interval=2ba --set eval_subset_num_batches=1 --set data.context=32 --set precision=fp32 \
    --set 'loggers={}' --trials 2 --strategy random --metric eval/loss --direction minimize --run-dir "$tmp/g" \
    >"$tmp/g.log" 2>&1 || { fail "gpt_space search"; cat "$tmp/g.log"; }
  "$baton" trials ls --storage "$tmp/g/search.db" --json | python3 -c '
import json, sys
rows = json.load(sys.stdin)
assert [r["status"] for r in rows] == ["trained"] * 2, rows
assert all(sorted(r["parameters"]) == ["model.arch.heads", "model.arch.layers", "model.arch.mlp_ratio", "model.arch.width"]
           for r in rows), rows' || fail "gpt_space trials"
fi

# Bad input: exit 2, one short line, nothing written.
expect 2 "--model-space cnn_space searches a recipe's model: add --recipe RECIPE" -- \
  "$baton" search --model-space cnn_space --command true --run-dir "$tmp/bad"
expect 2 "unknown model space 'cnn'" -- "$baton" search --model-space cnn --recipe "$recipe" --run-dir "$tmp/bad"
expect 2 "give a search space (a file), --model-space NAME, or both" -- \
  "$baton" search --recipe "$recipe" --run-dir "$tmp/bad"
expect 2 "--set model.name=mlp and --model-space cnn_space name two models" -- \
  "$baton" search --model-space cnn_space --recipe "$recipe" --set model.name=mlp --run-dir "$tmp/bad"
printf 'model.arch.stage1_op: {_type: choice, _value: [conv3x3, conv7x7]}\n' >"$tmp/clash.yaml"
# Fused trials: 2 architectures train at once in the search's process over one data stream; each
# is a trial of its own (its storage entry, its run folder and log) and trains exactly as it does
# alone (one thread each: the same batches, the same weights, the same accuracy to the last bit).
"$baton" search "$tmp/narrow.yaml" --model-space cnn_space --recipe "$recipe" "${short[@]}" --strategy random \
  --trials 2 --fuse 2 --run-dir "$tmp/f" >"$tmp/f.log" 2>&1 || { fail "fused search"; cat "$tmp/f.log"; }
grep -q "^fused: [0-9]* batches made for 16 taken" "$tmp/f.log" || fail "fused: its line: $(tail -3 "$tmp/f.log")"
"$baton" trials ls --storage "$tmp/f/search.db" --json >"$tmp/f.json" || fail "fused: trials ls"
python3 - "$tmp/f.json" "$tmp/f/fused.json" "$tmp/f/trials" <<'P' >"$tmp/f_sets" || fail "fused: its trials and report"
import json, os, sys
rows, report, trials = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
assert [r["status"] for r in rows] == ["trained"] * 2, rows
assert report["fuse"] == 2 and report["batches_taken"] == 16 and 8 <= report["batches_made"] <= 16, report
# the evaluation sets' batches shared too: each trial took every one, each made once or twice
assert report["eval_batches_taken"] > 0 and report["eval_batches_taken"] % 2 == 0, report
assert report["eval_batches_taken"] // 2 <= report["eval_batches_made"] <= report["eval_batches_taken"], report
for r in rows:
    run = os.path.join(trials, str(r["id"]))
    assert json.load(open(run + "/summary.json"))["metrics"]["eval/accuracy"] == r["final"], r
    assert '"final"' in open(run + "/stdout.log").read() and os.path.isdir(run + "/checkpoints"), run
r = rows[1]
print(r["final"], " ".join(f"--set {k}={v}" for k, v in r["parameters"].items()))
P
read -r fused_final fused_sets <"$tmp/f_sets"
# shellcheck disable=SC2086
"$baton" train "$recipe" "${short[@]}" --set model.name=cnn_space --set num_threads=1 $fused_sets --run-dir "$tmp/alone" \
  >/dev/null 2>&1 || fail "fused: the trial alone"
[ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["metrics"]["eval/accuracy"])' "$tmp/alone/summary.json")" = "$fused_final" ] ||
  fail "fused: trial 1 reached $fused_final fused, $(cat "$tmp/alone/summary.json") alone"
# A fused trial is stopped on its own (median stopping, through the engine's stop flag): in grid
# order two trials learn, fused, and complete; then the third (a learning rate that learns nothing)
# is stopped at its first evaluation, below their median, while the fourth, fused beside it on the
# same batches, trains on to its last evaluation (where the rule judges it too).
printf 'optimizer.lr: {_type: choice, _value: [0.01, 0.02, 1.0e-7, 0.04]}\n' >"$tmp/stop.yaml"
"$baton" search "$tmp/stop.yaml" --recipe "$recipe" --set max_duration=12ba --set eval_interval=4ba \
  --set limit_eval_batches=1 --set 'loggers={}' --set 'callbacks={}' --set scheduler.name=constant \
  --strategy grid --trials 4 --fuse 2 --median-stop 2 --run-dir "$tmp/fs" >"$tmp/fs.log" 2>&1 ||
  { fail "fused search with median stopping"; cat "$tmp/fs.log"; }
"$baton" trials ls --storage "$tmp/fs/search.db" --json >"$tmp/fs.json" || fail "fused stop: trials ls"
python3 - "$tmp/fs.json" "$tmp/fs/trials" <<'P' || fail "fused stop: a fused trial stopped on its own"
import json, os, sys
rows = {r["parameters"]["optimizer.lr"]: r for r in json.load(open(sys.argv[1]))}
steps = {lr: [i["step"] for i in r["intermediate"]] for lr, r in rows.items()}
assert [rows[lr]["status"] for lr in (0.01, 0.02)] == ["trained"] * 2, rows
stopped = rows[1.0e-7]
assert stopped["status"] == "interrupted" and stopped["final"] is None and steps[1.0e-7] == [4], rows
assert "stopped by signal 15" in open(os.path.join(sys.argv[2], str(stopped["id"]), "stdout.log")).read()
assert steps[0.04] == [4, 8, 12], rows
P
printf 'data.batch_size: {_type: choice, _value: [32, 64]}\n' >"$tmp/batch.yaml"
expect 2 "--fuse 2: the fused trials share one data set, batch size and order, and one model space, but the space varies data.batch_size" -- \
  "$baton" search "$tmp/batch.yaml" --model-space cnn_space --recipe "$recipe" --fuse 2 --run-dir "$tmp/bad"
expect 2 "--fuse 2: fuses the trials of a recipe: add --recipe" -- \
  "$baton" search "$tmp/lr.yaml" --command true --fuse 2 --run-dir "$tmp/bad"
expect 2 "model.arch.stage1_op: \"conv7x7\" is not one of the model space's candidates" -- \
  "$baton" search "$tmp/clash.yaml" --model-space cnn_space --recipe "$recipe" --run-dir "$tmp/bad"
printf 'model.arch.stage9_op: {_type: choice, _value: [conv3x3]}\n' >"$tmp/clash.yaml"
expect 2 "model.arch.stage9_op: the model space cnn_space has no choice stage9_op" -- \
  "$baton" search "$tmp/clash.yaml" --model-space cnn_space --recipe "$recipe" --run-dir "$tmp/bad"
expect 2 "ValueChoice 'stage1_width' has 3 candidates (16, 32, 64): a one-shot supernet shares" -- \
  "$baton" search --model-space cnn_space --recipe "$recipe" --strategy spos --run-dir "$tmp/bad"
expect 2 "--strategy spos trains a model space's supernet: add --model-space NAME" -- \
  "$baton" search "$tmp/lr.yaml" --recipe "$recipe" --strategy spos --run-dir "$tmp/bad"
expect 2 "--strategy-option samplng=\"fair\": spos's options are" -- \
  "$baton" search "$tmp/narrow.yaml" --model-space cnn_space --recipe "$recipe" --strategy spos \
  --strategy-option samplng=fair --run-dir "$tmp/bad"
expect 2 "population" -- "$baton" search "$tmp/narrow.yaml" --model-space cnn_space --recipe "$recipe" \
  --strategy spos --strategy-option population=0 --run-dir "$tmp/bad"
expect 2 "--strategy spos searches the architecture alone: optimizer.lr" -- \
  "$baton" search "$tmp/narrow_lr.yaml" --model-space cnn_space --recipe "$recipe" --strategy spos --run-dir "$tmp/bad"
expect 2 "no trial 9 in" -- "$baton" nas export --storage "$tmp/s/search.db" --trial 9 --out "$tmp/bad.yaml"
expect 2 "no such storage file" -- "$baton" nas export --storage "$tmp/none.db" --out "$tmp/bad.yaml"
mkdir "$tmp/folder"
expect 2 "--out" -- "$baton" nas export --storage "$tmp/s/search.db" --out "$tmp/folder"
expect 2 "cannot write here" -- "$baton" nas export --storage "$tmp/s/search.db" --out "$tmp/no/such/dir.yaml"
[ ! -e "$tmp/bad" ] && [ ! -e "$tmp/bad.yaml" ] || fail "a refused command wrote something"
# A --command search has no recipe to export.
printf 'x: {_type: uniform, _value: [0, 1]}\n' >"$tmp/x.yaml"
"$baton" search "$tmp/x.yaml" --command 'echo "baton: {\"final\": 1}"' --trials 1 --run-dir "$tmp/c" >/dev/null 2>&1 ||
  fail "command search"
expect 2 "did not train a recipe" -- "$baton" nas export --storage "$tmp/c/search.db" --out "$tmp/bad.yaml"

[ "$failures" -eq 0 ] && echo "nas cli: all passed"
exit $((failures > 0))

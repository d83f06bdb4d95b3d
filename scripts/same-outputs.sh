#!/usr/bin/env bash
# Trains the demo's recipe and runs a small search with two builds of `baton` and compares what they
# wrote, bitwise: the models' weights (model.pt, the demo's and each trial's), the metrics of
# summary.json, the search's best and every trial's metrics. A refactor that changes no behaviour (issue 58) passes it.
#
#   scripts/same-outputs.sh OLD/bin/baton NEW/bin/baton [WORK_FOLDER]
#
# Exit 0 when both wrote the same; 1 naming what differs; 2 for a missing program or data set.
set -uo pipefail
old=${1:?usage: scripts/same-outputs.sh OLD_BATON NEW_BATON [WORK_FOLDER]}
new=${2:?usage: scripts/same-outputs.sh OLD_BATON NEW_BATON [WORK_FOLDER]}
work=${3:-$(mktemp -d /tmp/baton-same.XXXXXX)}
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
for b in "$old" "$new"; do
  [ -x "$b" ] || { echo "same-outputs: $b is not a program" >&2; exit 2; }
done
mkdir -p "$work"

run_both() {  # name, then the arguments after the program
  local name=$1 side b
  shift
  for side in old new; do
    b=$old
    [ "$side" = new ] && b=$new
    if ! "$b" "$@" --run-dir "$work/$side-$name" >"$work/$side-$name.log" 2>&1; then
      echo "same-outputs: $side: $name failed (the output: $work/$side-$name.log)" >&2
      exit 2
    fi
  done
}

# The demo (recipes/fashion_mnist.yaml, 3 epochs, seed 0) and a search of 4 trials of 100 batches.
run_both demo train recipes/fashion_mnist.yaml --set device=cpu
run_both search search recipes/search_fashion_mnist.yaml --recipe recipes/fashion_mnist.yaml \
  --set max_duration=100ba --metric eval/accuracy --trials 4 --parallel 1 --strategy tpe --seed 3

status=0
same() {  # what, old file, new file
  if cmp -s "$2" "$3"; then
    echo "same-outputs: $1: the same"
  else
    echo "same-outputs: $1 differs: $2 $3"
    status=1
  fi
}
same "the demo's model.pt" "$work/old-demo/model.pt" "$work/new-demo/model.pt"
metrics() { python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1])).get("metrics"), sort_keys=True))' "$1"; }
same "the demo's metrics" <(metrics "$work/old-demo/summary.json") <(metrics "$work/new-demo/summary.json")
finals() {  # the best trial, then each trial's metrics, in id order
  python3 - "$1" <<'EOF'
import json, os, sys
folder = sys.argv[1]
print(json.dumps(json.load(open(os.path.join(folder, "summary.json"))).get("best"), sort_keys=True))
trials = os.path.join(folder, "trials")
for t in sorted(os.listdir(trials), key=lambda n: int(n) if n.isdigit() else -1):
    path = os.path.join(trials, t, "summary.json")
    if os.path.isfile(path):
        print(t, json.dumps(json.load(open(path)).get("metrics"), sort_keys=True))
EOF
}
same "the search's trials" <(finals "$work/old-search") <(finals "$work/new-search")
for model in "$work"/old-search/trials/*/model.pt; do
  trial=$(basename "$(dirname "$model")")
  same "trial $trial's model.pt" "$model" "$work/new-search/trials/$trial/model.pt"
done
exit $status

#!/usr/bin/env bash
# Installs the build tree into a temporary prefix, builds examples/ against it with
# find_package(baton), and runs each example. Usage: check_install.sh BUILD_DIR EXAMPLES_DIR
set -euo pipefail
build=$1
examples=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

step() {  # step NAME command...: runs the command, shows its output only when it fails
  local name=$1
  shift
  if ! "$@" >"$tmp/step.log" 2>&1; then
    echo "FAIL: $name"; tail -40 "$tmp/step.log"; exit 1
  fi
}
step "cmake --install" cmake --install "$build" --prefix "$tmp/prefix"
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
step "configure examples/ against the install tree" \
  cmake -S "$examples" -B "$tmp/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$tmp/prefix" "${launcher[@]}"
step "build examples/" cmake --build "$tmp/build" -j "$(nproc)"

for exe in "$tmp"/build/custom_algorithm "$tmp"/build/simulated_fit "$tmp"/build/train_classifier "$tmp"/build/train_recipe \
  "$tmp"/build/search_recipe "$tmp"/build/one_shot_search; do
  # ldd into a variable first: `ldd | grep -q` under pipefail fails at random when grep exits early.
  libs=$(ldd "$exe")
  if ! grep -q "$tmp/prefix/lib/libbaton" <<<"$libs"; then
    echo "FAIL: $(basename "$exe") does not link the installed libbaton:"; grep baton <<<"$libs"; exit 1
  fi
  "$exe" "$tmp/$(basename "$exe").run" >"$tmp/$(basename "$exe").txt" || { echo "FAIL: $(basename "$exe") exited $?"; cat "$tmp/$(basename "$exe").txt"; exit 1; }
done
grep -q "fit_end" "$tmp/simulated_fit.txt" || { echo "FAIL: simulated_fit did not reach fit_end"; exit 1; }
grep -q "eval/accuracy" "$tmp/train_classifier.txt" || { echo "FAIL: train_classifier printed no accuracy"; exit 1; }
# baton train, eval and export as library calls: the run, its resume from step 20 to 40, its weights
# evaluated and exported, the refusal of a third run.
for line in "first run: 20 steps" "resumed run: 40 steps in all" "evaluated: eval/loss [0-9]" "exported: [1-9][0-9]* tensors" \
  "refused: .*a run is already there"; do
  grep -q "$line" "$tmp/train_recipe.txt" || { echo "FAIL: train_recipe did not print '$line':"; cat "$tmp/train_recipe.txt"; exit 1; }
done
[ -f "$tmp/train_recipe.run/run/model.pt" ] || { echo "FAIL: train_recipe wrote no run/model.pt"; exit 1; }
# baton search as a library call: four fused trials, the best read from the search's summary.json.
grep -q "searched: 4 trials, best eval/loss = [0-9.]* at lr 0.00" "$tmp/search_recipe.txt" ||
  { echo "FAIL: search_recipe did not print its best trial:"; cat "$tmp/search_recipe.txt"; exit 1; }
[ -f "$tmp/search_recipe.run/search/trials/0/summary.json" ] || { echo "FAIL: search_recipe wrote no trial folder"; exit 1; }
# The model space searched by single-path one-shot search: its report, the supernet, the best retrained.
grep -q "one-shot: 6 architectures evaluated on the supernet; best inherited eval/accuracy [0-9.]*, retrained [0-9.]*" \
  "$tmp/one_shot_search.txt" || { echo "FAIL: one_shot_search did not print its search:"; cat "$tmp/one_shot_search.txt"; exit 1; }
[ -f "$tmp/one_shot_search.run/search/supernet.ckpt" ] || { echo "FAIL: one_shot_search wrote no supernet.ckpt"; exit 1; }
echo "install tree: find_package(baton) built and ran $(ls "$tmp"/build | grep -c -E '^(custom_algorithm|simulated_fit|train_classifier|train_recipe|search_recipe|one_shot_search)$') examples"

#!/usr/bin/env bash
# The GPU kit: everything a GPU machine is for, in ONE device call of at most 9 minutes (the machine
# is given back 30 s after a command ends, and the next starts bare), run from the project root
# there with `.device/` taken along (made here by bench/gpu_prepare.sh):
#
#   bench/gpu_run.sh           # build (16 cores, only what the GPU checks need), ctest -L gpu, the
#                              # benchmark rows: each step with its own deadline, results as they come
#   bench/gpu_run.sh check     # HERE (no GPU): .device/ complete, the carry under 64 MiB, the deadlines
#                              # adding up, this script's steps named as the GPU machine will run them
#   bench/gpu_run.sh build|test|bench   # one step alone (a longer session by hand)
#   bench/gpu_run.sh retest [FILTER]     # a short call after a fix: builds gpu_tests and the CLI only,
#                              # runs the gpu tests FILTER names (gtest's, default all), the fused row
#
# Logs and JSON go to $OUT (the device tool brings that folder back) or ./gpu-out: setup.log,
# configure.log, build.log, gpu-tests.log, fused.jsonl, llm.jsonl, speed.jsonl, speed.log, summary.txt. Nothing
# downloads.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root" || exit 2
out="${OUT:-$root/gpu-out}"
mkdir -p "$out"

# Deadlines in seconds, from the command's start; the device allows 600 a command.
TOTAL=${GPU_KIT_TOTAL_S:-540}      # the whole kit
BUILD=${GPU_KIT_BUILD_S:-250}      # configure and build must be done by then (143 s on the H200)
TESTS=${GPU_KIT_TESTS_S:-110}      # ctest -L gpu at most this long, and ends by TOTAL - BENCH_MIN
BENCH_MIN=${GPU_KIT_BENCH_MIN_S:-180}  # what the benchmark rows get at least
CARRY_MAX=$((64 * 1024 * 1024))
# What the GPU checks need: the CLI (the kill/resume test, the benchmark), the gpu tests and
# trainer_bench (the framework's host time per batch against the graph step).
TARGETS=(baton_cli gpu_tests trainer_bench memory_bench shard_bench llm_bench)
HOST_TIME=${GPU_KIT_HOST_TIME_S:-30}  # trainer_bench --host-time, first of the benchmark rows
FUSED_TIME=${GPU_KIT_FUSED_TIME_S:-55}  # bench/nas_fused.sh on the GPU, next
MEMORY_TIME=${GPU_KIT_MEMORY_TIME_S:-18}  # memory_bench --device cuda (activation checkpointing), next
SHARD_TIME=${GPU_KIT_SHARD_TIME_S:-16}  # shard_bench --device cuda (sharding: full, one rank), next
LLM_TIME=${GPU_KIT_LLM_TIME_S:-55}  # a 110M Llama on the device: generation (batch 1, 8), training, next
start=$SECONDS
left() { echo $((TOTAL - (SECONDS - start))); }
say() { echo "gpu_run: $*" | tee -a "$out/summary.txt"; }

setup() {
  [ -f .device/setup.sh ] || { say ".device/setup.sh is missing (run bench/gpu_prepare.sh here, carry .device)"; exit 2; }
  # shellcheck disable=SC1091
  source .device/setup.sh >"$out/setup.log" 2>&1 || { say "$(tail -1 "$out/setup.log")"; exit 2; }
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >"$out/gpu.txt" 2>&1
  say "$(tail -1 "$out/gpu.txt" 2>/dev/null) | $(tail -1 "$out/setup.log")"
}

build() {
  local deadline=$1
  # shellcheck disable=SC2086  # BATON_CUDA_CMAKE_ARGS is a list of -D arguments
  timeout "$deadline" cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release $BATON_CUDA_CMAKE_ARGS \
    -DBATON_BUILD_EXAMPLES=OFF -DBATON_BUILD_BENCH=ON -DCCACHE_PROGRAM=CCACHE_PROGRAM-NOTFOUND \
    >"$out/configure.log" 2>&1 || { say "configure failed (exit $?)"; tail -30 "$out/configure.log"; return 1; }
  local rc=0
  # -k 0: a file that fails to compile leaves the other targets building (what built is tested).
  timeout $((deadline - (SECONDS - start))) cmake --build build-cuda -j "$(nproc)" --target "${TARGETS[@]}" -- -k 0 \
    >"$out/build.log" 2>&1 || rc=$?
  grep -E "error" "$out/build.log" | head -20
  say "build: exit $rc at $((SECONDS - start)) s"
  return $rc
}

# ctest -L gpu's members, run directly: ctest would first list the tests of every test program, and
# only gpu_tests and baton are built here.
# A test that crashes the program (a segfault) does not hide the tests after it: those run again,
# each in a process of its own, and each crash is named with the stack gpu_tests prints.
gtest_isolating_crashes() {
  local deadline=$1 log=$2 rc=0 t test_rc
  timeout $((deadline - SECONDS)) build-cuda/bin/gpu_tests --gtest_brief=0 >"$log" 2>&1 || rc=$?
  [ "$rc" -gt 128 ] || [ "$rc" -eq 124 ] || return $rc
  [ "$rc" -eq 124 ] && { echo "gpu_tests: out of time" >>"$log"; return $rc; }
  echo "gpu_tests: the program died (exit $rc); the tests it did not finish, one process each:" >>"$log"
  rc=0
  for t in $(build-cuda/bin/gpu_tests --gtest_list_tests | awk '/^[^ ]/ {s = $1} /^  / {print s $1}'); do
    grep -qE "^\[ +(OK|FAILED|SKIPPED) +\] $t " "$log" && continue
    [ $((deadline - SECONDS)) -gt 5 ] || { echo "gpu_tests: no time left for $t" >>"$log"; rc=1; break; }
    test_rc=0
    timeout $((deadline - SECONDS)) build-cuda/bin/gpu_tests --gtest_filter="$t" >>"$log" 2>&1 || test_rc=$?
    [ "$test_rc" -gt 128 ] && echo "[  CRASHED ] $t (exit $test_rc)" >>"$log"
    [ "$test_rc" -eq 0 ] || rc=1
  done
  return $rc
}

gpu_tests() {
  local budget=$1 rc=0 until=$((SECONDS + $1))
  gtest_isolating_crashes $((SECONDS + budget / 2)) "$out/gpu-tests.log" || rc=$?
  grep -E "^\[  (PASSED|FAILED|SKIPPED|CRASHED) |^\[       OK|^gpu_tests:|Failure|^\S*\(\S*\+0x" "$out/gpu-tests.log" | tail -80 | { command -v c++filt >/dev/null && c++filt || cat; }
  local cli_rc=0 kill_rc=0
  timeout 45 tests/gpu/cli_cuda.sh build-cuda/bin/baton . >"$out/cli-cuda.log" 2>&1 || cli_rc=$?
  tail -5 "$out/cli-cuda.log"
  STEPS=2000 timeout $((until - SECONDS)) tests/gpu/kill_resume_cuda.sh build-cuda/bin/baton . \
    >"$out/kill-resume-cuda.log" 2>&1 || kill_rc=$?
  tail -5 "$out/kill-resume-cuda.log"
  say "gpu tests: gpu_tests exit $rc, eval_predict_export_on_cuda exit $cli_rc," \
    "kill_9_and_autoresume_on_cuda exit $kill_rc at $((SECONDS - start)) s"
  [ "$rc" -eq 0 ] && { [ "$cli_rc" -eq 0 ] || [ "$cli_rc" -eq 77 ]; } && { [ "$kill_rc" -eq 0 ] || [ "$kill_rc" -eq 77 ]; }
}

# Fused trials (baton search --fuse 8, each on a CUDA stream of its own) against 8 processes.
fused_row() {
  NAS_FUSED_PARALLEL=8 timeout "$FUSED_TIME" bench/nas_fused.sh build-cuda/bin/baton 8 idx \
    >"$out/fused.jsonl" 2>"$out/fused.log" || {
    say "fused trials: exit $?"
    tail -5 "$out/fused.log"
    # The searches' own logs come back (what a failed trial said is there, not in the last lines).
    mkdir -p "$out/fused-logs"
    find bench/results/nas_fused -maxdepth 3 -name '*.log' -size -2M | head -12 |
      while read -r f; do cp "$f" "$out/fused-logs/$(echo "${f#bench/results/nas_fused/}" | tr / _)"; done
  }
  cat "$out/fused.jsonl"
}

# Which libstdc++ a test program finds first, and where std::filesystem::remove_all binds (a PyTorch
# wheel's libtorch.so carries a copy that jumps to 0; baton's own code no longer calls it).
linking() {
  {
    readelf -d build-cuda/bin/gpu_tests | grep NEEDED | head -4
    ldd build-cuda/bin/gpu_tests | grep -E "libstdc|libtorch\.so|libtorch_cpu" | head -4
    LD_DEBUG=bindings build-cuda/bin/gpu_tests --gtest_filter='Linking.*' 2>&1 | grep -E "remove_all" | head -4
  } >"$out/linking.log" 2>&1
  cat "$out/linking.log"
}

# One `baton train` row of llm_rows: $1 its name, $2 a recipe line added to $dir/train.yaml; tokens/s
# and MFU of the speed monitor's last window.
llm_train_row() {
  { cat "$dir/train.yaml"; printf '%s\n' "$2"; } >"$dir/$1.yaml"
  rm -rf "/tmp/baton-llm-$1"
  timeout $((until - SECONDS)) build-cuda/bin/baton train "$dir/$1.yaml" --run-dir "/tmp/baton-llm-$1" \
    >"$out/llm-$1.log" 2>&1 || say "llm $1: exit $? ($(tail -1 "$out/llm-$1.log"))"
  python3 -c "import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
last = [r for r in rows if 'throughput/tokens_per_sec' in r]
print(json.dumps({'row': sys.argv[2], 'impl': 'baton', 'device': 'cuda', 'bf16': True, 'batch': 16, 'context': 1024,
                  'tokens_per_s': last[-1]['throughput/tokens_per_sec'] if last else None,
                  'mfu': last[-1].get('throughput/mfu') if last else None}))" "/tmp/baton-llm-$1/metrics.jsonl" "$1" \
    >>"$out/llm.jsonl" 2>>"$out/llm.log"
}

# bench/llm_bench.sh's rows on the device, baton's side (transformers is not on the machine): the
# 110M Llama of that script from its config alone (initial weights), greedy generation of 128 tokens
# after 32 at batch 1 and 8, then `baton train` (bf16 autocast, fused AdamW) on a random token shard,
# in full and with LoRA adapters.
llm_rows() {
  local dir=/tmp/baton-llm until=$((SECONDS + LLM_TIME)) batch
  rm -rf "$dir" /tmp/baton-llm-run
  mkdir -p "$dir"
  printf '%s' '{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 32000,
    "hidden_size": 768, "intermediate_size": 2048, "num_hidden_layers": 12, "num_attention_heads": 12,
    "num_key_value_heads": 4, "max_position_embeddings": 2048, "rms_norm_eps": 1e-5}' >"$dir/config.json"
  for batch in 1 8; do
    timeout $((until - SECONDS)) build-cuda/bin/llm_bench generate --model "$dir" --random --device cuda \
      --batch "$batch" --new-tokens 128 --reps 3 >>"$out/llm.jsonl" 2>>"$out/llm.log" || say "llm generate $batch: exit $?"
  done
  python3 -c "import random, struct, sys; n = 400000; random.seed(0)
open(sys.argv[1], 'wb').write(struct.pack('<256i', *([20240520, 1, n] + [0] * 253)) +
    struct.pack('<%dH' % n, *[random.randrange(32000) for _ in range(n)]))" "$dir/train_000.bin"
  printf '%s\n' "model: {name: hf, path: $dir, pretrained: false}" \
    "data: {dataset: tokens, train_files: \"$dir/train_*.bin\", context: 1024, vocab_size: 32000, batch_size: 16}" \
    "precision: amp_bf16" "device: cuda" "optimizer: {name: adamw, lr: 0.0001}" "max_duration: 25ba" \
    "progress_bar: false" "callbacks: {speed_monitor: {window_size: 20}, checkpoint_saver: false}" >"$dir/train.yaml"
  llm_train_row train ""
  # LoRA fine-tuning of the same model: r 16 on q_proj and v_proj (bench/llm_bench.sh's lora row).
  llm_train_row lora "algorithms: {lora: {r: 16, alpha: 32, dropout: 0.05, targets: [q_proj, v_proj]}}"
  cat "$out/llm.jsonl"
}

bench_rows() {
  local budget=$1 composer=none rc=0
  if [ -d .device/wheels-composer ]; then
    composer=$(bench/peers/make-venv.sh --composer-offline .device/wheels-composer 2>"$out/composer-venv.log") || composer=none
  fi
  # The framework's host time per batch (a model too small to hide it), eager and under graphs.
  if [ -x build-cuda/bin/trainer_bench ]; then
    timeout "$HOST_TIME" build-cuda/bin/trainer_bench --host-time --device cuda --steps 2000 --reps 3 \
      >"$out/host-time.log" 2>&1 || say "host time: exit $?"
    grep -E "^median|^under CUDA graphs|^\{" "$out/host-time.log"
    budget=$((budget - HOST_TIME))
  fi
  fused_row
  budget=$((budget - FUSED_TIME))
  # A gpt step's peak (the allocator's) and time with activation checkpointing against without.
  if [ -x build-cuda/bin/memory_bench ]; then
    timeout "$MEMORY_TIME" build-cuda/bin/memory_bench --device cuda --steps 5 >"$out/memory.log" 2>&1 ||
      say "memory: exit $?"
    tail -3 "$out/memory.log"
    budget=$((budget - MEMORY_TIME))
  fi
  # A gpt under sharding: full with activation checkpointing on the GPU (one rank: the units' storage
  # freed and gathered again on the device) against plain data parallelism: tokens/s and peak memory.
  if [ -x build-cuda/bin/shard_bench ]; then
    for args in "--sharding none" "--sharding full --activation-checkpointing auto"; do
      # shellcheck disable=SC2086
      timeout $((SHARD_TIME / 2)) build-cuda/bin/shard_bench --device cuda --layers 8 --width 512 --context 512 \
        --batch 16 --steps 10 $args >>"$out/shard.log" 2>&1 || say "shard ($args): exit $?"
    done
    grep '^{' "$out/shard.log"
    budget=$((budget - SHARD_TIME))
  fi
  if [ -x build-cuda/bin/llm_bench ]; then
    llm_rows
    budget=$((budget - LLM_TIME))
  fi
  # Rows print as they finish: what the deadline cuts is the last rows, never the first.
  timeout "$budget" python3 bench/speed_bench.py --baton build-cuda/bin/baton --python python3 --device cuda \
    --composer-python "$composer" --steps 500 --gpt-steps 200 >"$out/speed.jsonl" 2>"$out/speed.log" || rc=$?
  cat "$out/speed.jsonl"
  say "bench: exit $rc at $((SECONDS - start)) s, $(wc -l <"$out/speed.jsonl") rows"
  return $rc
}

# HERE: what the GPU machine will need, checked before a device call is spent on it.
check() {
  local fail=0 need
  for need in .device/setup.sh .device/debs .device/debs-curl/libcurl4_*.deb .device/data .device/fortunes .device/peers; do
    [ -e "$need" ] || { echo "check: $need is missing (bench/gpu_prepare.sh makes it)"; fail=1; }
  done
  for deb in libsqlite3-dev libsqlite3-0 libssl-dev libssl3 libjpeg62-turbo-dev libpng-dev libsentencepiece-dev libcurl4-openssl-dev libpcre2-dev; do
    ls .device/debs/"${deb}"_*.deb >/dev/null 2>&1 || { echo "check: .device/debs has no $deb"; fail=1; }
  done
  cmp -s bench/gpu_setup.sh .device/setup.sh || { echo "check: .device/setup.sh is not bench/gpu_setup.sh (run bench/gpu_prepare.sh)"; fail=1; }
  for gz in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz; do
    [ -s ".device/data/$gz" ] || { echo "check: .device/data/$gz is missing"; fail=1; }
  done
  # The carry: the files git would take (tracked and untracked not ignored) and .device/.
  local tree device
  tree=$(git ls-files -co --exclude-standard -z | xargs -0 stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
  device=$(du -sb .device | cut -f1)
  echo "check: carry $(((tree + device) / 1048576)) MiB (tree $((tree / 1048576)) MiB, .device $((device / 1048576)) MiB) of 64"
  [ $((tree + device)) -le $CARRY_MAX ] || { echo "check: the carry is over 64 MiB"; fail=1; }
  [ $((HOST_TIME + FUSED_TIME + MEMORY_TIME + SHARD_TIME + LLM_TIME)) -lt "$BENCH_MIN" ] ||
    { echo "check: the host time's $HOST_TIME s, the fused trials' $FUSED_TIME s, the memory row's" \
      "$MEMORY_TIME s, the sharding row's $SHARD_TIME s and the llm rows' $LLM_TIME s leave the rows nothing"; fail=1; }
  [ $((BUILD + TESTS + BENCH_MIN)) -le "$TOTAL" ] ||
    { echo "check: deadlines $BUILD + $TESTS + $BENCH_MIN exceed the kit's $TOTAL s"; fail=1; }
  [ "$TOTAL" -le 570 ] || { echo "check: the kit's $TOTAL s leaves no room under the device's 600 s"; fail=1; }
  # Every target the kit builds exists, and every gpu test is built by one of them.
  for t in "${TARGETS[@]}"; do
    grep -rqE "(add_executable|baton_test)\($t[ )]" CMakeLists.txt apps/CMakeLists.txt tests/CMakeLists.txt \
      bench/CMakeLists.txt ||
      { echo "check: the build target $t is not defined"; fail=1; }
  done
  grep -q "baton_test(gpu_tests" tests/CMakeLists.txt || { echo "check: gpu_tests is not a target"; fail=1; }
  for script in tests/gpu/*.sh; do  # every script of the gpu label is run by the kit
    grep -q "$script" "$0" || { echo "check: the kit does not run $script"; fail=1; }
  done
  bash -n "$0" && bash -n .device/setup.sh || fail=1
  [ $fail -eq 0 ] && echo "check: ok (kit: build by ${BUILD} s, gpu tests ${TESTS} s, the rest to ${TOTAL} s for the benchmark rows)"
  return $fail
}

case "${1:-all}" in
  check) check; exit $? ;;
  build) setup && build "$BUILD"; exit $? ;;
  test) setup && gpu_tests "$TESTS"; exit $? ;;
  bench) setup && bench_rows "$(left)"; exit $? ;;
  retest)
    : >"$out/summary.txt"
    setup
    TARGETS=(gpu_tests baton_cli llm_bench)
    build "$BUILD" || exit $?
    linking
    export GTEST_FILTER="${2:-*}"
    gtest_isolating_crashes $((SECONDS + TESTS)) "$out/gpu-tests.log"
    say "gpu_tests ($GTEST_FILTER): exit $? at $((SECONDS - start)) s"
    grep -E "^\[  (PASSED|FAILED|SKIPPED|CRASHED) |^\[       OK|^gpu_tests|Failure|^\S*\(\S*\+0x" "$out/gpu-tests.log" |
      tail -120 | { command -v c++filt >/dev/null && c++filt || cat; }
    unset GTEST_FILTER
    fused_row
    llm_rows
    say "done at $((SECONDS - start)) s"
    ;;
  all)
    : >"$out/summary.txt"
    setup
    build_rc=0 tests_rc=0 bench_rc=0
    build "$BUILD" || build_rc=$?
    if [ -x build-cuda/bin/gpu_tests ] || [ -x build-cuda/bin/baton ]; then
      budget=$(($(left) - BENCH_MIN))
      [ "$budget" -gt "$TESTS" ] && budget=$TESTS
      [ "$budget" -gt 30 ] && { gpu_tests "$budget" || tests_rc=$?; }
    fi
    if [ -x build-cuda/bin/baton ] && [ "$(left)" -gt 20 ]; then bench_rows "$(left)" || bench_rc=$?; fi
    say "done at $((SECONDS - start)) s: build $build_rc, gpu tests $tests_rc, bench $bench_rc"
    exit $((build_rc || tests_rc || bench_rc))
    ;;
  *) echo "usage: bench/gpu_run.sh [all|check|build|test|bench|retest [FILTER]]"; exit 2 ;;
esac

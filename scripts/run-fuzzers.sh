#!/usr/bin/env bash
# Runs every fuzz_* program in DIR for SECONDS seconds each, starting from tests/fuzz/corpus/<name>,
# JOBS of them at a time, and prints a table (the one in docs/reliability.md): runs, runs/s, the
# corpus it ended with, crashes. A crash's input is kept in DIR/ and its log's tail printed; exit 1.
# Usage: run-fuzzers.sh DIR [SECONDS] [JOBS]          e.g. run-fuzzers.sh build-fuzz/bin 600 2
set -uo pipefail
dir=$1
seconds=${2:-60}
jobs=${3:-1}
root=$(cd "$(dirname "$0")/.." && pwd)
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

fuzz_one() {  # fuzz_one PROGRAM: writes $logs/NAME.log and $logs/NAME.rc
  local fuzzer=$1 name work
  name=$(basename "$fuzzer")
  name=${name#fuzz_}
  work="$logs/$name.corpus"
  mkdir -p "$work"
  cp -r "$root/tests/fuzz/corpus/$name/." "$work/" 2>/dev/null || true
  "$fuzzer" -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$dir/$name-" "$work" \
    >"$logs/$name.log" 2>&1
  echo $? >"$logs/$name.rc"
}

names=()
for fuzzer in "$dir"/fuzz_*; do
  [ -x "$fuzzer" ] || continue
  names+=("$(basename "$fuzzer")")
  echo "fuzzing ${names[-1]#fuzz_} for ${seconds}s"
  fuzz_one "$fuzzer" &
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
done
wait
[ ${#names[@]} -gt 0 ] || { echo "run-fuzzers: no fuzz_* programs in $dir (make fuzz builds them)"; exit 2; }

status=0
echo "| fuzzer | seconds | runs | runs/s | corpus at the end | crashes |"
echo "|---|---|---|---|---|---|"
for program in "${names[@]}"; do
  name=${program#fuzz_}
  runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$logs/$name.log" | tail -1 | awk '{print $2}')
  rate=$(grep -o 'exec/s: [0-9]*' "$logs/$name.log" | tail -1 | awk '{print $2}')  # libFuzzer's last status line
  corpus=$(find "$logs/$name.corpus" -type f | wc -l)
  crashes=0
  [ "$(cat "$logs/$name.rc")" -eq 0 ] || { crashes=1; status=1; }
  echo "| $name | $seconds | ${runs:-?} | ${rate:-?} | $corpus | $crashes |"
done
for program in "${names[@]}"; do
  name=${program#fuzz_}
  if [ "$(cat "$logs/$name.rc")" -ne 0 ]; then
    echo "--- $name failed; the input that did it is in $dir/ ($name-crash-*):"
    tail -30 "$logs/$name.log"
  fi
done
exit $status

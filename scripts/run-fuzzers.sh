#!/usr/bin/env bash
# Runs every fuzz_* program in DIR for SECONDS seconds each, starting from tests/fuzz/corpus/<name>.
# Usage: run-fuzzers.sh DIR [SECONDS]
set -euo pipefail
dir=$1
seconds=${2:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
status=0
for fuzzer in "$dir"/fuzz_*; do
  name=$(basename "$fuzzer"); name=${name#fuzz_}
  work=$(mktemp -d)
  cp -r "$root/tests/fuzz/corpus/$name/." "$work/" 2>/dev/null || true
  echo "fuzzing $name for ${seconds}s"
  if ! "$fuzzer" -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$dir/" "$work" 2>"$work.log"; then
    tail -30 "$work.log"; echo "the failing input is in $dir/"; status=1
  else
    grep -E "stat::number_of_executed_units|Done" "$work.log" | tail -2
  fi
  rm -rf "$work" "$work.log"
done
exit $status

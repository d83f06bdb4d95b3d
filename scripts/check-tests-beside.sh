#!/usr/bin/env bash
# Checks that the tests are beside their code: each source src/<module>/<name>.cpp has its test,
# tests/<module>/<name>_test.cpp (or <name>_mpi_test.cpp, a program mpirun runs). Prints each source
# without its test.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"
status=0
for source in src/*/*.cpp; do
  module=$(basename "$(dirname "$source")")
  name=$(basename "$source" .cpp)
  if [ ! -f "tests/$module/${name}_test.cpp" ] && [ ! -f "tests/$module/${name}_mpi_test.cpp" ]; then
    echo "$source: no tests/$module/${name}_test.cpp (write one: the source's behaviour, observed)"
    status=1
  fi
done
exit $status

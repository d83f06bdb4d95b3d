#!/usr/bin/env bash
# No function or object of baton is defined in two of its module libraries. Each module is a
# library of its own (docs/architecture.md), and a name defined twice (two classes detail::Ticker in
# two modules) is one definition to the dynamic linker: a program gets whichever library loads
# first, for both. Usage: scripts/check-one-definition.sh LIBRARY_DIR
set -euo pipefail
dir=${1:?usage: check-one-definition.sh LIBRARY_DIR (build/lib)}
shopt -s nullglob
libs=("$dir"/libbaton_*.so)
[ "${#libs[@]}" -gt 0 ] || { echo "check-one-definition: no libbaton_*.so in $dir (build first)" >&2; exit 2; }
twice=$(for lib in "${libs[@]}"; do
  # Defined code and data (T, D, B, R), demangled, of baton's namespace; one line per library and name.
  nm -D --defined-only -C "$lib" | awk -v lib="$(basename "$lib")" '$2 ~ /^[TDBR]$/ {
    $1 = ""; $2 = ""; sub(/^  /, ""); if ($0 ~ /^baton::/) print $0 "\t" lib }' | sort -u
done | sort | awk -F'\t' '$1 == name { print name "  (" first ", " $2 ")" } { name = $1; first = $2 }')
if [ -n "$twice" ]; then
  echo "check-one-definition: defined in two module libraries (rename one, or put it in an unnamed namespace):"
  echo "$twice"
  exit 1
fi
echo "check-one-definition: ${#libs[@]} libraries, no name of baton defined twice"

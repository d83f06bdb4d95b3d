#!/usr/bin/env bash
# scripts/check-one-definition.sh passes the project's libraries and fails two libraries that
# define one name of baton.
set -euo pipefail
root=$1
libdir=$2
"$root/scripts/check-one-definition.sh" "$libdir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo 'namespace baton::detail { void ticker_loop() {} }' >"$tmp/a.cpp"
cp "$tmp/a.cpp" "$tmp/b.cpp"
g++ -shared -fPIC "$tmp/a.cpp" -o "$tmp/libbaton_a.so"
g++ -shared -fPIC "$tmp/b.cpp" -o "$tmp/libbaton_b.so"
if out=$("$root/scripts/check-one-definition.sh" "$tmp" 2>&1); then
  echo "one_definition_test: two libraries defining baton::detail::ticker_loop() passed the check" >&2
  exit 1
fi
grep -q "baton::detail::ticker_loop()  (libbaton_a.so, libbaton_b.so)" <<<"$out" ||
  { echo "one_definition_test: the check did not name the symbol and both libraries: $out" >&2; exit 1; }
echo "one_definition_test: ok"

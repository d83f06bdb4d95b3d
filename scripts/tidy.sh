#!/usr/bin/env bash
# clang-tidy with the checks in .clang-tidy over every source of baton (src/, apps/), on all cores.
#
#   scripts/tidy.sh                 every file (make tidy; about 25 s of one core per file here)
#   TIDY_LIST=1 scripts/tidy.sh …   the files it would check, without checking them
#   scripts/tidy.sh --since REF     the sources changed since git REF (a commit, a branch), and for
#                                   each changed header one source that includes it, so that every
#                                   changed file is checked once (what CI runs: make tidy-changed)
#
# clang 14 cannot parse Debian's LibTorch 1.13 headers in C++20 mode (std::vector<c10::IValue> of
# an incomplete type), but it parses the pinned PyTorch wheel's LibTorch 2.x: the files are checked
# against that one (scripts/torch2-env.sh makes its venv when missing), one compile command per file
# (no unity units, no precompiled header) in build-tidy/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
since=""
if [ "${1:-}" = "--since" ]; then
  [ -n "${2:-}" ] || { echo "tidy: --since needs a git revision" >&2; exit 2; }
  since=$2
  git rev-parse --verify --quiet "$since^{commit}" >/dev/null || { echo "tidy: $since: no such revision" >&2; exit 2; }
  git merge-base --is-ancestor "$since" HEAD ||
    { echo "tidy: $since is not an ancestor of HEAD (.ci/landed names the last landed commit of main)" >&2; exit 2; }
fi
tidy=$(command -v clang-tidy-14 || command -v clang-tidy || true)
[ -n "$tidy" ] || { echo "tidy: clang-tidy not found (scripts/install-deps.sh installs clang-tidy)" >&2; exit 2; }
prefix=$(scripts/torch2-env.sh | tail -n1)
cmake -S . -B build-tidy -DCMAKE_PREFIX_PATH="$prefix" -DBATON_PCH=OFF -DBATON_UNITY_BUILD=OFF \
  -DCMAKE_BUILD_TYPE=Release -DBATON_BUILD_BENCH=OFF -DBATON_BUILD_EXAMPLES=OFF -DBATON_BUILD_TESTS=OFF >/dev/null

files=$(git ls-files 'src/*.cpp' 'apps/*.cpp')
if [ -n "$since" ]; then
  changed=$(git diff --name-only "$since" -- src apps include)
  selected=$(for f in $files; do grep -qxF "$f" <<<"$changed" && echo "$f"; done || true)
  # A changed header is checked through a source that includes it (one is enough: its diagnostics
  # are the header's own): a selected one when there is, else the first that does.
  for header in $(grep -E '\.h$' <<<"$changed" || true); do
    include=${header#include/}
    include=${include#src/}
    [ -n "$selected" ] && grep -lF "#include \"$include\"" $selected >/dev/null 2>&1 && continue
    first=$(grep -lF "#include \"$include\"" $files 2>/dev/null | head -n1 || true)
    # A private header is included by its own name from its folder.
    [ -n "$first" ] || first=$(grep -lF "#include \"$(basename "$header")\"" $(dirname "$header")/*.cpp 2>/dev/null | head -n1 || true)
    [ -n "$first" ] && selected=$(printf '%s\n%s' "$selected" "$first")
  done
  files=$(sort -u <<<"$selected" | sed '/^$/d')
fi
count=$(wc -w <<<"$files")
[ "${TIDY_LIST:-}" = 1 ] && { echo "$files"; exit 0; }  # the files it would check, and no more
echo "clang-tidy: $count file(s)${since:+ changed since $since}, $(nproc) at once"
[ "$count" -gt 0 ] || { echo "clang-tidy: nothing to check"; exit 0; }
# GCC's own warning flags in the compile commands are unknown to clang.
xargs -r -n1 -P "$(nproc)" "$tidy" -p build-tidy --quiet --extra-arg=-Wno-unknown-warning-option <<<"$files"
echo "clang-tidy: clean"

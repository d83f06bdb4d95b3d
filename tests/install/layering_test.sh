#!/usr/bin/env bash
# scripts/check-layering.sh catches what it must: an include of a module above (public and src/-rooted),
# a module without a row in docs/architecture.md, a row that names a module never included, a
# diagram line that disagrees with the table, a header baton.h leaves out, <torch/torch.h> in a
# public header.
set -euo pipefail
src=$1
source "$(dirname "$0")/../common/lib.sh"
mkdir -p "$tmp/src/exec" "$tmp/src/foo" "$tmp/include/baton/models" "$tmp/docs"
sed 's/^exec       ──► core mpi io$/exec       ──► core plan io/' "$src/docs/architecture.md" >"$tmp/docs/architecture.md"
grep -q "exec       ──► core plan io" "$tmp/docs/architecture.md" || { echo "layering_test: the diagram has no line 'exec ──► core mpi io' to change"; exit 1; }
printf '#include "dashboard/api.h"\n#include "baton/train/trainer.h"\n#include "exec/sql.h"\n#include "baton/core/state.h"\n' >"$tmp/src/exec/a.cpp"
printf '#include "baton/core/state.h"\n#include <torch/torch.h>\n' >"$tmp/include/baton/models/m.h"
touch "$tmp/src/foo/x.cpp"
printf '#pragma once\n#include "baton/core/state.h"\n' >"$tmp/include/baton/baton.h"
rc=0
out=$("$src/scripts/check-layering.sh" "$tmp") || rc=$?
[ "$rc" -eq 1 ] || fail "exit $rc, expected 1"
grep -q "src/exec/a.cpp:1: module 'exec' includes 'dashboard'" <<<"$out" || fail "missed a src/-rooted include"
grep -q "src/exec/a.cpp:2: module 'exec' includes 'train'" <<<"$out" || fail "missed a public include"
grep -q "a.cpp:3\|a.cpp:4" <<<"$out" && fail "flagged an allowed include"
grep -q "module 'foo' has no row" <<<"$out" || fail "missed a module without a row"
grep -q "the row of 'exec' names 'io', which no file" <<<"$out" || fail "missed a row naming a module never included"
grep -q "the row of 'exec' names 'core'" <<<"$out" && fail "flagged a row's module that is included"
grep -q "the diagram draws exec ──► core plan io; the code says: core io mpi" <<<"$out" || fail "missed a wrong diagram line"
grep -q "baton.h: does not include baton/models/m.h" <<<"$out" || fail "missed a header the umbrella leaves out"
grep -q "m.h:2: public header includes <torch/torch.h>" <<<"$out" || fail "missed torch/torch.h"
"$src/scripts/check-layering.sh" "$src" >/dev/null || fail "the project itself does not pass"
[ "$failures" -eq 0 ] || echo "$out"
finish layering_test

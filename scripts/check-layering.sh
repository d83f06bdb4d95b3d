#!/usr/bin/env bash
# Checks the one direction of dependency written in docs/architecture.md (its table "The layers":
# module | what it owns | may include): a module includes only the modules its row names, both
# through public headers ("baton/<module>/...") and through src/'s private ones ("<module>/..."),
# and no public header includes <torch/torch.h>. Prints each violation as file:line.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"
doc=docs/architecture.md
[ -f "$doc" ] || { echo "check-layering: $doc not found (the table of layers is read from it)" >&2; exit 2; }

# module: the modules it may include (besides itself), from the table's rows: | `module` | ... | `a` `b` |
declare -A allowed=()
while IFS= read -r row; do
  module=$(sed -E 's/^\| `([a-z_]+)`.*/\1/' <<<"$row")
  last=$(awk -F'|' '{print $(NF-1)}' <<<"$row")
  allowed[$module]=$(grep -oE '`[a-z_]+`' <<<"$last" | tr -d '`' | tr '\n' ' ' || true)
done < <(grep -E '^\| `[a-z_]+` \|' "$doc")
[ ${#allowed[@]} -gt 0 ] || { echo "check-layering: no module rows in $doc" >&2; exit 2; }
modules=" ${!allowed[*]} "

status=0
check() {  # file module included-module text line
  local file=$1 module=$2 used=$3 text=$4 line=$5
  [ "$used" = "$module" ] && return 0
  case "$modules" in *" $used "*) ;; *) return 0 ;; esac  # not a module (a file of src/ beside it)
  case " ${allowed[$module]} " in *" $used "*) return 0 ;; esac
  echo "$file:$line: module '$module' includes '$used', which $doc does not put below it: $text"
  status=1
}
for dir in include/baton src; do
  [ -d "$dir" ] || continue
  while IFS= read -r file; do
    rel=${file#"$dir"/}
    module=${rel%%/*}
    [ "$module" = "$rel" ] && continue  # baton.h, version.h, pch.h
    if [ -z "${allowed[$module]+x}" ]; then
      echo "$file: module '$module' has no row in $doc's table of layers"
      status=1
      continue
    fi
    while IFS=: read -r line text; do
      check "$file" "$module" "$(sed -E 's|.*baton/([a-z_]+)/.*|\1|' <<<"$text")" "$text" "$line"
    done < <(grep -nE '^\s*#\s*include\s*[<"]baton/[a-z_]+/' "$file" || true)
    while IFS=: read -r line text; do
      check "$file" "$module" "$(sed -E 's|.*"([a-z_]+)/.*|\1|' <<<"$text")" "$text" "$line"
    done < <(grep -nE '^\s*#\s*include\s*"[a-z_]+/' "$file" | grep -v '"baton/' || true)
  done < <(find "$dir" -name '*.h' -o -name '*.cpp')
done

while IFS=: read -r file line text; do
  echo "$file:$line: public header includes <torch/torch.h>; include the narrowest LibTorch header instead"
  status=1
done < <(grep -rnE '^\s*#\s*include\s*[<"]torch/(torch|all)\.h[>"]' include || true)

[ $status -eq 0 ] && echo "layering: ok (${#allowed[@]} modules from $doc)"
exit $status

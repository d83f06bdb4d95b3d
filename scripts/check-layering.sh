#!/usr/bin/env bash
# Checks the one direction of dependency written in docs/architecture.md (its table "The layers":
# module | what it owns | includes): a module includes only the modules its row names, both
# through public headers ("baton/<module>/...") and through src/'s private ones ("<module>/..."); a
# row names no module that its code never includes (the table says what the code does); each line
# "name ──► modules" of the diagram above the table says what the table and apps/ say; the umbrella
# include/baton/baton.h includes every public header; no public header includes <torch/torch.h> or a
# private header of src/. Prints each violation as file:line or what to change.
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
declare -A uses=()  # module (or apps/baton): the modules its files include
check() {  # file module included-module text line
  local file=$1 module=$2 used=$3 text=$4 line=$5
  [ "$used" = "$module" ] && return 0
  case "$modules" in *" $used "*) ;; *) return 0 ;; esac  # not a module (a file of src/ beside it)
  case " ${uses[$module]:-} " in *" $used "*) ;; *) uses[$module]="${uses[$module]:-} $used" ;; esac
  [ "$module" = apps/baton ] && return 0  # the program may use any module
  case " ${allowed[$module]} " in *" $used "*) return 0 ;; esac
  echo "$file:$line: module '$module' includes '$used', which $doc does not put below it: $text"
  status=1
}
declare -A has_files=()
for dir in include/baton src apps/baton; do
  [ -d "$dir" ] || continue
  while IFS= read -r file; do
    rel=${file#"$dir"/}
    module=${rel%%/*}
    [ "$dir" = apps/baton ] && module=apps/baton
    [ "$module" = "$rel" ] && continue  # baton.h, version.h, pch.h
    has_files[$module]=1
    if [ "$module" != apps/baton ] && [ -z "${allowed[$module]+x}" ]; then
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

# A public header includes only public headers (and system ones): a user's build has no src/.
while IFS=: read -r file line text; do
  echo "$file:$line: a public header includes a private one (src/ is not installed): $text"
  status=1
done < <(grep -rnE '^\s*#\s*include\s*"' include | grep -vE '#\s*include\s*"baton/' || true)

# A row names only what its module includes.
for module in "${!allowed[@]}"; do
  [ -n "${has_files[$module]:-}" ] || continue
  for dep in ${allowed[$module]}; do
    case " ${uses[$module]:-} " in *" $dep "*) ;; *)
      echo "$doc: the row of '$module' names '$dep', which no file of src/$module or include/baton/$module includes: remove it"
      status=1 ;;
    esac
  done
done

# The diagram's lines "name ──► modules" (in the block after "## The layers") agree with the table
# (for a module) or with what apps/baton includes.
same_set() { [ "$(tr ' ' '\n' <<<"$1" | grep . | sort | tr '\n' ' ')" = "$(tr ' ' '\n' <<<"$2" | grep . | sort | tr '\n' ' ')" ]; }
while IFS= read -r row; do
  name=$(sed -E 's/^ *([a-z_/]+) *──►.*/\1/' <<<"$row")
  drawn=$(sed -E 's/.*──► *//' <<<"$row")
  if [ "$name" = apps/baton ]; then want=${uses[apps/baton]:-}; elif [ -n "${allowed[$name]+x}" ]; then want=${allowed[$name]}; else
    echo "$doc: the diagram draws '$name', which has no row in the table"; status=1; continue
  fi
  same_set "$drawn" "$want" || { echo "$doc: the diagram draws $name ──► $drawn; the code says: $(tr ' ' '\n' <<<"$want" | grep . | sort | tr '\n' ' ')"; status=1; }
done < <(sed -n '/^## The layers/,/^<!--/p' "$doc" | grep -E '^ *[a-z_/]+ *──►')

# include/baton/baton.h is the umbrella: it includes every public header.
if [ -f include/baton/baton.h ]; then
  while IFS= read -r header; do
    grep -qF "#include \"${header#include/}\"" include/baton/baton.h ||
      { echo "include/baton/baton.h: does not include ${header#include/} (the umbrella includes every public header)"; status=1; }
  done < <(find include/baton -mindepth 2 -name '*.h' | sort)
fi

while IFS=: read -r file line text; do
  echo "$file:$line: public header includes <torch/torch.h>; include the narrowest LibTorch header instead"
  status=1
done < <(grep -rnE '^\s*#\s*include\s*[<"]torch/(torch|all)\.h[>"]' include || true)

[ $status -eq 0 ] && echo "layering: ok (${#allowed[@]} modules from $doc)"
exit $status

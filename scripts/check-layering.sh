#!/usr/bin/env bash
# Checks the one direction of dependency in ARCHITECTURE.md: a module includes only modules
# below it, and no public header includes <torch/torch.h>. Prints each violation as file:line.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"

# module: the modules it may include (besides itself).
declare -A allowed=(
  [core]=""
  [data]="core"
  [models]="core"
  [optim]="core"
  [metrics]="core"
  [algorithms]="core data models optim metrics"
  [callbacks]="core data models optim metrics"
  [loggers]="core data models optim metrics"
  [train]="core data models optim metrics algorithms callbacks loggers"
  [plan]="core"
  [exec]="core plan"
  [dashboard]="core plan exec"
)

status=0
for dir in include/baton src; do
  [ -d "$dir" ] || continue
  while IFS= read -r file; do
    rel=${file#"$dir"/}
    module=${rel%%/*}
    [ "$module" = "$rel" ] && continue  # baton.h, version.h, pch.h
    [ -n "${allowed[$module]+x}" ] || continue
    while IFS=: read -r line text; do
      used=$(sed -E 's|.*baton/([a-z_]+)/.*|\1|' <<<"$text")
      [ "$used" = "$module" ] && continue
      case " ${allowed[$module]} " in *" $used "*) continue ;; esac
      echo "$file:$line: module '$module' includes '$used', which is not below it: $text"
      status=1
    done < <(grep -nE '^\s*#\s*include\s*[<"]baton/[a-z_]+/' "$file" || true)
  done < <(find "$dir" -name '*.h' -o -name '*.cpp')
done

while IFS=: read -r file line text; do
  echo "$file:$line: public header includes <torch/torch.h>; include the narrowest LibTorch header instead"
  status=1
done < <(grep -rnE '^\s*#\s*include\s*[<"]torch/(torch|all)\.h[>"]' include || true)

[ $status -eq 0 ] && echo "layering: ok"
exit $status

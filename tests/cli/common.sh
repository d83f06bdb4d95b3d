# Sourced by the CLI tests: a temporary working folder (removed at exit), `fail`, and `refused`.
#   refused WHAT PATTERN COMMAND...   the command exits 2 and prints a line matching PATTERN
#                                     (REFUSED_ONE_LINE=1: and nothing more)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
refused() {
  local what=$1 pattern=$2
  shift 2
  "$@" >out.log 2>&1
  local rc=$?
  [ "$rc" -eq 2 ] || fail "$what: exit $rc, expected 2: $(tail -1 out.log)"
  grep -q -- "$pattern" out.log || fail "$what: no '$pattern' in: $(tail -1 out.log)"
  [ "${REFUSED_ONE_LINE:-0}" != 1 ] || [ "$(wc -l <out.log)" -le 1 ] || fail "$what: more than one line: $(cat out.log)"
}

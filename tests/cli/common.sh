# Sourced by the CLI tests: a temporary working folder (removed at exit), `fail`, `refused` and
# `expect`.
#   refused WHAT PATTERN COMMAND...   the command exits 2 and prints a line matching PATTERN
#                                     (REFUSED_ONE_LINE=1: and nothing more)
#   expect CODE "substring" -- COMMAND...  the exit code, the text on stderr, at most EXPECT_LINES
#                                     (3) lines, within 10 s, no library's text
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
expect() {
  local code=$1 needle=$2
  shift 3
  timeout 10 "$@" >out 2>err
  local rc=$?
  if [ "$rc" -ne "$code" ] || ! grep -qF -- "$needle" err || [ "$(wc -l <err)" -gt "${EXPECT_LINES:-3}" ] ||
    grep -qE "Exception raised from|INTERNAL ASSERT|json.exception|terminate called|what\(\)" err; then
    fail "$* -> exit $rc (want $code), stderr:"
    cat err
  fi
}

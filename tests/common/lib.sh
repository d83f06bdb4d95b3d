# The shell tests' one library: `source "$(dirname "$0")/../common/lib.sh"`. It makes a temporary
# folder $tmp (removed at exit; a script that sets its own EXIT trap removes it there too) and gives
#   fail MESSAGE          counts a failure and goes on; `finish NAME` ends the script by the count
#   fail_now MESSAGE      a failure that ends the script (exit 1)
#   skip REASON           exit 77, counted by ctest as skipped, with the reason on one line
#   require_fashion       skips without the Fashion-MNIST package (or $FASHION_MNIST_DIR)
#   require_command NAME  skips without the program NAME
#   require_cuda BATON    skips when that baton has no CUDA or the machine no GPU
#   random_words FILE N   N words of a small vocabulary in FILE, the same each time (a text corpus)
#   refused WHAT PATTERN COMMAND...   the command exits 2 and prints a line matching PATTERN
#                                     (REFUSED_ONE_LINE=1: and nothing more)
#   expect CODE "substring" -- COMMAND...  the exit code, the text on stderr ($tmp/err), at most
#                                     EXPECT_LINES (3) lines, within EXPECT_TIMEOUT (10) s, no
#                                     library's text
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fashion_mnist=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
fail_now() {
  echo "FAIL: $*"
  exit 1
}
skip() {
  echo "skipped: $*"
  exit 77
}
# Ends the script: "NAME: ok" and 0, or the count of failures and 1.
finish() {
  if [ "$failures" -eq 0 ]; then
    echo "$1: ok"
    exit 0
  fi
  echo "$1: $failures failure(s)"
  exit 1
}
random_words() {
  python3 -c "
import random, sys
random.seed(1)
words = ['shard', 'rank', 'gather', 'scatter', 'step', 'adam', 'unit', 'block', 'the', 'a', 'of']
print(' '.join(random.choice(words) for _ in range(int(sys.argv[1]))))" "$2" >"$1"
}
require_fashion() {
  [ -d "$fashion_mnist" ] || skip "no Fashion-MNIST at $fashion_mnist (scripts/install-deps.sh installs it, or set FASHION_MNIST_DIR)"
}
require_command() {
  command -v "$1" >/dev/null || skip "no $1 on this machine${2:+ ($2)}"
}
require_cuda() {
  local version
  version=$("$1" --version)
  case "$version" in
    *"CPU only"*) skip "this baton's LibTorch has no CUDA ($version); make test-gpu builds against one" ;;
    *" 0 GPU(s)"*) skip "no CUDA device on this machine ($version)" ;;
  esac
}
refused() {
  local what=$1 pattern=$2
  shift 2
  "$@" >"$tmp/out.log" 2>&1
  local rc=$?
  [ "$rc" -eq 2 ] || fail "$what: exit $rc, expected 2: $(tail -1 "$tmp/out.log")"
  grep -q -- "$pattern" "$tmp/out.log" || fail "$what: no '$pattern' in: $(tail -1 "$tmp/out.log")"
  [ "${REFUSED_ONE_LINE:-0}" != 1 ] || [ "$(wc -l <"$tmp/out.log")" -le 1 ] || fail "$what: more than one line: $(cat "$tmp/out.log")"
}
expect() {
  local code=$1 needle=$2
  shift 3
  timeout "${EXPECT_TIMEOUT:-10}" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -ne "$code" ] || ! grep -qF -- "$needle" "$tmp/err" || [ "$(wc -l <"$tmp/err")" -gt "${EXPECT_LINES:-3}" ] ||
    grep -qE "Exception raised from|INTERNAL ASSERT|json.exception|terminate called|what\(\)" "$tmp/err"; then
    fail "$* -> exit $rc (want $code), stderr:"
    cat "$tmp/err"
  fi
}

#!/usr/bin/env bash
# scripts/install-deps.sh on a brand-new machine, where dpkg knows none of the packages:
# as root it runs apt-get update, then one apt-get install with every package; as a user without
# sudo it prints one line saying what to install and exits 1; with everything present it installs
# nothing. apt-get, dpkg-query, id and sudo are stand-ins that record their calls.
set -euo pipefail
script=$(cd "$(dirname "$0")/../.." && pwd)/scripts/install-deps.sh
fake=$(mktemp -d)
trap 'rm -rf "$fake"' EXIT
source "$(dirname "$0")/../common/lib.sh"

make_fakes() {  # $1: uid, $2: "installed" or "missing"
  cat >"$fake/dpkg-query" <<EOS
#!/bin/sh
[ "$2" = installed ] && { printf 'install ok installed'; exit 0; }
echo "dpkg-query: no packages found matching \$4" >&2; exit 1
EOS
  printf '#!/bin/sh\necho "$@" >>"%s/apt.log"\n' "$fake" >"$fake/apt-get"
  printf '#!/bin/sh\n[ "$1" = -u ] && echo %s || /usr/bin/id "$@"\n' "$1" >"$fake/id"
  printf '#!/bin/sh\nexit 1\n' >"$fake/sudo"
  chmod +x "$fake"/*
  rm -f "$fake/apt.log"
}

# Root, nothing installed.
make_fakes 0 missing
out=$(PATH="$fake:$PATH" "$script" 2>&1) || fail_now "root install exited $?: $out"
[ "$(head -1 "$fake/apt.log")" = "update -qq" ] || fail_now "apt-get update did not come first: $(cat "$fake/apt.log")"
install_line=$(sed -n 2p "$fake/apt.log")
for pkg in libtorch-dev libopenblas0-pthread dataset-fashion-mnist libyaml-cpp-dev openmpi-bin postgresql ccache; do
  grep -qw -- "$pkg" <<<"$install_line" || fail_now "apt-get install misses $pkg: $install_line"
done
[ "$(wc -l <"$fake/apt.log")" -eq 2 ] || fail_now "expected two apt-get calls: $(cat "$fake/apt.log")"

# A user without sudo, nothing installed: one line, exit 1, no apt-get.
make_fakes 1000 missing
set +e
out=$(PATH="$fake:$PATH" "$script" 2>&1)
rc=$?
set -e
[ $rc -eq 1 ] || fail_now "non-root exit code $rc"
[ "$(wc -l <<<"$out")" -eq 1 ] || fail_now "expected one line, got: $out"
grep -q "run as root: apt-get install -y .*libtorch-dev" <<<"$out" || fail_now "unclear message: $out"
[ ! -e "$fake/apt.log" ] || fail_now "apt-get ran without root"

# Everything present: nothing to do.
make_fakes 1000 installed
out=$(PATH="$fake:$PATH" "$script" 2>&1) || fail_now "present: exit $?"
grep -q "all .* packages present" <<<"$out" || fail_now "unexpected: $out"
[ ! -e "$fake/apt.log" ] || fail_now "apt-get ran with everything present"

# --check reports missing packages with exit 1; an unknown option is refused with exit 2.
make_fakes 0 missing
set +e
PATH="$fake:$PATH" "$script" --check >/dev/null 2>&1; rc_check=$?
PATH="$fake:$PATH" "$script" --frobnicate >/dev/null 2>&1; rc_bad=$?
set -e
[ $rc_check -eq 1 ] || fail_now "--check exit $rc_check"
[ $rc_bad -eq 2 ] || fail_now "unknown option exit $rc_bad"
[ ! -e "$fake/apt.log" ] || fail_now "--check installed something"
echo "install-deps: ok"

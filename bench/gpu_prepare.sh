#!/usr/bin/env bash
# Fills .device/ (kept out of git) with what the GPU machine lacks, for bench/gpu_run.sh there:
# Debian's SQLite and OpenSSL packages (headers and libraries, unpacked there into a sysroot), the
# Fashion-MNIST files, the fortunes text of the gpt rows, the peers, and setup.sh (bench/gpu_setup.sh).
# The GPU machine reaches no registry: everything is taken from this one.
#
#   bench/gpu_prepare.sh && bench/gpu_run.sh check     # here, before the device call
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
grep -qx '/.device/' .git/info/exclude 2>/dev/null || { mkdir -p .git/info; echo '/.device/' >> .git/info/exclude; }
mkdir -p .device/debs .device/data .device/peers .device/fortunes
pkgs=(libsqlite3-dev libsqlite3-0 libssl-dev libssl3)  # PostgreSQL storage stays off there (optional)
(
  cd .device/debs
  for p in "${pkgs[@]}"; do
    ls "${p}"_*.deb >/dev/null 2>&1 || apt-get download "$p" >/dev/null 2>&1 || { apt-get update -qq && apt-get download "$p"; }
  done
)
cp -u /usr/share/datasets/fashion-mnist/*.gz .device/data/ 2>/dev/null ||
  echo "gpu_prepare: no Fashion-MNIST here (scripts/install-deps.sh installs dataset-fashion-mnist)" >&2
# The gpt rows' text: the fortunes' text files (not their .dat indexes).
if [ -d /usr/share/games/fortunes ]; then
  find /usr/share/games/fortunes -maxdepth 1 -type f ! -name '*.dat' ! -name '*.u8' -exec cp -u {} .device/fortunes/ \;
else
  echo "gpu_prepare: no /usr/share/games/fortunes here (apt-get install fortunes): the gpt rows will fail" >&2
fi
cp -u bench/peers/*.py .device/peers/
cp bench/gpu_setup.sh .device/setup.sh
du -sh .device | sed 's/^/gpu_prepare: .device is /'

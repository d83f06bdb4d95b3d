#!/usr/bin/env bash
# Fills .device/ (kept out of git) with what the GPU machine lacks, for bench/gpu_run.sh there:
# Debian's SQLite, OpenSSL, libjpeg-turbo, libpng, SentencePiece and libcurl packages (headers and
# libraries, unpacked there into a sysroot; libcurl's own libraries in debs-curl/, used only where the
# machine has no libcurl.so.4), the Fashion-MNIST files, the fortunes text of the gpt rows, the peers,
# and setup.sh (bench/gpu_setup.sh).
# The GPU machine reaches no registry: everything is taken from this one.
#
#   bench/gpu_prepare.sh && bench/gpu_run.sh check     # here, before the device call
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
grep -qx '/.device/' .git/info/exclude 2>/dev/null || { mkdir -p .git/info; echo '/.device/' >> .git/info/exclude; }
mkdir -p .device/debs .device/debs-curl .device/data .device/peers .device/fortunes
# PostgreSQL storage stays off there (optional). Every library here needs only libc, libstdc++ and zlib.
pkgs=(libsqlite3-dev libsqlite3-0 libssl-dev libssl3 libjpeg62-turbo-dev libjpeg62-turbo libpng-dev
  libpng16-16 libsentencepiece-dev libsentencepiece0 libcurl4-openssl-dev libpcre2-dev libpcre2-8-0)
# libcurl.so.4 and what it needs beyond libc and zlib (libssl3 is in pkgs): unpacked there only where
# the machine has no libcurl.so.4 of its own (Ubuntu's libcurl4t64 has the same soname and API).
curl_pkgs=(libcurl4 libbrotli1 libcom-err2 libdb5.3 libffi8 libgmp10 libgnutls30 libgssapi-krb5-2
  libhogweed6 libidn2-0 libk5crypto3 libkeyutils1 libkrb5-3 libkrb5support0 libldap-2.5-0 libnettle8
  libnghttp2-14 libp11-kit0 libpsl5 librtmp1 libsasl2-2 libsasl2-modules-db libssh2-1 libtasn1-6
  libunistring2 libzstd1)
download() {
  local p
  for p in "$@"; do
    ls "${p}"_*.deb >/dev/null 2>&1 || apt-get download "$p" >/dev/null 2>&1 || { apt-get update -qq && apt-get download "$p"; }
  done
}
(cd .device/debs && download "${pkgs[@]}")
(cd .device/debs-curl && download "${curl_pkgs[@]}")
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

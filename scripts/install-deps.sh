#!/usr/bin/env bash
# Installs the Debian packages baton needs, only when something is missing.
#
#   scripts/install-deps.sh            build, test and demo dependencies
#   scripts/install-deps.sh --bench    also the Python peers used by bench/
#   scripts/install-deps.sh --fuzz     also clang and its runtimes for `make fuzz`
#   scripts/install-deps.sh --browser  also Chromium for the dashboard's browser tests
#   scripts/install-deps.sh --servers  also nginx, which serves WebDataset shards in a test (ctest label nginx)
#   scripts/install-deps.sh --torch2   what the LibTorch 2.x build needs (its LibTorch comes from PyPI)
#   scripts/install-deps.sh --check    only report what is missing (exit 1 if anything is)
#
# Nothing is downloaded from anywhere but Debian's package archive.
set -euo pipefail

core=(
  build-essential cmake make pkg-config git
  libgtest-dev libgmock-dev libbenchmark-dev
  libtorch-dev libopenblas0-pthread libtcmalloc-minimal4 zlib1g-dev
  libyaml-cpp-dev libcli11-dev nlohmann-json3-dev libspdlog-dev libfmt-dev
  libsqlite3-dev libpq-dev postgresql libcpp-httplib-dev libjs-chart.js libssl-dev
  libopenmpi-dev openmpi-bin
  libjpeg62-turbo-dev libturbojpeg0-dev libpng-dev  # image folders: JPEG (libjpeg-turbo), PNG
  libcurl4-openssl-dev  # http(s):// files: WebDataset shards
  libsentencepiece-dev python3-numpy  # token corpora: SentencePiece (baton tokenize); numpy writes shards in a test
  libpcre2-dev  # Hugging Face tokenizers' pre-tokenizer regular expressions
  python3-sklearn  # the metrics tests compare with scikit-learn on the same predictions
  dataset-fashion-mnist fortunes ccache  # fortunes: the text of recipes/gpt_char.yaml
)
bench=(python3-torch python3-optuna libtbb-dev)
debian_torch=(libtorch-dev libopenblas0-pthread)
fuzz=(clang libclang-rt-14-dev)
browser=(chromium python3-websocket)  # the dashboard's browser tests (ctest label browser)
servers=(nginx)  # WebDataset shards over HTTP (ctest label nginx)

want=("${core[@]}")
check_only=0
for arg in "$@"; do
  case "$arg" in
    --bench) want+=("${bench[@]}") ;;
    --fuzz) want+=("${fuzz[@]}") ;;
    --browser) want+=("${browser[@]}") ;;
    --servers) want+=("${servers[@]}") ;;
    --torch2)  # LibTorch and its BLAS come with the torch wheel; venv makes its virtual environment
      kept=()
      for p in "${want[@]}"; do [[ " ${debian_torch[*]} " == *" $p "* ]] || kept+=("$p"); done
      want=("${kept[@]}" python3-venv) ;;
    --check) check_only=1 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install-deps.sh: unknown option '$arg' (expected --bench, --fuzz, --browser, --servers, --torch2 or --check)" >&2; exit 2 ;;
  esac
done

missing=()
for pkg in "${want[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  if [ "$status" != "install ok installed" ]; then
    missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#want[@]} packages present"
  exit 0
fi

if [ "$check_only" -eq 1 ]; then
  echo "install-deps: missing: ${missing[*]}"
  exit 1
fi

if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO=(sudo -n)
  else
    echo "install-deps: missing packages; run as root: apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
else
  SUDO=()
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"

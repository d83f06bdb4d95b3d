#!/usr/bin/env bash
# Makes .venv-peers/ (git-ignored) with the peers' pinned versions from PyPI (requirements.txt) and
# prints its python. When .venv-torch2/ (make build-torch2) has the same torch, the peers' venv
# uses that one instead of installing 4 GB again.
#
#   bench/peers/make-venv.sh && .venv-peers/bin/python bench/peers/optuna_bench.py --function branin --trials 60
#
# --nni makes .venv-nni/ (requirements-nni.txt: NNI over the peers' venv) and prints its python.
# --llm makes .venv-llm/ (requirements-llm.txt: transformers, tokenizers, sentencepiece, peft over
# .venv-torch2's torch) and prints its python.
# --mlflow makes .venv-mlflow/ (requirements-mlflow.txt: the MLflow server and client of the tracking
# test, tests/cli/mlflow_test.sh) and prints its python.
# --composer makes .venv-composer/ instead (requirements-composer.txt: Composer pins an older torch)
# and prints its python. For a machine that reaches no registry and has torch 2.11 (the GPU machine):
#   --composer-wheels DIR    (here) downloads requirements-composer-torch2.txt's wheels for Python 3.12
#   --composer-offline DIR   (there) makes .venv-composer/ from DIR's wheels over that python3's torch
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
case "${1:-}" in
  --composer-wheels)
    dir="${2:?make-venv: --composer-wheels needs a folder}"
    mkdir -p "$dir"
    python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: --python-version 3.12 \
      --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 --platform any \
      -r "$root/bench/peers/requirements-composer-torch2.txt" -d "$dir" >&2
    du -sh "$dir" | sed 's/^/make-venv: Composer wheels: /' >&2
    exit 0
    ;;
  --composer-offline)
    dir="${2:?make-venv: --composer-offline needs a folder}"
    ls "$dir"/mosaicml-*.whl >/dev/null 2>&1 || { echo "make-venv: no Composer wheels in $dir" >&2; exit 2; }
    venv="$root/.venv-composer"
    # Without ensurepip (Ubuntu's python3 without python3-venv) the venv gets no pip of its own and
    # the machine's pip installs into it.
    pip=("$venv/bin/python" -m pip)
    if ! python3 -m venv "$venv" 2>/dev/null; then
      rm -rf "$venv"
      python3 -m venv --without-pip "$venv"
      pip=(python3 -m pip --python "$venv/bin/python")
    fi
    # The machine's torch (and whatever else its python3 has) stays visible; the wheels come first.
    python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' \
      >"$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/machine.pth"
    "${pip[@]}" install --quiet --disable-pip-version-check --no-index --no-deps "$dir"/*.whl >&2
    "$venv/bin/python" -c 'import composer, torch' >&2 || { echo "make-venv: Composer does not import" >&2; exit 1; }
    echo "$venv/bin/python"
    exit 0
    ;;
esac
# pinned_venv NAME REQUIREMENTS MODULE PACKAGE: .venv-NAME with REQUIREMENTS installed, unless its
# MODULE already has PACKAGE's pinned version; prints its python.
pinned_venv() {
  local venv="$root/.venv-$1" reqs="$root/bench/peers/$2"
  if [ ! -x "$venv/bin/python" ] ||
     [ "$("$venv/bin/python" -c "import $3; print($3.__version__)" 2>/dev/null)" != "$(sed -n "s/^$4==//p" "$reqs")" ]; then
    echo "make-venv: installing $2's pins into .venv-$1 (PyPI)" >&2
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$reqs" >&2
  fi
  echo "$venv/bin/python"
}
# .venv-llm: transformers, tokenizers, sentencepiece, peft (requirements-llm.txt) over .venv-torch2's
# torch (scripts/install-deps.sh --torch2 makes it), which it sees after its own packages.
llm_venv() {
  local venv="$root/.venv-llm" shared="${BATON_TORCH2_VENV:-$root/.venv-torch2}"
  [ -x "$shared/bin/python" ] || { echo "make-venv: --llm needs .venv-torch2 (scripts/install-deps.sh --torch2)" >&2; exit 1; }
  if [ ! -x "$venv/bin/python" ] ||
     [ "$("$venv/bin/python" -c 'import transformers; print(transformers.__version__)' 2>/dev/null)" != \
       "$(sed -n 's/^transformers==//p' "$root/bench/peers/requirements-llm.txt")" ]; then
    echo "make-venv: installing requirements-llm.txt's pins into .venv-llm (PyPI)" >&2
    python3 -m venv "$venv"
    "$shared/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' \
      >"$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/baton-torch2.pth"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$root/bench/peers/requirements-llm.txt" >&2
  fi
  echo "$venv/bin/python"
}
# .venv-nni: NNI (requirements-nni.txt) over the peers' venv, whose packages it sees after its own.
nni_venv() {
  local venv="$root/.venv-nni" peers
  peers=$("$0")  # the peers' venv first
  if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import nni, torch' 2>/dev/null; then
    echo "make-venv: installing requirements-nni.txt's pins into .venv-nni (PyPI)" >&2
    python3 -m venv "$venv"
    "$peers" -c 'import sys; print("\n".join(p for p in sys.path if p.endswith("-packages")))' \
      >"$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/peers.pth"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$root/bench/peers/requirements-nni.txt" >&2
  fi
  echo "$venv/bin/python"
}
case "${1:-}" in
  --llm) llm_venv; exit 0 ;;  # the language models' references (tests/llm, bench/llm_bench)
  --nni) nni_venv; exit 0 ;;  # NNI's strategies on the benchmark table (bench/nas_regret.sh)
  --mlflow) pinned_venv mlflow requirements-mlflow.txt mlflow mlflow; exit 0 ;;  # the tracking test (label mlflow)
  --composer) pinned_venv composer requirements-composer.txt composer mosaicml; exit 0 ;;
esac
venv="$root/.venv-peers"
reqs="$root/bench/peers/requirements.txt"
python="$venv/bin/python"
if [ ! -x "$python" ] || ! "$python" -c 'import optuna, scipy, torch, lightning, cmaes' 2>/dev/null ||
   [ "$("$python" -c 'import optuna; print(optuna.__version__)')" != "$(sed -n 's/^optuna==//p' "$reqs")" ]; then
  echo "make-venv: installing the peers' pins into .venv-peers (PyPI)" >&2
  python3 -m venv "$venv"
  site=$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  torch_pin=$(sed -n 's/^torch==//p' "$reqs")
  shared="${BATON_TORCH2_VENV:-$root/.venv-torch2}"
  if [ -x "$shared/bin/python" ] &&
     [ "$("$shared/bin/python" -c 'import torch; print(torch.__version__.split("+")[0])' 2>/dev/null)" = "$torch_pin" ]; then
    "$shared/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' >"$site/baton-torch2.pth"
    grep -v '^torch==' "$reqs" >"$venv/requirements-without-torch.txt"
    "$python" -m pip install --quiet --disable-pip-version-check -r "$venv/requirements-without-torch.txt" >&2
  else
    "$python" -m pip install --quiet --disable-pip-version-check -r "$reqs" >&2
  fi
fi
echo "$python"

#!/usr/bin/env bash
# Makes .venv-peers/ (git-ignored) with the peers' pinned versions from PyPI (requirements.txt) and
# prints its python. When .venv-torch2/ (make build-torch2) has the same torch, the peers' venv
# uses that one instead of installing 4 GB again.
#
#   bench/peers/make-venv.sh && .venv-peers/bin/python bench/peers/optuna_bench.py --function branin --trials 60
#
# --composer makes .venv-composer/ instead (requirements-composer.txt: Composer pins an older torch)
# and prints its python.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
if [ "${1:-}" = "--composer" ]; then
  venv="$root/.venv-composer"
  reqs="$root/bench/peers/requirements-composer.txt"
  if [ ! -x "$venv/bin/python" ] ||
     [ "$("$venv/bin/python" -c 'import composer; print(composer.__version__)' 2>/dev/null)" != "$(sed -n 's/^mosaicml==//p' "$reqs")" ]; then
    echo "make-venv: installing Composer's pins into .venv-composer (PyPI)" >&2
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$reqs" >&2
  fi
  echo "$venv/bin/python"
  exit 0
fi
venv="$root/.venv-peers"
reqs="$root/bench/peers/requirements.txt"
python="$venv/bin/python"
if [ ! -x "$python" ] || ! "$python" -c 'import optuna, scipy, torch, lightning' 2>/dev/null ||
   [ "$("$python" -c 'import optuna; print(optuna.__version__)')" != "$(sed -n 's/^optuna==//p' "$reqs")" ]; then
  echo "make-venv: installing the peers' pins into .venv-peers (PyPI)" >&2
  python3 -m venv "$venv"
  site=$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  torch_pin=$(sed -n 's/^torch==//p' "$reqs")
  shared="$root/.venv-torch2"
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

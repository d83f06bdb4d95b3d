#!/usr/bin/env bash
# Makes small random-weight Hugging Face models with transformers (tests/llm/make_models.py) and
# byte-level BPE tokenizers with tokenizers (make_tokenizers.py), in .venv-llm (bench/peers/make-venv.sh
# --llm), and runs PROGRAM (hf_reference_tests) against them.
# Exit 77 (skipped, with the reason) when the venv cannot be made (no .venv-torch2, no PyPI).
# Usage: hf_reference.sh SOURCE_DIR PROGRAM [ARGS...]
set -uo pipefail
source_dir=$1
shift
python=$("$source_dir/bench/peers/make-venv.sh" --llm 2>/tmp/baton-llm-venv.$$) || {
  echo "skipped: no .venv-llm: $(tail -n1 /tmp/baton-llm-venv.$$)"
  rm -f /tmp/baton-llm-venv.$$
  exit 77
}
rm -f /tmp/baton-llm-venv.$$
models=$(mktemp -d /tmp/baton_hf_models_XXXXXX)
trap 'rm -rf "$models"' EXIT
for script in make_models.py make_tokenizers.py "make_lora.py make"; do
  # shellcheck disable=SC2086  # "make_lora.py make": the script and its command
  "$python" "$source_dir/tests/llm/"$script "$models" >/dev/null 2>&1 ||
    { echo "$script failed:"; "$python" "$source_dir/tests/llm/"$script "$models"; exit 1; }
done
BATON_HF_MODELS="$models" BATON_HF_TOKENIZERS="$models" "$@" || exit $?
# baton's exported LoRA adapter, loaded by PEFT, gives baton's logits (when the program wrote it).
if [ -f "$models/lora/baton-logits.safetensors" ]; then
  "$python" "$source_dir/tests/llm/make_lora.py" check "$models" || exit 1
fi

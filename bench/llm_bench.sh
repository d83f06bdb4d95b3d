#!/usr/bin/env bash
# Language models against transformers and tokenizers, in one run on the same cores (issue 60's
# speed rows; figures in bench/README.md). Peers in .venv-llm (bench/peers/make-venv.sh --llm), whose
# torch is the LibTorch of build-torch2 (make build-torch2): run with BIN=build-torch2/bin for the
# same torch on both sides.
#
#   bench/llm_bench.sh [ROWS...]    ROWS: train lora generate cache tokenize (default all)
#
# train     a ~110M-parameter Llama (hidden 768, 12 layers, 12 heads, 4 key/value heads, vocab 32,000),
#           random weights: `baton train` (model: hf, AdamW) against transformers' model in a plain
#           PyTorch loop, both under bf16 autocast where the CPU computes bf16 in hardware (AVX512-BF16
#           or AMX; PRECISION=bf16|fp32 to choose), else fp32; tokens/s (batch 4 x context 128); the peer again
#           with AdamW(fused=True), baton's default on LibTorch 2.4 or later
# lora      the same model fine-tuned with LoRA (r 16, alpha 32, dropout 0.05 on q_proj and v_proj):
#           baton's lora algorithm against transformers + PEFT (get_peft_model), the same loop
# generate  the same model, greedy, 32-token prompts, 128 new tokens, batch 1 and 8: tokens/s
# cache     a small Llama (hidden 256, 4 layers): 256 new tokens with the key/value cache against
#           recomputing the prefix each step, baton's and transformers'
# tokenize  a 16 MB text (make_tokenizers.py's mix of scripts, emoji, digits, white space) with a
#           Llama 3-style byte-level BPE tokenizer: baton tokenize's MB/s against tokenizers', one
#           thread and every core
# Env: BIN (build/bin), WORK (a temporary folder; kept when given), TRAIN_STEPS (3).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
bin=${BIN:-$src/build/bin}
rows=${*:-train lora generate cache tokenize}
python=$("$src/bench/peers/make-venv.sh" --llm)
work=${WORK:-$(mktemp -d /tmp/baton_llm_bench_XXXXXX)}
[ -n "${WORK:-}" ] || trap 'rm -rf "$work"' EXIT
peer() { "$python" "$src/bench/peers/llm_peer.py" "$@"; }
ratio() { python3 -c "import json,sys; a,b=(json.loads(l) for l in sys.argv[1:3]); k=sys.argv[3]; print(json.dumps({'ratio': sys.argv[4], 'baton_over_peer': round(a[k]/b[k], 3)}))" "$@"; }
echo "{\"cores\": $(nproc), \"bin\": \"$bin\"}"

if [[ " $rows " =~ " "(train|lora|generate)" " ]] && [ ! -d "$work/llama110m" ]; then
  peer make-model "$work/llama110m" >&2
fi

# `baton train` of the 110M Llama on random token shards, $precision, AdamW, batch 4 x 128 tokens:
# its speed monitor's tokens/s (and MFU) over the last `steps` batches, as a JSON row. $1: the row's
# name, $2: the recipe's extra lines.
baton_train_row() {
  [ -f "$work/train_000.bin" ] || python3 - "$work" <<'PY'
import random, struct, sys
random.seed(0)
n = 200000
with open(sys.argv[1] + "/train_000.bin", "wb") as f:
    f.write(struct.pack("<256i", *([20240520, 1, n] + [0] * 253)))
    f.write(struct.pack("<%dH" % n, *[random.randrange(32000) for _ in range(n)]))
PY
  cat >"$work/$1.yaml" <<YAML
model: {name: hf, path: $work/llama110m}
data: {dataset: tokens, train_files: "$work/train_*.bin", context: 128, vocab_size: 32000, batch_size: 4}
precision: $([ "$precision" = bf16 ] && echo amp_bf16 || echo fp32)
optimizer: {name: adamw, lr: 0.0001}
max_duration: $((steps + 2))ba
progress_bar: false
callbacks: {speed_monitor: {window_size: $steps}}
$2
YAML
  rm -rf "$work/run-$1"
  "$bin/baton" train "$work/$1.yaml" --run-dir "$work/run-$1" >"$work/$1.log" 2>&1 || { tail -3 "$work/$1.log" >&2; exit 1; }
  python3 -c "
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
last = [r for r in rows if 'throughput/tokens_per_sec' in r][-1]
print(json.dumps({'row': sys.argv[2], 'impl': 'baton', 'bf16': sys.argv[3] == 'bf16', 'batch': 4, 'context': 128,
                  'tokens_per_s': last['throughput/tokens_per_sec'], 'mfu': last.get('throughput/mfu')}))" \
    "$work/run-$1/metrics.jsonl" "$1" "$precision"
}
steps=${TRAIN_STEPS:-3}
# bf16 where the CPU has it in hardware: elsewhere its matrix products are emulated, many times
# slower than fp32's, on both sides.
if [ -z "${PRECISION:-}" ]; then
  grep -qwE 'avx512_bf16|amx_bf16' /proc/cpuinfo && PRECISION=bf16 || PRECISION=fp32
fi
precision=$PRECISION
peer_bf16=$([ "$precision" = bf16 ] && echo --bf16 || true)

if [[ " $rows " == *" train "* ]]; then
  b=$(baton_train_row train "")
  p=$(peer train --model "$work/llama110m" --batch 4 --context 128 --steps "$steps" $peer_bf16)
  f=$(peer train --model "$work/llama110m" --batch 4 --context 128 --steps "$steps" $peer_bf16 --fused)
  echo "$b"
  echo "$p"
  echo "$f"
  ratio "$b" "$p" tokens_per_s "train tokens/s (goal >= 1.3)"
  ratio "$b" "$f" tokens_per_s "train tokens/s against the peer with AdamW(fused=True)"
fi

# LoRA fine-tuning: r 16, alpha 32, dropout 0.05 on q_proj and v_proj, the rest frozen, against
# transformers + PEFT's get_peft_model in a plain PyTorch loop (the same model, data and precision).
if [[ " $rows " == *" lora "* ]]; then
  b=$(baton_train_row lora "algorithms: {lora: {r: 16, alpha: 32, dropout: 0.05, targets: [q_proj, v_proj]}}")
  p=$(peer train --model "$work/llama110m" --batch 4 --context 128 --steps "$steps" $peer_bf16 --lora)
  echo "$b"
  echo "$p"
  ratio "$b" "$p" tokens_per_s "LoRA fine-tuning tokens/s (goal >= 1.5)"
fi

if [[ " $rows " == *" generate "* ]]; then
  for batch in 1 8; do
    b=$("$bin/llm_bench" generate --model "$work/llama110m" --batch $batch --new-tokens 128 --reps 3)
    p=$(peer generate --model "$work/llama110m" --batch $batch --new-tokens 128 --reps 3)
    echo "$b"
    echo "$p"
    ratio "$b" "$p" tokens_per_s "generate batch $batch tokens/s (goal >= 1.2)"
  done
fi

if [[ " $rows " == *" cache "* ]]; then
  [ -d "$work/llama-small" ] || peer make-model "$work/llama-small" --hidden 256 --intermediate 688 --layers 4 --heads 4 \
    --kv-heads 2 >&2
  c=$("$bin/llm_bench" generate --model "$work/llama-small" --new-tokens 256 --reps 3)
  n=$("$bin/llm_bench" generate --model "$work/llama-small" --new-tokens 256 --reps 3 --no-cache)
  pc=$(peer generate --model "$work/llama-small" --new-tokens 256 --reps 3)
  pn=$(peer generate --model "$work/llama-small" --new-tokens 256 --reps 3 --no-cache)
  printf '%s\n' "$c" "$n" "$pc" "$pn"
  ratio "$c" "$n" tokens_per_s "baton: the cache against recomputing, 256 new tokens (goal >= 5)"
  ratio "$pc" "$pn" tokens_per_s "transformers: the cache against recomputing, 256 new tokens"
fi

if [[ " $rows " == *" tokenize "* ]]; then
  [ -f "$work/tok/corpus.txt" ] || "$python" "$src/tests/llm/make_tokenizers.py" "$work/tok" >/dev/null
  [ -f "$work/text.txt" ] || "$python" -c "
import sys; sys.path.insert(0, sys.argv[1])
import make_tokenizers as m
open(sys.argv[2], 'w', encoding='utf-8', newline='').write(m.text(7, 12_000_000))" "$src/tests/llm" "$work/text.txt"
  for threads in 1 "$(nproc)"; do
    b=$("$bin/llm_bench" tokenize --tokenizer "$work/tok/llama3-bpe" --text "$work/text.txt" --threads "$threads")
    p=$(peer tokenize --tokenizer "$work/tok/llama3-bpe" --text "$work/text.txt" --threads "$threads" --reps 1)
    echo "$b"
    echo "$p"
    ratio "$b" "$p" mb_per_s "tokenize MB/s, $threads thread(s) (goal >= 1)"
  done
fi

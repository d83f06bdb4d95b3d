#!/usr/bin/env bash
# baton's commands on Hugging Face folders (label llm; .venv-llm: bench/peers/make-venv.sh --llm):
# transformers' GPT-2 and Llama made with random weights (make_models.py), trained 20 steps with
# `model: {name: hf, path: ...}`, exported with --format hf; transformers loads the export strictly
# (no missing, unexpected or mismatched keys) and holds exactly the weights baton trained (baton's
# logits on them equal transformers' to 1e-4: hf_reference); the --torchscript export takes token ids
# in any batch size and gives transformers' logits. Bad folders: one line, exit 2.
# Usage: hf_cli_test.sh BATON SOURCE_DIR
source "$(dirname "$0")/../common/lib.sh"
baton=$1
source_dir=$2
python=$("$source_dir/bench/peers/make-venv.sh" --llm 2>"$tmp/venv.log") || skip "no .venv-llm: $(tail -n1 "$tmp/venv.log")"
"$python" "$source_dir/tests/llm/make_models.py" "$tmp/models" >/dev/null 2>&1 || fail_now "make_models.py failed"
python3 - "$tmp" <<'PY'
import random, struct, sys
random.seed(0)
n = 20000
with open(sys.argv[1] + "/train_000.bin", "wb") as f:  # llm.c's shard: a 256-int header, uint16 tokens
    f.write(struct.pack("<256i", *([20240520, 1, n] + [0] * 253)))
    f.write(struct.pack("<%dH" % n, *[random.randrange(320) for _ in range(n)]))
PY
for model in gpt2 llama-tied-bias; do
  cat >"$tmp/$model.yaml" <<YAML
model: {name: hf, path: $tmp/models/$model}
data: {dataset: tokens, train_files: "$tmp/train_*.bin", context: 32, vocab_size: 320, batch_size: 8}
max_duration: 20ba
optimizer: {name: adamw, lr: 0.001}
save_folder: $tmp/$model/checkpoints
save_interval: 20ba
YAML
  "$baton" train "$tmp/$model.yaml" --run-dir "$tmp/$model" >"$tmp/train.log" 2>&1 || fail_now "$model: training: $(tail -3 "$tmp/train.log")"
  "$baton" export "$tmp/$model/checkpoints/latest" --format hf --out "$tmp/$model/hf" >/dev/null ||
    fail_now "$model: export --format hf"
  "$baton" export "$tmp/$model/checkpoints/latest" --format safetensors --out "$tmp/$model/trained.safetensors" >/dev/null
  "$baton" export "$tmp/$model/checkpoints/latest" --torchscript "$tmp/$model/trained.pt" >/dev/null ||
    fail "$model: export --torchscript"
  "$python" - "$tmp/$model/hf" "$tmp/$model/trained.safetensors" "$tmp/models/$model" <<'PY' || fail "$model: transformers on the export"
import sys, torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM
model, info = AutoModelForCausalLM.from_pretrained(sys.argv[1], output_loading_info=True)
problems = {k: v for k, v in info.items() if v}
assert not problems, problems
trained, state = load_file(sys.argv[2]), model.state_dict()
assert all(torch.equal(trained[k], state[k]) for k in trained), "weights differ from baton's"
before = AutoModelForCausalLM.from_pretrained(sys.argv[3]).state_dict()
assert max((trained[k] - before[k]).abs().max().item() for k in trained) > 1e-3, "training moved nothing"
# The TorchScript file takes token ids, in any batch size, and gives the logits transformers gives
# with the trained fp32 weights (the hf export is in the source's dtype).
scripted = torch.jit.load(sys.argv[2].replace("trained.safetensors", "trained.pt"))
model = AutoModelForCausalLM.from_pretrained(sys.argv[1], dtype=torch.float32).eval()
model.load_state_dict(trained, strict=False)
for n in (1, 5):
    ids = torch.randint(0, 320, (n, 32), generator=torch.Generator().manual_seed(n))
    with torch.no_grad():
        got, want = scripted(ids), model(ids).logits
    assert got.shape == want.shape and (got - want).abs().max().item() < 1e-4, (n, (got - want).abs().max().item())
PY
done
# Generation: a JSON line a prompt with max-new-tokens ids; sampling the same for a seed; from a
# recipe with a checkpoint's weights.
printf 'the capital\nParis is the capital of France and\n' >"$tmp/prompts.txt"
"$baton" generate "$tmp/models/gpt2" --prompts "$tmp/prompts.txt" --max-new-tokens 8 --ignore-eos --json >"$tmp/greedy.jsonl" ||
  fail "generate --json"
python3 - "$tmp/greedy.jsonl" <<'PY' || fail "generate --json: not a line a prompt with 8 ids"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert [l["prompt"] for l in lines] == ["the capital", "Paris is the capital of France and"], lines
assert all(len(l["ids"]) == 8 and isinstance(l["text"], str) for l in lines), lines
PY
for seed in 1 1 2; do
  "$baton" generate "$tmp/models/gpt2" --prompts "$tmp/prompts.txt" --max-new-tokens 16 --ignore-eos --json \
    --temperature 0.9 --top-k 50 --top-p 0.95 --seed $seed | md5sum | cut -c1-32 >>"$tmp/seeds"
done
[ "$(sed -n 1p "$tmp/seeds")" = "$(sed -n 2p "$tmp/seeds")" ] || fail "sampling with seed 1 twice: different tokens"
[ "$(sed -n 1p "$tmp/seeds")" != "$(sed -n 3p "$tmp/seeds")" ] || fail "seeds 1 and 2: the same tokens"
"$baton" generate "$tmp/gpt2.yaml" --load "$tmp/gpt2/checkpoints/latest" --prompt "the capital" --max-new-tokens 4 \
  >"$tmp/out.log" 2>&1 || fail "generate RECIPE --load: $(tail -1 "$tmp/out.log")"
REFUSED_ONE_LINE=1 refused "no tokenizer beside the model" "no tokenizer.json or tokenizer.model beside the model" \
  "$baton" generate "$tmp/models/llama-tied-bias" --prompt x
REFUSED_ONE_LINE=1 refused "--max-new-tokens 0" "max-new-tokens" "$baton" generate "$tmp/models/gpt2" --prompt x --max-new-tokens 0
printf 'bad \xff byte\n' >"$tmp/bad-prompts.txt"
REFUSED_ONE_LINE=1 refused "a prompt that is not UTF-8" "a prompt: the text is not UTF-8 (at byte 4)" \
  "$baton" generate "$tmp/models/gpt2" --prompts "$tmp/bad-prompts.txt"
cp -r "$tmp/models/llama-tied-bias" "$tmp/big-tokenizer"
python3 -c "
import json, sys
t = json.load(open(sys.argv[1]))
t['added_tokens'].append({'id': 999, 'content': '<|big|>', 'single_word': False, 'lstrip': False, 'rstrip': False,
                          'normalized': False, 'special': True})
json.dump(t, open(sys.argv[2] + '/tokenizer.json', 'w'))" "$tmp/models/gpt2/tokenizer.json" "$tmp/big-tokenizer"
REFUSED_ONE_LINE=1 refused "a tokenizer larger than the model's embeddings" "more than the model's embeddings (320)" \
  "$baton" generate "$tmp/big-tokenizer" --prompt x

# LoRA: a fine-tuning of llama-tied-bias (float32 weights: the merged export is exact; GPT-2's
# tokenizer beside it, for generation) on token shards with adapters on three kinds of layer; the
# checkpoint holds the adapters, not the base; kill -9 and --autoresume in the middle of the run end
# bitwise as an uninterrupted run; the PEFT export loads in PEFT, and the merged export in
# transformers gives what PEFT's adapter gives; generating from the checkpoint, from the base with
# the PEFT adapter and from the merged export gives the same tokens; a base changed since is refused.
cp -r "$tmp/models/llama-tied-bias" "$tmp/lora-base"
cp "$tmp/models/gpt2/tokenizer.json" "$tmp/lora-base/"
cat >"$tmp/lora.yaml" <<YAML
model: {name: hf, path: $tmp/lora-base}
data: {dataset: tokens, train_files: "$tmp/train_*.bin", context: 32, vocab_size: 320, batch_size: 4}
algorithms: {lora: {r: 8, alpha: 16, dropout: 0.05, targets: [q_proj, v_proj, up_proj]}}
optimizer: {name: adamw, lr: 0.001}
scheduler: {name: wsd, t_warmup: 5ba, t_decay: 0.2dur, decay_shape: sqrt}
max_duration: 40ba
YAML
RECIPE="$tmp/lora.yaml" STEPS=240 "$source_dir/tests/slow/kill_resume.sh" "$baton" "$source_dir" >"$tmp/kill.log" 2>&1 ||
  fail "lora: kill -9 and --autoresume: $(tail -3 "$tmp/kill.log")"
"$baton" train "$tmp/lora.yaml" --run-dir "$tmp/lora" --set progress_bar=false >"$tmp/train.log" 2>&1 ||
  fail_now "lora: training: $(tail -3 "$tmp/train.log")"
ckpt_bytes=$(stat -L -c %s "$tmp/lora/checkpoints/latest")
base_bytes=$(stat -c %s "$tmp/lora-base/model.safetensors")
[ "$ckpt_bytes" -lt $((base_bytes / 2)) ] || fail "lora: the checkpoint is $ckpt_bytes bytes, the base $base_bytes: not the adapters' size"
"$baton" export "$tmp/lora/checkpoints/latest" --format peft --out "$tmp/lora/adapter" >/dev/null || fail_now "lora: --format peft"
"$baton" export "$tmp/lora/checkpoints/latest" --format hf --merge-lora --out "$tmp/lora/merged" >/dev/null ||
  fail_now "lora: --format hf --merge-lora"
"$python" - "$tmp/lora-base" "$tmp/lora/adapter" "$tmp/lora/merged" <<'PY' 2>"$tmp/py.log" || fail "lora: PEFT and transformers on the exports: $(tail -2 "$tmp/py.log")"
import sys, torch
from peft import PeftModel
from transformers import AutoModelForCausalLM
base, adapter, merged = sys.argv[1:4]
peft = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base).float(), adapter).eval()
plain = AutoModelForCausalLM.from_pretrained(merged).float().eval()
ids = torch.randint(0, 320, (2, 24), generator=torch.Generator().manual_seed(0))
with torch.no_grad():
    a, b = peft(input_ids=ids).logits, plain(input_ids=ids).logits
    with peft.disable_adapter():
        c = peft(input_ids=ids).logits
assert (a - b).abs().max() < 1e-4, f"merged export against PEFT's adapter: {(a - b).abs().max()}"
assert (a - c).abs().max() > 1e-3, "the adapters changed nothing"
PY
gen=(--prompt "ab cd ef" --max-new-tokens 12 --ignore-eos --json)
"$baton" generate "$tmp/lora.yaml" --load "$tmp/lora/checkpoints/latest" "${gen[@]}" >"$tmp/gen-ckpt.jsonl" 2>"$tmp/gen.log" ||
  fail "lora: generate RECIPE --load CKPT: $(tail -1 "$tmp/gen.log")"
"$baton" generate "$tmp/lora-base" --adapter "$tmp/lora/adapter" "${gen[@]}" >"$tmp/gen-adapter.jsonl" 2>"$tmp/gen.log" ||
  fail "lora: generate BASE --adapter: $(tail -1 "$tmp/gen.log")"
"$baton" generate "$tmp/lora/merged" "${gen[@]}" >"$tmp/gen-merged.jsonl" 2>"$tmp/gen.log" ||
  fail "lora: generate MERGED: $(tail -1 "$tmp/gen.log")"
grep -q '"ids":\[[0-9]' "$tmp/gen-merged.jsonl" || fail "lora: the merged model generated no ids: $(cat "$tmp/gen-merged.jsonl")"
cmp -s "$tmp/gen-ckpt.jsonl" "$tmp/gen-merged.jsonl" ||
  fail "lora: the checkpoint's tokens are not the merged export's: $(cat "$tmp/gen-ckpt.jsonl" "$tmp/gen-merged.jsonl")"
cmp -s "$tmp/gen-adapter.jsonl" "$tmp/gen-merged.jsonl" ||
  fail "lora: the base with --adapter gives other tokens than the merged export: $(cat "$tmp/gen-adapter.jsonl")"
# (The model is built first: the run's line precedes the refusal, and the run folder is given up.)
refused "a LoRA target that matches no layer" "lora: targets: 'qkv' matches no linear layer" \
  "$baton" train "$tmp/lora.yaml" --run-dir "$tmp/bad-lora" --set 'algorithms.lora.targets=[qkv]'
[ ! -e "$tmp/bad-lora/recipe.yaml" ] || fail "lora: a refused run left its recipe.yaml"
REFUSED_ONE_LINE=1 refused "LoRA's r of 0" "r 0: must be 1 or more" \
  "$baton" train "$tmp/lora.yaml" --run-dir "$tmp/bad-lora" --set algorithms.lora.r=0
REFUSED_ONE_LINE=1 refused "a merged export of a model without adapters" "carries no LoRA adapters" \
  "$baton" export "$tmp/gpt2/checkpoints/latest" --format hf --merge-lora --out "$tmp/bad-merged"
REFUSED_ONE_LINE=1 refused "--format peft with --merge-lora" "leave out --merge-lora" \
  "$baton" export "$tmp/lora/checkpoints/latest" --format peft --merge-lora --out "$tmp/bad-peft"
REFUSED_ONE_LINE=1 refused "a PEFT adapter given as a model" "a PEFT adapter, not a model" \
  "$baton" generate "$tmp/lora/adapter" --prompt x
REFUSED_ONE_LINE=1 refused "--adapter of another model" "is not one of this model's" \
  "$baton" generate "$tmp/models/gpt2" --adapter "$tmp/lora/adapter" --prompt x
# The base changes: the checkpoint's adapters no longer go on it.
"$python" - "$tmp/lora-base/model.safetensors" <<'PY' || fail_now "lora: changing the base"
import sys
from safetensors.torch import load_file, save_file
t = load_file(sys.argv[1])
name = sorted(k for k in t if "up_proj" in k)[0]
t[name] = t[name] + 0.01
save_file(t, sys.argv[1], metadata={"format": "pt"})
PY
refused "export onto a changed base" "its LoRA adapters were trained on another base: the frozen model's weights have changed" \
  "$baton" export "$tmp/lora/checkpoints/latest" --format hf --merge-lora --out "$tmp/bad-merged"
[ ! -e "$tmp/bad-merged" ] || fail "lora: a refused export left $tmp/bad-merged"
refused "generate onto a changed base" "trained on another base" \
  "$baton" generate "$tmp/lora.yaml" --load "$tmp/lora/checkpoints/latest" --prompt x

# Bad folders: named, one line, exit 2.
cp -r "$tmp/models/gpt2" "$tmp/t5"
sed -i 's/GPT2LMHeadModel/T5ForConditionalGeneration/' "$tmp/t5/config.json"
REFUSED_ONE_LINE=1 refused "an unknown architecture" "config.json: architectures: 'T5ForConditionalGeneration' is not implemented" \
  "$baton" train "$tmp/gpt2.yaml" --run-dir "$tmp/bad1" --set model.path="$tmp/t5"
"$python" -c "
import sys
from safetensors.torch import load_file, save_file
t = load_file(sys.argv[1] + '/model.safetensors'); del t['transformer.ln_f.weight']; save_file(t, sys.argv[1] + '/model.safetensors')" "$tmp/models/gpt2"
REFUSED_ONE_LINE=1 refused "a missing tensor" "model.safetensors: 'transformer.ln_f.weight' is missing" \
  "$baton" train "$tmp/gpt2.yaml" --run-dir "$tmp/bad2"
REFUSED_ONE_LINE=1 refused "no folder" "no such folder" \
  "$baton" train "$tmp/gpt2.yaml" --run-dir "$tmp/bad3" --set model.path="$tmp/nothing"
REFUSED_ONE_LINE=1 refused "a vocabulary larger than the model's" "but the labels have 400 classes" \
  "$baton" train "$tmp/llama-tied-bias.yaml" --run-dir "$tmp/bad4" --set data.vocab_size=400
finish hf_cli

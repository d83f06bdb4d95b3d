"""PEFT's LoRA as the reference for baton's (tests/llm/hf_reference.sh; nothing downloaded).

    python make_lora.py make OUT     # OUT/lora/: the base, PEFT's adapters, the batches, PEFT's losses
    python make_lora.py check OUT    # baton's exported adapter (OUT/lora/baton-adapter) loads in PEFT
                                     # and gives baton's logits (OUT/lora/baton-logits.safetensors)

make: a small random Llama (grouped-query heads) saved as OUT/lora/base; get_peft_model with r=4,
alpha=8, rslora off, q_proj and v_proj, no dropout; its initial adapter saved (OUT/lora/init: what
baton starts from); 50 AdamW steps (lr 1e-2, no weight decay) on fixed batches of 4 x 16 tokens (a rule to learn), the
loss each step (reference.safetensors "losses", the batches "ids" [50, 4, 17]); the trained adapter
(OUT/lora/trained) and merge_and_unload()'s weights (OUT/lora/merged.safetensors).
"""
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from peft import LoraConfig, PeftModel, get_peft_model
from safetensors.torch import load_file, save_file
from transformers import LlamaConfig, LlamaForCausalLM

VOCAB, STEPS, BATCH, CONTEXT = 320, 50, 4, 16


def base_model():
    torch.manual_seed(7)
    return LlamaForCausalLM(LlamaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=160,
                                        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                        max_position_embeddings=128)).float()


def lm_loss(model, ids):
    logits = model(input_ids=ids[:, :-1]).logits
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), ids[:, 1:].reshape(-1))


def make(out):
    out = Path(out) / "lora"
    base = base_model()
    base.save_pretrained(out / "base")
    torch.manual_seed(8)
    model = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, target_modules=["q_proj", "v_proj"],
                                            task_type="CAUSAL_LM"))
    model.save_pretrained(out / "init")
    # Rows of a rule the adapters can learn (each token from the one before: t * 5 + 3 mod VOCAB), from
    # random starts.
    starts = torch.randint(0, VOCAB, (STEPS, BATCH, 1), generator=torch.Generator().manual_seed(9))
    ids = starts.expand(STEPS, BATCH, CONTEXT + 1).clone()
    for t in range(1, CONTEXT + 1):
        ids[:, :, t] = (ids[:, :, t - 1] * 5 + 3) % VOCAB
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2, weight_decay=0.0)
    model.train()
    losses = []
    for step in range(STEPS):
        loss = lm_loss(model, ids[step])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.save_pretrained(out / "trained")
    merged = model.merge_and_unload()
    save_file({k: v.contiguous() for k, v in merged.state_dict().items()}, str(out / "merged.safetensors"))
    save_file({"ids": ids, "losses": torch.tensor(losses, dtype=torch.float64)}, str(out / "reference.safetensors"))


def check(out):
    out = Path(out) / "lora"
    baton = load_file(str(out / "baton-logits.safetensors"))
    model = PeftModel.from_pretrained(LlamaForCausalLM.from_pretrained(out / "base").float(), out / "baton-adapter")
    model.eval()
    with torch.no_grad():
        logits = model(input_ids=baton["ids"]).logits
        with model.disable_adapter():
            plain = model(input_ids=baton["ids"]).logits
    diff = (logits - baton["logits"]).abs().max().item()
    moved = (plain - baton["logits"]).abs().max().item()
    print(f"make_lora check: PEFT with baton's exported adapter: logits within {diff:.2e} of baton's "
          f"(the base's alone differ by {moved:.2e})")
    if moved < 1e-3:
        sys.exit("make_lora check: baton's adapter changes nothing: the comparison would not see it")
    if diff > 1e-5:
        sys.exit(f"make_lora check: the logits differ by {diff} (more than 1e-5)")


if __name__ == "__main__":
    {"make": make, "check": check}[sys.argv[1]](sys.argv[2])

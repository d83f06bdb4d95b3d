"""Small random-weight Hugging Face models for baton's language-model tests (nothing downloaded).

    python make_models.py OUT

writes OUT/<name>/ (save_pretrained's folder) for each config below, and OUT/<name>/reference.safetensors:
"ids" (token ids [2, 24], int64), "logits" (transformers' logits of them, float32, eval mode) and
"loss" (its loss with labels=ids: the next tokens' mean cross-entropy) and, for a context of 128 or
more, "greedy": generate()'s 64 new tokens (do_sample=False) for "prompt0" and "prompt1" (5 and 11
tokens) left-padded into one batch. SAVED says how a model is
written: its weights in bfloat16, or in shards that model.safetensors.index.json names.
"""
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import (GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM, Qwen2Config,
                          Qwen2ForCausalLM)

VOCAB = 320


def llama(**extra):
    base = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=256,
                bos_token_id=1, eos_token_id=2)
    base.update(extra)
    return LlamaConfig(**base)


MODELS = {
    "gpt2": lambda: GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_positions=128, n_embd=64, n_layer=2, n_head=4,
                                               bos_token_id=0, eos_token_id=0)),
    "gpt2-untied-relu": lambda: GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_positions=64, n_embd=48, n_layer=3,
                                                           n_head=3, n_inner=100, activation_function="relu",
                                                           tie_word_embeddings=False)),
    "llama-gqa": lambda: LlamaForCausalLM(llama(num_key_value_heads=2)),
    "llama-tied-bias": lambda: LlamaForCausalLM(llama(tie_word_embeddings=True, attention_bias=True, mlp_bias=True,
                                                      rope_theta=500000.0)),
    "llama3-rope": lambda: LlamaForCausalLM(llama(
        num_key_value_heads=1, head_dim=32,
        rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 32})),
    "qwen2": lambda: Qwen2ForCausalLM(Qwen2Config(vocab_size=VOCAB, hidden_size=64, intermediate_size=128,
                                                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                                  max_position_embeddings=256, tie_word_embeddings=True)),
}


SAVED = {"llama-gqa": {"dtype": torch.bfloat16}, "qwen2": {"max_shard_size": "60KB"}}


def tokenizer(vocab):
    """A byte-level BPE of `vocab` tokens (GPT-2's layout) trained on a little text, for generate's tests."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    words = ["the", "capital", "of", "France", "is", "Paris", "rank", "shard", "gather"]
    rng = torch.Generator().manual_seed(0)
    text = " ".join(words[i] for i in torch.randint(0, len(words), (5000,), generator=rng).tolist())
    tok.train_from_iterator([text], trainers.BpeTrainer(vocab_size=vocab, special_tokens=["<|endoftext|>"],
                                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return tok


def main(out):
    for i, (name, make) in enumerate(MODELS.items()):
        torch.manual_seed(i)
        model = make().eval()
        with torch.no_grad():  # biases and norms away from their zeros and ones, so that they count
            for n, p in model.named_parameters():
                if n.endswith("bias") or "norm" in n or "ln_" in n:
                    p.add_(torch.randn_like(p) * 0.1)
        how = SAVED.get(name, {})
        if "dtype" in how:  # the reference computes in fp32 with the weights the file holds
            with torch.no_grad():
                for p in model.parameters():
                    p.copy_(p.to(how["dtype"]).float())
        ids = torch.randint(0, VOCAB, (2, 24), generator=torch.Generator().manual_seed(100 + i))
        with torch.no_grad():
            out_ = model(ids, labels=ids)
        folder = Path(out) / name
        if "dtype" in how:
            model.to(how["dtype"])
        model.save_pretrained(folder, **({"max_shard_size": how["max_shard_size"]} if "max_shard_size" in how else {}))
        reference = {"ids": ids, "logits": out_.logits.float().contiguous(), "loss": out_.loss.float().reshape(1)}
        if model.config.max_position_embeddings >= 128:  # greedy: two prompts, left-padded in one batch
            prompts = [ids[0, :5], ids[1, :11]]
            batch = torch.zeros(2, 11, dtype=torch.long)
            mask = torch.zeros(2, 11, dtype=torch.long)
            for row, p in enumerate(prompts):
                batch[row, 11 - len(p):] = p
                mask[row, 11 - len(p):] = 1
            model.float()
            with torch.no_grad():
                greedy = model.generate(batch, attention_mask=mask, do_sample=False, max_new_tokens=64,
                                        min_new_tokens=64, pad_token_id=0, eos_token_id=None)
            reference.update({"prompt0": prompts[0].clone(), "prompt1": prompts[1].clone(),
                              "greedy": greedy[:, 11:].contiguous()})
        save_file(reference, str(folder / "reference.safetensors"))
        if name == "gpt2":  # a tokenizer beside it, for baton generate
            tokenizer(VOCAB).save(str(folder / "tokenizer.json"))


if __name__ == "__main__":
    main(sys.argv[1])

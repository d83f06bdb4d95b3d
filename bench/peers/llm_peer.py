"""The peers of bench/llm_bench: transformers and tokenizers doing what build/bin/llm_bench and
`baton train` do, one JSON line per measure (run in .venv-llm: bench/peers/make-venv.sh --llm).

    llm_peer.py make-model OUT [--hidden 768 --layers 12 ...]   a random Llama, save_pretrained (fp32)
    llm_peer.py train --model DIR --batch 4 --context 128 --steps 3 [--bf16]
        transformers' model in a plain PyTorch loop: AdamW, the loss of model(ids, labels=ids),
        bf16 autocast on the CPU with --bf16; tokens/s over the timed steps (after 2 warm-up steps)
    llm_peer.py generate --model DIR --batch 1 --prompt-tokens 32 --new-tokens 128 [--no-cache]
        model.generate(do_sample=False), exactly --new-tokens each; median of --reps
    llm_peer.py tokenize --tokenizer DIR --text FILE --threads 1|N
        one thread: tokenizer.encode(whole text) (RAYON_NUM_THREADS=1); N: encode_batch over the
        text's parts of about 1 MiB (cut after a line break, as baton cuts), RAYON_NUM_THREADS=N
"""
import argparse
import json
import os
import statistics
import sys
import time


def median_seconds(fn, reps):
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def make_model(a):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=a.vocab, hidden_size=a.hidden, intermediate_size=a.intermediate,
                         num_hidden_layers=a.layers, num_attention_heads=a.heads, num_key_value_heads=a.kv_heads,
                         max_position_embeddings=a.context, tie_word_embeddings=False, dtype="float32")
    model = LlamaForCausalLM(config)
    model.save_pretrained(a.out)
    params = sum(p.numel() for p in model.parameters())
    print(json.dumps({"row": "model", "parameters": params, "config": a.out}))


def train(a):
    import torch
    from transformers import AutoModelForCausalLM
    torch.set_num_threads(os.cpu_count())
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(a.model, dtype=torch.float32).train()
    if a.lora:  # PEFT's LoRA: r 16, alpha 32, dropout 0.05 on q_proj and v_proj, the rest frozen
        from peft import LoraConfig, get_peft_model
        model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, lora_dropout=0.05,
                                                 target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"))
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4, fused=a.fused or None)
    vocab = model.config.vocab_size

    def step():
        ids = torch.randint(0, vocab, (a.batch, a.context))
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.bf16):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for _ in range(2):
        step()
    start = time.perf_counter()
    for _ in range(a.steps):
        step()
    seconds = (time.perf_counter() - start) / a.steps
    print(json.dumps({"row": "lora" if a.lora else "train", "impl": "transformers+peft" if a.lora else "transformers",
                      "bf16": a.bf16, "fused_adamw": a.fused, "batch": a.batch,
                      "context": a.context,
                      "step_s": seconds, "tokens_per_s": a.batch * a.context / seconds, "torch": torch.__version__}))


def generate(a):
    import torch
    from transformers import AutoModelForCausalLM
    torch.set_num_threads(os.cpu_count())
    model = AutoModelForCausalLM.from_pretrained(a.model, dtype=torch.float32).eval()
    torch.manual_seed(0)
    ids = torch.randint(0, model.config.vocab_size, (a.batch, a.prompt_tokens))
    mask = torch.ones_like(ids)
    kwargs = dict(attention_mask=mask, do_sample=False, max_new_tokens=a.new_tokens, min_new_tokens=a.new_tokens,
                  use_cache=not a.no_cache, pad_token_id=0)
    with torch.no_grad():
        model.generate(ids, **{**kwargs, "max_new_tokens": 4, "min_new_tokens": 4})  # warm-up
        seconds = median_seconds(lambda: model.generate(ids, **kwargs), a.reps)
    print(json.dumps({"row": "generate", "impl": "transformers", "batch": a.batch, "prompt_tokens": a.prompt_tokens,
                      "new_tokens": a.new_tokens, "cache": not a.no_cache, "seconds": seconds,
                      "tokens_per_s": a.batch * a.new_tokens / seconds}))


def parts(text, every=1 << 20):
    out, start = [], 0
    while len(text) - start > every:
        cut = text.find("\n", start + every)
        if cut < 0:
            break
        out.append(text[start:cut + 1])
        start = cut + 1
    out.append(text[start:])
    return out


def tokenize(a):
    os.environ["RAYON_NUM_THREADS"] = str(a.threads)  # read when tokenizers first runs in parallel
    os.environ["TOKENIZERS_PARALLELISM"] = "true" if a.threads > 1 else "false"
    from tokenizers import Tokenizer
    folder = a.tokenizer
    tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json") if os.path.isdir(folder) else folder)
    text = open(a.text, encoding="utf-8", newline="").read()
    pieces = parts(text)
    run = (lambda: tok.encode(text, add_special_tokens=False)) if a.threads == 1 else \
        (lambda: tok.encode_batch(pieces, add_special_tokens=False))
    run()  # warm-up
    seconds = median_seconds(run, a.reps)
    megabytes = os.path.getsize(a.text) / 1e6
    print(json.dumps({"row": "tokenize", "impl": "tokenizers", "threads": a.threads, "megabytes": megabytes,
                      "seconds": seconds, "mb_per_s": megabytes / seconds}))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make-model")
    m.add_argument("out")
    for name, default in (("vocab", 32000), ("hidden", 768), ("intermediate", 2048), ("layers", 12), ("heads", 12),
                          ("kv_heads", 4), ("context", 1024)):
        m.add_argument("--" + name.replace("_", "-"), type=int, default=default)
    t = sub.add_parser("train")
    t.add_argument("--model", required=True)
    t.add_argument("--batch", type=int, default=4)
    t.add_argument("--context", type=int, default=128)
    t.add_argument("--steps", type=int, default=3)
    t.add_argument("--bf16", action="store_true")
    t.add_argument("--fused", action="store_true", help="AdamW(fused=True): one kernel a step, as baton's default")
    t.add_argument("--lora", action="store_true", help="PEFT's LoRA (r 16 on q_proj and v_proj) on the model")
    g = sub.add_parser("generate")
    g.add_argument("--model", required=True)
    g.add_argument("--batch", type=int, default=1)
    g.add_argument("--prompt-tokens", type=int, default=32)
    g.add_argument("--new-tokens", type=int, default=128)
    g.add_argument("--reps", type=int, default=3)
    g.add_argument("--no-cache", action="store_true")
    k = sub.add_parser("tokenize")
    k.add_argument("--tokenizer", required=True)
    k.add_argument("--text", required=True)
    k.add_argument("--threads", type=int, default=1)
    k.add_argument("--reps", type=int, default=3)
    a = p.parse_args()
    {"make-model": make_model, "train": train, "generate": generate, "tokenize": tokenize}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Peer of recipes/gpt_char.yaml: the same character-level GPT, data and recipe in plain PyTorch, as a
user who knows nanoGPT writes it. Eager by default; --compile runs torch.compile on the model.

  .venv-peers/bin/python bench/peers/gpt_char.py --device cuda [--compile] --steps 500
  (a quick look on a CPU: --layers 2 --width 128 --heads 4 --context 64 --steps 20 --amp none)

The same as baton's side (src/models/gpt.cpp, src/data/text.cpp):
  text: the regular files of --path in name order (links and *.dat skipped), one token per distinct
        character (sorted), the last 10% held out; training windows of --context characters at random
        starts, the target the window moved on by one; validation windows at i * context, in order
  model: token + position embeddings, pre-norm blocks (causal self-attention through
        scaled_dot_product_attention, 4x tanh-GELU MLP), dropout after attention weights, attention
        and MLP; a final LayerNorm; the token embedding as the output layer. N(0, 0.02) weights,
        residual projections N(0, 0.02 / sqrt(2 layers)), zero biases
  recipe: AdamW lr 1e-3, betas (0.9, 0.99), weight decay 0.1 on every parameter; linear warm-up over
        100 steps, then cosine to 0.1 x lr at the last step; batch 64; bf16 autocast; dropout 0.2
Prints one JSON line: tokens/s over the timed steps (after --warmup steps), the validation loss over
--eval-batches batches after the last step, and the wall time from process start to the end.
"""
import argparse, json, math, os, time

T0 = time.perf_counter()

p = argparse.ArgumentParser()
p.add_argument("--path", default="/usr/share/games/fortunes")
p.add_argument("--device", default="cpu")
p.add_argument("--steps", type=int, default=5000)
p.add_argument("--warmup", type=int, default=20, help="steps left out of tokens/s (compilation, caches)")
p.add_argument("--batch-size", type=int, default=64)
p.add_argument("--context", type=int, default=256)
p.add_argument("--layers", type=int, default=6)
p.add_argument("--width", type=int, default=384)
p.add_argument("--heads", type=int, default=6)
p.add_argument("--dropout", type=float, default=0.2)
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--amp", choices=["none", "bf16"], default="bf16")
p.add_argument("--compile", action="store_true", help="torch.compile(model)")
p.add_argument("--eval-batches", type=int, default=20)
p.add_argument("--seed", type=int, default=0)
p.add_argument("--threads", type=int, default=os.cpu_count())
a = p.parse_args() if __name__ == "__main__" else None  # the model classes are imported by fsdp2_gpt.py

import torch
import torch.nn as nn
import torch.nn.functional as F


def read_text(path):
    if not os.path.isdir(path):
        return open(path, "rb").read()
    names = sorted(n for n in os.listdir(path)
                   if not n.endswith(".dat") and not os.path.islink(os.path.join(path, n))
                   and os.path.isfile(os.path.join(path, n)))
    return b"".join(open(os.path.join(path, n), "rb").read() for n in names)


class Attention(nn.Module):
    def __init__(self, width, heads, dropout):
        super().__init__()
        self.heads, self.dropout = heads, dropout
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        n, t, c = x.shape
        q, k, v = self.qkv(x).view(n, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout if self.training else 0.0, is_causal=True)
        return F.dropout(self.proj(y.transpose(1, 2).reshape(n, t, c)), self.dropout, self.training)


class Block(nn.Module):
    def __init__(self, width, heads, dropout):
        super().__init__()
        self.dropout = dropout
        self.ln1, self.attn = nn.LayerNorm(width), Attention(width, heads, dropout)
        self.ln2, self.fc, self.proj = nn.LayerNorm(width), nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + F.dropout(self.proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh")), self.dropout, self.training)


class Gpt(nn.Module):
    def __init__(self, vocab, context, layers, width, heads, dropout):
        super().__init__()
        self.tokens, self.positions = nn.Embedding(vocab, width), nn.Embedding(context, width)
        self.blocks = nn.Sequential(*[Block(width, heads, dropout) for _ in range(layers)])
        self.ln = nn.LayerNorm(width)
        for name, w in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(w)
            elif ".ln" in name or name.startswith("ln."):
                nn.init.ones_(w)
            else:
                nn.init.normal_(w, 0.0, 0.02 / math.sqrt(2 * layers) if name.endswith("proj.weight") else 0.02)

    def forward(self, x):
        h = self.tokens(x) + self.positions(torch.arange(x.shape[1], device=x.device))
        return F.linear(self.ln(self.blocks(h)), self.tokens.weight)


def main():
    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    dev = torch.device(a.device)
    raw = torch.frombuffer(bytearray(read_text(a.path)), dtype=torch.uint8).long()
    alphabet = torch.unique(raw)
    table = torch.full((256,), -1, dtype=torch.long)
    table[alphabet] = torch.arange(len(alphabet))
    ids = table[raw]
    n_valid = int(len(ids) * 0.1)
    train, valid = ids[: len(ids) - n_valid].to(dev), ids[len(ids) - n_valid:].to(dev)
    span = torch.arange(a.context + 1, device=dev)

    def windows(data, starts):
        w = data[starts.unsqueeze(1) + span]
        return w[:, :-1], w[:, 1:]

    model = Gpt(len(alphabet), a.context, a.layers, a.width, a.heads, a.dropout).to(dev)
    step_model = torch.compile(model) if a.compile else model
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.99), weight_decay=0.1)
    warm = 100

    def factor(step):  # baton's cosine_warmup: t_warmup 100ba, alpha_f 0.1, t_max the run
        if step < warm:
            return step / warm
        frac = min(max((step - warm) / max(a.steps - warm, 1), 0.0), 1.0)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
    autocast = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=a.amp == "bf16")
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    model.train()
    t_start = None
    for step in range(a.steps):
        if step == a.warmup:
            sync()
            t_start = time.perf_counter()
        x, y = windows(train, torch.randint(len(train) - a.context - 1, (a.batch_size,), device=dev))
        with autocast:
            loss = F.cross_entropy(step_model(x).flatten(0, 1), y.flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
    sync()
    timed = a.steps - a.warmup
    tokens_per_sec = timed * a.batch_size * a.context / (time.perf_counter() - t_start) if timed > 0 else None
    model.eval()
    total, count = 0.0, 0
    n_windows = (len(valid) - 1) // a.context
    with torch.no_grad(), autocast:
        for b in range(min(a.eval_batches, math.ceil(n_windows / a.batch_size))):
            idx = torch.arange(b * a.batch_size, min((b + 1) * a.batch_size, n_windows), device=dev)
            x, y = windows(valid, idx * a.context)
            total += F.cross_entropy(model(x).float().flatten(0, 1), y.flatten(), reduction="sum").item()
            count += y.numel()
    print(json.dumps({"peer": "pytorch" + ("_compile" if a.compile else "_eager"), "torch": torch.__version__,
                      "device": str(dev), "steps": a.steps, "tokens_per_sec": tokens_per_sec,
                      "val_loss": total / count, "wall_s": time.perf_counter() - T0}))


if __name__ == "__main__":
    main()

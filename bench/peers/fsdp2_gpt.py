#!/usr/bin/env python3
"""Peer of bench/shard_bench: PyTorch FSDP2 (fully_shard, each block a unit and the root) over gloo on
CPU ranks started by mpirun, training gpt_char.py's GPT on random windows of tokens in fp32 with AdamW.

  mpirun -np 2 .venv-torch2/bin/python bench/peers/fsdp2_gpt.py --layers 4 --width 256 --steps 20

Each rank takes batch_size / ranks windows of every global batch. Prints one JSON line (rank 0):
tokens/s of the global batches over the timed steps (after --warmup), and each rank's peak resident
set (MB).
"""
import argparse, json, os, resource, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=20)
p.add_argument("--warmup", type=int, default=3)
p.add_argument("--batch-size", type=int, default=16)
p.add_argument("--context", type=int, default=128)
p.add_argument("--layers", type=int, default=4)
p.add_argument("--width", type=int, default=256)
p.add_argument("--heads", type=int, default=4)
p.add_argument("--vocab", type=int, default=256)
p.add_argument("--sharding", choices=["full", "none"], default="full")
p.add_argument("--port", default="29517")
a = p.parse_args()

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.fsdp import fully_shard
from torch.nn.parallel import DistributedDataParallel

from gpt_char import Gpt

rank, size = int(os.environ["OMPI_COMM_WORLD_RANK"]), int(os.environ["OMPI_COMM_WORLD_SIZE"])
os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", a.port)
dist.init_process_group("gloo", rank=rank, world_size=size)
torch.set_num_threads(1)
torch.manual_seed(0)
model = Gpt(a.vocab, a.context, a.layers, a.width, a.heads, 0.0)
if a.sharding == "full":
    for block in model.blocks:
        fully_shard(block)
    fully_shard(model)
else:
    model = DistributedDataParallel(model)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.99), weight_decay=0.1)
share = a.batch_size // size
g = torch.Generator().manual_seed(1)
t_start = None
for step in range(a.steps):
    if step == a.warmup:
        dist.barrier()
        t_start = time.perf_counter()
    tokens = torch.randint(0, a.vocab, (a.batch_size, a.context + 1), generator=g)[rank * share:(rank + 1) * share]
    loss = F.cross_entropy(model(tokens[:, :-1]).flatten(0, 1), tokens[:, 1:].flatten())
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
dist.barrier()
seconds = time.perf_counter() - t_start
peak = torch.zeros(size)
peak[rank] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
dist.all_reduce(peak)
if rank == 0:
    print(json.dumps({"peer": "pytorch_fsdp2" if a.sharding == "full" else "pytorch_ddp", "torch": torch.__version__,
                      "ranks": size, "tokens_per_s": (a.steps - a.warmup) * a.batch_size * a.context / seconds,
                      "peak_mb_per_rank": [round(x, 1) for x in peak.tolist()]}))
dist.barrier()
sys.stdout.flush()
os._exit(0)  # gloo's teardown at exit sometimes aborts (torch 2.11): the figures are out by now

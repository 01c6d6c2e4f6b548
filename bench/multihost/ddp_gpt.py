#!/usr/bin/python3
"""PyTorch 1.13 DDP (gloo) training of the peers' nanoGPT model across hosts: the model and timing of the peers'
gpt_bench.py (imported from JTRAIN_PEERS_DIR), started once per rank by a launcher that sets RANK, WORLD_SIZE and
MASTER_ADDR; the torch store listens on PEER_PORT. Global batch BATCH split over the ranks.
--precision bf16 runs the forward under torch.autocast("cpu", bfloat16) (oneDNN's bf16 matmuls, as a user on a CPU with
AVX512_BF16 would); --compress fp16 registers DDP's fp16_compress_hook: gradients all-reduced in half the bytes, what
a user on a slow network would pick, the peer of jtrain's --grad-wire bf16 (torch 1.13's bf16_compress_hook refuses to
run without CUDA 11 and NCCL 2.10).
usage: ddp_gpt.py --vocab 256 --layers 6 --heads 6 --embd 384 --block 256 --batch 8 --steps 10 --warmup 3
       [--precision fp32|bf16] [--compress none|fp16]"""
import argparse, os, statistics, sys, time
sys.path.insert(0, os.environ["JTRAIN_PEERS_DIR"])
import torch, torch.distributed as dist
from gpt_bench import GPT

p = argparse.ArgumentParser()
for k, v in dict(vocab=256, layers=6, heads=6, embd=384, block=256, batch=8, steps=10, warmup=3, threads=1).items():
    p.add_argument("--" + k, type=int, default=v)
p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
p.add_argument("--compress", choices=["none", "fp16"], default="none")
a = p.parse_args()
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
os.environ["MASTER_PORT"] = os.environ.get("PEER_PORT", "29701")
torch.manual_seed(0); torch.set_num_threads(a.threads)
dist.init_process_group("gloo", rank=rank, world_size=world)
B = a.batch // world
model = GPT(a.vocab, a.layers, a.heads, a.embd, a.block)
m = torch.nn.parallel.DistributedDataParallel(model)
if a.compress != "none":
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    m.register_comm_hook(None, getattr(default_hooks, a.compress + "_compress_hook"))
opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1)
g = torch.Generator().manual_seed(rank)
x = torch.randint(0, a.vocab, (B, a.block), generator=g); y = torch.randint(0, a.vocab, (B, a.block), generator=g)
ts = []
for i in range(a.warmup + a.steps):
    t0 = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.precision == "bf16"):
        loss = m(x, y)
    loss.backward(); opt.step()
    dist.barrier()
    ts.append(time.perf_counter() - t0)
med = statistics.median(ts[a.warmup:])
if rank == 0:
    print(f"pytorch ddp gloo world={world} {a.precision} gradients {'fp32' if a.compress == 'none' else a.compress}: step median {med * 1e3:.1f} ms -> {a.batch * a.block / med:,.0f} tokens/s")
dist.destroy_process_group()

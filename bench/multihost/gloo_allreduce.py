#!/usr/bin/python3
"""torch.distributed gloo all-reduce of one size across hosts, nccl-tests conventions (busbw = algbw * 2(n-1)/n).
Started once per rank by a launcher that sets RANK, WORLD_SIZE, MASTER_ADDR (jtrain launch does); the torch store
listens on PEER_PORT (the launcher's own store holds MASTER_PORT). Timing as the peers' gloo_bench.py: per iteration a
barrier, then one op, the max over ranks; median of ITERS after 2 warm-up ops.
usage: gloo_allreduce.py BYTES [ITERS]"""
import os, sys, time, statistics
import torch, torch.distributed as dist

size = int(sys.argv[1]); iters = int(sys.argv[2]) if len(sys.argv) > 2 else 10
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
os.environ["MASTER_PORT"] = os.environ.get("PEER_PORT", "29700")
torch.set_num_threads(1)
dist.init_process_group("gloo", rank=rank, world_size=world)
t = torch.ones(size // 4)
for _ in range(2): dist.all_reduce(t)
ts = []
for _ in range(iters):
    dist.barrier(); t0 = time.perf_counter(); dist.all_reduce(t); ts.append(time.perf_counter() - t0)
tt = torch.tensor(ts, dtype=torch.float64); dist.all_reduce(tt, op=dist.ReduceOp.MAX)
med = statistics.median(tt.tolist())
if rank == 0:
    algbw = size / med / 1e9
    print(f"gloo all_reduce {size >> 20} MiB world={world}: {med * 1e3:.1f} ms algbw {algbw:.3f} GB/s busbw {algbw * 2 * (world - 1) / world:.3f} GB/s")
dist.barrier(); dist.destroy_process_group()

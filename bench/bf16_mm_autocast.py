#!/usr/bin/python3
"""bf16 GEMM the way a training step reaches it in PyTorch: torch.mm on fp32 tensors inside
torch.autocast("cpu", dtype=torch.bfloat16), so the casts of A and B to bf16 are timed with the product (jtrain's
Bf16Gemm also takes fp32 A and B and rounds them as it packs). Timed like the peers' sgemm.py (median of >= 3 s).
usage: bf16_mm_autocast.py THREADS      prints "autocast mm n=N: G GFLOP/s median ..." for n in 1024, 2048"""
import sys, time
import torch

nt = int(sys.argv[1]) if len(sys.argv) > 1 else 1
torch.set_num_threads(nt)


def bench(fn, n, min_time=3.0, max_iter=50):
    fn()
    ts = []
    t0 = time.perf_counter()
    while (time.perf_counter() - t0 < min_time or len(ts) < 3) and len(ts) < max_iter:
        t = time.perf_counter(); fn(); ts.append(time.perf_counter() - t)
    ts.sort()
    med = ts[len(ts) // 2]
    return 2 * n ** 3 / med / 1e9, med


for n in (1024, 2048):
    a = torch.randn(n, n); b = torch.randn(n, n)
    def mm():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return torch.mm(a, b)
    assert mm().dtype == torch.bfloat16
    g, med = bench(mm, n)
    print(f"autocast mm n={n}: {g:8.1f} GFLOP/s median ({med * 1e3:.2f} ms)")

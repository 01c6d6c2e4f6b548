#!/usr/bin/python3
"""Activation memory of the PyTorch peer model (gpt_bench.py's nanoGPT-style GPT), fp32 against torch.autocast bf16:
the bytes of the distinct storages autograd saves for backward during one forward (parameters excluded), counted
with torch.autograd.graph.saved_tensors_hooks. This is what jtrain's "activations held" reports for its own model.
usage: saved_bytes_pytorch.py PEERS_DIR --vocab V --layers L --heads H --embd D --block T --batch B"""
import argparse, sys

p = argparse.ArgumentParser()
p.add_argument("peers")
for a, d in (("vocab", 50304), ("layers", 12), ("heads", 12), ("embd", 768), ("block", 256), ("batch", 4)):
    p.add_argument("--" + a, type=int, default=d)
a = p.parse_args()
sys.path.insert(0, a.peers)
import torch  # noqa: E402
from gpt_bench import GPT  # noqa: E402

torch.manual_seed(0)
model = GPT(a.vocab, a.layers, a.heads, a.embd, a.block)
params = {q.data_ptr() for q in model.parameters()}
idx = torch.randint(0, a.vocab, (a.batch, a.block))
tgt = torch.randint(0, a.vocab, (a.batch, a.block))


VIEWS = ("TBackward", "TransposeBackward", "ViewBackward", "ExpandBackward", "PermuteBackward", "UnsafeViewBackward")


def is_weight(t):
    """A parameter, a view of one, or autocast's bf16 copy of one (cached per forward: not an activation)."""
    if t.data_ptr() in params:
        return True
    fn = t.grad_fn
    while fn is not None and fn.name().startswith(VIEWS) and fn.next_functions:
        fn = fn.next_functions[0][0]
    return (fn is not None and fn.name().startswith("ToCopyBackward")
            and any(f is not None and type(f).__name__ == "AccumulateGrad" for f, _ in fn.next_functions))


def saved_bytes(bf16):
    seen = {}

    def pack(t):
        s = t.storage()
        if not is_weight(t) and s.data_ptr() not in seen:
            seen[s.data_ptr()] = s.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = model(idx, tgt)
    del loss
    return sum(seen.values())


fp32, bf16 = saved_bytes(False), saved_bytes(True)
print(f"PyTorch saved for backward: fp32 {fp32 / 2**20:.1f} MiB, autocast bf16 {bf16 / 2**20:.1f} MiB, {bf16 / fp32:.2f}x")

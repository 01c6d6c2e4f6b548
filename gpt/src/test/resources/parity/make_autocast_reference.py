#!/usr/bin/env python3
"""Writes tiny_gpt2_autocast_reference.safetensors: what PyTorch computes for the parity model of
make_reference.py (same weights, same batch) under torch.autocast("cpu", dtype=torch.bfloat16), the setting a
PyTorch user trains with on a CPU that has bf16. Float32 parameters, forward in autocast, loss and backward
outside it, as the PyTorch recipe has it. jtrain's bf16 mode (Autocast.bf16) is compared against it.

Run (Debian's python3-torch 1.13, /usr/bin/python3):  cd gpt/src/test/resources/parity && python3 make_autocast_reference.py

Stored (F32): logits [2, 16, 64], loss [], grad.<jtrain name> for every parameter. Metadata: torch version and
the fp32 loss for orientation.
"""
import torch
import torch.nn.functional as F

from make_reference import VOCAB, build, jtrain_params, write_safetensors


def main():
    model, _, x, y = build()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = model(x)
    loss = F.cross_entropy(logits.float().view(-1, VOCAB), y.view(-1))
    loss.backward()
    with torch.no_grad():
        loss32 = F.cross_entropy(model(x).view(-1, VOCAB), y.view(-1)).item()
    print(f"loss autocast bf16 {loss.item():.6f}  fp32 {loss32:.6f}  (logits dtype {logits.dtype})")
    ref = [("logits", "F32", logits.float()), ("loss", "F32", loss.detach().reshape(()))]
    ref += [("grad." + name, "F32", p.grad) for name, p in jtrain_params(model)]
    write_safetensors("tiny_gpt2_autocast_reference.safetensors", ref, {
        "torch": torch.__version__, "autocast": "cpu bfloat16", "loss_fp32": repr(loss32)})


if __name__ == "__main__":
    main()

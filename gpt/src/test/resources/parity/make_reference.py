#!/usr/bin/env python3
"""Writes the PyTorch reference that jtrain's whole-model parity test compares against.

Run (Debian's python3-torch 1.13; numpy):
    source /work/shared/peers/env.sh   # optional: points torch at OpenBLAS
    cd gpt/src/test/resources/parity && python3 make_reference.py
The output is deterministic for a given torch build (fixed seed); the committed files are the reference.

The model is GPT-2 / nanoGPT written out below in plain torch (no transformers, no nanoGPT import):
    n_layer=2, n_head=2, n_embd=32, block_size=16, vocab_size=64 (a multiple of 64: no padding question),
    bias=True, dropout=0, LayerNorm eps=1e-5, GELU with the tanh approximation (GPT-2's "gelu_new"),
    causal self-attention scaled by 1/sqrt(head_size), lm_head tied to wte (logits = ln_f(x) @ wte^T).
Parameters are drawn in float32 from seed 1234 and made deliberately non-trivial, so a wrongly loaded
or transposed tensor cannot hide: every weight matrix ~ N(0, 0.1^2), every bias ~ N(0, 0.05^2),
LayerNorm weights ~ 1 + N(0, 0.1^2), LayerNorm biases ~ N(0, 0.05^2), wte/wpe ~ N(0, 0.1^2).
The reference forward/backward runs in float64 on exactly those float32 values (upcast), so the stored
results are the "true" answer for the stored weights and a float32 implementation's error is what remains;
values are then stored rounded to float32. For orientation the float32 torch loss is in the metadata.

Files written (all little-endian; safetensors written by hand with struct/json, torch 1.13 has no safetensors):

1. tiny_gpt2.safetensors -- the weights in Hugging Face GPT-2 naming and layout (as openai-community/gpt2
   ships: no "transformer." prefix), F32:
     wte.weight              [64, 32]       token embedding; also the (tied) lm_head weight, not stored again
     wpe.weight              [16, 32]       position embedding
     h.N.ln_1.weight/bias    [32]
     h.N.attn.c_attn.weight  [32, 96]       Conv1D layout (in, out) = TRANSPOSE of torch Linear (out, in);
                                            out columns are [q | k | v], each 32 = 2 heads x 16
     h.N.attn.c_attn.bias    [96]
     h.N.attn.c_proj.weight  [32, 32]       Conv1D (in, out)
     h.N.attn.c_proj.bias    [32]
     h.N.ln_2.weight/bias    [32]
     h.N.mlp.c_fc.weight     [32, 128]      Conv1D (in, out)
     h.N.mlp.c_fc.bias       [128]
     h.N.mlp.c_proj.weight   [128, 32]      Conv1D (in, out)
     h.N.mlp.c_proj.bias     [32]
     h.N.attn.bias           [1, 1, 16, 16] the causal-mask buffer old HF checkpoints carry (lower-triangular
                                            ones); not a parameter -- loaders must skip it
     ln_f.weight/bias        [32]
   for N = 0, 1. Metadata: {"format": "pt"}.

2. config.json -- Hugging Face GPT2Config for the model above (n_positions = n_ctx = 16, vocab_size 64,
   activation_function "gelu_new", layer_norm_epsilon 1e-5, dropouts 0).

3. tiny_gpt2_reference.safetensors:
     tokens      I32 [33]          the data: 2*16+1 random ids in [0, 64)
     x           I32 [2, 16]       inputs:  x[b] = tokens[b*16 : b*16+16]   (ConsecutiveWindows layout)
     y           I32 [2, 16]       targets: y[b] = tokens[b*16+1 : b*16+17]
     logits      F32 [2, 16, 64]   model(x) logits
     loss        F32 []            mean cross-entropy of logits vs y over all 32 positions
     act.emb     F32 [2, 16, 32]   wte[x] + wpe[0..15] (input to block 0)
     act.h0      F32 [2, 16, 32]   output of block 0 (residual stream)
     act.h1      F32 [2, 16, 32]   output of block 1
     act.ln_f    F32 [2, 16, 32]   ln_f(act.h1)
     grad.<jtrain name>  F32       d loss / d parameter for EVERY parameter, named and laid out the jtrain /
                                   nanoGPT way (torch Linear (out, in)), e.g.
                                   grad.transformer.wte.weight [64, 32] (includes the tied lm_head's share),
                                   grad.transformer.h.0.attn.c_attn.weight [96, 32],
                                   grad.transformer.h.1.mlp.c_proj.bias [32], grad.transformer.ln_f.weight [32]
   Metadata: loss_fp64, loss_fp32 (the same model run in float32 by torch), torch version, seed.

4. tiny_tokens.bin -- the 33 tokens as raw uint16 (nanoGPT .bin), for `jtrain eval --data tiny_tokens.bin
   --batch 2 --block 16`, whose loss must match `loss`.
"""
import json
import math
import struct

import torch
import torch.nn as nn
import torch.nn.functional as F

SEED = 1234
N_LAYER, N_HEAD, N_EMBD, BLOCK, VOCAB = 2, 2, 32, 16, 64
B, T = 2, 16


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(N_EMBD, eps=1e-5)
        self.c_attn = nn.Linear(N_EMBD, 3 * N_EMBD)
        self.attn_c_proj = nn.Linear(N_EMBD, N_EMBD)
        self.ln_2 = nn.LayerNorm(N_EMBD, eps=1e-5)
        self.c_fc = nn.Linear(N_EMBD, 4 * N_EMBD)
        self.mlp_c_proj = nn.Linear(4 * N_EMBD, N_EMBD)

    def attn(self, x):
        b, t, c = x.shape
        hs = c // N_HEAD
        q, k, v = self.c_attn(x).split(c, dim=2)
        q = q.view(b, t, N_HEAD, hs).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(b, t, N_HEAD, hs).transpose(1, 2)
        v = v.view(b, t, N_HEAD, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))  # (B, nh, T, T)
        mask = torch.tril(torch.ones(t, t, dtype=torch.bool))
        att = att.masked_fill(~mask, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.attn_c_proj(y)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp_c_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))
        return x


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, N_EMBD)
        self.wpe = nn.Embedding(BLOCK, N_EMBD)
        self.h = nn.ModuleList([Block() for _ in range(N_LAYER)])
        self.ln_f = nn.LayerNorm(N_EMBD, eps=1e-5)

    def forward(self, idx, acts=None):
        t = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(t))
        if acts is not None:
            acts["act.emb"] = x
        for i, block in enumerate(self.h):
            x = block(x)
            if acts is not None:
                acts[f"act.h{i}"] = x
        x = self.ln_f(x)
        if acts is not None:
            acts["act.ln_f"] = x
        return x @ self.wte.weight.t()  # tied lm_head


def jtrain_params(model):
    """(jtrain name, parameter) in nanoGPT order; torch Linear layout (out, in)."""
    out = [("transformer.wte.weight", model.wte.weight), ("transformer.wpe.weight", model.wpe.weight)]
    for i, blk in enumerate(model.h):
        p = f"transformer.h.{i}."
        out += [(p + "ln_1.weight", blk.ln_1.weight), (p + "ln_1.bias", blk.ln_1.bias),
                (p + "attn.c_attn.weight", blk.c_attn.weight), (p + "attn.c_attn.bias", blk.c_attn.bias),
                (p + "attn.c_proj.weight", blk.attn_c_proj.weight), (p + "attn.c_proj.bias", blk.attn_c_proj.bias),
                (p + "ln_2.weight", blk.ln_2.weight), (p + "ln_2.bias", blk.ln_2.bias),
                (p + "mlp.c_fc.weight", blk.c_fc.weight), (p + "mlp.c_fc.bias", blk.c_fc.bias),
                (p + "mlp.c_proj.weight", blk.mlp_c_proj.weight), (p + "mlp.c_proj.bias", blk.mlp_c_proj.bias)]
    out += [("transformer.ln_f.weight", model.ln_f.weight), ("transformer.ln_f.bias", model.ln_f.bias)]
    return out


TRANSPOSED = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")


def write_safetensors(path, tensors, metadata):
    """tensors: list of (name, dtype 'F32'|'I32', torch tensor); written in list order."""
    header = {"__metadata__": metadata} if metadata else {}
    blobs, offset = [], 0
    for name, dtype, t in tensors:
        t = t.detach().contiguous()
        data = (t.to(torch.float32) if dtype == "F32" else t.to(torch.int32)).numpy().astype("<f4" if dtype == "F32" else "<i4").tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for blob in blobs:
            f.write(blob)


def build():
    """The model (float32, deliberately non-trivial weights), tokens, x, y: the same on every call."""
    torch.manual_seed(SEED)
    model = GPT()
    with torch.no_grad():
        for name, p in jtrain_params(model):
            if "ln_" in name and name.endswith(".weight"):
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            elif name.endswith(".bias"):
                p.normal_(0.0, 0.05)
            else:
                p.normal_(0.0, 0.1)
    tokens = torch.randint(0, VOCAB, (B * T + 1,), dtype=torch.int64)
    x = torch.stack([tokens[b * T: b * T + T] for b in range(B)])
    y = torch.stack([tokens[b * T + 1: b * T + T + 1] for b in range(B)])
    return model, tokens, x, y


def main():
    model, tokens, x, y = build()

    # float32 run, for orientation only
    with torch.no_grad():
        loss32 = F.cross_entropy(model(x).view(-1, VOCAB), y.view(-1)).item()

    # float64 reference on the same (float32-representable) weights
    model64 = model.double()
    acts = {}
    logits = model64(x, acts)
    loss = F.cross_entropy(logits.view(-1, VOCAB), y.view(-1))
    loss.backward()
    print(f"loss fp64 {loss.item():.9f}  fp32 {loss32:.9f}  (ln(64) = {math.log(64):.6f})")

    # 1. weights, HF naming and Conv1D layout
    hf = []
    for name, p in jtrain_params(model64):
        hf_name = name[len("transformer."):]
        value = p.detach().t() if hf_name.split(".", 2)[-1] in TRANSPOSED else p.detach()
        hf.append((hf_name, "F32", value))
        if hf_name.endswith("ln_1.weight"):  # mimic old HF checkpoints: mask buffer per block
            hf.append((hf_name.replace("ln_1.weight", "attn.bias"), "F32",
                       torch.tril(torch.ones(BLOCK, BLOCK)).view(1, 1, BLOCK, BLOCK)))
    write_safetensors("tiny_gpt2.safetensors", hf, {"format": "pt"})

    # 2. config
    config = {
        "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "activation_function": "gelu_new",
        "n_layer": N_LAYER, "n_head": N_HEAD, "n_embd": N_EMBD, "n_positions": BLOCK, "n_ctx": BLOCK,
        "vocab_size": VOCAB, "layer_norm_epsilon": 1e-5, "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0,
        "initializer_range": 0.02, "tie_word_embeddings": True, "bos_token_id": VOCAB - 1, "eos_token_id": VOCAB - 1,
    }
    with open("config.json", "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")

    # 3. reference
    ref = [("tokens", "I32", tokens), ("x", "I32", x), ("y", "I32", y),
           ("logits", "F32", logits), ("loss", "F32", loss.detach().reshape(()))]
    ref += [(k, "F32", v) for k, v in acts.items()]
    ref += [("grad." + name, "F32", p.grad) for name, p in jtrain_params(model64)]
    write_safetensors("tiny_gpt2_reference.safetensors", ref, {
        "loss_fp64": repr(loss.item()), "loss_fp32": repr(loss32), "torch": torch.__version__, "seed": str(SEED)})

    # 4. raw uint16 tokens
    with open("tiny_tokens.bin", "wb") as f:
        f.write(struct.pack(f"<{tokens.numel()}H", *tokens.tolist()))


if __name__ == "__main__":
    main()

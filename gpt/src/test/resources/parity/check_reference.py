#!/usr/bin/env python3
"""Independent check of the files make_reference.py wrote: reads tiny_gpt2.safetensors back with a tiny
hand-written safetensors parser and runs GPT-2 in numpy (float64) the Hugging Face way -- Conv1D
computes x @ W + b with W stored (in, out) -- then compares with the stored logits, loss and activations.
Then checks sampled gradient elements of every parameter against float64 central differences, which pins
the grad.* names and their jtrain (Linear (out, in)) layout, including the tied lm_head share in wte.
Guards the layout claims of the script header (if the Conv1D transposes were wrong, this would fail).
Run: python3 check_reference.py   (numpy only)
"""
import json
import math
import struct

import numpy as np


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    out = {}
    for name, e in header.items():
        b, end = e["data_offsets"]
        dt = {"F32": "<f4", "I32": "<i4"}[e["dtype"]]
        out[name] = np.frombuffer(raw[8 + n + b: 8 + n + end], dtype=dt).reshape(e["shape"])
    return out, meta


def layer_norm(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def forward(w, cfg, x_ids, y_ids):
    nh, c = cfg["n_head"], cfg["n_embd"]
    hs = c // nh
    bsz, t = x_ids.shape
    x = w["wte.weight"][x_ids] + w["wpe.weight"][:t]
    acts = {"act.emb": x}
    for i in range(cfg["n_layer"]):
        p = f"h.{i}."
        h = layer_norm(x, w[p + "ln_1.weight"], w[p + "ln_1.bias"])
        qkv = h @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]   # Conv1D: (in, out)
        q, k, v = np.split(qkv, 3, axis=-1)
        q, k, v = (a.reshape(bsz, t, nh, hs).transpose(0, 2, 1, 3) for a in (q, k, v))
        att = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hs)
        att = np.where(np.tril(np.ones((t, t), dtype=bool)), att, -np.inf)
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        y = (att @ v).transpose(0, 2, 1, 3).reshape(bsz, t, c)
        x = x + y @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        h = layer_norm(x, w[p + "ln_2.weight"], w[p + "ln_2.bias"])
        x = x + gelu_tanh(h @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"]) @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
        acts[f"act.h{i}"] = x
    x = layer_norm(x, w["ln_f.weight"], w["ln_f.bias"])
    acts["act.ln_f"] = x
    logits = x @ w["wte.weight"].T
    z = logits - logits.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    loss = -np.take_along_axis(logp, y_ids[..., None], -1).mean()
    return logits, loss, acts


TRANSPOSED = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")


def main():
    w, _ = read_safetensors("tiny_gpt2.safetensors")
    ref, meta = read_safetensors("tiny_gpt2_reference.safetensors")
    cfg = json.load(open("config.json"))
    w = {k: v.astype(np.float64).copy() for k, v in w.items()}
    logits, loss, acts = forward(w, cfg, ref["x"], ref["y"])
    worst = 0.0
    for name, got in list(acts.items()) + [("logits", logits)]:
        err = np.abs(got - ref[name]).max()
        worst = max(worst, err)
        print(f"{name:10s} max|diff| = {err:.3e}")
    print(f"loss numpy {loss:.9f}  stored {float(ref['loss']):.9f}  metadata fp64 {meta['loss_fp64']}")
    assert worst < 1e-5 and abs(loss - float(ref["loss"])) < 1e-6, "reference does not match its own weights"

    # gradients: central differences in float64 on a few elements of each parameter, checked against the
    # stored grad.<jtrain name> in jtrain layout (Linear (out, in): element [o, i] is HF's [i, o])
    rng = np.random.default_rng(0)
    worst_rel = 0.0
    for hf_name in [k for k in w if not k.endswith("attn.bias")]:
        grad = ref["grad.transformer." + hf_name]
        transposed = hf_name.split(".", 2)[-1] in TRANSPOSED
        for _ in range(3):
            j_idx = tuple(int(rng.integers(0, d)) for d in grad.shape)
            hf_idx = j_idx[::-1] if transposed else j_idx
            old = w[hf_name][hf_idx]
            eps = 1e-5
            w[hf_name][hf_idx] = old + eps
            lp = forward(w, cfg, ref["x"], ref["y"])[1]
            w[hf_name][hf_idx] = old - eps
            lm = forward(w, cfg, ref["x"], ref["y"])[1]
            w[hf_name][hf_idx] = old
            fd = (lp - lm) / (2 * eps)
            err = abs(fd - float(grad[j_idx]))
            worst_rel = max(worst_rel, err / max(1e-3, abs(fd)))
            assert err < 1e-6 + 1e-4 * abs(fd), f"{hf_name}{j_idx}: finite difference {fd} vs stored {grad[j_idx]}"
    print(f"gradients: {3 * (len(w) - 2)} elements match central differences, worst rel err {worst_rel:.2e}")
    tokens = np.frombuffer(open("tiny_tokens.bin", "rb").read(), dtype="<u2")
    assert (tokens == ref["tokens"]).all()
    print("OK")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes gpt2_golden.json: token ids from OpenAI's tiktoken (0.14) r50k_base / "gpt2" encoding for texts that
exercise the pre-tokenizer's corners (contractions, digits, runs of spaces and newlines, non-Latin scripts,
emoji, the literal end-of-text string). Gpt2BpeTokenizerGoldenTest checks jtrain against it.

Run: python3 -m pip install tiktoken && python3 make_gpt2_golden.py
Offline, point RANKS at a local copy of r50k_base.tiktoken (e.g. unzipped from the jtokkit jar:
com/knuddels/jtokkit/r50k_base.tiktoken); its SHA-256 must be OpenAI's,
306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930, which load_tiktoken_bpe checks.
"""
import json
import os

import tiktoken
from tiktoken.load import load_tiktoken_bpe
from tiktoken_ext.openai_public import r50k_pat_str

RANKS = os.environ.get("RANKS", "https://openaipublic.blob.core.windows.net/encodings/r50k_base.tiktoken")
enc = tiktoken.Encoding(
    name="r50k_base", pat_str=r50k_pat_str, explicit_n_vocab=50257, special_tokens={"<|endoftext|>": 50256},
    mergeable_ranks=load_tiktoken_bpe(RANKS, expected_hash="306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930"))

TEXTS = [
    "Hello world",
    "It's they're we've I'm you'll he'd DON'T",
    "public static void main(String[] args) {\n\tSystem.out.println(\"hi\");\n}\n",
    "x  =   1;    // four spaces\n\n\n   indented\n",
    "1234567890 3.14159 0x7fffffff 1e-5",
    "naïve café Ünïcödé Straße",
    "日本語のテキスト 中文 한국어 Ελληνικά Русский",
    "emoji 😀👍🏽 and symbols ©®™ → ≠ ∑",
    "a<|endoftext|>b",
    "trailing spaces   ",
    "\r\nwindows\r\nlines\r\n",
    "",
]
cases = [{"text": t, "ids": enc.encode_ordinary(t)} for t in TEXTS]
with open("gpt2_golden.json", "w", encoding="utf-8") as f:  # one case per line
    f.write('{"encoding": "r50k_base", "tiktoken": "%s", "cases": [\n' % tiktoken.__version__)
    f.write(",\n".join(json.dumps(c, ensure_ascii=False) for c in cases))
    f.write("\n]}\n")

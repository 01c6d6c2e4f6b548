#!/usr/bin/env python3
"""Writes python_written.safetensors: a small safetensors file made with only struct/json,
so the Java reader is tested against bytes it did not produce itself.

Run from this directory:  python3 make_python_file.py
SafetensorsReaderTest checks every value below; change both together.

Tensors (data order differs from header order on purpose, to test that the reader sorts by offset):
  f32    F32  [2, 3]  i * 0.25 - 0.5 for i = 0..5
  f16    F16  [6]     1.0, -2.5, 0.125, 65504.0 (max half), 2**-14 (min normal), 2**-24 (min subnormal)
  bf16   BF16 [3]     1.0, -3.0, 0.15625 (top 16 bits of the fp32 pattern)
  f64    F64  [2, 2]  0.1, -0.001, 3.5, 1e10
  i32    I32  [3]     0, -7, 2147483647
  i64    I64  [2]     5, -9
  u8     U8   [4]     0, 1, 200, 255
  scalar F32  []      42.0
  empty  F32  [0]     (no bytes)
Metadata: {"format": "pt", "source": "make_python_file.py"}
"""
import json
import struct


def bf16_bytes(values):
    out = b""
    for v in values:
        bits = struct.unpack("<I", struct.pack("<f", v))[0]
        out += struct.pack("<H", bits >> 16)
    return out


tensors = [  # (name, dtype, shape, bytes), in data order
    ("u8", "U8", [4], bytes([0, 1, 200, 255])),
    ("f64", "F64", [2, 2], struct.pack("<4d", 0.1, -0.001, 3.5, 1e10)),
    ("f16", "F16", [6], struct.pack("<6e", 1.0, -2.5, 0.125, 65504.0, 2.0 ** -14, 2.0 ** -24)),
    ("empty", "F32", [0], b""),
    ("f32", "F32", [2, 3], struct.pack("<6f", *[i * 0.25 - 0.5 for i in range(6)])),
    ("i64", "I64", [2], struct.pack("<2q", 5, -9)),
    ("bf16", "BF16", [3], bf16_bytes([1.0, -3.0, 0.15625])),
    ("scalar", "F32", [], struct.pack("<f", 42.0)),
    ("i32", "I32", [3], struct.pack("<3i", 0, -7, 2147483647)),
]

header = {"__metadata__": {"format": "pt", "source": "make_python_file.py"}}
entries = {}
offset = 0
for name, dtype, shape, data in tensors:
    entries[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
    offset += len(data)
for name in sorted(entries):  # header in name order, data in the order above
    header[name] = entries[name]

raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
raw += b" " * (-len(raw) % 8)
with open("python_written.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(raw)))
    f.write(raw)
    for _, _, _, data in tensors:
        f.write(data)

#!/usr/bin/env python3
"""Writes official_written.safetensors with the reference implementation (the `safetensors` package,
Hugging Face's Rust library; written with 0.8.0), so the Java reader is tested against the format as the
library itself lays it out (its own tensor order, header padding and alignment).

Run:  python3 -m pip install safetensors numpy && python3 make_official_file.py
SafetensorsOfficialFileTest checks every value below; change both together.
"""
import numpy as np
from safetensors.numpy import save_file

tensors = {
    "h.0.attn.c_attn.weight": (np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5) / 4,  # F32 [3, 4]
    "half": np.array([0.5, -1.0, 1024.0], dtype=np.float16),                                # F16 [3]
    "double": np.array([[1e-8], [-2.5]], dtype=np.float64),                                  # F64 [2, 1]
    "ids": np.array([3, 50256, 0, 65535], dtype=np.int64),                                    # I64 [4]
    "i32": np.array([-1, 2, -3], dtype=np.int32),                                            # I32 [3]
    "i16": np.array([-32768, 32767], dtype=np.int16),                                        # I16 [2]
    "u16": np.array([0, 65535], dtype=np.uint16),                                            # U16 [2]
    "i8": np.array([-128, 127], dtype=np.int8),                                              # I8 [2]
    "u8": np.array([7], dtype=np.uint8),                                                     # U8 [1]
    "mask": np.array([True, False, True]),                                                   # BOOL [3]
    "scalar": np.array(3.25, dtype=np.float32),                                              # F32 []
}
save_file(tensors, "official_written.safetensors", metadata={"format": "np", "writer": "safetensors"})

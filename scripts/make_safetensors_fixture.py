#!/usr/bin/python3
"""Writes tests/data/numpy_written.safetensors, the reference file that
tests/test_safetensors.c reads to prove axon opens files it did not write.

The format is written by hand with struct and json, following the
specification at https://github.com/huggingface/safetensors (the Python
`safetensors` package is not in Debian): an 8-byte little-endian header
length N, N bytes of JSON padded with spaces to a multiple of 8, then the
tensors' little-endian bytes, each at the data_offsets its entry names.

Contents: "a" float32 (2, 3) = arange(6); "b" float64 (3,) = [0.5, -1, 2];
metadata {"format": "pt"}.

Run from the repository root:  /usr/bin/python3 scripts/make_safetensors_fixture.py
"""
import json
import os
import struct

import numpy as np

tensors = {
    "a": np.arange(6, dtype="<f4").reshape(2, 3),
    "b": np.array([0.5, -1.0, 2.0], dtype="<f8"),
}
dtype_names = {np.dtype("<f4"): "F32", np.dtype("<f8"): "F64"}

header = {"__metadata__": {"format": "pt"}}
data = b""
for name, array in tensors.items():
    raw = array.tobytes(order="C")
    header[name] = {
        "dtype": dtype_names[array.dtype],
        "shape": list(array.shape),
        "data_offsets": [len(data), len(data) + len(raw)],
    }
    data += raw

header_bytes = json.dumps(header, separators=(",", ":")).encode("utf-8")
header_bytes += b" " * (-len(header_bytes) % 8)

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data",
                    "numpy_written.safetensors")
with open(path, "wb") as f:
    f.write(struct.pack("<Q", len(header_bytes)))
    f.write(header_bytes)
    f.write(data)
print(f"wrote {os.path.normpath(path)}: header {len(header_bytes)} bytes, data {len(data)} bytes")

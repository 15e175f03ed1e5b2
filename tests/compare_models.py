#!/usr/bin/python3
"""compare_models.py: the largest relative difference, max |a - b| / max |b| per
tensor, between two safetensors models; exits 1 when it exceeds the tolerance.
Used by mpi_train.sh and replicas_train.sh to compare ranks with one process.
usage: compare_models.py A B TOLERANCE"""
import json, struct, sys
import numpy as np

def load(path):
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    body = raw[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        dtype = {"F64": "<f8", "F32": "<f4"}[info["dtype"]]
        out[name] = np.frombuffer(body[begin:end], dtype=dtype).astype(np.float64)
    return out

a, b, tolerance = load(sys.argv[1]), load(sys.argv[2]), float(sys.argv[3])
if sorted(a) != sorted(b):
    sys.exit(f"{sys.argv[1]} and {sys.argv[2]} hold different tensors")
worst = max(np.max(np.abs(a[k] - b[k])) / max(np.max(np.abs(b[k])), 1e-300) for k in a)
print(f"  {sys.argv[1]} vs {sys.argv[2]}: largest relative difference {worst:.3g}")
sys.exit(0 if worst <= tolerance else 1)

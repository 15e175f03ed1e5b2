#!/usr/bin/python3
"""Loads a model saved by axon (ax_net_save, which the command line uses to
save models) with nothing but NumPy, and prints its tensors and metadata.

axon writes the safetensors format (https://github.com/huggingface/safetensors),
so `safetensors.numpy.load_file(path)` or `safetensors.torch.load_file(path)`
read it too; this script shows that no package is needed:

    8 bytes          little-endian unsigned length N of the header
    N bytes          JSON: {"__metadata__": {str: str}, name: {"dtype", "shape",
                     "data_offsets": [begin, end]}}, padded with spaces
    the rest         the tensors' bytes, row-major little-endian; offsets count
                     from the first byte after the header

Weights are "layers.N.weight" (out, in) and biases "layers.N.bias" (out), so a
dense layer computes x @ weight.T + bias, as torch.nn.Linear does; the
architecture (widths, activations) is in the metadata.

Usage: /usr/bin/python3 scripts/read_axon_model.py model.safetensors
"""
import json
import struct
import sys

import numpy as np

DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4",
          "I16": "<i2", "I8": "i1", "U8": "u1", "BOOL": "?"}


def load(path):
    """Returns ({name: array}, {key: value}) for the safetensors file at path."""
    with open(path, "rb") as f:
        blob = f.read()
    (header_length,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + header_length])
    metadata = header.pop("__metadata__", {})
    data = memoryview(blob)[8 + header_length:]
    tensors = {}
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        dtype = np.dtype(DTYPES[entry["dtype"]])
        array = np.frombuffer(data[begin:end], dtype=dtype)
        tensors[name] = array.reshape(entry["shape"])
    return tensors, metadata


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    tensors, metadata = load(sys.argv[1])
    print(f"{len(tensors)} tensors, {sum(t.size for t in tensors.values())} values")
    for name, array in tensors.items():
        print(f"  {name:24s} {str(array.dtype):8s} {tuple(array.shape)}")
    print("metadata:")
    for key, value in metadata.items():
        print(f"  {key} = {value}")


if __name__ == "__main__":
    main()

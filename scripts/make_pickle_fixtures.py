#!/usr/bin/env python3
"""make_pickle_fixtures.py: the pickles of tests/test_pickle_python.c, written
by CPython's own pickle module (and NumPy's reduce of its arrays), so that the
restricted reader of src/io/pickle.c is checked against the real writer:

  values_p2/p3/p4.pkl  every scalar kind, integers of each opcode's width
                       (BININT1, BININT2, BININT, LONG1 up to 64 bits), short and
                       long text and bytes (protocol 2 writes bytes through
                       _codecs.encode), tuples of 0 to 4 items, and more than
                       256 memo entries (LONG_BINPUT, LONG_BINGET)
  arrays_p2/p3.pkl     NumPy arrays: int16, float64, bool, uint8, int64, and a
                       Fortran-ordered float32
  refusals.txt         one pickle a line that the reader must refuse:
                       FILE OFFSET WORDS, OFFSET the byte of the opcode it must
                       name (pickletools' position; -1: not checked)

Run with /usr/bin/python3 (NumPy 1.24 writes numpy.core.multiarray); the
values are spelled out again in the C test. Usage:
  /usr/bin/python3 scripts/make_pickle_fixtures.py tests/data/pickle
"""
import os
import pickle
import pickletools
import sys

import numpy as np

out = sys.argv[1]
os.makedirs(out, exist_ok=True)

shared = [[i] for i in range(300)]
values = {
    "none": None, "yes": True, "no": False,
    "small": 7, "medium": 1000, "negative": -5, "big": 70000,
    "long": 2**40, "long_negative": -2**40, "max": 2**63 - 1, "min": -2**63,
    "float": -2.5, "huge_float": 1e300,
    "short_text": "abc", "long_text": "x" * 300, "unicode": "\u00e9\u20ac",
    "short_bytes": b"\x00\xff", "long_bytes": bytes(range(256)) * 2,
    "tuples": ((), (1,), (1, 2), (1, 2, 3), (1, 2, 3, 4)),
    "many": shared, "again": shared[299],
}
arrays = {
    "int16": np.arange(6, dtype=np.int16).reshape(2, 3) - 3,
    "float64": np.array([1.5, -2.0]),
    "bool": np.array([True, False, True]),
    "uint8": np.array([0, 255], dtype=np.uint8),
    "int64": np.array([-(2**62), 2**62], dtype=np.int64),
    "fortran": np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)),
}


def write(name, data):
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)


for protocol in (2, 3, 4):
    write("values_p%d.pkl" % protocol, pickle.dumps(values, protocol=protocol))
for protocol in (2, 3):
    write("arrays_p%d.pkl" % protocol, pickle.dumps(arrays, protocol=protocol))


def first(data, opcode, arg=None):
    """The byte offset of the first opcode of that name (and argument)."""
    for op, value, position in pickletools.genops(data):
        if op.name == opcode and (arg is None or value == arg):
            return position
    raise SystemExit("no %s in the pickle" % opcode)


refusals = [
    # file, pickle, offset, words
    ("arrays_p4.pkl", pickle.dumps(arrays, protocol=4), "STACK_GLOBAL", None,
     "an opcode this reader does not take"),
    ("set_p4.pkl", pickle.dumps({"s": {1, 2}}, protocol=4), "EMPTY_SET", None,
     "an opcode this reader does not take"),
    # protocol 5's header is read (Python 3.8+ writes it); its out-of-band buffers are not
    # (a buffer_callback returning False keeps the buffer out of band: NEXT_BUFFER)
    ("buffer_p5.pkl", pickle.dumps(pickle.PickleBuffer(b"ab"), protocol=5,
                                   buffer_callback=lambda buffer: False), "NEXT_BUFFER", None,
     "an opcode this reader does not take"),
    ("wide_int_p2.pkl", pickle.dumps({"n": 2**70}, protocol=2), "LONG1", 2**70,
     "an integer wider than 64 bits"),
    ("complex_p2.pkl", pickle.dumps({"z": 1 + 2j}, protocol=2), "GLOBAL", None, "not allowed"),
    ("tuple_key_p2.pkl", pickle.dumps({(1, 2): 3}, protocol=2), "SETITEM", None,
     "a dict key that is not a string or an integer"),
    ("big_endian_p2.pkl", pickle.dumps(np.array([1.0], dtype=">f4"), protocol=2), None, None,
     "big-endian"),
    ("float16_p2.pkl", pickle.dumps(np.array([1.0], dtype=np.float16), protocol=2), None, None,
     "numpy.dtype of a type other than bool, integers, float32, float64"),
    ("nine_dims_p2.pkl", pickle.dumps(np.zeros((1,) * 9, dtype=np.uint8), protocol=2), None, None,
     "an array of more than 8 dimensions"),
]
with open(os.path.join(out, "refusals.txt"), "w") as manifest:
    manifest.write("# FILE OFFSET WORDS (scripts/make_pickle_fixtures.py)\n")
    for name, data, opcode, arg, words in refusals:
        write(name, data)
        offset = first(data, opcode, arg) if opcode else -1
        manifest.write("%s %d %s\n" % (name, offset, words))

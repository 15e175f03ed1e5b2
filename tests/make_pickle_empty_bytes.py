#!/usr/bin/python3
"""make_pickle_empty_bytes.py: prints the C arrays of tests/test_pickle_empty_bytes.h,
the pickles of empty bytes as Python 3 writes them at protocols 2 to 5
(protocol 2: __builtin__.bytes() REDUCE, builtins.bytes() with
fix_imports=False; 3 to 5: SHORT_BINBYTES of length 0) and as Python 2 does, a batch with empty
bytes and an empty array (whose data is the same memoized b''), and crafted
ones the reader must refuse: bytes(10), bytes('ab', 'latin1'), bytearray(),
builtins.eval(). Run:
  /usr/bin/python3 tests/make_pickle_empty_bytes.py > tests/test_pickle_empty_bytes.h"""
import codecs
import pickle

import numpy as np


def c_array(name, data):
    print("static const unsigned char %s[] = {%s};" % (name, ",".join(str(x) for x in data)))


class EncodeEmpty:
    """_codecs.encode('', 'latin1'): another writer's way to b''."""
    def __reduce__(self):
        return (codecs.encode, ("", "latin1"))


class BytesCall:
    """bytes(*arguments): a call, not an empty value."""
    def __init__(self, arguments):
        self.arguments = arguments

    def __reduce__(self):
        return (bytes, self.arguments)


class CallOf:
    """function(): any other global."""
    def __init__(self, function):
        self.function = function

    def __reduce__(self):
        return (self.function, ())


print("/* Made by tests/make_pickle_empty_bytes.py (/usr/bin/python3, NumPy %s). */" % np.__version__)
for p in (2, 3, 4, 5):
    c_array("empty_p%d" % p, pickle.dumps(b"", protocol=p))
# Python 2.7's pickle.dumps('', 2) (its bytes is str: SHORT_BINSTRING), as pyenv's
# python2 2.7.18 writes it; kept literal since Debian has no Python 2.
c_array("empty_py2", b"\x80\x02U\x00q\x00.")
c_array("empty_builtins", pickle.dumps(b"", protocol=2, fix_imports=False))
c_array("empty_encode", pickle.dumps(EncodeEmpty(), protocol=2))
c_array("empty_batch", pickle.dumps({"data": [b"", b"ab", b""], "mean": np.zeros((0, 1), np.float32)}, protocol=2))
c_array("bytes_ten", pickle.dumps(BytesCall((10,)), protocol=2))
c_array("bytes_text", pickle.dumps(BytesCall(("ab", "latin1")), protocol=2))
c_array("bytearray_empty", pickle.dumps(bytearray(), protocol=2))
c_array("builtins_eval", pickle.dumps(CallOf(eval), protocol=2, fix_imports=False))

#!/usr/bin/python3
"""fuzz_corpus.py: writes the seed corpora of the libFuzzer targets into
tests/fuzz/corpus/<target>/: a few small valid files per parser and some
interesting broken ones (truncated, absurd sizes, wrong types), so that the
fuzzers start from inputs that reach deep into each parser. Inputs found by
fuzzing (regressions) are kept next to them as crash-* files and are not
touched here. Deterministic; needs numpy (Debian's, /usr/bin/python3): /usr/bin/python3 scripts/fuzz_corpus.py"""
import codecs
import gzip
import io
import json
import os
import pickle
import struct
import subprocess
import tarfile
import tempfile
import zlib

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fuzz", "corpus")


def put(target, name, data):
    folder = os.path.join(ROOT, target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def pair(first, second):
    """Two files in one input: 4-byte little-endian length of the first."""
    return struct.pack("<I", len(first)) + first + second


def gz(data):
    return gzip.compress(data, mtime=0)


# ---------------------------------------------------------------- IDX
def idx_images(n, rows, cols, seed=0):
    pixels = np.random.default_rng(seed).integers(0, 256, n * rows * cols, dtype=np.uint8)
    return struct.pack(">IIII", 0x803, n, rows, cols) + pixels.tobytes()


def idx_labels(n, classes=10):
    return struct.pack(">II", 0x801, n) + bytes(i % classes for i in range(n))


put("idx", "valid_3x4x4", pair(idx_images(3, 4, 4), idx_labels(3)))
put("idx", "valid_gzip", pair(gz(idx_images(5, 2, 3)), gz(idx_labels(5))))
put("idx", "count_mismatch", pair(idx_images(3, 4, 4), idx_labels(2)))
put("idx", "truncated_pixels", pair(idx_images(3, 4, 4)[:30], idx_labels(3)))
put("idx", "absurd_count", pair(struct.pack(">IIII", 0x803, 0xFFFFFFFF, 28, 28), idx_labels(1)))
put("idx", "wrong_magic", pair(struct.pack(">IIII", 0x80D, 1, 2, 2) + bytes(16), idx_labels(1)))
put("idx", "float_type", pair(struct.pack(">IIIII", 0xD03, 1, 2, 2, 0) + bytes(12), idx_labels(1)))

# ---------------------------------------------------------------- CSV
# 3 option bytes: flags (1 header, 2 regression), label column + 2, delimiter.
put("csv", "valid_last", b"\x00\x01\x00" + b"1,2,0\n3,4,1\n5.5,-6e2,2\n")
put("csv", "header_first", b"\x01\x02\x00" + b"y,a,b\n0,1,2\r\n1,3,4\r\n")
put("csv", "regression_tab", b"\x02\x01\x02" + b"0.5\t1\t2.25\n1e-3\t3\t4\n")
put("csv", "semicolon", b"\x00\x01\x01" + b"1;2;3\n4;5;6")
put("csv", "ragged", b"\x00\x01\x00" + b"1,2,3\n4,5\n")
put("csv", "bad_number", b"\x00\x01\x00" + b"1,2,x\n1,nan,1\n")
put("csv", "quoted_empty", b"\x01\x01\x00" + b'"a","b"\n,\n\n')
put("csv", "huge_label", b"\x00\x01\x00" + b"1,99999999999\n2,-1\n")

# ---------------------------------------------------------------- .npy
def npy(array, fortran=False):
    buffer = io.BytesIO()
    np.save(buffer, np.asfortranarray(array) if fortran else array, allow_pickle=False)
    return buffer.getvalue()


x = np.arange(12, dtype=np.float32).reshape(4, 3) / 12
put("npy", "f4_i8", pair(npy(x), npy(np.array([0, 1, 2, 1], dtype=np.int64))))
put("npy", "f8_labels_first", pair(npy(np.array([[1, .5, .25], [0, .1, .2]])), b""))
put("npy", "u1_i4", pair(npy(np.arange(6, dtype=np.uint8).reshape(2, 3)), npy(np.array([1, 0], dtype=np.int32))))
put("npy", "f4_targets", pair(npy(x), npy(np.ones((4, 2), dtype=np.float32))))
put("npy", "big_endian", pair(npy(x.astype(">f4")), npy(np.array([0, 1, 0, 1], dtype=">i2"))))
put("npy", "fortran", pair(npy(x, fortran=True), b""))
put("npy", "v2_header", pair(b"\x93NUMPY\x02\x00" + struct.pack("<I", 54) +
                             b"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2), }".ljust(53) + b"\n" +
                             bytes(8), b""))
put("npy", "absurd_shape", pair(npy(x)[:10] + npy(x)[10:].replace(b"(4, 3)", b"(4000000000000, 3)"), b""))
put("npy", "truncated", pair(npy(x)[:-7], npy(np.array([0, 1, 2, 1], dtype=np.int64))))

# ---------------------------------------------------------------- safetensors
def safetensors(tensors, metadata=None):
    header, blobs, offset = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, array in tensors:
        raw = array.tobytes()
        header[name] = {"dtype": {"float32": "F32", "float64": "F64"}[str(array.dtype)],
                        "shape": list(array.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


rng = np.random.default_rng(1)
model = [("layers.0.weight", rng.standard_normal((4, 3)).astype(np.float32)),
         ("layers.0.bias", np.zeros(4, np.float32)),
         ("layers.1.weight", rng.standard_normal((2, 4)).astype(np.float32)),
         ("layers.1.bias", np.zeros(2, np.float32))]
meta = {"format": "pt", "producer": "fuzz_corpus.py", "input_width": "3",
        "layers": "4:relu,2:softmax", "loss": "cross-entropy"}
put("safetensors", "model_f32", safetensors(model, meta))
put("safetensors", "model_f64", safetensors([(n, a.astype(np.float64)) for n, a in model],
                                            dict(meta, layers="4:tanh,2", loss="mse")))
put("safetensors", "model_huge_layout", safetensors(model, dict(meta, input_width="16777216",
                                                                layers="16777216,16777216")))
conv = [("layers.0.weight", rng.standard_normal((2, 1, 3, 3)).astype(np.float32)),
        ("layers.0.bias", np.zeros(2, np.float32)),
        ("layers.2.weight", rng.standard_normal((3, 8)).astype(np.float32)),
        ("layers.2.bias", np.zeros(3, np.float32))]
put("safetensors", "model_conv", safetensors(conv, {
    "format": "pt", "format_version": "2", "producer": "fuzz_corpus.py", "input_width": "36",
    "input_shape": "6x6x1", "layers": "conv:2x3x3:relu,maxpool:2,3:softmax",
    "loss": "cross-entropy"}))
put("safetensors", "plain_tensors", safetensors([("a", np.arange(6, dtype=np.float64).reshape(2, 3)),
                                                 ("b", np.float32(1.5).reshape(()))]))
put("safetensors", "header_too_long", struct.pack("<Q", 1 << 40) + b"{}")
put("safetensors", "offsets_overlap", struct.pack("<Q", 72) +
    b'{"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"u":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}'[:72] + bytes(8))
put("safetensors", "bf16", struct.pack("<Q", 55) +
    b'{"h":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}}' + bytes(4))

# ---------------------------------------------------------------- JSON
for i, text in enumerate([
        '{"a": [1, 2.5, -3e10, true, false, null], "b": {"c": "d\\u00e9\\ud83d\\ude00"}}',
        '[[[[[[[[[[]]]]]]]]]]', '"\\u0000 nul inside"', '{"a":1,"a":2}',
        '9223372036854775807', '-9223372036854775809', '1.7976931348623157e309',
        '{"__metadata__":{"k":"v"},"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}}',
        '"\\ud800"', '[1,]', '\xef\xbb\xbf{}', '{"x":"\xc3\x28"}', ' \t\r\n0.0e-0 ', '[' * 200]):
    put("json", "seed_%02d" % i, text.encode("latin-1"))

# ---------------------------------------------------------------- layouts
for i, text in enumerate(["128:relu,128:relu,10:softmax", "10", "3:tanh,1:sigmoid", "16777216",
                          "16777217", "4:relu,,2", "1:" + "x" * 70, ",".join(["1"] * 65),
                          "2:identity,2:leaky_relu,2:elu,1", "-1", "0x10:relu", " 5",
                          "conv:32x5x5:relu,maxpool:2,conv:64x5x5,avgpool:2/s1,10:softmax",
                          "conv:8x3x3/s2/p1:tanh,maxpool:3/s2,4", "conv:4x3", "maxpool:2/s",
                          "conv:16777216x1024x1024/s1024/p1023,1", "avgpool:0,2"]):
    put("layers", "seed_%02d" % i, text)

# ---------------------------------------------------------------- images
def png(width, height, color_type, bit_depth=8, palette=None, interlace=0, claim=None):
    """A PNG; claim=(w, h) writes those dimensions in IHDR over real w x h pixels."""
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[color_type]
    row_bytes = (width * channels * bit_depth + 7) // 8
    raw = b"".join(b"\x00" + bytes((x * 37 + y * 11) % 256 for x in range(row_bytes)) for y in range(height))
    if color_type == 3:
        raw = b"".join(b"\x00" + bytes(x % 2 for x in range(row_bytes)) for y in range(height))

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    out = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", *(claim or (width, height)), bit_depth, color_type, 0, 0, interlace))
    if palette:
        out += chunk(b"PLTE", palette)
    return out + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


JPEG_WRITER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <jpeglib.h>
int main(int argc, char **argv) {
    int w = atoi(argv[2]), h = atoi(argv[3]), c = atoi(argv[4]), progressive = atoi(argv[5]);
    FILE *f = fopen(argv[1], "wb");
    struct jpeg_compress_struct info; struct jpeg_error_mgr err;
    info.err = jpeg_std_error(&err); jpeg_create_compress(&info); jpeg_stdio_dest(&info, f);
    info.image_width = w; info.image_height = h; info.input_components = c;
    info.in_color_space = c == 3 ? JCS_RGB : c == 4 ? JCS_CMYK : JCS_GRAYSCALE;
    jpeg_set_defaults(&info); jpeg_set_quality(&info, 50, TRUE);
    if (progressive) jpeg_simple_progression(&info);
    jpeg_start_compress(&info, TRUE);
    unsigned char row[4096];
    while (info.next_scanline < info.image_height) {
        for (int i = 0; i < w * c; i++) row[i] = (unsigned char)(i * 7 + info.next_scanline * 3);
        JSAMPROW r = row; jpeg_write_scanlines(&info, &r, 1);
    }
    jpeg_finish_compress(&info); jpeg_destroy_compress(&info); fclose(f); return 0;
}
"""


def jpegs():
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        source, binary = os.path.join(tmp, "w.c"), os.path.join(tmp, "w")
        with open(source, "w") as f:
            f.write(JPEG_WRITER)
        subprocess.run(["cc", "-O1", source, "-o", binary, "-ljpeg"], check=True)
        for name, args in [("rgb_16x12", (16, 12, 3, 0)), ("grey_9x20", (9, 20, 1, 0)),
                           ("progressive_24x24", (24, 24, 3, 1)), ("cmyk_8x8", (8, 8, 4, 0))]:
            path = os.path.join(tmp, name)
            subprocess.run([binary, path] + [str(a) for a in args], check=True)
            with open(path, "rb") as f:
                out[name] = f.read()
    return out


images = {"png_rgb_7x5": png(7, 5, 2), "png_grey_16bit": png(4, 6, 0, 16), "png_palette": png(5, 5, 3, 8, b"\x00\x00\x00\xff\x80\x10"),
          "png_rgba_interlaced": png(9, 9, 6, interlace=1), "png_grey_alpha_1x1": png(1, 1, 4),
          "png_huge_claim": png(1, 1, 2, claim=(1000000, 1000000))}
images.update(("jpeg_" + k, v) for k, v in jpegs().items())
sof = images["jpeg_rgb_16x12"].index(b"\xff\xc0")
images["jpeg_huge_claim"] = (images["jpeg_rgb_16x12"][:sof + 5] + struct.pack(">HH", 65500, 65500) +
                             images["jpeg_rgb_16x12"][sof + 9:])
images["jpeg_truncated"] = images["jpeg_rgb_16x12"][:len(images["jpeg_rgb_16x12"]) // 2]
for i, (name, data) in enumerate(sorted(images.items())):
    put("image", name, bytes([(i * 13) % 256]) + data)   # first byte: channels and side

# ---------------------------------------------------------------- tars
def tar(members, fmt=tarfile.USTAR_FORMAT):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=fmt) as archive:
        for name, data in members:
            info = tarfile.TarInfo(name)
            if data is None:
                info.type = tarfile.DIRTYPE
                archive.addfile(info)
            else:
                info.size = len(data)
                info.mtime = 0
                archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


small_png, small_jpeg = images["png_rgb_7x5"], images["jpeg_rgb_16x12"]
put("tar", "flat", tar([("a.png", small_png), ("b.jpg", small_jpeg), ("notes.txt", b"hello")]))
put("tar", "folders", tar([("cat/", None), ("cat/1.png", small_png), ("dog/2.JPEG", small_jpeg)]))
inner = tar([("x.png", small_png), ("y.jpg", small_jpeg)])
put("tar", "tar_of_tars", tar([("n01.tar", inner), ("n02.tar", tar([("z.png", small_png)]))]))
put("tar", "pax_long_name", tar([("d/" + "n" * 120 + ".png", small_png)], tarfile.PAX_FORMAT))
put("tar", "gnu_format", tar([("g/" + "m" * 110 + ".jpg", small_jpeg)], tarfile.GNU_FORMAT))
put("tar", "truncated", tar([("a.png", small_png), ("b.png", small_png)])[:700])
put("tar", "nested_truncated", tar([("n.tar", inner[:600])]))

# ---------------------------------------------------------------- pickles
# Seeds beside the committed cuda-convnet2 batches of tests/fuzz/corpus/pickle:
# empty bytes as Python 3 writes them (protocol 2: __builtin__.bytes() or, with
# fix_imports=False, builtins.bytes(); 3 to 5: SHORT_BINBYTES), an empty array
# whose data is that memoized b'', and calls of bytes the reader refuses.

class Reduced:
    """Pickles as function(*arguments): a crafted call."""
    def __init__(self, function, arguments):
        self.function, self.arguments = function, arguments

    def __reduce__(self):
        return (self.function, self.arguments)


for protocol in (2, 3, 4, 5):
    put("pickle", "empty_bytes_p%d" % protocol, pickle.dumps(b"", protocol=protocol))
put("pickle", "empty_bytes_builtins", pickle.dumps(b"", protocol=2, fix_imports=False))
put("pickle", "empty_bytes_encode", pickle.dumps(Reduced(codecs.encode, ("", "latin1")), protocol=2))
put("pickle", "empty_batch", pickle.dumps({"data": [b"", b"\xff\xd8ab", b""], "labels": [[0], [1], [0]],
                                           "mean": np.zeros((0, 1), np.float32)}, protocol=2))
put("pickle", "bytes_call", pickle.dumps(Reduced(bytes, (10,)), protocol=2))
put("pickle", "bytearray_empty", pickle.dumps(bytearray(), protocol=2))
put("pickle", "empty_bytes_py2", b"\x80\x02U\x00q\x00.")  # Python 2.7's pickle.dumps('', 2)

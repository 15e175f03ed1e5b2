#!/usr/bin/env bash
# prep_jpeg.sh: JPEG batches (issue 31, docs/prep.md "JPEG batches").
# Photographs in (python3-scipy's face.dat and python-matplotlib-data's
# grace_hopper.jpg, cut into 60 crops as bench/b6.sh does), then:
# - `axon prep --format jpeg`: the files parsed by an independent reader
#   (Python, struct + Pillow's libjpeg) agree with meta.json, the mean image
#   is the mean of Pillow's decode of the JPEGs, the batches are at most 0.3x
#   the raw ones at quality 90, a rerun keeps them, damaged files are refused
#   naming the file and the field;
# - training from the JPEG batches (streamed, decoded by the decode pool,
#   with random crops, mirroring and the mean image; and loaded whole) gives
#   the model trained from raw batches holding the same pixels, bit for bit:
#   those raw batches are made here by Python, decoding the JPEGs with
#   Pillow's libjpeg, so the pixels come from an independent decoder;
# - `axon eval --views 10` equals a NumPy computation of cuda-convnet2's
#   multiview test (4 corners + centre, each mirrored, softmax averaged) from
#   the model's weights and the decoded pixels, and `--views 1` the centre
#   crop's; both printed, with what the 10 views add; `axon predict --views`
#   writes one row per image with those averaged probabilities.
# Usage: prep_jpeg.sh AXON WORKDIR
set -u
axon=$1
work=$2
python=/usr/bin/python3
face=/usr/lib/python3/dist-packages/scipy/misc/face.dat
hopper=/usr/share/matplotlib/mpl-data/sample_data/grace_hopper.jpg
for f in "$face" "$hopper"; do
    [ -f "$f" ] || { echo "skipped: $f is missing (apt-get install python3-scipy python-matplotlib-data)"; exit 77; }
done
"$python" -c "import numpy, PIL" 2>/dev/null || { echo "skipped: no numpy or Pillow"; exit 77; }
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
expect() { # expect STATUS DESCRIPTION -- command...
    local want=$1 what=$2; shift 3
    "$@" >"$work/stdout" 2>"$work/stderr"
    local got=$?
    [ "$got" -eq "$want" ] || fail "$what: exit $got, expected $want ($(cat "$work/stderr"))"
}
contains() { grep -qF -- "$2" "$work/$1" || fail "$1 lacks '$2': $(cat "$work/$1")"; }

rm -rf "$work"
mkdir -p "$work"
"$python" - "$face" "$hopper" "$work/in" 60 <<'PY' || exit 1
import bz2, os, random, sys
import numpy as np
from PIL import Image
face_path, hopper_path, out, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
face = Image.fromarray(np.frombuffer(bz2.decompress(open(face_path, "rb").read()),
                                     np.uint8).reshape(768, 1024, 3))
hopper = Image.open(hopper_path).convert("RGB")
rng = random.Random(6)
for i in range(count):
    photo = face if i % 3 else hopper
    w, h = photo.size
    short = rng.randint(300, min(w, h))
    long = min(int(short * rng.uniform(1.2, 1.5)), max(w, h))
    cw, ch = (long, short) if w >= h else (short, long)
    x, y = rng.randint(0, w - cw), rng.randint(0, h - ch)
    crop = photo.crop((x, y, x + cw, y + ch))
    label = f"{out}/class{i % 3}"
    os.makedirs(label, exist_ok=True)
    crop.save(f"{label}/{i:05d}.jpg", quality=rng.randint(75, 95))
PY

expect 0 "prep raw" -- "$axon" prep --input "$work/in" --out "$work/raw" --size 64 --batch 16 --quiet
expect 0 "prep jpeg" -- "$axon" prep --input "$work/in" --out "$work/jpeg" --size 64 --batch 16 --format jpeg --quality 90 --threads 2 --quiet
contains stdout "60 images written, 0 skipped"
expect 0 "prep jpeg, one thread" -- "$axon" prep --input "$work/in" --out "$work/jpeg1" --size 64 --batch 16 --format jpeg --quality 90 --threads 1 --quiet
for f in "$work"/jpeg/batch_*; do
    cmp -s "$f" "$work/jpeg1/$(basename "$f")" || fail "$(basename "$f") differs between 1 and 2 threads"
done
"$python" - "$work/jpeg" "$work/raw" <<'PY' || fail "the JPEG batches as Python reads them"
import io, json, struct, sys, os
import numpy as np
from PIL import Image
out, raw = sys.argv[1], sys.argv[2]
meta = json.load(open(out + "/meta.json"))
assert meta["batch_format"] == "jpeg" and meta["jpeg_quality"] == 90, meta
total = np.zeros((64, 64, 3)); n = 0; jpeg_bytes = 0
for b in meta["batches"]:
    assert b["data"].endswith(".jpegs"), b
    data = open(out + "/" + b["data"], "rb").read()
    magic, version, header, k, side, channels, quality = struct.unpack_from("<8sIIqqqq", data, 0)
    assert (magic, version, header, side, channels, quality) == (b"AXJPEGB\n", 1, 48, 64, 3, 90)
    assert k == b["images"] == len(np.load(out + "/" + b["labels"]))
    offsets = struct.unpack_from("<%dQ" % (k + 1), data, 48)
    assert offsets[0] == 48 + 8 * (k + 1) and offsets[-1] == len(data)
    for i in range(k):
        image = np.asarray(Image.open(io.BytesIO(data[offsets[i]:offsets[i + 1]])))
        assert image.shape == (64, 64, 3)
        total += image; n += 1
    jpeg_bytes += len(data)
mean = np.load(out + "/mean.npy")
assert n == 60 and np.abs(mean - (total / n).astype(np.float32)).max() < 1e-4, np.abs(mean - total / n).max()
raw_bytes = sum(os.path.getsize(raw + "/" + b["data"]) for b in json.load(open(raw + "/meta.json"))["batches"])
print("jpeg / raw bytes: %d / %d = %.3f" % (jpeg_bytes, raw_bytes, jpeg_bytes / raw_bytes))
assert jpeg_bytes <= 0.3 * raw_bytes
PY
expect 0 "prep jpeg rerun" -- "$axon" prep --input "$work/in" --out "$work/jpeg" --size 64 --batch 16 --format jpeg --quality 90
contains stdout "0 batches written, 4 kept from an earlier run"
expect 1 "prep jpeg at another quality into the same folder" -- "$axon" prep --input "$work/in" --out "$work/jpeg" --size 64 --batch 16 --format jpeg --quality 80
contains stderr "format, quality"
expect 2 "--quality without --format jpeg" -- "$axon" prep --input "$work/in" --out "$work/x" --quality 80
expect 2 "--format gif" -- "$axon" prep --input "$work/in" --out "$work/x" --format gif
expect 2 "--quality 101" -- "$axon" prep --input "$work/in" --out "$work/x" --format jpeg --quality 101

# Raw batches of the same pixels, decoded by Pillow, the same labels and mean.
"$python" - "$work/jpeg" "$work/decoded" <<'PY' || fail "raw batches from the JPEGs"
import io, json, os, shutil, struct, sys
import numpy as np
from PIL import Image
src, out = sys.argv[1], sys.argv[2]
os.makedirs(out)
meta = json.load(open(src + "/meta.json"))
for b in meta["batches"]:
    data = open(src + "/" + b["data"], "rb").read()
    k = struct.unpack_from("<q", data, 16)[0]
    offsets = struct.unpack_from("<%dQ" % (k + 1), data, 48)
    images = np.stack([np.asarray(Image.open(io.BytesIO(data[offsets[i]:offsets[i + 1]])))
                       for i in range(k)]).astype(np.uint8)
    b["data"] = b["data"].replace(".jpegs", ".npy")
    np.save(out + "/" + b["data"], images)
    shutil.copy(src + "/" + b["labels"], out + "/" + b["labels"])
shutil.copy(src + "/mean.npy", out + "/mean.npy")
meta["batch_format"] = "raw"
del meta["jpeg_quality"]
json.dump(meta, open(out + "/meta.json", "w"), indent=1)
PY
same_weights() { # same_weights A B: every tensor's bytes equal
    "$python" - "$1" "$2" <<'PY'
import json, struct, sys
def tensors(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    return {k: raw[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]]
            for k, v in header.items() if k != "__metadata__"}
a, b = tensors(sys.argv[1]), tensors(sys.argv[2])
assert a.keys() == b.keys() and a, (a.keys(), b.keys())
bad = [k for k in a if a[k] != b[k]]
assert not bad, "tensors differ: %s" % bad
PY
}
augmented=(--crop 56 --mirror --subtract-mean --layers 16:relu,3:softmax --lr 0.01 --batch 8
           --epochs 3 --seed 7)
expect 0 "train streamed from JPEG batches" -- "$axon" train --data "batches:$work/jpeg" \
    "${augmented[@]}" --out "$work/jpeg.safetensors"
contains stdout "60 rows, 9408 features, 3 classes"
expect 0 "train streamed from raw batches of the same pixels" -- "$axon" train \
    --data "batches:$work/decoded" "${augmented[@]}" --out "$work/decoded.safetensors"
same_weights "$work/jpeg.safetensors" "$work/decoded.safetensors" ||
    fail "streamed, augmented: the model from JPEG batches differs from the raw one"
expect 0 "train loaded whole from JPEG batches" -- "$axon" train --data "batches:$work/jpeg" \
    --stream off --layers 16:relu,3:softmax --lr 0.01 --batch 8 --epochs 2 --out "$work/jw.safetensors"
expect 0 "train loaded whole from raw batches" -- "$axon" train --data "batches:$work/decoded" \
    --stream off --layers 16:relu,3:softmax --lr 0.01 --batch 8 --epochs 2 --out "$work/dw.safetensors"
same_weights "$work/jw.safetensors" "$work/dw.safetensors" ||
    fail "loaded whole: the model from JPEG batches differs from the raw one"
expect 0 "eval on JPEG batches" -- "$axon" eval --model "$work/jpeg.safetensors" \
    --data "batches:$work/jpeg" --crop 56 --subtract-mean
grep -v "seconds\|rows/s\|^data" "$work/stdout" >"$work/eval_jpeg"
expect 0 "eval on raw batches" -- "$axon" eval --model "$work/jpeg.safetensors" \
    --data "batches:$work/decoded" --crop 56 --subtract-mean
grep -v "seconds\|rows/s\|^data" "$work/stdout" >"$work/eval_raw"
cmp -s "$work/eval_jpeg" "$work/eval_raw" || fail "eval differs: $(diff "$work/eval_jpeg" "$work/eval_raw")"

# Multiview test against a hand computation in float64 NumPy.
for views in 1 10; do
    expect 0 "eval --views $views" -- "$axon" eval --model "$work/jpeg.safetensors" \
        --data "batches:$work/jpeg" --crop 56 --subtract-mean --views $views --json
    cp "$work/stdout" "$work/views$views.json"
    expect 0 "predict --views $views" -- "$axon" predict --model "$work/jpeg.safetensors" \
        --data "batches:$work/jpeg" --crop 56 --subtract-mean --views $views --out "$work/predict$views.csv"
done
"$python" - "$work/jpeg.safetensors" "$work/decoded" "$work/views1.json" "$work/views10.json" \
    "$work/predict1.csv" "$work/predict10.csv" <<'PY' || fail "--views against NumPy"
import json, struct, sys
import numpy as np
model, data, one, ten, predict_one, predict_ten = sys.argv[1:]
raw = open(model, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
w = {k: np.frombuffer(raw[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]],
                      "<f4").reshape(v["shape"]).astype(np.float64)
     for k, v in header.items() if k != "__metadata__"}
meta = json.load(open(data + "/meta.json"))
mean = np.load(data + "/mean.npy").astype(np.float32)
images = np.concatenate([np.load(data + "/" + b["data"]) for b in meta["batches"]])
labels = np.concatenate([np.load(data + "/" + b["labels"]) for b in meta["batches"]])
S, c = 64, 56
def probs(x):  # (rows, 56, 56, 3) float32 -> softmax (rows, 3)
    h = np.maximum(x.reshape(len(x), -1).astype(np.float64) @ w["layers.0.weight"].T + w["layers.0.bias"], 0)
    z = h @ w["layers.1.weight"].T + w["layers.1.bias"]
    z = np.exp(z - z.max(1, keepdims=True))
    return z / z.sum(1, keepdims=True)
x = (images.astype(np.float32) - mean) * np.float32(1 / 255)
starts = [(0, 0), (0, S - c), (S - c, 0), (S - c, S - c), ((S - c) // 2, (S - c) // 2)]
views = [x[:, t:t + c, l:l + c] for t, l in starts]
views += [v[:, :, ::-1] for v in views]
p10 = np.mean([probs(v) for v in views], axis=0)
p1 = probs(views[4])
for p, path, name in ((p1, one, "1 view"), (p10, ten, "10 views")):
    got = json.load(open(path))
    acc = np.mean(p.argmax(1) == labels)
    loss = -np.mean(np.log(p[np.arange(len(p)), labels]))
    print("%s: accuracy %.4f (axon %.4f), loss %.6f (axon %.6f)" % (name, acc, got["accuracy"], loss, got["loss"]), flush=True)
    assert abs(acc - got["accuracy"]) < 1e-9 and abs(loss - got["loss"]) < 1e-5 * max(1, loss)
# axon predict --views: one row per image, the averaged probabilities (%.6g) and their argmax
for p, path in ((p1, predict_one), (p10, predict_ten)):
    lines = open(path).read().split("\n")
    assert lines[0] == "predicted,p0,p1,p2" and lines[-1] == "", lines[0]
    rows = np.array([[float(v) for v in line.split(",")] for line in lines[1:-1]])
    assert rows.shape == (len(p), 4), rows.shape
    assert np.abs(rows[:, 1:] - p).max() < 1e-5, np.abs(rows[:, 1:] - p).max()
    assert np.array_equal(rows[:, 0].astype(int), p.argmax(1))
PY
expect 2 "--views 10 without --crop" -- "$axon" eval --model "$work/jpeg.safetensors" \
    --data "batches:$work/jpeg" --views 10
expect 2 "--views 5" -- "$axon" eval --model "$work/jpeg.safetensors" \
    --data "batches:$work/jpeg" --crop 56 --views 5
expect 2 "predict --views 10 without --crop" -- "$axon" predict --model "$work/jpeg.safetensors" \
    --data "batches:$work/jpeg" --views 10
contains stderr "--views 10 takes crops of streamed batches"

# Damage: a truncated JPEG batch and a broken image are refused, naming the file.
cp -r "$work/jpeg" "$work/cut"
head -c 30000 "$work/jpeg/batch_00001.jpegs" >"$work/cut/batch_00001.jpegs"
expect 1 "train on a truncated JPEG batch" -- "$axon" train --data "batches:$work/cut" \
    --layers 3:softmax --epochs 1 --batch 8
contains stderr "batch_00001.jpegs"
cp -r "$work/jpeg" "$work/broken"
"$python" - "$work/broken/batch_00002.jpegs" <<'PY'
import struct, sys
data = bytearray(open(sys.argv[1], "rb").read())
start = struct.unpack_from("<Q", data, 48 + 8 * 3)[0]
data[start + 200:start + 400] = b"\xff" * 200  # inside image 3's entropy-coded data
open(sys.argv[1], "wb").write(data)
PY
expect 1 "train on a damaged JPEG" -- "$axon" train --data "batches:$work/broken" \
    --layers 3:softmax --epochs 1 --batch 8
contains stderr "batch_00002.jpegs: image 3"
[ "$failures" -eq 0 ] && echo "prep_jpeg: all passed"
[ "$failures" -eq 0 ]

#!/usr/bin/env bash
# prep_cuda_convnet2.sh: cuda-convnet2's batch folders (issue 31, docs/prep.md
# "cuda-convnet2's batch folders"). The folders are made by Python + NumPy's
# pickle at protocol 2, as cuda-convnet2's scripts wrote them:
# - a raw folder (data (num_vis, n) uint8, each column an image in channel,
#   row, column order; one batch Fortran-ordered; labels a list of ints;
#   batches.meta with label_names, num_vis, data_mean) converted by
#   `axon prep --from-cuda-convnet2` gives the pixels, labels and mean image
#   NumPy computes; converted back by `--format cuda-convnet2`, Python's pickle
#   loads dicts equal to the originals; and back again, byte-identical batches;
# - a JPEG folder (data a list of JPEG byte strings made by Pillow, labels
#   lists of one int, one batch a folder of sub-batches as make-data.py
#   writes): --format jpeg keeps the JPEG bytes, --format raw gives Pillow's
#   decode of them;
# - axon -> cuda-convnet2 -> axon of `axon prep` output, raw and JPEG: every
#   batch file, meta.json and mean.npy byte-identical;
# - refusals naming the file, exit 1, no output folder left: a pickle that
#   calls os.system (which must not run), a truncated data_batch, a 'data'
#   whose shape disagrees with num_vis, labels of another length, a label
#   outside label_names, a batch number past 99999; a non-empty output folder;
#   batches.meta without a dict, num_vis, num_colors, label_names or with
#   them out of range, a bad color_pca or jpeg_quality; data_batch files
#   without data or labels, with data of another type, a JPEG that is not
#   one, no images; no data_batch files; and axon folders whose files
#   disagree with meta.json on the way to cuda-convnet2.
# Usage: prep_cuda_convnet2.sh AXON WORKDIR
set -u
axon=$1
work=$2
python=${AXON_TEST_PYTHON:-/usr/bin/python3}
"$python" -c "import numpy, PIL" 2>/dev/null || { echo "skipped: no numpy or Pillow"; exit 77; }
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
run() { # run DESCRIPTION -- command...: must succeed
    local what=$1; shift 2
    "$@" >"$work/stdout" 2>"$work/stderr" || fail "$what: exit $? ($(cat "$work/stderr"))"
}
refused() { # refused DESCRIPTION TEXT OUT -- command...: exit 1, TEXT in stderr, OUT absent
    local what=$1 text=$2 out=$3; shift 4
    "$@" >"$work/stdout" 2>"$work/stderr"
    local got=$?
    [ "$got" -eq 1 ] || fail "$what: exit $got, expected 1 ($(cat "$work/stderr"))"
    grep -qF -- "$text" "$work/stderr" || fail "$what: stderr lacks '$text': $(cat "$work/stderr")"
    [ ! -e "$out" ] || fail "$what: left $out behind: $(ls "$out")"
}
same_folders() { # same_folders A B WHAT: every file of A but plan.json is in B, byte for byte
    local a=$1 b=$2 what=$3 f
    for f in "$a"/*; do
        [ "$(basename "$f")" = plan.json ] && continue
        cmp -s "$f" "$b/$(basename "$f")" || fail "$what: $(basename "$f") differs"
    done
    [ "$(ls "$a" | grep -v plan.json)" = "$(ls "$b")" ] || fail "$what: other files: $(ls "$b")"
}

rm -rf "$work"
mkdir -p "$work"
cd "$work" || exit 1

# ---------------------------------------------------------------- fixtures
"$python" - <<'PY' || exit 1
import io, os, pickle
import numpy as np
from PIL import Image

rng = np.random.default_rng(31)
S, C = 8, 3
names = ["airplane", "automobile", "bird", "cat"]
images = {1: 5, 2: 5, 3: 3}
os.makedirs("cc2", exist_ok=True)
everything = []
for n, k in images.items():
    pixels = rng.integers(0, 256, size=(k, C, S, S), dtype=np.uint8)   # (n, C, S, S)
    data = pixels.reshape(k, C * S * S).T.copy()                         # (num_vis, n)
    if n == 2:
        data = np.asfortranarray(data)
    labels = [int(x) for x in rng.integers(0, len(names), size=k)]
    with open(f"cc2/data_batch_{n}", "wb") as f:
        pickle.dump({"data": data, "labels": labels}, f, protocol=2)
    everything.append(data)
mean = np.concatenate(everything, axis=1).astype(np.float64).mean(axis=1).reshape(-1, 1)
with open("cc2/batches.meta", "wb") as f:
    pickle.dump({"label_names": names, "num_vis": C * S * S, "data_mean": mean}, f, protocol=2)

# The JPEG form of cuda-convnet2's ILSVRC batches: S = 16, Pillow's JPEGs.
S = 16
os.makedirs("cc2j/data_batch_0", exist_ok=True)
def jpegs(k):
    out = []
    for i in range(k):
        y, x = np.mgrid[0:S, 0:S]
        img = np.stack([(x * 16 + i * 7) % 256, (y * 16) % 256, ((x + y) * 8) % 256], -1)
        buf = io.BytesIO()
        Image.fromarray(img.astype(np.uint8)).save(buf, "JPEG", quality=85)
        out.append(buf.getvalue())
    return out
sub = [jpegs(3), jpegs(2)]
for m, part in enumerate(sub):
    with open(f"cc2j/data_batch_0/data_batch_0.{m}", "wb") as f:
        pickle.dump({"data": part, "labels": [[m + i % 2] for i in range(len(part))]}, f, protocol=2)
with open("cc2j/data_batch_1", "wb") as f:
    pickle.dump({"data": jpegs(4), "labels": [[2]] * 4}, f, protocol=2)
with open("cc2j/batches.meta", "wb") as f:
    pickle.dump({"label_names": ["n01", "n02", "n03"], "num_vis": S * S * 3,
                 "batch_size": 5}, f, protocol=2)

# Photographs for axon prep: 40 PNGs of 20 x 24, 3 labels.
for i in range(40):
    d = f"photos/label{i % 3}"
    os.makedirs(d, exist_ok=True)
    Image.fromarray(rng.integers(0, 256, size=(20, 24, 3), dtype=np.uint8)).save(f"{d}/{i:03d}.png")
PY

# ------------------------------------------------ raw cuda-convnet2 folders
run "cc2 -> axon" -- "$axon" prep --from-cuda-convnet2 cc2 --out ax --quiet
grep -qF "13 images in 3 batches" stdout || fail "cc2 -> axon summary: $(cat stdout)"
"$python" - <<'PY' || fail "cc2 -> axon: the batches are not cuda-convnet2's pixels"
import json, pickle
import numpy as np
meta = json.load(open("ax/meta.json"))
assert meta["labels"] == ["airplane", "automobile", "bird", "cat"], meta["labels"]
assert meta["image_size"] == 8 and meta["channels"] == 3 and meta["batch_format"] == "raw"
assert [b["data"] for b in meta["batches"]] == ["batch_00001.npy", "batch_00002.npy", "batch_00003.npy"]
every = []
for n in (1, 2, 3):
    d = pickle.load(open(f"cc2/data_batch_{n}", "rb"))
    x = np.load(f"ax/batch_{n:05d}.npy")
    y = np.load(f"ax/batch_{n:05d}_labels.npy")
    want = d["data"].T.reshape(-1, 3, 8, 8).transpose(0, 2, 3, 1)
    assert x.dtype == np.uint8 and np.array_equal(x, want), n
    assert y.dtype == np.int32 and y.tolist() == d["labels"], n
    every.append(x)
every = np.concatenate(every)
mean = np.load("ax/mean.npy")
assert np.array_equal(mean, (every.astype(np.float64).sum(0) / len(every)).astype(np.float32))
assert meta["counts"] == np.bincount(np.concatenate(
    [np.load(f"ax/batch_{n:05d}_labels.npy") for n in (1, 2, 3)]), minlength=4).tolist()
PY

run "axon -> cc2" -- "$axon" prep --input ax --out cc2b --format cuda-convnet2 --quiet
"$python" - <<'PY' || fail "cc2 -> axon -> cc2: Python's pickle does not load the originals"
import pickle
import numpy as np
for encoding in ("bytes", "latin1"):  # Python 2 str, as cuda-convnet2 wrote
    for n in (1, 2, 3):
        a = pickle.load(open(f"cc2/data_batch_{n}", "rb"))
        b = pickle.load(open(f"cc2b/data_batch_{n}", "rb"), encoding=encoding)
        assert sorted(b) == ["data", "labels"], sorted(b)
        assert b["data"].dtype == np.uint8 and b["data"].shape == a["data"].shape
        assert np.array_equal(a["data"], b["data"]) and a["labels"] == b["labels"], n
    a = pickle.load(open("cc2/batches.meta", "rb"))
    b = pickle.load(open("cc2b/batches.meta", "rb"), encoding=encoding)
    assert b["label_names"] == a["label_names"] and b["num_vis"] == a["num_vis"]
    assert b["img_size"] == 8 and b["num_colors"] == 3 and b["batch_size"] == 5
    assert b["data_mean"].shape == (192, 1) and b["data_mean"].dtype == np.float64
    assert np.array_equal(b["data_mean"], a["data_mean"])
PY
run "cc2 -> axon again" -- "$axon" prep --from-cuda-convnet2 cc2b --out ax2 --quiet
same_folders ax ax2 "cc2 -> axon -> cc2 -> axon"

# ----------------------------------------------- JPEG cuda-convnet2 folders
run "cc2 JPEG -> axon jpeg" -- "$axon" prep --from-cuda-convnet2 cc2j --out axj --format jpeg --quiet
run "cc2 JPEG -> axon raw" -- "$axon" prep --from-cuda-convnet2 cc2j --out axr --quiet
"$python" - <<'PY' || fail "cc2 JPEG -> axon: not the JPEGs or not their pixels"
import io, json, pickle, struct
import numpy as np
from PIL import Image
parts = [pickle.load(open(f"cc2j/data_batch_0/data_batch_0.{m}", "rb")) for m in (0, 1)]
parts = {0: parts, 1: [pickle.load(open("cc2j/data_batch_1", "rb"))]}
meta = json.load(open("axj/meta.json"))
assert meta["batch_format"] == "jpeg" and meta["jpeg_quality"] == 0 and meta["image_size"] == 16
assert meta["batch_size"] == 5 and meta["labels"] == ["n01", "n02", "n03"]
for n, ps in parts.items():
    jpegs = [j for p in ps for j in p["data"]]
    labels = [l[0] for p in ps for l in p["labels"]]
    data = open(f"axj/batch_{n:05d}.jpegs", "rb").read()
    k = struct.unpack_from("<q", data, 16)[0]
    offsets = struct.unpack_from("<%dQ" % (k + 1), data, 48)
    assert [data[offsets[i]:offsets[i + 1]] for i in range(k)] == jpegs, n
    assert np.load(f"axj/batch_{n:05d}_labels.npy").tolist() == labels
    assert np.load(f"axr/batch_{n:05d}_labels.npy").tolist() == labels
    pillow = np.stack([np.asarray(Image.open(io.BytesIO(j))) for j in jpegs])
    assert np.array_equal(np.load(f"axr/batch_{n:05d}.npy"), pillow), n
assert open("axj/mean.npy", "rb").read() == open("axr/mean.npy", "rb").read()
PY
run "axon jpeg -> cc2" -- "$axon" prep --input axj --out cc2j2 --format cuda-convnet2 --quiet
"$python" - <<'PY' || fail "cc2 JPEG -> axon -> cc2: not the original JPEGs"
import pickle
a = pickle.load(open("cc2j/data_batch_1", "rb"))
b = pickle.load(open("cc2j2/data_batch_1", "rb"), encoding="bytes")
assert a == b, (a["labels"], b["labels"])
b0 = pickle.load(open("cc2j2/data_batch_0", "rb"), encoding="bytes")
a0 = [pickle.load(open(f"cc2j/data_batch_0/data_batch_0.{m}", "rb")) for m in (0, 1)]
assert b0["data"] == a0[0]["data"] + a0[1]["data"]
assert b0["labels"] == a0[0]["labels"] + a0[1]["labels"]
PY

# --------------------------------------- axon prep -> cuda-convnet2 -> axon
run "prep raw" -- "$axon" prep --input photos --out p --size 16 --batch 16 --quiet
run "prep jpeg" -- "$axon" prep --input photos --out pj --size 16 --batch 16 --format jpeg --quality 80 --quiet
run "raw -> cc2" -- "$axon" prep --input p --out pc --format cuda-convnet2 --quiet
run "cc2 -> raw" -- "$axon" prep --from-cuda-convnet2 pc --out p2 --quiet
same_folders p p2 "axon -> cc2 -> axon (raw)"
run "jpeg -> cc2" -- "$axon" prep --input pj --out pjc --format cuda-convnet2 --quiet
run "cc2 -> jpeg" -- "$axon" prep --from-cuda-convnet2 pjc --out pj2 --format jpeg --quiet
same_folders pj pj2 "axon -> cc2 -> axon (jpeg)"
# raw pixels encoded at the quality asked, then read like any JPEG batches
run "cc2 raw -> axon jpeg" -- "$axon" prep --from-cuda-convnet2 pc --out pcj --format jpeg --quality 70 --quiet
grep -qF '"jpeg_quality": 70' pcj/meta.json || fail "cc2 raw -> axon jpeg: quality: $(cat pcj/meta.json)"
run "train from converted batches" -- "$axon" train --data batches:p2 --layers 10:relu,3:softmax \
    --epochs 1 --batch 8 --out model.safetensors --quiet

# ---------------------------------------------------------------- refusals
mkdir evil && cp cc2/data_batch_1 evil/
"$python" - <<'PY' || exit 1
import os, pickle
class Evil:
    def __reduce__(self):
        return (os.system, ("touch pwned",))
pickle.dump({"label_names": ["a"], "num_vis": 192, "data_mean": Evil()},
            open("evil/batches.meta", "wb"), protocol=2)
PY
refused "a pickle calling os.system" "evil/batches.meta" out_evil -- \
    "$axon" prep --from-cuda-convnet2 evil --out out_evil
grep -qF "system" stderr || fail "os.system refusal does not name the global: $(cat stderr)"
[ ! -e pwned ] || fail "the pickle's os.system ran"

cp -r cc2 cut
head -c 300 cc2/data_batch_2 >cut/data_batch_2
refused "a truncated data_batch" "cut/data_batch_2" out_cut -- \
    "$axon" prep --from-cuda-convnet2 cut --out out_cut

cp -r cc2 shape
"$python" - <<'PY' || exit 1
import pickle
import numpy as np
pickle.dump({"data": np.zeros((191, 3), np.uint8), "labels": [0, 1, 2]},
            open("shape/data_batch_3", "wb"), protocol=2)
PY
refused "data of another shape" "shape/data_batch_3: 'data' is a u1 array of 2 dimensions (191" \
    out_shape -- "$axon" prep --from-cuda-convnet2 shape --out out_shape

cp -r cc2 count
"$python" - <<'PY' || exit 1
import pickle
import numpy as np
pickle.dump({"data": np.zeros((192, 3), np.uint8), "labels": [0, 1]},
            open("count/data_batch_3", "wb"), protocol=2)
PY
refused "labels of another length" "count/data_batch_3: 'labels' holds 2 labels where 'data' holds 3" \
    out_count -- "$axon" prep --from-cuda-convnet2 count --out out_count

cp -r cc2 label
"$python" - <<'PY' || exit 1
import pickle
import numpy as np
pickle.dump({"data": np.zeros((192, 2), np.uint8), "labels": [0, 4]},
            open("label/data_batch_3", "wb"), protocol=2)
PY
refused "a label outside label_names" "label/data_batch_3: 'labels'[1] is not a label number in 0 .. 3" \
    out_label -- "$axon" prep --from-cuda-convnet2 label --out out_label

cp -r cc2 big && mv big/data_batch_3 big/data_batch_123456
refused "a batch number past five digits" "big/data_batch_123456: batch numbers go up to 99999" \
    out_big -- "$axon" prep --from-cuda-convnet2 big --out out_big

# a folder data_batch_N without sub-batches (listing nothing: UBSan's qsort(NULL) once),
# and labels as a NumPy array holding a negative number
mkdir -p nosub/data_batch_0 && cp cc2/batches.meta nosub/
refused "a data_batch folder without sub-batches" "nosub/data_batch_0: a folder without sub-batches" \
    out_nosub -- "$axon" prep --from-cuda-convnet2 nosub --out out_nosub
cp -r cc2 negative
"$python" - <<'PY' || exit 1
import pickle
import numpy as np
pickle.dump({"data": np.zeros((192, 2), np.uint8), "labels": np.array([0, -1], np.int64)},
            open("negative/data_batch_3", "wb"), protocol=2)
PY
refused "a negative label" "negative/data_batch_3: 'labels'[1] is not a label number" \
    out_negative -- "$axon" prep --from-cuda-convnet2 negative --out out_negative

# batches.meta and data_batch files that disagree with what cuda-convnet2
# writes, and axon folders that disagree with their meta.json on the way to
# cuda-convnet2: each refused naming the file and the key or item, exit 1,
# no output left. The folders are cc2's with one file replaced.
"$python" - <<'PY' || exit 1
import json, os, pickle, shutil
import numpy as np
def meta_case(name, meta):
    shutil.copytree("cc2", name)
    pickle.dump(meta, open(f"{name}/batches.meta", "wb"), protocol=2)
def batch_case(name, batch, number=3):
    shutil.copytree("cc2", name)
    pickle.dump(batch, open(f"{name}/data_batch_{number}", "wb"), protocol=2)
good = {"label_names": ["a", "b", "c", "d"], "num_vis": 192}
meta_case("m_list", [1, 2])
meta_case("m_novis", {"label_names": ["a"]})
meta_case("m_strvis", {**good, "num_vis": "192"})
meta_case("m_colors2", {**good, "num_colors": 2})
meta_case("m_colors4", {**good, "num_colors": 4})
meta_case("m_vis193", {**good, "num_vis": 193})
meta_case("m_imgsize", {**good, "img_size": 7})
meta_case("m_nonames", {"num_vis": 192})
meta_case("m_emptynames", {**good, "label_names": []})
meta_case("m_intname", {**good, "label_names": ["a", 5, "c", "d"]})
meta_case("m_quality", {**good, "jpeg_quality": 101})
meta_case("m_pca", {**good, "color_pca": (np.ones(3), np.eye(2))})
meta_case("m_pcanan", {**good, "color_pca": (np.array([1.0, np.nan, 1.0]), np.eye(3))})
meta_case("m_pcaneg", {**good, "color_pca": [np.array([1.0, -1.0, 1.0], np.float32), np.eye(3)]})
batch_case("b_nodata", {"labels": [0, 1]})
batch_case("b_nolabels", {"data": np.zeros((192, 2), np.uint8)})
batch_case("b_floatdata", {"data": np.zeros((192, 2), np.float32), "labels": [0, 1]})
batch_case("b_dict", {"data": {"x": 1}, "labels": [0, 1]})
batch_case("b_mixed", {"data": [b"\xff\xd8"], "labels": [0]})
def jpeg_case(name, batch):
    shutil.copytree("cc2j", name)
    pickle.dump(batch, open(f"{name}/data_batch_1", "wb"), protocol=2)
jpeg_case("b_intjpeg", {"data": [b"\xff\xd8", 5], "labels": [0, 1]})
jpeg_case("b_badjpeg", {"data": [b"not a jpeg"], "labels": [0]})
os.makedirs("b_empty")
shutil.copy("cc2/batches.meta", "b_empty/")
pickle.dump({"data": np.zeros((192, 0), np.uint8), "labels": []},
            open("b_empty/data_batch_1", "wb"), protocol=2)
# an empty batch before the others (it once read a count array not yet made)
shutil.copytree("cc2", "emptyfirst")
pickle.dump({"data": np.zeros((192, 0), np.uint8), "labels": []},
            open("emptyfirst/data_batch_0", "wb"), protocol=2)
os.makedirs("b_none")
shutil.copy("cc2/batches.meta", "b_none/")
# axon -> cuda-convnet2: the converted folder ax/ with one thing changed
def axon_case(name, edit):
    shutil.copytree("ax", name)
    edit(name)
def names_edit(d):
    m = json.load(open(f"{d}/meta.json")); m["labels"][2] = 7; json.dump(m, open(f"{d}/meta.json", "w"))
def rename_edit(d):
    m = json.load(open(f"{d}/meta.json"))
    os.rename(f"{d}/batch_00002.npy", f"{d}/two.npy")
    m["batches"][1]["data"] = "two.npy"
    json.dump(m, open(f"{d}/meta.json", "w"))
def labels_edit(d):
    np.save(f"{d}/batch_00002_labels.npy", np.zeros(4, np.int32))
def pixels_edit(d):
    np.save(f"{d}/batch_00002.npy", np.zeros((5, 8, 8, 1), np.uint8))
def label_range_edit(d):
    np.save(f"{d}/batch_00003_labels.npy", np.array([0, 9, 1], np.int32))
axon_case("a_names", names_edit)
axon_case("a_rename", rename_edit)
axon_case("a_labels", labels_edit)
axon_case("a_pixels", pixels_edit)
axon_case("a_range", label_range_edit)
PY
while IFS='|' read -r case text; do
    refused "batches.meta or data_batch $case" "$case$text" "out_$case" -- \
        "$axon" prep --from-cuda-convnet2 "$case" --out "out_$case"
done <<'CASES'
m_list|/batches.meta: holds no dict (cuda-convnet2's files are dicts)
m_novis|/batches.meta: 'num_vis' is missing, not an integer in 1 .. 1099511627776
m_strvis|/batches.meta: 'num_vis' is another type or out of range, not an integer
m_colors2|/batches.meta: 'num_colors' is 2; axon reads 1 or 3
m_colors4|/batches.meta: 'num_colors' is another type or out of range, not an integer in 1 .. 3
m_vis193|/batches.meta: 'num_vis' 193 is not S x S x 3 for any image size S
m_imgsize|/batches.meta: 'num_vis' 192 is not S x S x 3 for any image size S (nor for its 'img_size')
m_nonames|/batches.meta: 'label_names' is missing, not a list of names
m_emptynames|/batches.meta: 'label_names' is empty or another type, not a list of names
m_intname|/batches.meta: 'label_names'[1] is not a string
m_quality|/batches.meta: 'jpeg_quality' is another type or out of range, not an integer in 0 .. 100
m_pca|/batches.meta: 'color_pca' is not (stdevs, eigenvectors)
m_pcanan|/batches.meta: 'color_pca' is not (stdevs, eigenvectors)
m_pcaneg|/batches.meta: 'color_pca' is not (stdevs, eigenvectors)
b_nodata|/data_batch_3: lacks 'data'
b_nolabels|/data_batch_3: lacks 'labels'
b_floatdata|/data_batch_3: 'data' is a f4 array of 2 dimensions
b_dict|/data_batch_3: 'data' is neither a uint8 array nor a list of
b_mixed|/data_batch_3: 'data' is a list of JPEGs, where the batches before held pixel arrays; a folder holds one form
b_intjpeg|/data_batch_1: 'data'[1] is not a byte string (a list of JPEGs)
b_badjpeg|/data_batch_1: image 0 ('data'[0], 10 bytes)
b_empty|: its batches hold no images
b_none|: no data_batch_N files (not a cuda-convnet2
CASES
while IFS='|' read -r case text; do
    refused "axon folder $case to cuda-convnet2" "$case$text" "out_$case" -- \
        "$axon" prep --input "$case" --out "out_$case" --format cuda-convnet2
done <<'CASES'
a_names|/meta.json: "labels"[2] is not a string
a_rename|/two.npy: not named batch_NNNNN as axon prep names them
a_labels|/batch_00002_labels.npy: expected 5 integer labels as meta.json says
a_pixels|/batch_00002.npy: expected uint8 (5, 8, 8, 3)
a_range|/batch_00003_labels.npy: label [1] is 9, outside 0 .. 3
CASES

run "an empty batch first" -- "$axon" prep --from-cuda-convnet2 emptyfirst --out out_emptyfirst
grep -qF "13 images in 3 batches" stdout || fail "an empty batch first: $(cat stdout)"
same_folders ax out_emptyfirst "an empty batch first"

mkdir full && touch full/keep
"$axon" prep --from-cuda-convnet2 cc2 --out full >stdout 2>stderr
[ $? -eq 1 ] && grep -qF "must be empty" stderr || fail "a non-empty output folder: $(cat stderr)"
[ "$(ls full)" = keep ] || fail "a non-empty output folder was written into: $(ls full)"

"$axon" prep --from-cuda-convnet2 cc2 --out out_self --format cuda-convnet2 >stdout 2>stderr
[ $? -eq 2 ] && grep -qF -- "--format raw or jpeg" stderr || fail "cuda-convnet2 to itself: $(cat stderr)"
"$axon" prep --from-cuda-convnet2 cc2 --out out_size --size 32 >stdout 2>stderr
[ $? -eq 2 ] && grep -qF -- "--size" stderr || fail "--size with a conversion: $(cat stderr)"

if [ "$failures" -gt 0 ]; then
    echo "$failures failures"
    exit 1
fi
echo "prep_cuda_convnet2: all passed"

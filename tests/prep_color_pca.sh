#!/usr/bin/env bash
# prep_color_pca.sh: the colour principal components of axon prep's output
# (issue 31; docs/prep.md "meta.json"), which cuda-convnet2's batches.meta
# holds as color_pca = (stdevs, eigenvectors as columns) for AlexNet's
# lighting noise. Photographs of correlated colours (PNG, so the pixels are
# known), then:
# - `axon prep` (raw and jpeg): meta.json's color_pca is NumPy's float64
#   eigh of the covariance of every (r, g, b) of the written batches
#   (stdevs = sqrt of its eigenvalues, largest first, to 1e-10 relative;
#   each eigenvector equal to eigh's, up to the sign rule, to 1e-9), the
#   same bytes with 1 and 2 threads, and again after a rerun that keeps
#   batches (the sums then come from the files); a --grey run has none;
# - axon -> cuda-convnet2: batches.meta's color_pca, loaded by Python's
#   pickle, is meta.json's bit for bit (float64); -> axon again: the same
#   meta.json bytes;
# - a cuda-convnet2 folder without color_pca (Python-written) gets the one
#   NumPy computes from its pixels; one with its own (float32, a tuple,
#   Fortran-ordered eigenvectors) keeps it; a malformed one is refused
#   naming batches.meta and the key, exit 1, no output folder left;
# - `axon train --lighting 0.1` (AlexNet's lighting noise from color_pca;
#   test_stream checks the rows): two runs of one seed give the same model,
#   not the unlit one; refused on grey batches and on other data.
# Usage: prep_color_pca.sh AXON WORKDIR
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

rm -rf "$work"
mkdir -p "$work"
cd "$work" || exit 1

"$python" - <<'PY' || exit 1
import os
import numpy as np
from PIL import Image
rng = np.random.default_rng(7)
# Colours along a few directions of different spread, so the eigenvalues are
# well apart and the eigenvectors well defined.
for i in range(45):
    d = f"photos/label{i % 3}"
    os.makedirs(d, exist_ok=True)
    base = 128 + rng.normal(0, 8, 3)
    light = rng.normal(0, 45, (18, 22, 1)) * np.array([0.9, 0.7, 0.4])
    tint = rng.normal(0, 15, (18, 22, 1)) * np.array([-0.3, 0.2, 0.9])
    img = np.clip(base + light + tint + rng.normal(0, 4, (18, 22, 3)), 0, 255)
    Image.fromarray(img.astype(np.uint8)).save(f"{d}/{i:03d}.png")

# A cuda-convnet2 folder as its scripts write it (no color_pca), S = 8.
import pickle
S = 8
os.makedirs("cc2", exist_ok=True)
for n in (1, 2):
    pixels = np.clip(128 + rng.normal(0, 40, (6, 1, S, S)) * np.array([1, 0.8, 0.6]).reshape(1, 3, 1, 1)
                     + rng.normal(0, 1, (6, 3, S, S)) * np.array([12, 6, 2]).reshape(1, 3, 1, 1),
                     0, 255).astype(np.uint8)
    pickle.dump({"data": pixels.reshape(6, -1).T.copy(), "labels": [0, 1, 0, 1, 0, 1]},
                open(f"cc2/data_batch_{n}", "wb"), protocol=2)
pickle.dump({"label_names": ["a", "b"], "num_vis": 3 * S * S}, open("cc2/batches.meta", "wb"),
            protocol=2)
PY

check_pca() { # check_pca FOLDER WHAT: meta.json's color_pca against NumPy's eigh of its pixels
    "$python" - "$1" <<'PY' || fail "$2: color_pca is not NumPy's"
import glob, io, json, struct, sys
import numpy as np
from PIL import Image
folder = sys.argv[1]
meta = json.load(open(f"{folder}/meta.json"))
images = []
for b in meta["batches"]:
    path = f"{folder}/{b['data']}"
    if path.endswith(".npy"):
        images.append(np.load(path))
    else:  # .jpegs: the JPEGs' offsets after a 48-byte header (docs/prep.md), decoded by Pillow
        data = open(path, "rb").read()
        k = struct.unpack_from("<q", data, 16)[0]
        o = struct.unpack_from("<%dQ" % (k + 1), data, 48)
        images.append(np.stack([np.asarray(Image.open(io.BytesIO(data[o[i]:o[i + 1]])))
                                for i in range(k)]))
rgb = np.concatenate(images).reshape(-1, 3).astype(np.float64)
values, vectors = np.linalg.eigh(np.cov(rgb.T, bias=True))
values, vectors = values[::-1], vectors[:, ::-1].T  # largest first, one vector a row
pca = meta["color_pca"]
stdevs, mine = np.array(pca["stdevs"]), np.array(pca["eigenvectors"])
assert np.allclose(stdevs, np.sqrt(values), rtol=1e-10, atol=0), (stdevs, np.sqrt(values))
for v, w in zip(mine, vectors):
    w = w if w[np.argmax(np.abs(w))] > 0 else -w  # the sign rule: largest entry positive
    assert np.allclose(v, w, rtol=0, atol=1e-9), (v, w)
assert abs(np.linalg.det(mine)) > 1 - 1e-12  # orthonormal
print("stdevs", stdevs)
PY
}

# ------------------------------------------------------------- axon prep
run "prep 1 thread" -- "$axon" prep --input photos --out p1 --size 16 --batch 10 --threads 1 --quiet
run "prep 2 threads" -- "$axon" prep --input photos --out p2 --size 16 --batch 10 --threads 2 --quiet
check_pca p1 "prep raw"
cmp -s p1/meta.json p2/meta.json || fail "meta.json differs between 1 and 2 threads"
run "prep jpeg" -- "$axon" prep --input photos --out pj --size 16 --batch 10 --format jpeg --quiet
check_pca pj "prep jpeg"
cp p1/meta.json meta_first.json
rm p1/meta.json p1/batch_00002.npy
run "prep rerun" -- "$axon" prep --input photos --out p1 --size 16 --batch 10 --threads 2 --quiet
grep -qF "1 batches written, 4 kept from an earlier run" stdout || fail "rerun: $(cat stdout)"
cmp -s p1/meta.json meta_first.json || fail "a rerun keeping batches wrote another meta.json"
run "prep grey" -- "$axon" prep --input photos --out pg --size 16 --batch 10 --grey --quiet
grep -qF color_pca pg/meta.json && fail "grey batches have a color_pca"

# ------------------------------------------- axon -> cuda-convnet2 -> axon
run "axon -> cc2" -- "$axon" prep --input p2 --out pc --format cuda-convnet2 --quiet
"$python" - <<'PY' || fail "axon -> cc2: batches.meta's color_pca is not meta.json's"
import json, pickle
import numpy as np
pca = json.load(open("p2/meta.json"))["color_pca"]
for encoding in ("bytes", "latin1"):
    meta = pickle.load(open("pc/batches.meta", "rb"), encoding=encoding)
    stdevs, vectors = meta["color_pca"]
    assert stdevs.dtype == np.float64 and stdevs.shape == (3,)
    assert vectors.dtype == np.float64 and vectors.shape == (3, 3)
    assert stdevs.tolist() == pca["stdevs"]
    assert vectors.T.tolist() == pca["eigenvectors"]  # columns, as cuda-convnet2's color_eig
PY
run "cc2 -> axon" -- "$axon" prep --from-cuda-convnet2 pc --out pb --quiet
cmp -s p2/meta.json pb/meta.json || fail "axon -> cc2 -> axon: meta.json differs"

# ------------------------------------------------- cuda-convnet2 -> axon
run "cc2 without color_pca -> axon" -- "$axon" prep --from-cuda-convnet2 cc2 --out fromcc2 --quiet
check_pca fromcc2 "cc2 without color_pca"
mkdir own && cp cc2/data_batch_* own/
"$python" - <<'PY' || exit 1
import pickle
import numpy as np
vectors = np.asfortranarray(np.array([[0.6, -0.8, 0], [0.8, 0.6, 0], [0, 0, 1]], np.float32))
pickle.dump({"label_names": ["a", "b"], "num_vis": 192,
             "color_pca": (np.array([60.5, 9.25, 2.125], np.float32), vectors)},
            open("own/batches.meta", "wb"), protocol=2)
PY
run "cc2 with color_pca -> axon" -- "$axon" prep --from-cuda-convnet2 own --out fromown --quiet
"$python" - <<'PY' || fail "cc2 with color_pca: not kept"
import json
import numpy as np
pca = json.load(open("fromown/meta.json"))["color_pca"]
assert pca["stdevs"] == [60.5, 9.25, 2.125], pca
want = np.array([[0.6, -0.8, 0], [0.8, 0.6, 0], [0, 0, 1]], np.float32).astype(np.float64).T
assert np.array_equal(np.array(pca["eigenvectors"]), want), pca
PY
mkdir bad && cp cc2/data_batch_* bad/
"$python" - <<'PY' || exit 1
import pickle
import numpy as np
pickle.dump({"label_names": ["a", "b"], "num_vis": 192,
             "color_pca": (np.ones(2), np.eye(3))}, open("bad/batches.meta", "wb"), protocol=2)
PY
"$axon" prep --from-cuda-convnet2 bad --out out_bad >stdout 2>stderr
got=$?
[ "$got" -eq 1 ] || fail "a malformed color_pca: exit $got ($(cat stderr))"
grep -qF "bad/batches.meta: 'color_pca' is not (stdevs, eigenvectors)" stderr ||
    fail "a malformed color_pca: $(cat stderr)"
[ ! -e out_bad ] || fail "a malformed color_pca left out_bad behind"

# ------------------------------------------------ axon train --lighting SIGMA
train() { # train OUT [options...]: a short streamed run on p2's batches
    local out=$1; shift
    "$axon" train --data batches:p2 --crop 12 --mirror --subtract-mean --layers 8:relu,3:softmax \
        --epochs 2 --batch 8 --seed 3 --threads 1 --quiet --out "$out" "$@" >stdout 2>stderr
}
train lit1.safetensors --lighting 0.1 || fail "train --lighting: exit $? ($(cat stderr))"
train lit2.safetensors --lighting 0.1 || fail "train --lighting again: exit $? ($(cat stderr))"
train unlit.safetensors || fail "train without --lighting: exit $? ($(cat stderr))"
cmp -s lit1.safetensors lit2.safetensors || fail "--lighting: two runs of one seed differ"
cmp -s lit1.safetensors unlit.safetensors && fail "--lighting 0.1 trained the unlit model"
"$axon" train --data batches:pg --layers 3:softmax --epochs 1 --lighting 0.1 --quiet \
    --out grey.safetensors >stdout 2>stderr
[ $? -ne 0 ] && grep -qF "pg/meta.json: grey images" stderr || fail "--lighting on grey batches: $(cat stderr)"
"$axon" train --data synth:linear --layers 3:softmax --epochs 1 --lighting 0.1 --quiet \
    --out synth.safetensors >stdout 2>stderr
[ $? -eq 2 ] && grep -qF -- "--lighting" stderr || fail "--lighting on synth data: $(cat stderr)"

if [ "$failures" -gt 0 ]; then
    echo "$failures failures"
    exit 1
fi
echo "prep_color_pca: all passed"

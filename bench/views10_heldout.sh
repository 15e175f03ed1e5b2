#!/usr/bin/env bash
# views10_heldout.sh AXON WORK [galaxy|fashion]...: `axon eval --views 10` against the
# centre crop (--views 1) on held-out images, for networks trained with random crops and
# mirroring (issue 31; docs/notes/jpeg-batches.md). Galaxy Zoo (../shared/data/galaxy,
# 32x32 grey, 2,700 training and 675 test images) at crops 24 and 20 of 32, and
# Fashion-MNIST (Debian's dataset-fashion-mnist: the first 1,200 training and 200 test
# images of each class, 28x28 grey, prepared at 32 so that a crop of 28 moves by up to
# 4 pixels), 3 seeds each, one thread per run. Prints one line per run and view count.
# EPOCHS=N overrides the epochs (15 for galaxy, 8 for fashion), for a quick try.
set -eu
axon=$1
work=$2
shift 2
here=$(cd "$(dirname "$0")/.." && pwd)
python=/usr/bin/python3
mkdir -p "$work"
cd "$work"
layers() { echo "conv:16x5x5/p2:relu,maxpool:2,conv:32x5x5/p2:relu,maxpool:2,64:relu,$1:softmax"; }
run() { # run NAME TRAIN TEST CROP CLASSES EPOCHS
    local name=$1 train=$2 test=$3 crop=$4 classes=$5 epochs=$6 seed view
    for seed in 1 2 3; do
        "$axon" train --data "batches:$train" --crop "$crop" --mirror --subtract-mean \
            --layers "$(layers "$classes")" --lr 0.01 --momentum 0.9 --batch 64 \
            --epochs "$epochs" --seed "$seed" --threads 1 --quiet --out "$name.s$seed.safetensors" >/dev/null
        for view in 1 10; do
            echo "$name crop $crop seed $seed views $view: $("$axon" eval --model "$name.s$seed.safetensors" \
                --data "batches:$test" --crop "$crop" --subtract-mean --views "$view" --threads 1 |
                grep -E '^(loss|accuracy)' | tr -s ' \n' ' ')"
        done
    done
}
[ $# -gt 0 ] || set -- galaxy fashion
for set in "$@"; do
    case $set in
    galaxy)
        "$python" - "$here/../shared/data/galaxy" <<'PY'
import os, sys
import numpy as np
from PIL import Image
for split in ("train", "test"):
    rows = np.loadtxt(os.path.join(sys.argv[1], split + ".csv"), delimiter=",", dtype=np.int64)
    for i, row in enumerate(rows):
        d = os.path.join("galaxy", split, "class%d" % row[0])
        os.makedirs(d, exist_ok=True)
        Image.fromarray(row[1:].reshape(32, 32).astype(np.uint8)).save(os.path.join(d, "%04d.png" % i))
PY
        "$axon" prep --input galaxy/train --out gtr --size 32 --batch 512 --grey --quiet >/dev/null
        "$axon" prep --input galaxy/test --out gte --size 32 --batch 512 --grey --quiet >/dev/null
        run galaxy gtr gte 24 3 "${EPOCHS:-15}"
        run galaxy gtr gte 20 3 "${EPOCHS:-15}"
        ;;
    fashion)
        "$python" - <<'PY'
import gzip, os
import numpy as np
from PIL import Image
src = "/usr/share/datasets/fashion-mnist"
def idx(name):
    return np.frombuffer(gzip.open(os.path.join(src, name)).read(), np.uint8)
for split, prefix, per_class in (("train", "train", 1200), ("test", "t10k", 200)):
    x = idx(prefix + "-images-idx3-ubyte.gz")[16:].reshape(-1, 28, 28)
    y = idx(prefix + "-labels-idx1-ubyte.gz")[8:]
    for c in range(10):
        d = os.path.join("fashion", split, "class%d" % c)
        os.makedirs(d, exist_ok=True)
        for i in np.flatnonzero(y == c)[:per_class]:
            Image.fromarray(x[i]).save(os.path.join(d, "%05d.png" % i))
PY
        "$axon" prep --input fashion/train --out ftr --size 32 --batch 1000 --grey --quiet >/dev/null
        "$axon" prep --input fashion/test --out fte --size 32 --batch 1000 --grey --quiet >/dev/null
        run fashion ftr fte 28 10 "${EPOCHS:-8}"
        ;;
    *) echo "unknown set $set (galaxy, fashion)" >&2; exit 2 ;;
    esac
done

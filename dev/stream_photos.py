#!/usr/bin/python3
"""stream_photos.py OUT N [val]: a folder of N JPEG photographs in five labelled
folders, for the end-to-end run of dev/stream_photos.sh (axon prep, then
axon train streamed). No photo collection ships with the machine, so each
label is one real photograph that Debian packages (scikit-learn's china.jpg
and flower.jpg, SciPy's face and ascent, Matplotlib's grace_hopper.jpg),
and each image a random view of it: a crop of 30-100 % of its shorter side
at a random place, mirrored or not, scaled to 120-320 pixels, with its
brightness and colour jittered, saved at JPEG quality 70-95. Deterministic
(seed 1). With "val", the images lie flat as ILSVRC's validation set
(ILSVRC2012_val_NNNNNNNN.JPEG, seed 2) beside OUT/../ground_truth.txt (one
label number from 1 a line, in file-name order) and OUT/../labels.txt (the
label names, in the order that numbers them)."""
import os
import sys
import warnings

import numpy as np
from PIL import Image, ImageEnhance

out, count = sys.argv[1], int(sys.argv[2])
flat = len(sys.argv) > 3 and sys.argv[3] == "val"
sources = {
    "china": "/usr/lib/python3/dist-packages/sklearn/datasets/images/china.jpg",
    "flower": "/usr/lib/python3/dist-packages/sklearn/datasets/images/flower.jpg",
    "hopper": "/usr/share/matplotlib/mpl-data/sample_data/grace_hopper.jpg",
}
photos = {name: Image.open(path).convert("RGB") for name, path in sources.items()}
warnings.simplefilter("ignore", DeprecationWarning)
try:  # SciPy 1.10 keeps these two in scipy.misc (later ones download them)
    from scipy import misc
    photos["face"] = Image.fromarray(misc.face())
    photos["ascent"] = Image.fromarray(misc.ascent().astype(np.uint8)).convert("RGB")
except Exception as error:  # fewer labels, said so
    print(f"stream_photos: SciPy's face/ascent unavailable ({error}); {len(photos)} labels")

rng = np.random.default_rng(2 if flat else 1)
names = sorted(photos)
for name in names:
    os.makedirs(out if flat else os.path.join(out, name), exist_ok=True)
truth = []
for i in range(count):
    name = names[int(rng.integers(0, len(names)))] if flat else names[i % len(names)]
    photo = photos[name]
    width, height = photo.size
    side = int(min(width, height) * rng.uniform(0.3, 1.0))
    left = int(rng.integers(0, width - side + 1))
    top = int(rng.integers(0, height - side + 1))
    view = photo.crop((left, top, left + side, top + side))
    if rng.random() < 0.5:
        view = view.transpose(Image.FLIP_LEFT_RIGHT)
    size = int(rng.integers(120, 321))
    aspect = rng.uniform(0.75, 1.33)
    view = view.resize((size, max(64, int(size * aspect))), Image.BILINEAR)
    view = ImageEnhance.Brightness(view).enhance(rng.uniform(0.7, 1.3))
    view = ImageEnhance.Color(view).enhance(rng.uniform(0.6, 1.4))
    path = (os.path.join(out, f"ILSVRC2012_val_{i + 1:08d}.JPEG") if flat
            else os.path.join(out, name, f"{i:06d}.jpg"))
    view.save(path, quality=int(rng.integers(70, 96)), format="JPEG")
    truth.append(names.index(name) + 1)
if flat:
    parent = os.path.dirname(os.path.abspath(out))
    with open(os.path.join(parent, "ground_truth.txt"), "w") as file:
        file.writelines(f"{label}\n" for label in truth)
    with open(os.path.join(parent, "labels.txt"), "w") as file:
        file.writelines(f"{name}\n" for name in names)
print(f"stream_photos: {count} photographs in {len(names)} labels in {out}")

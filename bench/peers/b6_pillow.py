#!/usr/bin/python3
"""B6 peer (docs/prep.md, "Benchmark B6"): the image-to-batch work of `axon prep`, written
the way a competent Python user would write it with Pillow (Debian's python3-pil)
and multiprocessing.

Same work as `axon prep --input DIR --out OUT --size S --batch K --seed N`:
- list DIR/LABEL/**/*.jpg|jpeg|png in sorted order, label = the top-level folder;
- shuffle with the seed (Python's random, so the order differs from axon's);
- per image, in a pool of worker processes: Image.open, Image.draft("RGB", (S, S))
  (JPEG DCT scaling to the smallest scale whose sides are still >= S, the same
  trick axon uses), convert to RGB, ImageOps.fit to S x S with the BOX filter
  (Pillow's area filter: antialiased, computes only the centre crop, the filter
  axon uses; it is also Pillow's cheapest antialiasing filter);
- a file Pillow cannot decode is skipped with a warning;
- batches of K images as batch_NNNNN.npy (k, S, S, 3) uint8 and
  batch_NNNNN_labels.npy (k,) int32, each written to a temporary and renamed;
  meta.json (label names, counts, batches) and mean.npy (float32, from exact
  integer sums), the layout of docs/prep.md.

The pool's imap keeps the workers decoding while the main process assembles and
writes the previous images. --profile adds per-stage seconds summed over the
workers (decode = open + draft + load; resize = fit) and the main process's write.
Prints one line: "pillow: N images written, M skipped, T s, R images/s with P processes"."""
import argparse
import json
import os
import random
import sys
import time
from multiprocessing import Pool

import numpy as np
from PIL import Image, ImageOps

SIZE = 256


def list_images(root):
    labels = sorted(d for d in os.listdir(root)
                    if os.path.isdir(os.path.join(root, d)) and not d.startswith("."))
    items = []
    for label, name in enumerate(labels):
        for folder, dirs, files in os.walk(os.path.join(root, name)):
            dirs.sort()
            for f in sorted(files):
                if f.lower().endswith((".jpg", ".jpeg", ".png")) and not f.startswith("."):
                    items.append((os.path.join(folder, f), label))
    return labels, items


def init_worker(size):
    global SIZE
    SIZE = size


def load(item):
    """One image -> (bytes of S x S x 3, label, seconds decode, seconds resize), or
    (None, error text, ...) when Pillow cannot read it."""
    path, label = item
    t0 = time.perf_counter()
    try:
        with Image.open(path) as image:
            image.draft("RGB", (SIZE, SIZE))
            image = image.convert("RGB")
            t1 = time.perf_counter()
            image = ImageOps.fit(image, (SIZE, SIZE), method=Image.BOX)
            t2 = time.perf_counter()
            return image.tobytes(), label, t1 - t0, t2 - t1
    except Exception as error:  # corrupt, truncated or not an image: skip it
        return None, f"{path}: {error}", time.perf_counter() - t0, 0.0


def write_npy(path, array):
    temporary = f"{path}.tmp.{os.getpid()}"
    with open(temporary, "wb") as f:
        np.save(f, array)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--input", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--processes", type=int, default=os.cpu_count())
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    start = time.perf_counter()
    labels, items = list_images(args.input)
    random.Random(args.seed).shuffle(items)
    os.makedirs(args.out, exist_ok=True)
    s = args.size
    sums = np.zeros((s, s, 3), np.uint64)
    counts = [0] * len(labels)
    batches, skipped, written = [], 0, 0
    decode_seconds = resize_seconds = write_seconds = 0.0
    pixels = np.empty((args.batch, s, s, 3), np.uint8)
    batch_labels = np.empty(args.batch, np.int32)

    def flush(k):
        nonlocal write_seconds
        if k == 0:
            return
        t0 = time.perf_counter()
        b = len(batches)
        data, lab = f"batch_{b:05d}.npy", f"batch_{b:05d}_labels.npy"
        write_npy(os.path.join(args.out, lab), batch_labels[:k])
        write_npy(os.path.join(args.out, data), pixels[:k])
        sums[...] += pixels[:k].sum(axis=0, dtype=np.uint64)
        batches.append({"data": data, "labels": lab, "images": k})
        write_seconds += time.perf_counter() - t0

    k = 0
    with Pool(args.processes, initializer=init_worker, initargs=(s,)) as pool:
        for position, (data, label, t_decode, t_resize) in enumerate(
                pool.imap(load, items, chunksize=8)):
            decode_seconds += t_decode
            resize_seconds += t_resize
            if data is None:
                print(f"pillow: warning: {label}; skipped", file=sys.stderr)
                skipped += 1
            else:
                pixels[k] = np.frombuffer(data, np.uint8).reshape(s, s, 3)
                batch_labels[k] = label
                counts[label] += 1
                k += 1
                written += 1
            # Batch b holds positions [b K, (b + 1) K) of the shuffle, minus failures.
            if (position + 1) % args.batch == 0 or position + 1 == len(items):
                flush(k)
                k = 0
    mean = (sums.astype(np.float64) / max(written, 1)).astype(np.float32)
    write_npy(os.path.join(args.out, "mean.npy"), mean)
    meta = {"image_size": s, "channels": 3, "batch_size": args.batch, "seed": args.seed,
            "images": written, "images_skipped": skipped, "labels": labels,
            "counts": counts, "batches": batches}
    temporary = os.path.join(args.out, f"meta.json.tmp.{os.getpid()}")
    with open(temporary, "w") as f:
        json.dump(meta, f)
    os.replace(temporary, os.path.join(args.out, "meta.json"))
    seconds = time.perf_counter() - start
    print(f"pillow: {written} images written, {skipped} skipped, {seconds:.2f} s, "
          f"{(written + skipped) / seconds:.0f} images/s with {args.processes} processes")
    if args.profile:
        print(f"pillow: worker-seconds: decode {decode_seconds:.2f}, resize {resize_seconds:.2f}; "
              f"main: write {write_seconds:.2f} s")


if __name__ == "__main__":
    main()

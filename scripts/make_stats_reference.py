#!/usr/bin/python3
"""make_stats_reference.py: the committed NumPy reference for tests/test_stats.c.

Writes tests/data/stats_x.npy and stats_y.npy (64 x 16 float32 logits with a
fixed seed, some rows scaled up to large logits) and tests/data/stats_reference.txt
with the entropy H and mutual information MI of softmax outputs (docs/stats.md),
computed in float64 the naive way: the softmax, then the full double sum
over (i, j) with no factorisation.

Run from the repository root: /usr/bin/python3 scripts/make_stats_reference.py
"""
import os

import numpy as np

ROWS, D = 64, 16
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "data")


def softmax(a):
    a = a.astype(np.float64)
    e = np.exp(a - a.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def main():
    rng = np.random.default_rng(4)
    x = rng.normal(0.0, 2.0, size=(ROWS, D)).astype(np.float32)
    y = rng.normal(0.0, 2.0, size=(ROWS, D)).astype(np.float32)
    x[:4] *= 500.0  # logits in the thousands: exp would overflow without the max shift
    p, q = softmax(x), softmax(y)
    entropy = -np.mean(np.sum(p**2, axis=1))
    # The double sum over every (i, j), as the Python case study writes it.
    outer = p[:, :, None] * q[:, None, :]
    mutual_information = np.mean(np.sum(outer**2, axis=(1, 2)))
    np.save(os.path.join(OUT, "stats_x.npy"), x)
    np.save(os.path.join(OUT, "stats_y.npy"), y)
    with open(os.path.join(OUT, "stats_reference.txt"), "w") as f:
        f.write("# entropy and mutual information on stats_x.npy, stats_y.npy: float64 NumPy, naive double sum\n")
        f.write(f"entropy {float(entropy)!r}\n")
        f.write(f"mutual_information {float(mutual_information)!r}\n")
    print(f"H = {entropy!r}, MI = {mutual_information!r}")


if __name__ == "__main__":
    main()

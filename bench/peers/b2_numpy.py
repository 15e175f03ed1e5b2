#!/usr/bin/python3
"""B2 (TMVA's, axon bench b2) in NumPy: 500,000 rows x ~ N(0, 1)^20, target x . w for a random w;
network 20 -> 5 x W tanh -> 1 linear (Xavier-uniform weights, zero biases), mean squared
error, plain SGD (lr 0.001, no momentum), batch B, rows shuffled each epoch. Written as a
competent NumPy user writes it: weights stored (out, in) and applied as X @ W.T,
activation/gradient buffers allocated once and filled with out= and in-place operations.
Prints one CSV row per epoch (columns in common.py).

usage: b2_numpy.py [--batch B] [--width W] [--precision f32|f64] [--threads T]
                   [--rows N] [--epochs N] [--repeat N] [--csv FILE]"""
import argparse
import time

from common import add_common_options, threads_option, set_blas_threads, synth_linear, epoch_flops, CsvRows
set_blas_threads(threads_option())  # before numpy loads the BLAS
import numpy as np


class TanhMlp:
    def __init__(self, sizes, batch, dtype, rng):
        pairs = list(zip(sizes[:-1], sizes[1:]))
        self.w = [rng.uniform(-1, 1, (o, i)).astype(dtype) * dtype(np.sqrt(6 / (i + o))) for i, o in pairs]
        self.b = [np.zeros(o, dtype) for _, o in pairs]
        self.gw = [np.empty_like(w) for w in self.w]
        self.gb = [np.empty_like(b) for b in self.b]
        self.act = [np.empty((batch, o), dtype) for o in sizes[1:]]
        self.delta = [np.empty((batch, o), dtype) for o in sizes[1:]]
        self.scratch = np.empty((batch, max(sizes)), dtype)

    def step(self, x, y, lr):
        """One SGD step on the rows of x; returns the mean squared error."""
        nb, last = x.shape[0], len(self.w) - 1
        a = x
        for l, (w, b) in enumerate(zip(self.w, self.b)):
            a = np.matmul(a, w.T, out=self.act[l][:nb])
            a += b
            if l < last:
                np.tanh(a, out=a)
        d = np.subtract(a, y, out=self.delta[last][:nb])
        loss = float(np.vdot(d, d)) / d.size
        d *= 2 / d.size
        for l in range(last, -1, -1):
            below = self.act[l - 1][:nb] if l else x
            np.matmul(d.T, below, out=self.gw[l])
            d.sum(axis=0, out=self.gb[l])
            if l:
                d_below = np.matmul(d, self.w[l], out=self.delta[l - 1][:nb])
                derivative = np.multiply(below, below, out=self.scratch[:nb, :below.shape[1]])
                np.subtract(1, derivative, out=derivative)  # tanh' = 1 - tanh^2
                d_below *= derivative
                d = d_below
        for param, grad in zip(self.w + self.b, self.gw + self.gb):
            grad *= lr
            param -= grad
        return loss


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=500_000)
    p.add_argument("--features", type=int, default=20)
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--depth", type=int, default=5)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--lr", type=float, default=0.001)
    add_common_options(p)
    a = p.parse_args()
    dtype = np.float32 if a.precision == "f32" else np.float64
    x, y = synth_linear(a.rows, a.features, a.seed, dtype)
    sizes = [a.features] + [a.width] * a.depth + [1]
    flops = epoch_flops(sizes, a.rows, a.batch)
    out = CsvRows(a.csv, system="numpy", workload="b2", variant="numpy", precision=a.precision,
                  threads=a.threads, batch=a.batch, width=a.width)
    xb, yb = np.empty((a.batch, a.features), dtype), np.empty((a.batch, 1), dtype)
    for repeat in range(1, a.repeat + 1):
        rng = np.random.default_rng(a.seed)
        model = TanhMlp(sizes, a.batch, dtype, rng)
        for epoch in range(1, a.epochs + 1):
            start = time.perf_counter()
            order = rng.permutation(a.rows)
            total = 0.0
            for first in range(0, a.rows, a.batch):
                idx = order[first:first + a.batch]
                n = idx.size
                total += model.step(np.take(x, idx, axis=0, out=xb[:n]), np.take(y, idx, axis=0, out=yb[:n]), a.lr) * n
            seconds = time.perf_counter() - start
            out.write(repeat=repeat, epoch=epoch, seconds=seconds, loss=total / a.rows,
                      gflops=flops / seconds / 1e9, samples_per_second=a.rows / seconds)


if __name__ == "__main__":
    main()

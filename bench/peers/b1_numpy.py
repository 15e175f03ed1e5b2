#!/usr/bin/python3
"""B1 (axon bench b1a/b1b) in NumPy: 784-128-128-10 ReLU MLP on Fashion-MNIST, softmax +
cross-entropy, He initialisation, mini-batch SGD with momentum (b1a: batch 128, lr 0.1,
momentum 0.9) or full-batch gradient descent (b1b: --batch full --lr 0.5 --momentum 0
--epochs 40), written as a competent NumPy user writes it: float32, weights stored
(out, in) and applied as X @ W.T, activation/gradient buffers allocated once per run and
filled with out= and in-place operations. Prints one CSV row per epoch (columns in
common.py).

usage: b1_numpy.py [--epochs N] [--batch B|full] [--lr X] [--momentum M] [--threads T]
                   [--seed S] [--precision f32|f64] [--repeat N] [--csv FILE]"""
import argparse
import time

from common import add_common_options, threads_option, set_blas_threads, load_fashion_mnist, epoch_flops, CsvRows, FASHION_MNIST
set_blas_threads(threads_option())  # before numpy loads the BLAS
import numpy as np

SIZES = [784, 128, 128, 10]


class Mlp:
    def __init__(self, sizes, batch, dtype, rng):
        pairs = list(zip(sizes[:-1], sizes[1:]))
        self.w = [(rng.standard_normal((o, i)) * np.sqrt(2.0 / i)).astype(dtype) for i, o in pairs]
        self.b = [np.zeros(o, dtype) for _, o in pairs]
        self.gw = [np.empty_like(w) for w in self.w]
        self.gb = [np.empty_like(b) for b in self.b]
        self.vw = [np.zeros_like(w) for w in self.w]
        self.vb = [np.zeros_like(b) for b in self.b]
        self.act = [np.empty((batch, o), dtype) for o in sizes[1:]]    # layer outputs
        self.delta = [np.empty((batch, o), dtype) for o in sizes[1:]]  # d loss / d pre-activation

    def forward(self, x, nb):
        a = x
        for l, (w, b) in enumerate(zip(self.w, self.b)):
            z = np.matmul(a, w.T, out=self.act[l][:nb])
            z += b
            if l < len(self.w) - 1:
                np.maximum(z, 0, out=z)
            a = z
        a -= a.max(axis=1, keepdims=True)  # softmax, in place
        np.exp(a, out=a)
        a /= a.sum(axis=1, keepdims=True)
        return a

    def step(self, x, y, lr, momentum):
        """One SGD step on the rows of x; returns the mean cross-entropy."""
        nb = x.shape[0]
        p = self.forward(x, nb)
        rows = np.arange(nb)
        loss = -np.log(np.maximum(p[rows, y], 1e-30)).mean()
        d = self.delta[-1][:nb]
        np.copyto(d, p)
        d[rows, y] -= 1
        d /= nb
        for l in range(len(self.w) - 1, -1, -1):
            a = self.act[l - 1][:nb] if l else x
            np.matmul(d.T, a, out=self.gw[l])
            d.sum(axis=0, out=self.gb[l])
            if l:
                below = np.matmul(d, self.w[l], out=self.delta[l - 1][:nb])
                below *= a > 0  # ReLU derivative
                d = below
        for param, grad, velocity in zip(self.w + self.b, self.gw + self.gb, self.vw + self.vb):
            if momentum:
                velocity *= momentum
                velocity += grad
                grad = velocity
            param -= lr * grad
        return float(loss)

    def predict(self, x):
        a = x
        for l, (w, b) in enumerate(zip(self.w, self.b)):
            a = a @ w.T + b
            if l < len(self.w) - 1:
                np.maximum(a, 0, out=a)
        return a.argmax(axis=1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default=FASHION_MNIST)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch", default="128")
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--momentum", type=float, default=0.9)
    add_common_options(p)
    a = p.parse_args()
    dtype = np.float32 if a.precision == "f32" else np.float64
    x, y, xt, yt = load_fashion_mnist(a.data, dtype)
    n = x.shape[0]
    batch = n if a.batch == "full" else int(a.batch)
    out = CsvRows(a.csv, system="numpy", workload="b1b" if batch >= n else "b1a", variant="numpy",
                  precision=a.precision, threads=a.threads, batch=batch, width=SIZES[1])
    flops = epoch_flops(SIZES, n, batch)
    xb = np.empty((batch, x.shape[1]), dtype)
    for repeat in range(1, a.repeat + 1):
        rng = np.random.default_rng(a.seed)
        model = Mlp(SIZES, batch, dtype, rng)
        for epoch in range(1, a.epochs + 1):
            start = time.perf_counter()
            total = 0.0
            if batch >= n:
                total = model.step(x, y, a.lr, a.momentum) * n
            else:
                order = rng.permutation(n)
                for first in range(0, n, batch):
                    idx = order[first:first + batch]
                    rows = np.take(x, idx, axis=0, out=xb[:idx.size])
                    total += model.step(rows, y[idx], a.lr, a.momentum) * idx.size
            seconds = time.perf_counter() - start
            acc = (model.predict(xt) == yt).mean()
            out.write(repeat=repeat, epoch=epoch, seconds=seconds, loss=total / n, test_accuracy=100 * acc,
                      gflops=flops / seconds / 1e9, samples_per_second=n / seconds)


if __name__ == "__main__":
    main()

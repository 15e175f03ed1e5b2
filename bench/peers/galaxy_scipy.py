#!/usr/bin/python3
"""B3 (axon bench galaxy-cg) in vectorised NumPy + scipy.optimize.fmin_cg: the galaxy
classifier 1024-8-3, sigmoid/sigmoid, binary cross-entropy summed over the 3
outputs / m + lambda/(2m) * sum of squared non-bias weights, lambda = 1,
weights uniform(-0.2, 0.2), at most 300 iterations, gtol 1e-5.

Two ways to hand the cost to scipy:
  separate  f and fprime each run their own forward pass (the Python original's
            vectorised version)
  cached    one pass computes cost and gradient; fprime at the point f just
            saw reuses it (fmin_cg always asks for f, then fprime, at a point)
Prints per mode: seconds, cost and gradient evaluations, final cost, train and
test accuracy.

With --csv FILE, each mode also appends one whole-run row (empty epoch column) in
the columns of bench/peers/common.py: workload galaxy-cg, variant numpy-fmin_cg-MODE,
precision f64, batch = training rows, width 8, samples per second = rows x iterations
/ seconds (as axon's per-iteration rows), so bench/compare.sh can put it beside axon.

usage: galaxy_scipy.py [--data DIR] [--iterations N] [--mode separate|cached|both]
                       [--seed S] [--threads T] [--repeat R] [--csv FILE]"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import CsvRows  # noqa: E402


def load(path):
    data = np.loadtxt(path, delimiter=",")
    return data[:, 1:] / 255.0, data[:, 0].astype(int)


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


class Galaxy:
    def __init__(self, x, labels, lam=1.0, hidden=8, classes=3):
        self.x = np.ascontiguousarray(x)
        self.y = np.eye(classes)[labels]
        self.m = x.shape[0]
        self.l2 = lam / self.m
        self.hidden, self.classes, self.features = hidden, classes, x.shape[1]
        self.cached_theta = None
        self.cached = None

    def unpack(self, theta):
        h, c, n = self.hidden, self.classes, self.features
        w1 = theta[:h * n].reshape(h, n)
        b1 = theta[h * n:h * n + h]
        o = h * n + h
        return w1, b1, theta[o:o + c * h].reshape(c, h), theta[o + c * h:]

    def forward(self, theta, x):
        w1, b1, w2, b2 = self.unpack(theta)
        a1 = sigmoid(x @ w1.T + b1)
        return a1, sigmoid(a1 @ w2.T + b2)

    def cost(self, theta):
        w1, _, w2, _ = self.unpack(theta)
        _, a2 = self.forward(theta, self.x)
        y = self.y
        return (-np.sum(y * np.log(a2) + (1 - y) * np.log(1 - a2)) / self.m
                + 0.5 * self.l2 * (np.sum(w1 * w1) + np.sum(w2 * w2)))

    def gradient(self, theta):
        return self.cost_gradient(theta)[1]

    def cost_gradient(self, theta):
        w1, _, w2, _ = self.unpack(theta)
        a1, a2 = self.forward(theta, self.x)
        y = self.y
        cost = (-np.sum(y * np.log(a2) + (1 - y) * np.log(1 - a2)) / self.m
                + 0.5 * self.l2 * (np.sum(w1 * w1) + np.sum(w2 * w2)))
        d2 = (a2 - y) / self.m
        d1 = (d2 @ w2) * a1 * (1 - a1)
        grad = np.concatenate([(d1.T @ self.x + self.l2 * w1).ravel(), d1.sum(0),
                               (d2.T @ a1 + self.l2 * w2).ravel(), d2.sum(0)])
        return cost, grad

    # the cached pair: one pass per point
    def cached_cost(self, theta):
        if self.cached_theta is None or not np.array_equal(theta, self.cached_theta):
            self.cached_theta = theta.copy()
            self.cached = self.cost_gradient(theta)
        return self.cached[0]

    def cached_gradient(self, theta):
        self.cached_cost(theta)
        return self.cached[1]

    def accuracy(self, theta, x, labels):
        return float(np.mean(np.argmax(self.forward(theta, x)[1], axis=1) == labels))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser()
    p.add_argument("--data", default=os.path.join(here, "..", "..", "build", "data", "galaxy"))
    p.add_argument("--iterations", type=int, default=300)
    p.add_argument("--mode", default="both")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=0, help="0 = the BLAS default")
    p.add_argument("--repeat", type=int, default=1, help="the numbering of the CSV rows' repeat column")
    p.add_argument("--csv", help="append one CSV row per mode to this file")
    p.add_argument("--precision", default="f64", choices=("f64",), help="NumPy works in float64")
    a = p.parse_args()
    if a.threads > 0:
        for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[name] = str(a.threads)
    from scipy.optimize import fmin_cg  # after the thread settings

    x, labels = load(os.path.join(a.data, "train.csv"))
    xt, labels_t = load(os.path.join(a.data, "test.csv"))
    model = Galaxy(x, labels)
    count = model.hidden * (model.features + 1) + model.classes * (model.hidden + 1)
    theta0 = np.random.default_rng(a.seed).uniform(-0.2, 0.2, count)
    modes = ["separate", "cached"] if a.mode == "both" else [a.mode]
    if a.mode not in ("both", "separate", "cached"):
        sys.exit(f"galaxy_scipy.py: --mode must be separate, cached or both, not {a.mode}")
    for mode in modes:
        f, fprime = ((model.cost, model.gradient) if mode == "separate"
                     else (model.cached_cost, model.cached_gradient))
        model.cached_theta = None
        start = time.perf_counter()
        iterations = [0]

        def count_iteration(_theta):
            iterations[0] += 1
        theta, fopt, fc, gc, warnflag = fmin_cg(f, theta0, fprime=fprime, gtol=1e-5,
                                                maxiter=a.iterations, full_output=True,
                                                disp=False, callback=count_iteration)
        seconds = time.perf_counter() - start
        print("numpy+fmin_cg %-8s %.3f s  %d cost and %d gradient evaluations  final cost %.4f  "
              "train acc %.2f%%  test acc %.2f%%  warnflag %d"
              % (mode, seconds, fc, gc, fopt, 100 * model.accuracy(theta, x, labels),
                 100 * model.accuracy(theta, xt, labels_t), warnflag))
        if a.csv:
            rows = CsvRows(a.csv, system="numpy", workload="galaxy-cg", variant=f"numpy-fmin_cg-{mode}",
                           precision="f64", threads=a.threads or "", batch=model.m, width=model.hidden)
            rows.write(repeat=a.repeat, epoch=None, seconds=seconds, loss=float(fopt),
                       test_accuracy=100 * model.accuracy(theta, xt, labels_t),
                       samples_per_second=model.m * iterations[0] / seconds)


if __name__ == "__main__":
    main()

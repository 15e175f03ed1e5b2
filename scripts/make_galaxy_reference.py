#!/usr/bin/python3
"""make_galaxy_reference.py: the reference for tests/test_cg.c's network part.

Trains the galaxy classifier (1024-8-3, sigmoid/sigmoid, binary
cross-entropy summed over the 3 outputs, mean over rows, lambda = 1 so
l2 = 1/m, bias excluded from the penalty) with scipy.optimize.fmin_cg from
initial weights both sides compute from the same splitmix64 stream (no
binary file to commit): w_i = -0.2 + 0.4 * u_i, u_i = (splitmix64 >> 11) / 2^53,
in axon's flat layout [W1 (8, 1024) row-major, b1 (8), W2 (3, 8), b2 (3)].

It also runs fmin_cg from PERTURBED starts that differ from that one by a
relative 1e-13 (a few hundred ulps, the size of two implementations'
rounding differences after a few iterations), and writes their final costs:
how far fmin_cg's own result after 300 iterations moves when only rounding
changes, which is the yardstick for axon's final cost (docs/notes/galaxy.md).

Writes tests/data/galaxy_cg_reference.txt: "key value" lines.
Usage: /usr/bin/python3 scripts/make_galaxy_reference.py [galaxy data dir (default build/data/galaxy)]
"""
import os
import sys
import time

import numpy as np
from scipy.optimize import fmin_cg

MASK = (1 << 64) - 1
SEED = 20260000
HIDDEN, CLASSES, FEATURES = 8, 3, 1024
MAXITER = 300
TRACE = 30
PERTURBED = 16


def splitmix_uniform(seed, count):
    state = seed & MASK
    out = np.empty(count)
    for i in range(count):
        state = (state + 0x9E3779B97F4A7C15) & MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        z = z ^ (z >> 31)
        out[i] = (z >> 11) * (1.0 / 9007199254740992.0)
    return -0.2 + 0.4 * out


def load(path):
    data = np.loadtxt(path, delimiter=",")
    # axon stores features as float32: the same rounded inputs make the
    # float64 costs comparable to 1e-10
    x = (data[:, 1:] / 255.0).astype(np.float32).astype(np.float64)
    return x, data[:, 0].astype(int)


def unpack(theta):
    n1 = HIDDEN * FEATURES
    w1 = theta[:n1].reshape(HIDDEN, FEATURES)
    b1 = theta[n1:n1 + HIDDEN]
    o = n1 + HIDDEN
    w2 = theta[o:o + CLASSES * HIDDEN].reshape(CLASSES, HIDDEN)
    b2 = theta[o + CLASSES * HIDDEN:]
    return w1, b1, w2, b2


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def cost_grad(theta, x, y, l2):
    w1, b1, w2, b2 = unpack(theta)
    m = x.shape[0]
    a1 = sigmoid(x @ w1.T + b1)
    a2 = sigmoid(a1 @ w2.T + b2)
    cost = -np.sum(y * np.log(a2) + (1 - y) * np.log(1 - a2)) / m
    cost += 0.5 * l2 * (np.sum(w1 * w1) + np.sum(w2 * w2))
    d2 = (a2 - y) / m
    d1 = (d2 @ w2) * a1 * (1 - a1)
    grad = np.concatenate([(d1.T @ x + l2 * w1).ravel(), d1.sum(0),
                           (d2.T @ a1 + l2 * w2).ravel(), d2.sum(0)])
    return cost, grad


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(__file__), "..", "build", "data", "galaxy")
    x, labels = load(os.path.join(folder, "train.csv"))
    y = np.eye(CLASSES)[labels]
    m = x.shape[0]
    l2 = 1.0 / m
    count = HIDDEN * (FEATURES + 1) + CLASSES * (HIDDEN + 1)
    theta0 = splitmix_uniform(SEED, count)
    cost0, grad0 = cost_grad(theta0, x, y, l2)
    iterates = []
    start = time.time()
    theta, fopt, fc, gc, warnflag = fmin_cg(
        lambda t: cost_grad(t, x, y, l2)[0], theta0,
        fprime=lambda t: cost_grad(t, x, y, l2)[1],
        gtol=1e-5, maxiter=MAXITER, full_output=True, disp=False,
        callback=lambda t: iterates.append(t.copy()))
    seconds = time.time() - start
    # the cost after each of the first iterations: the trajectories agree
    # there before rounding differences grow (see docs/notes/galaxy.md)
    early = [cost_grad(t, x, y, l2)[0] for t in iterates[:TRACE]]
    perturbed = []
    for i in range(PERTURBED):
        noise = splitmix_uniform(SEED + 1 + i, count) / 0.2  # uniform(-1, 1)
        start_i = theta0 * (1 + 1e-13 * noise)
        perturbed.append(fmin_cg(
            lambda t: cost_grad(t, x, y, l2)[0], start_i,
            fprime=lambda t: cost_grad(t, x, y, l2)[1],
            gtol=1e-5, maxiter=MAXITER, full_output=True, disp=False)[1])
        print("perturbed start %d: final cost %.6f" % (i + 1, perturbed[-1]),
              file=sys.stderr)
    out = os.path.join(os.path.dirname(__file__), "..", "tests", "data",
                       "galaxy_cg_reference.txt")
    with open(out, "w") as f:
        f.write("# scripts/make_galaxy_reference.py: scipy %s fmin_cg, gtol 1e-5\n"
                % __import__("scipy").__version__)
        f.write("seed %d\n" % SEED)
        f.write("rows %d\n" % m)
        f.write("initial_cost %.17g\n" % cost0)
        f.write("initial_gradient_norm2 %.17g\n" % np.linalg.norm(grad0))
        f.write("initial_gradient_first %.17g\n" % grad0[0])
        f.write("initial_gradient_last %.17g\n" % grad0[-1])
        f.write("maxiter %d\n" % MAXITER)
        f.write("final_cost %.17g\n" % fopt)
        f.write("function_calls %d\n" % fc)
        f.write("gradient_calls %d\n" % gc)
        f.write("warnflag %d\n" % warnflag)
        f.write("seconds %.3f\n" % seconds)
        f.write("perturbed_runs %d\n" % PERTURBED)
        for i, c in enumerate(perturbed):
            f.write("perturbed_final_cost_%d %.17g\n" % (i + 1, c))
        f.write("perturbed_final_cost_min %.17g\n" % min(perturbed))
        f.write("perturbed_final_cost_max %.17g\n" % max(perturbed))
        for k, c in enumerate(early):
            f.write("cost_after_%d %.17g\n" % (k + 1, c))
    print(open(out).read())


if __name__ == "__main__":
    main()

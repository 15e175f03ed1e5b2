#!/usr/bin/python3
"""stats_peers.py: the peers of `axon stats` (seed 004, BENCHMARKS.md B4, B5),
timed at seed 004's sizes, as a user would write them:

entropy-mi (B4), X, Y: (B, 256) float32:
  torch-naive     seed 004's baseline: softmax, then torch.bmm of the per-row
                  outer product P Q^T (B x D x D), squared and summed
  torch-factor    softmax, MI = mean((P^2).sum(1) * (Q^2).sum(1))
  numpy-naive     the same outer-product form in NumPy (einsum 'bi,bj->bij')
  numpy-factor    the factorised form in NumPy (float32, as the inputs)
tensor-mean (B5), fx, fy, fz: (N, 32) float32:
  numpy-einsum-loop  seed 004's baseline: a Python loop of einsum('i,j,k->ijk')
  numpy-einsum       one np.einsum('ni,nj,nk->ijk')
  numpy-kr-matmul    Khatri-Rao product (N, D*D) transposed times fz (N, D)
  torch-einsum       torch.einsum('ni,nj,nk->ijk')

Each figure is the median of several runs after a warm-up (the machine is
shared and noisy). Threads: torch.set_num_threads(T) and, for NumPy's BLAS,
OMP_NUM_THREADS / OPENBLAS_NUM_THREADS set before import (default 2).
Output: one CSV line per (benchmark, form, size): bench,form,size,seconds.

usage: /usr/bin/python3 bench/peers/stats_peers.py [--threads T] [--quick]
"""
import argparse
import os
import statistics
import sys
import time

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--threads", type=int, default=2)
parser.add_argument("--quick", action="store_true", help="fewer sizes and repeats")
parser.add_argument("--no-torch", action="store_true")
args = parser.parse_args()
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(args.threads)

import numpy as np  # noqa: E402

try:
    if args.no_torch:
        raise ImportError
    import torch  # noqa: E402

    torch.set_num_threads(args.threads)
except ImportError:
    torch = None

D_ENTROPY, D_TENSOR = 256, 32
BATCHES = [256, 1024, 4096, 16384] + ([] if args.quick else [65536])
TRIPLETS = [64, 256, 1024, 4096, 8192]


def median_seconds(fn, budget=1.0, min_runs=3, max_runs=15):
    fn()  # warm-up
    times = []
    start = time.perf_counter()
    while len(times) < min_runs or (len(times) < max_runs and time.perf_counter() - start < budget):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


# ------------------------------------------------------------- entropy-mi

def torch_naive(x, y):
    p = torch.nn.functional.softmax(x, dim=1)
    q = torch.nn.functional.softmax(y, dim=1)
    h = -(p**2).sum(dim=1).mean()
    outer = torch.bmm(p.unsqueeze(2), q.unsqueeze(1))  # (B, D, D)
    mi = (outer**2).sum(dim=(1, 2)).mean()
    return float(h), float(mi)


def torch_factor(x, y):
    p = torch.softmax(x, dim=1)
    q = torch.softmax(y, dim=1)
    p2 = (p * p).sum(dim=1)
    q2 = (q * q).sum(dim=1)
    return float(-p2.mean()), float((p2 * q2).mean())


def np_softmax(a):
    e = np.exp(a - a.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def numpy_naive(x, y):
    p, q = np_softmax(x), np_softmax(y)
    outer = np.einsum("bi,bj->bij", p, q)
    return float(-(p**2).sum(axis=1).mean()), float((outer**2).sum(axis=(1, 2)).mean())


def numpy_factor(x, y):
    p, q = np_softmax(x), np_softmax(y)
    p2 = np.einsum("bi,bi->b", p, p)
    q2 = np.einsum("bi,bi->b", q, q)
    return float(-p2.mean()), float((p2 * q2).mean())


# ------------------------------------------------------------ tensor-mean

def numpy_einsum_loop(fx, fy, fz):
    a = np.zeros((fx.shape[1],) * 3, dtype=np.float64)
    for n in range(fx.shape[0]):
        a += np.einsum("i,j,k->ijk", fx[n], fy[n], fz[n])
    return a / fx.shape[0]


def numpy_einsum(fx, fy, fz):
    return np.einsum("ni,nj,nk->ijk", fx, fy, fz, optimize=True) / fx.shape[0]


def numpy_kr_matmul(fx, fy, fz):
    n, d = fx.shape
    kr = (fx[:, :, None] * fy[:, None, :]).reshape(n, d * d)
    return (kr.T @ fz).reshape(d, d, d) / n


def torch_einsum(fx, fy, fz):
    return torch.einsum("ni,nj,nk->ijk", fx, fy, fz) / fx.shape[0]


def main():
    rng = np.random.default_rng(4)
    print(f"# stats_peers.py: numpy {np.__version__}, torch "
          f"{torch.__version__ if torch else 'absent'}, threads {args.threads}")
    print("bench,form,size,seconds")
    for b in BATCHES:
        x = rng.normal(size=(b, D_ENTROPY)).astype(np.float32)
        y = rng.normal(size=(b, D_ENTROPY)).astype(np.float32)
        forms = [("numpy-factor", numpy_factor, x, y)]
        if b * D_ENTROPY * D_ENTROPY <= 16384 * 65536:  # (B, D, D) float32 up to 4 GB
            forms.append(("numpy-naive", numpy_naive, x, y))
        if torch:
            tx, ty = torch.from_numpy(x), torch.from_numpy(y)
            forms.append(("torch-factor", torch_factor, tx, ty))
            if b * D_ENTROPY * D_ENTROPY <= 16384 * 65536:
                forms.append(("torch-naive", torch_naive, tx, ty))
        for name, fn, a, c in forms:
            heavy = "naive" in name
            s = median_seconds(lambda: fn(a, c), budget=0.5 if heavy else 1.0,
                               min_runs=1 if heavy and b >= 16384 else 3)
            print(f"entropy-mi,{name},{b},{s:.6g}", flush=True)
    for n in TRIPLETS:
        fx, fy, fz = (rng.normal(size=(n, D_TENSOR)).astype(np.float32) for _ in range(3))
        forms = [("numpy-einsum", numpy_einsum), ("numpy-kr-matmul", numpy_kr_matmul)]
        if not args.quick or n <= 1024:
            forms.insert(0, ("numpy-einsum-loop", numpy_einsum_loop))
        for name, fn in forms:
            s = median_seconds(lambda: fn(fx, fy, fz), min_runs=1 if "loop" in name else 3)
            print(f"tensor-mean,{name},{n},{s:.6g}", flush=True)
        if torch:
            t = [torch.from_numpy(a) for a in (fx, fy, fz)]
            s = median_seconds(lambda: torch_einsum(*t))
            print(f"tensor-mean,torch-einsum,{n},{s:.6g}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

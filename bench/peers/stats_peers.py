#!/usr/bin/python3
"""stats_peers.py: the peers of `axon stats` (entropy-mi and tensor-mean, docs/stats.md),
timed at the case study's sizes, as a user would write them:

entropy-mi (B4), X, Y: (B, 256) float32:
  torch-naive     the case study's baseline: softmax, then torch.bmm of the per-row
                  outer product P Q^T (B x D x D), squared and summed
  torch-factor    softmax, MI = mean((P^2).sum(1) * (Q^2).sum(1))
  numpy-naive     the same outer-product form in NumPy (einsum 'bi,bj->bij')
  numpy-factor    the factorised form in NumPy (float32, as the inputs)
tensor-mean (B5), fx, fy, fz: (N, 32) float32:
  numpy-einsum-loop  the case study's baseline: a Python loop of einsum('i,j,k->ijk')
  numpy-einsum       one np.einsum('ni,nj,nk->ijk')
  numpy-kr-matmul    Khatri-Rao product (N, D*D) transposed times fz (N, D)
  torch-einsum       torch.einsum('ni,nj,nk->ijk')

Each figure is the median of several runs after a warm-up (the machine is
shared and noisy). Threads: torch.set_num_threads(T) and, for NumPy's BLAS,
OMP_NUM_THREADS / OPENBLAS_NUM_THREADS set before import (default 2).
Output: one line per (benchmark, form, size): bench,form,size,seconds.

With --csv FILE, each (benchmark, form, size) is instead timed as --repeat
samples of at least --min-time seconds each (seconds per call), as
`axon bench entropy-mi|tensor-mean` times itself, and every sample is
appended to FILE as a row in the columns of bench/peers/common.py (system
numpy or torch, variant = the form, batch = B or N, width = D, epoch empty:
a whole run); bench/compare_stats.sh alternates this with axon.

The naive entropy-mi forms build (B, D, D) float32 temporaries, 4 GB at
B = 16384: --naive-max (default 4096, 1 GB) bounds the B they run at.

usage: /usr/bin/python3 bench/peers/stats_peers.py [--threads T] [--quick]
       [--bench entropy-mi|tensor-mean] [--sizes LIST] [--forms LIST]
       [--csv FILE --repeat N --min-time S] [--naive-max B]
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
parser.add_argument("--bench", choices=("entropy-mi", "tensor-mean"), help="only this statistic")
parser.add_argument("--sizes", help="comma-separated B or N (default: the case study's sizes)")
parser.add_argument("--forms", help="comma-separated forms (default: all)")
parser.add_argument("--naive-max", type=int, default=4096,
                    help="largest B for the naive entropy-mi forms ((B, D, D) temporaries)")
parser.add_argument("--csv", help="append one row per sample to this file (common columns)")
parser.add_argument("--repeat", type=int, default=5, help="samples per form and size with --csv")
parser.add_argument("--min-time", type=float, default=0.05,
                    help="with --csv, each sample repeats the call for at least this long")
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
if args.sizes:
    BATCHES = TRIPLETS = [int(v) for v in args.sizes.split(",")]
FORMS = set(args.forms.split(",")) if args.forms else None
COLUMNS = ("system,workload,variant,precision,threads,batch,width,repeat,epoch,"
           "seconds,loss,test_accuracy,gflops,samples_per_second")


def median_seconds(fn, budget=1.0, min_runs=3, max_runs=15):
    fn()  # warm-up
    times = []
    start = time.perf_counter()
    while len(times) < min_runs or (len(times) < max_runs and time.perf_counter() - start < budget):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def samples(fn, repeat, min_time):
    """Seconds per call, one figure per sample of at least min_time seconds."""
    fn()  # warm-up
    result = []
    for _ in range(repeat):
        calls, start = 0, time.perf_counter()
        while True:
            fn()
            calls += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_time:
                break
        result.append(elapsed / calls)
    return result


def time_form(bench, name, fn, size, d, heavy=False):
    """Times one form at one size: the legacy median line, or CSV rows."""
    if FORMS is not None and name not in FORMS:
        return
    if not args.csv:
        s = median_seconds(fn, budget=0.5 if heavy else 1.0,
                           min_runs=1 if heavy and size >= 16384 else 3)
        print(f"{bench},{name},{size},{s:.6g}", flush=True)
        return
    runs = samples(fn, args.repeat, args.min_time)
    new = not os.path.exists(args.csv) or os.path.getsize(args.csv) == 0
    with open(args.csv, "a") as f:
        if new:
            f.write(COLUMNS + "\n")
        for i, s in enumerate(runs, 1):
            gflops = f"{2 * size * d ** 3 / s * 1e-9:.3f}" if bench == "tensor-mean" else ""
            f.write(f"{name.split('-')[0]},{bench},{name},f32,{args.threads},{size},{d},{i},,"
                    f"{s:.9g},,,{gflops},{size / s:.1f}\n")
    print(f"{bench},{name},{size},{statistics.mean(runs):.6g} (mean of {len(runs)}; "
          f"sd {statistics.stdev(runs) if len(runs) > 1 else 0:.2g})", flush=True)


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
    for b in BATCHES if args.bench in (None, "entropy-mi") else []:
        x = rng.normal(size=(b, D_ENTROPY)).astype(np.float32)
        y = rng.normal(size=(b, D_ENTROPY)).astype(np.float32)
        naive = b <= args.naive_max
        forms = [("numpy-factor", numpy_factor, x, y)]
        if naive:
            forms.append(("numpy-naive", numpy_naive, x, y))
        if torch:
            tx, ty = torch.from_numpy(x), torch.from_numpy(y)
            forms.append(("torch-factor", torch_factor, tx, ty))
            if naive:
                forms.append(("torch-naive", torch_naive, tx, ty))
        for name, fn, a, c in forms:
            time_form("entropy-mi", name, lambda: fn(a, c), b, D_ENTROPY, heavy="naive" in name)
    for n in TRIPLETS if args.bench in (None, "tensor-mean") else []:
        fx, fy, fz = (rng.normal(size=(n, D_TENSOR)).astype(np.float32) for _ in range(3))
        forms = [("numpy-einsum", numpy_einsum), ("numpy-kr-matmul", numpy_kr_matmul)]
        if not args.quick or n <= 1024:
            forms.insert(0, ("numpy-einsum-loop", numpy_einsum_loop))
        for name, fn in forms:
            time_form("tensor-mean", name, lambda: fn(fx, fy, fz), n, D_TENSOR, heavy="loop" in name)
        if torch:
            t = [torch.from_numpy(a) for a in (fx, fy, fz)]
            time_form("tensor-mean", "torch-einsum", lambda: torch_einsum(*t), n, D_TENSOR)
    return 0


if __name__ == "__main__":
    sys.exit(main())

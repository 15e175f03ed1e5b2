"""Shared by the peer scripts: the options every peer takes, the thread setup, the data
loaders, TMVA's FLOP count and the CSV rows that bench/compare.sh collects.

Every peer prints CSV rows (one per epoch) with COLUMNS to stdout and, with --csv FILE,
appends them to FILE (writing the header when FILE is new or empty)."""
import gzip
import os
import sys

COLUMNS = ("system,workload,variant,precision,threads,batch,width,repeat,epoch,"
           "seconds,loss,test_accuracy,gflops,samples_per_second").split(",")
FASHION_MNIST = "/usr/share/datasets/fashion-mnist"


def add_common_options(parser, precisions=("f32", "f64")):
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1, help="whole runs, one after the other")
    parser.add_argument("--csv", help="append the CSV rows to this file")
    parser.add_argument("--precision", choices=precisions, default="f32")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--device", default="cpu",
                        help="torch peers: cpu or cuda[:N] (data and model there; the step's loss "
                             "summed on the device and read once an epoch, as a GPU user writes it)")


def peer_system(name, device):
    """The CSV's system column: "torch" on the CPU, "torch-cuda" on a GPU."""
    return name if device == "cpu" else f"{name}-{device.split(':')[0]}"


def sync(device):
    """Waits for the device's queued work, so that a timer read after it counts it."""
    if device != "cpu":
        import torch
        torch.cuda.synchronize(device)


def threads_option(default=2):
    """--threads from the command line, read before numpy/torch is imported."""
    import argparse
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--threads", type=int, default=default)
    return p.parse_known_args()[0].threads


def set_blas_threads(threads):
    """The BLAS and OpenMP read their thread counts when the library loads, so the
    variables must be set before numpy/torch is imported: re-execute this script
    with them set if they are not already."""
    wanted = {"OPENBLAS_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}
    if any(os.environ.get(k) != v for k, v in wanted.items()):
        os.environ.update(wanted)
        os.execv(sys.executable, [sys.executable] + sys.argv)


def load_idx(path):
    import numpy as np
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load_fashion_mnist(folder, dtype):
    """(x, y, x_test, y_test) as NumPy arrays: pixels scaled to [0, 1], labels int64."""
    import numpy as np
    def images(name):
        return (load_idx(f"{folder}/{name}-images-idx3-ubyte.gz").reshape(-1, 784) / 255).astype(dtype)
    def labels(name):
        return load_idx(f"{folder}/{name}-labels-idx1-ubyte.gz").astype(np.int64)
    return images("train"), labels("train"), images("t10k"), labels("t10k")


def synth_linear(rows, features, seed, dtype):
    """TMVA's benchmark data: x ~ N(0, 1)^features, target x . w for a random w."""
    import numpy as np
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(features)
    x = rng.standard_normal((rows, features))
    return x.astype(dtype), (x @ w).astype(dtype).reshape(rows, 1)


def batch_flops(sizes, nb):
    """TMVA's FLOP count for one training step on nb rows of a dense network with layer
    widths sizes = [inputs, n_1, ..., n_L]: sum over layers of
    6 nb n_l n_{l-1} + 4 n_l nb - n_l (n_{l-1} + 1) - nb n_{l-1}."""
    return sum(6 * nb * n * m + 4 * n * nb - n * (m + 1) - nb * m
               for m, n in zip(sizes[:-1], sizes[1:]))


def lenet_batch_flops(nb):
    """axon's count (TMVA's, per layer) for one training step of the LeNet network of
    `axon bench lenet` on nb 28x28x1 images: a convolution is a dense layer over
    nb * positions rows of kh kw channels inputs; a 2x2 max-pool 2 FLOPs per output
    value and window element."""
    def dense(rows, m, n):
        return 6 * rows * n * m + 4 * n * rows - n * (m + 1) - rows * m
    return (dense(nb * 24 * 24, 5 * 5 * 1, 32) + 2 * nb * 12 * 12 * 32 * 4
            + dense(nb * 8 * 8, 5 * 5 * 32, 64) + 2 * nb * 4 * 4 * 64 * 4
            + dense(nb, 4 * 4 * 64, 1024) + dense(nb, 1024, 10))


def lenet_epoch_flops(rows, batch):
    full, rest = divmod(rows, batch)
    return full * lenet_batch_flops(batch) + (lenet_batch_flops(rest) if rest else 0)


def epoch_flops(sizes, rows, batch):
    """One epoch: the full batches and the last partial one."""
    full, rest = divmod(rows, batch)
    return full * batch_flops(sizes, batch) + (batch_flops(sizes, rest) if rest else 0)


class CsvRows:
    """Prints rows to stdout (header first) and appends them to --csv FILE if given."""

    def __init__(self, path, **fixed):
        self.path, self.fixed = path, fixed
        print(",".join(COLUMNS), flush=True)
        if path and (not os.path.exists(path) or os.path.getsize(path) == 0):
            with open(path, "w") as f:
                f.write(",".join(COLUMNS) + "\n")

    def write(self, **values):
        row = {**self.fixed, **values}
        line = ",".join(fmt(row.get(c)) for c in COLUMNS)
        print(line, flush=True)
        if self.path:
            with open(self.path, "a") as f:
                f.write(line + "\n")


def fmt(value):
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)

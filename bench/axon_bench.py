#!/usr/bin/python3
"""Runs one benchmark workload with axon and writes the same CSV rows as the peers
(system=axon). Uses `axon bench` when the binary has it (`axon bench --help` exits 0);
otherwise runs `axon train` with the workload's settings and parses its epoch lines:
  epoch 1/5  loss 0.5687  test_loss 0.4593  test_acc 83.91%  0.24 s  180 GFLOP/s
(seconds there are rounded to 0.01 s; GFLOP/s is recomputed with TMVA's FLOP count).

usage: axon_bench.py b1a|b1b|b2|galaxy-cg|lenet [--batch B] [--width W] [--precision f32|f64]
                     [--threads T] [--repeat N] [--csv FILE] [--quick]
                     [--epochs N] [--rows N] [--axon PATH]"""
import argparse
import re
import subprocess
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0] + "/peers")
from common import add_common_options, epoch_flops, CsvRows

EPOCH = re.compile(r"^epoch (\d+)/\d+\s+loss (\S+)(?:.*?test_acc (\S+)%)?\s+(\S+) s\s")
B1_ROWS = 60_000


def has_bench(axon):
    try:
        return subprocess.run([axon, "bench", "--help"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).returncode == 0
    except OSError as e:
        sys.exit(f"axon_bench.py: cannot run {axon}: {e.strerror} (build it first)")


def train_command(a):
    """The `axon train` options of the workload (docs/notes/benchmarks.md) and its layer widths."""
    common = ["--threads", str(a.threads), "--precision", a.precision, "--seed", str(a.seed)]
    if a.workload in ("b1a", "b1b"):
        full = a.workload == "b1b"
        epochs = a.epochs or (40 if full else 5)
        return (["--data", "fashion-mnist", "--layers", "128:relu,128:relu,10:softmax", "--init", "he",
                 "--lr", "0.5" if full else "0.1", "--momentum", "0" if full else "0.9",
                 "--batch", "full" if full else "128", "--epochs", str(epochs)] + common,
                [784, 128, 128, 10], B1_ROWS, B1_ROWS if full else 128)
    layers = ",".join([f"{a.width}:tanh"] * 5 + ["1:identity"])
    return (["--data", "synth:linear", "--rows", str(a.rows), "--layers", layers, "--loss", "mse",
             "--init", "xavier", "--lr", "0.001", "--momentum", "0", "--batch", str(a.batch),
             "--epochs", str(a.epochs or 1)] + common,
            [20] + [a.width] * 5 + [1], a.rows, a.batch)


def run_train(a):
    options, sizes, rows, batch = train_command(a)
    out = CsvRows(a.csv, system="axon", workload=a.workload, variant="axon-train", precision=a.precision,
                  threads=a.threads, batch=batch, width=sizes[1])
    flops = epoch_flops(sizes, rows, batch)
    for repeat in range(1, a.repeat + 1):
        run = subprocess.run([a.axon, "train"] + options, stdout=subprocess.PIPE, text=True)
        if run.returncode != 0:
            sys.exit(f"axon_bench.py: axon train {' '.join(options)} failed with status {run.returncode}")
        for line in run.stdout.splitlines():
            m = EPOCH.match(line)
            if m:
                seconds = max(float(m[4]), 0.005)  # printed to 0.01 s
                out.write(repeat=repeat, epoch=int(m[1]), seconds=seconds, loss=float(m[2]),
                          test_accuracy=float(m[3]) if m[3] else None,
                          gflops=flops / seconds / 1e9, samples_per_second=rows / seconds)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("workload", choices=("b1a", "b1b", "b2", "galaxy-cg", "lenet"))
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--quick", action="store_true", help="passed on to axon bench")
    p.add_argument("--epochs", type=int, help="axon train only (default: the workload's)")
    p.add_argument("--rows", type=int, default=500_000, help="axon train, b2 only")
    p.add_argument("--axon", default="build/axon")
    add_common_options(p)
    a = p.parse_args()
    if not has_bench(a.axon):
        if a.workload in ("galaxy-cg", "lenet"):
            sys.exit(f"axon_bench.py: {a.workload} needs an axon with `axon bench`")
        return run_train(a)
    command = [a.axon, "bench", a.workload, "--repeat", str(a.repeat), "--threads", str(a.threads)]
    if a.workload == "b2":
        command += ["--batch", str(a.batch), "--width", str(a.width)]
    if a.workload in ("b2", "galaxy-cg"):
        command += ["--precision", a.precision]
    if a.quick:
        command.append("--quick")
    if a.csv:
        command += ["--csv", a.csv]
    sys.exit(subprocess.run(command).returncode)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""B1 (axon bench b1a/b1b) in PyTorch: 784-128-128-10 ReLU MLP on Fashion-MNIST, mini-batch SGD
(lr 0.1, momentum 0.9, batch 128: workload b1a) or full-batch gradient descent
(--batch full --lr 0.5 --momentum 0 --epochs 40: workload b1b), as a competent PyTorch
user writes it. Prints one CSV row per epoch (columns in common.py): seconds, training
loss, test accuracy (%), GFLOP/s by TMVA's FLOP count, samples/s.

usage: b1_torch.py [--epochs N] [--batch B|full] [--lr X] [--momentum M] [--threads T]
                   [--init he|default] [--seed S] [--precision f32|f64] [--repeat N] [--flush-denormal]
                   [--csv FILE]"""
import argparse
import time

from common import add_common_options, sync, peer_system, threads_option, set_blas_threads, load_fashion_mnist, epoch_flops, CsvRows, FASHION_MNIST
set_blas_threads(threads_option())  # before torch loads the BLAS
import torch

SIZES = [784, 128, 128, 10]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default=FASHION_MNIST)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch", default="128")
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--init", default="he")
    add_common_options(p)
    p.add_argument("--flush-denormal", action="store_true",
                   help="torch.set_flush_denormal(True): subnormals flushed to zero, as axon "
                        "trains by default (PyTorch keeps them unless asked)")
    a = p.parse_args()
    if a.flush_denormal and not torch.set_flush_denormal(True):
        p.error("--flush-denormal: this CPU does not support it")
    torch.set_num_threads(a.threads)
    dtype = torch.float32 if a.precision == "f32" else torch.float64
    x, y, xt, yt = (torch.from_numpy(v).to(a.device) for v in load_fashion_mnist(a.data, a.precision.replace("f", "float")))
    n = x.shape[0]
    batch = n if a.batch == "full" else int(a.batch)
    out = CsvRows(a.csv, system=peer_system("torch", a.device), workload="b1b" if batch >= n else "b1a", variant="torch-eager",
                  precision=a.precision, threads=a.threads, batch=batch, width=SIZES[1])
    flops = epoch_flops(SIZES, n, batch)
    for repeat in range(1, a.repeat + 1):
        torch.manual_seed(a.seed)
        model = torch.nn.Sequential(torch.nn.Linear(784, 128), torch.nn.ReLU(),
                                    torch.nn.Linear(128, 128), torch.nn.ReLU(),
                                    torch.nn.Linear(128, 10)).to(dtype).to(a.device)
        if a.init == "he":
            for m in model:
                if isinstance(m, torch.nn.Linear):
                    torch.nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
                    torch.nn.init.zeros_(m.bias)
        opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum)
        loss_fn = torch.nn.CrossEntropyLoss()
        for epoch in range(1, a.epochs + 1):
            sync(a.device)
            start = time.perf_counter()
            order = torch.randperm(n, device=a.device) if batch < n else None
            total = 0.0
            for first in range(0, n, batch):
                if order is None:
                    xb, yb = x, y
                else:
                    idx = order[first:first + batch]
                    xb, yb = x[idx], y[idx]
                opt.zero_grad(set_to_none=True)
                loss = loss_fn(model(xb), yb)
                loss.backward()
                opt.step()
                total += (loss.item() if a.device == "cpu" else loss.detach()) * xb.shape[0]
            total = float(total)
            seconds = time.perf_counter() - start
            with torch.no_grad():
                acc = (model(xt).argmax(1) == yt).double().mean().item()
            out.write(repeat=repeat, epoch=epoch, seconds=seconds, loss=total / n, test_accuracy=100 * acc,
                      gflops=flops / seconds / 1e9, samples_per_second=n / seconds)


if __name__ == "__main__":
    main()

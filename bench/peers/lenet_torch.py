#!/usr/bin/python3
"""The LeNet-style benchmark of issue 20 in PyTorch: conv 32 5x5 ReLU, max-pool 2,
conv 64 5x5 ReLU, max-pool 2, 1024 ReLU, 10 softmax on Fashion-MNIST, SGD with
momentum, batch 128, as a competent PyTorch user writes it (NCHW, torch.nn modules,
its default CPU convolution). The same network in axon:

    axon train --data fashion-mnist --epochs 2 --batch 128 --lr 0.01 \\
        --layers conv:32x5x5:relu,maxpool:2,conv:64x5x5:relu,maxpool:2,1024:relu,10:softmax

Prints one CSV row per epoch (columns in common.py): seconds, training loss, test
accuracy (%); gflops (by axon's count for this network, common.lenet_epoch_flops) and
samples/s as the other peers do.

usage: lenet_torch.py [--epochs N] [--lr X] [--momentum M] [--threads T] [--seed S]
                      [--repeat N] [--csv FILE]
Run it with OPENBLAS_CORETYPE unset (bench/compare.sh does), so that its BLAS picks
its own kernels (docs/notes/blas-choice.md)."""
import argparse
import time

from common import (add_common_options, sync, peer_system, threads_option, set_blas_threads, load_fashion_mnist, lenet_epoch_flops,
                    CsvRows, FASHION_MNIST)
set_blas_threads(threads_option())  # before torch loads the BLAS
import torch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default=FASHION_MNIST)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--momentum", type=float, default=0.9)
    add_common_options(p, precisions=("f32",))
    p.add_argument("--flush-denormal", action="store_true",
                   help="torch.set_flush_denormal(True): subnormals flushed to zero, as axon "
                        "trains by default (PyTorch keeps them unless asked)")
    a = p.parse_args()
    if a.flush_denormal and not torch.set_flush_denormal(True):
        p.error("--flush-denormal: this CPU does not support it")
    torch.set_num_threads(a.threads)
    x, y, xt, yt = (torch.from_numpy(v).to(a.device) for v in load_fashion_mnist(a.data, "float32"))
    torch.backends.cudnn.benchmark = True  # cuDNN picks its fastest algorithms (GPU only)
    x, xt = x.view(-1, 1, 28, 28), xt.view(-1, 1, 28, 28)
    n = x.shape[0]
    out = CsvRows(a.csv, system=peer_system("torch", a.device), workload="lenet", variant="torch-eager",
                  precision="f32", threads=a.threads, batch=a.batch, width=1024)
    for repeat in range(1, a.repeat + 1):
        torch.manual_seed(a.seed)
        model = torch.nn.Sequential(
            torch.nn.Conv2d(1, 32, 5), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(32, 64, 5), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Flatten(), torch.nn.Linear(64 * 4 * 4, 1024), torch.nn.ReLU(),
            torch.nn.Linear(1024, 10)).to(a.device)
        opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum)
        loss_fn = torch.nn.CrossEntropyLoss()
        for epoch in range(1, a.epochs + 1):
            sync(a.device)
            start = time.perf_counter()
            order = torch.randperm(n, device=a.device)
            total = 0.0
            for first in range(0, n, a.batch):
                idx = order[first:first + a.batch]
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
            out.write(repeat=repeat, epoch=epoch, seconds=seconds, loss=total / n,
                      test_accuracy=100 * acc, gflops=lenet_epoch_flops(n, a.batch) / seconds / 1e9,
                      samples_per_second=n / seconds)


if __name__ == "__main__":
    main()

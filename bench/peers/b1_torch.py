#!/usr/bin/python3
"""B1 (seed 003) in PyTorch: 784-128-128-10 ReLU MLP on Fashion-MNIST, mini-batch SGD
(lr 0.1, momentum 0.9, batch 128) or full-batch gradient descent, as a competent
PyTorch user writes it. Prints one line per epoch: seconds, train loss, test accuracy.

usage: b1_torch.py [--epochs N] [--batch B|full] [--lr X] [--momentum M] [--threads T]
                   [--init he|default] [--seed S] [--dtype float32|float64]"""
import argparse, gzip, time
import numpy as np
import torch

def load_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch", default="128")
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--init", default="he")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--dtype", default="float32")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    dtype = getattr(torch, a.dtype)
    x = torch.tensor(load_idx(f"{a.data}/train-images-idx3-ubyte.gz").reshape(-1, 784), dtype=dtype) / 255
    y = torch.tensor(load_idx(f"{a.data}/train-labels-idx1-ubyte.gz").astype(np.int64))
    xt = torch.tensor(load_idx(f"{a.data}/t10k-images-idx3-ubyte.gz").reshape(-1, 784), dtype=dtype) / 255
    yt = torch.tensor(load_idx(f"{a.data}/t10k-labels-idx1-ubyte.gz").astype(np.int64))
    model = torch.nn.Sequential(torch.nn.Linear(784, 128), torch.nn.ReLU(),
                                torch.nn.Linear(128, 128), torch.nn.ReLU(),
                                torch.nn.Linear(128, 10)).to(dtype)
    if a.init == "he":
        for m in model:
            if isinstance(m, torch.nn.Linear):
                torch.nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
                torch.nn.init.zeros_(m.bias)
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum)
    loss_fn = torch.nn.CrossEntropyLoss()
    n = x.shape[0]
    batch = n if a.batch == "full" else int(a.batch)
    for epoch in range(1, a.epochs + 1):
        start = time.perf_counter()
        order = torch.randperm(n) if batch < n else None
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
            total += loss.item() * xb.shape[0]
        seconds = time.perf_counter() - start
        with torch.no_grad():
            acc = (model(xt).argmax(1) == yt).double().mean().item()
        print(f"epoch {epoch} seconds {seconds:.4f} loss {total / n:.4f} test_acc {100 * acc:.2f}", flush=True)

if __name__ == "__main__":
    main()

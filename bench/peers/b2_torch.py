#!/usr/bin/python3
"""B2 (TMVA's, axon bench b2) in PyTorch: 500,000 rows x ~ N(0, 1)^20, target x . w for a random w;
network 20 -> 5 x W tanh -> 1 linear (Xavier-uniform weights, zero biases), mean squared
error, plain SGD (lr 0.001, no momentum), batch B, rows shuffled each epoch, as a
competent PyTorch user writes it. Prints one CSV row per epoch (columns in common.py):
seconds, training loss, GFLOP/s by TMVA's FLOP count, samples/s.

--precision bf16 is PyTorch's CPU mixed precision as its documentation shows it: float32
weights, data and optimizer, the forward pass and loss under
torch.autocast("cpu", dtype=torch.bfloat16) (nn.Linear then runs oneDNN's bf16 matmul on
bf16 copies of its operands), backward outside it, no loss scaling; axon's
--precision bf16 does the same arithmetic.

usage: b2_torch.py [--batch B] [--width W] [--precision f32|f64|bf16] [--threads T]
                   [--rows N] [--epochs N] [--repeat N] [--csv FILE]"""
import argparse
import time

from common import add_common_options, sync, peer_system, threads_option, set_blas_threads, synth_linear, epoch_flops, CsvRows
set_blas_threads(threads_option())  # before torch loads the BLAS
import torch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=500_000)
    p.add_argument("--features", type=int, default=20)
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--depth", type=int, default=5)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--lr", type=float, default=0.001)
    add_common_options(p, precisions=("f32", "f64", "bf16"))
    p.add_argument("--flush-denormal", action="store_true",
                   help="torch.set_flush_denormal(True): subnormals flushed to zero, as axon "
                        "trains by default (PyTorch keeps them unless asked)")
    a = p.parse_args()
    if a.flush_denormal and not torch.set_flush_denormal(True):
        p.error("--flush-denormal: this CPU does not support it")
    torch.set_num_threads(a.threads)
    dtype = torch.float64 if a.precision == "f64" else torch.float32
    autocast = a.precision == "bf16"
    storage = "float64" if a.precision == "f64" else "float32"
    x, y = (torch.from_numpy(v).to(a.device) for v in synth_linear(a.rows, a.features, a.seed, storage))
    sizes = [a.features] + [a.width] * a.depth + [1]
    flops = epoch_flops(sizes, a.rows, a.batch)
    out = CsvRows(a.csv, system=peer_system("torch", a.device), workload="b2",
                  variant="torch-eager-autocast" if autocast else "torch-eager", precision=a.precision,
                  threads=a.threads, batch=a.batch, width=a.width)
    for repeat in range(1, a.repeat + 1):
        torch.manual_seed(a.seed)
        layers = []
        for i, o in zip(sizes[:-1], sizes[1:]):
            linear = torch.nn.Linear(i, o)
            torch.nn.init.xavier_uniform_(linear.weight)
            torch.nn.init.zeros_(linear.bias)
            layers += [linear, torch.nn.Tanh()]
        model = torch.nn.Sequential(*layers[:-1]).to(dtype).to(a.device)  # the output layer is linear
        opt = torch.optim.SGD(model.parameters(), lr=a.lr)
        loss_fn = torch.nn.MSELoss()
        for epoch in range(1, a.epochs + 1):
            sync(a.device)
            start = time.perf_counter()
            order = torch.randperm(a.rows, device=a.device)
            total = 0.0
            for first in range(0, a.rows, a.batch):
                idx = order[first:first + a.batch]
                opt.zero_grad(set_to_none=True)
                with torch.autocast(a.device.split(":")[0], dtype=torch.bfloat16, enabled=autocast):
                    loss = loss_fn(model(x[idx]).float(), y[idx])
                loss.backward()
                opt.step()
                total += (loss.item() if a.device == "cpu" else loss.detach()) * idx.shape[0]
            total = float(total)
            seconds = time.perf_counter() - start
            out.write(repeat=repeat, epoch=epoch, seconds=seconds, loss=total / a.rows,
                      gflops=flops / seconds / 1e9, samples_per_second=a.rows / seconds)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""check_strategy_reference_torch.py: checks tests/data/strategy_reference.txt (written
from NumPy by make_strategy_reference.py, since the test machines have no PyTorch)
against PyTorch itself where it is installed: torch.optim.AdamW (biases in a group of
weight decay 0), SGD with L1, clip_grad_value_ and clip_grad_norm_, and the schedulers
StepLR, ExponentialLR, CosineAnnealingLR and ReduceLROnPlateau, in float64.
Prints the largest differences; exits 1 beyond 1e-12 (schedules) or 1e-10 (steps),
77 without torch. Run on demand: python3 scripts/check_strategy_reference_torch.py"""
import os
import sys

try:
    import torch
except ImportError:
    print("SKIPPED: no torch for", sys.executable)
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
REF = os.path.join(HERE, "..", "tests", "data", "strategy_reference.txt")
ref = {}
for line in open(REF):
    name, count, *values = line.split()
    ref[name] = [float(v) for v in values]
    assert len(ref[name]) == int(count)
IN, HID, OUT = 3, 4, 2
x = torch.tensor(ref["inputs"], dtype=torch.float64).reshape(6, IN)
y = torch.tensor(ref["targets"], dtype=torch.float64).reshape(6, OUT)


def make(p):
    p = torch.tensor(p, dtype=torch.float64)
    i = 0
    parts = []
    for shape in ((HID, IN), (HID,), (OUT, HID), (OUT,)):
        n = 1
        for s in shape:
            n *= s
        parts.append(p[i:i + n].reshape(shape).clone().requires_grad_(True))
        i += n
    return parts


def loss_of(parts, l1=0.0):
    w1, b1, w2, b2 = parts
    out = torch.tanh(x @ w1.T + b1) @ w2.T + b2
    loss = torch.nn.functional.mse_loss(out, y)
    return loss + l1 * (w1.abs().sum() + w2.abs().sum())


def flat(parts):
    return torch.cat([q.detach().reshape(-1) for q in parts])


worst = {}
parts = make(ref["params0"])
loss = loss_of(parts, 0.01)
loss.backward()
worst["l1_loss0"] = abs(loss.item() - ref["l1_loss0"][0])
worst["l1_gradient0"] = (torch.cat([q.grad.reshape(-1) for q in parts]) -
                         torch.tensor(ref["l1_gradient0"], dtype=torch.float64)).abs().max().item()

parts = make(ref["params0"])
adamw = torch.optim.AdamW([{"params": [parts[0], parts[2]], "weight_decay": 0.1},
                           {"params": [parts[1], parts[3]], "weight_decay": 0.0}], lr=0.01)
steps = []
for _ in range(10):
    adamw.zero_grad()
    loss_of(parts).backward()
    adamw.step()
    steps.append(flat(parts))
worst["adamw_steps"] = (torch.cat(steps) - torch.tensor(ref["adamw_steps"], dtype=torch.float64)).abs().max().item()

parts = make(ref["params0"])
sgd = torch.optim.SGD(parts, lr=0.1, momentum=0.9)
steps = []
for _ in range(10):
    sgd.zero_grad()
    loss_of(parts, 0.01).backward()
    torch.nn.utils.clip_grad_value_(parts, 0.05)
    torch.nn.utils.clip_grad_norm_(parts, 0.06)
    sgd.step()
    steps.append(flat(parts))
worst["sgd_l1_clip_steps"] = (torch.cat(steps) - torch.tensor(ref["sgd_l1_clip_steps"], dtype=torch.float64)).abs().max().item()


def rates(make_scheduler, metrics=None):
    p = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([p], lr=0.1)
    scheduler = make_scheduler(opt)
    out = []
    for epoch in range(30):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        scheduler.step(metrics[epoch]) if metrics else scheduler.step()
    return out


S = torch.optim.lr_scheduler
checks = {
    "lr_step_7_0.5": rates(lambda o: S.StepLR(o, 7, 0.5)),
    "lr_exp_0.9": rates(lambda o: S.ExponentialLR(o, 0.9)),
    "lr_cosine_0": rates(lambda o: S.CosineAnnealingLR(o, 30, 0.0)),
    "lr_cosine_0.001": rates(lambda o: S.CosineAnnealingLR(o, 30, 0.001)),
    "lr_plateau_2_0.5": rates(lambda o: S.ReduceLROnPlateau(o, patience=2, factor=0.5),
                              ref["plateau_losses"]),
}
for name, got in checks.items():
    worst[name] = max(abs(a - b) for a, b in zip(got, ref[name]))

bad = False
for name, value in worst.items():
    limit = 1e-12 if name.startswith("lr_") or name.startswith("l1_") else 1e-10
    print(f"{name:20s} largest difference {value:.3g} (limit {limit:g})")
    bad |= not value <= limit
print("torch", torch.__version__, ":", "FAIL" if bad else "ok")
sys.exit(1 if bad else 0)

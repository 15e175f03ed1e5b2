#!/usr/bin/env python3
"""make_strategy_reference.py: writes tests/data/strategy_reference.txt, the
float64 reference of tests/test_strategies.c (issue 30), from NumPy alone
(python3-torch is not installed on the machines that run the tests).

Each line is NAME COUNT V1 .. VCOUNT (%.17g). The PyTorch algorithms are
written out from torch 1.13's sources, each cited where it is used:

* a net 3 -> 4 tanh -> 2 identity with MSE (the mean over all elements, as
  torch.nn.MSELoss), 6 rows, inputs and targets float32 values, trained on
  the full batch (one step per epoch, no shuffling) for 10 steps:
  - adamw: torch.optim.AdamW(lr=0.01, weight_decay=0.1) with the biases in a
    group of weight_decay 0 (torch/optim/adamw.py, _single_tensor_adamw:
    param.mul_(1 - lr * weight_decay), then Adam's step with
    denom = sqrt(v) / sqrt(1 - b2^t) + eps, step_size = lr / (1 - b1^t));
  - sgd_l1_clip: SGD momentum 0.9, lr 0.1 on the loss + l1 * sum |W| (W the
    weights; autograd's gradient of abs is sign, 0 at 0), the gradient
    clamped to [-0.05, 0.05] (clip_grad_value_) and then scaled by
    max_norm / (norm + 1e-6) when that is below 1 (clip_grad_norm_,
    max_norm 0.06);
  with loss0/gradient0 the loss and gradient (l1 included) at params0.
* schedules: learning rates of 30 epochs from torch.optim.lr_scheduler's
  closed forms and recursions (see schedule_* below).
"""
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "data", "strategy_reference.txt")

IN, HID, OUT_W, ROWS = 3, 4, 2, 6


def f32(a):
    return np.asarray(a, dtype=np.float32).astype(np.float64)


def unpack(p):
    """axon's arena: per dense layer [W (out, in) row-major, b (out)]."""
    i = 0
    w1 = p[i:i + HID * IN].reshape(HID, IN); i += HID * IN
    b1 = p[i:i + HID]; i += HID
    w2 = p[i:i + OUT_W * HID].reshape(OUT_W, HID); i += OUT_W * HID
    b2 = p[i:i + OUT_W]; i += OUT_W
    return w1, b1, w2, b2


def weight_mask():
    m = np.zeros(HID * IN + HID + OUT_W * HID + OUT_W)
    m[:HID * IN] = 1
    m[HID * IN + HID:HID * IN + HID + OUT_W * HID] = 1
    return m


def loss_gradient(p, x, y, l1=0.0):
    w1, b1, w2, b2 = unpack(p)
    h = np.tanh(x @ w1.T + b1)
    out = h @ w2.T + b2
    diff = out - y
    loss = np.mean(diff ** 2)
    d_out = 2.0 * diff / diff.size
    g_w2 = d_out.T @ h
    g_b2 = d_out.sum(axis=0)
    d_h = (d_out @ w2) * (1.0 - h ** 2)
    g_w1 = d_h.T @ x
    g_b1 = d_h.sum(axis=0)
    g = np.concatenate([g_w1.ravel(), g_b1, g_w2.ravel(), g_b2])
    mask = weight_mask()
    loss += l1 * np.sum(np.abs(p) * mask)
    g += l1 * np.sign(p) * mask
    return loss, g


def run_adamw(p0, x, y, steps, lr=0.01, wd=0.1, b1=0.9, b2=0.999, eps=1e-8):
    p = p0.copy()
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    mask = weight_mask()
    out = []
    for t in range(1, steps + 1):
        _, g = loss_gradient(p, x, y)
        p = np.where(mask > 0, p * (1.0 - lr * wd), p)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        bc1 = 1 - b1 ** t
        bc2 = 1 - b2 ** t
        denom = np.sqrt(v) / math.sqrt(bc2) + eps
        p = p - (lr / bc1) * m / denom
        out.append(p.copy())
    return out


def run_sgd_l1_clip(p0, x, y, steps, lr=0.1, mu=0.9, l1=0.01, clip_value=0.05, clip_norm=0.06):
    p = p0.copy()
    buf = None
    out = []
    clipped = 0
    for _ in range(steps):
        _, g = loss_gradient(p, x, y, l1)
        g = np.clip(g, -clip_value, clip_value)
        norm = math.sqrt(np.sum(g * g))
        coef = clip_norm / (norm + 1e-6)
        if coef < 1.0:
            g = g * coef
            clipped += 1
        buf = g.copy() if buf is None else mu * buf + g
        p = p - lr * buf
        out.append(p.copy())
    assert clipped > 0, "the norm clip never acted: pick a smaller clip_norm"
    return out


# --- torch.optim.lr_scheduler, epoch by epoch (get_lr after each step()) ---
def schedule_step(lr, every, gamma, epochs):
    # StepLR._get_closed_form_lr: base_lr * gamma ** (last_epoch // step_size)
    return [lr * gamma ** (e // every) for e in range(epochs)]


def schedule_exp(lr, gamma, epochs):
    # ExponentialLR: base_lr * gamma ** last_epoch
    return [lr * gamma ** e for e in range(epochs)]


def schedule_cosine(lr, eta_min, t_max, epochs):
    # CosineAnnealingLR's recursive form (get_lr), as torch computes it step
    # by step: for last_epoch > 0 (not at a restart),
    # (1 + cos(pi e / T)) / (1 + cos(pi (e - 1) / T)) * (lr - eta_min) + eta_min
    out = [lr]
    cur = lr
    for e in range(1, epochs):
        if (e - 1 - t_max) % (2 * t_max) == 0:
            cur = cur + (lr - eta_min) * (1 - math.cos(math.pi / t_max)) / 2
        else:
            cur = ((1 + math.cos(math.pi * e / t_max)) / (1 + math.cos(math.pi * (e - 1) / t_max)) *
                   (cur - eta_min) + eta_min)
        out.append(cur)
    return out


def schedule_plateau(lr, patience, factor, losses):
    # ReduceLROnPlateau(mode='min', threshold=1e-4, threshold_mode='rel',
    # cooldown=0, min_lr=0, eps=1e-8): after epoch e's loss, step(loss);
    # the lr of epoch e + 1 is the one after that call.
    best = math.inf
    bad = 0
    cur = lr
    out = [lr]
    for loss in losses[:-1]:
        if loss < best * (1 - 1e-4):
            best = loss
            bad = 0
        else:
            bad += 1
        if bad > patience:
            new = max(cur * factor, 0.0)
            if cur - new > 1e-8:
                cur = new
            bad = 0
        out.append(cur)
    return out


def main():
    rng = np.random.default_rng(30)
    x = f32(rng.uniform(-1, 1, size=(ROWS, IN)))
    y = f32(rng.uniform(-1, 1, size=(ROWS, OUT_W)))
    p0 = rng.normal(0, 0.7, size=HID * IN + HID + OUT_W * HID + OUT_W)
    lines = []

    def put(name, values):
        values = np.asarray(values, dtype=np.float64).ravel()
        lines.append(f"{name} {values.size} " + " ".join(f"{v:.17g}" for v in values))

    put("inputs", x)
    put("targets", y)
    put("params0", p0)
    loss0, g0 = loss_gradient(p0, x, y, 0.01)
    put("l1_loss0", [loss0])
    put("l1_gradient0", g0)
    put("adamw_steps", np.concatenate(run_adamw(p0, x, y, 10)))
    put("sgd_l1_clip_steps", np.concatenate(run_sgd_l1_clip(p0, x, y, 10)))
    epochs = 30
    put("lr_step_7_0.5", schedule_step(0.1, 7, 0.5, epochs))
    put("lr_exp_0.9", schedule_exp(0.1, 0.9, epochs))
    put("lr_cosine_0", schedule_cosine(0.1, 0.0, epochs, epochs))
    put("lr_cosine_0.001", schedule_cosine(0.1, 0.001, epochs, epochs))
    # a validation loss that improves, stalls, wobbles and improves by less
    # than the 1e-4 relative threshold
    losses = [1.0, 0.8, 0.7, 0.7, 0.69995, 0.71, 0.7, 0.6, 0.6, 0.6, 0.6, 0.6, 0.59999, 0.5,
              0.5, 0.5, 0.5, 0.5, 0.5, 0.4, 0.45, 0.45, 0.45, 0.45, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3]
    put("plateau_losses", losses)
    put("lr_plateau_2_0.5", schedule_plateau(0.1, 2, 0.5, losses))
    with open(OUT, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()

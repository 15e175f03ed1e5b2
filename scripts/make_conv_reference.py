#!/usr/bin/python3
"""make_conv_reference.py: writes the float64 reference that
tests/test_conv_reference.c holds axon's convolution and pooling layers to,
computed by an implementation written here in NumPy alone (forward and
backward by hand, in PyTorch's NCHW layout, independent of axon's im2col),
and, with --check-torch, compares that implementation with PyTorch's
(torch.nn.functional.conv2d, max_pool2d, avg_pool2d and autograd) to 1e-10.

Run:  /usr/bin/python3 scripts/make_conv_reference.py [tests/data]
      /usr/bin/python3 scripts/make_conv_reference.py --check-torch
Needs python3-numpy (python3-torch for --check-torch, which exits 77 without
it). Deterministic: the same NumPy writes the same file.

Output: conv_reference.txt in the folder given, text, one record a line:
    axon-conv-reference 1               magic and format version
    case NAME shape=HxWxC layers=TEXT loss=cross-entropy|mse rows=N outputs=K
    NAME FIELD COUNT v1 v2 ...          an array of case NAME (repr floats)
Fields: inputs (N, H*W*C) in (row, column, channel) order, as axon's data;
labels (N) or targets (N, K); params (P) in axon's order (per layer: a conv's
weight (filters, channels, kh, kw) then bias; a dense layer's weight (out, in),
its input the feature map flattened in (row, column, channel) order, then
bias); outputs (N, K) the probabilities or values; loss (1) the mean loss
(axon.h's definitions, no L2); gradient (P) its gradient.
"""
import re
import sys

try:
    import numpy as np
except ImportError:
    if "--check-torch" not in sys.argv:  # the generator itself: NumPy is required
        raise
    print(f"SKIPPED: make_conv_reference.py needs NumPy, which {sys.executable} lacks")
    sys.exit(77)

CASES = [
    # name, (H, W, C), layers, loss
    ("conv_pool_softmax", (7, 6, 2), "conv:3x3x3/p1:tanh,maxpool:2,4:softmax", "cross-entropy"),
    ("strided_avgpool", (9, 8, 3), "conv:4x3x2/s2/p1:sigmoid,avgpool:2/s1,conv:2x2x2:relu,3:softmax",
     "cross-entropy"),
    ("pool_first_mse", (8, 7, 2), "maxpool:3/s2,conv:3x2x3/p1:identity,avgpool:2,5:tanh,2:identity",
     "mse"),
]
ROWS = 4


# ----------------------------------------------------------------- layers
def parse(layers):
    out = []
    for item in layers.split(","):
        m = re.fullmatch(r"conv:(\d+)x(\d+)x(\d+)(?:/s(\d+))?(?:/p(\d+))?:(\w+)", item)
        if m:
            f, kh, kw, s, p, act = m.groups()
            out.append(("conv", int(f), int(kh), int(kw), int(s or 1), int(p or 0), act))
            continue
        m = re.fullmatch(r"(maxpool|avgpool):(\d+)(?:/s(\d+))?", item)
        if m:
            kind, w, s = m.groups()
            out.append((kind, int(w), int(s or w)))
            continue
        units, act = item.split(":")
        out.append(("dense", int(units), act))
    return out


def activate(act, z):
    if act == "tanh":
        return np.tanh(z)
    if act == "sigmoid":
        return 1 / (1 + np.exp(-z))
    if act == "relu":
        return np.maximum(z, 0)
    return z


def activation_derivative(act, y):
    """d y / d z from the activated output y."""
    if act == "tanh":
        return 1 - y * y
    if act == "sigmoid":
        return y * (1 - y)
    if act == "relu":
        return (y > 0).astype(np.float64)
    return np.ones_like(y)


def windows(x, kh, kw, s):
    """(N, C, OH, OW, kh, kw) views of x (N, C, H, W)."""
    v = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(2, 3))
    return v[:, :, ::s, ::s]


def conv_forward(x, w, b, s, p):
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    return np.einsum("nchwij,fcij->nfhw", windows(xp, w.shape[2], w.shape[3], s), w) + \
        b[None, :, None, None]


def conv_backward(x, w, s, p, dz):
    """dx, dw, db for dz (N, F, OH, OW) = d loss / d pre-activations."""
    kh, kw = w.shape[2], w.shape[3]
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    dw = np.einsum("nchwij,nfhw->fcij", windows(xp, kh, kw, s), dz)
    db = dz.sum(axis=(0, 2, 3))
    dxp = np.zeros_like(xp)
    oh, ow = dz.shape[2], dz.shape[3]
    for i in range(kh):
        for j in range(kw):
            dxp[:, :, i:i + s * (oh - 1) + 1:s, j:j + s * (ow - 1) + 1:s] += \
                np.einsum("nfhw,fc->nchw", dz, w[:, :, i, j])
    dx = dxp[:, :, p:p + x.shape[2], p:p + x.shape[3]]
    return dx, dw, db


def pool_forward(kind, x, k, s):
    v = windows(x, k, k, s)
    flat = v.reshape(v.shape[:4] + (k * k,))
    if kind == "maxpool":
        return flat.max(axis=4), flat.argmax(axis=4)  # argmax: the first largest
    return flat.mean(axis=4), None


def pool_backward(kind, x, k, s, first, dy):
    dx = np.zeros_like(x)
    n, c, oh, ow = dy.shape
    for oy in range(oh):
        for ox in range(ow):
            if kind == "maxpool":
                at = first[:, :, oy, ox]
                i, j = at // k, at % k
                for a in range(n):
                    for ch in range(c):
                        dx[a, ch, oy * s + i[a, ch], ox * s + j[a, ch]] += dy[a, ch, oy, ox]
            else:
                dx[:, :, oy * s:oy * s + k, ox * s:ox * s + k] += dy[:, :, oy, ox][:, :, None, None] / (k * k)
    return dx


# ---------------------------------------------------------------- network
def shapes_and_sizes(shape, layers):
    """The (C, H, W) or (width,) into each layer and its parameter counts."""
    h, w, c = shape
    current = ("image", c, h, w)
    sizes = []
    for layer in layers:
        if layer[0] == "conv":
            _, f, kh, kw, s, p, _ = layer
            _, c, h, w = current
            sizes.append([(f, c, kh, kw), (f,)])
            current = ("image", f, (h + 2 * p - kh) // s + 1, (w + 2 * p - kw) // s + 1)
        elif layer[0] in ("maxpool", "avgpool"):
            _, k, s = layer
            _, c, h, w = current
            sizes.append([])
            current = ("image", c, (h - k) // s + 1, (w - k) // s + 1)
        else:
            width = current[1] * current[2] * current[3] if current[0] == "image" else current[1]
            sizes.append([(layer[1], width), (layer[1],)])
            current = ("flat", layer[1])
    return sizes


def unpack(params, sizes):
    out, at = [], 0
    for layer_sizes in sizes:
        tensors = []
        for size in layer_sizes:
            count = int(np.prod(size))
            tensors.append(params[at:at + count].reshape(size))
            at += count
        out.append(tensors)
    assert at == params.size
    return out


def to_nchw(rows, shape):
    h, w, c = shape
    return rows.reshape(-1, h, w, c).transpose(0, 3, 1, 2)


def flatten_hwc(x):
    return x.transpose(0, 2, 3, 1).reshape(x.shape[0], -1)


def loss_and_gradient(shape, layers, params, inputs, answers, loss):
    sizes = shapes_and_sizes(shape, layers)
    tensors = unpack(params, sizes)
    x = to_nchw(inputs, shape)
    saved = []
    for layer, t in zip(layers, tensors):
        kind = layer[0]
        if kind == "conv":
            _, f, kh, kw, s, p, act = layer
            y = activate(act, conv_forward(x, t[0], t[1], s, p))
            saved.append((x, y, None))
        elif kind in ("maxpool", "avgpool"):
            y, first = pool_forward(kind, x, layer[1], layer[2])
            saved.append((x, y, first))
        else:
            flat = flatten_hwc(x) if x.ndim == 4 else x
            z = flat @ t[0].T + t[1]
            if layer[2] == "softmax":
                e = np.exp(z - z.max(axis=1, keepdims=True))
                y = e / e.sum(axis=1, keepdims=True)
            else:
                y = activate(layer[2], z)
            saved.append((x, y, None))
        x = y
    outputs = x
    n = outputs.shape[0]
    if loss == "cross-entropy":
        value = -np.mean(np.log(outputs[np.arange(n), answers]))
        delta = outputs.copy()
        delta[np.arange(n), answers] -= 1
        delta /= n  # pre-activation gradient of the softmax output
        pre = True
    else:
        value = np.mean((outputs - answers) ** 2)
        delta = 2 * (outputs - answers) / outputs.size
        pre = False
    gradients = []
    for index in range(len(layers) - 1, -1, -1):
        layer, t = layers[index], tensors[index]
        x_in, y, first = saved[index]
        kind = layer[0]
        if kind == "dense":
            if not pre:
                delta = delta * activation_derivative(layer[2], y)
            flat = flatten_hwc(x_in) if x_in.ndim == 4 else x_in
            gradients.append([delta.T @ flat, delta.sum(axis=0)])
            dx = delta @ t[0]
            if x_in.ndim == 4:
                n_, c_, h_, w_ = x_in.shape
                dx = dx.reshape(n_, h_, w_, c_).transpose(0, 3, 1, 2)
        elif kind == "conv":
            _, f, kh, kw, s, p, act = layer
            dz = delta * activation_derivative(act, y)
            dx, dw, db = conv_backward(x_in, t[0], s, p, dz)
            gradients.append([dw, db])
        else:
            dx = pool_backward(kind, x_in, layer[1], layer[2], first, delta)
            gradients.append([])
        delta, pre = dx, False
    gradients.reverse()
    flat_gradient = np.concatenate([g.ravel() for layer in gradients for g in layer])
    return value, flat_gradient, outputs


def make_case(seed, shape, layer_text, loss):
    rng = np.random.default_rng(seed)
    layers = parse(layer_text)
    sizes = shapes_and_sizes(shape, layers)
    count = sum(int(np.prod(s)) for layer in sizes for s in layer)
    # float32-representable values, as axon's data are float32
    params = rng.uniform(-0.5, 0.5, count).astype(np.float32).astype(np.float64)
    inputs = rng.uniform(-1, 1, (ROWS, int(np.prod(shape)))).astype(np.float32).astype(np.float64)
    outputs = sizes[-1][0][0]
    if loss == "cross-entropy":
        answers = np.arange(ROWS) % outputs
    else:
        answers = rng.uniform(-1, 1, (ROWS, outputs)).astype(np.float32).astype(np.float64)
    return layers, params, inputs, answers, outputs


def write(folder):
    lines = ["axon-conv-reference 1"]
    for seed, (name, shape, layer_text, loss) in enumerate(CASES):
        layers, params, inputs, answers, outputs = make_case(seed + 1, shape, layer_text, loss)
        value, gradient, probabilities = loss_and_gradient(shape, layers, params, inputs, answers,
                                                           loss)
        lines.append("case %s shape=%dx%dx%d layers=%s loss=%s rows=%d outputs=%d" %
                     ((name,) + shape + (layer_text, loss, ROWS, outputs)))

        def array(field, values):
            values = np.asarray(values, dtype=np.float64).ravel()
            lines.append("%s %s %d %s" % (name, field, values.size,
                                          " ".join(repr(float(v)) for v in values)))
        array("inputs", inputs)
        array("labels" if loss == "cross-entropy" else "targets", answers)
        array("params", params)
        array("outputs", probabilities)
        array("loss", [value])
        array("gradient", gradient)
    with open(folder + "/conv_reference.txt", "w") as f:
        f.write("\n".join(lines) + "\n")


def check_torch():
    """NumPy's forward, loss and gradient against PyTorch's autograd."""
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        print("make_conv_reference.py --check-torch: skipped: python3-torch is not installed")
        sys.exit(77)
    worst = 0.0
    for seed, (name, shape, layer_text, loss) in enumerate(CASES):
        layers, params, inputs, answers, _ = make_case(seed + 1, shape, layer_text, loss)
        value, gradient, outputs = loss_and_gradient(shape, layers, params, inputs, answers, loss)
        p = torch.tensor(params, dtype=torch.float64, requires_grad=True)
        sizes = shapes_and_sizes(shape, layers)
        at, tensors = 0, []
        for layer_sizes in sizes:
            tensors.append([])
            for size in layer_sizes:
                count = int(np.prod(size))
                tensors[-1].append(p[at:at + count].reshape(size))
                at += count
        x = torch.tensor(to_nchw(inputs, shape).copy())
        for layer, t in zip(layers, tensors):
            if layer[0] == "conv":
                _, f, kh, kw, s, pad, act = layer
                x = F.conv2d(x, t[0], t[1], stride=s, padding=pad)
                x = {"tanh": torch.tanh, "sigmoid": torch.sigmoid, "relu": torch.relu}.get(
                    act, lambda v: v)(x)
            elif layer[0] == "maxpool":
                x = F.max_pool2d(x, layer[1], layer[2])
            elif layer[0] == "avgpool":
                x = F.avg_pool2d(x, layer[1], layer[2])
            else:
                if x.dim() == 4:
                    x = x.permute(0, 2, 3, 1).reshape(x.shape[0], -1)
                x = x @ t[0].T + t[1]
                x = {"tanh": torch.tanh, "sigmoid": torch.sigmoid, "relu": torch.relu,
                     "softmax": lambda v: torch.softmax(v, 1)}.get(layer[2], lambda v: v)(x)
        if loss == "cross-entropy":
            torch_loss = F.nll_loss(torch.log(x), torch.tensor(answers))
        else:
            torch_loss = F.mse_loss(x, torch.tensor(answers))
        torch_loss.backward()
        errors = [abs(torch_loss.item() - value) / max(1, abs(value)),
                  np.max(np.abs(p.grad.numpy() - gradient)) / max(1e-30, np.max(np.abs(gradient))),
                  np.max(np.abs(x.detach().numpy() - outputs))]
        print("%-20s loss %.3g  gradient %.3g  outputs %.3g" % ((name,) + tuple(errors)))
        worst = max(worst, max(errors))
    print("NumPy reference against PyTorch %s: worst relative error %.3g (tolerance 1e-10)" %
          (torch.__version__, worst))
    sys.exit(0 if worst <= 1e-10 else 1)


if __name__ == "__main__":
    if "--check-torch" in sys.argv[1:]:
        check_torch()
    write(sys.argv[1] if len(sys.argv) > 1 else "tests/data")

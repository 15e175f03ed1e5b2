#!/usr/bin/python3
"""conv_torch_model.py: a convolutional model file written by `axon train
--out` loads, by its tensor names and with strict=True, into the equivalent
PyTorch module (torch.nn.Conv2d, MaxPool2d, AvgPool2d, Linear under
`layers.N`), whose outputs equal `axon predict`'s to 1e-5, for float32 and
float64 models.

The equivalent module takes axon's rows, images in (row, column, channel)
order, as x.view(N, H, W, C).permute(0, 3, 1, 2), and flattens a feature map
for a dense layer in axon's (row, column, channel) order: x.permute(0, 2, 3,
1).flatten(1).

usage: conv_torch_model.py AXON WORKDIR   (exit 77 without python3-torch)
"""
import os
import re
import subprocess
import sys

try:
    import numpy as np
except ImportError:
    print(f"SKIPPED: {os.path.basename(__file__)} needs NumPy, which {sys.executable} lacks "
          "(apt-get install python3-numpy, or configure with -DAXON_TEST_PYTHON=a python3 "
          "that has it)")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import read_axon_model  # noqa: E402  (NumPy's safetensors reader)

try:
    import torch
except ImportError:
    print("conv_torch_model: skipped: python3-torch is not installed")
    sys.exit(77)


def fail(message):
    print("conv_torch_model: FAIL: " + message, file=sys.stderr)
    sys.exit(1)


class AxonNet(torch.nn.Module):
    """The network of an axon layout, its layers named as axon's files name them."""

    def __init__(self, layout, shape):
        super().__init__()
        self.shape = shape
        self.activations = []
        modules = []
        h, w, channels = shape
        width = None  # values per row once flat
        for item in layout.split(","):
            m = re.fullmatch(r"conv:(\d+)x(\d+)x(\d+)(?:/s(\d+))?(?:/p(\d+))?:(\w+)", item)
            if m:
                f, kh, kw, s, p, act = m.groups()
                f, kh, kw, s, p = int(f), int(kh), int(kw), int(s or 1), int(p or 0)
                modules.append(torch.nn.Conv2d(channels, f, (kh, kw), stride=s, padding=p))
                h, w, channels = (h + 2 * p - kh) // s + 1, (w + 2 * p - kw) // s + 1, f
                self.activations.append(act)
                continue
            m = re.fullmatch(r"(maxpool|avgpool):(\d+)(?:/s(\d+))?", item)
            if m:
                kind, k, s = m.groups()
                k, s = int(k), int(s or k)
                pool = torch.nn.MaxPool2d if kind == "maxpool" else torch.nn.AvgPool2d
                modules.append(pool(k, s))
                h, w = (h - k) // s + 1, (w - k) // s + 1
                self.activations.append("identity")
                continue
            units, act = item.split(":")
            modules.append(torch.nn.Linear(width or h * w * channels, int(units)))
            width = int(units)
            self.activations.append(act)
        self.layers = torch.nn.ModuleList(modules)

    def forward(self, rows):
        h, w, c = self.shape
        x = rows.view(-1, h, w, c).permute(0, 3, 1, 2)
        for layer, act in zip(self.layers, self.activations):
            if isinstance(layer, torch.nn.Linear) and x.dim() == 4:
                x = x.permute(0, 2, 3, 1).flatten(1)
            x = layer(x)
            x = {"relu": torch.relu, "tanh": torch.tanh, "sigmoid": torch.sigmoid,
                 "softmax": lambda v: torch.softmax(v, 1)}.get(act, lambda v: v)(x)
        return x


def main():
    axon, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    os.chdir(work)
    rng = np.random.default_rng(9)
    n, shape = 64, (11, 10, 3)
    labels = rng.integers(0, 4, n)
    images = rng.normal(0, 0.5, (n,) + shape).astype(np.float32)
    np.save("images.npy", images)
    np.save("labels.npy", labels.astype(np.int64))
    layout = "conv:5x3x3/s1/p1:relu,maxpool:2,conv:4x2x3/s2:tanh,avgpool:2/s1,6:sigmoid,4:softmax"
    worst = 0.0
    for precision in ("f32", "f64"):
        model = "model-%s.safetensors" % precision
        for command in (
                [axon, "train", "--data", "images.npy", "--labels", "labels.npy", "--layers", layout,
                 "--epochs", "2", "--batch", "16", "--precision", precision, "--quiet",
                 "--out", model],
                [axon, "predict", "--model", model, "--data", "images.npy", "--labels",
                 "labels.npy", "--precision", precision, "--out", "predicted.csv"]):
            result = subprocess.run(command, capture_output=True, text=True)
            if result.returncode != 0:
                fail("%s: %s" % (" ".join(command), result.stderr))
        tensors, metadata = read_axon_model.load(model)
        if metadata.get("input_shape") != "%dx%dx%d" % shape:
            fail("input_shape in the metadata is %r" % metadata.get("input_shape"))
        if tensors["layers.0.weight"].shape != (5, 3, 3, 3):
            fail("layers.0.weight is %s, not (5, 3, 3, 3)" % (tensors["layers.0.weight"].shape,))
        net = AxonNet(metadata["layers"], shape).double()
        rows = torch.tensor(images.reshape(n, -1), dtype=torch.float64)
        state = {name: torch.tensor(np.array(t, dtype=np.float64)) for name, t in tensors.items()}
        net.load_state_dict(state, strict=True)
        with torch.no_grad():
            expected = net(rows).numpy()
        predicted = np.loadtxt("predicted.csv", delimiter=",", skiprows=1)[:, 1:]
        error = np.max(np.abs(predicted - expected))
        print("conv_torch_model: %s model: largest difference from PyTorch %.3g" % (precision, error))
        worst = max(worst, error)
    if not worst <= 1e-5:
        fail("axon predict and the PyTorch module differ by %.3g > 1e-5" % worst)
    print("conv_torch_model: the models load into torch.nn modules with the same outputs")


if __name__ == "__main__":
    main()

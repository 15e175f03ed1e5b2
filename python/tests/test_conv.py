"""test_conv.py: convolutional networks from Python (issue 29).

Proves: axon.Net takes the CLI's layer strings with input_shape=(h, w, c)
(or the shape in input_width's place); get_weights gives each layer's
parameters in its real shape (dense (out, in) and (out,), a convolution
(filters, channels, kh, kw) and (filters,) as torch.nn.Conv2d and the model
files hold them, pooling ()), and set_weights takes them back; the
forward pass equals a float64 NumPy convolution written from those shapes
(padding, stride, max pooling, the (row, column, channel) flattening before
the dense layer); 4-D arrays are image sets; and a conv network trained by
axon.train equals, weight for weight, the model `axon train` saves from the
same data, layout and seed (one thread), whose file holds the same shapes.
"""
import json
import os
import struct
import subprocess

import numpy as np
import pytest

import axon

LAYERS = "conv:4x3x3/p1:relu,maxpool:2,conv:6x3x2/s2:tanh,8:relu,3:softmax"
SHAPE = (10, 9, 2)


def images(n=120, seed=5):
    """A class is a bright square somewhere of its own (tests/conv_cli.sh's data)."""
    rng = np.random.default_rng(seed)
    h, w, c = SHAPE
    labels = rng.integers(0, 3, n)
    x = rng.normal(0, 0.3, (n, h, w, c)).astype(np.float32)
    for k in range(3):
        x[labels == k, 3 * k:3 * k + 4, 2:6, k % c] += 1.0
    return x, labels.astype(np.int32)


def test_conv_net_from_layer_strings_and_its_weight_shapes():
    net = axon.Net(input_shape=SHAPE, layers=LAYERS, seed=2)
    assert net.input_shape == SHAPE and net.input_width == 180
    assert net.layer_kinds == ["conv", "maxpool", "conv", "dense", "dense"]
    assert net.layer_shapes == [(10, 9, 4), (5, 4, 4), (2, 2, 6), (1, 1, 8), (1, 1, 3)]
    expected = [((4, 2, 3, 3), (4,)), (), ((6, 4, 3, 2), (6,)), ((8, 24), (8,)), ((3, 8), (3,))]
    assert net.weight_shapes() == expected
    weights = net.get_weights()
    assert [tuple(a.shape for a in layer) for layer in weights] == expected
    assert sum(a.size for layer in weights for a in layer) == net.parameter_count
    # the positional form, and a list of items, make the same network
    same = axon.Net(SHAPE, ["conv:4x3x3/p1:relu", "maxpool:2", "conv:6x3x2/s2:tanh", (8, "relu"),
                            (3, "softmax")], seed=2)
    assert same.layout == net.layout and np.array_equal(same.parameters, net.parameters)
    other = axon.Net(180, LAYERS, input_shape=SHAPE, seed=7)
    assert not np.array_equal(other.parameters, net.parameters)
    other.set_weights(weights)
    assert np.array_equal(other.parameters, net.parameters)
    assert all(np.array_equal(a, b) for la, lb in zip(other.get_weights(), weights)
               for a, b in zip(la, lb))
    flipped = list(weights)
    flipped[0] = (weights[0][0].transpose(0, 2, 3, 1), weights[0][1])
    with pytest.raises(ValueError, match=r"layer 1: \(4, 3, 3, 2\).*needs \(4, 2, 3, 3\)"):
        other.set_weights(flipped)
    with pytest.raises(ValueError, match="layer 2: .*nothing \\(pooling\\)"):
        other.set_weights(weights[:1] + [(np.zeros(1),)] + weights[2:])
    with pytest.raises(ValueError, match="not the product"):
        axon.Net(100, LAYERS, input_shape=SHAPE)
    with pytest.raises(ValueError, match="height, width, channels"):
        axon.Net(input_shape=(10, 9), layers=LAYERS)
    with pytest.raises(ValueError, match="image"):  # conv without an image input
        axon.Net(180, LAYERS)
    dense = axon.Net(5, "4:tanh,2:softmax")
    assert dense.input_shape is None and dense.weight_shapes() == [((4, 5), (4,)), ((2, 4), (2,))]


def numpy_conv(x, W, b, stride, padding):
    """x (n, h, w, c), W (f, c, kh, kw) as torch's: (n, oh, ow, f), float64."""
    n, h, w, c = x.shape
    f, _, kh, kw = W.shape
    x = np.pad(x, ((0, 0), (padding, padding), (padding, padding), (0, 0)))
    oh, ow = (h + 2 * padding - kh) // stride + 1, (w + 2 * padding - kw) // stride + 1
    out = np.empty((n, oh, ow, f))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride:i * stride + kh, j * stride:j * stride + kw, :]  # n kh kw c
            out[:, i, j, :] = np.einsum("nabc,fcab->nf", patch, W) + b
    return out


def numpy_max_pool(x, window):
    n, h, w, c = x.shape
    oh, ow = h // window, w // window
    x = x[:, :oh * window, :ow * window, :].reshape(n, oh, window, ow, window, c)
    return x.max(axis=(2, 4))


def test_conv_forward_equals_numpy_from_the_weight_shapes():
    X, y = images()
    net = axon.Net(SHAPE, LAYERS, precision="f64", seed=4)
    net.train(X, y, epochs=1, batch=16, lr=0.05)
    (W1, b1), _, (W2, b2), (W3, b3), (W4, b4) = net.get_weights()
    a = np.maximum(numpy_conv(X.astype(np.float64), W1, b1, 1, 1), 0)
    a = numpy_max_pool(a, 2)
    a = np.tanh(numpy_conv(a, W2, b2, 2, 0))
    a = np.maximum(a.reshape(len(a), -1) @ W3.T + b3, 0)  # (row, column, channel) order
    a = a @ W4.T + b4
    p = np.exp(a - a.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    np.testing.assert_allclose(net.predict(X), p, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(net.predict(X), net.predict(X.reshape(len(X), -1)))
    assert net.evaluate(X, y)["accuracy"] == pytest.approx(np.mean(p.argmax(1) == y))


def cli():
    program = os.path.join(os.path.dirname(os.environ.get("AXON_LIBRARY", "")), "axon")
    return program if os.access(program, os.X_OK) else None


def safetensors_shapes(path):
    with open(path, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(length))
    return {name: tuple(entry["shape"]) for name, entry in header.items()
            if name != "__metadata__"}


@pytest.mark.skipif(cli() is None, reason="no axon command beside AXON_LIBRARY (run under CTest)")
def test_conv_net_trained_in_python_equals_the_cli_run(tmp_path):
    X, y = images()
    np.save(tmp_path / "images.npy", X)
    np.save(tmp_path / "labels.npy", y.astype(np.int64))
    options = dict(optimizer="sgd", lr=0.05, momentum=0.9, batch=16, epochs=2, seed=3)
    subprocess.run([cli(), "train", "--data", str(tmp_path / "images.npy"), "--labels",
                    str(tmp_path / "labels.npy"), "--layers", LAYERS, "--threads", "1", "--quiet",
                    "--out", str(tmp_path / "cli.safetensors")]
                   + [f"--{k}={v}" for k, v in options.items()], check=True)
    data = axon.Dataset.open(tmp_path / "images.npy", labels=tmp_path / "labels.npy")
    assert data.image_shape == SHAPE
    try:
        net, summary = axon.train((X, y), layers=LAYERS, threads=1, **options)
    finally:
        axon.set_threads(None)
    assert net.input_shape == SHAPE and summary["epochs_run"] == 2
    loaded = axon.load(tmp_path / "cli.safetensors")
    assert loaded.input_shape == SHAPE and loaded.layout == net.layout
    assert np.array_equal(loaded.parameters, net.parameters)  # float32 both: bit for bit
    for mine, theirs in zip(net.get_weights(), loaded.get_weights()):
        assert all(np.array_equal(a, b) for a, b in zip(mine, theirs))
    # the file holds the convolutions' weights in the shapes get_weights gives
    in_file = sorted(safetensors_shapes(tmp_path / "cli.safetensors").values())
    in_python = sorted(a.shape for layer in loaded.get_weights() for a in layer)
    assert in_file == in_python
    net.save(tmp_path / "py.safetensors")
    again = axon.load(tmp_path / "py.safetensors")
    assert again.input_shape == SHAPE and np.array_equal(again.predict(X), net.predict(X))

"""axon.to_torch and axon.from_torch: a network and a torch.nn.Sequential carry the
same weights bit for bit both ways, predict the same to 1e-6 (dense and conv
networks, torch taking NCHW where axon takes NHWC), and modules axon has no
counterpart for are refused naming them. Skipped without PyTorch
(Debian: python3-torch)."""
import numpy as np
import pytest

import axon

torch = pytest.importorskip("torch", reason="needs PyTorch (Debian: python3-torch)")
nn = torch.nn

DENSE = "16:tanh,8:sigmoid,6:relu,3:softmax"
CONV = "conv:4x3x3/p1:relu,maxpool:2,conv:6x3x2/s2/p1:tanh,avgpool:2/s1,16:sigmoid,3:softmax"
SHAPE = (10, 9, 2)


def trained(shape_or_width, layers, precision="f32"):
    rng = np.random.default_rng(7)
    net = axon.Net(shape_or_width, layers, precision=precision, seed=3)
    X = rng.normal(0, 1, (96, net.input_width)).astype(np.float32)
    net.train(X, rng.integers(0, net.output_width, 96), optimizer="adam", lr=0.01, epochs=2,
              batch=16)
    return net


def inputs(rows, shape, seed=11):
    return np.random.default_rng(seed).normal(0, 1, (rows,) + tuple(shape)).astype(np.float32)


def torch_predict(module, x, dtype=torch.float32):
    with torch.no_grad():
        return module(torch.from_numpy(x).to(dtype)).numpy()


def same_bits(a, b):
    return all(len(p) == len(q) and all(np.array_equal(u, v) and u.dtype == v.dtype
                                        for u, v in zip(p, q)) for p, q in zip(a, b))


@pytest.mark.parametrize("precision", ["f32", "f64"])
def test_dense_network_round_trip(precision):
    net = trained(12, DENSE, precision)
    module = axon.to_torch(net)
    dtype = torch.float32 if precision == "f32" else torch.float64
    assert [type(m).__name__ for m in module] == \
        ["Linear", "Tanh", "Linear", "Sigmoid", "Linear", "ReLU", "Linear", "Softmax"]
    assert module[0].weight.dtype == dtype
    # the weights themselves, bit for bit (float64 copies of axon's values)
    assert np.array_equal(module[0].weight.detach().numpy().astype(np.float64),
                          net.get_weights()[0][0])
    x = inputs(50, (12,))
    np.testing.assert_allclose(torch_predict(module, x, dtype), net.predict(x), rtol=0, atol=1e-6)
    back = axon.from_torch(module)
    assert back.layout == net.layout and back.precision == precision
    assert same_bits(back.get_weights(), net.get_weights())
    assert np.array_equal(back.predict(x), net.predict(x))


def test_conv_network_round_trip_permutes_the_flattened_columns():
    net = trained(SHAPE, CONV)
    module = axon.to_torch(net)
    assert [type(m).__name__ for m in module] == \
        ["Conv2d", "ReLU", "MaxPool2d", "Conv2d", "Tanh", "AvgPool2d", "Flatten", "Linear",
         "Sigmoid", "Linear", "Softmax"]
    assert module[3].stride == (2, 2) and module[3].padding == (1, 1)
    weights = net.get_weights()
    assert np.array_equal(module[0].weight.detach().numpy().astype(np.float64), weights[0][0])
    # the first dense layer reads (h, w, c) in axon, (c, h, w) in torch: the same numbers
    dense = module[7].weight.detach().numpy().astype(np.float64)
    h, w, c = net.layer_shapes[3]
    assert np.array_equal(dense.reshape(-1, c, h, w).transpose(0, 2, 3, 1).reshape(16, -1),
                          weights[4][0])
    assert not np.array_equal(dense, weights[4][0])  # the permutation is not the identity
    x = inputs(64, SHAPE)
    expected = net.predict(x)
    got = torch_predict(module, np.ascontiguousarray(x.transpose(0, 3, 1, 2)))
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)
    # the same class wherever axon's top two differ by more than the 1e-6 the outputs may
    # (a closer tie may fall either way on another CPU's kernels)
    top_two = np.sort(expected, axis=1)[:, -2:]
    clear = top_two[:, 1] - top_two[:, 0] > 2e-6
    assert clear.sum() >= len(expected) // 2
    assert np.array_equal(got.argmax(1)[clear], expected.argmax(1)[clear])
    back = axon.from_torch(module, input_shape=SHAPE)
    assert back.layout == net.layout and back.input_shape == SHAPE
    assert same_bits(back.get_weights(), weights)
    assert np.array_equal(back.predict(x), expected)


def test_a_module_from_torch_predicts_as_torch():
    torch.manual_seed(0)
    module = nn.Sequential(nn.Conv2d(1, 3, 5, padding=2), nn.ReLU(), nn.AvgPool2d(2),
                           nn.Conv2d(3, 4, (3, 2), stride=2, bias=False), nn.Sigmoid(),
                           nn.MaxPool2d(2, stride=1), nn.Flatten(), nn.Linear(4 * 2 * 2, 7),
                           nn.Tanh(), nn.Linear(7, 5)).eval()
    net = axon.from_torch(module, input_shape=(14, 12, 1))
    assert net.layout == "14x12x1-conv:3x5x5/p2:relu-avgpool:2-conv:4x3x2/s2:sigmoid-" \
                         "maxpool:2/s1-7:tanh-5:identity"
    assert np.all(net.get_weights()[2][1] == 0)  # no bias in torch: zeros in axon
    x = inputs(30, (14, 12, 1))
    np.testing.assert_allclose(net.predict(x), torch_predict(module, x.transpose(0, 3, 1, 2).copy()),
                               rtol=0, atol=1e-6)
    assert same_bits(axon.from_torch(axon.to_torch(net), input_shape=(14, 12, 1)).get_weights(),
                     net.get_weights())


@pytest.mark.parametrize("modules, message", [
    ([nn.Linear(4, 3), nn.Dropout(0.5), nn.Linear(3, 2)], "Dropout.*training option"),
    ([nn.Linear(4, 3), nn.BatchNorm1d(3)], "BatchNorm1d"),
    ([nn.Linear(4, 3), nn.ReLU(), nn.ReLU()], "does not follow a Linear"),
    ([nn.Linear(4, 3), nn.Softmax(dim=0)], "Softmax"),
    ([nn.Conv2d(1, 2, 3), nn.Flatten(), nn.Linear(8, 2)], "input_shape"),
    ([nn.Conv2d(1, 2, 3, dilation=2), nn.Flatten(), nn.Linear(2, 2)], "dilation"),
    ([nn.Conv2d(1, 2, 3, stride=(1, 2)), nn.Flatten(), nn.Linear(4, 2)], "stride"),
    ([nn.MaxPool2d(2, ceil_mode=True), nn.Flatten(), nn.Linear(4, 2)], "ceil_mode"),
])
def test_modules_without_an_axon_counterpart_are_refused(modules, message):
    image = isinstance(modules[0], (nn.Conv2d, nn.MaxPool2d)) and message != "input_shape"
    with pytest.raises(ValueError, match=message):
        axon.from_torch(nn.Sequential(*modules), input_shape=(4, 4, 1) if image else None)


def test_an_image_input_read_by_a_dense_layer_takes_nchw_in_torch():
    """A dense first layer on an image input reads (h, w, c) rows in axon: torch's module
    starts with Flatten over (c, h, w) and the permuted columns, and gives the same."""
    net = trained((4, 3, 2), "5:relu,3:softmax")
    module = axon.to_torch(net)
    assert [type(m).__name__ for m in module] == ["Flatten", "Linear", "ReLU", "Linear",
                                                  "Softmax"]
    x = inputs(40, (4, 3, 2))
    np.testing.assert_allclose(torch_predict(module, x.transpose(0, 3, 1, 2).copy()),
                               net.predict(x), rtol=0, atol=1e-6)
    back = axon.from_torch(module, input_shape=(4, 3, 2))
    assert back.input_shape == (4, 3, 2) and same_bits(back.get_weights(), net.get_weights())

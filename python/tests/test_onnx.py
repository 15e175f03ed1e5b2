"""ONNX export (Net.to_onnx, ax_net_export_onnx): the file passes onnx's checker
(with shape inference), holds axon's weights bit for bit, and computes
axon's predictions to 1e-6 when its operators are run by a NumPy evaluator
written from the ONNX specification (onnx_numpy.py), and by onnxruntime where
it is installed. Skipped without Debian's python3-onnx."""
import os

import numpy as np
import pytest

import axon

onnx = pytest.importorskip("onnx", reason="needs the onnx package (Debian: python3-onnx)")
from onnx import numpy_helper  # noqa: E402

import onnx_numpy  # noqa: E402

DENSE = "16:tanh,8:sigmoid,6:relu,3:softmax"
CONV = "conv:4x3x3/p1:relu,maxpool:2,conv:6x3x2/s2/p1:tanh,avgpool:2/s1,16:sigmoid,3:softmax"
SHAPE = (10, 9, 2)


def trained(shape_or_width, layers, precision="f32", targets=False):
    """A network trained for two epochs on random data, so that its weights are no
    initialiser's."""
    rng = np.random.default_rng(7)
    net = axon.Net(shape_or_width, layers, precision=precision, seed=3)
    width = net.input_width
    X = rng.normal(0, 1, (96, width)).astype(np.float32)
    if targets:
        y = rng.normal(0, 1, (96, net.output_width)).astype(np.float32)
    else:
        y = rng.integers(0, net.output_width, 96)
    net.train(X, y, optimizer="adam", lr=0.01, epochs=2, batch=16)
    return net


def images(rows, shape, seed=11):
    return np.random.default_rng(seed).normal(0, 1, (rows,) + tuple(shape)).astype(np.float32)


def export(net, tmp_path, name="m.onnx"):
    path = tmp_path / name
    net.to_onnx(path)
    model = onnx.load(str(path))
    onnx.checker.check_model(model, full_check=True)
    return model


def run_onnxruntime(path, x):
    try:
        import onnxruntime
    except ImportError:
        return None
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(["output"], {"input": x})[0]


def dims(value_info):
    return [d.dim_value or d.dim_param for d in value_info.type.tensor_type.shape.dim]


@pytest.mark.parametrize("precision", ["f32", "f64"])
def test_dense_network_computes_axons_predictions(tmp_path, precision):
    net = trained(12, DENSE, precision)
    model = export(net, tmp_path)
    assert dims(model.graph.input[0]) == ["N", 12]
    assert dims(model.graph.output[0]) == ["N", 3]
    x = images(50, (12,))
    expected = net.predict(x)
    (got,) = onnx_numpy.run(model, {"input": x})
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)
    assert [n.op_type for n in model.graph.node] == \
        ["Gemm", "Tanh", "Gemm", "Sigmoid", "Gemm", "Relu", "Gemm", "Softmax"]
    runtime = run_onnxruntime(tmp_path / "m.onnx", x)
    if runtime is not None:
        np.testing.assert_allclose(runtime, expected, rtol=0, atol=1e-6)


def test_regression_output_is_the_last_product(tmp_path):
    net = trained(5, "7:relu,2:identity", targets=True)
    model = export(net, tmp_path)
    assert model.graph.node[-1].op_type == "Gemm"
    x = images(40, (5,))
    (got,) = onnx_numpy.run(model, {"input": x})
    np.testing.assert_allclose(got, net.predict(x), rtol=1e-6, atol=1e-6)


def test_conv_network_takes_nhwc_images_and_computes_axons_predictions(tmp_path):
    net = trained(SHAPE, CONV)
    model = export(net, tmp_path)
    assert dims(model.graph.input[0]) == ["N", 10, 9, 2]  # what axon takes, (rows, h, w, c)
    x = images(64, SHAPE)
    expected = net.predict(x)
    (got,) = onnx_numpy.run(model, {"input": x})
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)
    # the same class wherever axon's top two differ by more than the 1e-6 the outputs may
    # (a closer tie may fall either way on another CPU's kernels)
    top_two = np.sort(expected, axis=1)[:, -2:]
    clear = top_two[:, 1] - top_two[:, 0] > 2e-6
    assert clear.sum() >= len(expected) // 2
    assert np.array_equal(got.argmax(1)[clear], expected.argmax(1)[clear])
    ops = [n.op_type for n in model.graph.node]
    assert ops[:2] == ["Transpose", "Conv"] and "Flatten" in ops
    runtime = run_onnxruntime(tmp_path / "m.onnx", x)
    if runtime is not None:
        np.testing.assert_allclose(runtime, expected, rtol=0, atol=1e-6)


def test_initializers_are_axons_weights_bit_for_bit(tmp_path):
    net = trained(SHAPE, CONV)
    model = export(net, tmp_path)
    stored = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for i, layer in enumerate(net.get_weights()):
        if not layer:
            assert f"layers.{i}.weight" not in stored
            continue
        weight, bias = layer
        assert stored[f"layers.{i}.weight"].dtype == np.float32
        assert np.array_equal(stored[f"layers.{i}.weight"], weight.astype(np.float32))
        assert np.array_equal(stored[f"layers.{i}.bias"], bias.astype(np.float32))
    # the numbers match the ones the float64 copies came from: nothing was rounded
    assert all(np.array_equal(stored[f"layers.{i}.weight"].astype(np.float64), layer[0])
               for i, layer in enumerate(net.get_weights()) if layer)


def test_the_evaluator_refuses_what_it_does_not_implement(tmp_path):
    """The reference must not pass a graph by ignoring an attribute."""
    net = trained(SHAPE, CONV)
    model = export(net, tmp_path)
    conv = next(n for n in model.graph.node if n.op_type == "Conv")
    conv.attribute.append(onnx.helper.make_attribute("group", 2))
    with pytest.raises(NotImplementedError, match="group"):
        onnx_numpy.run(model, {"input": images(2, SHAPE)})


def test_the_evaluator_follows_the_specification_on_a_hand_made_case():
    """Conv of a known image: 3x3 ones kernel, padding 1, stride 2 on a 4x4 ramp."""
    x = np.arange(16, dtype=np.float64).reshape(1, 1, 4, 4)
    w = np.ones((1, 1, 3, 3))
    y = onnx_numpy.conv(x, w, np.array([0.5]), strides=(2, 2), pads=(1, 1, 1, 1))
    # windows centred on (0,0), (0,2), (2,0), (2,2) of the padded image
    assert y.shape == (1, 1, 2, 2)
    assert y[0, 0].tolist() == [[0 + 1 + 4 + 5 + 0.5, 1 + 2 + 3 + 5 + 6 + 7 + 0.5],
                                [4 + 5 + 8 + 9 + 12 + 13 + 0.5, 5 + 6 + 7 + 9 + 10 + 11 + 13 + 14 + 15 + 0.5]]
    assert onnx_numpy.pool(x, (2, 2), (2, 2)).ravel().tolist() == [5, 7, 13, 15]
    assert onnx_numpy.pool(x, (2, 2), (2, 2), kind="avg").ravel().tolist() == [2.5, 4.5, 10.5,
                                                                               12.5]


def test_unwritable_paths_fail_naming_the_path_and_leave_nothing(tmp_path):
    net = trained(12, DENSE)
    with pytest.raises(OSError, match="no_such_folder"):
        net.to_onnx(tmp_path / "no_such_folder" / "m.onnx")
    (tmp_path / "folder").mkdir()
    with pytest.raises(ValueError, match="folder: is a folder"):  # as every output of axon's
        net.to_onnx(tmp_path / "folder")
    locked = tmp_path / "locked"
    locked.mkdir()
    os.chmod(locked, 0o500)
    try:
        if not os.access(locked, os.W_OK):  # root writes anywhere
            with pytest.raises(OSError, match="locked"):
                net.to_onnx(locked / "m.onnx")
            assert os.listdir(locked) == []
    finally:
        os.chmod(locked, 0o700)
    # an old file is replaced whole
    old = tmp_path / "old.onnx"
    old.write_bytes(b"old")
    net.to_onnx(old)
    onnx.checker.check_model(onnx.load(str(old)))
    assert sorted(os.listdir(tmp_path)) == ["folder", "locked", "old.onnx"]


def test_an_image_input_read_by_a_dense_layer(tmp_path):
    """No convolution: the NHWC input is flattened as axon reads it, no transpose."""
    net = trained((4, 3, 2), "5:relu,3:softmax")
    model = export(net, tmp_path)
    assert dims(model.graph.input[0]) == ["N", 4, 3, 2]
    assert [n.op_type for n in model.graph.node][:2] == ["Flatten", "Gemm"]
    x = images(30, (4, 3, 2))
    (got,) = onnx_numpy.run(model, {"input": x})
    np.testing.assert_allclose(got, net.predict(x), rtol=0, atol=1e-6)

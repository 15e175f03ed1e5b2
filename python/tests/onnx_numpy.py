"""onnx_numpy.py: runs an ONNX graph with NumPy in float64, each operator
written from the ONNX operator specification (https://onnx.ai/onnx/operators/,
opset 13) for the operators and attributes axon's export uses: Gemm, Conv,
MaxPool, AveragePool, Relu, Sigmoid, Tanh, Softmax, Flatten, Transpose.
An attribute the code does not implement (dilations, group, auto_pad,
ceil_mode, pads of a pooling, ...) set to a non-default value is refused,
so a graph is never run with a meaning it does not have. Independent of
axon: onnx 1.12 (Debian) has no reference evaluator and Debian has no
onnxruntime.

    outputs = run(onnx.load("m.onnx"), {"input": x})
"""
import numpy as np
from onnx import helper, numpy_helper


def _attributes(node):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _refuse_others(node, attributes, known):
    """Attributes this evaluator does not implement must be absent or at their default."""
    defaults = {"dilations": None, "group": 1, "auto_pad": b"NOTSET", "ceil_mode": 0,
                "storage_order": 0, "count_include_pad": 0, "alpha": 1.0, "beta": 1.0,
                "transA": 0}
    for name, value in attributes.items():
        if name in known:
            continue
        default = defaults.get(name, "none")
        if name == "dilations" and all(v == 1 for v in value):
            continue
        if value != default:
            raise NotImplementedError(f"{node.op_type} {node.name}: attribute {name}={value}")


def _windows(x, kh, kw, sh, sw):
    """x (n, c, h, w) -> (n, c, oh, ow, kh, kw) views of every window, floor output size."""
    n, c, h, w = x.shape
    oh, ow = (h - kh) // sh + 1, (w - kw) // sw + 1
    s = x.strides
    return np.lib.stride_tricks.as_strided(
        x, (n, c, oh, ow, kh, kw), (s[0], s[1], s[2] * sh, s[3] * sw, s[2], s[3]),
        writeable=False)


def conv(x, w, b, strides=(1, 1), pads=(0, 0, 0, 0), kernel_shape=None):
    """Conv (NCHW, W (M, C, kH, kW)): y[n, m] = b[m] + sum_c,i,j x_pad[n, c, oh*s + i, ...] w[m, c, i, j]
    (a cross-correlation, as the specification's). pads: [top, left, bottom, right]."""
    if kernel_shape is not None and tuple(kernel_shape) != w.shape[2:]:
        raise ValueError("Conv: kernel_shape differs from the weight's")
    top, left, bottom, right = pads
    x = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    windows = _windows(np.ascontiguousarray(x), w.shape[2], w.shape[3], *strides)
    y = np.einsum("ncpqij,mcij->nmpq", windows, w, optimize=True)
    return y + (b.reshape(1, -1, 1, 1) if b is not None else 0)


def pool(x, kernel_shape, strides=None, pads=(0, 0, 0, 0), kind="max"):
    """MaxPool / AveragePool without padding, ceil_mode 0: floor((in - k) / s) + 1."""
    if any(pads):
        raise NotImplementedError("pooling with pads")
    strides = strides or (1, 1)
    windows = _windows(np.ascontiguousarray(x), kernel_shape[0], kernel_shape[1], *strides)
    return windows.max(axis=(4, 5)) if kind == "max" else windows.mean(axis=(4, 5))


def gemm(a, b, c=None, alpha=1.0, beta=1.0, transA=0, transB=0):
    """Gemm: alpha * A' B' + beta * C, A' = A^T if transA, B' = B^T if transB."""
    a = a.T if transA else a
    b = b.T if transB else b
    y = alpha * (a @ b)
    return y + beta * c if c is not None else y


def softmax(x, axis=-1):
    """Softmax (opset 13): exp(x) / sum(exp(x)) along axis (shifted by the max for range)."""
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def flatten(x, axis=1):
    """Flatten: (d0 ... d(axis-1), d(axis) ... dn) -> 2-D, row-major."""
    return x.reshape(int(np.prod(x.shape[:axis])), -1)


def run(model, inputs):
    """Runs model.graph on inputs (name -> array) in float64; returns the graph's outputs
    as a list in their order."""
    values = {t.name: numpy_helper.to_array(t).astype(np.float64)
              for t in model.graph.initializer}
    values.update({name: np.asarray(v, dtype=np.float64) for name, v in inputs.items()})
    opsets = {o.domain: o.version for o in model.opset_import}
    if opsets.get("", 0) != 13:
        raise NotImplementedError(f"opset {opsets}: this evaluator follows opset 13")
    for node in model.graph.node:
        args = [values[name] if name else None for name in node.input]
        at = _attributes(node)
        op = node.op_type
        if op == "Gemm":
            _refuse_others(node, at, {"alpha", "beta", "transA", "transB"})
            y = gemm(*args, **at)
        elif op == "Conv":
            _refuse_others(node, at, {"strides", "pads", "kernel_shape"})
            y = conv(*args, **at)
        elif op in ("MaxPool", "AveragePool"):
            _refuse_others(node, at, {"strides", "pads", "kernel_shape"})
            y = pool(args[0], kind="max" if op == "MaxPool" else "average", **at)
        elif op == "Relu":
            y = np.maximum(args[0], 0.0)
        elif op == "Sigmoid":
            y = 1.0 / (1.0 + np.exp(-args[0]))
        elif op == "Tanh":
            y = np.tanh(args[0])
        elif op == "Softmax":
            _refuse_others(node, at, {"axis"})
            y = softmax(args[0], **at)
        elif op == "Flatten":
            _refuse_others(node, at, {"axis"})
            y = flatten(args[0], **at)
        elif op == "Transpose":
            _refuse_others(node, at, {"perm"})
            y = np.transpose(args[0], at.get("perm"))
        else:
            raise NotImplementedError(f"operator {op}")
        values[node.output[0]] = y
    return [values[o.name] for o in model.graph.output]

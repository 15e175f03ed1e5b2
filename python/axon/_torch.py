"""_torch.py: axon.to_torch(net) and axon.from_torch(module): a network as a
torch.nn.Sequential and back, weights equal to the last bit.

Layouts. axon holds an image as (row, column, channel) and a dense layer
after a feature map reads it flattened in that order; torch holds
(channel, row, column) and nn.Flatten flattens in that order. Convolution
weights are (filters, channels, kernel_height, kernel_width) in both, so
they move as they are; the first dense layer after a feature map has its
input columns permuted from (h, w, c) to (c, h, w) order (and back), which
moves bits without arithmetic. So the torch module takes what torch users
give it: (N, channels, height, width) for a network with an image input
(x_nhwc.permute(0, 3, 1, 2)), (N, features) otherwise.

torch is imported when these are called, not with axon.
"""
import numpy as np

from ._net import Net

_ACTIVATION_MODULES = {"relu": "ReLU", "sigmoid": "Sigmoid", "tanh": "Tanh"}
_TORCH_DTYPES = {"f32": "float32", "bf16": "float32", "f64": "float64"}


def _torch():
    try:
        import torch
    except ImportError as error:
        raise ImportError("axon.to_torch/from_torch need PyTorch (Debian: python3-torch; "
                          "pip: torch)") from error
    return torch


def _hwc_columns_to_chw(weight, shape):
    """A dense weight (out, h*w*c) whose columns are in (h, w, c) order -> (c, h, w) order."""
    height, width, channels = shape
    out = weight.shape[0]
    return weight.reshape(out, height, width, channels).transpose(0, 3, 1, 2).reshape(out, -1)


def _chw_columns_to_hwc(weight, shape):
    """The inverse of _hwc_columns_to_chw."""
    height, width, channels = shape
    out = weight.shape[0]
    return weight.reshape(out, channels, height, width).transpose(0, 2, 3, 1).reshape(out, -1)


def to_torch(net, dtype=None):
    """net as a torch.nn.Sequential of Linear, Conv2d, MaxPool2d, AvgPool2d, Flatten and
    ReLU/Sigmoid/Tanh/Softmax(dim=1), in inference mode (eval()), weights equal to the
    last bit (float32 for f32 and bf16 networks, float64 for f64; dtype="float64" or
    torch.float64 overrides: float32 weights are exact in float64).
    It takes (N, channels, height, width) for a network with an image input (axon's
    (N, height, width, channels) permuted), else (N, features), and gives what
    net.predict gives."""
    torch = _torch()
    nn = torch.nn
    dtype = dtype or _TORCH_DTYPES[net.precision]
    dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype  # "float64" or torch's
    weights = net.get_weights()
    settings = net.layer_settings
    shape = net.input_shape  # (h, w, c) of the current feature map, None once flat
    modules = []
    with torch.no_grad():
        for i, (setting, layer_weights) in enumerate(zip(settings, weights)):
            kind = setting["kind"]
            if kind == "dense":
                weight, bias = layer_weights
                if shape is not None:
                    modules.append(nn.Flatten())
                    weight = _hwc_columns_to_chw(weight, shape)
                    shape = None
                module = nn.Linear(weight.shape[1], weight.shape[0], dtype=dtype)
                module.weight.copy_(torch.from_numpy(np.ascontiguousarray(weight)))
                module.bias.copy_(torch.from_numpy(bias))
            elif kind == "conv":
                weight, bias = layer_weights
                module = nn.Conv2d(weight.shape[1], weight.shape[0], tuple(setting["kernel"]),
                                   stride=setting["stride"], padding=setting["padding"],
                                   dtype=dtype)
                module.weight.copy_(torch.from_numpy(weight))
                module.bias.copy_(torch.from_numpy(bias))
            elif kind in ("maxpool", "avgpool"):
                pool = nn.MaxPool2d if kind == "maxpool" else nn.AvgPool2d
                module = pool(setting["window"], stride=setting["stride"])
            else:  # a kind this module does not know yet
                raise NotImplementedError(f"axon.to_torch: layer {i + 1} is a {kind} layer, "
                                          "which has no torch counterpart here")
            modules.append(module)
            if kind in ("dense", "conv"):
                activation = setting["activation"]
                if activation == "softmax":
                    modules.append(nn.Softmax(dim=1))
                elif activation in _ACTIVATION_MODULES:
                    modules.append(getattr(nn, _ACTIVATION_MODULES[activation])())
            if kind != "dense":
                shape = net.layer_shapes[i]
    if shape is not None:  # a network ending in a feature map gives axon's flat rows
        raise NotImplementedError("axon.to_torch: the network ends in a feature map; "
                                  "only networks ending in a dense layer are converted")
    return nn.Sequential(*modules).eval()


def _pair(value, what, index, name):
    """A torch int-or-pair setting as one int; refuses unequal pairs axon cannot hold."""
    if isinstance(value, (tuple, list)):
        if len(set(value)) != 1:
            raise ValueError(f"axon.from_torch: module {index} ({name}): {what} {tuple(value)} "
                             f"differs along rows and columns; axon takes one {what}")
        value = value[0]
    return int(value)


def from_torch(module, input_shape=None, precision=None, loss="auto"):
    """A torch.nn.Sequential of Linear, Conv2d, MaxPool2d, AvgPool2d, Flatten, ReLU,
    Sigmoid, Tanh, Softmax (dim 1 or -1, last) and Identity as an axon.Net with its
    weights equal to the last bit. input_shape=(height, width, channels) is needed for
    convolution and pooling (the module then takes (N, channels, height, width), the
    Net (N, height, width, channels), see to_torch). precision: f32 or f64 (default from
    the module's dtype). Anything else (Dropout, BatchNorm, ...) is a ValueError naming
    the module."""
    torch = _torch()
    nn = torch.nn
    if not isinstance(module, nn.Sequential):
        raise TypeError(f"axon.from_torch takes a torch.nn.Sequential, not "
                        f"{type(module).__name__}")
    children = list(module.children())
    if input_shape is not None:
        input_shape = tuple(int(n) for n in input_shape)
    shape = input_shape  # (h, w, c) of the current feature map, None once flat
    items, weights = [], []
    dtypes = set()
    last = None  # index into items of the last layer with an activation slot
    for index, child in enumerate(children):
        name = type(child).__name__
        if isinstance(child, nn.Linear):
            weight = child.weight.detach().cpu().numpy().astype(np.float64)
            bias = child.bias.detach().cpu().numpy().astype(np.float64) if child.bias is not None \
                else np.zeros(child.out_features)
            dtypes.add(child.weight.dtype)
            if shape is not None:
                if shape[0] * shape[1] * shape[2] != child.in_features:
                    raise ValueError(f"axon.from_torch: module {index} (Linear) takes "
                                     f"{child.in_features} inputs; the feature map before it "
                                     f"is (h, w, c) = {shape}")
                weight = _chw_columns_to_hwc(weight, shape)
                shape = None
            items.append([f"{child.out_features}", "identity"])
            weights.append((weight, bias))
            last = len(items) - 1
        elif isinstance(child, nn.Conv2d):
            if shape is None:
                raise ValueError(f"axon.from_torch: module {index} (Conv2d) needs an image "
                                 "input: give input_shape=(height, width, channels)")
            if child.groups != 1 or _pair(child.dilation, "dilation", index, name) != 1 or \
                    child.padding_mode != "zeros":
                raise ValueError(f"axon.from_torch: module {index} (Conv2d): groups, dilation "
                                 "and padding modes other than 1, 1 and zeros have no axon "
                                 "counterpart")
            if child.in_channels != shape[2]:
                raise ValueError(f"axon.from_torch: module {index} (Conv2d) takes "
                                 f"{child.in_channels} channels; its input has {shape[2]}")
            padding = 0 if child.padding == "valid" else child.padding
            if isinstance(padding, str):
                raise ValueError(f"axon.from_torch: module {index} (Conv2d): padding "
                                 f"'{padding}' has no axon counterpart; give numbers")
            padding = _pair(padding, "padding", index, name)
            stride = _pair(child.stride, "stride", index, name)
            kh, kw = child.kernel_size
            items.append([f"conv:{child.out_channels}x{kh}x{kw}/s{stride}/p{padding}",
                          "identity"])
            weight = child.weight.detach().cpu().numpy().astype(np.float64)
            bias = child.bias.detach().cpu().numpy().astype(np.float64) if child.bias is not None \
                else np.zeros(child.out_channels)
            dtypes.add(child.weight.dtype)
            weights.append((weight, bias))
            last = len(items) - 1
            shape = ((shape[0] + 2 * padding - kh) // stride + 1,
                     (shape[1] + 2 * padding - kw) // stride + 1, child.out_channels)
        elif isinstance(child, (nn.MaxPool2d, nn.AvgPool2d)):
            if shape is None:
                raise ValueError(f"axon.from_torch: module {index} ({name}) needs an image "
                                 "input: give input_shape=(height, width, channels)")
            window = _pair(child.kernel_size, "kernel_size", index, name)
            stride = _pair(child.stride if child.stride is not None else window, "stride",
                           index, name)
            dilation = getattr(child, "dilation", 1)
            if _pair(child.padding, "padding", index, name) != 0 or child.ceil_mode or \
                    _pair(dilation, "dilation", index, name) != 1 or \
                    getattr(child, "divisor_override", None) is not None:
                raise ValueError(f"axon.from_torch: module {index} ({name}): padding, "
                                 "ceil_mode, dilation and divisor_override are not axon's "
                                 "(no padding, floor)")
            kind = "maxpool" if isinstance(child, nn.MaxPool2d) else "avgpool"
            items.append([f"{kind}:{window}/s{stride}", None])
            weights.append(())
            last = None
            shape = ((shape[0] - window) // stride + 1, (shape[1] - window) // stride + 1,
                     shape[2])
        elif isinstance(child, nn.Flatten):
            if child.start_dim != 1 or child.end_dim != -1:
                raise ValueError(f"axon.from_torch: module {index} (Flatten) must flatten "
                                 "dimensions 1 to -1")
            # axon flattens before a dense layer by itself; the order is handled there.
        elif isinstance(child, nn.Identity):
            pass
        elif isinstance(child, (nn.ReLU, nn.Sigmoid, nn.Tanh, nn.Softmax)):
            activation = {nn.ReLU: "relu", nn.Sigmoid: "sigmoid", nn.Tanh: "tanh",
                          nn.Softmax: "softmax"}[type(child)]
            if last is None or items[last][1] != "identity":
                raise ValueError(f"axon.from_torch: module {index} ({name}) does not follow a "
                                 "Linear or Conv2d directly; axon applies one activation per "
                                 "layer, after its product")
            if activation == "softmax" and (child.dim not in (1, -1) or
                                            index != len(children) - 1 or shape is not None):
                raise ValueError(f"axon.from_torch: module {index} (Softmax): axon's softmax is "
                                 "over dimension 1 of the last Linear's outputs, last")
            items[last][1] = activation
        else:
            hint = (" (axon's dropout is a training option, Net.train(dropout=...); at "
                    "inference it does nothing: leave it out of the Sequential)"
                    if isinstance(child, nn.modules.dropout._DropoutNd) else "")
            raise ValueError(f"axon.from_torch: module {index} ({name}) has no axon "
                             f"counterpart{hint}")
    if not items:
        raise ValueError("axon.from_torch: the Sequential has no layers")
    if shape is not None:
        raise ValueError("axon.from_torch: the Sequential ends in a feature map; axon's "
                         "networks end in a Linear layer")
    layers = ",".join(text if activation is None else f"{text}:{activation}"
                      for text, activation in items)
    if precision is None:
        precision = "f64" if dtypes == {torch.float64} else "f32"
        if dtypes - {torch.float32, torch.float64}:
            raise ValueError(f"axon.from_torch: weights of type {sorted(map(str, dtypes))}; "
                             "axon takes float32 or float64")
    first = weights[0][0] if weights and len(weights[0]) else None
    if input_shape is not None:
        net = Net(input_shape=input_shape, layers=layers, precision=precision, loss=loss)
    else:
        net = Net(first.shape[1], layers, precision=precision, loss=loss)
    net.set_weights(weights)
    return net

"""_net.py: axon.Net (create, load, save, predict, evaluate, train) and axon.train.

Training runs in ax_train with the GIL released (ctypes). A progress
callback of this module is called by the library after every step (the
library's progress_interval 0) and at the end of every epoch; it calls the
user's callback (throttled to progress_interval seconds within an epoch),
and answers the library's "go on?" with False once Ctrl-C was pressed:
while ax_train runs on the main thread, SIGINT only sets a flag, which the
callback sees (Python runs signal handlers on the main thread between
bytecodes, and the callback is such a time). ax_train then returns after
the step it was in, with the network holding that step's weights, and
Net.train raises KeyboardInterrupt.

Every library call on a Net, a Dataset or an OptimizerState holds the
object's guard (_guard.py): close() while one runs raises RuntimeError
instead of freeing memory the library reads, and a closed object raises
ValueError.
"""
import contextlib
import ctypes
import math
import signal
import sys
import threading
import time

import numpy as np

from . import _lib
from ._data import Dataset, as_dataset, check_finite, features_array, is_sparse, pointer
from ._guard import Guard
from ._lib import lib
from ._optimizer_state import OptimizerState

_PRECISIONS = {"f32": 0, "float32": 0, "float": 0, "f64": 1, "float64": 1, "double": 1,
               "bf16": 2, "bfloat16": 2}
_PRECISION_NAMES = _lib.PRECISION_NAMES
_KEEP_BEST = {None: 0, "none": 0, "validation": 1, "test": 2}


def _precision(value):
    if isinstance(value, int) and value in _PRECISION_NAMES:
        return value
    try:
        return _PRECISIONS[str(value).lower()]
    except KeyError:
        raise ValueError(f"axon: precision must be f32, f64 or bf16, not {value!r}") from None


_threads_held = False


def set_threads(n=None):
    """Threads for OpenMP and the BLAS (None or <= 0: OMP_NUM_THREADS, else all cores).
    Process-wide for the BLAS (axon.h "Threads"): call it before starting threads.
    A count given here is held while training, as the command's --threads N holds it;
    None leaves it to the thread governor (ax_train_config.adapt_threads)."""
    global _threads_held
    _lib.check(lib.ax_set_threads(0 if n is None else int(n)), "threads")
    _threads_held = n is not None and int(n) > 0


def threads():
    return lib.ax_threads()


def build_info():
    """Facts about the library and this machine, as a dict."""
    info = lib.ax_build_info_get()
    facts = {name: (getattr(info, name).decode() if isinstance(getattr(info, name), bytes)
                    else getattr(info, name)) for name, _ in _lib.BuildInfo._fields_}
    facts["ignored_openblas_coretype"] = _lib.ignored_openblas_coretype
    return facts


def device_count(backend="cuda"):
    """Devices of a backend this process can use (1 for "cpu"; 0 when not built or none)."""
    return lib.ax_device_count(_lib.encode(backend))


def _device(text):
    device = _lib.Device()
    if text is not None:
        _lib.check(lib.ax_device_parse(_lib.encode(str(text)), ctypes.byref(device)), "device")
    return device


def _layer_item(i, count, item):
    """One item of a layer list as the layout syntax: 128, (128, "relu") or "conv:8x5x5"."""
    if isinstance(item, str):
        return item
    if isinstance(item, (int, np.integer)):
        return f"{int(item)}:{'relu' if i + 1 < count else 'identity'}"
    units, activation = item
    return f"{int(units)}:{activation}"


def _parse_layers(layers, config):
    """A layout string ("conv:8x5x5:relu,maxpool:2,10:softmax", the CLI's --layers) or a list
    of items (units, (units, activation), or one layer's text) into config."""
    if not isinstance(layers, str):
        items = list(layers)
        layers = ",".join(_layer_item(i, len(items), item) for i, item in enumerate(items))
    _lib.check(lib.ax_layers_parse(_lib.encode(layers), ctypes.byref(config)), "layers")


def _image_shape(shape, name="input_shape"):
    try:
        shape = tuple(int(n) for n in shape)
    except TypeError:
        shape = ()
    if len(shape) != 3 or min(shape) < 1:
        raise ValueError(f"axon: {name} must be (height, width, channels), each >= 1; "
                         f"got {shape!r}")
    return shape


class Net:
    """A network: Net(input_width, layers, ...) with fresh weights, or axon.load(path).

    input_width: features per row; or input_shape=(height, width, channels) (also
    accepted in input_width's place) for image rows in (row, column, channel) order,
    which convolution and pooling layers need.
    layers: "128:relu,128:relu,10:softmax" or "conv:8x5x5/p2:relu,maxpool:2,10:softmax"
    (the CLI's --layers), or a list such as [(128, "relu"), (10, "softmax")] or
    ["conv:8x5x5:relu", "maxpool:2", (10, "softmax")]. loss: auto, cross-entropy,
    binary-cross-entropy, mse. init: auto, he, xavier, uniform (init_range).
    precision: f32, f64 or bf16. device: "cpu", "cuda", "cuda:1", "opencl:0", ...
    """

    def __init__(self, input_width=None, layers=None, *, input_shape=None, loss="auto",
                 init="auto", init_range=0.2, precision="f32", seed=1, device=None):
        if isinstance(input_width, (tuple, list)):
            if input_shape is not None:
                raise TypeError("axon: Net: input_shape given twice")
            input_width, input_shape = None, input_width
        if input_shape is not None:
            input_shape = _image_shape(input_shape)
            width = input_shape[0] * input_shape[1] * input_shape[2]
            if input_width is not None and int(input_width) != width:
                raise ValueError(f"axon: input_width {input_width} is not the product of "
                                 f"input_shape {input_shape} ({width})")
            input_width = width
        if input_width is None or layers is None:
            raise TypeError("axon: Net(input_width or input_shape, layers): "
                            + ("layers" if input_width is not None else "the input") + " missing")
        config = _lib.net_config()
        config.input_width = int(input_width)
        if input_shape is not None:
            config.input_shape[:] = input_shape
        _parse_layers(layers, config)
        config.loss = _lib.parse_enum(lib.ax_loss_parse, "loss", loss)
        config.init = _lib.parse_enum(lib.ax_init_parse, "init", init)
        config.init_range = init_range
        config.precision = _precision(precision)
        config.seed = int(seed)
        config.device = _device(device)
        handle = ctypes.c_void_p()
        try:
            _lib.check(lib.ax_net_create(ctypes.byref(config), ctypes.byref(handle)))
        finally:
            lib.ax_net_config_release(ctypes.byref(config))
        self._adopt(handle)

    def _adopt(self, handle):
        self._guard = Guard(handle, "network", lib.ax_net_free)
        # A network is used by one thread at a time (axon.h "Threads"); the lock makes
        # concurrent calls from Python threads wait their turn. Reentrant: a training
        # callback on the training thread may read the weights.
        self._lock = threading.RLock()

    @classmethod
    def _from_handle(cls, handle):
        net = cls.__new__(cls)
        net._adopt(handle)
        return net

    @classmethod
    def load(cls, path, precision="f32"):
        """A model written by Net.save or `axon train --out` (safetensors)."""
        handle = ctypes.c_void_p()
        _lib.check(lib.ax_net_load(_lib.encode(str(path)), _precision(precision),
                                   ctypes.byref(handle)))
        return cls._from_handle(handle)

    def save(self, path):
        """Writes the model as safetensors (a temporary file renamed: whole or not at all)."""
        with self._lock, self._use() as net:
            _lib.check(lib.ax_net_save(net, _lib.encode(str(path))))

    def to_onnx(self, path):
        """Writes the network as an ONNX model (axon export --onnx; docs/python.md): input
        "input" (N, height, width, channels) for an image input, pixels as axon holds
        them, else (N, features); output "output" (N, outputs), what predict gives.
        Replaced atomically like save."""
        with self._lock, self._use() as net:
            _lib.check(lib.ax_net_export_onnx(net, _lib.encode(str(path))))

    def _use(self):
        """`with self._use() as net:` the library's network, kept open meanwhile."""
        return self._guard.use()

    @property
    def closed(self):
        return self._guard.closed

    def close(self):
        """Frees the network (ValueError on any later use); RuntimeError while a call
        on it, such as training, runs."""
        guard = getattr(self, "_guard", None)
        if guard is not None:
            guard.close()

    def __del__(self):
        self.close()

    # --------------------------------------------------------------- facts
    def _read(self, function):
        """function(net handle, its ax_net_config) while the network is kept open."""
        with self._use() as net:
            return function(net, lib.ax_net_config_get(net).contents)

    @property
    def input_width(self):
        return self._read(lambda net, config: config.input_width)

    @property
    def input_shape(self):
        """(height, width, channels) of an image input, None for plain features."""
        shape = self._read(lambda net, config: tuple(config.input_shape))
        return shape if shape[0] else None

    @property
    def layer_widths(self):
        """Values per row out of each layer, the output layer last."""
        return self._read(lambda net, config: [lib.ax_net_layer_width(net, i)
                                               for i in range(config.layer_count)])

    @property
    def output_width(self):
        return self.layer_widths[-1]

    def _layer_count(self):
        return self._read(lambda net, config: config.layer_count)

    def _layer_enum(self, function, i):
        value = ctypes.c_int()
        with self._use() as net:
            _lib.check(function(net, i, ctypes.byref(value)), f"layer {i}")
        return value.value

    @property
    def layer_kinds(self):
        """Each layer's kind ("dense", "conv", "maxpool", "avgpool"), the output layer last."""
        return [lib.ax_layer_kind_name(self._layer_enum(lib.ax_net_layer_kind, i)).decode()
                for i in range(self._layer_count())]

    @property
    def layer_activations(self):
        """Each layer's activation name, the output layer last; "none" for a pooling layer,
        which applies no activation."""
        names = []
        for i, kind in enumerate(self.layer_kinds):
            activation = self._layer_enum(lib.ax_net_layer_activation, i)
            names.append("none" if kind in ("maxpool", "avgpool")
                         else lib.ax_activation_name(activation).decode())
        return names

    @property
    def layer_shapes(self):
        """Each layer's outputs per row as (height, width, channels): a convolution's or
        pooling's feature map, (1, 1, units) for a dense layer."""
        shapes = []
        for i in range(self._layer_count()):
            shape = (ctypes.c_int64 * 3)()
            with self._use() as net:
                _lib.check(lib.ax_net_layer_output_shape(net, i, shape), f"layer {i}")
            shapes.append(tuple(shape))
        return shapes

    @property
    def layer_settings(self):
        """Each layer's kind and settings as a dict, the output layer last: "kind", and a
        dense layer's "units", "activation"; a convolution's "filters", "kernel" (height,
        width), "stride", "padding", "activation"; a pooling layer's "window", "stride"."""
        def settings(net, config):
            result = []
            for i in range(config.layer_count):
                spec = config.layers[i]
                kind = lib.ax_layer_kind_name(spec.kind).decode()
                if kind == "dense":
                    item = {"units": spec.dense.units,
                            "activation": lib.ax_activation_name(spec.dense.activation).decode()}
                elif kind == "conv":
                    item = {"filters": spec.conv.filters,
                            "kernel": (spec.conv.kernel_height, spec.conv.kernel_width),
                            "stride": spec.conv.stride, "padding": spec.conv.padding,
                            "activation": lib.ax_activation_name(spec.conv.activation).decode()}
                else:
                    item = {"window": spec.pool.window, "stride": spec.pool.stride}
                result.append({"kind": kind, **item})
            return result
        return self._read(settings)

    @property
    def loss(self):
        return self._read(lambda net, config: lib.ax_loss_name(config.loss).decode())

    @property
    def precision(self):
        return self._read(lambda net, config: _PRECISION_NAMES[config.precision])

    @property
    def layout(self):
        """The layout as text, e.g. "784-128:relu-10:softmax"."""
        text = ctypes.create_string_buffer(1024)
        self._read(lambda net, config: lib.ax_layers_format(ctypes.byref(config), text,
                                                            len(text)))
        return text.value.decode()

    def __repr__(self):
        if getattr(self, "_guard", None) is None or self.closed:
            return "<axon.Net (closed)>"
        return f"<axon.Net {self.layout}, {self.parameter_count} parameters, {self.precision}>"

    @property
    def parameter_count(self):
        return self._read(lambda net, config: lib.ax_net_parameter_count(net))

    @property
    def parameters(self):
        """All parameters as one float64 array, layer by layer [W (out, in), b (out)]."""
        values = np.empty(self.parameter_count, dtype=np.float64)
        with self._lock, self._use() as net:
            lib.ax_net_parameters_get(net, pointer(values, ctypes.POINTER(ctypes.c_double)))
        return values

    @parameters.setter
    def parameters(self, values):
        values = np.ascontiguousarray(values, dtype=np.float64).ravel()
        if values.size != self.parameter_count:
            raise ValueError(f"axon: {values.size} parameters given; the network has "
                             f"{self.parameter_count}")
        check_finite(values.reshape(-1, 1), "parameters")
        with self._lock, self._use() as net:
            lib.ax_net_parameters_set(net, pointer(values, ctypes.POINTER(ctypes.c_double)))

    def weight_shapes(self):
        """The shapes get_weights gives per layer: [(W shape, b shape), ...]; a dense
        layer ((out, in), (out,)), a convolution ((filters, channels, kernel_height,
        kernel_width), (filters,)) as torch.nn.Conv2d's and the model files', and a
        pooling layer () (no parameters)."""
        def shapes(net, config):
            result = []
            before = tuple(config.input_shape) if config.input_shape[0] else \
                (1, 1, config.input_width)
            for i in range(config.layer_count):
                spec = config.layers[i]
                if spec.kind == 0:
                    result.append(((spec.dense.units, before[0] * before[1] * before[2]),
                                   (spec.dense.units,)))
                elif spec.kind == 1:
                    result.append(((spec.conv.filters, before[2], spec.conv.kernel_height,
                                    spec.conv.kernel_width), (spec.conv.filters,)))
                else:
                    result.append(())
                shape = (ctypes.c_int64 * 3)()
                _lib.check(lib.ax_net_layer_output_shape(net, i, shape), f"layer {i}")
                before = tuple(shape)
            return result
        return self._read(shapes)

    def get_weights(self):
        """Per layer (W, b) as float64 copies: a dense layer's W (out, in) (in: the
        previous feature map flattened in (row, column, channel) order), b (out); a
        convolution's W (filters, channels, kernel_height, kernel_width), b (filters), as
        torch.nn.Conv2d's; a pooling layer () (no parameters). The last layer last."""
        flat, result, at = self.parameters, [], 0
        for shapes in self.weight_shapes():
            arrays = []
            for shape in shapes:
                size = int(np.prod(shape))
                arrays.append(flat[at:at + size].reshape(shape).copy())
                at += size
            result.append(tuple(arrays))
        return result

    def set_weights(self, weights):
        """The inverse of get_weights: per layer (W, b) in its shapes, () for pooling."""
        expected = self.weight_shapes()
        if len(weights) != len(expected):
            raise ValueError(f"axon: {len(weights)} layers of weights given; the network has "
                             f"{len(expected)}")
        parts = []
        for i, (given, shapes) in enumerate(zip(weights, expected)):
            given = () if given is None else tuple(given)
            arrays = [np.asarray(array, dtype=np.float64) for array in given]
            if len(arrays) != len(shapes) or \
                    any(a.shape != tuple(s) for a, s in zip(arrays, shapes)):
                needs = " and ".join(str(tuple(s)) for s in shapes) or "nothing (pooling)"
                got = " and ".join(str(a.shape) for a in arrays) or "nothing"
                raise ValueError(f"axon: layer {i + 1}: {got} given; the layer needs {needs}")
            parts += [a.ravel() for a in arrays]
        self.parameters = np.concatenate(parts) if parts else np.empty(0)

    # ---------------------------------------------------------- inference
    def predict(self, X):
        """Outputs (rows, output width) for inputs (rows, input width) or images (rows,
        height, width, channels): probabilities (softmax, sigmoid) or values. float32.
        A scipy.sparse X is made dense a chunk of rows at a time by the library, never
        whole; its outputs equal the dense matrix's bit for bit."""
        if is_sparse(X):
            return self._predict_sparse(X)
        X = features_array(X, images=True)
        if X.shape[1] != self.input_width:
            raise ValueError(f"axon: X has {X.shape[1]} features per row but the network's "
                             f"input width is {self.input_width}")
        check_finite(X)
        out = np.empty((X.shape[0], self.output_width), dtype=np.float32)
        with self._lock, self._use() as net:
            _lib.check(lib.ax_net_predict(net, pointer(X), X.shape[0], pointer(out)))
        return out

    def _predict_sparse(self, X):
        """Net.predict of scipy.sparse X through ax_net_predict_dataset, which takes the
        rows in the chunks ax_net_predict takes (so the same bits)."""
        rows, features = X.shape
        if features != self.input_width:
            raise ValueError(f"axon: X has {features} features per row but the network's "
                             f"input width is {self.input_width}")
        # Labels of no use to prediction: a sparse set, like any, holds some.
        data = Dataset.from_sparse(X, np.zeros(rows, dtype=np.int32), classes=1)
        out = np.empty((rows, self.output_width), dtype=np.float32)
        width = self.output_width

        def keep(first, count, outputs, _):
            out[first:first + count] = np.ctypeslib.as_array(outputs, (count, width))
            return True

        callback = _lib.PREDICT_ROWS_FN(keep)
        with data, self._lock, self._use() as net, data._use() as handle:
            _lib.check(lib.ax_net_predict_dataset(net, handle, callback, None))
        return out

    def _dataset(self, data, name):
        if isinstance(data, tuple) and len(data) == 2:
            X, y = data
            y = np.asarray(y)
            classes = self.output_width if y.dtype.kind in "biu" else None
            return Dataset.from_arrays(X, y, classes=classes, name=name)
        return as_dataset(data, name=name)

    def evaluate(self, X, y=None):
        """Loss, accuracy and confusion matrix on (X, y), a data spec or a Dataset."""
        if y is None and isinstance(X, np.ndarray):
            raise TypeError("axon: Net.evaluate(X, y): y (labels or targets) is missing")
        data = self._dataset((X, y) if y is not None else X, "X")
        evaluation = _lib.evaluation()
        with self._lock, self._use() as net, data._use() as data_handle:
            _lib.check(lib.ax_net_evaluate(net, data_handle, ctypes.byref(evaluation)))
        try:
            classes = evaluation.classes
            confusion = np.ctypeslib.as_array(evaluation.confusion, (classes, classes)).copy() \
                if classes else None
            return {"loss": evaluation.loss,
                    "accuracy": evaluation.accuracy if classes else None,
                    "rows": evaluation.rows, "confusion": confusion}
        finally:
            lib.ax_evaluation_free(ctypes.byref(evaluation))

    def activations(self, X, layer):
        """The activated outputs (rows, width) of layer `layer` (0 = first hidden layer)."""
        X = features_array(X, images=True)
        rows = X.shape[0]
        if self._read(lambda net, config: config.loss) == 1:  # cross-entropy: labels, any value
            data = Dataset.from_arrays(X, np.zeros(rows, np.int32), classes=self.output_width)
        else:
            data = Dataset.from_arrays(X, np.zeros((rows, self.output_width), np.float32))
        width = self._read(lambda net, config: lib.ax_net_layer_width(net, int(layer)))
        out = np.empty((rows, max(width, 1)), dtype=np.float32)
        with self._lock, self._use() as net, data._use() as data_handle:
            _lib.check(lib.ax_net_activations(net, data_handle, int(layer), pointer(out)))
        return out

    # ------------------------------------------------------------ training
    def train(self, X, y=None, *, validation=None, test=None, optimizer="sgd", lr=None,
              momentum=0.9, nesterov=False, beta1=0.9, beta2=0.999, epsilon=1e-8, batch=128,
              epochs=10, gtol=1e-5, lbfgs_memory=10, l2=0.0, dropout=0.0, early_stop=0,
              keep_best=None, seed=1, shuffle=True, progress=None, progress_interval=0.2,
              verbose=False, optimizer_state=None, epsilon_before_correction=False,
              keep_subnormals=False, l1=0.0, weight_decay=0.01, clip_norm=0.0, clip_value=0.0,
              lr_schedule="constant", warmup=0, phases=None):
        """Trains on (X, y) (or X a data spec / Dataset, y None) with the CLI's options.

        validation, test: (X, y) pairs, specs or Datasets. batch: rows per step, 0 or
        "full" for the full batch. progress(info) is called every progress_interval
        seconds and after every epoch with a dict of the library's ax_progress
        (epoch, batch, train_loss, validation_loss, ...); returning False stops training
        (axon.StoppedError). Ctrl-C stops after the current step: KeyboardInterrupt, the
        network holding that step's weights. optimizer_state: an axon.OptimizerState
        (sgd, adam) that this call starts from when it holds one and leaves its final
        state in, so that calls in a row take the steps of one longer run. Returns a
        dict: the library's summary and "history", one dict per epoch.
        epsilon_before_correction: Adam adds epsilon as scikit-learn does (axon.h).
        keep_subnormals: keep IEEE subnormal numbers instead of flushing them to zero
        while training, which is faster (axon.h, ax_train_config.keep_subnormals).
        l1: L1 penalty per mean loss (weights only); weight_decay: AdamW's decoupled
        decay (optimizer="adamw"); clip_norm, clip_value: gradient clipping (sgd, adam,
        adamw; 0 = off), as axon.h's ax_train_config says. lr_schedule: the CLI's
        --lr-schedule text ("step:7:0.5", "exp:0.9", "cosine", "plateau:2:0.5",
        "invscaling:0.5", "adaptive:10:1e-4"); warmup: steps of linear warmup (axon.h);
        each epoch's rate is the progress info's "learning_rate".
        phases: texts as the CLI's --phase ("lr=0.01,batch=1024,epochs=5,l2=1e-4"), one
        training call per phase, each with the options of the one before but for what it
        names, the optimizer state carried while the optimizer stays (axon.h,
        ax_train_phase_parse); not with optimizer_state. The result is the last phase's,
        with "history" over all phases (each epoch's dict with its "phase", from 1) and
        "phases", each phase's result.
        """
        if y is None and isinstance(X, np.ndarray):
            raise TypeError("axon: Net.train(X, y): y (labels or targets) is missing")
        train = self._dataset((X, y) if y is not None else X, "X")
        validation = self._dataset(validation, "validation") if validation is not None else None
        test = self._dataset(test, "test") if test is not None else None
        config = _lib.train_config()
        config.adapt_threads = not _threads_held
        config.optimizer = _lib.parse_enum(lib.ax_optimizer_parse, "optimizer", optimizer)
        config.learning_rate = lr if lr is not None else \
            lib.ax_optimizer_default_learning_rate(config.optimizer)
        config.momentum = momentum
        config.nesterov = bool(nesterov)
        config.beta1, config.beta2, config.epsilon = beta1, beta2, epsilon
        config.epsilon_before_correction = bool(epsilon_before_correction)
        config.keep_subnormals = bool(keep_subnormals)
        config.batch_size = 0 if batch in ("full", None) else int(batch)
        config.epochs = int(epochs)
        config.gtol = gtol
        config.lbfgs_memory = int(lbfgs_memory)
        config.l2 = l2
        config.l1 = l1
        config.weight_decay = weight_decay
        config.clip_norm = clip_norm
        config.clip_value = clip_value
        config.dropout = dropout
        _lib.check(lib.ax_lr_schedule_parse(str(lr_schedule).encode(), ctypes.byref(config)))
        config.warmup_steps = int(warmup)
        config.early_stop = int(early_stop)
        try:
            config.keep_best = _KEEP_BEST[keep_best]
        except KeyError:
            raise ValueError(f"axon: keep_best must be None, 'validation' or 'test', not "
                             f"{keep_best!r}") from None
        config.seed = int(seed)
        config.shuffle = bool(shuffle)
        if phases is not None:
            if optimizer_state is not None:
                raise TypeError("axon: phases carry their own optimizer state from phase to "
                                "phase; leave out optimizer_state")
            if isinstance(phases, (str, bytes)):
                raise TypeError("axon: phases is a list of texts, one per phase")
            return _run_phases(self, train, validation, test, config, list(phases), progress,
                               progress_interval, verbose)
        if optimizer_state is None:
            return _run(self, train, validation, test, config, progress, progress_interval,
                        verbose)
        if not isinstance(optimizer_state, OptimizerState):
            raise TypeError(f"axon: optimizer_state must be an axon.OptimizerState, not "
                            f"{type(optimizer_state).__name__}")
        with optimizer_state._lock, optimizer_state._use() as state:
            config.optimizer_state = state
            return _run(self, train, validation, test, config, progress, progress_interval,
                        verbose)


def _progress_bar_class():
    """tqdm's bar (its notebook widget under Jupyter) where tqdm is installed, else None."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm


def _epoch_figures(p):
    """The epoch's figures after its loss, as the verbose lines and the bar show them."""
    figures = []
    if not math.isnan(p.validation_loss):
        figures.append(f"val_loss {p.validation_loss:.6f}")
        if not math.isnan(p.validation_accuracy):
            figures.append(f"val_acc {p.validation_accuracy:.2%}")
    if not math.isnan(p.test_loss):
        figures.append(f"test_loss {p.test_loss:.6f}")
        if not math.isnan(p.test_accuracy):
            figures.append(f"test_acc {p.test_accuracy:.2%}")
    return figures


class _Bars:
    """verbose's progress bars, Keras-style: one per epoch over its steps, or for the
    full-batch optimizers (cg, lbfgs: one step an epoch) one over the epochs."""

    def __init__(self, tqdm):
        self.tqdm = tqdm
        self.bar = None
        self.per_epoch = None

    def step(self, p):
        """After a step of a mini-batch epoch: the bar moves, the running loss shown."""
        if self.per_epoch is None:
            self.per_epoch = p.batches > 1
        if not self.per_epoch:
            return
        if self.bar is None:
            self.bar = self.tqdm(total=int(p.batches), desc=f"epoch {p.epoch}/{p.epochs}",
                                 unit="step", file=sys.stderr, leave=True, dynamic_ncols=True)
        self.bar.set_postfix_str(f"loss {p.train_loss:.4f}", refresh=False)
        self.bar.update(int(p.batch) - self.bar.n)

    def epoch(self, p):
        """At an epoch's end: its figures on its bar, which is closed (and kept)."""
        figures = ", ".join([f"loss {p.train_loss:.6f}"] + _epoch_figures(p))
        if self.per_epoch is None:
            self.per_epoch = p.batches > 1
        if self.per_epoch:
            self.step(p)
            self.bar.set_postfix_str(figures, refresh=False)
            self.bar.update(int(p.batches) - self.bar.n)
            self.close()
            return
        if self.bar is None:
            self.bar = self.tqdm(total=int(p.epochs), desc="training", unit="epoch",
                                 file=sys.stderr, leave=True, dynamic_ncols=True)
        self.bar.set_postfix_str(figures, refresh=False)
        self.bar.update(1)

    def close(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class _Watcher:
    """The library's progress callback: the user's callback, verbose's bars or lines,
    Ctrl-C. verbose True (or 1) draws tqdm bars where tqdm is installed and prints a
    line per epoch otherwise; verbose 2 prints the lines (Keras' verbose=2)."""

    def __init__(self, user, interval, verbose):
        self.user = user
        self.interval = interval
        self.verbose = verbose
        tqdm = _progress_bar_class() if verbose and verbose != 2 else None
        self.bars = _Bars(tqdm) if tqdm is not None else None
        self.history = []
        self.interrupted = False
        self.error = None
        self.last = time.monotonic()

    def close(self):
        if self.bars is not None:
            self.bars.close()

    def __call__(self, progress_p, _):
        try:
            p = progress_p.contents
            now = time.monotonic()
            due = self.user is not None and now - self.last >= self.interval
            if not p.epoch_done and not due:
                if self.bars is not None:
                    self.bars.step(p)
                return not self.interrupted  # after every step: kept cheap
            info = {name: getattr(p, name) for name, _ in _lib.Progress._fields_}
            if p.epoch_done:
                self.history.append(info)
                if self.bars is not None:
                    self.bars.epoch(p)
                elif self.verbose:
                    line = "  ".join([f"epoch {p.epoch}/{p.epochs}  loss {p.train_loss:.6f}"]
                                     + _epoch_figures(p)
                                     + [f"{p.epoch_seconds:.2f} s  {p.gflops:.0f} GFLOP/s"])
                    print(line, file=sys.stderr, flush=True)
            elif self.bars is not None:
                self.bars.step(p)
            go_on = True
            if self.user is not None:
                self.last = now
                go_on = self.user(info) is not False
            return go_on and not self.interrupted
        except BaseException as error:  # noqa: B902: never through the C frames
            self.error = error
            return False


@contextlib.contextmanager
def _sigint_sets(watcher):
    """On the main thread with Python's own Ctrl-C handler: SIGINT sets watcher.interrupted."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield
        return

    def handler(signum, frame):
        watcher.interrupted = True

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _run(net, train, validation, test, config, progress, interval, verbose):
    watcher = _Watcher(progress, interval, verbose)
    callback = _lib.PROGRESS_FN(watcher)
    config.progress = callback
    config.progress_interval = 0.0  # after every step: Ctrl-C acts after the current one
    summary = _lib.train_summary()
    with contextlib.ExitStack() as held:
        held.enter_context(net._lock)
        handles = [held.enter_context(part._use()) if part is not None else None
                   for part in (net, train, validation, test)]
        held.enter_context(_sigint_sets(watcher))
        held.callback(watcher.close)  # a bar ends on its line whatever happened
        status = lib.ax_train(*handles, ctypes.byref(config), ctypes.byref(summary))
    if watcher.error is not None:
        raise watcher.error
    if status == _lib.INTERRUPTED and watcher.interrupted:
        raise KeyboardInterrupt(f"axon: {_lib.error_message()}; the network holds the weights "
                                "of the last step")
    _lib.check(status)
    result = {name: getattr(summary, name) for name, _ in _lib.TrainSummary._fields_
              if name != "size"}
    result["stop_reason"] = (summary.stop_reason or b"").decode()
    result["history"] = watcher.history
    return result


def _run_phases(net, train, validation, test, config, phases, progress, interval, verbose):
    """Net.train's phases: one _run per phase, the optimizer state carried while the kind
    (and, for sgd, having a velocity) stays, as `axon train --phase` carries it."""
    configs = []
    for text in phases:  # every phase checked before the first trains
        _lib.check(lib.ax_train_phase_parse(str(text).encode(), ctypes.byref(config)))
        if lib.ax_optimizer_is_full_batch(config.optimizer):
            config.batch_size = 0
        configs.append(type(config).from_buffer_copy(config))
    state = OptimizerState()
    results, history = [], []
    try:
        for number, phase in enumerate(configs, 1):
            full_batch = bool(lib.ax_optimizer_is_full_batch(phase.optimizer))
            info = state.describe()
            wanted = (1 if phase.momentum > 0 else 0) if \
                lib.ax_optimizer_name(phase.optimizer).decode() == "sgd" else 2
            if info is not None and (full_batch or info["arrays"] != wanted or
                                     info["optimizer"] !=
                                     lib.ax_optimizer_name(phase.optimizer).decode()):
                state.close()
                state = OptimizerState()
            if full_batch:
                result = _run(net, train, validation, test, phase, progress, interval, verbose)
            else:
                with state._lock, state._use() as handle:
                    phase.optimizer_state = handle
                    result = _run(net, train, validation, test, phase, progress, interval,
                                  verbose)
                    phase.optimizer_state = None
            for epoch in result["history"]:
                epoch["phase"] = number
            history.extend(result["history"])
            results.append(result)
    finally:
        state.close()
    last = dict(results[-1]) if results else {}
    last["history"] = history
    last["phases"] = results
    return last


def load(path, precision="f32"):
    """axon.load(path): a model saved by Net.save or `axon train --out`."""
    return Net.load(path, precision)


def save(net, path):
    """axon.save(net, path): Net.save."""
    net.save(path)


def train(data, labels=None, *, layers="auto", input_shape=None, test=None, val_split=0.0,
          loss="auto", init="auto", init_range=0.2, precision="f32", device=None, threads=None,
          seed=1, out=None, **options):
    """Trains a new network as `axon train` does, with its options as keywords:
    axon.train("fashion-mnist", layers="128:relu,10:softmax", optimizer="adam", epochs=5)
    or axon.train((X, y), ...). data: a spec, a Dataset or (X, y) (labels: y alone);
    layers "auto" is 128:relu,128:relu,<classes>:softmax for class labels and
    <targets>:identity for numbers; convolutions as the CLI's ("conv:8x5x5/p2:relu,
    maxpool:2,10:softmax") on images: IDX and batches:DIR sets, a 4-D .npy, X of shape
    (rows, height, width, channels), or input_shape=(h, w, c) for flat rows. val_split
    holds that fraction out as validation (seeded). Returns (net, summary); out= saves
    the model too. Other options: those
    of Net.train (optimizer, lr, batch, epochs, momentum, l2, early_stop, ...)."""
    if labels is not None:
        data = (data, labels)
    train_set = as_dataset(data, name="data")
    if threads is not None:
        set_threads(threads)
    if isinstance(test, str) and test == "auto":
        test = None
    test_set = as_dataset(test, name="test") if test is not None else None
    if test_set is None and isinstance(data, str):
        if lib.ax_dataset_spec_has_test_part(_lib.encode(data)):
            test_set = Dataset.open(data, part="test")
    validation_set = None
    if val_split:
        train_part, holdout = ctypes.c_void_p(), ctypes.c_void_p()
        with train_set._use() as whole:
            _lib.check(lib.ax_dataset_split(whole, float(val_split), int(seed),
                                            ctypes.byref(train_part), ctypes.byref(holdout)),
                       "val_split")
        train_set = Dataset(train_part, (train_set,), "train part")
        validation_set = Dataset(holdout, (train_set,), "validation part")
    if layers == "auto":
        layers = (f"128:relu,128:relu,{train_set.classes}:softmax" if train_set.classes
                  else f"{train_set.targets}:identity")
    if input_shape is None:
        input_shape = train_set.image_shape
    net = Net(train_set.features, layers, input_shape=input_shape, loss=loss, init=init, init_range=init_range,
              precision=precision, seed=seed, device=device)
    summary = net.train(train_set, validation=validation_set, test=test_set, seed=seed,
                        **options)
    if out is not None:
        net.save(out)
    return net, summary

"""_optimizer_state.py: axon.OptimizerState, SGD's velocity or Adam's moments and
step count carried from one Net.train call into the next (axon.h "optimizer state"),
as scikit-learn's partial_fit keeps its optimizer. It pickles: its arrays travel as
float64 NumPy arrays, which hold float32 and float64 states exactly."""
import ctypes
import threading

import numpy as np

from . import _lib
from ._guard import Guard
from ._lib import lib

_PRECISION_NAMES = _lib.PRECISION_NAMES


class OptimizerState:
    """An optimizer state for Net.train(..., optimizer_state=state): empty at first (the
    first call starts its optimizer afresh), then the last call's final state, which the
    next call starts from. Only sgd and adam; the network, precision, kind and (for
    sgd) momentum or not must be the same from call to call (else ValueError naming
    what differs)."""

    def __init__(self):
        handle = ctypes.c_void_p()
        _lib.check(lib.ax_optimizer_state_create(ctypes.byref(handle)), "optimizer state")
        self._guard = Guard(handle, "optimizer state", lib.ax_optimizer_state_free)
        self._lock = threading.Lock()  # one ax_train at a time (axon.h)

    def _use(self):
        """`with self._use() as state:` the library's state, kept open meanwhile."""
        return self._guard.use()

    def close(self):
        """Frees the state (ValueError on any later use); RuntimeError while training
        uses it."""
        guard = getattr(self, "_guard", None)
        if guard is not None:
            guard.close()

    def __del__(self):
        self.close()

    def describe(self):
        """None while empty, else a dict: optimizer ("sgd", "adam"), precision ("f32",
        "f64", "bf16"), parameters, arrays (how many: sgd 0 or 1, adam 2), steps."""
        kind, precision, arrays = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        parameters, steps = ctypes.c_int64(), ctypes.c_int64()
        with self._use() as state:
            if not lib.ax_optimizer_state_describe(state, ctypes.byref(kind),
                                                   ctypes.byref(precision),
                                                   ctypes.byref(parameters),
                                                   ctypes.byref(arrays), ctypes.byref(steps)):
                return None
        return {"optimizer": lib.ax_optimizer_name(kind.value).decode(),
                "precision": _PRECISION_NAMES.get(precision.value, str(precision.value)),
                "parameters": parameters.value, "arrays": arrays.value, "steps": steps.value}

    @property
    def steps(self):
        """Steps the optimizer has taken (Adam's t); 0 while empty."""
        info = self.describe()
        return info["steps"] if info else 0

    def arrays(self):
        """Copies of its arrays (float64, the parameter layout of Net.get_weights' order
        flattened as the library's arena): [velocity] for sgd with momentum, [m, v] for
        adam, [] while empty."""
        info = self.describe()
        if not info:
            return []
        out = []
        for i in range(info["arrays"]):
            values = np.empty(info["parameters"], dtype=np.float64)
            with self._use() as state:
                _lib.check(lib.ax_optimizer_state_copy_array(
                    state, i, values.ctypes.data_as(ctypes.POINTER(ctypes.c_double))))
            out.append(values)
        return out

    def assign(self, optimizer, precision, parameters, steps, arrays):
        """Makes it hold a state given as describe() and arrays() give it (ValueError
        for values the library refuses: non-finite, negative second moments, ...)."""
        kind = _lib.parse_enum(lib.ax_optimizer_parse, "optimizer", optimizer)
        precisions = {name: value for value, name in _PRECISION_NAMES.items()}
        if precision not in precisions:
            raise ValueError(f"axon: precision must be f32, f64 or bf16, not {precision!r}")
        arrays = [np.ascontiguousarray(a, dtype=np.float64).ravel() for a in arrays]
        if any(a.size != parameters for a in arrays):
            raise ValueError(f"axon: the optimizer state's arrays hold {[a.size for a in arrays]} "
                             f"values; it is for {parameters} parameters")
        pointers = (ctypes.POINTER(ctypes.c_double) * max(len(arrays), 1))(
            *[a.ctypes.data_as(ctypes.POINTER(ctypes.c_double)) for a in arrays])
        with self._use() as state:
            _lib.check(lib.ax_optimizer_state_assign(state, kind, precisions[precision],
                                                     int(parameters), len(arrays), int(steps),
                                                     pointers), "optimizer state")

    def __getstate__(self):
        info = self.describe()
        return {"info": info, "arrays": self.arrays() if info else []}

    def __setstate__(self, saved):
        self.__init__()
        info = saved["info"]
        if info:
            self.assign(info["optimizer"], info["precision"], info["parameters"], info["steps"],
                        saved["arrays"])

    def __repr__(self):
        info = self.describe()
        return "OptimizerState(empty)" if not info else \
            "OptimizerState({optimizer}, {precision}, {parameters} parameters, {arrays} arrays, " \
            "{steps} steps)".format(**info)

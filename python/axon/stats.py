"""axon.stats: the activation statistics of docs/stats.md over NumPy arrays.

Inputs are float32 row-major; arrays that already are are passed without a
copy, others converted once. The library checks shapes and values and its
messages (naming the array, row and column of a NaN) become ValueError.
"""
import ctypes

import numpy as np

from . import _lib
from ._data import pointer
from ._lib import lib


def _rows(array, name, ndim=2):
    array = np.asarray(array)
    if array.dtype.kind not in "biuf":
        raise TypeError(f"axon.stats: {name} must hold real numbers, not dtype {array.dtype}")
    if array.ndim != ndim:
        raise ValueError(f"axon.stats: {name} must be 2-D (rows, d); got shape {array.shape}")
    if array.dtype != np.float32 or not array.flags.c_contiguous:
        array = np.ascontiguousarray(array, dtype=np.float32)
    return array


def entropy_mi(x, y):
    """(entropy, mutual_information) of softmax(x) and softmax(y), row by row, for x and y
    of shape (rows, d): H = -(1/rows) sum_r sum_i P_ri^2, MI = (1/rows) sum_r sum_ij
    (P_ri Q_rj)^2 (docs/stats.md). Sums in float64."""
    x, y = _rows(x, "x"), _rows(y, "y")
    if x.shape != y.shape:
        raise ValueError(f"axon.stats: x {x.shape} and y {y.shape} must have the same shape")
    entropy, mi = ctypes.c_double(), ctypes.c_double()
    _lib.check(lib.ax_stats_entropy_mi(pointer(x), pointer(y), x.shape[0], x.shape[1],
                                       ctypes.byref(entropy), ctypes.byref(mi)))
    return entropy.value, mi.value


def tensor_mean(fx, fy, fz):
    """A[i,j,k] = (1/n) sum_r fx[r,i] fy[r,j] fz[r,k], shape (d, d, d), for fx, fy, fz of
    shape (n, d) (float32, accumulated in the BLAS's float GEMM)."""
    fx, fy, fz = _rows(fx, "fx"), _rows(fy, "fy"), _rows(fz, "fz")
    if not fx.shape == fy.shape == fz.shape:
        raise ValueError(f"axon.stats: fx {fx.shape}, fy {fy.shape} and fz {fz.shape} must "
                         "have the same shape")
    n, d = fx.shape
    out = np.empty((d, d, d), dtype=np.float32)
    _lib.check(lib.ax_stats_tensor_mean(pointer(fx), pointer(fy), pointer(fz), n, d,
                                        pointer(out)))
    return out

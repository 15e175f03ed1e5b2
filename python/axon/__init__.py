"""axon: train dense and convolutional neural networks with libaxon from Python.

    import axon
    net, summary = axon.train("fashion-mnist", layers="128:relu,128:relu,10:softmax",
                              optimizer="adam", epochs=5)
    net = axon.Net(784, "128:relu,10:softmax"); net.train(X, y, optimizer="adam")
    probabilities = net.predict(X); net.save("model.safetensors"); axon.load(path)
    axon.Net(input_shape=(28, 28, 1), layers="conv:8x5x5/p2:relu,maxpool:2,10:softmax")
    axon.plot(summary, out="loss.png")
    net.to_onnx("model.onnx"); module = axon.to_torch(net); axon.from_torch(module)
    axon.stats.entropy_mi(x, y); axon.stats.tensor_mean(fx, fy, fz)
    from axon.sklearn import MLPClassifier, MLPRegressor

A thin ctypes binding over libaxon (no compiler needed): NumPy arrays of the
library's types (float32 features and targets, int32 labels, C order) are
passed without copies. Errors are exceptions carrying axon's message:
ValueError for bad arguments and data, OSError for files (docs/python.md).
"""
from . import _lib  # first: NumPy's BLAS, then libaxon with its own copy of the OpenMP build (docs/python.md)
from . import stats
from ._data import Dataset
from ._lib import (AxonError, AxonMemoryError, AxonOSError, AxonValueError, DeviceError,
                   DivergedError, StoppedError, UnsupportedError)
from ._lib import path as library_path
from ._optimizer_state import OptimizerState
from ._net import Net, build_info, device_count, load, save, set_threads, threads, train
from ._plot import plot
from ._prep import prep
from ._torch import from_torch, to_torch

__version__ = build_info()["version"]

__all__ = ["Net", "Dataset", "OptimizerState", "train", "load", "save", "plot", "prep", "to_torch", "from_torch", "stats", "set_threads", "threads",
           "build_info", "device_count", "library_path", "AxonError", "AxonValueError",
           "AxonOSError", "AxonMemoryError", "DivergedError", "StoppedError",
           "UnsupportedError", "DeviceError"]

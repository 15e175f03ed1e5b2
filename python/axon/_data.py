"""_data.py: NumPy arrays and data specs as axon data sets.

An array already float32 (features, targets) or int32 (labels) and
C-contiguous is handed to the library as it is, through ax_dataset_wrap: no
copy (a read-only array too: the library only reads). Any other array is
converted once into such a copy. The Dataset keeps the arrays alive as long
as the library may read them. A closed Dataset raises ValueError; closing one
while a call (training on it) uses it raises RuntimeError (_guard.py).

A scipy.sparse matrix becomes a sparse set (ax_dataset_wrap_csr): its compressed rows
(row starts int64, columns int32, values float32: copies only where the matrix holds
other types, never a dense copy), whose rows the library makes dense a batch at a time,
the same float32 rows as the dense matrix's, so results equal the dense set's bit for bit.
"""
import ctypes

import numpy as np

from . import _lib
from ._guard import Guard
from ._lib import lib

_FLOAT_P = ctypes.POINTER(ctypes.c_float)
_INT32_P = ctypes.POINTER(ctypes.c_int32)
_INT64_P = ctypes.POINTER(ctypes.c_int64)


def is_sparse(X):
    """Whether X is a scipy.sparse matrix or array (without importing scipy)."""
    return hasattr(X, "tocsr") and hasattr(X, "nnz") and hasattr(X, "shape")


def csr_arrays(X, name="X"):
    """The compressed sparse rows of a scipy.sparse X as the library reads them:
    (row starts int64 (rows + 1), columns int32, values float32, shape), each the matrix's
    own array where it already has that type."""
    X = X.tocsr()
    rows, features = X.shape
    if rows == 0 or features == 0:
        raise ValueError(f"axon: {name} is empty: shape {X.shape} (at least 1 row and 1 feature)")
    if features > np.iinfo(np.int32).max:
        raise ValueError(f"axon: {name} has {features} columns; at most 2^31 - 1 are read")
    if X.dtype.kind not in "biuf":
        raise TypeError(f"axon: {name} must hold real numbers, not dtype {X.dtype}")
    starts = np.ascontiguousarray(X.indptr, dtype=np.int64)
    columns = np.ascontiguousarray(X.indices, dtype=np.int32)
    values = np.ascontiguousarray(X.data, dtype=np.float32)
    return starts, columns, values, (rows, features)


def _answers(y, rows, name, classes):
    """(labels int32 or None, targets float32 (rows, targets) or None, classes, targets)."""
    y = _numeric(y, "y")
    if y.shape[0] != rows:
        raise ValueError(f"axon: {name} has {rows} rows but y has {y.shape[0]}")
    labels = targets = None
    n_classes = n_targets = 0
    if y.dtype.kind in "biu":
        if y.ndim != 1:
            raise ValueError(f"axon: integer labels y must be 1-D (rows); got shape {y.shape}")
        if y.size and (y.min() < 0 or y.max() > np.iinfo(np.int32).max):
            bad = int(np.argmax((y < 0) | (y > np.iinfo(np.int32).max)))
            raise ValueError(f"axon: y: row {bad + 1} has label {y[bad]} "
                             "(labels are 0 to classes - 1)")
        labels = y if y.dtype == np.int32 and y.flags.c_contiguous else \
            np.ascontiguousarray(y, dtype=np.int32)
        n_classes = int(classes) if classes is not None else int(labels.max()) + 1
    else:
        if y.ndim not in (1, 2):
            raise ValueError(f"axon: targets y must be 1-D or 2-D; got shape {y.shape}")
        targets = y.reshape(len(y), -1) if y.ndim == 1 else y
        if targets.dtype != np.float32 or not targets.flags.c_contiguous:
            targets = np.ascontiguousarray(targets, dtype=np.float32)
        n_targets = targets.shape[1]
    return labels, targets, n_classes, n_targets


def _numeric(array, name):
    array = np.asarray(array)
    if array.dtype.kind not in "biuf":
        raise TypeError(f"axon: {name} must hold real numbers, not dtype {array.dtype}")
    return array


def features_array(X, name="X", images=False):
    """X as a C-contiguous float32 (rows, features) array; the same object when it is one.
    images: X may also be (rows, height, width, channels), flattened to (rows, h w c) in
    (row, column, channel) order, the library's image layout."""
    X = _numeric(X, name)
    if images and X.ndim == 4:
        X = np.ascontiguousarray(X, dtype=np.float32).reshape(X.shape[0], -1)
    if X.ndim != 2:
        raise ValueError(f"axon: {name} must be 2-D (rows, features); got shape {X.shape}")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"axon: {name} is empty: shape {X.shape} (at least 1 row and 1 feature)")
    if X.dtype != np.float32 or not X.flags.c_contiguous:
        X = np.ascontiguousarray(X, dtype=np.float32)
    return X


def check_finite(X, name="X"):
    """ValueError naming the row and column of the first NaN or Inf."""
    finite = np.isfinite(X)
    if not finite.all():
        row, column = np.argwhere(~finite)[0][:2] if X.ndim == 2 else (np.argwhere(~finite)[0][0], 0)
        value = X[row, column] if X.ndim == 2 else X[row]
        raise ValueError(f"axon: {name}: row {row + 1}, column {column + 1} is {value} "
                         "(NaN and Inf are not allowed)")


def pointer(array, kind=_FLOAT_P):
    return array.ctypes.data_as(kind)


class Dataset:
    """A data set the library reads: Dataset.from_arrays(X, y) or Dataset.open(spec)."""

    def __init__(self, handle, keep=(), source=None):
        self._guard = Guard(handle, "data set", lib.ax_dataset_free)
        self._keep = keep  # arrays the library reads: alive as long as the handle
        self.source = source

    def _use(self):
        """`with data._use() as handle:` the library's data set, kept open meanwhile."""
        return self._guard.use()

    @property
    def closed(self):
        return self._guard.closed

    @classmethod
    def from_arrays(cls, X, y, classes=None, name="X"):
        """Features X (rows, features) with integer class labels y (rows) in [0, classes)
        or float targets y (rows,) / (rows, targets). classes defaults to max label + 1.
        X (rows, height, width, channels) makes a set of images of that shape, which
        convolution layers take. A scipy.sparse X makes a sparse set (module docstring)."""
        if is_sparse(X):
            return cls.from_sparse(X, y, classes, name)
        image_shape = tuple(int(n) for n in np.shape(X)[1:]) if np.ndim(X) == 4 else None
        X = features_array(X, name, images=True)
        labels, targets, n_classes, n_targets = _answers(y, X.shape[0], name, classes)
        handle = ctypes.c_void_p()
        _lib.check(lib.ax_dataset_wrap(
            X.shape[0], X.shape[1], n_classes, n_targets, pointer(X),
            pointer(labels, _INT32_P) if labels is not None else None,
            pointer(targets) if targets is not None else None, _lib.encode(name),
            ctypes.byref(handle)))
        data = cls(handle, (X, labels, targets), name)
        if image_shape is not None:
            with data._use() as wrapped:
                _lib.check(lib.ax_dataset_set_image_shape(
                    wrapped, (ctypes.c_int64 * 3)(*image_shape)), name)
        return data

    @classmethod
    def from_sparse(cls, X, y, classes=None, name="X"):
        """A sparse set over scipy.sparse X (any format; CSR used as it is) with labels or
        targets y as from_arrays takes them."""
        starts, columns, values, (rows, features) = csr_arrays(X, name)
        labels, targets, n_classes, n_targets = _answers(y, rows, name, classes)
        handle = ctypes.c_void_p()
        _lib.check(lib.ax_dataset_wrap_csr(
            rows, features, n_classes, n_targets, pointer(starts, _INT64_P),
            pointer(columns, _INT32_P), pointer(values),
            pointer(labels, _INT32_P) if labels is not None else None,
            pointer(targets) if targets is not None else None, _lib.encode(name),
            ctypes.byref(handle)))
        return cls(handle, (starts, columns, values, labels, targets), name)

    @classmethod
    def open(cls, spec, *, part="train", scale=None, labels=None, csv_label_column=None,
             csv_header=False, csv_regression=False, csv_delimiter=",", synth_rows=None,
             synth_features=None, seed=None):
        """A data spec as `axon --data` takes it: a data set name (fashion-mnist), an IDX
        folder, FILE.csv, FILE.npy (labels: a labels .npy), batches:DIR, synth:linear."""
        options = _lib.data_options()
        options.part = {"train": 0, "test": 1}[part]
        if scale is not None:
            options.scale = scale
        keep = []
        if labels is not None:
            keep.append(_lib.encode(str(labels)))
            options.labels = keep[-1]
        if csv_label_column is not None:
            options.csv.label_column = csv_label_column
        options.csv.header = csv_header
        options.csv.regression = csv_regression
        options.csv.delimiter = csv_delimiter.encode()
        if synth_rows is not None:
            options.synth_rows = synth_rows
        if synth_features is not None:
            options.synth_features = synth_features
        if seed is not None:
            options.seed = seed
        handle = ctypes.c_void_p()
        _lib.check(lib.ax_dataset_open(_lib.encode(str(spec)), ctypes.byref(options),
                                       ctypes.byref(handle)))
        return cls(handle, (), str(spec))

    def _count(self, function):
        with self._use() as handle:
            return function(handle)

    @property
    def rows(self):
        return self._count(lib.ax_dataset_rows)

    @property
    def features(self):
        return self._count(lib.ax_dataset_features)

    @property
    def classes(self):
        return self._count(lib.ax_dataset_classes)

    @property
    def targets(self):
        return self._count(lib.ax_dataset_targets)

    @property
    def image_shape(self):
        """(height, width, channels) when the rows are images (IDX, batches:DIR, a 4-D
        .npy, or arrays given as (rows, height, width, channels)), else None."""
        shape = (ctypes.c_int64 * 3)()
        with self._use() as handle:
            return tuple(shape) if lib.ax_dataset_image_shape(handle, shape) else None

    def arrays(self):
        """(X, y) as NumPy arrays: copies of the library's data (X a scipy.sparse CSR
        matrix for a sparse set)."""
        with self._use() as handle:
            if lib.ax_dataset_is_sparse(handle):
                from scipy.sparse import csr_matrix
                starts, columns, values, labels, targets = self._keep
                X = csr_matrix((values.copy(), columns.copy(), starts.copy()),
                               shape=(lib.ax_dataset_rows(handle),
                                      lib.ax_dataset_features(handle)))
                return X, (labels if labels is not None else targets).copy()
            rows, features = lib.ax_dataset_rows(handle), lib.ax_dataset_features(handle)
            X = np.ctypeslib.as_array(lib.ax_dataset_features_data(handle),
                                      (rows, features)).copy()
            if lib.ax_dataset_classes(handle):
                y = np.ctypeslib.as_array(lib.ax_dataset_labels_data(handle), (rows,))
            else:
                y = np.ctypeslib.as_array(lib.ax_dataset_targets_data(handle),
                                          (rows, lib.ax_dataset_targets(handle)))
            return X, y.copy()

    def close(self):
        """Frees the library's data set (ValueError on any later use); RuntimeError while
        a call, such as training on it, uses it."""
        guard = getattr(self, "_guard", None)
        if guard is not None:
            guard.close()
            self._keep = ()

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        if self.closed:
            return f"<axon.Dataset {self.source!r} (closed)>"
        kind = f"{self.classes} classes" if self.classes else f"{self.targets} targets"
        return f"<axon.Dataset {self.source!r}: {self.rows} rows x {self.features} features, {kind}>"


def as_dataset(data, classes=None, name="X"):
    """A Dataset from a Dataset, a spec string, or an (X, y) pair."""
    if data is None or isinstance(data, Dataset):
        return data
    if isinstance(data, (str, bytes)) or hasattr(data, "__fspath__"):
        return Dataset.open(data)
    try:
        X, y = data
    except (TypeError, ValueError):
        raise TypeError(f"axon: {name} must be an (X, y) pair, a data spec or an axon.Dataset") \
            from None
    return Dataset.from_arrays(X, y, classes=classes, name=name)

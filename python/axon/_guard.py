"""_guard.py: a library handle that Python threads share, freed only while no call
uses it.

axon.Net, axon.Dataset and axon.OptimizerState each hold one. Every library call
on the object runs inside `with guard.use() as handle:`, which counts it; close()
frees the handle only when no call is counted and raises RuntimeError otherwise
(from another thread, or from a progress callback of a training run using the
object), so that no thread frees memory the library is still reading; before this,
a close() during training segfaulted. After close(), use() raises ValueError, as a
closed file does.

Why close() refuses instead of waiting: training may run for hours, and a close()
from the run's own progress callback would wait for itself forever. A program that
wants to stop training early returns False from the callback (axon.StoppedError),
then closes.
"""
import contextlib
import threading


class Guard:
    """The handle of one library object (`kind`: "network", "data set", ...) and the
    calls using it; `free` releases it."""

    def __init__(self, handle, kind, free):
        self._handle = handle
        self._kind = kind
        self._free = free
        self._users = 0
        self._lock = threading.Lock()  # held only to count: never during a library call

    @property
    def closed(self):
        return not self._handle

    @contextlib.contextmanager
    def use(self):
        """The handle, kept from close() until the block ends (ValueError once closed)."""
        with self._lock:
            if not self._handle:
                raise ValueError(f"axon: this {self._kind} has been closed")
            self._users += 1
            handle = self._handle
        try:
            yield handle
        finally:
            with self._lock:
                self._users -= 1

    def close(self):
        """Frees the handle once; RuntimeError while a call uses it."""
        with self._lock:
            if self._users:
                raise RuntimeError(
                    f"axon: cannot close this {self._kind}: a library call (training, "
                    "prediction, ...) is using it; close it after that call returns (a "
                    "progress callback returning False stops training)")
            handle, self._handle = self._handle, None
        if handle:
            self._free(handle)

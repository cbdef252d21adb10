"""A result's array made when it is first asked for: :class:`DeferredArray`.

A parse's dense P_left is one more transform of the table (an FFT pair at d x d, a fifth
of a 5-word parse at d = 256) that most callers never look at: the chart, the statistics
and the certificate come from the table's spectrum. The numpy backend's spectral parsers
hand the result a :class:`DeferredArray` instead, which
:class:`~fastdcyk.engine.core.result.DCYKResult` turns into the array on first access.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["DeferredArray", "resolve"]


class DeferredArray:
    """An array of known shape and dtype, made by ``make()`` once, when first asked for.

    Parameters
    ----------
    make : callable
        ``make()`` returns the array; called once (:meth:`get`), then released. A make
        that raises is called again at the next access: it must then either start from
        what it reads untouched or refuse.
    shape : tuple of int
    dtype : numpy dtype

    Notes
    -----
    Threads may ask at once: one makes the array, the others wait for it. Pickling (and so
    copying across processes) makes the array and pickles it: what comes back is the array
    itself.
    """

    __slots__ = ("_array", "_lock", "_make", "dtype", "shape")

    def __init__(self, make: Callable[[], np.ndarray], shape: tuple[int, ...], dtype: Any) -> None:
        self._make: Callable[[], np.ndarray] | None = make
        self._array: np.ndarray | None = None
        self._lock = threading.Lock()
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)

    def get(self) -> np.ndarray:
        """The array (made on the first call; the same array after)."""
        if self._array is None:
            with self._lock:
                if self._array is None:  # not made by a thread that held the lock first
                    assert self._make is not None
                    self._array = self._make()
                    self._make = None  # only once made: a failed make can be retried
        return self._array

    def __reduce__(self) -> tuple[Any, tuple[np.ndarray]]:
        return (np.asarray, (self.get(),))

    def __repr__(self) -> str:
        state = "made" if self._array is not None else "not yet made"
        return f"DeferredArray(shape={self.shape}, dtype={self.dtype}, {state})"


def resolve(value: Any) -> Any:
    """``value``'s array when it is a :class:`DeferredArray`, else ``value`` itself."""
    return value.get() if isinstance(value, DeferredArray) else value

"""The array operations that D-CYK's shared code needs, for each array library.

What the numpy and torch backends compute alike over small arrays (the schedule's
bookkeeping, the read-back's solve, the rule layers, sigma) is written once, as functions
of an :class:`ArrayNamespace`: :data:`NUMPY` here, and the torch backend's in
:mod:`fastdcyk.engine.backends.torch.parser`. A namespace holds only the primitives whose spelling
differs between the libraries (a logistic, a sum by index, a Cholesky factorisation); the
d x d arithmetic stays in each backend (numpy in place, in pooled buffers, with Numba; torch
out of place, for autograd).

Arrays are float64 in the numpy namespace (the detections and read-backs of a parse are
computed in double precision whatever the accumulators' dtype); the torch namespace keeps
its tensors' dtype and device.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.linalg
import scipy.special

__all__ = ["NUMPY", "ArrayNamespace", "NumpyNamespace", "sigmoid"]


class ArrayNamespace:
    """The primitives of one array library (:data:`NUMPY`, or the torch backend's).

    Batched primitives take a leading batch axis (B, ...).
    """

    name = "base"

    def asfloat(self, x: Any) -> Any:
        """``x`` as an array of the namespace's float type."""
        raise NotImplementedError

    def logistic(self, z: Any) -> Any:
        """1 / (1 + exp(-z)), element by element."""
        raise NotImplementedError

    def index_add(self, target: Any, index: Any, values: Any) -> Any:
        """``target`` plus ``values`` summed by ``index`` along the last axis (a new array):
        ``out[..., index[r]] += values[..., r]``."""
        raise NotImplementedError

    def zeros(self, shape: tuple[int, ...], like: Any) -> Any:
        """Zeros of ``like``'s float type (and device)."""
        raise NotImplementedError

    def add_to_diagonal(self, m: Any, values: Any) -> Any:
        """``m`` (B, k, k) with ``values`` (B, k) added to each diagonal (a new array)."""
        raise NotImplementedError

    def cholesky(self, m: Any) -> tuple[Any, Any]:
        """The Cholesky factors of symmetric matrices (B, k, k), and (B,) whether each
        factorisation succeeded (a failed one's factor is not used)."""
        raise NotImplementedError

    def cho_solve(self, factor: Any, y: Any, rows: Any = None) -> Any:
        """Solve with the factors of :meth:`cholesky`: y (B', k) to (B', k), with the
        factors of the batch items ``rows`` (an index array; None: all of them)."""
        raise NotImplementedError

    def diagonal(self, m: Any) -> Any:
        """The diagonals (B, k) of matrices (B, k, k) (a view)."""
        raise NotImplementedError

    def nonzero(self, mask: Any) -> Any:
        """The positions of a (B,) mask's true entries, as an index array."""
        raise NotImplementedError

    def assemble(self, like: Any, parts: Any) -> Any:
        """An array of ``like``'s shape whose rows ``idx`` are ``values``, for each
        ``(idx, values)`` of ``parts`` (together they cover every row)."""
        raise NotImplementedError

    def all(self, mask: Any) -> bool:
        """Whether every entry of ``mask`` is true (one device synchronisation)."""
        raise NotImplementedError

    def eigh(self, m: Any) -> tuple[Any, Any]:
        """Eigenvalues (B, k) and eigenvectors (B, k, k) of symmetric matrices."""
        raise NotImplementedError

    def matvec(self, m: Any, v: Any) -> Any:
        """(B, k, k) times (B, k)."""
        raise NotImplementedError

    def maximum(self, x: Any, floor: Any) -> Any:
        """The element-wise maximum of ``x`` and ``floor`` (broadcast)."""
        raise NotImplementedError

    def where(self, cond: Any, x: Any, y: Any) -> Any:
        raise NotImplementedError

    def take(self, x: Any, index: np.ndarray) -> Any:
        """``x[..., index]`` for a numpy index array."""
        raise NotImplementedError

    def pad_zero(self, x: Any) -> Any:
        """``x`` with one more entry, 0, at the end of its last axis."""
        raise NotImplementedError

    def concat(self, parts: Any) -> Any:
        """The arrays ``parts`` joined along their last axis."""
        raise NotImplementedError

    # -- the schedule's bookkeeping (fastdcyk.engine.core.schedule.Ledger) ---------------------

    def int_counts(self, batch: int) -> Any:
        """Zeros (3, batch) of an integer type: detections, updates, pruned."""
        raise NotImplementedError

    def as_int(self, mask: Any) -> Any:
        raise NotImplementedError

    def flags(self, keep: Any, check: Any) -> tuple[bool, bool]:
        """(any update kept, every checked value finite), read together."""
        raise NotImplementedError

    def finite_flag(self, check: Any) -> Any:
        """Whether every value of ``check`` is finite, as a 0-d array (on a device: not
        read back, no synchronisation)."""
        raise NotImplementedError

    def read_flags(self, flags: Sequence[Any]) -> list[bool]:
        """The values of several :meth:`finite_flag` results, read together."""
        raise NotImplementedError

    def cell_flags(self, check: Any) -> Any:
        """Per cell, whether every value of ``check`` (batch, C, k) is finite: (C,), not
        read back."""
        raise NotImplementedError

    def tolist(self, x: Any) -> list:
        raise NotImplementedError


class NumpyNamespace(ArrayNamespace):
    """The primitives in numpy and scipy (float64)."""

    name = "numpy"

    def asfloat(self, x: Any) -> np.ndarray:
        return np.asarray(x, dtype=np.float64)

    def logistic(self, z: Any) -> np.ndarray:
        return scipy.special.expit(z)  # 1 / (1 + exp(-z)), without overflow warnings

    def index_add(self, target: Any, index: Any, values: Any) -> np.ndarray:
        n = target.shape[-1]
        if values.ndim == 1:
            return target + np.bincount(index, values, minlength=n)
        rows = values.reshape(-1, values.shape[-1])
        sums = np.stack([np.bincount(index, r, minlength=n) for r in rows])
        return target + sums.reshape(*values.shape[:-1], n)

    def zeros(self, shape: tuple[int, ...], like: Any = None) -> np.ndarray:
        return np.zeros(shape)

    def add_to_diagonal(self, m: Any, values: Any) -> np.ndarray:
        out = np.array(m, dtype=np.float64)
        k = out.shape[-1]
        diagonal = out.reshape(*out.shape[:-2], k * k)[..., :: k + 1]  # a view
        diagonal += values
        return out

    def cholesky(self, m: np.ndarray) -> tuple[Any, np.ndarray]:
        try:  # the whole batch in one call: a stack of lower factors
            return np.linalg.cholesky(m), np.ones(len(m), bool)
        except np.linalg.LinAlgError:  # which systems fail: one by one
            pass
        factors, ok = [], np.ones(len(m), bool)
        for b, mb in enumerate(m):
            try:
                factors.append(scipy.linalg.cho_factor(mb))
            except np.linalg.LinAlgError:
                factors.append(None)
                ok[b] = False
        return factors, ok

    def cho_solve(self, factor: Any, y: np.ndarray, rows: Any = None) -> np.ndarray:
        if isinstance(factor, np.ndarray):  # a stack of lower factors L: L L^T a = y
            low = factor if rows is None else factor[rows]
            z = np.linalg.solve(low, y[..., None])
            return np.linalg.solve(low.swapaxes(-1, -2), z)[..., 0]
        used = factor if rows is None else [factor[r] for r in rows]
        out = np.empty(y.shape)
        for b, (f, yb) in enumerate(zip(used, y, strict=True)):
            out[b] = scipy.linalg.cho_solve(f, yb)
        return out

    def diagonal(self, m: np.ndarray) -> np.ndarray:
        return np.diagonal(m, axis1=-2, axis2=-1)

    def nonzero(self, mask: Any) -> np.ndarray:
        return np.flatnonzero(mask)

    def assemble(self, like: Any, parts: Any) -> np.ndarray:
        out = np.empty(np.shape(like))
        for idx, values in parts:
            out[idx] = values
        return out

    def all(self, mask: Any) -> bool:
        return bool(np.all(mask))

    def eigh(self, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.linalg.eigh(m)

    def matvec(self, m: np.ndarray, v: np.ndarray) -> np.ndarray:
        return np.stack([mb @ vb for mb, vb in zip(m, v, strict=True)])

    def maximum(self, x: Any, floor: Any) -> np.ndarray:
        return np.maximum(x, floor)

    def where(self, cond: Any, x: Any, y: Any) -> np.ndarray:
        return np.where(cond, x, y)

    def take(self, x: Any, index: np.ndarray) -> np.ndarray:
        return x[index] if x.ndim == 1 else x[..., index]  # (an ellipsis costs 0.7 us)

    def pad_zero(self, x: Any) -> np.ndarray:
        return np.concatenate([x, np.zeros((*x.shape[:-1], 1))], axis=-1)

    def concat(self, parts: Any) -> np.ndarray:
        return np.concatenate(parts, axis=-1)

    def int_counts(self, batch: int) -> np.ndarray:
        return np.zeros((3, batch), np.int64)

    def as_int(self, mask: Any) -> np.ndarray:
        return np.asarray(mask, np.int64)

    def flags(self, keep: Any, check: Any) -> tuple[bool, bool]:
        return bool(np.any(keep)), bool(np.all(np.isfinite(check)))

    def finite_flag(self, check: Any) -> np.ndarray:
        return np.asarray(np.all(np.isfinite(check)))

    def read_flags(self, flags: Sequence[Any]) -> list[bool]:
        return [bool(f) for f in flags]

    def cell_flags(self, check: Any) -> np.ndarray:
        return np.isfinite(check).all(axis=-1).all(axis=0)

    def tolist(self, x: Any) -> list:
        return np.asarray(x).tolist()


#: The numpy namespace.
NUMPY = NumpyNamespace()


def sigmoid(x: Any, beta: float, xp: ArrayNamespace = NUMPY) -> Any:
    """The paper's sigma(x) = 1 / (1 + exp(-(x - 0.5) beta)), for scalars and arrays.

    Examples
    --------
    >>> float(sigmoid(0.5, 50.0)), round(float(sigmoid(1.0, 50.0)), 6)
    (0.5, 1.0)
    """
    return xp.logistic((xp.asfloat(x) - 0.5) * beta)

"""The d x d arrays of a parse, declared once.

Every array of size d x d that the engine, the decoder and the operators allocate is one of
the declarations below, and they allocate it through its declaration (:meth:`Buffer.get`
for a work buffer held and reused by the codebook, :meth:`Buffer.new` for an array of one
parse). :func:`fastdcyk.estimate_memory` sums the same declarations (each detection mode
lists those its parse holds, :func:`fastdcyk.engine.memory.work_buffers`), so the estimate
cannot drift from what is allocated: a new array needs a declaration here, and its size
comes from it.

An array is real, (d, d) in the codebook's dtype, or a half spectrum in its complex dtype:
(d // 2 + 1, d) for a spectrum along axis 0, (d, d // 2 + 1) along axis 1 (the same bytes).

The work buffers are pooled in a :class:`Workspace`, one per codebook, with the lock of the
parse that uses them; :class:`WorkspaceHolder`, a base class of
:class:`~fastdcyk.hrr.codebook.Codebook`, gives the codebook the methods that the engine
reads them with (:attr:`~fastdcyk.hrr.codebook.Codebook.lock`,
:meth:`~fastdcyk.hrr.codebook.Codebook.buffer_bytes`,
:meth:`~fastdcyk.hrr.codebook.Codebook.release_buffers`).
"""

from __future__ import annotations

import math
import os
import threading
import weakref
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

__all__ = [
    "G_CACHE_BYTES",
    "G_KEEP_BYTES",
    "Buffer",
    "HasWorkspace",
    "Workspace",
    "WorkspaceHolder",
    "g_cache_slots",
    "g_kept_slots",
    "g_matrix",
]


class Workspace:
    """The reusable work buffers of one codebook, and the lock of the parse that uses them.

    One allocation per (name, dtype), grown to the largest shape asked for under that name
    and viewed for every smaller one, so the memory held stays bounded whatever shapes the
    operators meet (one d x d buffer serves every (d, k) matrix with k <= d). A parse, a
    decoding or an operator chain holds :attr:`lock` while it uses them. A pickled
    workspace comes back empty, with a fresh lock; so does every workspace in a forked
    child (a lock held by another thread of the parent at the fork would stay held).

    Parameters
    ----------
    empty : callable
        ``empty(shape, dtype)``: the allocator (the FFT library's, aligned where it wants).
    """

    _live: weakref.WeakSet[Workspace] = weakref.WeakSet()

    def __init__(self, empty: Any) -> None:
        self.empty = empty
        self.arrays: dict[tuple[str, str], np.ndarray] = {}
        self.lock = threading.RLock()
        Workspace._live.add(self)

    def get(self, name: str, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        """The buffer ``name`` as an array of ``shape`` and ``dtype`` (a view)."""
        shape = tuple(int(s) for s in shape)
        n = math.prod(shape)
        key = (name, np.dtype(dtype).str)
        buf = self.arrays.get(key)
        if buf is None or buf.size < n:
            buf = None
            self.arrays.pop(key, None)  # let the old one go before the larger one comes
            buf = self.empty((max(n, 1),), dtype)
            self.arrays[key] = buf
        return buf[:n].reshape(shape)

    def release(self) -> None:
        """Free every buffer (they are allocated again on next use)."""
        self.arrays.clear()

    @property
    def nbytes(self) -> int:
        """Bytes held now (safe to call while another thread's parse adds buffers)."""
        return sum(b.nbytes for b in list(self.arrays.values()))

    def __getstate__(self) -> dict[str, Any]:
        return {"empty": self.empty}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["empty"])


def _fresh_locks_after_fork() -> None:  # pragma: no cover - runs in forked children
    for ws in list(Workspace._live):
        ws.lock = threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_fresh_locks_after_fork)


class HasWorkspace(Protocol):
    """What a :class:`Buffer` is allocated for: a dimension, a dtype and a workspace
    (:class:`fastdcyk.hrr.codebook.Codebook`)."""

    d: int
    dtype: np.dtype
    workspace: Workspace


class WorkspaceHolder:
    """The base class of what holds a :class:`Workspace` as ``workspace`` (the codebook):
    the lock of its work buffers, and how much they hold. Documented as the codebook's."""

    workspace: Workspace

    @property
    def lock(self) -> threading.RLock:
        """The lock of the work buffers: held by whatever uses them (a parse, a decoding,
        an operator chain)."""
        return self.workspace.lock

    def release_buffers(self) -> None:
        """Free the work buffers of :attr:`workspace` (they are allocated again on next
        use)."""
        self.workspace.release()

    def buffer_bytes(self) -> int:
        """Bytes held in work buffers now."""
        return self.workspace.nbytes


@dataclass(frozen=True)
class Buffer:
    """One d x d array of a parse.

    Attributes
    ----------
    name : str
        Its name; for a work buffer, the key under which the codebook keeps it.
    spectrum : bool
        A half spectrum (complex) rather than a real matrix.
    axis : {0, 1}
        For a spectrum, the axis it was taken along (which side is d // 2 + 1).
    """

    name: str
    spectrum: bool = False
    axis: int = 0

    def shape(self, d: int) -> tuple[int, int]:
        """The array's shape at dimension d."""
        if not self.spectrum:
            return (d, d)
        return (d // 2 + 1, d) if self.axis == 0 else (d, d // 2 + 1)

    def dtype(self, dtype: Any) -> np.dtype:
        """The array's dtype for accumulators of ``dtype``."""
        real = np.dtype(dtype)
        return np.result_type(real, np.complex64) if self.spectrum else real

    def nbytes(self, d: int, dtype: Any) -> int:
        """Bytes of the array at dimension d, for accumulators of ``dtype``."""
        rows, cols = self.shape(d)
        return rows * cols * self.dtype(dtype).itemsize

    def get(self, cb: HasWorkspace, shape: tuple[int, ...] | None = None) -> np.ndarray:
        """The codebook's reusable work buffer of this name (``shape``: a smaller view)."""
        return cb.workspace.get(
            self.name, self.shape(cb.d) if shape is None else shape, self.dtype(cb.dtype)
        )

    def new(self, cb: HasWorkspace, zero: bool = True) -> np.ndarray:
        """A new array of one parse (zeros unless ``zero`` is False)."""
        make = np.zeros if zero else np.empty
        return make(self.shape(cb.d), self.dtype(cb.dtype))


# Work buffers, held by the codebook and reused from one parse to the next.
#: Real work buffers of the parsers and the decoder.
Y = Buffer("dcyk-Y")
W = Buffer("dcyk-W")
#: The spectrum of a product shared by the nonterminals of a cell (or a decoder's row).
YHAT = Buffer("dcyk-Yhat", spectrum=True, axis=1)
#: The spectrum a circulant is applied in (operators, parsers, decoder).
SPECTRUM = Buffer("spectrum", spectrum=True)
#: The intermediate result of an operator chain applied factor by factor.
APPLY_REAL = Buffer("apply-real")

# Arrays of one parse.
#: The entrywise-gate parser's accumulators, as spectra along axis 1.
FL = Buffer("FL", spectrum=True, axis=1)
FR = Buffer("FR", spectrum=True, axis=1)
#: The trace-gate parser's accumulators, as 2-D half spectra.
ZT = Buffer("ZT", spectrum=True)
PR = Buffer("PR", spectrum=True)
#: The residual table of the cancelling read-back (readback="cancel"): ZT less what was read.
ZR = Buffer("ZR", spectrum=True)
#: The dense results.
P_LEFT = Buffer("P_left")
P_RIGHT = Buffer("P_right")
#: (Phi P_left)^T, which the decoder of a dense P_left starts from.
SHUFFLED = Buffer("shuffled")


#: Bytes of G_k matrices the numpy trace-gate parsers keep (at least two are kept whatever d);
#: the torch backend may keep more (:func:`g_cache_slots`'s ``budget``), and keeps all of them
#: under autograd.
G_CACHE_BYTES = 256 << 20


def g_cache_slots(d: int, dtype: Any, n: int, budget: int | None = None) -> int:
    """How many G_k the trace-gate parsers keep for a sentence of n words (accumulators of
    ``dtype``): as many as fit in ``budget`` bytes (default, and at least,
    :data:`G_CACHE_BYTES`), at least two, at most n + 1 (one per span index)."""
    size = g_matrix(0).nbytes(d, dtype)
    budget = G_CACHE_BYTES if budget is None else max(G_CACHE_BYTES, int(budget))
    return int(max(2, min(n + 1, budget // size)))


#: Bytes of G_k matrices a codebook keeps from one parse to the next (the trace-gate
#: parsers compute them from its index vectors and permutation alone): all of a sentence's at
#: d = 1024 (4.2 MB each), none at d = 6000 (144 MB each), where the memory bound matters.
G_KEEP_BYTES = 128 << 20


def g_kept_slots(d: int, dtype: Any, slots: int) -> int:
    """How many of ``slots`` G_k matrices are kept between parses (:data:`G_KEEP_BYTES`)."""
    return int(min(slots, G_KEEP_BYTES // g_matrix(0).nbytes(d, dtype)))


def g_matrix(k: int) -> Buffer:
    """The trace-gate parser's k-th cached matrix G_k (a 2-D half spectrum)."""
    return Buffer(f"G{k}", spectrum=True)

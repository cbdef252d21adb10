"""The torch backend's dense matrices made later: a batch's tables kept (on its device,
within a budget) until the first of its results' P_left or P_right is asked for, then every
matrix of the batch made at once (one batched transform) and copied to the host.

:func:`fastdcyk.engine.backends.torch.driver.parse` hands each result a
:class:`~fastdcyk.engine.core.deferred.DeferredArray` over :class:`LaterDense`; on a device the
tables of all such batches stay within :func:`deferral_budget`, the oldest moved to the host
beyond it (:func:`spill_deferred`, which the backend's record names for a batch that runs out
of the device's memory).
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import numpy as np
import torch

from fastdcyk.engine.backends.torch.parser import TorchParser
from fastdcyk.engine.backends.torch.spectral import HeldTables
from fastdcyk.hrr.codebook import Codebook

__all__ = ["LaterDense", "deferral_budget", "host_matrices", "spill_deferred"]


class LaterDense:
    """The dense matrices of a batch parsed with ``dense="later"``, made all at once (one
    batched transform) when the first sentence's are asked for, each handed out once.

    The batch keeps its tables (:class:`~fastdcyk.engine.backends.torch.spectral.HeldTables`) and
    lets the rest of the parse go at once, unless the tables have work to do on the device
    first (the clean-up gate's deferred writes: the parser is kept till then). On a device
    they can be moved to the host (:meth:`spill`). A device out of memory while the
    matrices are made (or the tables moved) loses nothing: the make is done on the host
    instead (the move is not made). A make interrupted otherwise after it began (the
    clean-up gate's deferred writes partly applied) refuses to be tried again."""

    def __init__(self, parser: TorchParser, codebook: Codebook) -> None:
        held: TorchParser | HeldTables = parser
        if not parser.tables_pending:  # the tables alone: the parse let go
            held = parser.held_tables()
        self._source: TorchParser | HeldTables | None = held
        self._codebook = codebook
        self._lock = threading.Lock()
        self._left: list[np.ndarray | None] | None = None
        self._right: list[np.ndarray | None] | None = None
        #: The device the tables are on (None once they are on the host or made).
        self.device: torch.device | None = parser.device if parser.device.type != "cpu" else None

    def device_bytes(self) -> int:
        """The bytes of this batch's tables on a device (0 on the host or made)."""
        source = self._source
        if source is None or self.device is None:
            return 0
        return source.deferred_bytes()

    def spill(self) -> int:
        """Move the tables to the host (the matrices will be made there); the bytes moved
        (0 where the device ran out of memory writing the clean-up gate's deferred
        updates first: the tables stay, nothing lost)."""
        with self._lock:
            source = self._source
            if source is None or self.device is None:
                return 0
            moved = self.device_bytes()
            try:
                with torch.no_grad():
                    tables = source.held_tables()
            except torch.cuda.OutOfMemoryError:
                return 0  # the writes not made are still the parser's to make
            self._source, self.device = tables.to_host(), None
            return moved

    def _make(self) -> None:
        with self._lock:
            if self._left is not None:
                return
            source, self._source = self._source, None
            if source is None:
                raise RuntimeError(
                    "P_left cannot be made: an earlier attempt was interrupted while it "
                    "transformed this batch's tables; parse the sentences again"
                )
            with torch.no_grad():
                try:
                    tables = source.held_tables()
                except torch.cuda.OutOfMemoryError:
                    self._source = source  # nothing lost: its writes are made when written
                    raise
                try:
                    dense = tables.dense()
                except torch.cuda.OutOfMemoryError:  # on the host instead
                    tables = tables.to_host()
                    dense = tables.dense()
                self._left, self._right = host_matrices(*dense, self._codebook)
            self.device = None

    def left(self, b: int) -> np.ndarray:
        self._make()
        return self._hand_out(self._left, b)

    def right(self, b: int) -> np.ndarray:
        self._make()
        return self._hand_out(self._right, b)

    @staticmethod
    def _hand_out(matrices: list[np.ndarray | None] | None, b: int) -> np.ndarray:
        assert matrices is not None
        m, matrices[b] = matrices[b], None  # the result keeps it; the batch need not
        assert m is not None
        return m


#: The batches parsed on a device whose dense matrices are deferred, oldest first (weak
#: references: a batch whose results are all gone frees its tables).
_ON_DEVICE: list[weakref.ref[LaterDense]] = []
_ON_DEVICE_LOCK = threading.Lock()


def deferral_budget(device: torch.device) -> int:
    """The bytes of deferred tables (:func:`fastdcyk.engine.backends.torch.driver.parse`'s
    results whose P_left has not been asked for yet) that a device keeps before the oldest
    move to the host: a quarter of a CUDA device's memory; none on other devices (whose
    batches' tables move to the host as soon as they are parsed, their matrices then made on
    the CPU)."""
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).total_memory // 4
    return 0


def hold_on_device(batch: LaterDense, device: torch.device) -> None:
    """Register a deferred batch on ``device``, then keep the device's deferred tables
    within :func:`deferral_budget` (:func:`spill_deferred`)."""
    with _ON_DEVICE_LOCK:
        _ON_DEVICE.append(weakref.ref(batch))
    spill_deferred(device, keep=deferral_budget(device))


def spill_deferred(device: Any = None, keep: int = 0) -> int:
    """Move the tables of deferred results from a device to the host, oldest first, until
    at most ``keep`` bytes of them are left on it.

    A result of the torch backend on a device keeps its batch's tables there until its
    P_left or P_right is first asked for (then all the batch's matrices are made and copied
    to the host at once); :func:`fastdcyk.engine.backends.torch.driver.parse` keeps their
    total within
    :func:`deferral_budget`, and :func:`fastdcyk.engine.batch.dcyk_batch` moves them all
    when the device runs out of memory. Moved tables make their matrices on the CPU.

    Parameters
    ----------
    device : torch.device or str, optional
        Only this device's (default: every device's).
    keep : int, default 0
        The bytes that may stay.

    Returns
    -------
    int
        The bytes moved.
    """
    dev = None if device is None else torch.device(device)
    with _ON_DEVICE_LOCK:
        _ON_DEVICE[:] = [ref for ref in _ON_DEVICE if _live_on_device(ref())]
        batches = [b for ref in _ON_DEVICE if (b := ref()) is not None]
    if dev is not None:  # a device without an index: every device of its type
        index = dev.index
        batches = [
            b
            for b in batches
            if b.device is not None
            and b.device.type == dev.type
            and (index is None or b.device.index == index)
        ]
    held = sum(b.device_bytes() for b in batches)
    moved = 0
    for b in batches:  # oldest first
        if held <= keep:
            break
        got = b.spill()
        held -= got
        moved += got
    return moved


def _live_on_device(batch: LaterDense | None) -> bool:
    return batch is not None and batch.device is not None


def host_matrices(
    p_left: torch.Tensor, p_right: torch.Tensor | None, codebook: Codebook
) -> tuple[list[np.ndarray | None], list[np.ndarray | None]]:
    """A batch's (B, d, d) matrices as one host array per sentence (:func:`_host_matrix`);
    ``p_right`` None (never written: the clean-up gate's) as zeros of each one's own."""
    left: list[np.ndarray | None] = [_host_matrix(m, codebook.dtype) for m in p_left]
    if p_right is None:
        shape = (codebook.d, codebook.d)
        return left, [np.zeros(shape, codebook.dtype) for _ in left]
    return left, [_host_matrix(m, codebook.dtype) for m in p_right]


def _host_matrix(m: torch.Tensor, dtype: np.dtype) -> np.ndarray:
    """One sentence's (d, d) matrix as a C-ordered array of its own on the host: one copy
    to the host, from the device or, on the CPU, out of the batch's tensor (so that a
    result does not keep the whole batch alive). Some parsers give P as a transposed view:
    on a device it is made C-ordered there first (one temporary d x d matrix on the
    device). Its dtype is the codebook's (``dtype``; never converted)."""
    if m.device.type == "cpu":
        host = np.array(m.numpy(), order="C")
    else:
        host = m.contiguous().cpu().numpy()
    if host.dtype != dtype:
        raise TypeError(f"P is {host.dtype}; the codebook's dtype is {dtype} (a bug: report it)")
    return host

"""What a numpy parse holds and costs, in the units the modes state it in.

A mode's record (:class:`fastdcyk.registry.modes.Mode`) names two functions of its folder:
``buffers``, the d x d arrays (:mod:`fastdcyk.hrr.buffers`) a numpy parse holds, as a
:class:`Held`, which the memory check sums (:mod:`fastdcyk.engine.memory`); and ``cost``, its
time in FFT pairs (an rfft and an irfft along one axis of a d x d float32 matrix, one thread)
and readouts, built from :func:`scalar_gate_seconds` and :func:`index_pairs`, which the cost
model scales by the pair's measured time (:mod:`fastdcyk.engine.cost`; docs/performance.md
gives the measurements behind the factors).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fastdcyk.hrr import buffers
from fastdcyk.hrr.buffers import Buffer

__all__ = ["MAC_SECONDS", "PAIRS_PER_SCALAR_CELL", "Held", "index_pairs", "scalar_gate_seconds"]

#: FFT pairs per cell of the scalar gates (passes over the 2-D spectra: a read and a write;
#: measured: a 20-word ATIS sentence, cleanup, d = 1024, 210 cells in 0.23 s).
PAIRS_PER_SCALAR_CELL = 0.2
#: Seconds of one complex multiply-add of a readout (a matrix-vector product in BLAS).
MAC_SECONDS = 2.5e-10


@dataclass(frozen=True)
class Held:
    """The d x d arrays (:mod:`fastdcyk.hrr.buffers`) a numpy parse holds.

    Attributes
    ----------
    during : list of Buffer
        During the parse.
    end : list of Buffer
        At its end, while the dense results are formed.
    chains : {"during", "end"} or None
        When the parse applies operator chains to d x d matrices (whose blocks
        :mod:`fastdcyk.hrr.blocks` holds when the FFT library works block by block).
    """

    during: list[Buffer]
    end: list[Buffer]
    chains: str | None = None


def index_pairs(n: int, d: int) -> tuple[int, bool]:
    """The index matrices G_k an n-word parse at d computes (one FFT pair each), its
    codebook having parsed before (it keeps those :func:`~fastdcyk.hrr.buffers.g_kept_slots`
    allows from one parse to the next), and whether the parse holds all n + 1 at once."""
    slots = buffers.g_cache_slots(d, np.float32, n)
    return n + 1 - buffers.g_kept_slots(d, np.float32, slots), slots >= n + 1


def scalar_gate_seconds(
    n: int, d: int, pair: float, reads: int, *, passes: int = 1, extra_pairs: int = 0
) -> float:
    """The cost of a parse whose table is kept as 2-D spectra (the trace and clean-up
    gates): ``passes`` times :data:`PAIRS_PER_SCALAR_CELL` per cell, one pair per index
    matrix the codebook does not keep (:func:`index_pairs`) and ``extra_pairs``, and
    ``reads`` readouts of a nonterminal or terminal (one complex multiply-add per
    frequency each). A codebook's first parse also computes the kept index matrices, n + 1
    pairs at most."""
    cells = n * (n + 1) // 2
    computed, _ = index_pairs(n, d)
    seconds = (passes * PAIRS_PER_SCALAR_CELL * cells + computed + extra_pairs) * pair
    return seconds + reads * (d // 2 + 1) * MAC_SECONDS

"""What a parse will cost, before it runs: a model in FFT pairs, and the note for slow ones.

The unit is one FFT pair (an rfft and an irfft along one axis of a d x d float32 matrix, one
thread), whose time grows as d^2 log2 d once the matrix leaves the caches; the model times
three pairs at d = 1024 once per process and scales. Per variant (docs/performance.md
gives the measurements behind the factors):

- ``"paper"`` (the entrywise gate): every detection costs a few pairs (its readout, its full
  or diagonal P_A and the updates of both accumulators; in the paper's order the cell is
  read again after each update), about :data:`PAIRS_PER_ENTRYWISE_DETECTION` measured on
  G0 and G4 at d = 1024; its cost grows with the nonterminals times the cells;
- ``"trace"`` and ``"cleanup"``: a few passes over the 2-D spectra per cell
  (:data:`PAIRS_PER_SCALAR_CELL`), one pair per span index for the index matrices, and the
  readouts of nonterminals (one complex multiply-add per frequency each: all of them for the
  trace gate and the matched read-back, the candidates only for the least-squares one).

Order of magnitude is the aim: the estimate decides whether a parse warrants a note and
which faster variant to name (:func:`slow_parse_note`).
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING

import numpy as np

from fastdcyk.engine.rules import rule_structure
from fastdcyk.hrr.fft import get_engine
from fastdcyk.options import DCYKOptions, resolve

if TYPE_CHECKING:  # pragma: no cover
    from fastdcyk.cfg.grammar import Grammar

__all__ = [
    "PAIRS_PER_ENTRYWISE_DETECTION",
    "PAIRS_PER_SCALAR_CELL",
    "SLOW_SECONDS",
    "parse_seconds",
    "slow_parse_note",
]

#: FFT pairs per detection of the entrywise gate (measured: a 6-word G0 sentence, paper
#: variant, d = 1024: 78 detections in 1.78 s, pairs of 5.8 ms).
PAIRS_PER_ENTRYWISE_DETECTION = 4.0
#: FFT pairs per cell of the scalar gates (passes over the 2-D spectra: a read and a write;
#: measured: a 20-word ATIS sentence, cleanup, d = 1024, 210 cells in 0.23 s).
PAIRS_PER_SCALAR_CELL = 0.2
#: Seconds of one complex multiply-add of a readout (a matrix-vector product in BLAS).
_MAC_SECONDS = 2.5e-10
#: A parse predicted to take longer than this gets a note naming a faster variant.
SLOW_SECONDS = 30.0

_PAIR: list[float] = []  # seconds per d^2 log2 d, measured once


def _pair_seconds(d: int) -> float:
    """The model's time of one FFT pair at d (scaled from three pairs timed at d = 1024)."""
    if not _PAIR:
        ref = 1024
        engine = get_engine("auto", 1)
        x = np.random.default_rng(0).standard_normal((ref, ref)).astype(np.float32)
        spectrum = engine.rfft(x, 0)
        engine.irfft(spectrum, ref, 0, out=x)  # plans made
        t0 = time.perf_counter()
        for _ in range(3):
            engine.rfft(x, 0, out=spectrum)
            engine.irfft(spectrum, ref, 0, out=x)
        _PAIR.append((time.perf_counter() - t0) / 3 / (ref * ref * math.log2(ref)))
    return _PAIR[0] * d * d * math.log2(max(d, 2))


def parse_seconds(grammar: Grammar, n: int, d: int, options: DCYKOptions) -> float:
    """The model's time of one parse of an n-word sentence at d (one thread, float32).

    Parameters
    ----------
    grammar : Grammar
        In CNF.
    n : int
        The sentence's length.
    d : int
    options : DCYKOptions

    Returns
    -------
    float
        Seconds, to an order of magnitude.
    """
    st = rule_structure(grammar)
    cells = n * (n + 1) // 2
    unary, binary = len(st.unary), len(st.binary)
    pair = _pair_seconds(d)
    if options.gate == "entrywise":
        detections = n * unary + (cells - n) * binary
        return PAIRS_PER_ENTRYWISE_DETECTION * detections * pair
    h = d // 2 + 1
    nn = len(st.nonterminals)
    # the cancelling read-back writes each cell twice and subtracts its read (twice the
    # passes), and reads the words before the cells (their G_k again, where not all are kept)
    cancel = options.readback == "cancel"
    passes = 2 if cancel else 1
    seconds = (passes * PAIRS_PER_SCALAR_CELL * cells + (n + 1) + (n if cancel else 0)) * pair
    if options.gate == "trace":
        reads = n * (unary + nn) + (cells - n) * (binary + nn)
    elif options.readback == "matched":
        reads = 2 * cells * nn
    else:
        reads = n * len(st.terminals)  # the words' readouts; the candidates are few
    return seconds + reads * h * _MAC_SECONDS


def slow_parse_note(grammar: Grammar, n: int, d: int, options: DCYKOptions) -> str | None:
    """One line for a parse predicted to take longer than :data:`SLOW_SECONDS`: the estimate,
    and the default variant's where it is faster (None for a parse that is not slow)."""
    seconds = parse_seconds(grammar, n, d, options)
    if seconds < SLOW_SECONDS:
        return None
    line = (
        f"D-CYK with variant={options.variant!r} ({options.gate} gate) on "
        f"{len(grammar.nonterminals):,} nonterminals, {n} words at d = {d}: about "
        f"{_duration(seconds)} predicted"
    )
    default = resolve("cleanup")
    if options.gate != default.gate:
        fast = parse_seconds(grammar, n, d, default)
        line += f"; variant='cleanup' (the default) takes about {_duration(fast)}"
    return line


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(seconds, 0.1):.2g} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"

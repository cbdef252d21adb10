"""What a parse will cost, before it runs: a model in FFT pairs, and the note for slow ones.

The unit is one FFT pair (an rfft and an irfft along one axis of a d x d float32 matrix, one
thread), whose time grows as d^2 log2 d once the matrix leaves the caches; the model times
three pairs at d = 1024 once per process and scales. Each detection mode has its own model
(:attr:`Mode.cost <fastdcyk.registry.modes.Mode>`; docs/performance.md gives the measurements
behind the factors): the entrywise gate costs a few pairs per detection, the scalar gates
(trace, clean-up) a few passes over the 2-D spectra per cell and the readouts of
nonterminals (:func:`fastdcyk.engine.backends.numpy.accounting.scalar_gate_seconds`).

Order of magnitude is the aim: the estimate decides whether a parse warrants a note and
which faster variant to name (:func:`slow_parse_note`).
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING

import numpy as np

from fastdcyk.engine.core.rules import rule_structure
from fastdcyk.hrr.fft import get_fft
from fastdcyk.options import DEFAULT_VARIANT, DCYKOptions, resolve

if TYPE_CHECKING:  # pragma: no cover
    from fastdcyk.cfg.grammar import Grammar

__all__ = [
    "SLOW_SECONDS",
    "duration",
    "parse_seconds",
    "slow_parse_note",
]

#: A parse predicted to take longer than this gets a note naming a faster variant.
SLOW_SECONDS = 30.0

_PAIR: list[float] = []  # seconds per d^2 log2 d, measured once


def _pair_seconds(d: int) -> float:
    """The model's time of one FFT pair at d (scaled from three pairs timed at d = 1024)."""
    if not _PAIR:
        ref = 1024
        library = get_fft("auto", 1)
        x = np.random.default_rng(0).standard_normal((ref, ref)).astype(np.float32)
        spectrum = library.rfft(x, 0)
        library.irfft(spectrum, ref, 0, out=x)  # plans made
        t0 = time.perf_counter()
        for _ in range(3):
            library.rfft(x, 0, out=spectrum)
            library.irfft(spectrum, ref, 0, out=x)
        _PAIR.append((time.perf_counter() - t0) / 3 / (ref * ref * math.log2(ref)))
    return _PAIR[0] * d * d * math.log2(max(d, 2))


def parse_seconds(grammar: Grammar, n: int, d: int, options: DCYKOptions) -> float:
    """The model's time of one parse of an n-word sentence at d (one thread, float32), by
    the cost model of the options' mode (nan for a mode that has none).

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
    model = options.mode.part("cost")
    if model is None:
        return math.nan
    return float(model(rule_structure(grammar), n, d, options, _pair_seconds(d)))


def slow_parse_note(grammar: Grammar, n: int, d: int, options: DCYKOptions) -> str | None:
    """One line for a parse predicted to take longer than :data:`SLOW_SECONDS`: the estimate,
    and the default variant's where it is faster (None for a parse that is not slow)."""
    seconds = parse_seconds(grammar, n, d, options)
    if not seconds >= SLOW_SECONDS:  # fast, or not modelled
        return None
    line = (
        f"D-CYK with variant={options.variant!r} ({options.gate} gate) on "
        f"{len(grammar.nonterminals):,} nonterminals, {n} words at d = {d}: about "
        f"{duration(seconds)} predicted"
    )
    default = resolve(DEFAULT_VARIANT)
    if options.mode is not default.mode:
        fast = parse_seconds(grammar, n, d, default)
        line += f"; variant={DEFAULT_VARIANT!r} (the default) takes about {duration(fast)}"
    return line


def duration(seconds: float) -> str:
    """``seconds`` for a reader: "12 s", "7 min", "2.5 h"."""
    if seconds < 90:
        return f"{max(seconds, 0.1):.2g} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"

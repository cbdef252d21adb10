"""The numpy backend: D-CYK's arithmetic over FFTs and Numba kernels, into reused buffers.

Each detection mode's numpy parser (:mod:`fastdcyk.engine.modes`) subclasses
:class:`NumpyParser` and implements :class:`fastdcyk.engine.schedule.CellParser`, whose
schedule (cells, orders, counts, pruning, log, checks, progress) is
:func:`fastdcyk.engine.schedule.run`; the parsers that keep the table as 2-D half spectra
(the trace and clean-up gates) share :class:`fastdcyk.engine.numpy_spectral.SpectralParser`.
:func:`parse_sentence` runs one parse of a prepared plan (:mod:`fastdcyk.engine.plan`) with
the parser its mode names.
"""

from __future__ import annotations

import functools
import inspect
import time
from typing import Any

import numpy as np

from fastdcyk.cfg.grammar import Grammar
from fastdcyk.engine import modes, schedule
from fastdcyk.engine.arrays import NUMPY
from fastdcyk.engine.certificate import Certificate
from fastdcyk.engine.decode import Statistics, chart_from_statistics, decode_statistics
from fastdcyk.engine.deferred import DeferredArray
from fastdcyk.engine.result import DCYKResult
from fastdcyk.engine.rules import parseval_weights, rule_tables
from fastdcyk.engine.schedule import Step
from fastdcyk.engine.soft import SoftWord
from fastdcyk.hrr.codebook import Codebook
from fastdcyk.options import DCYKOptions

__all__ = ["NumpyParser", "mixture", "parse_sentence"]


def mixture(word: str) -> tuple[tuple[str, float], ...]:
    """A word's terminals and weights: its own with weight 1, a soft word's."""
    return word.weights if isinstance(word, SoftWord) else ((word, 1.0),)


class NumpyParser(schedule.CellParser):
    """What every numpy parser has: the grammar, the words, the codebook and the options,
    the grammar's rule tables in the codebook, the Parseval weights, and the rows of the
    nonterminals detected in each step.

    Beyond the schedule's protocol, :func:`parse_sentence` asks a parser for
    :meth:`statistics` and :meth:`dense` when the schedule is done, for
    :meth:`table_scores`, and calls :meth:`close` at the end, even after an error. The
    defaults: no statistics of its own (the chart is then decoded from the dense P_left),
    no table scores, nothing to release.

    Parameters
    ----------
    grammar : Grammar
        In CNF.
    words : tuple of str
        Terminals of the grammar (soft words among them).
    cb : Codebook
    opt : DCYKOptions
    rules : bool, default True
        Whether the rule tables hold the rule spectra (a mode that applies the rules to
        scores needs only the nonterminals').
    """

    def __init__(
        self,
        grammar: Grammar,
        words: tuple[str, ...],
        cb: Codebook,
        opt: DCYKOptions,
        *,
        rules: bool = True,
    ) -> None:
        self.grammar, self.words, self.cb, self.opt = grammar, words, cb, opt
        self.d = cb.d
        self.tables = rule_tables(cb, grammar, opt.encoding, rules=rules)
        self.parseval = parseval_weights(cb.d)

    def rows(self, step: Step) -> np.ndarray:
        return self.tables.unary if step == schedule.UNARY else self.tables.binary

    def statistics(self) -> Statistics | None:
        """The decoder statistics the parser reads itself; None: decode the dense P_left
        (:func:`~fastdcyk.engine.decode.decode_statistics` with the options' decoder)."""
        return None

    #: Whether :meth:`dense` can defer P_left (its ``deferred``), the spectrum it keeps till
    #: then being checked as ``left_spectrum``.
    defers_dense = False

    def dense(self, deferred: bool = False) -> tuple[Any, Any]:
        """P_left and P_right as new d x d arrays of the codebook's dtype. With
        ``deferred`` (asked only of a parser whose :attr:`defers_dense` is true), P_left
        may be a :class:`~fastdcyk.engine.deferred.DeferredArray` (made when first asked
        for; the driver checks ``left_spectrum``, the spectrum it is made from, before),
        and so may a P_right never written (zeros)."""
        raise NotImplementedError

    def certificate(self, chart: dict | None = None) -> Certificate | None:
        """How far the chart's reads can be trusted (the least-squares read-backs); None
        for the parsers that read by other means. ``chart``: the decoded chart, whose
        unsupported cells the certificate then refuses."""
        return None

    def table_scores(self) -> dict[tuple[int, int, str], float] | None:
        """The Viterbi scores read from a weighted table (``weights="table"``); None for
        the parsers that write none."""
        return None

    def extra_counts(self) -> dict[str, int]:
        """Counts of the parse beyond the detections and updates (``result.counts``)."""
        return {}

    def close(self) -> None:
        """Release what the parse held beyond its result (called after an error too)."""


def _defers(parser_class: type) -> bool:
    """Whether a parser class can defer its dense P_left: :attr:`NumpyParser.defers_dense`
    and a ``dense`` that takes ``deferred`` (a subclass's own ``dense(self)`` cannot)."""
    return bool(parser_class.defers_dense) and _takes_deferred(parser_class.dense)


@functools.cache
def _takes_deferred(dense: Any) -> bool:
    return "deferred" in inspect.signature(dense).parameters


def _finite(value: np.ndarray, where: str) -> None:
    if not np.all(np.isfinite(value)):
        raise schedule.non_finite(where)


def parse_sentence(
    grammar: Grammar,
    ws: tuple[str, ...],
    cb: Codebook,
    opt: DCYKOptions,
    *,
    decode: bool,
    record: bool,
    on_progress: Any = None,
) -> DCYKResult:
    """The numpy backend's parse of checked words, options and codebook
    (:func:`fastdcyk.engine.plan.prepare`) with the parser of the options' mode
    (:mod:`fastdcyk.engine.modes`); ``on_progress`` is called with the number of detections
    made, after each group of them."""
    parser_class = modes.select(opt.gate, opt.weights).parser("numpy")
    with cb.lock:  # the parse uses the codebook's work buffers throughout
        parser = parser_class(grammar, ws, cb, opt)
        try:
            return _parse(parser, grammar, ws, cb, opt, decode, record, on_progress)
        finally:  # also after an error: what the codebook keeps stays within its budget
            parser.close()


def _parse(
    parser: NumpyParser,
    grammar: Grammar,
    ws: tuple[str, ...],
    cb: Codebook,
    opt: DCYKOptions,
    decode: bool,
    record: bool,
    on_progress: Any,
) -> DCYKResult:
    """:func:`parse_sentence`'s work, the codebook's lock held."""
    n = len(ws)
    ledger = schedule.Ledger(NUMPY, parser.tables.nonterminals, [n], opt.prune, record=record)
    timings: dict[str, float] = {}
    schedule.run(parser, n, opt.order, ledger, on_progress=on_progress, timings=timings)
    t2 = time.perf_counter()
    stats = parser.statistics() if decode else None
    t3 = time.perf_counter()
    # the dense matrices when the decoder needs P_left; else made when first asked for
    # (the spectra checked now: a non-finite table is the parse's error, not a later one's)
    deferred = _defers(type(parser)) and not (decode and stats is None)
    if deferred:
        _finite(parser.left_spectrum, "P_left after the parse")
    p_left, p_right = parser.dense(deferred=True) if deferred else parser.dense()
    t4 = time.perf_counter()
    chart = None
    if decode and stats is None:
        stats = decode_statistics(p_left, grammar, n, cb, decoder=opt.decoder)
    if decode:
        chart = chart_from_statistics(stats, n, beta=opt.beta, threshold=opt.threshold)
    timings["decode"] = time.perf_counter() - t4 + t3 - t2
    for name, m in (("P_left", p_left), ("P_right", p_right)):
        if not isinstance(m, DeferredArray):  # a deferred one is zeros or checked above
            _finite(m, f"{name} after the parse")
    logs = ledger.log_lists()
    return DCYKResult(
        words=ws,
        grammar=grammar,
        codebook=cb,
        options=opt,
        p_left=p_left,
        p_right=p_right,
        statistics=stats,
        chart=chart,
        counts={**ledger.count_dicts()[0], **parser.extra_counts()},
        log=None if logs is None else logs[0],
        timings=timings,
        table_scores=parser.table_scores(),
        certificate=parser.certificate(chart),
    )

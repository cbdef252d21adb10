"""The numpy backend's driver: a prepared plan's sentences parsed one at a time.

:func:`parse` is the driver of the ``"numpy"`` record (:mod:`fastdcyk.registry.backends`):
each sentence of a :class:`~fastdcyk.engine.core.plan.Plan` is parsed by the numpy parser its
options' mode names (:class:`~fastdcyk.engine.backends.numpy.parser.NumpyParser`), through
the schedule (:func:`fastdcyk.engine.core.schedule.run`), in the codebook's work buffers
(its lock held), and becomes a :class:`~fastdcyk.engine.core.result.DCYKResult`: the
statistics the parser read itself or those of the dense P_left, the chart, the counts, the
certificate of the least-squares read-backs, a weighted table's scores.
"""

from __future__ import annotations

import functools
import inspect
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from fastdcyk.cfg.grammar import Grammar
from fastdcyk.engine.backends.numpy.parser import NumpyParser
from fastdcyk.engine.core import schedule
from fastdcyk.engine.core.arrays import NUMPY
from fastdcyk.engine.core.decode import chart_from_statistics, decode_statistics
from fastdcyk.engine.core.deferred import DeferredArray
from fastdcyk.engine.core.result import DCYKResult
from fastdcyk.hrr.codebook import Codebook
from fastdcyk.options import DCYKOptions

if TYPE_CHECKING:  # pragma: no cover
    from fastdcyk.engine.core.plan import Plan
    from fastdcyk.registry.backends import Backend

__all__ = ["parse", "parse_sentence"]


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


def parse(
    plan: Plan,
    backend: Backend,
    *,
    device: Any = None,
    decode: bool = True,
    dense: bool = True,
    record: bool = False,
    on_progress: Any = None,
) -> list[DCYKResult]:
    """The numpy backend's driver: every sentence of a prepared plan
    (:func:`fastdcyk.engine.prepare.prepare`), one at a time, with the parser that the options'
    mode names for ``backend`` (this backend's record, or that of a backend that runs on
    this driver with parsers of its own: :mod:`fastdcyk.registry.backends`).

    Parameters
    ----------
    plan : Plan
    backend : Backend
    device : None
        The numpy backend computes on the host only.
    decode : bool, default True
        Decode each chart.
    dense : bool, default True
        Keep P_left and P_right in the results (False: None; the experiment grid scores
        the charts only).
    record : bool, default False
        Keep the log of every detection.
    on_progress : callable, optional
        Called with the number of detections made, after each group of them.

    Returns
    -------
    list of DCYKResult
        In the plan's order.
    """
    parser_class = plan.options.mode.parser(backend.name)
    kw = {"decode": decode, "dense": dense, "record": record, "on_progress": on_progress}
    return [
        parse_sentence(parser_class, plan.grammar, ws, plan.codebook, plan.options, **kw)
        for ws in plan.sentences
    ]


def parse_sentence(
    parser_class: type[NumpyParser],
    grammar: Grammar,
    ws: tuple[str, ...],
    cb: Codebook,
    opt: DCYKOptions,
    *,
    decode: bool,
    dense: bool = True,
    record: bool,
    on_progress: Any = None,
) -> DCYKResult:
    """One sentence's parse with ``parser_class``, the words, options and codebook checked
    (:func:`fastdcyk.engine.prepare.prepare`); ``on_progress`` is called with the number of
    detections made, after each group of them."""
    with cb.lock:  # the parse uses the codebook's work buffers throughout
        parser = parser_class(grammar, ws, cb, opt)
        try:
            return _parse(parser, grammar, ws, cb, opt, decode, dense, record, on_progress)
        finally:  # also after an error: what the codebook keeps stays within its budget
            parser.close()


def _parse(
    parser: NumpyParser,
    grammar: Grammar,
    ws: tuple[str, ...],
    cb: Codebook,
    opt: DCYKOptions,
    decode: bool,
    dense: bool,
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
    needed = decode and stats is None
    p_left = p_right = None
    if dense or needed:
        deferred = _defers(type(parser)) and not needed
        if deferred:
            _finite(parser.left_spectrum, "P_left after the parse")
        p_left, p_right = parser.dense(deferred=True) if deferred else parser.dense()
    elif _defers(type(parser)):  # no matrix made: its spectrum checked as the matrix would be
        _finite(parser.left_spectrum, "P_left after the parse")
    t4 = time.perf_counter()
    chart = None
    if needed:
        stats = decode_statistics(p_left, grammar, n, cb, decoder=opt.decoder)
    if decode:
        chart = chart_from_statistics(stats, n, beta=opt.beta, threshold=opt.threshold)
    timings["decode"] = time.perf_counter() - t4 + t3 - t2
    for name, m in (("P_left", p_left), ("P_right", p_right)):
        if m is not None and not isinstance(m, DeferredArray):  # deferred: zeros or checked
            _finite(m, f"{name} after the parse")
    if not dense:
        p_left = p_right = None
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

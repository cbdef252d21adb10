"""What every numpy parser has: :class:`NumpyParser`, the base class of the modes' numpy
parsers.

Each detection mode's numpy parser (``fastdcyk/engine/modes/<mode>/numpy_parser.py``)
subclasses :class:`NumpyParser` and implements
:class:`fastdcyk.engine.core.schedule.CellParser`, whose schedule (cells, orders, counts,
pruning, log, checks, progress) is :func:`fastdcyk.engine.core.schedule.run`; the parsers that
keep the table as 2-D half spectra (the trace and clean-up gates) share
:class:`fastdcyk.engine.backends.numpy.spectral.NumpySpectralParser`. The numpy backend's
driver (:mod:`fastdcyk.engine.backends.numpy.driver`) builds them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fastdcyk.cfg.grammar import Grammar
from fastdcyk.engine.core import schedule
from fastdcyk.engine.core.certificate import Certificate
from fastdcyk.engine.core.decode import Statistics
from fastdcyk.engine.core.rules import parseval_weights, rule_tables
from fastdcyk.engine.core.schedule import Step
from fastdcyk.engine.core.soft import SoftWord
from fastdcyk.hrr.codebook import Codebook
from fastdcyk.options import DCYKOptions

__all__ = ["NumpyParser", "mixture"]


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
        (:func:`~fastdcyk.engine.core.decode.decode_statistics` with the options' decoder)."""
        return None

    #: Whether :meth:`dense` can defer P_left (its ``deferred``), the spectrum it keeps till
    #: then being checked as ``left_spectrum``.
    defers_dense = False

    def dense(self, deferred: bool = False) -> tuple[Any, Any]:
        """P_left and P_right as new d x d arrays of the codebook's dtype. With
        ``deferred`` (asked only of a parser whose :attr:`defers_dense` is true), P_left
        may be a :class:`~fastdcyk.engine.core.deferred.DeferredArray` (made when first asked
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

"""What a D-CYK parse returns: :class:`DCYKResult`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fastdcyk.cfg.grammar import Grammar
from fastdcyk.engine.decode import chart_from_statistics
from fastdcyk.hrr.codebook import Codebook
from fastdcyk.options import DCYKOptions

__all__ = ["DCYKResult"]


@dataclass
class DCYKResult:
    """What :func:`dcyk` returns.

    Attributes
    ----------
    words : tuple of str
    grammar : Grammar
    codebook : Codebook
    options : DCYKOptions
    p_left, p_right : ndarray, (d, d)
        The accumulators, in the codebook's dtype.
    statistics : dict or None
        The decoder statistic of every (i, j, A) (None when ``decode=False``).
    chart : dict or None
        ``{(i, j): frozenset of nonterminals}`` for every 0 <= i < j <= n, as :func:`cyk`.
    counts : dict
        Detections, updates applied and updates pruned.
    timings : dict
        Seconds spent in the unary step, the binary step and the decoder.
    log : list of dict or None
        Every detection, when the parse ran with ``record=True``.
    """

    words: tuple[str, ...]
    grammar: Grammar
    codebook: Codebook
    options: DCYKOptions
    p_left: np.ndarray
    p_right: np.ndarray
    statistics: dict[tuple[int, int, str], float] | None
    chart: dict[tuple[int, int], frozenset[str]] | None
    counts: dict[str, int] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    log: list[dict[str, Any]] | None = None

    def chart_at(
        self, threshold: float | None = None, beta: float | None = None
    ) -> dict[tuple[int, int], frozenset[str]]:
        """The chart decoded at another threshold (and beta), from the kept statistics."""
        if self.statistics is None:
            raise ValueError("this parse was not decoded (decode=False): use fastdcyk.decode")
        return chart_from_statistics(
            self.statistics,
            len(self.words),
            beta=self.options.beta if beta is None else beta,
            threshold=self.options.threshold if threshold is None else threshold,
        )

    def __repr__(self) -> str:
        o = self.options
        return (
            f"DCYKResult({' '.join(self.words)!r}, d={self.codebook.d}, {self.codebook.dtype}, "
            f"variant={o.variant!r}, gate={o.gate!r}, decoder={o.decoder!r}, "
            f"order={o.order!r}, encoding={o.encoding!r}, beta={o.beta:g})"
        )

"""Reading the CYK table back from P_left (the paper's Algorithm 4, and a trace variant).

For every cell (i, j) and nonterminal A the decoder computes a statistic of
``[A]+ [j]+ [i]+ P_left``, which is ~ I when (i, j, A) was written into P_left and ~ 0 otherwise:

- ``"entry"`` (the paper): its entry (0, 0), which is row 0 of the operator against column 0
  of P_left: O(d log d) per triple, no d x d work at all.
- ``"trace"``: its trace divided by d, the mean of the whole diagonal, which sees far less
  noise. Per start position i one FFT pass gives Z_i = Phi C_i Phi P_left, per cell one more
  gives C_j Z_i, and the traces against every A then come from one O(d^2) sum.

A is put in cell (i, j) iff ``sigma(statistic) > threshold`` with
``sigma(x) = 1 / (1 + exp(-(x - 0.5) * beta))``, that is iff
``statistic > 0.5 + logit(threshold) / beta``. The statistics are kept, so one parse can be
decoded at many thresholds (:func:`chart_from_statistics`). The cleanup variant's
least-squares read-back (docs/method.md, section 7) reads the chart bottom-up instead:
:func:`fastdcyk.engine.modes.cleanup.numpy_parser.readback_statistics`;
:func:`fastdcyk.decode` offers every decoder.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from fastdcyk.checks import check_choice
from fastdcyk.engine.core.rules import rule_tables
from fastdcyk.hrr import buffers, kernels
from fastdcyk.options import DECODERS, DEFAULT_BETA, DEFAULT_THRESHOLD, check_beta_threshold

if TYPE_CHECKING:  # pragma: no cover
    from fastdcyk.cfg.grammar import Grammar
    from fastdcyk.hrr.codebook import Codebook

__all__ = [
    "DECODERS",
    "DEFAULT_BETA",
    "DEFAULT_THRESHOLD",
    "Statistics",
    "chart_from_statistics",
    "check_matrix",
    "decision_boundary",
    "decode_statistics",
    "item_scores",
    "statistics_from_spectrum",
]


class Statistics(Mapping):
    """The decoder statistic of every triple (i, j, A) of an n-word sentence, 0 <= i < j <= n:
    an array, read as the mapping ``{(i, j, A): float}``.

    Parameters
    ----------
    array : ndarray, (n, n + 1, N), float64
        ``array[i, j, k]`` is the statistic of ``(i, j, nonterminals[k])``; entries outside
        the chart (j <= i) are not read.
    nonterminals : sequence of str
        The last axis.

    Notes
    -----
    A parse keeps its statistics as one array, and the mapping view costs nothing until it
    is read: a large grammar's 20-word sentence has some 800,000 triples, and a dict of them
    took longer to build than the parse. ``cell(i, j)`` gives one cell's row.

    Examples
    --------
    >>> s = Statistics(np.zeros((1, 2, 2)), ("S", "A"))
    >>> len(s), s[(0, 1, "A")], list(s)
    (2, 0.0, [(0, 1, 'S'), (0, 1, 'A')])
    """

    __slots__ = ("_index", "array", "nonterminals")

    def __init__(self, array: np.ndarray, nonterminals: Sequence[str]) -> None:
        self.array = np.asarray(array, dtype=np.float64).view()
        self.array.flags.writeable = False  # the statistics of a parse: read, not changed
        self.nonterminals = tuple(nonterminals)
        n = self.array.shape[0]
        if self.array.shape != (n, n + 1, len(self.nonterminals)):
            raise ValueError(
                f"statistics of shape {self.array.shape}: expected (n, n + 1, "
                f"{len(self.nonterminals)}) for {len(self.nonterminals)} nonterminals"
            )
        self._index: dict[str, int] | None = None

    @property
    def n(self) -> int:
        """The sentence's length."""
        return self.array.shape[0]

    def cell(self, i: int, j: int) -> np.ndarray:
        """The statistics of cell (i, j), one per nonterminal (a read-only view)."""
        if not 0 <= i < j <= self.n:
            raise KeyError((i, j))
        return self.array[i, j]

    def _k(self, a: str) -> int:
        if self._index is None:
            self._index = {name: k for k, name in enumerate(self.nonterminals)}
        return self._index[a]

    def __getitem__(self, key: tuple[int, int, str]) -> float:
        try:
            i, j, a = key
            if not (isinstance(i, int | np.integer) and isinstance(j, int | np.integer)):
                raise TypeError
            k = self._k(a)
        except (TypeError, ValueError, KeyError):
            raise KeyError(key) from None
        if not 0 <= i < j <= self.n:
            raise KeyError(key)
        return float(self.array[i, j, k])

    def __iter__(self) -> Iterator[tuple[int, int, str]]:
        for i in range(self.n):
            for j in range(i + 1, self.n + 1):
                for a in self.nonterminals:
                    yield (i, j, a)

    def __len__(self) -> int:
        return self.n * (self.n + 1) // 2 * len(self.nonterminals)

    def __repr__(self) -> str:
        return f"Statistics(n={self.n}, {len(self.nonterminals)} nonterminals)"


def decision_boundary(beta: float, threshold: float) -> float:
    """The statistic above which sigma(statistic) > threshold: 0.5 + logit(threshold) / beta."""
    beta, threshold = check_beta_threshold(beta, threshold)
    return 0.5 + math.log(threshold / (1.0 - threshold)) / beta


def decode_statistics(
    p_left: np.ndarray,
    grammar: Grammar,
    n: int,
    codebook: Codebook,
    *,
    decoder: str = "entry",
) -> Statistics:
    """The decoder statistic of every triple (i, j, A), 0 <= i < j <= n.

    Parameters
    ----------
    p_left : ndarray, (d, d)
        The P_left accumulator of a parse, of the codebook's dtype.
    grammar : Grammar
    n : int
        Sentence length.
    codebook : Codebook
        The codebook the parse used.
    decoder : {"entry", "trace"}

    Returns
    -------
    Statistics
        ``{(i, j, A): statistic}`` over an array; ~1 for triples in the table, ~0 otherwise.
    """
    check_choice("decoder", decoder, DECODERS)
    check_matrix(p_left, codebook)
    # Every decoder operator ends in C Phi: work from the spectrum of (Phi P_left)^T.
    shuffled_t = buffers.SHUFFLED.new(codebook, zero=False)
    shuffled_t[...] = codebook.phi().apply(p_left).T
    fl = codebook.fft.rfft(shuffled_t, 1)
    del shuffled_t
    return statistics_from_spectrum(fl, grammar, n, codebook, decoder=decoder)


def check_matrix(p_left: np.ndarray, codebook: Codebook) -> None:
    """ValueError (shape, non-finite values) or TypeError (dtype) when ``p_left`` is not a
    finite d x d matrix of the codebook's dtype."""
    d = codebook.d
    if not isinstance(p_left, np.ndarray):
        raise TypeError(
            f"p_left must be a numpy array of shape ({d}, {d}), the P_left of a parse, got "
            f"{type(p_left).__name__}"
        )
    if p_left.shape != (d, d):
        raise ValueError(f"p_left has shape {p_left.shape}; the codebook has d = {d}")
    if p_left.dtype != codebook.dtype:
        raise TypeError(f"p_left is {p_left.dtype} but the codebook is {codebook.dtype}")
    if not np.isfinite(p_left).all():
        bad = int(p_left.size - np.count_nonzero(np.isfinite(p_left)))
        raise ValueError(
            f"p_left holds {bad} non-finite values (NaN or inf): it is not a table D-CYK "
            "wrote; decode the P_left of a parse"
        )


def statistics_from_spectrum(
    fl: np.ndarray,
    grammar: Grammar,
    n: int,
    codebook: Codebook,
    *,
    decoder: str = "entry",
) -> Statistics:
    """:func:`decode_statistics` from ``FL = rfft((Phi P_left)^T, axis=1)``.

    The entrywise parser keeps P_left in this form during a parse, so decoding needs no forward FFT.
    """
    check_choice("decoder", decoder, DECODERS)
    if n < 1:
        raise ValueError(f"sentence length n must be >= 1, got {n}")
    with codebook.lock:  # the trace decoder uses the codebook's work buffers
        return _statistics_from_spectrum(fl, grammar, n, codebook, decoder)


def _statistics_from_spectrum(
    fl: np.ndarray, grammar: Grammar, n: int, codebook: Codebook, decoder: str, on_row=None
) -> Statistics:
    d = codebook.d
    tables = rule_tables(codebook, grammar)
    nts = tables.nonterminals
    out = np.zeros((n, n + 1, len(nts)))
    spectrum = codebook.spectrum
    # c_A: the first column of C_A^T (A's vector reversed), one row per nonterminal.
    cols = np.fft.irfft(np.conj(tables.spectra).astype(np.complex128), n=d, axis=1)

    if decoder == "entry":
        # (C_A Phi C_j Phi C_i (Phi P_left))[0, 0]: row 0 of C_A Phi (that is
        # (Phi^T c_A)^T) times C_j Phi C_i against column 0 of Phi P_left, on length-d
        # vectors: for every A at once, one matrix-vector product per cell.
        col = np.fft.irfft(fl[0].astype(np.complex128), n=d).astype(codebook.dtype)
        rows = cols[:, codebook.permutation_index(-1)]
        for i in range(n):
            inner = codebook.circulant(spectrum=spectrum("index", i)).apply(col)
            for j in range(i + 1, n + 1):
                u = codebook.plus("index", j).apply(inner).astype(np.float64)
                out[i, j] = rows @ u
            if on_row is not None:
                on_row()
        return Statistics(out, nts)
    # Trace: tr(C_A Phi C_j Z_i) with Z_i = Phi C_i Phi P_left. In transposes, Zt = irfft(FL
    # V_i, axis=1) Phi^T, Wt = Zt C_j^T and tr(C_A Phi W) = tr(C_A^T Wt Phi^T) = sum_m c_A[m]
    # sum_k Wt[k, perm[(k + m) mod d]]: one sum shared by every A. The row spectra of Zt are
    # taken once per i and serve every j: each cell then costs one inverse FFT.
    zt = buffers.Y.get(codebook)
    w = buffers.W.get(codebook)
    s = buffers.SPECTRUM.get(codebook, fl.shape)
    zhat = buffers.YHAT.get(codebook, fl.shape)
    sums = np.empty(d, dtype=np.float64)
    ident = codebook.permutation_index(0)
    for i in range(n):
        kernels.spec_mul_into_axis1(fl, spectrum("index", i), s)
        codebook.fft.irfft(s, d, 1, out=w)
        kernels.gather_cols(w, codebook.perm, zt)
        codebook.fft.rfft(zt, 1, out=zhat)
        for j in range(i + 1, n + 1):
            # Wt = Zt C_j^T: the row spectra times spec(j)
            kernels.spec_mul_into_axis1(zhat, spectrum("index", j), s)
            codebook.fft.irfft(s, d, 1, out=w)
            kernels.wrapped_diag_sums(w, ident, codebook.perm, sums)
            out[i, j] = (cols @ sums) / d
        if on_row is not None:
            on_row()
    return Statistics(out, nts)


def chart_from_statistics(
    statistics: Mapping[tuple[int, int, str], float],
    n: int,
    *,
    beta: float,
    threshold: float = 0.99,
) -> dict[tuple[int, int], frozenset[str]]:
    """Threshold decoder statistics into a chart ``{(i, j): frozenset}`` (all cells present).

    ``statistics``: a :class:`Statistics` (thresholded as an array) or any mapping
    ``{(i, j, A): float}``."""
    bound = decision_boundary(beta, threshold)
    if isinstance(statistics, Statistics) and statistics.n == n:
        names = statistics.nonterminals
        found: dict[tuple[int, int], list[str]] = {
            (i, j): [] for i in range(n) for j in range(i + 1, n + 1)
        }
        # the entries above the bound, not the whole array: no numpy call per cell, and no
        # Python object per nonterminal of every cell (a real grammar's thousands)
        for i, j, a in zip(
            *(x.tolist() for x in np.nonzero(statistics.array > bound)), strict=True
        ):
            if j > i:  # a cell of the chart (the array has room for (i, j) with j <= i)
                found[(i, j)].append(names[a])
        return {cell: frozenset(v) for cell, v in found.items()}
    cells: dict[tuple[int, int], set[str]] = {
        (i, j): set() for i in range(n) for j in range(i + 1, n + 1)
    }
    for (i, j, a), s in statistics.items():
        if s > bound:
            cells[(i, j)].add(a)
    return {k: frozenset(v) for k, v in cells.items()}


def item_scores(
    statistics: Mapping[tuple[int, int, str], float],
    chart: Mapping[tuple[int, int], Iterable[str]],
    *,
    beta: float,
) -> dict[tuple[int, int, str], float]:
    """The score of every item (i, j, A) of a decoded chart, for ranking its trees.

    ``log sigma(beta (s - 1/2))`` of the item's decoder statistic s: the log of the value
    that the decoder compares with the threshold. A tree's score is the sum over its items
    (docs/method.md, section 9).

    Parameters
    ----------
    statistics : mapping ``{(i, j, A): float}``
        Decoder statistics (at least those of the chart's items).
    chart : mapping ``{(i, j): nonterminals}``
        The decoded chart.
    beta : float
        The decoder's beta.

    Examples
    --------
    >>> scores = item_scores({(0, 1, "A"): 1.0, (0, 1, "B"): 0.0}, {(0, 1): {"A"}}, beta=10)
    >>> {item: round(s, 6) for item, s in scores.items()}
    {(0, 1, 'A'): -0.006715}
    """
    return {
        (i, j, a): -_softplus(-beta * (float(statistics[(i, j, a)]) - 0.5))
        for (i, j), cell in chart.items()
        for a in cell
    }


def _softplus(x: float) -> float:
    """log(1 + e^x), without overflow."""
    return max(x, 0.0) + math.log1p(math.exp(-abs(x)))

"""A certificate per cell: how far the least-squares read of a chart can be trusted
(docs/method.md, section 7, "A certificate per cell").

The least-squares read-back (:mod:`fastdcyk.engine.core.readback`) reads a completed cell (i, j)
by regressing its unbound vector r (the d numbers whose inner product with a vector v is
the readout tr([v]+ [j]+ [i]+ P_left) / d) on the k vectors of its candidates:
x = V r, a = (G + lambda I)^-1 x with G = V V^T. What the candidates do not explain,
z = r - V^T a, is what the other cells leaked into the read (and, when cancelling, the
errors of the reads before it). Taking that leakage as isotropic noise of variance s^2 per
dimension, as for any linear regression,

    s^2 = ||z||^2 / (d - k),     ||z||^2 = ||r||^2 - 2 a.x + a^T G a,
    se(a_X)^2 = s^2 (G + lambda I)^-1_XX,

all from what the read already has: ||r||^2 is Parseval's sum over the cell's readout
spectrum (O(d)), G, x and a are the solve's. A decision "X is in the cell" (a_X above the
decision boundary b) is then wrong with probability about Phi(-abs(a_X - b) / se(a_X)) (Phi
the normal distribution function); a cell's bound is the sum over its decisions, and a
sentence's over its cells (Bonferroni: the probability that any decision is wrong, under
the noise model, is at most that sum).

A wrong read below a cell feeds it wrong candidates, so suspicion propagates upward: a cell
is suspect when its own bound exceeds alpha / C (C the sentence's cells) or when it spans a
suspect cell; a sentence is *sure* when no cell is suspect, and then its bound is at most
alpha. The certificate tests the reads, not the table: it cannot see an item that no
candidate stood for, which happens only below a misread cell.

The decoded chart is checked too (:func:`wrong_word_cells`, :func:`unsupported_cells`): a
word's cell must be its word's rules, and every item above must have a split whose children
are in the chart. A chart that passes holds no item CYK's lacks (by induction on the span),
so a sure chart's one possible error is an item missing, which the reads' bound covers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit
from scipy.special import ndtr

from fastdcyk.engine.core.readback import RIDGE, bounded_read, ridge_matrix
from fastdcyk.engine.core.rules import RuleStructure
from fastdcyk.engine.core.soft import SoftWord

__all__ = [
    "ALPHA",
    "Certificate",
    "bounded_read_errors",
    "read_errors",
    "unsupported_cells",
    "wrong_word_cells",
]

#: The sentence-level error bound below which a chart is called sure: with no suspect cell
#: the probability (under the read's noise model) that any decision of the chart is wrong is
#: at most this (docs/results.md, study (h), measures how often it holds).
ALPHA = 1e-3

#: A cell bound this small counts for nothing against any alpha a user would choose: the
#: cell keeps the bound that needs no inverse of its Gram matrix (:class:`CertificateBuilder`).
NEGLIGIBLE = 1e-12


def read_errors(
    g: np.ndarray, x: np.ndarray, a: np.ndarray, norm2: float, d: int, ridge: float = RIDGE
) -> tuple[np.ndarray, float]:
    """The standard errors of a least-squares read's amplitudes, and its leakage variance.

    Parameters
    ----------
    g : ndarray, (k, k)
        The Gram matrix of the regressors' vectors.
    x : ndarray, (k,)
        Their readouts from the cell.
    a : ndarray, (k,)
        The amplitudes read (the ridge solve of ``g`` and ``x``).
    norm2 : float
        ||r||^2, the squared norm of the cell's unbound vector.
    d : int
        The dimension.
    ridge : float, default :data:`~fastdcyk.engine.core.readback.RIDGE`
        The solve's ridge (relative to the mean diagonal of ``g``).

    Returns
    -------
    se : ndarray of float64, (k,)
        se(a_X) = s sqrt((G + ridge I)^-1_XX); infinite when k >= d (no degree of
        freedom is left to estimate s).
    s2 : float
        The leakage variance per dimension, ||r - V^T a||^2 / (d - k) (inf when k >= d).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> d, v = 256, rng.standard_normal((2, 256)) / 16  # two near-unit vectors
    >>> r = 1.0 * v[0] + 0.01 * rng.standard_normal(d)  # the cell holds the first
    >>> g, x = v @ v.T, v @ r
    >>> a = np.linalg.solve(g, x)
    >>> se, s2 = read_errors(g, x, a, float(r @ r), d, ridge=0.0)
    >>> bool(abs(s2 / 0.01**2 - 1) < 0.2), bool(np.all(se < 0.02))
    (True, True)
    """
    g = np.asarray(g, np.float64)
    x = np.asarray(x, np.float64)
    a = np.asarray(a, np.float64)
    k = len(x)
    if k == 0:
        return np.zeros(0), 0.0
    s2 = leakage_variance(g, x, a, norm2, d)
    if not np.isfinite(s2):
        return np.full(k, np.inf), np.inf
    m = ridge_matrix(g, ridge)
    try:
        lower = np.linalg.cholesky(m)
        # L^-1 through numpy's LAPACK: scipy's triangular solve with a matrix right-hand
        # side took 16 ms for k = 5 on a busy 2-core machine (its BLAS threads waiting),
        # numpy's inverse 6 us (docs/performance.md, "The width order")
        inverse = np.linalg.inv(lower)
        diagonal = np.einsum("ij,ij->j", inverse, inverse)
    except np.linalg.LinAlgError:  # rounding defeated the factorisation: its eigenvalues
        w, u = np.linalg.eigh(m)
        w = np.maximum(w, max(ridge, 1e-12) * max(np.trace(m) / k, 1e-300))
        diagonal = (u * u / w).sum(axis=1)
    return np.sqrt(s2 * diagonal), s2


def bounded_read_errors(
    g: np.ndarray, x: np.ndarray, a: np.ndarray, norm2: float, d: int, ridge: float = RIDGE
) -> tuple[np.ndarray, np.ndarray]:
    """The decision statistics and their standard errors of a bounded read (k > 0.9 d
    regressors, :func:`~fastdcyk.engine.core.readback.bounded_solve`; docs/method.md, section 7,
    "A certificate per cell", (4)).

    The read fits its m amplitudes strictly inside [0, 1] (the set F) by least squares with
    the others held at their bounds; while m < d that is a regression of d coordinates on m
    vectors, with the leakage variance s^2 = ||r - V^T a||^2 / (d - m) and the inner
    amplitudes' standard errors s sqrt((G_FF + lambda I)^-1_XX), as :func:`read_errors` has
    them. An amplitude X at a bound is tested by freeing it: with F free too, least squares
    would move it by (x_X - (G a)_X) / q_X, q_X = G_XX - G_XF (G_FF + lambda I)^-1 G_FX
    (what of v_X the inner vectors do not explain), with standard error s / sqrt(q_X); its
    statistic is a_X plus that move (on the side of the boundary where the bound is, by the
    read's optimality conditions). A bound amplitude whose vector the inner ones explain
    (q_X near 0) gets an infinite error: the read cannot tell it.

    Returns
    -------
    t, se : ndarray of float64, (k,)
        The statistics (a inside, a plus the freed move at a bound) and their errors; se
        infinite everywhere when m >= d.
    """
    g = np.asarray(g, np.float64)
    x = np.asarray(x, np.float64)
    a = np.asarray(a, np.float64)
    k = len(x)
    inner = (a > 0.0) & (a < 1.0)
    m = int(inner.sum())
    if m >= d:
        return a.copy(), np.full(k, np.inf)
    s2 = max(float(norm2 - 2.0 * (a @ x) + a @ g @ a), 0.0) / (d - m)
    scale = max(float(np.trace(g)) / k, 1e-300)
    t, se = a.copy(), np.empty(k)
    gi = g[np.ix_(inner, inner)] + ridge * scale * np.eye(m)
    try:
        inverse = np.linalg.inv(np.linalg.cholesky(gi)) if m else np.zeros((0, 0))
    except np.linalg.LinAlgError:
        return a.copy(), np.full(k, np.inf)
    se[inner] = np.sqrt(s2 * np.einsum("ij,ij->j", inverse, inverse))
    bound = ~inner
    w = inverse @ g[np.ix_(inner, bound)]  # L^-1 G_FB
    q = np.diagonal(g)[bound] - np.einsum("ij,ij->j", w, w)
    floor = ridge * scale  # below it, the inner vectors explain v_X: nothing to test
    with np.errstate(divide="ignore", invalid="ignore"):
        move = (x[bound] - g[bound] @ a) / q
        se[bound] = np.where(q > floor, np.sqrt(s2 / q), np.inf)
    t[bound] = a[bound] + np.where(q > floor, move, 0.0)
    return t, se


def leakage_variance(g: np.ndarray, x: np.ndarray, a: np.ndarray, norm2: float, d: int) -> float:
    """s^2 = ||r - V^T a||^2 / (d - k) (:func:`read_errors`); inf when k >= d."""
    k = len(x)
    if k >= d:
        return np.inf
    return max(float(norm2 - 2.0 * (a @ x) + a @ g @ a), 0.0) / (d - k)


def decision_bound(a: np.ndarray, se: np.ndarray, boundary: float) -> tuple[float, float]:
    """The smallest z = abs(a - boundary) / se over a cell's decisions (inf without one) and
    the cell's bound, the sum of Phi(-z)."""
    if not len(a):
        return np.inf, 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.abs(np.asarray(a, np.float64) - boundary) / se
    z = np.where(np.isnan(z), 0.0, z)  # 0 / 0: a read on the boundary with no error
    return float(z.min()), float(ndtr(-z).sum())


@dataclass(frozen=True, eq=False)
class Certificate:
    """How far each cell's least-squares read can be trusted (module notes).

    Attributes
    ----------
    margins : ndarray of float64, (n, n + 1)
        margins[i, j]: the smallest z = abs(a_X - b) / se(a_X) over the decisions of cell
        (i, j) (inf where the cell has no candidate, and outside the chart); a lower bound
        of it where that already puts the cell's bound below :data:`NEGLIGIBLE`.
    bounds : ndarray of float64, (n, n + 1)
        bounds[i, j]: the cell's bound, the sum over its decisions of Phi(-z) (0 outside
        the chart; an upper bound of it, below :data:`NEGLIGIBLE`, where the margin is).
    alpha : float, default :data:`ALPHA`
        The sentence-level bound of a sure chart.
    """

    margins: np.ndarray
    bounds: np.ndarray
    alpha: float = ALPHA

    @property
    def n(self) -> int:
        """The sentence's length in words."""
        return self.bounds.shape[0]

    @property
    def cells(self) -> int:
        """The chart's cells, n (n + 1) / 2."""
        return self.n * (self.n + 1) // 2

    @property
    def error_bound(self) -> float:
        """The sum of every cell's bound: under the read's noise model, at least the
        probability that some decision of the chart is wrong (capped at 1)."""
        return min(float(self.bounds.sum()), 1.0)

    @property
    def confidence(self) -> float:
        """1 - :attr:`error_bound`: under the read's noise model, a lower bound on the
        probability that every decision of the chart is right."""
        return 1.0 - self.error_bound

    def suspect_cells(self) -> list[tuple[int, int]]:
        """The cells whose own bound exceeds alpha / (number of cells), and every cell that
        spans one (its candidates came from a suspect read), sorted by span then start."""
        n = self.n
        own = self.bounds > self.alpha / self.cells
        suspect = np.zeros((n + 1, n + 1), bool)
        for j in range(1, n + 1):  # bottom-up: a cell is suspect if it or a part of it is
            for i in range(j - 1, -1, -1):
                suspect[i, j] = (
                    own[i, j] or (j - i > 1 and (suspect[i, j - 1] or suspect[i + 1, j]))
                )  # fmt: skip
        cells = [(i, j) for j in range(1, n + 1) for i in range(j) if suspect[i, j]]
        return sorted(cells, key=lambda c: (c[1] - c[0], c[0]))

    @property
    def sure(self) -> bool:
        """Whether no cell is suspect (and so :attr:`error_bound` <= alpha)."""
        return bool((self.bounds <= self.alpha / self.cells).all())

    @property
    def smallest_margin(self) -> float:
        """The smallest z over the chart's decisions (inf without one)."""
        return float(self.margins.min())

    def __repr__(self) -> str:
        verdict = "sure" if self.sure else f"{len(self.suspect_cells())} suspect cells"
        return (
            f"Certificate({verdict}, confidence={self.confidence:.6g}, "
            f"smallest margin={self.smallest_margin:.3g}, alpha={self.alpha:g})"
        )


class CertificateBuilder:
    """Collects the cells' margins and bounds during a parse (numpy backend)."""

    def __init__(self, n: int, boundary: float, d: int) -> None:
        self.margins = np.full((n, n + 1), np.inf)
        self.bounds = np.zeros((n, n + 1))
        self.boundary, self.d = boundary, d

    def add(
        self,
        i: int,
        j: int,
        g: np.ndarray,
        x: np.ndarray,
        a: np.ndarray,
        norm2: float,
        decisions: int,
        ridge: float = RIDGE,
    ) -> None:
        """Cell (i, j)'s read: the first ``decisions`` of the k regressors are its
        nonterminals (the rest, a unary cell's terminals, are solved for but decide no
        item of the chart)."""
        a = np.asarray(a, np.float64)
        if not (np.isfinite(norm2) and np.isfinite(a).all() and np.isfinite(g).all()):
            # a read of non-finite numbers decides nothing (the parse reports them)
            self.margins[i, j], self.bounds[i, j] = 0.0, float(decisions)
            return
        if bounded_read(len(x), self.d):  # the bounded read (docs/method.md, section 7)
            t, se = bounded_read_errors(g, x, a, norm2, self.d, ridge)
            margin, bound = decision_bound(t[:decisions], se[:decisions], self.boundary)
            self.margins[i, j], self.bounds[i, j] = margin, bound
            return
        # First a bound that needs no inverse: (G + ridge g I)^-1_XX <= 1 / (ridge g), g the
        # mean diagonal. Where it already makes the cell's bound negligible (as nearly always
        # when cancelling, whose leakage is small) the cell keeps it: its margin is then a
        # lower bound of the exact one and its bound an upper bound.
        s2 = leakage_variance(g, x, a, norm2, self.d)
        scale = max(float(np.trace(g)) / len(x), 1e-300)
        coarse = np.full(len(x), np.sqrt(s2 / (ridge * scale)))
        margin, bound = decision_bound(a[:decisions], coarse[:decisions], self.boundary)
        if bound > NEGLIGIBLE:
            se, _ = read_errors(g, x, a, norm2, self.d, ridge)
            margin, bound = decision_bound(a[:decisions], se[:decisions], self.boundary)
        self.margins[i, j], self.bounds[i, j] = margin, bound

    def certificate(self, alpha: float = ALPHA) -> Certificate:
        return Certificate(self.margins, self.bounds, alpha)

    def suspect(self, alpha: float = ALPHA) -> bool:
        """Whether a cell read so far is suspect by its own bound: then no certificate of
        the parse is sure (:attr:`Certificate.sure`, over the bounds so far; a bound, once
        set, only rises)."""
        return not self.certificate(alpha).sure

    def refuse(self, cells: list[tuple[int, int]]) -> None:
        """Mark ``cells`` as certainly wrong (bound 1, margin 0): their chart is no CYK
        chart (:func:`unsupported_cells`)."""
        for i, j in cells:
            self.margins[i, j], self.bounds[i, j] = 0.0, 1.0


def unsupported_cells(structure: RuleStructure, chart: dict) -> list[tuple[int, int]]:
    """The binary cells of a decoded ``chart`` holding a nonterminal that no split supports:
    no rule A -> B C with B in (i, k) and C in (k, j) for any k. Every CYK chart supports
    each of its items, so such a chart is not CYK's: the item was detected wrongly and
    written, which the reads' bounds do not see (docs/method.md, section 7, "A certificate
    per cell", (3)). Cells by span, then start."""
    names = {a: k for k, a in enumerate(structure.nonterminals)}
    n = max((j for _, j in chart), default=0)
    present = np.zeros((n + 1, n + 1, len(names)), np.bool_)
    for (i, j), cell in chart.items():
        if cell:
            present[i, j, [names[a] for a in cell]] = True
    order, ptr = (a.astype(np.int64) for a in structure.rules_by_parent)
    left = structure.binary_rule_left.astype(np.int64)
    right = structure.binary_rule_right.astype(np.int64)
    bad = np.zeros((n + 1, n + 1), np.bool_)
    _unsupported(present, order, ptr, left, right, bad)
    return [(i, i + w) for w in range(2, n + 1) for i in range(n - w + 1) if bad[i, i + w]]


#: A soft word's item A is detected with the gate sigma(m_A), m_A the weight of its
#: terminals with a rule A -> a (sigma centred on 0.5, docs/method.md, section 3): an item
#: of weight at least 0.5 + SOFT_BAND belongs in the word's cell, one of weight at most
#: 0.5 - SOFT_BAND does not; between, the chart may decide either way.
SOFT_BAND = 0.1


def wrong_word_cells(
    lexicon: Mapping[str, frozenset[str]],
    words: Sequence[Any],
    chart: dict,
    *,
    complete: bool = True,
) -> list[tuple[int, int]]:
    """The word cells (i, i + 1) of a decoded ``chart`` that are not what CYK puts there:
    in a CNF grammar a word's cell holds exactly the A with a rule A -> word (``lexicon``,
    :attr:`fastdcyk.cfg.grammar.Grammar.lexicon`), so an item beyond those was detected
    wrongly and written, and one of those missing was lost; the reads' bounds see neither
    (docs/method.md, section 7, "A certificate per cell", (3)). A soft word (a mixture of
    terminals, :class:`~fastdcyk.engine.core.soft.SoftWord`) must hold the items its weights
    put well above sigma's centre and none well below it (:data:`SOFT_BAND`).
    ``complete=False``: a cell may lack some of its word's items (the weighted table
    leaves out those beyond its beam), and only an item beyond them counts."""
    bad = []
    for i, w in enumerate(words):
        cell = chart.get((i, i + 1), frozenset())
        if isinstance(w, SoftWord):
            mass: dict[str, float] = {}
            for t, p in w.weights:
                for a in lexicon.get(t, ()):
                    mass[a] = mass.get(a, 0.0) + p
            need = {a for a, m in mass.items() if m >= 0.5 + SOFT_BAND} if complete else set()
            allowed = {a for a, m in mass.items() if m > (0.5 - SOFT_BAND if complete else 0)}
        else:
            allowed = lexicon.get(w, frozenset())
            need = allowed if complete else frozenset()
        if not need <= cell <= allowed:
            bad.append((i, i + 1))
    return bad


@njit(cache=True, nogil=True)
def _unsupported(present, order, ptr, left, right, bad):  # pragma: no cover - compiled
    """bad[i, j] = some item of binary cell (i, j) has no rule A -> B C with B in (i, k)
    and C in (k, j) for a split k."""
    n = present.shape[0] - 1
    for j in range(2, n + 1):
        for i in range(j - 1):
            for a in range(present.shape[2]):
                if not present[i, j, a]:
                    continue
                supported = False
                for x in range(ptr[a], ptr[a + 1]):
                    r = order[x]
                    for k in range(i + 1, j):
                        if present[i, k, left[r]] and present[k, j, right[r]]:
                            supported = True
                            break
                    if supported:
                        break
                if not supported:
                    bad[i, j] = True
                    break

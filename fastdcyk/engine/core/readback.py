"""The least-squares read-back of a cell (docs/method.md, section 7), for every backend.

The clean-up gate (docs/method.md, section 6) reads every completed cell once. A cell (i, j)
holds the items its detections wrote, sum over A of g_A [i]- [j]- [A]-, and the readout of
a nonterminal X through the trace decoder's shared pass is

.. math::

    x_X = \\operatorname{tr}([X]^+ [j]^+ [i]^+ P_{left}) / d
        = \\sum_A g_A \\langle v_X, v_A \\rangle + e_X ,

with e the leakage of the other cells. The matched filter takes x_X itself as X's
amplitude, so every other item of the cell adds to it. The least-squares read-back knows
which nonterminals can be in the cell: its *candidates* C, those whose detection t_A
exceeded the candidate level (the only ones the parse writes). It solves

.. math::

    (G_C + \\lambda \\bar g I) a = x_C, \\qquad (G_C)_{XY} = \\langle v_X, v_Y \\rangle ,

for the candidates' amplitudes a (every other nonterminal reads 0): exact for the cell's
own items while their vectors are independent, with the leakage amplified by the
conditioning of G_C. The ridge lambda (relative to the mean of G_C's diagonal, g bar)
bounds that amplification where G_C is (nearly) singular.

Once the candidates outnumber the dimensions (k > d) no linear read is unique: G_C is
singular, and the ridge returns the smallest amplitudes that fit, spread over the
candidates (and just below d, its noise is amplified without bound). Every amplitude the
parse writes lies in [0, 1] (a gate, a word's weight, a weighted item's amplitude), and
:func:`read_cell` then reads within those bounds
(:func:`bounded_solve`): a cell of 0/1 items of k random vectors in d dimensions is the
unique point of the box that fits for k up to about 2d (docs/method.md, section 7,
"Beyond d: the bounded read").

Written once for every backend (:mod:`fastdcyk.engine.core.arrays`): :func:`ridge_solve` solves a
batch of systems (the torch backend's sentences, padded to the largest candidate set, under
autograd), :func:`solve` one system in numpy (the numpy backend's clean-up and weighted
parsers, the capacity model).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg
from numba import njit

from fastdcyk.engine.core.arrays import NUMPY, ArrayNamespace

__all__ = [
    "RIDGE",
    "SMALL_SOLVE",
    "BOUNDED_FROM",
    "bounded_read",
    "bounded_solve",
    "linear_limit",
    "mean_diagonal",
    "candidates",
    "gram",
    "read_cell",
    "ridge_matrix",
    "ridge_solve",
    "solve",
]

#: The ridge lambda of :func:`solve`, relative to the mean diagonal of the Gram matrix: the
#: amplitudes of well-separated candidates move by about lambda / (smallest eigenvalue of
#: G_C), 0.004 for 250 random unitary vectors at d = 1024 (docs/method.md, section 7).
RIDGE = 1e-3


def candidates(t: Any, gates: Any, level: float, prune: float) -> Any:
    """Which detections make candidates: t_A above ``level`` and a gate above ``prune``
    (so that the candidates are exactly the updates the parse writes); numpy arrays or
    torch tensors."""
    return (t > level) & (gates > prune)


def gram(vectors: np.ndarray) -> np.ndarray:
    """The Gram matrix of the rows of ``vectors`` (k, d), in float64 (k x k)."""
    v = np.asarray(vectors, dtype=np.float64)
    return v @ v.T


def mean_diagonal(g: np.ndarray) -> float:
    """The mean of diag G, the scale of the ridge (1 where it is not positive, or G empty)."""
    k = g.shape[0]
    scale = float(np.trace(g)) / k if k else 1.0
    return scale if scale > 0 else 1.0


def ridge_matrix(g: np.ndarray, ridge: float = RIDGE) -> np.ndarray:
    """G + ridge mean(diag G) I, a new float64 array (the matrix :func:`solve` factors;
    :func:`mean_diagonal`)."""
    g = np.asarray(g, dtype=np.float64)
    return NUMPY.add_to_diagonal(g[None], ridge * mean_diagonal(g))[0]


def ridge_solve(
    g: Any,
    x: Any,
    *,
    ridge: float = RIDGE,
    refine: int = 0,
    valid: Any = None,
    xp: ArrayNamespace = NUMPY,
) -> Any:
    """The amplitudes a with (G + ridge mean(diag G) I) a = x, for a batch of systems.

    Never fails for a finite G: the regularised matrix is positive definite, and a system
    whose Cholesky factorisation rounding defeats goes through its eigenvalues, floored at
    the ridge. ``refine`` steps of iterative refinement follow (see :func:`solve`).

    Parameters
    ----------
    g : array, (B, k, k)
        Gram matrices (symmetric, positive semi-definite).
    x : array, (B, k)
        The matched-filter readouts of the k candidates of each system.
    ridge : float, default :data:`RIDGE`
    refine : int, default 0
    valid : array of bool, (B, k), optional
        For systems padded to one size: which rows are candidates. A padded row and
        column of ``g`` (and entry of ``x``) must be 0; it gets 1 on the diagonal and
        solves to 0, and the mean diagonal counts the valid rows only.
    xp : ArrayNamespace, default :data:`~fastdcyk.engine.core.arrays.NUMPY`

    Returns
    -------
    array, (B, k)
    """
    k = g.shape[-1]
    if k == 0:
        return x * 0
    count = k if valid is None else xp.maximum(valid.sum(-1), 1)
    scale = xp.diagonal(g).sum(-1) / count  # the mean diagonal: 1 where it is not positive
    scale = xp.where(scale > 0, scale, 1.0)
    added = ridge * scale[:, None]
    if valid is not None:  # padding: 1 on the diagonal
        added = added + ~valid
    m = xp.add_to_diagonal(g, added)
    step = _factorised(m, max(ridge, 1e-12) * scale, xp)
    a = step(x)
    for _ in range(refine):
        a = a + step(x - xp.matvec(g, a))
    return a


def _factorised(m: Any, floor: Any, xp: ArrayNamespace) -> Any:
    """y -> m^-1 y for a batch (B, k, k) of positive definite m: by Cholesky, and for the
    systems whose factorisation fails, through eigenvalues floored at ``floor`` (B,)."""
    factor, ok = xp.cholesky(m)
    if xp.all(ok):
        return lambda y: xp.cho_solve(factor, y)
    good, bad = xp.nonzero(ok), xp.nonzero(~ok)
    w, u = xp.eigh(m[bad])
    w = xp.maximum(w, floor[bad][:, None])
    ut = u.swapaxes(-1, -2)

    def step(y: Any) -> Any:
        parts = [(bad, xp.matvec(u, xp.matvec(ut, y[bad]) / w))]
        if len(good):
            parts.append((good, xp.cho_solve(factor, y[good], good)))
        return xp.assemble(y, parts)

    return step


def solve(g: np.ndarray, x: np.ndarray, ridge: float = RIDGE, refine: int = 0) -> np.ndarray:
    """The amplitudes a with (G + ridge mean(diag G) I) a = x, in float64: one system of
    :func:`ridge_solve`.

    The ridge shrinks every amplitude by about ridge / mu (mu an eigenvalue of G: 0.1% of
    it for well-separated vectors). Where amplitudes are read as values, not only
    compared with a boundary, ``refine`` steps of iterative refinement,
    a += (G + ridge mean(diag G) I)^-1 (x - G a), take that bias to
    (ridge / mu)^(refine + 1) where G is well conditioned (iterated Tikhonov
    regularisation: along G's eigenvalues below the ridge each step adds about what the
    first solve gave, so the result stays bounded, by refine + 1 times the first).

    Parameters
    ----------
    g : ndarray, (k, k)
        A Gram matrix (symmetric, positive semi-definite).
    x : ndarray, (k,)
        The matched-filter readouts of the k candidates.
    ridge : float, default :data:`RIDGE`
    refine : int, default 0
        Steps of iterative refinement after the first solve.

    Returns
    -------
    ndarray of float64, (k,)

    Examples
    --------
    >>> v = np.array([[1.0, 0.0], [0.6, 0.8]])  # two unit vectors, overlap 0.6
    >>> x = v @ (2.0 * v[0] + 1.0 * v[1])  # the readouts of a cell holding both
    >>> np.round(solve(gram(v), x, ridge=0.0), 6)
    array([2., 1.])
    """
    g = np.asarray(g, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    k = len(x)
    if 0 < k <= SMALL_SOLVE and g.shape == (k, k):
        a = np.empty(k)
        if _small_solve(g, x, ridge, refine, np.empty((k, k)), a):
            return a
    return ridge_solve(g[None], x[None], ridge=ridge, refine=refine)[0]


#: A cell's read is bounded (:func:`bounded_solve`) once its k regressors exceed this
#: share of d: beyond d no linear read is unique, and before it the ridge solve's noise
#: grows as 1 / (1 - k/d) (far leakage) to 1 / (1 - k/d)^3 (near matches; docs/method.md,
#: section 7, "Its noise"), 10 and 1,000 times at 0.9. On the treebank rules at d = 1024
#: the linear read of cells of 1,013 to 1,023 symbols was what failed (docs/results.md,
#: study (k)).
BOUNDED_FROM = 0.9


def linear_limit(d: int) -> int:
    """The most regressors a read in dimension ``d`` solves linearly (:data:`BOUNDED_FROM`
    d, rounded down); a read of more is bounded."""
    return int(BOUNDED_FROM * d)


def bounded_read(k: int, d: int) -> bool:
    """Whether a read of ``k`` regressors in dimension ``d`` is bounded
    (:func:`linear_limit`)."""
    return k > linear_limit(d)


def read_cell(
    g: np.ndarray,
    x: np.ndarray,
    d: int,
    refine: int = 0,
    lower: float | np.ndarray = 0.0,
    upper: float | np.ndarray = 1.0,
) -> np.ndarray:
    """The amplitudes of a cell's read in dimension ``d``: :func:`solve` while its k
    regressors are few enough, :func:`bounded_solve` (amplitudes in [``lower``, ``upper``],
    by default [0, 1]) from :func:`bounded_read` on (module notes)."""
    if bounded_read(len(x), d):
        return bounded_solve(g, x, lower, upper)
    return solve(g, x, refine=refine)


#: The penalty of :func:`bounded_solve`'s iteration, relative to the mean diagonal of G:
#: 0.3 took 80 to 160 iterations on cells of 359 to 1,045 candidates (d = 256 and 1024)
#: without over-relaxation, 1 and 3 two to ten times as many.
BOUNDED_RHO = 0.3

#: The over-relaxation of :func:`bounded_solve`'s iteration (1 is none; 1.5 to 1.8 is the
#: usual advice for the alternating direction method of multipliers).
BOUNDED_RELAX = 1.6

#: :func:`bounded_solve` iterates until no amplitude moved by more than the first of these
#: in an iteration (and the split's two copies agree to it), then polishes; where the polish
#: fails (the iteration had not found which amplitudes are at their bounds) it goes on to
#: the second, then returns the iterate as it is; :data:`BOUNDED_STEPS` iterations at most.
#: A cell no read separates (far beyond 2d, or through heavy leakage) may not converge: a
#: cap of 2,000 made d="auto"'s failed tries on CommandTalk cost 1.7 times the smallest
#: exact fixed d, 300 costs 1.19 (benchmarks/bench_auto.py), and the points of
#: docs/results.md, study (k), parse to the same charts and verdicts with either.
BOUNDED_TOLS = (1e-6, 1e-10)
BOUNDED_STEPS = 300


def bounded_solve(
    g: np.ndarray,
    x: np.ndarray,
    lower: float | np.ndarray = 0.0,
    upper: float | np.ndarray = 1.0,
    ridge: float = RIDGE,
) -> np.ndarray:
    """The amplitudes a in [lower, upper] that best fit the readouts: the minimum of
    a^T G a / 2 - a.x over the box, in float64.

    The least-squares fit ||r - V^T a||^2 of :func:`solve` within bounds on each amplitude
    (its terms in a other than these two are constants). For G singular (more regressors
    than dimensions) the unbounded fit has a whole affine space of minima, while a point
    of the box whose amplitudes are at their bounds is, for random vectors, the box's only
    fit with high probability as long as k is below about 2d (a vertex of the cube stays a
    vertex of its projection: Donoho and Tanner, 2010).

    G carries the ridge of :func:`solve` (``ridge`` times its mean diagonal on the
    diagonal): the objective is then strictly convex, with one minimum that moves
    continuously with x (without it, where the items' gates are near but not at their
    bounds, the fits form a small polytope, and rounding picks a point of it). Solved by
    the alternating direction method of multipliers on a = z, z in the box: one Cholesky
    factor of G + rho I (rho = :data:`BOUNDED_RHO` times the mean diagonal), then per
    iteration a solve with it and a clip. The result is then polished: the amplitudes
    strictly inside the box solved for exactly with the others at their bounds, kept when
    they stay in the box and the bound ones' gradient points out of it (the optimality
    conditions), so that it does not depend on the iteration's tolerance.

    Parameters
    ----------
    g : ndarray, (k, k)
        A Gram matrix (symmetric, positive semi-definite).
    x : ndarray, (k,)
        The readouts of the k regressors.
    lower, upper : float or ndarray (k,), default 0 and 1
        The bounds (lower <= upper).
    ridge : float, default :data:`RIDGE`
        Relative to the mean diagonal of ``g``, as :func:`solve` has it.

    Returns
    -------
    ndarray of float64, (k,)

    Examples
    --------
    Three items of five candidates in four dimensions, which no linear read separates
    (the ridge's bias is a few hundredths here, a few in 10^4 in a cell of a parse):

    >>> rng = np.random.default_rng(1)
    >>> v = rng.standard_normal((5, 4)) / 2  # five vectors in four dimensions
    >>> g, truth = v @ v.T, np.array([1.0, 0.0, 1.0, 1.0, 0.0])
    >>> np.round(bounded_solve(g, g @ truth), 2)
    array([1.  , 0.  , 0.99, 0.99, 0.  ])
    >>> np.round(solve(g, g @ truth), 2)  # the ridge solve: the least-norm fit
    array([ 0.95,  0.34,  0.33,  1.04, -0.31])
    """
    g = np.asarray(g, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    k = len(x)
    lo = np.broadcast_to(np.asarray(lower, np.float64), (k,))
    hi = np.broadcast_to(np.asarray(upper, np.float64), (k,))
    if k == 0:
        return np.zeros(0)
    rho = BOUNDED_RHO * mean_diagonal(g)
    g = ridge_matrix(g, ridge)  # strictly convex: one minimum, continuous in x
    factor = scipy.linalg.cho_factor(g + rho * np.eye(k), lower=True)
    z = np.clip(scipy.linalg.cho_solve(factor, x), lo, hi)
    u = np.zeros(k)
    width = max(float(np.max(hi - lo)), 1.0)
    steps = 0
    for tol in BOUNDED_TOLS:  # a loose tolerance, then (if the polish fails) a tight one
        while steps < BOUNDED_STEPS:
            steps += 1
            a = scipy.linalg.cho_solve(factor, x + rho * (z - u))
            relaxed = BOUNDED_RELAX * a + (1.0 - BOUNDED_RELAX) * z
            new = np.clip(relaxed + u, lo, hi)
            u += relaxed - new
            moved, apart = np.max(np.abs(new - z)), np.max(np.abs(a - new))
            z = new
            if moved < tol * width and apart < tol * width:
                break
        polished = _polish(g, x, z, lo, hi)
        if polished is not None:
            return polished
    return z


def _polish(g, x, z, lo, hi) -> np.ndarray | None:
    """:func:`bounded_solve`'s result from the iteration's ``z``: the inner amplitudes
    solved for exactly, the others at their bounds, if that meets the optimality
    conditions (else None)."""
    slack = 1e-6 * max(float(np.max(hi - lo)), 1.0)
    at_lo, at_hi = z <= lo, z >= hi  # the clip's: exactly at a bound
    inner = ~(at_lo | at_hi)
    a = z.copy()
    if inner.any():
        gi = g[np.ix_(inner, inner)]
        rhs = x[inner] - g[np.ix_(inner, ~inner)] @ a[~inner]
        try:
            a[inner] = scipy.linalg.solve(gi, rhs, assume_a="pos", check_finite=False)
        except (np.linalg.LinAlgError, ValueError):
            return None
    grad = g @ a - x
    scale = max(float(np.max(np.abs(x))), 1.0)
    ok = (
        np.all(a >= lo - slack)
        and np.all(a <= hi + slack)
        and np.all(grad[at_lo] >= -1e-6 * scale)
        and np.all(grad[at_hi] <= 1e-6 * scale)
    )
    return np.clip(a, lo, hi) if ok else None


#: :func:`solve` factors systems of at most this many candidates with a compiled Cholesky
#: (one call instead of a dozen numpy ones: most cells of a small grammar hold a few items).
SMALL_SOLVE = 48


@njit(cache=True, nogil=True)
def _small_solve(g, x, ridge, refine, low, a):  # pragma: no cover - compiled
    """:func:`ridge_solve` of one system into ``a`` (``low``: scratch for the factor); False
    when the factorisation fails (the caller then goes through the eigenvalues)."""
    k = x.shape[0]
    scale = 0.0
    for r in range(k):
        scale += g[r, r]
    scale /= k
    if not scale > 0:
        scale = 1.0
    added = ridge * scale
    for r in range(k):  # the lower factor of G + added I
        for c in range(r + 1):
            acc = g[r, c] + (added if r == c else 0.0)
            for m in range(c):
                acc -= low[r, m] * low[c, m]
            if r == c:
                if not acc > 0:
                    return False
                low[r, r] = np.sqrt(acc)
            else:
                low[r, c] = acc / low[c, c]
    y = x.copy()
    for step in range(refine + 1):
        if step:  # iterative refinement: the residual of G a = x
            for r in range(k):
                acc = x[r]
                for c in range(k):
                    acc -= g[r, c] * a[c]
                y[r] = acc
        for r in range(k):  # L z = y
            acc = y[r]
            for c in range(r):
                acc -= low[r, c] * y[c]
            y[r] = acc / low[r, r]
        for r in range(k - 1, -1, -1):  # L^T u = z
            acc = y[r]
            for c in range(r + 1, k):
                acc -= low[c, r] * y[c]
            y[r] = acc / low[r, r]
        for r in range(k):
            a[r] = y[r] if step == 0 else a[r] + y[r]
    return True

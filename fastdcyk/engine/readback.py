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
bounds that amplification where G_C is (nearly) singular, as it is once the candidates
outnumber the dimensions: the result is then defined, if not exact.

Written once for every backend (:mod:`fastdcyk.engine.arrays`): :func:`ridge_solve` solves a
batch of systems (the torch backend's sentences, padded to the largest candidate set, under
autograd), :func:`solve` one system in numpy (the numpy backend's clean-up and weighted
parsers, the capacity model).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from fastdcyk.engine.arrays import NUMPY, ArrayNamespace

__all__ = ["RIDGE", "SMALL_SOLVE", "candidates", "gram", "ridge_matrix", "ridge_solve", "solve"]

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


def ridge_matrix(g: np.ndarray, ridge: float = RIDGE) -> np.ndarray:
    """G + ridge mean(diag G) I, a new float64 array (the matrix :func:`solve` factors; 1
    stands for a mean diagonal that is not positive)."""
    g = np.asarray(g, dtype=np.float64)
    k = g.shape[0]
    scale = np.trace(g) / k if k else 1.0
    return NUMPY.add_to_diagonal(g[None], ridge * (scale if scale > 0 else 1.0))[0]


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
    xp : ArrayNamespace, default :data:`~fastdcyk.engine.arrays.NUMPY`

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

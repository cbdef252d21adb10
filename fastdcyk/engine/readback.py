"""The least-squares read-back of a cell (docs/method.md, section 7), in numpy.

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
outnumber the dimensions: the result is then defined, if not exact. The torch backend has
the same arithmetic in :mod:`fastdcyk.engine.torch_cleanup` (differentiable); this module
is the numpy engine's and the capacity model's.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

__all__ = ["RIDGE", "candidates", "gram", "ridge_matrix", "solve"]

#: The ridge lambda of :func:`solve`, relative to the mean diagonal of the Gram matrix: the
#: amplitudes of well-separated candidates move by about lambda / (smallest eigenvalue of
#: G_C), 0.004 for 250 random unitary vectors at d = 1024 (docs/method.md, section 7).
RIDGE = 1e-3


def candidates(t: np.ndarray, gates: np.ndarray, level: float, prune: float) -> np.ndarray:
    """Which detections make candidates: t_A above ``level`` and a gate above ``prune``
    (so that the candidates are exactly the updates the parse writes)."""
    return (t > level) & (gates > prune)


def gram(vectors: np.ndarray) -> np.ndarray:
    """The Gram matrix of the rows of ``vectors`` (k, d), in float64 (k x k)."""
    v = np.asarray(vectors, dtype=np.float64)
    return v @ v.T


def ridge_matrix(g: np.ndarray, ridge: float = RIDGE) -> np.ndarray:
    """G + ridge mean(diag G) I, a new float64 array (the matrix :func:`solve` factors)."""
    m = np.array(g, dtype=np.float64)
    m[np.diag_indices(g.shape[0])] += ridge * _scale(g)
    return m


def _scale(g: np.ndarray) -> float:
    """The mean diagonal of g (1 where it is not positive): what the ridge is relative to."""
    k = g.shape[0]
    scale = float(np.trace(g)) / k if k else 1.0
    return scale if scale > 0 else 1.0


def solve(g: np.ndarray, x: np.ndarray, ridge: float = RIDGE, refine: int = 0) -> np.ndarray:
    """The amplitudes a with (G + ridge mean(diag G) I) a = x, in float64.

    Never raises for a finite G: the regularised matrix is positive definite, and should
    rounding make its Cholesky factorisation fail, the solve goes through its eigenvalues,
    floored at the ridge.

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
    x : ndarray, (k,) or (k, m)
        The matched-filter readouts of the k candidates.
    ridge : float, default :data:`RIDGE`
    refine : int, default 0
        Steps of iterative refinement after the first solve.

    Returns
    -------
    ndarray of float64, the shape of ``x``

    Examples
    --------
    >>> v = np.array([[1.0, 0.0], [0.6, 0.8]])  # two unit vectors, overlap 0.6
    >>> x = v @ (2.0 * v[0] + 1.0 * v[1])  # the readouts of a cell holding both
    >>> np.round(solve(gram(v), x, ridge=0.0), 6)
    array([2., 1.])
    """
    x = np.asarray(x, dtype=np.float64)
    k = g.shape[0]
    if k == 0:
        return np.zeros_like(x)
    m = ridge_matrix(g, ridge)
    try:
        factor = scipy.linalg.cho_factor(m)

        def step(y: np.ndarray) -> np.ndarray:
            return scipy.linalg.cho_solve(factor, y)

    except np.linalg.LinAlgError:
        w, u = np.linalg.eigh(m)
        w = np.maximum(w, max(ridge, 1e-12) * _scale(g))

        def step(y: np.ndarray) -> np.ndarray:
            return u @ ((u.T @ y) / (w if y.ndim == 1 else w[:, None]))

    a = step(x)
    if refine:
        g = np.asarray(g, dtype=np.float64)
        for _ in range(refine):
            a += step(x - g @ a)
    return a

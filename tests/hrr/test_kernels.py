"""Every Numba kernel against its numpy twin, float32 and float64, odd and even sizes.

Each kernel has a serial and a parallel build (the public name dispatches on the array size);
both builds are checked, called directly, since test sizes are below the parallel threshold.

Gathers and circulant_times_diag move or multiply values once: they must match exactly.
Elementwise complex products and the sigmoid may differ by a rounding (an FMA, a different
exp): a few eps. The reductions sum d or d^2 terms in float64 in another order: their
difference is bounded by ~ n * eps64 * sum |terms|, plus one rounding of each product where
the kernel multiplies in the input's precision; we allow (2 eps + 4 n eps64) * sum |terms|.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

from fastdcyk.hrr import kernels

DTYPES = (np.float32, np.float64)
SIZES = (1, 2, 7, 64, 65)
CDTYPE = {np.float32: np.complex64, np.float64: np.complex128}

cases = pytest.mark.parametrize(
    "dtype, n", [(t, n) for t in DTYPES for n in SIZES], ids=lambda v: getattr(v, "__name__", v)
)
builds = pytest.mark.parametrize("build", ["serial", "parallel"])


def _k(name: str, build: str):
    return getattr(getattr(kernels, name), build)


def test_set_threads():
    with pytest.raises(ValueError):
        kernels.set_threads(-1)
    kernels.set_threads(1)
    try:
        x = np.arange(12.0).reshape(3, 4)
        np.testing.assert_array_equal(
            kernels.gather_rows(x, np.array([2, 0, 1]), np.empty_like(x)), x[[2, 0, 1]]
        )
    finally:
        kernels.set_threads(None)
    assert kernels.PARALLEL_MIN_SIZE >= 1


def _sum_bound(dtype, n):
    return 2 * np.finfo(dtype).eps + 4 * n * np.finfo(np.float64).eps


def _rng(n, dtype):
    return np.random.default_rng(1000 * n + np.dtype(dtype).itemsize)


@builds
@cases
def test_gather_rows_and_cols(dtype, n, build):
    rng = _rng(n, dtype)
    x = rng.standard_normal((n, n + 3)).astype(dtype)
    idx = rng.permutation(n)
    keep = x.copy()
    got = _k("gather_rows", build)(x, idx, np.empty_like(x))
    np.testing.assert_array_equal(got, kernels.gather_rows_numpy(x, idx, np.empty_like(x)))
    np.testing.assert_array_equal(got, x[idx])
    idx = rng.permutation(n + 3)
    got = _k("gather_cols", build)(x, idx, np.empty_like(x))
    np.testing.assert_array_equal(got, kernels.gather_cols_numpy(x, idx, np.empty_like(x)))
    np.testing.assert_array_equal(got, x[:, idx])
    # A gather may repeat indices (a projection), not only permute.
    idx = rng.integers(0, n + 3, size=n + 3)
    np.testing.assert_array_equal(_k("gather_cols", build)(x, idx, np.empty_like(x)), x[:, idx])
    np.testing.assert_array_equal(x, keep)


@builds
@cases
def test_spec_mul(dtype, n, build):
    rng = _rng(n, dtype)
    c = CDTYPE[dtype]
    eps = np.finfo(dtype).eps
    s = (rng.standard_normal((n, 5)) + 1j * rng.standard_normal((n, 5))).astype(c)
    spec = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(c)
    a, b = s.copy(), s.copy()
    out = _k("spec_mul_axis0", build)(a, spec)
    assert out is a and a.dtype == c
    kernels.spec_mul_axis0_numpy(b, spec)
    np.testing.assert_allclose(a, b, rtol=4 * eps, atol=4 * eps)
    np.testing.assert_allclose(a, s * spec[:, None], rtol=4 * eps, atol=4 * eps)
    s = s.T.copy()
    a, b = s.copy(), s.copy()
    assert _k("spec_mul_axis1", build)(a, spec) is a
    kernels.spec_mul_axis1_numpy(b, spec)
    np.testing.assert_allclose(a, b, rtol=4 * eps, atol=4 * eps)
    np.testing.assert_allclose(a, s * spec[None, :], rtol=4 * eps, atol=4 * eps)


@cases
def test_sigmoid(dtype, n):
    rng = _rng(n, dtype)
    eps = np.finfo(dtype).eps
    # Wide enough that exp overflows at one end and underflows at the other.
    x = (rng.standard_normal((n, n + 1)) * 3).astype(dtype)
    x.flat[0] = 1e4
    x.flat[-1] = -1e4
    beta, center = 50.0, 0.5
    a = x.copy()
    assert kernels.sigmoid_numpy(a, beta, center) is a
    assert a.dtype == dtype
    with np.errstate(over="ignore"):
        ref = 1 / (1 + np.exp(-(x.astype(np.float64) - center) * beta))
    np.testing.assert_allclose(a, ref, rtol=64 * eps, atol=64 * eps)
    assert np.all((a >= 0) & (a <= 1))
    assert a.flat[0] == 1 and a.flat[-1] == 0


@builds
@cases
def test_diag_of_product(dtype, n, build):
    rng = _rng(n, dtype)
    for m in (n, 3):
        y = rng.standard_normal((n, m)).astype(dtype)
        z = rng.standard_normal((m, n)).astype(dtype)
        a = _k("diag_of_product", build)(y, z, np.empty(n))
        b = kernels.diag_of_product_numpy(y, z, np.empty(n))
        bound = _sum_bound(dtype, m) * (np.abs(y) * np.abs(z.T)).sum(axis=1)
        assert np.all(np.abs(a - b) <= bound)
        ref = np.diag(y.astype(np.float64) @ z.astype(np.float64))
        assert np.all(np.abs(a - ref) <= bound)
    # Over 2 * _BLOCK rows, so that several blocks are summed in parallel.
    n2 = 2 * kernels._BLOCK + 5
    y = rng.standard_normal((n2, 4)).astype(dtype)
    z = rng.standard_normal((4, n2)).astype(dtype)
    a = _k("diag_of_product", build)(y, z, np.empty(n2))
    b = kernels.diag_of_product_numpy(y, z, np.empty(n2))
    assert np.all(np.abs(a - b) <= _sum_bound(dtype, 4) * (np.abs(y) * np.abs(z.T)).sum(axis=1))


@builds
@cases
def test_circulant_times_diag(dtype, n, build):
    rng = _rng(n, dtype)
    v = rng.standard_normal(n).astype(dtype)
    p = rng.standard_normal(n).astype(dtype)
    kern = _k("circulant_times_diag", build)
    ident = np.arange(n)
    a = kern(v, p, ident, ident, np.empty((n, n), dtype))
    np.testing.assert_array_equal(a, (scipy.linalg.circulant(v) * p[None, :]).astype(dtype))
    rowidx, shift = rng.permutation(n), rng.permutation(n)
    a = kern(v, p, rowidx, shift, np.empty((n, n), dtype))
    b = kernels.circulant_times_diag_numpy(v, p, rowidx, shift, np.empty((n, n), dtype))
    np.testing.assert_array_equal(a, b)
    ref = scipy.linalg.circulant(v)[rowidx][:, shift] * p[None, :]
    np.testing.assert_array_equal(a, ref.astype(dtype))


@builds
@cases
def test_wrapped_diag_sums(dtype, n, build):
    rng = _rng(n, dtype)
    x = rng.standard_normal((n, n)).astype(dtype)
    rowidx, colidx = rng.permutation(n), rng.permutation(n)
    a = _k("wrapped_diag_sums", build)(x, rowidx, colidx, np.empty(n))
    b = kernels.wrapped_diag_sums_numpy(x, rowidx, colidx, np.empty(n))
    bound = 4 * n * np.finfo(np.float64).eps * np.abs(x).sum()
    assert np.all(np.abs(a - b) <= bound)
    # The identity they exist for: tr(C(v) Z) = sum_m v[m] * sums[m].
    v = rng.standard_normal(n)
    zmat = x.astype(np.float64)[rowidx][:, colidx]
    ref = np.trace(scipy.linalg.circulant(v) @ zmat)
    bound = 4 * n * np.finfo(np.float64).eps * np.abs(v).max() * np.abs(x).sum()
    assert abs(float(v @ a) - ref) <= bound


@builds
@cases
def test_spec_mul_into_and_madd_axis1(dtype, n, build):
    rng = _rng(n, dtype)
    c = CDTYPE[dtype]
    eps = np.finfo(dtype).eps
    s = (rng.standard_normal((5, n)) + 1j * rng.standard_normal((5, n))).astype(c)
    spec = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(c)
    s0 = s.copy()
    a = _k("spec_mul_into_axis1", build)(s, spec, np.empty_like(s))
    b = kernels.spec_mul_into_axis1_numpy(s, spec, np.empty_like(s))
    np.testing.assert_array_equal(s, s0)  # the input is only read
    np.testing.assert_allclose(a, b, rtol=4 * eps, atol=4 * eps)
    np.testing.assert_allclose(a, s * spec[None, :], rtol=4 * eps, atol=4 * eps)
    acc0 = (rng.standard_normal((5, n)) + 1j * rng.standard_normal((5, n))).astype(c)
    acc_a, acc_b = acc0.copy(), acc0.copy()
    assert _k("spec_madd_axis1", build)(acc_a, s, spec) is acc_a
    kernels.spec_madd_axis1_numpy(acc_b, s, spec)
    np.testing.assert_allclose(acc_a, acc_b, rtol=8 * eps, atol=8 * eps)
    np.testing.assert_allclose(acc_a, acc0 + s * spec[None, :], rtol=8 * eps, atol=8 * eps)


@builds
@cases
def test_spectral_diag(dtype, n, build):
    rng = _rng(n, dtype)
    c = CDTYPE[dtype]
    h = n // 2 + 1
    for m in (h, 3):
        yhat = (rng.standard_normal((n, m)) + 1j * rng.standard_normal((n, m))).astype(c)
        ghat = (rng.standard_normal((m, n)) + 1j * rng.standard_normal((m, n))).astype(c)
        coef = (rng.standard_normal(m) + 1j * rng.standard_normal(m)).astype(c)
        a = _k("spectral_diag", build)(yhat, coef, ghat, np.empty(n))
        b = kernels.spectral_diag_numpy(yhat, coef, ghat, np.empty(n))
        terms = np.abs(yhat) * np.abs(coef)[None, :] * np.abs(ghat.T)
        bound = 2 * _sum_bound(dtype, m) * terms.sum(axis=1)
        assert np.all(np.abs(a - b) <= bound)
        ref = np.einsum("rf,f,fr->r", yhat.astype(np.complex128), coef, np.conj(ghat)).real
        assert np.all(np.abs(a - ref) <= bound)


@builds
@cases
def test_diag_times_circulant(dtype, n, build):
    rng = _rng(n, dtype)
    v = rng.standard_normal(n).astype(dtype)
    p = rng.standard_normal(n).astype(dtype)
    kern = _k("diag_times_circulant", build)
    ident = np.arange(n)
    a = kern(v, p, ident, ident, np.empty((n, n), dtype))
    np.testing.assert_array_equal(a, (p[:, None] * scipy.linalg.circulant(v)).astype(dtype))
    rowidx, shift = rng.permutation(n), rng.permutation(n)
    a = kern(v, p, rowidx, shift, np.empty((n, n), dtype))
    b = kernels.diag_times_circulant_numpy(v, p, rowidx, shift, np.empty((n, n), dtype))
    np.testing.assert_array_equal(a, b)
    ref = p[:, None] * scipy.linalg.circulant(v)[rowidx][:, shift]
    np.testing.assert_array_equal(a, ref.astype(dtype))


@builds
@cases
def test_rows_circulant(dtype, n, build):
    rng = _rng(n, dtype)
    k = 3
    vs = rng.standard_normal((k, n)).astype(dtype)
    ps = rng.standard_normal((k, n)).astype(dtype)
    b = (ps.T @ vs).astype(dtype)  # row r: sum_A p_A[r] v_A
    kern = _k("rows_circulant", build)
    rowidx, shift = rng.permutation(n), rng.permutation(n)
    a = kern(b, rowidx, shift, np.empty((n, n), dtype))
    np.testing.assert_array_equal(
        a, kernels.rows_circulant_numpy(b, rowidx, shift, np.empty((n, n)))
    )
    # the sum of the diagonal gates against their circulants, one by one
    ref = sum(
        ps[m][:, None] * scipy.linalg.circulant(vs[m].astype(np.float64))[rowidx][:, shift]
        for m in range(k)
    )
    tol = 8 * np.finfo(dtype).eps * (np.abs(ps).T @ np.abs(vs)).max()
    assert np.abs(a - ref).max() <= tol
    # a block of rows: rows r0..r1 of the whole
    r0, r1 = n // 3, n // 3 + max(1, n // 2)
    part = kern(b[r0:r1], rowidx[r0:r1], shift, np.empty((r1 - r0, n), dtype))
    np.testing.assert_array_equal(part, a[r0:r1])


def test_set_threads_0_or_none_gives_numba_every_thread_back():
    import numba

    top = numba.config.NUMBA_NUM_THREADS
    if top < 2:
        pytest.skip("Numba has a single thread here")
    try:
        for back in (0, None):
            if top > 2:
                kernels.set_threads(2)
                assert numba.get_num_threads() == 2
            numba.set_num_threads(1)  # what an earlier caller may have left behind
            kernels.set_threads(back)
            assert kernels.get_threads() == 0
            assert numba.get_num_threads() == top
        kernels.set_threads(top + 5)  # more than Numba has: all of them
        assert numba.get_num_threads() == top and kernels.get_threads() == top + 5
    finally:
        kernels.set_threads(None)


def _complex(rng, shape, dtype):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(CDTYPE[dtype])


@builds
@cases
def test_row_dots(dtype, n, build):
    """Products in the inputs' precision summed by blocks of ROW_BLOCK (the blocks' sums in
    complex128): within the error of a sum of ROW_BLOCK terms in that precision, plus the
    float64 sum of the blocks. Sizes around and over a block (50, 64, 100, 130) too."""
    rng = _rng(n, dtype)
    eps = np.finfo(dtype).eps
    for m in (n, 50, 100, 130):
        a, b = _complex(rng, (n, m), dtype), _complex(rng, (n, m), dtype)
        u = _complex(rng, m, dtype)
        got = _k("row_dots", build)(a, b, u, np.empty(n, np.complex128))
        twin = kernels.row_dots_numpy(a, b, u, np.empty(n, np.complex128))
        ref = np.einsum("fg,fg,g->f", *(x.astype(np.complex128) for x in (a, b, u)))
        size = (np.abs(a) * np.abs(b) * np.abs(u)).sum(axis=1)
        bound = ((2 * kernels.ROW_BLOCK + 8) * eps + 4 * m * np.finfo(np.float64).eps) * size
        assert np.all(np.abs(got - ref) <= bound)
        assert np.all(np.abs(twin - ref) <= bound)
    # complex128 inputs: float64 rounding only
    a, b, u = (x.astype(np.complex128) for x in (a, b, u))
    got = _k("row_dots", build)(a, b, u, np.empty(n, np.complex128))
    ref = np.einsum("fg,fg,g->f", a, b, u)
    assert np.all(np.abs(got - ref) <= 16 * 130 * np.finfo(np.float64).eps * size)


@builds
@cases
def test_outer_madd(dtype, n, build):
    rng = _rng(n, dtype)
    eps = np.finfo(dtype).eps
    for conj in (True, False):
        for m in (n, 50):
            acc = _complex(rng, (n, m), dtype)
            left, mat, right = (
                _complex(rng, n, dtype),
                _complex(rng, (n, m), dtype),
                _complex(rng, m, dtype),
            )
            got = _k("outer_madd", build)(acc.copy(), left, mat, right, conj)
            twin = kernels.outer_madd_numpy(acc.copy(), left, mat, right, conj)
            assert got.dtype == acc.dtype
            term = left[:, None] * (np.conj(mat) if conj else mat) * right[None, :]
            bound = 8 * eps * (np.abs(acc) + np.abs(left)[:, None] * np.abs(mat) * np.abs(right))
            assert np.all(np.abs(got - (acc + term.astype(np.complex128))) <= bound)
            assert np.all(np.abs(twin - got) <= 2 * bound)

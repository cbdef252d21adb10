"""Operators against their dense matrices, the algebra's simplification and its statistics.

Dense references are built in float64 from the codebook's own vectors: a circulant with
``scipy.linalg.circulant`` (first column = the symbol's vector) and Phi = ``np.eye(d)[perm]``
(so that ``(Phi x)[k] = x[perm[k]]``).

Tolerances come from the dtype: an FFT round trip has a relative error of order
eps * log2(d) (Higham, "Accuracy and Stability of Numerical Algorithms", section 24.1), so an
operator with m circulants applied to x is compared with
``|got - ref|_max <= 50 * eps * max(1, log2 d) * max(1, m) * max(1, |ref|_max, |x|_max)``.
The factor 50 covers the spectra being rounded to the dtype and the float32 inputs; a wrong
conjugation, permutation direction or scale gives errors of order 1 instead.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings
from hypothesis import strategies as st

from fastdcyk.hrr.codebook import Codebook
from fastdcyk.hrr.fft import available_ffts
from fastdcyk.hrr.operators import Operator

DIMS = (2, 7, 64, 100, 257)
DTYPES = (np.float32, np.float64)


def rtol(dtype, d: int, m: int = 1) -> float:
    return 50 * np.finfo(dtype).eps * max(1.0, np.log2(d)) * max(1, m)


def assert_close(got, ref, dtype, d, m=1, x=None):
    got = np.asarray(got, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    assert got.shape == ref.shape
    scale = max(1.0, float(np.abs(ref).max(initial=0)))
    if x is not None:
        scale = max(scale, float(np.abs(x).max(initial=0)))
    err = float(np.abs(got - ref).max(initial=0))
    assert err <= rtol(dtype, d, m) * scale, (
        f"max error {err:.3g} > {rtol(dtype, d, m) * scale:.3g}"
    )


class Dense:
    """Float64 dense matrices of a codebook's symbols and permutation."""

    def __init__(self, cb: Codebook) -> None:
        self.cb = cb
        self.P = np.eye(cb.d)[cb.perm]

    def C(self, kind, sym):  # noqa: N802 - the maths' name
        return scipy.linalg.circulant(self.cb.vector(kind, sym).astype(np.float64))

    def plus(self, kind, sym):
        return self.C(kind, sym) @ self.P

    def minus(self, kind, sym):
        return self.plus(kind, sym).T

    def phi(self, k):
        return np.linalg.matrix_power(self.P if k >= 0 else self.P.T, abs(k))


_CODEBOOKS: dict[tuple, Codebook] = {}


def codebook(d, dtype, seed=0, **kw) -> Codebook:
    key = (d, np.dtype(dtype).str, seed, tuple(sorted(kw.items())))
    if key not in _CODEBOOKS:
        _CODEBOOKS[key] = Codebook(d, seed=seed, dtype=dtype, **kw)
    return _CODEBOOKS[key]


@pytest.fixture(params=[(d, t) for d in DIMS for t in DTYPES], ids=lambda p: f"d{p[0]}-{p[1]}")
def cbd(request):
    d, dtype = request.param
    cb = codebook(d, dtype, seed=d)
    return cb, Dense(cb), np.random.default_rng(d)


def rand(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


# -- dense equivalence, for every d and dtype -------------------------------------------------


def test_d1_is_invalid():
    with pytest.raises(ValueError):
        Codebook(1)


def test_plus_minus_dense(cbd):
    cb, D, _ = cbd
    d, t = cb.d, cb.dtype
    for kind, sym in (("terminal", "a"), ("nonterminal", "S"), ("index", 3)):
        p = cb.plus(kind, sym)
        m = cb.minus(kind, sym)
        assert p.skeleton() == "C Phi" and m.skeleton() == "Phi^-1 C"
        assert p.shape == (d, d) and p.dtype == t
        assert_close(p.to_dense(), D.plus(kind, sym), t, d)
        assert_close(m.to_dense(), D.minus(kind, sym), t, d)
        assert p.to_dense().dtype == t
    assert_close(cb.phi(1).to_dense(), D.P, t, d)
    assert_close(cb.phi(-1).to_dense(), D.P.T, t, d)
    assert_close(cb.identity().to_dense(), np.eye(d), t, d)
    v = np.random.default_rng(1).standard_normal(d)
    assert_close(cb.circulant(v).to_dense(), scipy.linalg.circulant(v), t, d)
    assert_close(cb.circulant(spectrum=np.fft.rfft(v)).to_dense(), scipy.linalg.circulant(v), t, d)


def test_composition_transpose_and_scalars(cbd):
    cb, D, _ = cbd
    d, t = cb.d, cb.dtype
    a, b, c = cb.plus("terminal", "a"), cb.plus("terminal", "b"), cb.minus("index", 2)
    Da, Db, Dc = D.plus("terminal", "a"), D.plus("terminal", "b"), D.minus("index", 2)
    chain = a @ b @ c @ cb.phi(2)
    ref = Da @ Db @ Dc @ D.phi(2)
    # b @ c = C Phi Phi^-1 C: Phi cancels and the two circulants merge.
    assert chain.skeleton() == "C Phi C Phi^2" and chain.n_circulants == 2
    assert chain.T.skeleton() == "Phi^-2 C Phi^-1 C"
    assert_close(chain.to_dense(), ref, t, d, 3)
    assert_close(chain.T.to_dense(), ref.T, t, d, 3)
    assert_close(chain.T.T.to_dense(), ref, t, d, 3)
    assert_close((2.5 * chain).to_dense(), 2.5 * ref, t, d, 3)
    assert_close((chain * -3).to_dense(), -3 * ref, t, d, 3)
    assert_close((chain / 4).to_dense(), ref / 4, t, d, 3)
    assert_close((-chain).to_dense(), -ref, t, d, 3)
    assert_close((np.float32(2) * cb.phi(1)).to_dense(), 2 * D.P, t, d)
    assert_close(((2 * a) @ (3 * c)).to_dense(), 6 * Da @ Dc, t, d, 2)
    assert (2 * a).T.scale == 2.0


def test_transpose_skeletons():
    cb = codebook(8, np.float64)
    op = cb.plus("terminal", "a") @ cb.phi(2) @ cb.plus("terminal", "b")
    assert op.skeleton() == "C Phi^3 C Phi"
    assert op.T.skeleton() == "Phi^-1 C Phi^-3 C"
    assert repr(2 * op) == "Operator(d=8, float64: 2 * C Phi^3 C Phi)"


def test_sums_are_single_factors(cbd):
    cb, D, _ = cbd
    d, t = cb.d, cb.dtype
    # R_u = sum_a [a]+ : one circulant and Phi.
    ru = sum(cb.plus("terminal", a) for a in ("a", "b", "c"))
    assert ru.skeleton() == "C Phi" and ru.n_circulants == 1
    ref = sum(D.plus("terminal", a) for a in ("a", "b", "c"))
    assert_close(ru.to_dense(), ref, t, d)
    # R_b = sum [B]+ [C]- : Phi cancels, one circulant.
    rules = (("B", "C"), ("C", "B"), ("S", "S"))
    rb = sum(cb.plus("nonterminal", x) @ cb.minus("nonterminal", y) for x, y in rules)
    assert rb.skeleton() == "C" and rb.n_circulants == 1
    ref = sum(D.plus("nonterminal", x) @ D.minus("nonterminal", y) for x, y in rules)
    assert_close(rb.to_dense(), ref, t, d, 2)
    # Scaled sums and differences.
    a, b = cb.plus("terminal", "a"), cb.plus("terminal", "b")
    s = 2 * a - 0.5 * b
    assert s.skeleton() == "C Phi"
    ref = 2 * D.plus("terminal", "a") - 0.5 * D.plus("terminal", "b")
    assert_close(s.to_dense(), ref, t, d)
    assert_close((a - a).to_dense(), np.zeros((d, d)), t, d)
    # Permutations and the identity fit around a circulant.
    assert_close((cb.phi(1) + a).to_dense(), D.P + D.plus("terminal", "a"), t, d)
    assert_close((a + cb.phi(1)).to_dense(), D.P + D.plus("terminal", "a"), t, d)
    pp = cb.phi(2) + cb.phi(2) * 3
    assert pp.skeleton() == "Phi^2" and pp.scale == 4
    assert_close(pp.to_dense(), 4 * D.phi(2), t, d)
    ci = cb.identity() + cb.circulant(np.arange(d, dtype=float))
    assert ci.skeleton() == "C"
    ref = np.eye(d) + scipy.linalg.circulant(np.arange(d, dtype=float))
    assert_close(ci.to_dense(), ref, t, d)
    # Phi^-1 C Phi + Phi^-1 C Phi keeps its permutations.
    w = cb.minus("index", 1) @ cb.plus("index", 1)
    assert (w + w).skeleton() == "Phi^-1 C Phi"
    ref = 2 * D.minus("index", 1) @ D.plus("index", 1)
    assert_close((w + w).to_dense(), ref, t, d, 2)


def test_invalid_sums_raise():
    cb = codebook(8, np.float32)
    a, b = cb.plus("terminal", "a"), cb.plus("terminal", "b")
    with pytest.raises(ValueError, match="permutations"):
        a + cb.minus("terminal", "a")  # C Phi + Phi^-1 C
    with pytest.raises(ValueError, match="circulants"):
        a @ b + a  # two circulants
    with pytest.raises(ValueError, match="circulants"):
        a + a @ b
    with pytest.raises(ValueError):
        a + cb.identity()  # C Phi + I
    with pytest.raises(ValueError):
        cb.phi(1) + cb.phi(2)
    with pytest.raises(ValueError, match="codebooks"):
        a + Codebook(8, seed=0).plus("terminal", "a")
    with pytest.raises(ValueError, match="codebooks"):
        a @ Codebook(8, seed=0).plus("terminal", "a")
    with pytest.raises(TypeError):
        a + 1
    with pytest.raises(TypeError):
        a - 0


def test_apply_shapes_left_and_right(cbd):
    cb, D, rng = cbd
    d, t = cb.d, cb.dtype
    op = cb.plus("terminal", "a") @ cb.minus("index", 1) @ cb.plus("nonterminal", "S")
    M = D.plus("terminal", "a") @ D.minus("index", 1) @ D.plus("nonterminal", "S")
    k = 3
    for shape in ((d, d), (d, k), (d,)):
        x = rand(rng, shape, t)
        y = op @ x
        assert y.shape == shape and y.dtype == t
        assert_close(y, M @ x.astype(np.float64), t, d, 3, x)
    for shape in ((d, d), (k, d), (d,)):
        x = rand(rng, shape, t)
        y = x @ op
        assert y.shape == shape and y.dtype == t
        assert_close(y, x.astype(np.float64) @ M, t, d, 3, x)
        assert_close(op.apply(x, side="right"), y, t, d, 3, x)


@pytest.mark.parametrize("d", [7, 64])
def test_noncontiguous_inputs(d):
    # One dtype only: each memory layout costs the Numba kernels a compilation.
    t = np.float64
    cb = codebook(d, t, seed=d)
    D = Dense(cb)
    op = cb.plus("terminal", "a") @ cb.minus("index", 1) @ cb.plus("nonterminal", "S")
    M = D.plus("terminal", "a") @ D.minus("index", 1) @ D.plus("nonterminal", "S")
    x = rand(np.random.default_rng(d), (d, 2 * d), t)
    for view in (x[:, ::2], np.asfortranarray(x[:, :d]), x[:, :d].T, x[:, 1]):
        assert_close(op @ view, M @ view, t, d, 3, view)
        assert_close(view @ op, view @ M, t, d, 3, view)


def test_apply_out(cbd):
    cb, D, rng = cbd
    d, t = cb.d, cb.dtype
    op = cb.plus("terminal", "a") @ cb.plus("terminal", "b")
    M = D.plus("terminal", "a") @ D.plus("terminal", "b")
    x = rand(rng, (d, 5), t)
    out = np.full((d, 5), np.nan, t)
    r = op.apply(x, out=out)
    assert r is out
    assert_close(out, M @ x.astype(np.float64), t, d, 2, x)
    xr = rand(rng, (5, d), t)
    out = np.full((5, d), np.nan, t)
    assert op.apply(xr, side="right", out=out) is out
    assert_close(out, xr.astype(np.float64) @ M, t, d, 2, xr)
    v = rand(rng, (d,), t)
    out = np.full(d, np.nan, t)
    op.apply(v, out=out)
    assert_close(out, M @ v.astype(np.float64), t, d, 2, v)
    # A pure permutation and the identity also write into out.
    for o, m in ((cb.phi(-2), D.phi(-2)), (3 * cb.identity(), 3 * np.eye(d))):
        out = np.full((d, 5), np.nan, t)
        assert o.apply(x, out=out) is out
        assert_close(out, m @ x.astype(np.float64), t, d, 1, x)


@pytest.mark.parametrize("library", available_ffts())
def test_apply_out_noncontiguous(library):
    """``out`` may be any array of the right shape and dtype, e.g. Fortran-ordered or strided.

    With fft="pyfftw" the inverse FFT writes straight into ``out`` through a plan made for
    C-contiguous arrays, and pyFFTW's ``update_arrays`` rejects the strides (ValueError).
    """
    d = 16
    cb = Codebook(d, seed=0, dtype="float64", fft=library)
    D = Dense(cb)
    x = rand(np.random.default_rng(0), (d, d), np.float64)
    op = cb.plus("terminal", "a")
    for out in (np.empty((d, d), order="F"), np.empty((d, 2 * d))[:, ::2]):
        op.apply(x, out=out)
        assert_close(out, D.plus("terminal", "a") @ x, np.float64, d, 1, x)


def test_entry00_row(cbd):
    cb, D, rng = cbd
    d, t = cb.d, cb.dtype
    ops = {
        "plus": (cb.plus("nonterminal", "A"), D.plus("nonterminal", "A")),
        "chain": (
            cb.plus("nonterminal", "A") @ cb.plus("index", 2) @ cb.plus("index", 1),
            D.plus("nonterminal", "A") @ D.plus("index", 2) @ D.plus("index", 1),
        ),
        "phi": (cb.phi(3), D.phi(3)),
    }
    x = rand(rng, (d, d), t)
    for name, (op, M) in ops.items():
        m = max(1, op.n_circulants)
        assert_close(op.row(0), M[0], t, d, m)
        assert_close(op.row(d - 1), M[d - 1], t, d, m)
        e = op.entry00(x)
        assert isinstance(e, float), name
        assert_close(e, (M @ x.astype(np.float64))[0, 0], t, d, m, x)
        assert_close(op.entry00(x[:, 0].copy()), (M @ x.astype(np.float64))[0, 0], t, d, m, x)


def test_trace(cbd):
    cb, D, rng = cbd
    d, t = cb.d, cb.dtype
    a, i, j = ("nonterminal", "A"), ("index", 1), ("index", 2)
    cases = [
        (cb.plus(*a), D.plus(*a)),
        (cb.minus(*a), D.minus(*a)),
        (cb.circulant(np.arange(d, dtype=float)), scipy.linalg.circulant(np.arange(d))),
        (cb.phi(2) @ cb.plus(*i) @ cb.phi(-1), D.phi(2) @ D.plus(*i) @ D.phi(-1)),
        (cb.plus(*a) @ cb.plus(*j) @ cb.plus(*i), D.plus(*a) @ D.plus(*j) @ D.plus(*i)),
        (cb.minus(*j) @ cb.plus(*i), D.minus(*j) @ D.plus(*i)),
        (cb.phi(-1) @ cb.minus(*j) @ cb.minus(*a), D.phi(-1) @ D.minus(*j) @ D.minus(*a)),
        (-2 * cb.plus(*a) @ cb.minus(*i), -2 * D.plus(*a) @ D.minus(*i)),
        (cb.identity(), np.eye(d)),
        (0.5 * cb.identity(), 0.5 * np.eye(d)),
    ]
    cases += [(cb.phi(k), D.phi(k)) for k in (-2, -1, 1, 2, 3)]
    x = rand(rng, (d, d), t)
    x64 = x.astype(np.float64)
    for op, M in cases:
        got = op.trace(x)
        assert isinstance(got, float)
        # A trace sums d entries: allow d times the entry tolerance scale via sqrt(d) * |x|.
        assert_close(got, np.trace(M @ x64), t, d, max(1, op.n_circulants) * int(np.sqrt(d)), x)
    with pytest.raises(ValueError):
        cb.plus(*a).trace(x[:, :1].copy())
    with pytest.raises(ValueError):
        cb.plus(*a).trace(x[0].copy())


def test_diag_of_product(cbd):
    cb, D, rng = cbd
    d, t = cb.d, cb.dtype
    op = cb.plus("index", 0) @ cb.minus("nonterminal", "B")
    M = D.plus("index", 0) @ D.minus("nonterminal", "B")
    for k in (d, 3):
        x = rand(rng, (d, k), t)
        y = rand(rng, (k, d), t)
        got = op.diag_of_product(x, y)
        assert got.shape == (d,)
        ref = np.diag(M @ x.astype(np.float64) @ y.astype(np.float64))
        assert_close(got, ref, t, d, 2 * int(np.sqrt(k)), x)


def test_diag_of_product_rejects_a_wrong_second_operand():
    """``y`` must be (k, d) and of the codebook's dtype, as ``x`` must be (d, k).

    The Numba kernel reads ``y[k, r]`` for r < d without bounds checks, so a ``y`` with fewer
    than d columns (or fewer than k rows) is read past its end: a silently wrong result (or a
    crash). The views below sit inside larger arrays so that the over-read stays in memory.
    """
    d = 8
    cb = codebook(d, np.float32)
    op = cb.plus("terminal", "a")
    x = np.ones((d, d), np.float32)
    big = np.ones((d + 1, d + 1), np.float32)
    with pytest.raises(ValueError):
        op.diag_of_product(x, big[:d, : d - 1])
    with pytest.raises(ValueError):
        op.diag_of_product(x, big[: d - 1, :d])
    with pytest.raises(TypeError):
        op.diag_of_product(x, np.ones((d, d), np.float64))


# -- errors and input safety -------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_dtype_errors(dtype):
    d = 8
    cb = codebook(d, dtype)
    other = np.float64 if dtype == np.float32 else np.float32
    op = cb.plus("terminal", "a")
    for bad in (np.ones((d, d), other), np.ones(d, other), np.ones((d, d), np.int64)):
        with pytest.raises(TypeError, match="dtype"):
            op @ bad
        with pytest.raises(TypeError, match="dtype"):
            bad @ op
        with pytest.raises(TypeError):
            op.entry00(bad)
        with pytest.raises(TypeError):
            op.trace(bad)
    for o in (cb.identity(), cb.phi(1)):
        with pytest.raises(TypeError):
            o @ np.ones((d, d), other)
    with pytest.raises(ValueError):
        op.apply(np.ones((d, d), dtype), out=np.empty((d, d), other))


def test_shape_errors():
    d = 8
    cb = codebook(d, np.float32)
    op = cb.plus("terminal", "a") @ cb.phi(1)
    for bad in (
        np.ones((d + 1, d), np.float32),
        np.ones(d - 1, np.float32),
        np.ones((d, d, 1), np.float32),
        np.ones((), np.float32),
    ):
        with pytest.raises(ValueError, match="shape"):
            op @ bad
    with pytest.raises(ValueError, match="shape"):
        np.ones((d, d + 1), np.float32) @ op
    with pytest.raises(ValueError, match="shape"):
        op.apply(np.ones((d, 3), np.float32), side="right")
    with pytest.raises(ValueError):
        op.apply(np.ones((d, 3), np.float32), out=np.empty((d, 4), np.float32))
    with pytest.raises(ValueError, match="side"):
        op.apply(np.ones((d, d), np.float32), side="middle")
    with pytest.raises(ValueError):
        cb.circulant(np.ones(d + 1))
    with pytest.raises(ValueError):
        cb.circulant(spectrum=np.ones(d))
    with pytest.raises(ValueError):
        cb.circulant()


def test_out_overlapping_the_input_raises():
    d = 8
    cb = codebook(d, np.float32)
    x = np.ones((d, 2 * d), np.float32)
    for op in (cb.plus("terminal", "a"), cb.phi(1), cb.identity()):
        with pytest.raises(ValueError, match="overlap"):
            op.apply(x[:, :d], out=x[:, :d])
        with pytest.raises(ValueError, match="overlap"):
            op.apply(x[:, :d], out=x[:, 1 : d + 1])
        with pytest.raises(ValueError, match="overlap"):
            op.apply(x[0, :d], out=x[0, :d])
    np.testing.assert_array_equal(x, 1.0)


@pytest.mark.parametrize("library", available_ffts())
@pytest.mark.parametrize("dtype", DTYPES)
def test_inputs_are_never_modified(library, dtype):
    d = 15  # small and odd: FFTW_MEASURE plans some sizes for seconds
    cb = Codebook(d, seed=4, dtype=dtype, fft=library)
    rng = np.random.default_rng(4)
    ops = [
        cb.plus("terminal", "a"),
        cb.minus("index", 1),
        cb.plus("nonterminal", "A") @ cb.plus("index", 2) @ cb.minus("index", 1),
        cb.circulant(np.arange(d, dtype=float)),
        cb.phi(2),
        cb.identity(),
    ]
    for op in ops:
        for shape, side in (((d, d), "left"), ((d, 4), "left"), ((4, d), "right"), ((d,), "left")):
            x = rand(rng, shape, dtype)
            keep = x.copy()
            op.apply(x, side=side)
            op.apply(x, side=side, out=np.empty_like(x))
            np.testing.assert_array_equal(x, keep)
        x = rand(rng, (d, d), dtype)
        y = rand(rng, (d, d), dtype)
        kx, ky = x.copy(), y.copy()
        op.entry00(x)
        op.trace(x)
        op.diag_of_product(x, y)
        np.testing.assert_array_equal(x, kx)
        np.testing.assert_array_equal(y, ky)
    if dtype != np.float64:
        return
    # Read-only inputs (the codebook's own vectors) can be applied to (one dtype only: a
    # read-only array is another Numba signature).
    v = cb.vector("terminal", "z")
    assert np.all(np.isfinite(cb.plus("terminal", "a") @ v))
    ro = rand(rng, (d, d), dtype)
    ro.setflags(write=False)
    assert np.all(np.isfinite(cb.plus("terminal", "a") @ ro))
    assert np.all(np.isfinite(ro @ cb.plus("terminal", "a")))


@pytest.mark.parametrize("dtype", DTYPES)
def test_fft_library_parity_on_operators(dtype):
    d = 48
    rng = np.random.default_rng(9)
    x = rand(rng, (d, d), dtype)
    results = {}
    for library in available_ffts():
        cb = Codebook(d, seed=9, dtype=dtype, fft=library)
        assert cb.fft.name == library
        op = cb.plus("nonterminal", "A") @ cb.minus("index", 3) @ cb.plus("terminal", "w")
        results[library] = (op @ x, x @ op, op.trace(x), op.entry00(x))
    ref = results["scipy"]
    for library, got in results.items():
        for g, r in zip(got, ref, strict=True):
            assert_close(g, r, dtype, d, 3, x)
        assert library in ("scipy", "numpy", "pyfftw")


# -- algebra (Hypothesis) -------------------------------------------------------------------------

ALG_DIMS = (5, 8, 13)
SYMS = ("a", "b", "c")


@st.composite
def chains(draw, d, max_len=6):
    """A list of atomic factors: ("plus"|"minus", sym), ("phi", k) or ("circ", seed)."""
    atom = st.one_of(
        st.tuples(st.sampled_from(["plus", "minus"]), st.sampled_from(SYMS)),
        st.tuples(st.just("phi"), st.integers(-2, 2)),
        st.tuples(st.just("circ"), st.integers(0, 3)),
    )
    return draw(st.lists(atom, min_size=0, max_size=max_len))


def _atom(cb: Codebook, D: Dense, a) -> tuple[Operator, np.ndarray]:
    kind, arg = a
    if kind == "plus":
        return cb.plus("terminal", arg), D.plus("terminal", arg)
    if kind == "minus":
        return cb.minus("terminal", arg), D.minus("terminal", arg)
    if kind == "phi":
        return cb.phi(arg), D.phi(arg)
    v = np.random.default_rng(arg).standard_normal(cb.d) / np.sqrt(cb.d)
    return cb.circulant(v), scipy.linalg.circulant(v)


def build(cb, D, chain) -> tuple[Operator, np.ndarray]:
    op, M = cb.identity(), np.eye(cb.d)
    for a in chain:
        o, m = _atom(cb, D, a)
        op, M = op @ o, M @ m
    return op, M


def _canonical(op: Operator) -> None:
    fs = op.factors
    for f in fs:
        assert isinstance(f, np.ndarray) or (isinstance(f, int) and f != 0)
    for f, g in zip(fs, fs[1:], strict=False):
        assert isinstance(f, np.ndarray) != isinstance(g, np.ndarray), op.skeleton()


def _dims_and_chains(n=1):
    return st.sampled_from(ALG_DIMS).flatmap(
        lambda d: st.tuples(st.just(d), *[chains(d) for _ in range(n)])
    )


ALG = settings(max_examples=60, deadline=None, derandomize=True)


@ALG
@given(_dims_and_chains(1))
def test_simplification_keeps_the_dense_value(args):
    d, chain = args
    cb = codebook(d, np.float64, seed=1)
    op, M = build(cb, Dense(cb), chain)
    _canonical(op)
    n_circ = sum(1 for a in chain if a[0] != "phi")
    assert op.n_circulants <= n_circ
    assert_close(op.to_dense(), M, np.float64, d, max(1, n_circ))


@ALG
@given(_dims_and_chains(3))
def test_associativity(args):
    d, c1, c2, c3 = args
    cb = codebook(d, np.float64, seed=1)
    D = Dense(cb)
    (a, _), (b, _), (c, _) = build(cb, D, c1), build(cb, D, c2), build(cb, D, c3)
    left, right = (a @ b) @ c, a @ (b @ c)
    assert left.skeleton() == right.skeleton()
    m = max(1, left.n_circulants + 2)
    assert_close(left.to_dense(), right.to_dense(), np.float64, d, m)


@ALG
@given(_dims_and_chains(2))
def test_transpose_of_product(args):
    d, c1, c2 = args
    cb = codebook(d, np.float64, seed=1)
    D = Dense(cb)
    (a, ma), (b, mb) = build(cb, D, c1), build(cb, D, c2)
    lhs, rhs = (a @ b).T, b.T @ a.T
    assert lhs.skeleton() == rhs.skeleton()
    m = max(1, len(c1) + len(c2))
    assert_close(lhs.to_dense(), (ma @ mb).T, np.float64, d, m)
    assert_close(rhs.to_dense(), (ma @ mb).T, np.float64, d, m)
    x = np.random.default_rng(d).standard_normal((3, d))
    assert_close(x @ a, (a.T @ x.T).T, np.float64, d, m, x)


@pytest.mark.parametrize("d", ALG_DIMS)
def test_phi_phi_t_is_the_identity(d):
    cb = codebook(d, np.float64)
    assert (cb.phi() @ cb.phi().T).skeleton() == "I"
    assert (cb.phi().T @ cb.phi()).skeleton() == "I"
    assert (cb.phi(3) @ cb.phi(-3)).factors == ()
    # [s]+ [s]- = C_s Phi Phi^T C_s^T: the permutations cancel and the circulants merge.
    assert (cb.plus("terminal", "a") @ cb.minus("terminal", "a")).skeleton() == "C"
    assert (cb.minus("terminal", "a") @ cb.plus("terminal", "a")).skeleton() == "Phi^-1 C Phi"
    # Cancellation in the middle of a chain lets the circulants on either side merge.
    op = cb.plus("terminal", "a") @ cb.phi(2) @ cb.phi(-3) @ cb.plus("terminal", "b")
    assert op.skeleton() == "C Phi"
    np.testing.assert_array_equal((cb.phi() @ cb.phi().T).to_dense(), np.eye(d))


# -- statistics -----------------------------------------------------------------------------------


def test_plus_minus_is_near_identity():
    """[s]+ [s]- = C_s C_s^T: diagonal ||v_s||^2 ~ 1, off-diagonal O(1/sqrt d).

    For v with i.i.d. N(0, 1/d) entries, ||v||^2 ~ chi2_d / d has mean 1 and standard deviation
    sqrt(2/d); an off-diagonal entry is an autocorrelation sum_k v_k v_{k+m}, mean 0, variance
    1/d (2/d at the lag d/2).
    """
    d, n_sym = 1024, 8
    cb = codebook(d, np.float64, seed=2024)
    diag_means, off_stds = [], []
    for s in range(n_sym):
        g = (cb.plus("terminal", s) @ cb.minus("terminal", s)).to_dense()
        diag_means.append(np.diag(g).mean())
        off = g[~np.eye(d, dtype=bool)]
        off_stds.append(off.std())
        assert abs(off.mean()) < 12 / d  # ((sum v)^2 - ||v||^2) / (d - 1), sum v ~ N(0, 1)
    se = np.sqrt(2 / d) / np.sqrt(n_sym)
    assert abs(np.mean(diag_means) - 1) < 4 * se
    for sd in off_stds:
        assert 0.5 / np.sqrt(d) < sd < 2 / np.sqrt(d)
    # Different symbols: everything is noise, the diagonal included.
    g = (cb.plus("terminal", "x") @ cb.minus("terminal", "y")).to_dense()
    assert abs(np.diag(g).mean()) < 4 / np.sqrt(d)
    assert 0.5 / np.sqrt(d) < g.std() < 2 / np.sqrt(d)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("d", [64, 257])
def test_unitary_minus_is_the_exact_inverse(dtype, d):
    eye = np.eye(d)
    for zero_mean in (False, True):
        cb = codebook(d, dtype, seed=3, unitary=True, zero_mean=zero_mean)
        # zero-mean symbol vectors: the exact inverse on zero-mean vectors, I - J/d in all
        want = eye - np.ones((d, d)) / d if zero_mean else eye
        x = np.random.default_rng(0).standard_normal((d, 4)).astype(dtype)
        if zero_mean:
            x -= x.mean(axis=0)
        mags = np.ones(d // 2 + 1)
        mags[0] = 0.0 if zero_mean else 1.0
        for sym in ("a", "b"):
            p, m = cb.plus("terminal", sym), cb.minus("terminal", sym)
            assert_close((m @ p).to_dense(), want, dtype, d, 2)
            assert_close((p @ m).to_dense(), want, dtype, d, 2)
            assert_close(m @ (p @ x), x, dtype, d, 2, x)
            assert_close(np.abs(cb.spectrum("terminal", sym)), mags, dtype, d)
    # Not so for the non-unitary codebook of the same seed: there [s]- [s]+ is only ~ I.
    g = (cb.minus("terminal", "a") @ cb.plus("terminal", "b")).to_dense()
    assert np.abs(g - eye).max() > 0.1
    plain = codebook(d, dtype, seed=3)
    g = (plain.minus("terminal", "a") @ plain.plus("terminal", "a")).to_dense()
    assert np.abs(g - eye).max() > 10 * rtol(dtype, d, 2)


def test_apply_in_place_when_the_first_factor_is_a_circulant(cbd):
    cb, D, rng = cbd
    d, t = cb.d, cb.dtype
    # From the left the last factor acts first: [s]- = Phi^-1 C starts with C.
    op, M = (
        cb.minus("index", 1) @ cb.minus("terminal", "a"),
        D.minus("index", 1) @ D.minus("terminal", "a"),
    )
    x = rand(rng, (d, d), t)
    ref = M @ x.astype(np.float64)
    assert op.apply(x, out=x) is x
    assert_close(x, ref, t, d, 2, ref)
    # From the right the first factor acts first: [s]+ = C Phi starts with C.
    x = rand(rng, (d, d), t)
    ref = x.astype(np.float64) @ D.plus("terminal", "a")
    assert cb.plus("terminal", "a").apply(x, side="right", out=x) is x
    assert_close(x, ref, t, d, 1, ref)
    # A gather cannot work in place.
    keep = x.copy()
    with pytest.raises(ValueError, match="overlap"):
        cb.plus("terminal", "a").apply(x, out=x)
    np.testing.assert_array_equal(x, keep)


def test_times_diag(cbd):
    cb, D, rng = cbd
    d, t = cb.d, cb.dtype
    p = rand(rng, (d,), t)
    a, i, j = ("nonterminal", "A"), ("index", 1), ("index", 2)
    cases = [
        (cb.plus(*a), D.plus(*a)),
        (cb.minus(*a), D.minus(*a)),
        (cb.phi(2) @ cb.plus(*i), D.phi(2) @ D.plus(*i)),
        (cb.plus(*a) @ cb.plus(*j) @ cb.plus(*i), D.plus(*a) @ D.plus(*j) @ D.plus(*i)),
        (
            3 * cb.minus(*i) @ cb.minus(*j) @ cb.minus(*a),
            3 * D.minus(*i) @ D.minus(*j) @ D.minus(*a),
        ),
        (cb.phi(-1), D.phi(-1)),
        (cb.identity(), np.eye(d)),
    ]
    keep = p.copy()
    for op, M in cases:
        got = op.times_diag(p)
        assert got.shape == (d, d) and got.dtype == t
        assert_close(got, M * p.astype(np.float64)[None, :], t, d, max(1, op.n_circulants))
        out = np.empty((d, d), t)
        assert op.times_diag(p, out=out) is out
    np.testing.assert_array_equal(p, keep)
    with pytest.raises((TypeError, ValueError)):
        cb.plus(*a).times_diag(p.astype(np.float64 if t == np.float32 else np.float32))
    with pytest.raises(ValueError):
        cb.plus(*a).times_diag(np.ones(d + 1, t))


@pytest.mark.parametrize("library", available_ffts())
def test_vectors_in_place_and_wrong_outs(library):
    d = 100
    cb = codebook(d, np.float32, fft=library)
    op = cb.circulant(cb.vector("terminal", "a")) @ cb.phi()  # Phi acts first from the right
    v = np.random.default_rng(0).standard_normal(d).astype(np.float32)
    want_left = op @ v
    want_right = v @ op
    y = v.copy()
    # From the right the circulant acts first: in place is allowed.
    assert op.apply(y, "right", out=y) is y
    assert_close(y, want_right, np.float32, d, x=v)  # pyFFTW: plans differ by alignment
    y = v.copy()
    with pytest.raises(ValueError, match="in place works only"):
        op.apply(y, "left", out=y)  # from the left Phi acts first
    for bad in (np.empty((1, d), np.float32), np.empty(d - 1, np.float32)):
        with pytest.raises(ValueError, match=r"out must have shape \(100,\) and dtype float32"):
            op.apply(v, out=bad)
    assert_close(op.apply(v), want_left, np.float32, d, x=v)


@pytest.mark.skipif("pyfftw" not in available_ffts(), reason="pyFFTW not installed")
def test_pyfftw_odd_strides_shapes_and_alignment():
    import pyfftw

    cb = codebook(100, np.float32, fft="pyfftw")
    op = cb.plus("terminal", "a")
    v = np.random.default_rng(0).standard_normal(100).astype(np.float32)
    want = op @ v
    # (d, 1) views whose length-1 axis has another stride than a fresh array's
    # (FFTW picks its algorithm by alignment and stride: equal to rounding, not bitwise)
    assert_close((op @ v[:, None])[:, 0], want, np.float32, 100, x=v)
    assert_close((v[None, :] @ op.T)[0], want, np.float32, 100, x=v)
    assert_close((op @ np.asfortranarray(v[:, None]))[:, 0], want, np.float32, 100, x=v)
    # a misaligned out (float32 at a 1-byte offset)
    raw = np.zeros(4 * 100 + 1, np.uint8)
    out = np.frombuffer(raw.data, dtype=np.float32, count=100, offset=1)
    assert not out.flags.aligned
    assert_close(op.apply(v, out=out), want, np.float32, 100, x=v)
    # two d with the same spectrum length: plans must not be shared
    for d in (1000, 1001):
        c = codebook(d, np.float32, fft="pyfftw")
        x = np.random.default_rng(d).standard_normal((d, 8)).astype(np.float32)
        o = pyfftw.empty_aligned((d, 8), np.float32)
        got = c.plus("terminal", "a").apply(x, "left", out=o)
        ref = codebook(d, np.float32, fft="numpy").plus("terminal", "a") @ x
        assert_close(got, ref, np.float32, d, x=x)

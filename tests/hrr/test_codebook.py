"""Codebook: deterministic symbol vectors, their statistics, the permutation and buffers."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

from fastdcyk.cfg.grammar import Grammar
from fastdcyk.hrr import blocks as _blocks
from fastdcyk.hrr import buffers
from fastdcyk.hrr.codebook import KINDS, Codebook, sidon_offsets
from fastdcyk.hrr.fft import available_ffts

DTYPES = (np.float32, np.float64)


# -- construction -------------------------------------------------------------------------


@pytest.mark.parametrize("d", [1, 0, -3, 2.5, True, "8"])
def test_invalid_dimension_raises(d):
    with pytest.raises(ValueError, match="dimension"):
        Codebook(d)


@pytest.mark.parametrize("seed", [-1, 1.5, True])
def test_invalid_seed_raises(seed):
    with pytest.raises(ValueError, match="seed"):
        Codebook(8, seed=seed)


@pytest.mark.parametrize("dtype", ["int32", "float16", "complex64"])
def test_invalid_dtype_raises(dtype):
    with pytest.raises(ValueError, match="float32.* or .*float64"):
        Codebook(8, dtype=dtype)


def test_unknown_kind_and_bad_index_raise():
    cb = Codebook(8)
    with pytest.raises(ValueError, match="kind"):
        cb.vector("word", "a")
    for bad in (-1, "3", True, 2.0):
        with pytest.raises(ValueError, match="span index"):
            cb.vector("index", bad)


# -- determinism --------------------------------------------------------------------------


def test_same_seed_same_vectors_whatever_the_order():
    syms = [("terminal", "a"), ("nonterminal", "NP"), ("index", 3), ("terminal", "the")]
    a = Codebook(64, seed=7)
    b = Codebook(64, seed=7)
    va = {s: a.vector(*s).copy() for s in syms}
    vb = {s: b.vector(*s).copy() for s in reversed(syms)}
    for s in syms:
        np.testing.assert_array_equal(va[s], vb[s])
    np.testing.assert_array_equal(a.perm, b.perm)
    # Asking again returns the cached, identical vector.
    np.testing.assert_array_equal(a.vector("terminal", "a"), va[("terminal", "a")])


def test_vectors_are_read_only():
    cb = Codebook(16, seed=0)
    v = cb.vector("terminal", "a")
    with pytest.raises(ValueError):
        v[0] = 1.0
    with pytest.raises(ValueError):
        cb.spectrum("terminal", "a")[0] = 1.0
    with pytest.raises(ValueError):
        cb.perm[0] = 1


def test_different_seeds_differ():
    a = Codebook(64, seed=1)
    b = Codebook(64, seed=2)
    assert not np.allclose(a.vector("terminal", "a"), b.vector("terminal", "a"))
    assert not np.array_equal(a.perm, b.perm)


def test_namespaces_are_distinct():
    cb = Codebook(64, seed=0)
    t = cb.vector("terminal", "S")
    n = cb.vector("nonterminal", "S")
    assert not np.allclose(t, n)
    # Index 1 differs from the terminal "1" and the nonterminal "1".
    i1 = cb.vector("index", 1)
    assert not np.allclose(i1, cb.vector("terminal", "1"))
    assert not np.allclose(i1, cb.vector("nonterminal", "1"))
    # Distinct symbols of one namespace are nearly orthogonal: |v.w| << 1 at d = 64.
    assert abs(float(np.dot(t, n))) < 4 / np.sqrt(64)


def test_symbols_lists_what_was_drawn():
    cb = Codebook(8, seed=0)
    cb.vector("terminal", "b")
    cb.vector("terminal", "a")
    cb.vector("index", 2)
    assert set(cb.symbols("terminal")) == {"a", "b"}
    assert cb.symbols("index") == [2]
    assert cb.symbols("nonterminal") == []
    assert KINDS == ("terminal", "nonterminal", "index", "right")
    # a nonterminal's right-child role vector is another, independent vector
    v, r = cb.vector("nonterminal", "NP"), cb.vector("right", "NP")
    assert abs(float(v @ r)) < 4 / np.sqrt(8) and not np.array_equal(v, r)


def test_float32_and_float64_agree_to_float32_rounding():
    for unitary in (False, True):
        a = Codebook(100, seed=5, dtype="float32", unitary=unitary)
        b = Codebook(100, seed=5, dtype="float64", unitary=unitary)
        np.testing.assert_array_equal(a.perm, b.perm)
        for sym in ("a", "b", "c"):
            v32 = a.vector("terminal", sym)
            v64 = b.vector("terminal", sym)
            assert v32.dtype == np.float32 and v64.dtype == np.float64
            # Drawn in float64 and rounded once: the float32 vector is the rounded float64 one.
            np.testing.assert_array_equal(v32, v64.astype(np.float32))
            assert a.spectrum("terminal", sym).dtype == np.complex64
            assert b.spectrum("terminal", sym).dtype == np.complex128


# -- statistics -----------------------------------------------------------------------------


def test_vectors_are_gaussian_with_variance_one_over_d():
    d, n_sym = 4096, 16
    cb = Codebook(d, seed=11, dtype="float64")
    vs = np.stack([cb.vector("nonterminal", f"X{i}") for i in range(n_sym)])
    n = vs.size
    # Entries N(0, 1/d): the sample mean has standard error sqrt(1/d) / sqrt(n), the sample
    # variance sqrt(2 / n) / d. Allow four standard errors.
    assert abs(vs.mean()) < 4 * np.sqrt(1 / d) / np.sqrt(n)
    assert abs(vs.var() - 1 / d) < 4 * np.sqrt(2 / n) / d
    # ||v||^2 ~ chi2_d / d: mean 1, standard deviation sqrt(2 / d) each.
    norms2 = (vs**2).sum(axis=1)
    assert np.all(np.abs(norms2 - 1) < 5 * np.sqrt(2 / d))
    # Fourth moment of a Gaussian: E x^4 = 3 sigma^4 (a uniform draw would give 1.8).
    kurt = (vs**4).mean() / vs.var() ** 2
    assert abs(kurt - 3) < 0.2


def test_unitary_spectra_have_magnitude_one():
    for dtype in DTYPES:
        for d in (64, 257):
            eps = np.finfo(dtype).eps
            for zero_mean in (False, True):
                cb = Codebook(d, seed=2, dtype=dtype, unitary=True, zero_mean=zero_mean)
                # the constant coefficient is 0 for zero-mean symbol vectors, 1 otherwise
                want = np.ones(d // 2 + 1)
                want[0] = 0.0 if zero_mean else 1.0
                for sym in ("a", "b"):
                    mag = np.abs(np.fft.rfft(cb.vector("terminal", sym).astype(np.float64)))
                    # Rounding the vector to dtype perturbs each coefficient by ~ eps * sqrt(d) *
                    # |v|_inf; 10 eps sqrt(d) bounds it.
                    tol = 10 * eps * np.sqrt(d)
                    np.testing.assert_allclose(mag, want, rtol=0, atol=tol)
                    spec = np.abs(cb.spectrum("terminal", sym))
                    np.testing.assert_allclose(spec, want, rtol=0, atol=tol)
                # span indices keep theirs: distinct shifted indices stay exactly orthogonal
                mag = np.abs(np.fft.rfft(cb.vector("index", 1).astype(np.float64)))
                np.testing.assert_allclose(mag, 1.0, rtol=0, atol=10 * eps * np.sqrt(d))


def test_zero_mean_is_the_unitary_default_and_checked():
    assert Codebook(32, unitary=True).zero_mean is True
    assert Codebook(32).zero_mean is False
    cb = Codebook(32, zero_mean=True)  # Gaussian vectors, mean removed
    assert abs(cb.vector("nonterminal", "S").astype(np.float64).sum()) < 1e-6
    assert "zero_mean=True" in repr(cb) and "zero_mean" not in repr(Codebook(32, unitary=True))
    with pytest.raises(ValueError, match="zero_mean must be"):
        Codebook(32, zero_mean="yes")
    # the same seed gives the same vector up to its constant coefficient
    a = Codebook(32, seed=1, unitary=True, dtype="float64").vector("terminal", "x")
    b = Codebook(32, seed=1, unitary=True, zero_mean=False, dtype="float64").vector("terminal", "x")
    np.testing.assert_allclose(a, b - b.mean(), rtol=0, atol=1e-14)


# -- the permutation --------------------------------------------------------------------------


@pytest.mark.parametrize("d", [2, 7, 64])
def test_permutation_index_matches_matrix_powers(d):
    cb = Codebook(d, seed=3)
    p = np.eye(d, dtype=np.int64)[cb.perm]  # (Phi x)[k] = x[perm[k]]
    x = np.arange(d) * 10
    np.testing.assert_array_equal(p @ x, x[cb.perm])
    for k in range(-3, 4):
        idx = cb.permutation_index(k)
        pk = np.linalg.matrix_power(p, k) if k >= 0 else np.linalg.matrix_power(p.T, -k)
        np.testing.assert_array_equal(np.eye(d, dtype=np.int64)[idx], pk)
        np.testing.assert_array_equal(pk @ x, x[idx])


def test_permutation_is_a_permutation_and_not_identity():
    cb = Codebook(257, seed=0)
    np.testing.assert_array_equal(np.sort(cb.perm), np.arange(257))
    assert np.count_nonzero(cb.perm != np.arange(257)) > 200


def test_permutation_indices_are_read_only():
    """Every cached power of Phi is shared by all operators: none may be writable.

    ``permutation_index(0)`` returns a writable ``np.arange(d)``; writing into it would
    silently corrupt every later identity gather.
    """
    cb = Codebook(8, seed=0)
    for k in range(-2, 3):
        assert not cb.permutation_index(k).flags.writeable, k


# -- from_vectors ----------------------------------------------------------------------------


def _fixed(**kw):
    rng = np.random.default_rng(0)
    args = {
        "terminals": {"a": rng.standard_normal(5), "b": rng.standard_normal(5)},
        "nonterminals": {"S": rng.standard_normal(5)},
        "indices": [rng.standard_normal(5) for _ in range(3)],
        "permutation": np.array([2, 0, 4, 1, 3]),
    }
    args.update(kw)
    return Codebook.from_vectors(**args)


def test_from_vectors_holds_the_given_vectors():
    cb = _fixed(dtype="float64")
    assert cb.d == 5
    rng = np.random.default_rng(0)
    a = rng.standard_normal(5)
    np.testing.assert_array_equal(cb.vector("terminal", "a"), a)
    np.testing.assert_array_equal(cb.perm, [2, 0, 4, 1, 3])
    assert cb.vector("index", 2).shape == (5,)
    cb32 = _fixed()
    assert cb32.vector("terminal", "a").dtype == np.float32


def test_from_vectors_unknown_symbol_is_a_key_error_naming_it():
    cb = _fixed()
    with pytest.raises(KeyError, match="zebra"):
        cb.vector("terminal", "zebra")
    with pytest.raises(KeyError, match="7"):
        cb.plus("index", 7)


@pytest.mark.parametrize(
    "kw",
    [
        {"terminals": {"a": np.ones(4)}},
        {"terminals": {"a": np.ones((5, 1))}},
        {"nonterminals": {"S": np.array([1.0, np.nan, 0, 0, 0])}},
        {"nonterminals": {"S": np.array([1.0, np.inf, 0, 0, 0])}},
        {"terminals": {"a": np.ones(5, dtype=complex)}},
        {"indices": [np.ones(6)]},
        {"permutation": np.array([0, 1, 2, 3, 3])},
        {"permutation": np.array([0, 1, 2, 3, 5])},
        {"permutation": np.array([0.0, 1.0, 2.0, 3.0, 4.0])},
        {"permutation": np.array([[0, 1], [1, 0]])},
        {"permutation": np.array([0])},
    ],
)
def test_from_vectors_validation(kw):
    with pytest.raises(ValueError):
        _fixed(**kw)


# -- work buffers ------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_work_buffers_are_reused(dtype, monkeypatch):
    # The whole-matrix path (the numpy and pyfftw libraries'); the blocked path is below.
    monkeypatch.setattr(_blocks, "ENABLED", False)
    d = 64
    cb = Codebook(d, seed=0, dtype=dtype)
    op = cb.plus("terminal", "a") @ cb.plus("terminal", "b") @ cb.minus("index", 1)
    x = np.random.default_rng(0).standard_normal((d, d)).astype(dtype)
    assert cb.buffer_bytes() == 0
    op @ x
    first = cb.buffer_bytes()
    real = d * d * np.dtype(dtype).itemsize
    spec = (d // 2 + 1) * d * 2 * np.dtype(dtype).itemsize
    # At most one real and one half-spectrum complex buffer of the matrix's size.
    assert 0 < first <= real + spec
    for _ in range(4):
        op @ x
        x @ op  # the right-hand spectrum (d, d // 2 + 1) reuses the same allocation
        op.apply(x, out=np.empty_like(x))
    assert cb.buffer_bytes() <= real + spec
    assert cb.buffer_bytes() >= first
    b1 = cb.workspace.get("apply-real", (d, d), dtype)
    assert np.shares_memory(cb.workspace.get("apply-real", (d, d), dtype), b1)
    cb.release_buffers()
    assert cb.buffer_bytes() == 0


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("threads", [1, 2])
def test_blocked_path_holds_small_blocks_only(dtype, threads):
    d = 1024
    cb = Codebook(d, seed=0, dtype=dtype, threads=threads)
    assert cb.fft.blockwise
    op = cb.plus("terminal", "a") @ cb.plus("terminal", "b") @ cb.minus("index", 1)
    x = np.random.default_rng(0).standard_normal((d, d)).astype(dtype)
    item = np.dtype(dtype).itemsize
    op @ x
    first = cb.buffer_bytes()
    for _ in range(3):
        op @ x
        x @ op
        op.apply(x, out=np.empty_like(x))
    # Per thread: two real blocks and one half-spectrum block, whichever side.
    widest = max(_blocks.block_width(d, d, item, axis) for axis in (0, 1))
    per_side = threads * 3 * widest * (d + 2) * item
    assert first <= per_side
    assert cb.buffer_bytes() <= 2 * per_side  # one set per side, nothing more per call
    assert cb.buffer_bytes() < d * d * item  # far less than one d x d matrix


def test_spectrum_buffer_shares_one_allocation_for_both_axes():
    cb = Codebook(10, seed=0)
    a = buffers.SPECTRUM.get(cb, (6, 10))
    b = buffers.SPECTRUM.get(cb, (10, 6))
    assert np.shares_memory(a, b)
    assert cb.buffer_bytes() == 60 * 8


@pytest.mark.parametrize("library", available_ffts())
def test_pickle_leaves_the_work_buffers_behind(library):
    cb = Codebook(64, seed=4, dtype=np.float64, fft=library, threads=1)
    op = cb.plus("terminal", "a") @ cb.minus("index", 2)
    x = np.random.default_rng(0).standard_normal((64, 64))
    want = op @ x
    assert cb.buffer_bytes() > 0
    cb2 = pickle.loads(pickle.dumps(cb))
    assert cb2.buffer_bytes() == 0
    assert cb2.fft.name == cb.fft.name
    np.testing.assert_array_equal(cb2.perm, cb.perm)
    np.testing.assert_array_equal(cb2.vector("terminal", "a"), cb.vector("terminal", "a"))
    op2 = cb2.plus("terminal", "a") @ cb2.minus("index", 2)
    np.testing.assert_allclose(op2 @ x, want, rtol=0, atol=1e-12 * np.abs(want).max())


def test_buffers_stay_bounded_whatever_shapes_they_serve():
    d = 64
    cb = Codebook(d, seed=0, threads=2)
    op = cb.plus("terminal", "a") @ cb.plus("terminal", "b")
    op @ np.ones((d, 1024), np.float32)
    op.T.apply(np.ones((1024, d), np.float32), "right")
    most = cb.buffer_bytes()
    names = len(cb.workspace.arrays)
    for k in range(1, 300, 7):
        op @ np.ones((d, k), np.float32)
        np.ones((k, d), np.float32) @ op
        op @ np.ones(d, np.float32)
    assert cb.buffer_bytes() == most
    assert len(cb.workspace.arrays) == names
    # One allocation per name grows to the largest shape and serves the smaller ones.
    a = cb.workspace.get("x", (10, 3), np.float64)
    b = cb.workspace.get("x", (2, 5), np.float64)
    assert b.shape == (2, 5) and np.shares_memory(a, b)
    c = cb.workspace.get("x", (100,), np.float64)
    assert c.shape == (100,) and not np.shares_memory(a, c)
    assert cb.workspace.arrays[("x", np.dtype(np.float64).str)].size == 100


# -- shifted span indices -------------------------------------------------------------------


@pytest.mark.parametrize("d", [16, 64, 257, 1024])
def test_sidon_offsets_have_distinct_differences(d):

    offs = sidon_offsets(d, 1000)
    assert offs[0] == 0 and offs == sorted(offs) and len(offs) >= 4
    diffs = [(a - b) % d for a in offs for b in offs if a != b]
    assert len(diffs) == len(set(diffs)) and 0 not in diffs
    # prefix-stable: asking for fewer gives the same beginning
    assert sidon_offsets(d, 3) == offs[:3]


def test_shifted_indices_cancel_exactly():
    d = 256
    cb = Codebook(d, seed=3, dtype="float64", unitary=True)
    assert cb.index_vectors == "shifted"
    n = 8
    spec = np.array([np.fft.fft(cb.vector("index", k)) for k in range(n)])
    np.testing.assert_allclose(np.abs(spec), 1.0, rtol=0, atol=1e-12)  # unitary
    eps = 64 * np.finfo(np.float64).eps
    for a in range(n):
        for b in range(n):
            # one mismatched span index: diag(C_a^T C_b) = v_a . v_b
            dot = cb.vector("index", a) @ cb.vector("index", b)
            assert abs(dot - (a == b)) < eps
    # two mismatched indices in one group: mean(conj a * b * conj c * e) = 0 unless
    # {a, e} = {b, c}
    for a, b, c, e in [(0, 1, 2, 3), (1, 0, 3, 2), (2, 5, 7, 4), (0, 3, 3, 6), (1, 4, 0, 5)]:
        m = np.mean(np.conj(spec[a]) * spec[b] * np.conj(spec[c]) * spec[e])
        assert abs(m) < eps
    m = np.mean(np.conj(spec[2]) * spec[2] * np.conj(spec[5]) * spec[5])
    assert abs(m - 1) < eps


def test_shifted_indices_are_deterministic_and_fall_back_beyond_the_sidon_set():

    d = 64
    m = len(sidon_offsets(d, 10**6))
    a, b = Codebook(d, seed=4, unitary=True), Codebook(d, seed=4, unitary=True)
    for k in (m + 1, 0, m - 1, m):  # any order of asking
        np.testing.assert_array_equal(a.vector("index", k), b.vector("index", k))
    base = np.abs(np.fft.rfft(a.vector("index", 0)))
    # inside the set, the same magnitudes (a shift, up to sign); beyond, a fresh vector
    v_in = a.vector("index", m - 1).astype(np.float64)
    v_out = a.vector("index", m).astype(np.float64)
    assert np.allclose(np.abs(np.fft.rfft(v_in)), base, atol=1e-5)
    shifts = [np.roll(a.vector("index", 0), s) for s in range(d)]
    assert any(np.allclose(v_in, sg * s, atol=1e-6) for s in shifts for sg in (1, -1))
    assert not any(np.allclose(v_out, sg * s, atol=1e-3) for s in shifts for sg in (1, -1))
    c = Codebook(d, seed=4, unitary=True, index_vectors="random")
    assert not np.allclose(c.vector("index", 1), a.vector("index", 1))
    np.testing.assert_array_equal(c.vector("terminal", "x"), a.vector("terminal", "x"))


def test_index_vectors_option_is_checked():
    with pytest.raises(ValueError, match="needs unitary=True"):
        Codebook(64, index_vectors="shifted")
    with pytest.raises(ValueError, match="unknown index_vectors"):
        Codebook(64, unitary=True, index_vectors="sidon")
    assert Codebook(64).index_vectors == "random"
    cb = Codebook(64, unitary=True)
    cb2 = pickle.loads(pickle.dumps(cb))
    np.testing.assert_array_equal(cb2.vector("index", 3), cb.vector("index", 3))


# -- shifted symbol vectors -------------------------------------------------------------------


def test_shifted_symbols_make_near_matches_exact():
    from fastdcyk.hrr.codebook import grammar_symbols

    d = 256
    g = Grammar.builtin("G2")
    cb = Codebook.for_grammar(g, d, seed=3, dtype="float64")
    assert cb.unitary and cb.zero_mean and cb.shifted_symbols == grammar_symbols(g)
    # nonterminals, their right-child roles, terminals: the first 12 of 23 fit at d = 256
    fit = len(sidon_offsets(d, len(cb.shifted_symbols)))
    slots = cb.shifted_symbols[:fit]
    spec = {k: np.fft.fft(cb.vector(*k)) for k in slots}
    eps = 64 * np.finfo(np.float64).eps
    for a in slots[:8]:
        for b in slots[:8]:
            # one symbol differs: v_a . v_b = -+1/d exactly (zero-mean shifts), (d-1)/d if equal
            dot = cb.vector(*a) @ cb.vector(*b)
            assert abs(abs(dot) - ((d - 1) / d if a == b else 1 / d)) < eps
    # a rule's pair against another pair: mean(conj(b1) b0 conj(c0) c1) is -+1/d unless the
    # pairs are the same (the Sidon property over nonterminals and right roles together)
    nt = [k for k in slots if k[0] == "nonterminal"][:4]
    rt = [k for k in slots if k[0] == "right"][:4]
    for b0 in nt:
        for c0 in rt:
            for b1 in nt:
                for c1 in rt:
                    m = np.mean(np.conj(spec[b1]) * spec[b0] * np.conj(spec[c0]) * spec[c1]).real
                    want = (d - 1) / d if (b0, c0) == (b1, c1) else 1 / d
                    assert abs(abs(m) - want) < eps
    # a random-vector codebook reads N(0, 1/d) there instead: far from +-1/d somewhere
    plain = Codebook(d, seed=3, dtype="float64", unitary=True)
    dots = [plain.vector(*a) @ plain.vector(*b) for a in nt for b in nt if a != b]
    assert max(abs(abs(x) - 1 / d) for x in dots) > 5 / d


def test_shifted_symbols_are_deterministic_and_fall_back_beyond_the_sidon_set():
    d = 64
    m = len(sidon_offsets(d, 10**6))
    slots = [("terminal", f"w{k}") for k in range(m + 3)]
    a = Codebook(d, seed=4, unitary=True, shifted_symbols=slots)
    b = Codebook(d, seed=4, unitary=True, shifted_symbols=slots)
    for k in (m + 1, 0, m - 1, m, 2):  # any order of asking
        np.testing.assert_array_equal(a.vector(*slots[k]), b.vector(*slots[k]))
    first = a.vector(*slots[0]).astype(np.float64)
    shifts = [sg * np.roll(first, s) for s in range(d) for sg in (1, -1)]
    inside = a.vector(*slots[m - 1]).astype(np.float64)
    beyond = a.vector(*slots[m]).astype(np.float64)
    assert any(np.allclose(inside, s, atol=1e-6) for s in shifts)
    assert not any(np.allclose(beyond, s, atol=1e-3) for s in shifts)
    # symbols not listed, and span indices, are as in a codebook without the list
    c = Codebook(d, seed=4, unitary=True)
    np.testing.assert_array_equal(a.vector("nonterminal", "X"), c.vector("nonterminal", "X"))
    np.testing.assert_array_equal(a.vector("index", 2), c.vector("index", 2))
    # symbols and indices have separate bases: no symbol is a shift of an index vector
    idx = c.vector("index", 0).astype(np.float64)
    assert not any(np.allclose(first, sg * np.roll(idx, s), atol=1e-3)
                   for s in range(d) for sg in (1, -1))  # fmt: skip
    cb2 = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(cb2.vector(*slots[1]), a.vector(*slots[1]))


def test_shifted_symbols_option_is_checked():
    with pytest.raises(ValueError, match="needs unitary=True"):
        Codebook(64, shifted_symbols=[("terminal", "a")])
    with pytest.raises(ValueError, match="kind 'index'"):
        Codebook(64, unitary=True, shifted_symbols=[("index", 1)])
    with pytest.raises(ValueError, match="twice"):
        Codebook(64, unitary=True, shifted_symbols=[("terminal", "a"), ("terminal", "a")])
    with pytest.raises(ValueError, match=r"\(kind, symbol\) pairs"):
        Codebook(64, unitary=True, shifted_symbols=["a"])
    with pytest.raises(ValueError, match=r"\(kind, symbol\) pairs"):
        Codebook(64, unitary=True, shifted_symbols="ab")


def test_grammar_symbols_order():
    from fastdcyk.hrr.codebook import grammar_symbols

    g = Grammar.from_string("S -> B A\nA -> 'y'\nB -> 'x'\nB -> 'a'")
    assert grammar_symbols(g) == (
        ("nonterminal", "A"), ("nonterminal", "B"), ("nonterminal", "S"),
        ("right", "A"), ("right", "B"), ("right", "S"),
        ("terminal", "a"), ("terminal", "x"), ("terminal", "y"),
    )  # fmt: skip
    assert "9 shifted symbols" in repr(Codebook.for_grammar(g, 64))


def test_from_vectors_values_that_overflow_float32_name_the_symbol():
    big = np.array([1e39, 0.0, 0.0, 0.0, 0.0])  # finite in float64, inf in float32
    with pytest.raises(ValueError, match=r"nonterminal 'S': values overflow float32.*float64"):
        _fixed(nonterminals={"S": big})
    with pytest.raises(ValueError, match=r"index 1: values overflow float32"):
        _fixed(indices=[np.ones(5), -big])
    cb = _fixed(nonterminals={"S": big}, dtype="float64")
    assert cb.vector("nonterminal", "S")[0] == 1e39


# -- saving and loading ---------------------------------------------------------------------


def test_a_saved_seeded_codebook_loads_as_itself_and_draws_what_a_longer_sentence_needs(tmp_path):
    import fastdcyk as fd

    g = fd.Grammar.builtin("G0")
    cb = fd.Codebook.for_grammar(g, 64, seed=3)
    fd.dcyk(g, "fish swim", cb, variant="trace")  # draws the indices of 2 words only
    cb.save(tmp_path / "cb.npz")
    back = Codebook.load(tmp_path / "cb.npz")
    assert (back.seed, back.d, back.unitary, back.shifted_symbols) == (
        3, 64, True, cb.shifted_symbols,
    )  # fmt: skip
    long = "fish swim fish near fish"
    assert (
        fd.dcyk(g, long, back, variant="trace").chart == fd.dcyk(g, long, cb, variant="trace").chart
    )
    np.testing.assert_array_equal(back.vector("index", 5), cb.vector("index", 5))


def test_load_refuses_what_save_did_not_write_with_a_value_error(tmp_path):
    cb = Codebook(32, seed=1)
    cb.vector("terminal", "a")
    good = tmp_path / "good.npz"
    cb.save(good)
    data = good.read_bytes()
    cases = {
        "truncated.npz": data[: len(data) // 2],
        "corrupt.npz": data[:100] + bytes(200) + data[300:],
        "empty.npz": b"",
        "text.npz": b"S -> NP VP\n",
    }
    for name, content in cases.items():
        (tmp_path / name).write_bytes(content)
    np.savez(tmp_path / "foreign.npz", x=np.arange(3))
    np.save(tmp_path / "array.npy", np.arange(3))
    meta_cases = {
        "no_symbols": {"format": "fastdcyk-codebook", "version": 1, "dtype": "float32"},
        "bad_symbols": {"format": "fastdcyk-codebook", "version": 1, "dtype": "float32",
                        "symbols": {"terminal": ["a", "b"]}},  # two names, one vector
        "bad_seeded": {"format": "fastdcyk-codebook", "version": 1, "dtype": "float32",
                       "symbols": {}, "seeded": {"d": 32}},
        "not_a_dict": ["fastdcyk-codebook"],
    }  # fmt: skip
    for name, meta in meta_cases.items():
        arrays = {"perm": np.arange(32), "terminal": np.zeros((1, 32), np.float32)}
        np.savez(tmp_path / f"{name}.npz", meta=np.array(json.dumps(meta)), **arrays)
    names = [*cases, "foreign.npz", "array.npy", *(f"{n}.npz" for n in meta_cases)]
    for name in names:
        with pytest.raises(ValueError, match="not a codebook file written by Codebook.save"):
            Codebook.load(tmp_path / name)
    with pytest.raises(FileNotFoundError):
        Codebook.load(tmp_path / "missing.npz")
    assert Codebook.load(good).seed == 1  # the good one still loads


@pytest.mark.parametrize("unitary", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_vectors_and_spectra_drawn_together_equal_those_drawn_one_by_one(unitary, dtype):
    """A batch draw (a grammar's thousands of symbols at once) gives every symbol the bits
    it gets alone, whatever else is drawn with it and in which order."""
    g = Grammar.builtin("G2")
    make = Codebook.for_grammar if unitary else (lambda g, *a, **k: Codebook(*a, **k))
    together = make(g, 96, 4, dtype=dtype, unitary=unitary)
    alone = make(g, 96, 4, dtype=dtype, unitary=unitary)
    names = [*g.nonterminals, "not-in-the-grammar", g.nonterminals[0]]
    vecs = together.vectors("nonterminal", names[::-1])[::-1]
    specs = together.spectra("nonterminal", names)
    for k, name in enumerate(names):
        assert np.array_equal(vecs[k], alone.vector("nonterminal", name))
        assert np.array_equal(specs[k], alone.spectrum("nonterminal", name))
    idx = together.vectors("index", range(30))
    assert all(np.array_equal(idx[k], alone.vector("index", k)) for k in range(30))
    assert vecs.dtype == specs.real.dtype == np.dtype(dtype)

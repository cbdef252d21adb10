"""Lazy operators against a dense baseline and a plain numpy.fft implementation.

The chain is [a]+ [b]+ [c]+ (three circulants, three Phi) applied from the left to a d x d
float32 matrix. Run for real with

    FASTDCYK_BENCH_LARGE=1 .venv/bin/python -m pytest benchmarks/bench_operators.py \
        --benchmark-enable --benchmark-group-by=group,param --benchmark-sort=name

Ratios against the targets are computed from one run's medians (docs/performance.md).
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import scipy.fft
import scipy.linalg

from fastdcyk.hrr import blocks as _blocks
from fastdcyk.hrr.codebook import Codebook
from fastdcyk.hrr.fft import available_ffts, get_fft

SYMS = ("a", "b", "c")


def _setup(d: int):
    cb = Codebook(d, seed=0, dtype="float32")
    op = cb.plus("terminal", "a") @ cb.plus("terminal", "b") @ cb.plus("terminal", "c")
    x = np.random.default_rng(d).standard_normal((d, d)).astype(np.float32)
    return cb, op, x


def _reference(cb: Codebook, x: np.ndarray) -> np.ndarray:
    """The chain in float64 by numpy.fft, for checking what each benchmark computed."""
    y = x.astype(np.float64)
    for s in reversed(SYMS):
        y = y[cb.perm]
        spec = np.fft.rfft(cb.vector("terminal", s).astype(np.float64))
        y = np.fft.irfft(np.fft.rfft(y, axis=0) * spec[:, None], n=cb.d, axis=0)
    return y


def _check(got: np.ndarray, ref: np.ndarray) -> None:
    # float32 work: relative error of order eps32 * log2(d) per circulant, 3 circulants.
    err = np.abs(got - ref).max() / np.abs(ref).max()
    assert err < 300 * np.finfo(np.float32).eps * np.log2(len(ref)), err


@pytest.mark.benchmark(group="chain [a]+ [b]+ [c]+ @ X, float32")
def test_chain_lazy(benchmark, d):
    cb, op, x = _setup(d)
    out = np.empty_like(x)
    op.apply(x, out=out)  # warm-up: JIT, spectra, work buffers
    result = benchmark(op.apply, x, "left", out)
    _check(result, _reference(cb, x))


@pytest.mark.benchmark(group="chain [a]+ [b]+ [c]+ @ X, float32")
def test_chain_lazy_whole_matrix(benchmark, d, monkeypatch):
    """The same chain without cache blocking: one pass over X per FFT and per gather."""
    monkeypatch.setattr(_blocks, "ENABLED", False)
    cb, op, x = _setup(d)
    out = np.empty_like(x)
    op.apply(x, out=out)
    result = benchmark(op.apply, x, "left", out)
    _check(result, _reference(cb, x))


@pytest.mark.benchmark(group="chain X @ ([a]+ [b]+ [c]+)^T, float32")
@pytest.mark.parametrize("blocked", [True, False], ids=["blocked", "whole_matrix"])
def test_chain_lazy_right(benchmark, d, blocked, monkeypatch):
    """The transpose applied from the right: FFTs along the contiguous axis."""
    monkeypatch.setattr(_blocks, "ENABLED", blocked)
    cb, op, x = _setup(d)
    opt = op.T
    out = np.empty_like(x)
    opt.apply(x, "right", out)
    xt = np.ascontiguousarray(x.T)
    result = benchmark(opt.apply, xt, "right", out)
    _check(result.T, _reference(cb, x))


@pytest.mark.benchmark(group="chain [a]+ [b]+ [c]+ @ X, float32")
def test_chain_numpy_fft(benchmark, d):
    cb, _, x = _setup(d)
    perm = cb.perm
    specs = [np.fft.rfft(cb.vector("terminal", s)) for s in SYMS]

    def plain(x):
        y = x
        for spec in reversed(specs):
            y = y[perm]
            y = np.fft.irfft(np.fft.rfft(y, axis=0) * spec[:, None], n=d, axis=0)
        return y

    plain(x)
    result = benchmark(plain, x)
    _check(result, _reference(cb, x))


@pytest.mark.benchmark(group="chain [a]+ [b]+ [c]+ @ X, float32")
def test_chain_dense(benchmark, d, large_or_smoke):
    cb, _, x = _setup(d)
    # Materialised once (outside the timing): 3 circulants and Phi, d x d float32 each.
    mats = []
    for s in SYMS:
        mats += [
            scipy.linalg.circulant(cb.vector("terminal", s)),
            np.eye(d, dtype=np.float32)[cb.perm],
        ]

    def dense(x):
        y = x
        for m in reversed(mats):
            y = m @ y
        return y

    dense(x[:, :8])  # warm BLAS up on a thin slice
    # 6 d x d matmuls per call (2 d^3 flops each): a few rounds only, warmed up above.
    result = benchmark.pedantic(dense, args=(x,), rounds=2, iterations=1, warmup_rounds=0)
    _check(result, _reference(cb, x))


@pytest.mark.benchmark(group="one circulant @ X, float32")
def test_circulant_lazy(benchmark, d_large, large_or_smoke):
    d = d_large
    cb = Codebook(d, seed=1, dtype="float32")
    op = cb.circulant(cb.vector("terminal", "a"))
    x = np.random.default_rng(1).standard_normal((d, d)).astype(np.float32)
    out = np.empty_like(x)
    op.apply(x, out=out)
    result = benchmark(op.apply, x, "left", out)
    # Target: at most two d x d float32 work buffers. One circulant applied block by block
    # needs one half-spectrum block per thread.
    assert cb.buffer_bytes() <= 2 * d * d * 4, cb.buffer_bytes()
    benchmark.extra_info["buffer_bytes"] = cb.buffer_bytes()
    benchmark.extra_info["buffer_over_dxd_float32"] = cb.buffer_bytes() / (d * d * 4)
    spec = np.fft.rfft(cb.vector("terminal", "a").astype(np.float64))
    ref = np.fft.irfft(np.fft.rfft(x.astype(np.float64), axis=0) * spec[:, None], n=d, axis=0)
    assert (
        np.abs(result - ref).max() < 100 * np.finfo(np.float32).eps * np.log2(d) * np.abs(ref).max()
    )


@pytest.mark.benchmark(group="one circulant @ X, float32")
def test_circulant_scipy_pair(benchmark, d_large, large_or_smoke):
    d = d_large
    workers = os.cpu_count()
    x = np.random.default_rng(1).standard_normal((d, d)).astype(np.float32)

    def pair(x):
        return scipy.fft.irfft(
            scipy.fft.rfft(x, axis=0, workers=workers), n=d, axis=0, workers=workers
        )

    pair(x)
    result = benchmark(pair, x)
    assert np.abs(result - x).max() < 100 * np.finfo(np.float32).eps * np.log2(d) * np.abs(x).max()


@pytest.mark.benchmark(group="FFT library: rfft + irfft pair over d x d, float32")
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("library", available_ffts())
def test_fft_pair(benchmark, d_large, library, axis, large_or_smoke):
    """Why "auto" is scipy: each library's whole-matrix round trip, into reused buffers."""
    d = d_large
    eng = get_fft(library)
    x = np.random.default_rng(2).standard_normal((d, d)).astype(np.float32)
    shape = (d // 2 + 1, d) if axis == 0 else (d, d // 2 + 1)
    spec = eng.empty(shape, np.complex64)
    out = eng.empty((d, d), np.float32)

    def pair():
        eng.rfft(x, axis, out=spec)
        return eng.irfft(spec, d, axis, out=out)

    pair()  # plans (pyFFTW: FFTW_MEASURE) and warm-up
    result = benchmark(pair)
    assert np.abs(result - x).max() < 100 * np.finfo(np.float32).eps * np.log2(d) * np.abs(x).max()

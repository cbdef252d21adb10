"""FFT libraries: parity with a float64 reference, out= buffers, input safety, the choice.

Tolerance: a real FFT of length n has a relative error of order eps * log2(n) in the 2-norm;
entries are compared with ``50 * eps * max(1, log2 n) * max(1, |ref|_max)`` (forward) and
against the input itself after a round trip.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import fastdcyk.hrr.fft as fft_mod
from fastdcyk.hrr.fft import (
    FFT,
    LIBRARIES,
    available_ffts,
    default_threads,
    get_fft,
    has_pyfftw,
    spectrum_dtype,
)

DTYPES = (np.float32, np.float64)
SHAPES = ((2, 3), (7, 5), (16, 16), (15, 15), (64, 9), (9, 100))


def library(name: str) -> FFT:
    """The named library's FFT; pyFFTW plans with FFTW_ESTIMATE here, since FFTW_MEASURE spends
    seconds on some odd sizes and the code path under test is the same."""
    if name == "pyfftw":
        return fft_mod._PyFFTW(planner="FFTW_ESTIMATE")
    return get_fft(name)


def tol(dtype, n):
    return 50 * np.finfo(dtype).eps * max(1.0, np.log2(n))


def test_library_names_and_auto():
    assert LIBRARIES == ("scipy", "pyfftw", "numpy")
    assert get_fft("auto").name == "scipy"
    assert get_fft("AUTO") is get_fft("scipy")
    assert get_fft("numpy").threads == 1
    assert get_fft("scipy").threads == default_threads() >= 1
    assert get_fft("scipy", threads=1).threads == 1
    eng = get_fft("numpy")
    assert get_fft(eng) is eng
    assert isinstance(eng, FFT)
    assert ("pyfftw" in available_ffts()) == has_pyfftw()
    assert available_ffts()[0] == "scipy"
    with pytest.raises(ValueError, match="unknown FFT library"):
        get_fft("cufft")
    with pytest.raises(ValueError, match="threads"):
        get_fft("scipy", threads=0)


def test_pyfftw_falls_back_to_scipy_with_a_warning(monkeypatch):
    monkeypatch.setattr(fft_mod, "_HAS_PYFFTW", False)
    with pytest.warns(RuntimeWarning, match="pyFFTW"):
        eng = get_fft("pyfftw")
    assert eng.name == "scipy"
    assert "pyfftw" not in available_ffts()


def test_spectrum_dtype():
    assert spectrum_dtype("float32") == np.complex64
    assert spectrum_dtype(np.float64) == np.complex128
    for bad in ("float16", "int64", "complex64"):
        with pytest.raises(ValueError):
            spectrum_dtype(bad)


@pytest.mark.parametrize("name", available_ffts())
@pytest.mark.parametrize("dtype", DTYPES)
def test_rfft_irfft_parity(name, dtype):
    eng = library(name)
    rng = np.random.default_rng(0)
    for shape in SHAPES:
        x = rng.standard_normal(shape).astype(dtype)
        keep = x.copy()
        for axis in (0, 1):
            n = shape[axis]
            ref = np.fft.rfft(x.astype(np.float64), axis=axis)
            s = eng.rfft(x, axis)
            assert s.dtype == spectrum_dtype(dtype)
            assert s.shape == ref.shape
            scale = max(1.0, np.abs(ref).max())
            assert np.abs(s - ref).max() <= tol(dtype, n) * scale
            np.testing.assert_array_equal(x, keep)  # the forward transform keeps its input
            # Round trip, with the spectrum given as a work buffer it may destroy.
            back = eng.irfft(s.copy(), n, axis)
            assert back.dtype == dtype and back.shape == shape
            assert np.abs(back - x).max() <= tol(dtype, n) * max(1.0, np.abs(x).max())
            # irfft of a given spectrum against numpy's float64 inverse.
            ref_inv = np.fft.irfft(ref, n=n, axis=axis)
            got = eng.irfft(ref.astype(spectrum_dtype(dtype)), n, axis)
            assert np.abs(got - ref_inv).max() <= tol(dtype, n) * max(1.0, np.abs(x).max())
    # 1-D.
    for n in (2, 7, 64, 257):
        x = rng.standard_normal(n).astype(dtype)
        ref = np.fft.rfft(x.astype(np.float64))
        assert np.abs(eng.rfft(x, 0) - ref).max() <= tol(dtype, n) * max(1.0, np.abs(ref).max())
        assert np.abs(eng.irfft(eng.rfft(x, 0), n, 0) - x).max() <= tol(dtype, n)


@pytest.mark.parametrize("name", available_ffts())
@pytest.mark.parametrize("dtype", DTYPES)
def test_out_buffers_are_written(name, dtype):
    eng = library(name)
    rng = np.random.default_rng(1)
    for n in (16, 15):
        x = rng.standard_normal((n, 6)).astype(dtype)
        s_out = eng.empty((n // 2 + 1, 6), spectrum_dtype(dtype))
        s = eng.rfft(x, 0, out=s_out)
        assert s is s_out
        ref = np.fft.rfft(x.astype(np.float64), axis=0)
        assert np.abs(s - ref).max() <= tol(dtype, n) * max(1.0, np.abs(ref).max())
        r_out = eng.empty((n, 6), dtype)
        r = eng.irfft(s, n, 0, out=r_out)
        assert r is r_out
        assert np.abs(r - x).max() <= tol(dtype, n) * max(1.0, np.abs(x).max())


@pytest.mark.parametrize("dtype", DTYPES)
def test_libraries_agree_with_each_other(dtype):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((48, 31)).astype(dtype)
    results = {e: (library(e).rfft(x, 0), library(e).rfft(x, 1)) for e in available_ffts()}
    for got in results.values():
        for g, r in zip(got, results["scipy"], strict=True):
            assert g.dtype == r.dtype
            assert np.abs(g - r).max() <= tol(dtype, 48) * max(1.0, np.abs(r).max())


def test_pyfftw_reuses_plans():
    if not has_pyfftw():
        pytest.skip("pyFFTW is not installed")
    eng = get_fft("pyfftw")
    x = np.random.default_rng(3).standard_normal((16, 8)).astype(np.float32)
    eng.rfft(x, 0)
    n_plans = len(eng._plans)
    for _ in range(3):
        eng.irfft(eng.rfft(x, 0), 16, 0)
    assert len(eng._plans) <= n_plans + 1  # one more: the backward plan
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert get_fft("pyfftw") is eng


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scipy_public_fallback(monkeypatch, dtype):
    """Without pocketfft's private binding the scipy FFT runs the public scipy.fft path."""
    eng = get_fft("scipy", threads=1)
    x = np.random.default_rng(3).standard_normal((33, 5)).astype(dtype)
    with_binding = (eng.rfft(x, 0), eng.irfft(eng.rfft(x, 0), 33, 0))
    monkeypatch.setattr(fft_mod, "_POCKETFFT_OUT", False)
    monkeypatch.setattr(fft_mod, "_pocketfft", None)  # any use of the binding would fail
    s = eng.rfft(x, 0)
    assert s.dtype == fft_mod.spectrum_dtype(dtype)
    np.testing.assert_allclose(s, np.fft.rfft(x.astype(np.float64), axis=0), rtol=0,
                               atol=tol(dtype, 33))  # fmt: skip
    out = np.empty_like(s)
    assert eng.rfft(x, 0, out=out) is out and np.array_equal(out, s)
    back = eng.irfft(s.copy(), 33, 0)
    assert back.dtype == dtype
    np.testing.assert_allclose(back, x, rtol=0, atol=tol(dtype, 33))
    np.testing.assert_allclose(s, with_binding[0], rtol=0, atol=tol(dtype, 33))
    np.testing.assert_allclose(back, with_binding[1], rtol=0, atol=tol(dtype, 33))
    c = (x[:, :2] + 1j * x[:, 2:4]).astype(fft_mod.spectrum_dtype(dtype))
    np.testing.assert_allclose(eng.cfft(c.copy(), 0), np.fft.fft(c, axis=0), rtol=0,
                               atol=tol(dtype, 33))  # fmt: skip

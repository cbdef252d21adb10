"""FFT libraries: one place that owns the choice of library, threads, plans and buffer reuse.

Every operator in fastdcyk is applied to dense matrices by batched real FFTs along one axis.
Three libraries implement the same small interface (:meth:`FFT.rfft`, :meth:`FFT.irfft`,
:meth:`FFT.empty`), chosen by name with :func:`get_fft` (the ``fft`` keyword of
:class:`~fastdcyk.hrr.codebook.Codebook` and :func:`fastdcyk.dcyk`):

- ``"scipy"``: scipy's pocketfft with all cores. It writes into caller-owned buffers through
  pocketfft's own binding (``scipy.fft._pocketfft.pypocketfft``), so a chain of factors never
  allocates a d x d array per transform; where that binding is missing it falls back to the
  public :mod:`scipy.fft` functions (which allocate their outputs).
- ``"pyfftw"``: FFTW through pyFFTW, planned once per (shape, dtype, axis, direction) and
  multi-threaded; the complex-to-real plan is allowed to destroy its input, which is always a
  work buffer owned by fastdcyk, never the caller's array.
- ``"numpy"``: :mod:`numpy.fft`, single-threaded; a reference, not a contender.

``"auto"`` picks ``"scipy"``: on the 2-core development machine, pocketfft was faster than
FFTW (planned with FFTW_MEASURE) along both axes at d = 6000 (see docs/performance.md).
"""

from __future__ import annotations

import threading
import warnings
from typing import Any

import numpy as np
import scipy.fft

from fastdcyk import threads as _threads

__all__ = [
    "LIBRARIES",
    "FFT",
    "available_ffts",
    "default_threads",
    "get_fft",
    "has_pyfftw",
    "spectrum_dtype",
]

LIBRARIES = ("scipy", "pyfftw", "numpy")

try:  # pragma: no cover - depends on the installed scipy
    from scipy.fft._pocketfft import pypocketfft as _pocketfft

    _POCKETFFT_OUT = hasattr(_pocketfft, "r2c") and hasattr(_pocketfft, "c2r")
except ImportError:  # pragma: no cover
    _pocketfft = None
    _POCKETFFT_OUT = False

# pyFFTW, an optional dependency, is imported on first use (:func:`has_pyfftw`): importing it
# imports dask.array where Dask is installed, a fifth of fastdcyk's import time, which every
# worker process of a corpus would pay for an FFT library it does not use by default
_pyfftw: Any = None
_HAS_PYFFTW: bool | None = None  # None: not tried yet


def _load_pyfftw() -> bool:
    global _pyfftw, _HAS_PYFFTW
    if _HAS_PYFFTW is None:
        try:  # pragma: no cover - optional dependency
            import pyfftw

            _pyfftw, _HAS_PYFFTW = pyfftw, True
        except ImportError:  # pragma: no cover
            _HAS_PYFFTW = False
    return _HAS_PYFFTW


#: Names renamed in 0.4 ("engine" names the package fastdcyk.engine only), refused until 0.5.
RENAMED = {
    "get_engine": "get_fft",
    "available_engines": "available_ffts",
    "FFTEngine": "FFT",
    "ENGINES": "LIBRARIES",
}


def renamed(module: str, name: str) -> AttributeError:
    """The error for a name of :data:`RENAMED` asked of ``module``."""
    if name in RENAMED:
        return AttributeError(
            f"{module}.{name} was renamed {RENAMED[name]} in fastdcyk 0.4 ('engine' names the "
            f"package fastdcyk.engine only; the FFT library is the fft= keyword)"
        )
    return AttributeError(f"module {module!r} has no attribute {name!r}")


def __getattr__(name: str) -> Any:
    raise renamed(__name__, name)


def has_pyfftw() -> bool:
    """Whether pyFFTW can be imported on this platform (imported by the first call)."""
    return _load_pyfftw()


def available_ffts() -> tuple[str, ...]:
    """The names of the FFT libraries usable here, fastest first."""
    return tuple(e for e in LIBRARIES if e != "pyfftw" or has_pyfftw())


def default_threads() -> int:
    """Threads of an FFT built without a count: :func:`fastdcyk.threads.fft_threads`."""
    return _threads.fft_threads()


def spectrum_dtype(dtype: Any) -> np.dtype:
    """The complex dtype of a real dtype's spectrum (float32 -> complex64)."""
    dtype = np.dtype(dtype)
    if dtype == np.float32:
        return np.dtype(np.complex64)
    if dtype == np.float64:
        return np.dtype(np.complex128)
    raise ValueError(f"fastdcyk works in float32 or float64, not {dtype}")


def _spectrum_shape(shape: tuple[int, ...], axis: int) -> tuple[int, ...]:
    out = list(shape)
    out[axis] = shape[axis] // 2 + 1
    return tuple(out)


class FFT:
    """Batched real FFTs along one axis of a 1-D or 2-D array.

    Parameters
    ----------
    threads : int, optional
        Worker threads; by default :func:`fastdcyk.threads.fft_threads`.

    Notes
    -----
    :meth:`irfft` may overwrite its input: callers pass work buffers only.
    """

    name = "base"
    #: Whether :mod:`fastdcyk.hrr.blocks` may call this library on many small column or row
    #: blocks, one thread per call (cheap per call, no per-shape planning, strided outputs).
    blockwise = False

    def __init__(self, threads: int | None = None) -> None:
        bad = isinstance(threads, bool) or not isinstance(threads, int | np.integer | None)
        if bad or (threads is not None and threads < 1):  # 1.5 is refused, not truncated
            raise ValueError(f"threads must be an integer >= 1 or None, got {threads!r}")
        self.threads = default_threads() if threads is None else int(threads)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(threads={self.threads})"

    def __reduce__(self) -> tuple[Any, ...]:
        # FFTs hold plans and locks: a pickled one is looked up again by name.
        return (get_fft, (self.name, self.threads))

    def empty(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        """A new uninitialised buffer suited to this library (aligned where it matters)."""
        return np.empty(shape, dtype=dtype)

    def rfft(
        self, x: np.ndarray, axis: int, out: np.ndarray | None = None, threads: int | None = None
    ) -> np.ndarray:
        """Real-to-complex transform of ``x`` along ``axis``; ``x`` is not modified.

        ``threads`` overrides the FFT's thread count for this call.
        """
        raise NotImplementedError

    def irfft(
        self,
        s: np.ndarray,
        n: int,
        axis: int,
        out: np.ndarray | None = None,
        threads: int | None = None,
    ) -> np.ndarray:
        """Complex-to-real inverse transform (normalised by 1/n); ``s`` may be destroyed.

        ``threads`` overrides the FFT's thread count for this call.
        """
        raise NotImplementedError

    def cfft(self, x: np.ndarray, axis: int, forward: bool = True) -> np.ndarray:
        """Complex transform of ``x`` along ``axis``, in place (the inverse normalised by 1/n).

        ``x`` is a complex work array owned by the caller; it is overwritten and returned.
        The default uses scipy.fft for every library (complex transforms are rare in
        fastdcyk: a few per parse).
        """
        fn = scipy.fft.fft if forward else scipy.fft.ifft
        x[...] = fn(x, axis=axis, workers=self.threads, overwrite_x=True)
        return x


class _ScipyFFT(FFT):
    name = "scipy"
    blockwise = _POCKETFFT_OUT

    def rfft(self, x, axis, out=None, threads=None):
        threads = self.threads if threads is None else threads
        if _POCKETFFT_OUT:
            if out is None:
                out = np.empty(_spectrum_shape(x.shape, axis), spectrum_dtype(x.dtype))
            return _pocketfft.r2c(x, (axis,), True, 0, out, threads)
        res = scipy.fft.rfft(x, axis=axis, workers=threads)
        if out is None:
            return res
        out[...] = res
        return out

    def irfft(self, s, n, axis, out=None, threads=None):
        threads = self.threads if threads is None else threads
        if _POCKETFFT_OUT:
            if out is None:
                shape = list(s.shape)
                shape[axis] = n
                out = np.empty(tuple(shape), np.float32 if s.dtype == np.complex64 else np.float64)
            # inorm=2 divides by n: the inverse of the unnormalised forward transform.
            return _pocketfft.c2r(s, (axis,), n, False, 2, out, threads)
        res = scipy.fft.irfft(s, n=n, axis=axis, workers=threads, overwrite_x=True)
        if out is None:
            return res
        out[...] = res
        return out

    def cfft(self, x, axis, forward=True):
        if _POCKETFFT_OUT:
            return _pocketfft.c2c(x, (axis,), forward, 0 if forward else 2, x, self.threads)
        return super().cfft(x, axis, forward)


class _NumpyFFT(FFT):
    name = "numpy"

    def __init__(self, threads: int | None = None) -> None:
        super().__init__(1 if threads is None else threads)

    def rfft(self, x, axis, out=None, threads=None):
        res = np.fft.rfft(x, n=x.shape[axis], axis=axis)
        # numpy.fft computes in the input's precision (numpy >= 2) or in double; keep ours.
        res = res.astype(spectrum_dtype(x.dtype), copy=False)
        if out is None:
            return res
        out[...] = res
        return out

    def irfft(self, s, n, axis, out=None, threads=None):
        real = np.float32 if s.dtype == np.complex64 else np.float64
        res = np.fft.irfft(s, n=n, axis=axis).astype(real, copy=False)
        if out is None:
            return res
        out[...] = res
        return out


class _PyFFTW(FFT):
    name = "pyfftw"

    def __init__(self, threads: int | None = None, planner: str = "FFTW_MEASURE") -> None:
        if not has_pyfftw():
            raise ImportError("pyFFTW is not installed: pip install pyfftw, or use fft='scipy'")
        super().__init__(threads)
        self.planner = planner
        self._plans: dict[tuple, Any] = {}
        self._lock = threading.Lock()

    def empty(self, shape, dtype):
        return _pyfftw.empty_aligned(shape, dtype=dtype)

    def _plan(self, src: np.ndarray, dst: np.ndarray, axis: int, forward: bool, threads: int):
        aligned = all(a.ctypes.data % _pyfftw.simd_alignment == 0 for a in (src, dst))
        key = (
            src.shape,
            dst.shape,
            src.dtype,
            src.strides,
            dst.strides,
            axis,
            forward,
            aligned,
            threads,
        )
        with self._lock:
            plan = self._plans.get(key)
            if plan is None:
                # Plan on scratch arrays: FFTW_MEASURE overwrites what it plans on.
                a = _pyfftw.empty_aligned(src.shape, dtype=src.dtype)
                b = _pyfftw.empty_aligned(dst.shape, dtype=dst.dtype)
                flags = [self.planner]
                if not forward:
                    flags.append("FFTW_DESTROY_INPUT")
                if not aligned:
                    flags.append("FFTW_UNALIGNED")
                plan = _pyfftw.FFTW(
                    a,
                    b,
                    axes=(axis,),
                    direction="FFTW_FORWARD" if forward else "FFTW_BACKWARD",
                    flags=tuple(flags),
                    threads=threads,
                )
                self._plans[key] = plan
        return plan

    def _run(self, src, dst, axis, forward, threads=None):
        threads = self.threads if threads is None else threads
        # FFTW plans are tied to strides: keep the plan cache small by working on C-contiguous
        # arrays with their canonical strides (a (d, 1) view may count as contiguous with
        # another stride on its length-1 axis) and natural alignment, copying in (and the
        # result out) only when the caller's are not.
        if src.strides != _c_strides(src) or not src.flags.aligned:
            src = src.copy(order="C")
        if dst.strides != _c_strides(dst) or not dst.flags.aligned:
            tmp = self.empty(dst.shape, dst.dtype)
            self._run(src, tmp, axis, forward, threads)
            dst[...] = tmp
            return dst
        plan = self._plan(src, dst, axis, forward, threads)
        with self._lock:
            plan.update_arrays(src, dst)
            plan.execute()
        if not forward:
            # FFTW's backward transform is unnormalised.
            dst *= dst.dtype.type(1.0 / dst.shape[axis])
        return dst

    def rfft(self, x, axis, out=None, threads=None):
        if out is None:
            out = self.empty(_spectrum_shape(x.shape, axis), spectrum_dtype(x.dtype))
        return self._run(x, out, axis, True, threads)

    def irfft(self, s, n, axis, out=None, threads=None):
        shape = list(s.shape)
        shape[axis] = n
        if out is None:
            out = self.empty(tuple(shape), np.float32 if s.dtype == np.complex64 else np.float64)
        return self._run(s, out, axis, False, threads)


def _c_strides(a: np.ndarray) -> tuple[int, ...]:
    strides = []
    step = a.itemsize
    for size in reversed(a.shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


_FFT_CACHE: dict[tuple[str, int | None], FFT] = {}


def get_fft(fft: str | FFT = "auto", threads: int | None = None) -> FFT:
    """The FFT of a library, by name.

    Parameters
    ----------
    fft : {"auto", "scipy", "pyfftw", "numpy"} or FFT
        ``"auto"`` is ``"scipy"`` (measured fastest here). ``"pyfftw"`` falls back to
        ``"scipy"`` with a warning when pyFFTW is not installed.
    threads : int, optional
        Worker threads; by default the setting of :mod:`fastdcyk.threads` (every core
        unless set).

    Returns
    -------
    FFT
        FFTs are cached per (name, threads), so plans are shared.

    Raises
    ------
    ValueError
        For an unknown library name.
    """
    if isinstance(fft, FFT):
        return fft
    name = str(fft).lower()
    if name == "auto":
        name = "scipy"
    if name not in LIBRARIES:
        raise ValueError(f"unknown FFT library {fft!r}: choose one of 'auto', {LIBRARIES}")
    if name == "pyfftw" and not has_pyfftw():
        warnings.warn(
            "pyFFTW is not installed; using scipy.fft instead", RuntimeWarning, stacklevel=2
        )
        name = "scipy"
    # the default count is the setting of the moment (fastdcyk.threads)
    key = (name, _threads.fft_threads() if threads is None else threads)
    got = _FFT_CACHE.get(key)
    if got is None:
        cls = {"scipy": _ScipyFFT, "pyfftw": _PyFFTW, "numpy": _NumpyFFT}[name]
        got = cls(threads)
        _FFT_CACHE[key] = got
    return got

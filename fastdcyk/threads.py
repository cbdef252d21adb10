"""fastdcyk's threads, in one place.

Two things in fastdcyk run on several threads: the FFTs (each FFT has a thread count)
and the Numba kernels (a serial and a parallel build of each). One setting governs both:

- :func:`set_threads` ``(n)``: ``n = 1`` makes new FFTs single-threaded and the
  kernels run their serial builds; ``n > 1`` gives both ``n`` threads; ``0`` or None (the
  default) gives both every core this process may run on (:func:`cores`).
- :func:`limit` ``(n)`` does the same for the duration of a ``with`` block and then puts
  the setting back, so that code that needs one thread (a task of an experiment grid, a
  benchmark) changes nothing for its caller.

Linear algebra (the least-squares read-backs' Gram matrices and solves) runs in the BLAS
library numpy was built with, which keeps a pool of its own, one per process:
:func:`set_threads` sets it too (through threadpoolctl), :func:`limit` leaves it alone.
With BLAS on every core beside fastdcyk's threads, its idle threads spin while the FFTs
and kernels run: on 2 cores an ATIS corpus parsed at d = 128 took a third more time than
with one BLAS thread (docs/performance.md, "A corpus in, trees out").

An FFT keeps the thread count it was built with (FFTs are cached per library and count, so
their plans are shared); a codebook keeps its FFT. So set the threads before building a
codebook, or pass ``threads=`` to :class:`~fastdcyk.Codebook` or :func:`~fastdcyk.get_fft`
for one codebook or FFT. A process pool of one worker per
core sets 1 in every worker, so that workers do not fight over the cores.

The torch backend (``dcyk(..., backend="torch")``) computes with PyTorch's own thread pool,
which fastdcyk leaves alone: set it with ``torch.set_num_threads`` (on a busy machine one
thread is often faster).

Examples
--------
>>> import fastdcyk
>>> with fastdcyk.threads.limit(1):
...     fastdcyk.get_fft("scipy").threads
1
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["cores", "fft_threads", "get_threads", "limit", "set_threads"]

_setting = [0]  # 0: every core; 1: one thread (serial kernels); n > 1: n threads
_local = threading.local()  # .n: the setting of a limit() block in this thread


def cores() -> int:
    """How many cores this process may run on (its CPU affinity, where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _check(n: int | None) -> int:
    n = 0 if n is None else n
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"threads must be None or an integer >= 0, got {n!r}")
    return n


def _numba_threads(n: int) -> None:
    # 1 leaves Numba alone (the kernels run their serial builds); 0 gives it every thread
    # back, restoring what an earlier n > 1 took away. Numba's count is per thread.
    if n != 1:
        import numba

        top = numba.config.NUMBA_NUM_THREADS
        numba.set_num_threads(top if n == 0 else min(n, top))


def _blas_threads(n: int) -> None:
    # BLAS's pools are per process: n threads each (n >= 1), or what they had before
    # fastdcyk first set them (0)
    global _blas_before
    if n == 0 and _blas_before is None:
        return
    from threadpoolctl import threadpool_limits

    if n == 0:
        _blas_before.restore_original_limits()
        _blas_before = None
    elif _blas_before is None:
        _blas_before = threadpool_limits(limits=n, user_api="blas")
    else:
        threadpool_limits(limits=n, user_api="blas")


_blas_before: Any = None  # threadpoolctl's record of BLAS's own thread counts


def set_threads(n: int | None) -> None:
    """Use ``n`` threads for FFTs, kernels and BLAS (None or 0: every core; 1: one thread).

    ``n > 1`` sets Numba's thread count to ``n`` (at most
    ``numba.config.NUMBA_NUM_THREADS``); 0 or None gives Numba all of its threads back; 1
    leaves Numba's count alone (the kernels then run their serial builds). FFTs built
    from then on use ``n`` threads (every core for 0). BLAS's pools (numpy's and scipy's)
    get ``n`` threads, or the counts they had before for 0: they are per process, so a
    :func:`limit` block does not change them. Inside a :func:`limit` block, the block's
    setting applies to its thread until the block ends.

    Raises
    ------
    ValueError
        When ``n`` is not None or an integer >= 0.
    """
    _setting[0] = _check(n)
    _numba_threads(get_threads())
    _blas_threads(_setting[0])


def get_threads() -> int:
    """The setting in this thread (0: every core; 1: one thread; n: n threads)."""
    return getattr(_local, "n", _setting[0])


def fft_threads() -> int:
    """Threads of an FFT built now, in this thread, without an explicit count."""
    return get_threads() or cores()


@contextmanager
def limit(n: int | None) -> Iterator[None]:
    """Use ``n`` threads in this thread inside a ``with`` block, as :func:`set_threads`.

    Only the calling thread is affected, and the setting it had comes back after the block,
    so that blocks nest and threads running blocks at the same time (a dask worker runs
    several tasks in threads) do not disturb each other or the process-wide setting.
    """
    n = _check(n)
    had = getattr(_local, "n", None)
    _local.n = n
    _numba_threads(n)
    try:
        yield
    finally:
        if had is None:
            del _local.n
        else:
            _local.n = had
        _numba_threads(get_threads())

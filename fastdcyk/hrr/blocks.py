"""Cache-blocked application of a factor chain to a dense matrix.

Every factor of an operator acts on each column of ``X`` on its own when applied from the
left (``op @ X``), and on each row on its own when applied from the right (``X @ op``): a
circulant by a real FFT along that axis, a power of Phi by a gather along it. So a whole chain
can run on one block of columns (rows) at a time, all its factors in a row, while the block
sits in a core's L2 cache. The matrix is then read once and the result written once, instead
of one pass through memory per FFT and per gather, and no d x d work buffer is needed at all:
each thread holds one or two real blocks and one spectrum block.

Blocks are spread over the FFT's threads (contiguous runs of blocks per thread, the
calling thread taking the first run); pocketfft and the Numba kernels release the GIL. The
arithmetic per column (row) is that of the whole-matrix path, so the two agree to rounding
(bit for bit in every case compared so far; the tests allow one FFT round trip's rounding).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

import numpy as np

from fastdcyk.hrr import kernels

__all__ = ["BLOCK_BYTES", "ENABLED", "apply_chain", "block_bytes", "block_names", "block_width"]

#: Whether operators use the blocked path where the FFT library allows it (tests switch it
#: off to compare with the whole-matrix path).
ENABLED = True

#: Target bytes of one real block. A thread works on up to two real blocks and a half
#: spectrum of the same size, so about three times this should fit in one core's L2 cache
#: (1 MiB on the development machine). Widths are then rounded to whole SIMD batches of
#: lines (below), so real blocks range from about 0.5x to 1.5x this: 256 KiB at d = 2048,
#: 375 KiB (16 columns) from the left and 188 KiB (8 rows) from the right at d = 6000.
BLOCK_BYTES = 1 << 18

#: Narrowest column block for left application: the blocks are strided views, and their
#: gathers and transforms move whole 64-byte cache lines only from 16 float32 columns on.
MIN_LEFT_WIDTH = 16

#: Blocks hold a multiple of this many lines: pocketfft transforms several lines at once in
#: SIMD registers, and lines left over from a batch go one by one (measured: 10 rows per
#: block at d = 6000 made a right application 1.3x slower than 8 or 16).
LINE_MULTIPLE = 8


def block_width(d: int, k: int, itemsize: int, axis: int) -> int:
    """Columns (axis 0) or rows (axis 1) per block for a chain over a length-d axis.

    A multiple of :data:`LINE_MULTIPLE` (at least :data:`MIN_LEFT_WIDTH` columns from the
    left), or all ``k`` lines when there are fewer.
    """
    w = BLOCK_BYTES // (d * itemsize)
    w = max(MIN_LEFT_WIDTH if axis == 0 else LINE_MULTIPLE, w - w % LINE_MULTIPLE)
    return max(1, min(k, w))


_pools: dict[int, ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()


def _forget_pools() -> None:  # pragma: no cover - runs in forked children
    # A forked child has none of its parent's threads: a pool inherited from the parent
    # would accept work and never run it.
    _pools.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pools)


def _pool(n: int) -> ThreadPoolExecutor:
    with _pools_lock:
        pool = _pools.get(n)
        if pool is None:
            pool = ThreadPoolExecutor(n, thread_name_prefix="fastdcyk-blocks")
            _pools[n] = pool
        return pool


def block_names(t: int) -> tuple[str, str, str]:
    """Work buffers of thread ``t`` of a blocked operator chain (:mod:`fastdcyk.hrr.blocks`):
    two real blocks and a spectrum block, each a slab of a few lines, not d x d."""
    return (f"block-real-{t}", f"block-real-2-{t}", f"block-spectrum-{t}")


def block_bytes(d: int, dtype: Any, threads: int) -> int:
    """Bytes of the blocks of :func:`block_names` for ``threads`` threads: two real blocks
    and a spectrum block per thread, for chains from the left and from the right."""
    item = np.dtype(dtype).itemsize
    total = 0
    for axis in (0, 1):
        w = block_width(d, d, item, axis)
        total += threads * w * (2 * d + 2 * (d // 2 + 1)) * item
    return total


def apply_chain(
    steps: list[tuple[bool, np.ndarray]],
    x: np.ndarray,
    out: np.ndarray,
    axis: int,
    fft: Any,
    buffer: Any,
) -> np.ndarray:
    """Apply ``steps`` (in order) to ``x`` along ``axis``, block by block, into ``out``.

    Parameters
    ----------
    steps : list of (is_circulant, array)
        ``(True, spectrum)``: multiply each line's rfft by ``spectrum`` (already conjugated
        and scaled as the side requires); ``(False, index)``: gather ``line[index]``
        (``index`` an intp array of non-negative entries). At least one step.
    x, out : ndarray
        2-D, same shape and dtype; ``out`` may be ``x`` when the first step is a circulant.
    axis : int
        0: the lines are columns (left application); 1: rows (right application).
    fft : FFT
        One with ``blockwise`` set; called with one thread per block.
    buffer : callable
        ``buffer(name, shape, dtype)`` returning a reusable work buffer (the codebook's).
    """
    # The serial kernels are called directly: give them the unsigned index views that the
    # dispatching wrappers would (no wraparound check per random access).
    steps = [(c, a if c else a.view(np.uintp)) for c, a in steps]
    d = x.shape[axis]
    k = x.shape[1 - axis]
    h = d // 2 + 1
    cdtype = np.result_type(x.dtype, np.complex64)
    width = block_width(d, k, x.dtype.itemsize, axis)
    starts = list(range(0, k, width))
    n = max(1, min(fft.threads, len(starts)))
    runs = [starts[len(starts) * t // n : len(starts) * (t + 1) // n] for t in range(n)]
    if axis == 0:
        rshape, sshape = (d, width), (h, width)
        mul, gather = kernels.spec_mul_axis0.serial, kernels.gather_rows.serial
    else:
        rshape, sshape = (width, d), (width, h)
        mul, gather = kernels.spec_mul_axis1.serial, kernels.gather_cols.serial
    # Destinations, chosen backwards from the last step, which writes the output block: a
    # gather needs a destination other than its source, anything else may reuse scratch
    # block "a". Where a gather writes "a", the step before it writes a second block "b".
    # Where the output block is one contiguous piece of memory (a row block, or a column
    # block that is the whole matrix) it serves as "b"; a strided column block does not (as
    # scratch it cost a left application 1.2x to 1.4x, through cache and TLB misses).
    dest = ["out"] * len(steps)
    for i in range(len(steps) - 1, 0, -1):
        dest[i - 1] = "b" if not steps[i][0] and dest[i] == "a" else "a"
    out_is_b = axis == 1 or len(starts) == 1
    need_b = not out_is_b and "b" in dest
    names = [block_names(t) for t in range(n)]
    bufs = [
        (
            buffer(real, rshape, x.dtype) if "a" in dest else None,
            buffer(real2, rshape, x.dtype) if need_b else None,
            buffer(spectrum, sshape, cdtype),
        )
        for real, real2, spectrum in names
    ]

    def run(t: int) -> None:
        ra, rb, rs = bufs[t]
        for j0 in runs[t]:
            j1 = min(j0 + width, k)
            w = j1 - j0
            if axis == 0:
                src, final = x[:, j0:j1], out[:, j0:j1]
                a = None if ra is None else ra[:, :w]
                b = final if rb is None else rb[:, :w]
                s = rs[:, :w]
            else:
                src, final = x[j0:j1], out[j0:j1]
                a = None if ra is None else ra[:w]
                b, s = final, rs[:w]
            for (is_circ, arg), where in zip(steps, dest, strict=True):
                dst = final if where == "out" else (a if where == "a" else b)
                if is_circ:
                    fft.rfft(src, axis, out=s, threads=1)
                    mul(s, arg)
                    fft.irfft(s, d, axis, out=dst, threads=1)
                else:
                    gather(src, arg, dst)
                src = dst

    if n == 1:
        run(0)
        return out
    pool = _pool(fft.threads - 1)  # one pool per thread count, whatever n is this time
    futures = [pool.submit(run, t) for t in range(1, n)]
    try:
        run(0)
    finally:
        wait(futures)  # the workers write into out and the buffers: never leave them running
    for f in futures:
        f.result()  # re-raise a worker's exception
    return out

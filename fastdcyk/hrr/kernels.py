"""Numba kernels for the elementwise and reduction work around the FFTs.

Each kernel has a numpy twin (``*_numpy``) that states what it computes; the tests check the
two agree and ``benchmarks/bench_kernels.py`` measures which is faster. The operator layer
uses the faster one (recorded in docs/performance.md). Reductions over d or d^2 terms
accumulate in float64 whatever the input dtype (that concerns length-d vectors only, never a
d x d array), except :func:`row_dots`, whose products are summed in the inputs' precision by
blocks of :data:`ROW_BLOCK`, the blocks' sums in complex128 (about 1e-7 relative for
complex64 inputs).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from fastdcyk.threads import get_threads, set_threads

__all__ = [
    "PARALLEL_MIN_SIZE",
    "runs_parallel",
    "get_threads",
    "set_threads",
    "circulant_times_diag",
    "circulant_times_diag_numpy",
    "diag_of_product",
    "diag_of_product_numpy",
    "gather_cols",
    "gather_cols_numpy",
    "gather_rows",
    "gather_rows_numpy",
    "sigmoid_numpy",
    "spec_mul_axis0",
    "spec_mul_axis0_numpy",
    "spec_mul_axis1",
    "spec_mul_axis1_numpy",
    "spec_mul_into_axis1",
    "spec_mul_into_axis1_numpy",
    "spec_madd_axis1",
    "spec_madd_axis1_numpy",
    "diag_times_circulant",
    "diag_times_circulant_numpy",
    "rows_circulant",
    "rows_circulant_numpy",
    "row_dots",
    "row_dots_numpy",
    "outer_madd",
    "outer_madd_numpy",
    "spectral_diag",
    "spectral_diag_numpy",
    "wrapped_diag_sums",
    "wrapped_diag_sums_numpy",
]

_JIT = {"cache": True, "nogil": True}

#: Arrays with fewer elements than this use the serial build of a kernel: below it, waking
#: Numba's thread pool costs more than it saves, and much more when the cores are busy.
PARALLEL_MIN_SIZE = 1 << 21


def runs_parallel(size: int) -> bool:
    """Whether a kernel whose largest array has ``size`` elements runs its parallel build
    (:data:`PARALLEL_MIN_SIZE`, and more than one thread allowed)."""
    return size >= PARALLEL_MIN_SIZE and get_threads() != 1


def _dual(fn, unsigned_indices: bool = False, reassociate: bool = False):
    """Compile ``fn`` serially and in parallel; dispatch on the size of its largest array.

    With ``reassociate``, the compiler may reorder the kernel's sums (LLVM's ``reassoc``
    flag only: no other fast-math liberty), so that a reduction over a row is vectorised:
    :func:`row_dots` runs 3.6 times faster at d = 1024 (docs/performance.md), its sums
    rounded in another order (about 1e-16 relative in complex128).

    With ``unsigned_indices``, index arrays are passed as unsigned views (they are
    non-negative): Numba then skips its negative-index wraparound check on every random
    access, about 30% of a column gather at d = 6000. Only for kernels that index with the
    array's values directly: unsigned arithmetic with signed ints would turn into floats.
    """
    jit = dict(_JIT, fastmath={"reassoc"}) if reassociate else _JIT
    serial = njit(**jit)(fn)
    parallel = njit(parallel=True, **jit)(fn)

    def kernel(*args):
        if unsigned_indices:
            args = tuple(
                a.view(np.uintp) if isinstance(a, np.ndarray) and a.dtype == np.intp else a
                for a in args
            )
        size = max(a.size for a in args if isinstance(a, np.ndarray))
        if runs_parallel(size):
            return parallel(*args)
        return serial(*args)

    kernel.__name__ = fn.__name__.removeprefix("_").removesuffix("_py")
    kernel.__doc__ = fn.__doc__
    kernel.serial = serial
    kernel.parallel = parallel
    return kernel


def _gather_rows_py(x, idx, out):  # pragma: no cover - compiled
    """out[r, :] = x[idx[r], :]."""
    # An explicit loop, not a slice assignment: on the strided column blocks of
    # fastdcyk.hrr.blocks, Numba's slice copy was 1.3x slower (a whole chain at d = 6000).
    m = out.shape[1]
    for r in prange(idx.shape[0]):
        src = x[idx[r]]
        dst = out[r]
        for c in range(m):
            dst[c] = src[c]
    return out


def gather_rows_numpy(x, idx, out):
    return np.take(x, idx, axis=0, out=out)


def _gather_cols_py(x, idx, out):  # pragma: no cover - compiled
    """out[:, c] = x[:, idx[c]]."""
    m = idx.shape[0]
    for r in prange(x.shape[0]):
        row = x[r]
        orow = out[r]
        for c in range(m):
            orow[c] = row[idx[c]]
    return out


def gather_cols_numpy(x, idx, out):
    return np.take(x, idx, axis=1, out=out)


def _spec_mul_axis0_py(s, spec):  # pragma: no cover - compiled
    """``s[f, :] *= spec[f]``, in place (a spectrum taken along axis 0)."""
    for f in prange(s.shape[0]):
        c = spec[f]
        row = s[f]
        for k in range(row.shape[0]):
            row[k] *= c
    return s


def spec_mul_axis0_numpy(s, spec):
    return np.multiply(s, spec[:, None], out=s)


def _spec_mul_axis1_py(s, spec):  # pragma: no cover - compiled
    """``s[:, f] *= spec[f]``, in place (a spectrum taken along axis 1)."""
    for r in prange(s.shape[0]):
        row = s[r]
        for f in range(row.shape[0]):
            row[f] *= spec[f]
    return s


def spec_mul_axis1_numpy(s, spec):
    return np.multiply(s, spec[None, :], out=s)


def sigmoid_numpy(x, beta, center):
    t = x.dtype.type
    with np.errstate(over="ignore"):
        np.subtract(x, t(center), out=x)
        np.multiply(x, t(-beta), out=x)
        np.exp(x, out=x)
        np.add(x, t(1.0), out=x)
        np.reciprocal(x, out=x)
    return x


_BLOCK = 64


def _diag_of_product_py(y, z, out):  # pragma: no cover - compiled
    """out[r] = sum_k conj(y[r, k]) * z[k, r] (conj is the identity on real arrays).

    For real arrays this is diag(y @ z); it is accumulated in out's dtype (float64 or
    complex128). Rows are taken in blocks so that z[k, block] is read contiguously.
    """
    n, m = y.shape
    nblocks = (n + _BLOCK - 1) // _BLOCK
    for b in prange(nblocks):
        r0 = b * _BLOCK
        r1 = min(n, r0 + _BLOCK)
        acc = np.zeros(r1 - r0, dtype=out.dtype)
        for k in range(m):
            zk = z[k]
            for r in range(r0, r1):
                acc[r - r0] += np.conj(y[r, k]) * zk[r]
        for r in range(r0, r1):
            out[r] = acc[r - r0]
    return out


def diag_of_product_numpy(y, z, out):
    out[:] = np.einsum("rk,kr->r", y, z, dtype=np.float64)
    return out


def _circulant_times_diag_py(v, p, rowidx, shift, out):  # pragma: no cover - compiled
    """out[r, c] = v[(rowidx[r] - shift[c]) mod d] * p[c].

    With rowidx = shift = arange(d) this is C(v) @ diag(p); other index arrays fold a
    permutation on either side in: Phi^a C(v) Phi^b diag(p) in O(d^2) and no FFT.
    """
    d = v.shape[0]
    for r in prange(d):
        orow = out[r]
        base = rowidx[r]
        for c in range(d):
            k = base - shift[c]
            if k < 0:
                k += d
            orow[c] = v[k] * p[c]
    return out


def circulant_times_diag_numpy(v, p, rowidx, shift, out):
    d = v.shape[0]
    idx = (rowidx[:, None] - shift[None, :]) % d
    np.multiply(v[idx], p[None, :], out=out)
    return out


def _spectral_diag_py(yhat, coef, ghat, out):  # pragma: no cover - compiled
    """out[r] = Re sum_f yhat[r, f] * coef[f] * conj(ghat[f, r]), accumulated in float64.

    With yhat = rfft(Y, axis=1), ghat = rfft(G, axis=0) and coef = w * conj(V) / d (w the
    Parseval weights of the half spectrum), this is diag(Y C G) for the circulant C of
    spectrum V: the diagonal of a product of two dense matrices and a circulant in O(d^2).
    """
    n, m = yhat.shape
    nblocks = (n + _BLOCK - 1) // _BLOCK
    for b in prange(nblocks):
        r0 = b * _BLOCK
        r1 = min(n, r0 + _BLOCK)
        acc = np.zeros(r1 - r0, dtype=np.float64)
        for f in range(m):
            c = coef[f]
            gf = ghat[f]
            for r in range(r0, r1):
                v = yhat[r, f] * c * np.conj(gf[r])
                acc[r - r0] += v.real
        for r in range(r0, r1):
            out[r] = acc[r - r0]
    return out


def spectral_diag_numpy(yhat, coef, ghat, out):
    out[:] = np.einsum("rf,f,fr->r", yhat, coef, np.conj(ghat)).real
    return out


def _spec_mul_into_axis1_py(s, spec, out):  # pragma: no cover - compiled
    """out[:, f] = s[:, f] * spec[f] (an axis-1 spectrum times a circulant's, into out)."""
    for r in prange(s.shape[0]):
        row = s[r]
        orow = out[r]
        for f in range(row.shape[0]):
            orow[f] = row[f] * spec[f]
    return out


def spec_mul_into_axis1_numpy(s, spec, out):
    return np.multiply(s, spec[None, :], out=out)


def _spec_madd_axis1_py(acc, s, spec):  # pragma: no cover - compiled
    """acc[:, f] += s[:, f] * spec[f], in place."""
    for r in prange(s.shape[0]):
        row = s[r]
        arow = acc[r]
        for f in range(row.shape[0]):
            arow[f] += row[f] * spec[f]
    return acc


def spec_madd_axis1_numpy(acc, s, spec):
    acc += s * spec[None, :]
    return acc


def _diag_times_circulant_py(v, p, rowidx, shift, out):  # pragma: no cover - compiled
    """out[r, c] = p[r] * v[(rowidx[r] - shift[c]) mod d]: diag(p) @ Phi^a C(v) Phi^b."""
    d = v.shape[0]
    for r in prange(d):
        orow = out[r]
        base = rowidx[r]
        pr = p[r]
        for c in range(d):
            k = base - shift[c]
            if k < 0:
                k += d
            orow[c] = pr * v[k]
    return out


def diag_times_circulant_numpy(v, p, rowidx, shift, out):
    d = v.shape[0]
    idx = (rowidx[:, None] - shift[None, :]) % d
    np.multiply(p[:, None], v[idx], out=out)
    return out


def _rows_circulant_py(b, rowidx, shift, out):  # pragma: no cover - compiled
    """out[r, c] = b[r, (rowidx[r] - shift[c]) mod d]: row r of b laid out as a circulant's.

    With ``b = P^T V`` (row r holds sum_A p_A[r] v_A) this is sum_A diag(p_A) Phi^a C(v_A)
    Phi^b for every A at once: the diagonal gates of a whole cell against their
    nonterminals' circulants, in O(d^2) after one matrix product.
    """
    d = b.shape[1]
    for r in prange(b.shape[0]):
        orow = out[r]
        brow = b[r]
        base = rowidx[r]
        for c in range(d):
            k = base - shift[c]
            if k < 0:
                k += d
            orow[c] = brow[k]
    return out


def rows_circulant_numpy(b, rowidx, shift, out):
    d = b.shape[1]
    idx = (rowidx[:, None] - shift[None, :]) % d
    out[...] = np.take_along_axis(b, idx, axis=1)
    return out


#: :func:`row_dots`' partial sums: blocks of this many terms in the inputs' precision, the
#: blocks' sums in complex128 (a block of constant length is what the compiler vectorises).
ROW_BLOCK = 64


def _row_dots_py(a, b, u, out):  # pragma: no cover - compiled
    """out[f] = sum_g a[f, g] * b[f, g] * u[g]: the products in the inputs' precision,
    summed by blocks of :data:`ROW_BLOCK`, the blocks' sums in complex128.

    With a and b two 2-D spectra and u a diagonal, this is the diagonal of a product of
    spectra, e.g. tr(D Z~ diag(R) P~) = sum_f R[f] out[f]: a trace of a product of dense
    matrices and circulants in O(d^2), no FFT.
    """
    m = a.shape[1]
    # a zero of the products' type (complex64 for complex64 inputs)
    zero = np.zeros(1, a.dtype)[0] * np.zeros(1, b.dtype)[0] * np.zeros(1, u.dtype)[0]
    full = m // ROW_BLOCK
    for f in prange(a.shape[0]):
        ar = a[f]
        br = b[f]
        acc = 0j
        for blk in range(full):
            s = zero
            for g in range(blk * ROW_BLOCK, blk * ROW_BLOCK + ROW_BLOCK):
                s += ar[g] * br[g] * u[g]
            acc += s
        s = zero
        for g in range(full * ROW_BLOCK, m):
            s += ar[g] * br[g] * u[g]
        out[f] = acc + s
    return out


def row_dots_numpy(a, b, u, out):
    out[:] = np.einsum("fg,fg,g->f", a.astype(np.complex128), b, u)
    return out


def _outer_madd_py(acc, left, m, right, conj_m):  # pragma: no cover - compiled
    """acc[f, g] += left[f] * m[f, g] * right[g] (``conj(m[f, g])`` when ``conj_m``), in place.

    A 2-D spectrum multiplied by circulants on both sides: diag(left) M~ diag(right).
    """
    n = acc.shape[1]
    for f in prange(acc.shape[0]):
        arow = acc[f]
        mrow = m[f]
        lf = left[f]
        if conj_m:
            for g in range(n):
                arow[g] += lf * np.conj(mrow[g]) * right[g]
        else:
            for g in range(n):
                arow[g] += lf * mrow[g] * right[g]
    return acc


def outer_madd_numpy(acc, left, m, right, conj_m):
    mm = np.conj(m) if conj_m else m
    acc += left[:, None] * mm * right[None, :]
    return acc


def _wrapped_diag_sums_py(x, rowidx, colidx, out):  # pragma: no cover - compiled
    """out[m] = sum_k Z[k, (k + m) mod d] with Z[k, c] = x[rowidx[k], colidx[c]].

    With these sums, tr(C(v) @ Z) = sum_m v[m] * out[m]: the trace of a circulant times a
    (gathered) matrix in O(d^2) and no d x d product. Row blocks are summed in parallel into
    private float64 accumulators.
    """
    d = x.shape[0]
    nthreads = 16
    partial = np.zeros((nthreads, d), dtype=np.float64)
    chunk = (d + nthreads - 1) // nthreads
    for t in prange(nthreads):
        k0 = t * chunk
        k1 = min(d, k0 + chunk)
        acc = partial[t]
        for k in range(k0, k1):
            row = x[rowidx[k]]
            for c in range(d):
                m = c - k
                if m < 0:
                    m += d
                acc[m] += row[colidx[c]]
    for m in range(d):
        s = 0.0
        for t in range(nthreads):
            s += partial[t, m]
        out[m] = s
    return out


def wrapped_diag_sums_numpy(x, rowidx, colidx, out):
    d = x.shape[0]
    z = x[rowidx][:, colidx].astype(np.float64)
    k = np.arange(d)
    for m in range(d):
        out[m] = z[k, (k + m) % d].sum()
    return out


gather_rows = _dual(_gather_rows_py, unsigned_indices=True)
gather_cols = _dual(_gather_cols_py, unsigned_indices=True)
spec_mul_axis0 = _dual(_spec_mul_axis0_py)
spec_mul_axis1 = _dual(_spec_mul_axis1_py)
diag_of_product = _dual(_diag_of_product_py)
circulant_times_diag = _dual(_circulant_times_diag_py)
wrapped_diag_sums = _dual(_wrapped_diag_sums_py)
spectral_diag = _dual(_spectral_diag_py)
spec_mul_into_axis1 = _dual(_spec_mul_into_axis1_py)
spec_madd_axis1 = _dual(_spec_madd_axis1_py)
diag_times_circulant = _dual(_diag_times_circulant_py)
rows_circulant = _dual(_rows_circulant_py)
row_dots = _dual(_row_dots_py, reassociate=True)
outer_madd = _dual(_outer_madd_py, reassociate=True)

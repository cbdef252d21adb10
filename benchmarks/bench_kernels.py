"""Each Numba kernel (serial and parallel builds) against its numpy twin.

    FASTDCYK_BENCH_LARGE=1 .venv/bin/python -m pytest benchmarks/bench_kernels.py \
        --benchmark-enable --benchmark-group-by=group,param --benchmark-sort=name

The public kernel name dispatches to the parallel build for arrays of at least
``_kernels.PARALLEL_MIN_SIZE`` elements (d = 2048 and 6000 are above it).
"""

from __future__ import annotations

import numpy as np
import pytest

from fastdcyk.hrr import kernels

IMPLS = ("numba-serial", "numba-parallel", "numpy")


def _impl(name: str, impl: str):
    if impl == "numpy":
        return getattr(kernels, f"{name}_numpy")
    return getattr(getattr(kernels, name), impl.removeprefix("numba-"))


def _args(name: str, d: int):
    """Fresh inputs for a kernel at size d (float32, complex64 spectra)."""
    rng = np.random.default_rng(d)
    x = rng.standard_normal((d, d)).astype(np.float32)
    idx = rng.permutation(d)
    h = d // 2 + 1
    if name in ("gather_rows", "gather_cols"):
        return (x, idx, np.empty_like(x))
    if name == "spec_mul_axis0":
        # Unit-magnitude spectrum: repeated in-place rounds neither overflow nor vanish.
        s = np.exp(1j * rng.uniform(0, 2 * np.pi, (h, d))).astype(np.complex64)
        return (s, np.exp(1j * rng.uniform(0, 2 * np.pi, h)).astype(np.complex64))
    if name == "spec_mul_axis1":
        s = np.exp(1j * rng.uniform(0, 2 * np.pi, (d, h))).astype(np.complex64)
        return (s, np.exp(1j * rng.uniform(0, 2 * np.pi, h)).astype(np.complex64))
    if name == "diag_of_product":
        return (x, rng.standard_normal((d, d)).astype(np.float32), np.empty(d))
    if name == "circulant_times_diag":
        v = x[0].copy()
        return (v, x[1].copy(), idx, rng.permutation(d), np.empty_like(x))
    if name in ("row_dots", "outer_madd"):
        a = np.exp(1j * rng.uniform(0, 2 * np.pi, (h, d))).astype(np.complex64)
        u = np.exp(1j * rng.uniform(0, 2 * np.pi, d)).astype(np.complex64)
        if name == "row_dots":
            return (a, a.copy(), u, np.empty(h, np.complex128))
        return (a, u[:h].copy(), a.copy(), u, False)
    if name == "rows_circulant":
        return (x, idx, rng.permutation(d), np.empty_like(x))
    if name == "wrapped_diag_sums":
        return (x, idx, rng.permutation(d), np.empty(d))
    raise ValueError(name)


KERNELS = (
    "gather_rows",
    "gather_cols",
    "spec_mul_axis0",
    "spec_mul_axis1",
    "diag_of_product",
    "row_dots",
    "outer_madd",
    "rows_circulant",
    "circulant_times_diag",
    "wrapped_diag_sums",
)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("kernel", KERNELS)
def test_kernel(benchmark, kernel, impl, d_kernel):
    benchmark.group = f"kernel {kernel} d={d_kernel}"
    fn = _impl(kernel, impl)
    args = _args(kernel, d_kernel)
    fn(*args)  # warm-up: compilation (or the cache load) happens here, not in the timing
    if kernel == "wrapped_diag_sums" and impl == "numpy":
        # A Python loop over d fancy-indexed sums: seconds at d = 6000.
        result = benchmark.pedantic(fn, args=args, rounds=3, iterations=1)
    else:
        result = benchmark(fn, *args)
    assert np.all(np.isfinite(result))

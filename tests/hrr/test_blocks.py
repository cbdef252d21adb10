"""The cache-blocked application path (fastdcyk.hrr.blocks) against the whole-matrix path.

The blocked path runs a whole chain on one block of columns (left) or rows (right) at a time,
spread over threads. Per column (row) it does the same arithmetic as the whole-matrix path,
so the two must agree to the rounding of one FFT round trip per circulant; they are also
checked against float64 dense matrices. Blocks are made small here (``BLOCK_BYTES`` patched)
so that small matrices still split into several blocks, with a partial last block, over
several threads.
"""

from __future__ import annotations

import multiprocessing
import sys
import threading

import numpy as np
import pytest
import scipy.linalg

from fastdcyk.hrr import blocks as _blocks
from fastdcyk.hrr import kernels
from fastdcyk.hrr.codebook import Codebook

DTYPES = (np.float32, np.float64)


def tol(dtype, d: int, m: int) -> float:
    # An FFT round trip per circulant: relative error of order eps * log2(d) (see
    # tests/hrr/test_operators.py for the constant).
    return 50 * np.finfo(dtype).eps * max(1.0, np.log2(d)) * max(1, m)


def dense(cb: Codebook, op) -> np.ndarray:
    """The operator's float64 matrix from its factors (circulants and permutation powers)."""
    d = cb.d
    m = np.eye(d) * op.scale
    for f in reversed(op.factors):
        if isinstance(f, np.ndarray):
            col = np.fft.irfft(f.astype(np.complex128), n=d)
            m = scipy.linalg.circulant(col) @ m
        else:
            m = m[cb.permutation_index(f)]
    return m


def chains(cb: Codebook):
    a, b, c = (cb.plus("terminal", s) for s in "abc")
    return {
        "[a]+[b]+[c]+": a @ b @ c,
        "one circulant": cb.circulant(cb.vector("terminal", "a")),
        "Phi C (gather first from the left)": cb.phi() @ cb.circulant(cb.vector("index", 2)),
        "2.5 [a]- [b]+ [i]-": 2.5 * (cb.minus("terminal", "a") @ b @ cb.minus("index", 1)),
        "C Phi^-2 C": cb.circulant(cb.vector("index", 0))
        @ cb.phi(-2)
        @ cb.circulant(cb.vector("index", 1)),
    }


@pytest.fixture
def small_blocks(monkeypatch):
    # The narrowest blocks allowed: 16 columns (left) or 8 rows (right) whatever d is.
    monkeypatch.setattr(_blocks, "BLOCK_BYTES", 1)


@pytest.fixture
def calls(monkeypatch):
    """Counts the calls of the blocked path."""
    seen = []
    real = _blocks.apply_chain

    def spy(*args, **kw):
        seen.append(args[3])  # the axis
        return real(*args, **kw)

    monkeypatch.setattr(_blocks, "apply_chain", spy)
    return seen


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("d", [7, 64, 100])
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("side", ["left", "right"])
def test_blocked_agrees_with_whole_path_and_dense(
    dtype, d, threads, side, small_blocks, calls, monkeypatch
):
    cb = Codebook(d, seed=3, dtype=dtype, threads=threads)
    k = 53  # 16 + 16 + 16 + 5 columns, or 8 * 6 + 5 rows: a partial last block
    shape = (d, k) if side == "left" else (k, d)
    x = np.random.default_rng(d).standard_normal(shape).astype(dtype)
    x0 = x.copy()
    for name, op in chains(cb).items():
        got = op.apply(x, side)
        assert calls and calls[-1] == (0 if side == "left" else 1), name
        np.testing.assert_array_equal(x, x0, err_msg=f"{name}: input modified")
        with monkeypatch.context() as m:
            m.setattr(_blocks, "ENABLED", False)
            whole = op.apply(x, side)
        ref = (
            dense(cb, op) @ x.astype(np.float64)
            if side == "left"
            else (x.astype(np.float64) @ dense(cb, op))
        )
        scale = max(1.0, float(np.abs(ref).max()), float(np.abs(x).max()))
        n = max(1, op.n_circulants)
        assert np.abs(got - whole).max() <= tol(dtype, d, n) * scale, name
        assert np.abs(got - ref).max() <= tol(dtype, d, n) * scale, name


@pytest.mark.parametrize("side", ["left", "right"])
def test_blocked_in_place_over_several_blocks(side, small_blocks):
    d = 64
    cb = Codebook(d, seed=1, dtype=np.float64, threads=2)
    # In place is allowed when the first factor applied is a circulant.
    op = cb.plus("terminal", "a") @ cb.circulant(cb.vector("terminal", "b"))
    if side == "right":
        op = op.T
    x = np.random.default_rng(0).standard_normal((d, 70) if side == "left" else (70, d))
    want = op.apply(x, side)
    y = x.copy()
    assert op.apply(y, side, out=y) is y
    np.testing.assert_allclose(y, want, rtol=0, atol=1e-12 * np.abs(want).max())


@pytest.mark.parametrize("side", ["left", "right"])
def test_blocked_strided_input_and_output(side, small_blocks):
    d = 100
    cb = Codebook(d, seed=2, dtype=np.float32, threads=2)
    op = cb.plus("terminal", "a") @ cb.minus("index", 4)
    big = np.random.default_rng(1).standard_normal((2 * d, 2 * d)).astype(np.float32)
    x = big[::2, 1::2]  # strided both ways
    out = np.empty((d, d), np.float32, order="F")
    got = op.apply(x, side, out=out)
    assert got is out
    want = op.apply(np.ascontiguousarray(x), side)
    np.testing.assert_allclose(out, want, rtol=0, atol=tol(np.float32, d, 1) * 4)


def test_other_libraries_take_the_whole_path(calls):
    d = 64
    x = np.random.default_rng(0).standard_normal((d, d))
    for library in ("numpy",):
        cb = Codebook(d, seed=0, dtype=np.float64, fft=library)
        assert not cb.fft.blockwise
        cb.plus("terminal", "a").apply(x)
    assert calls == []
    Codebook(d, seed=0, dtype=np.float64).plus("terminal", "a").apply(x)
    assert calls == [0]


def test_a_pure_permutation_is_one_gather_not_blocked(calls):
    cb = Codebook(16, seed=0, dtype=np.float64)
    x = np.arange(16.0 * 3).reshape(16, 3)
    np.testing.assert_array_equal(cb.phi().apply(x), x[cb.perm])
    assert calls == []


def test_block_width():
    for d in (1, 7, 64, 2048, 6000, 100_000):
        for item in (4, 8):
            for axis in (0, 1):
                for k in (1, 5, 16, 1000, 6000):
                    w = _blocks.block_width(d, k, item, axis)
                    assert 1 <= w <= k
                    if w < k:  # a full block: a multiple of the SIMD batch of lines
                        assert w % _blocks.LINE_MULTIPLE == 0
                        assert w >= (_blocks.MIN_LEFT_WIDTH if axis == 0 else 1)
    # At the sizes that matter, a block of real data is about BLOCK_BYTES.
    assert _blocks.block_width(2048, 2048, 4, 0) * 2048 * 4 == _blocks.BLOCK_BYTES
    assert _blocks.block_width(6000, 6000, 4, 1) * 6000 * 4 <= _blocks.BLOCK_BYTES


def test_a_worker_error_reaches_the_caller(small_blocks, monkeypatch):
    d = 64
    cb = Codebook(d, seed=0, dtype=np.float64, threads=2)
    op = cb.plus("terminal", "a")
    x = np.random.default_rng(0).standard_normal((d, d))
    real = kernels.gather_rows.serial
    main = threading.get_ident()

    def failing(src, idx, dst):
        if threading.get_ident() != main:
            raise RuntimeError("worker failed")
        return real(src, idx, dst)

    monkeypatch.setattr(kernels.gather_rows, "serial", failing)
    with pytest.raises(RuntimeError, match="worker failed"):
        op.apply(x)
    monkeypatch.setattr(kernels.gather_rows, "serial", real)
    # The pool is still usable afterwards.
    np.testing.assert_allclose(op.apply(x), dense(cb, op) @ x, atol=1e-10)


def _child(conn):  # pragma: no cover - runs in a forked child
    cb = Codebook(64, seed=0, dtype=np.float64, threads=2)
    x = np.random.default_rng(0).standard_normal((64, 64))
    conn.send(cb.plus("terminal", "a").apply(x))
    conn.close()


@pytest.mark.skipif(sys.platform != "linux", reason="fork start method")
def test_blocked_path_works_in_a_forked_child(small_blocks):
    cb = Codebook(64, seed=0, dtype=np.float64, threads=2)
    x = np.random.default_rng(0).standard_normal((64, 64))
    want = cb.plus("terminal", "a").apply(x)  # the parent's pool now has a live thread
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe()
    p = ctx.Process(target=_child, args=(child,))
    p.start()
    try:
        assert parent.poll(60), "the forked child did not answer: its thread pool hangs"
        got = parent.recv()
    finally:
        p.join(30)
        if p.is_alive():
            p.kill()
    assert p.exitcode == 0
    np.testing.assert_array_equal(got, want)


def test_threads_sharing_one_codebook_get_correct_results(small_blocks):
    # The work buffers are the codebook's: concurrent calls must take turns, not mix data.
    d = 128
    cb = Codebook(d, seed=5, dtype=np.float64, threads=2)
    ops = [cb.plus("terminal", s) @ cb.minus("index", i) for i, s in enumerate("abcd")]
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((d, 40)) for _ in ops]
    want = [op.apply(x) for op, x in zip(ops, xs, strict=True)]
    want_r = [x.T @ op for op, x in zip(ops, xs, strict=True)]
    bad = []
    start = threading.Barrier(len(ops))

    def worker(t):
        start.wait()
        for _ in range(30):
            if not np.array_equal(ops[t].apply(xs[t]), want[t]):
                bad.append(("left", t))
            if not np.array_equal(xs[t].T @ ops[t], want_r[t]):
                bad.append(("right", t))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(len(ops))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert bad == []


def test_one_pool_per_thread_count(small_blocks):
    d = 64
    cb = Codebook(d, seed=0, dtype=np.float64, threads=5)
    op = cb.plus("terminal", "a")
    before = dict(_blocks._pools)
    for k in range(1, 16 * 6, 5):  # 1 to 6 blocks of 16 columns: 1 to 5 threads at work
        op @ np.ones((d, k))
    new = set(_blocks._pools) - set(before)
    assert new <= {4}  # one pool of threads - 1 workers


def _child_apply(conn):  # pragma: no cover - runs in a forked child
    cb, op, x = _FORK_STATE
    conn.send(op.apply(x))
    conn.close()


_FORK_STATE: tuple = ()


@pytest.mark.skipif(sys.platform != "linux", reason="fork start method")
def test_fork_while_another_thread_holds_the_codebook():
    # A thread of the parent is inside a call on the codebook (it holds its lock) when the
    # process forks: the child has no such thread, so its copy of the lock must be free.
    global _FORK_STATE
    cb = Codebook(64, seed=0, dtype=np.float64, threads=1)
    op = cb.plus("terminal", "a")
    x = np.random.default_rng(0).standard_normal((64, 64))
    want = op.apply(x)
    _FORK_STATE = (cb, op, x)
    held, release = threading.Event(), threading.Event()

    def holder():
        with cb.lock:
            held.set()
            release.wait(120)

    th = threading.Thread(target=holder)
    th.start()
    held.wait(30)
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe()
    p = ctx.Process(target=_child_apply, args=(child,))
    try:
        p.start()
        assert parent.poll(60), "the forked child hangs on the codebook's lock"
        got = parent.recv()
    finally:
        release.set()
        th.join()
        p.join(30)
        if p.is_alive():
            p.kill()
    np.testing.assert_array_equal(got, want)

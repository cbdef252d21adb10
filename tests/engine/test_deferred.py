"""A numpy parse's dense P_left made when first asked for (fastdcyk.engine.core.deferred).

The trace and clean-up parsers read their charts from the table's spectrum; the result
keeps the spectrum and makes the dense P_left (and the never-written P_right) on first
access. The arrays must be those the parse made before, bit for bit; an error in the table
must still be the parse's.
"""

from __future__ import annotations

import pickle
import threading

import numpy as np
import pytest

import fastdcyk as fd
from fastdcyk.engine.backends.numpy import driver as numpy_driver
from fastdcyk.engine.backends.numpy import spectral as numpy_spectral
from fastdcyk.engine.core.deferred import DeferredArray, resolve
from fastdcyk.engine.modes.cleanup.numpy_parser import NumpyCleanupParser
from fastdcyk.hrr import buffers

WORDS = "fish swim near fish"


def parse(variant: str, deferred: bool, **options) -> fd.DCYKResult:
    old = numpy_spectral.NumpySpectralParser.defers_dense
    numpy_spectral.NumpySpectralParser.defers_dense = deferred
    try:
        return fd.dcyk(fd.Grammar.builtin("G2"), WORDS, d=128, variant=variant, **options)
    finally:
        numpy_spectral.NumpySpectralParser.defers_dense = old


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("variant", ["cleanup", "trace"])
def test_the_deferred_matrices_are_the_eager_ones(variant, dtype):
    lazy, eager = parse(variant, True, dtype=dtype), parse(variant, False, dtype=dtype)
    assert isinstance(lazy.__dict__["_p_left"], DeferredArray)  # not made by the parse
    assert not isinstance(eager.__dict__["_p_left"], DeferredArray)
    for name in ("p_left", "p_right"):
        a, b = getattr(lazy, name), getattr(eager, name)
        assert a.dtype == b.dtype == np.dtype(dtype) and a.shape == (128, 128)
        np.testing.assert_array_equal(a, b)
        assert getattr(lazy, name) is a  # made once, then kept
    assert lazy.chart == eager.chart


def test_the_paper_variant_is_never_deferred():
    r = fd.dcyk(fd.Grammar.builtin("G0"), WORDS, d=64, variant="paper")
    assert not isinstance(r.__dict__["_p_left"], DeferredArray)


def test_a_pickled_result_carries_the_array():
    lazy = parse("cleanup", True)
    back = pickle.loads(pickle.dumps(lazy))
    assert isinstance(back.__dict__["_p_left"], np.ndarray)
    np.testing.assert_array_equal(back.p_left, lazy.p_left)


def test_the_matrix_decodes_to_the_chart():
    """The deferred P_left is the table: the read-back of it gives the parse's chart."""
    r = parse("cleanup", True, readback="lstsq")
    g = fd.Grammar.builtin("G2")
    assert fd.decode(r.p_left, g, codebook=r.codebook, words=WORDS, readback="lstsq") == r.chart


def test_a_non_finite_table_is_the_parse_error(monkeypatch):
    """The spectrum a deferred P_left keeps is checked by the parse, as the dense matrix
    was: an overflow is reported there, not at a later access."""
    real = NumpyCleanupParser.statistics

    def overflowed(self):  # after the cells' checks, before the dense matrices
        self.left_spectrum[0, 0] = np.inf
        return real(self)

    monkeypatch.setattr(NumpyCleanupParser, "statistics", overflowed)
    with pytest.raises(FloatingPointError, match="P_left after the parse"):
        fd.dcyk(fd.Grammar.builtin("G0"), WORDS, d=64)


def test_deferred_array_makes_once():
    calls = []

    def make():
        calls.append(1)
        return np.arange(4.0)

    a = DeferredArray(make, (4,), np.float64)
    assert "not yet made" in repr(a) and not calls
    assert resolve(a) is resolve(a) and len(calls) == 1
    assert "made" in repr(a) and resolve(3) == 3


def test_threads_asking_at_once_get_one_array():
    lazy, eager = parse("cleanup", True), parse("cleanup", False)
    barrier, got, errors = threading.Barrier(4), [], []

    def read():
        barrier.wait()
        try:
            got.append(lazy.p_left)
        except Exception as e:  # pragma: no cover - the failure this test is for
            errors.append(e)

    threads = [threading.Thread(target=read) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(got) == 4 and all(a is got[0] for a in got)
    np.testing.assert_array_equal(got[0], eager.p_left)


def test_later_parses_with_the_codebook_leave_the_kept_table_alone():
    """The kept spectrum is the result's own: parses of other sentences with the same
    codebook (its shared work buffers) before the access change nothing."""
    g = fd.Grammar.builtin("G2")
    lazy = parse("cleanup", True)
    for words in fd.generate(g, 3, min_len=3, max_len=6, seed=1):
        fd.dcyk(g, words, lazy.codebook)
    np.testing.assert_array_equal(lazy.p_left, parse("cleanup", False).p_left)


def test_decoding_a_result_from_its_statistics_makes_no_matrix():
    r = parse("cleanup", True)
    assert fd.decode(r) == r.chart
    assert isinstance(r.__dict__["_p_left"], DeferredArray)


def test_a_failed_allocation_is_tried_again(monkeypatch):
    lazy, eager = parse("cleanup", True), parse("cleanup", False)
    real, calls = type(buffers.P_LEFT).new, []

    def refuse_once(self, *args, **kwargs):
        if self is buffers.P_LEFT and not calls:
            calls.append(1)
            raise MemoryError("no room for P_left")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(type(buffers.P_LEFT), "new", refuse_once)
    with pytest.raises(MemoryError):
        _ = lazy.p_left
    np.testing.assert_array_equal(lazy.p_left, eager.p_left)  # the spectrum was untouched


def test_an_interrupted_transform_refuses_to_give_a_matrix(monkeypatch):
    lazy = parse("cleanup", True)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(numpy_spectral.kernels, "gather_cols", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _ = lazy.p_left
    monkeypatch.undo()
    with pytest.raises(RuntimeError, match="parse the sentence again"):
        _ = lazy.p_left


def test_a_parser_whose_own_dense_takes_no_deferred_is_asked_without_it():
    class Mine(NumpyCleanupParser):
        def dense(self):
            return super().dense()

    assert numpy_driver._defers(NumpyCleanupParser) and not numpy_driver._defers(Mine)


def _torch_batch(variant: str, deferred: bool, monkeypatch) -> list[fd.DCYKResult]:
    pytest.importorskip("torch")
    from fastdcyk.engine.backends.torch import spectral as torch_spectral

    g = fd.Grammar.builtin("G2")
    sents = fd.generate(g, 5, min_len=3, max_len=7, seed=3)
    with monkeypatch.context() as m:
        if not deferred:
            m.setattr(torch_spectral.TorchSpectralParser, "defers_dense", False)
        return fd.dcyk_batch(g, sents, d=128, variant=variant, backend="torch", batch_size=5)


@pytest.mark.parametrize("variant", ["cleanup", "trace"])
def test_a_torch_batch_on_the_cpu_makes_its_matrices_when_asked(variant, monkeypatch):
    """On the CPU the torch backend's batch keeps its parser and makes every sentence's
    matrices at the first access of any (one batched transform): the arrays the parse made
    before, bit for bit, each the result's own."""
    lazy = _torch_batch(variant, True, monkeypatch)
    eager = _torch_batch(variant, False, monkeypatch)
    assert all(isinstance(r.__dict__["_p_left"], DeferredArray) for r in lazy)
    assert not any(isinstance(r.__dict__["_p_left"], DeferredArray) for r in eager)
    for a, b in zip(reversed(lazy), reversed(eager), strict=True):  # the last one first
        for name in ("p_left", "p_right"):
            x = getattr(a, name)
            np.testing.assert_array_equal(x, getattr(b, name))
            assert x.flags.owndata and x.flags.c_contiguous
        assert a.chart == b.chart


def test_a_torch_batch_interrupted_while_making_refuses_after(monkeypatch):
    from fastdcyk.engine.modes.cleanup import torch_parser

    lazy = _torch_batch("cleanup", True, monkeypatch)

    def interrupted(self):
        raise KeyboardInterrupt

    monkeypatch.setattr(torch_parser.TorchCleanupParser, "_write_deferred", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _ = lazy[0].p_left
    with pytest.raises(RuntimeError, match="parse the sentences again"):
        _ = lazy[1].p_left

"""A numpy parse's dense P_left made when first asked for (fastdcyk.engine.deferred).

The trace and clean-up parsers read their charts from the table's spectrum; the result
keeps the spectrum and makes the dense P_left (and the never-written P_right) on first
access. The arrays must be those the parse made before, bit for bit; an error in the table
must still be the parse's.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import fastdcyk as fd
from fastdcyk.engine import numpy_spectral
from fastdcyk.engine.deferred import DeferredArray, resolve
from fastdcyk.engine.modes.cleanup.numpy_parser import CleanupParser

WORDS = "fish swim near fish"


def parse(variant: str, deferred: bool, **options) -> fd.DCYKResult:
    old = numpy_spectral.SpectralParser.defers_dense
    numpy_spectral.SpectralParser.defers_dense = deferred
    try:
        return fd.dcyk(fd.Grammar.builtin("G2"), WORDS, d=128, variant=variant, **options)
    finally:
        numpy_spectral.SpectralParser.defers_dense = old


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
    real = CleanupParser.statistics

    def overflowed(self):  # after the cells' checks, before the dense matrices
        self.left_spectrum[0, 0] = np.inf
        return real(self)

    monkeypatch.setattr(CleanupParser, "statistics", overflowed)
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

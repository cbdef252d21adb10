"""The compiled cells (fastdcyk.engine.modes.cleanup.columns) against the cells one by one.

A parse with a least-squares read-back in the cell order fills each word's cell and each
column of binary cells in one compiled call; with ``numpy_parser.COLUMNS = False`` the same
parse visits the cells one by one in Python. Both compute the same numbers in another order
of their sums: the charts and counts must be equal, the amplitudes equal to float64
rounding, and the certificates' verdicts equal.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest

import fastdcyk as fd
from fastdcyk.engine.core import schedule
from fastdcyk.engine.core.readback import SMALL_SOLVE
from fastdcyk.engine.modes.cleanup import columns
from fastdcyk.engine.modes.cleanup import numpy_parser as cleanup_parser

COMMANDTALK = Path(__file__).parents[1] / "data" / "commandtalk.cfg.gz"


def both(grammar, words, **options):
    """The parse compiled, and the parse cell by cell."""
    out = []
    for compiled in (True, False):
        old = cleanup_parser.COLUMNS
        cleanup_parser.COLUMNS = compiled
        try:
            out.append(fd.dcyk(grammar, words, **options))
        finally:
            cleanup_parser.COLUMNS = old
    return out


def assert_same(compiled, by_cell, exact_margins: bool) -> None:
    assert compiled.chart == by_cell.chart
    assert compiled.counts == by_cell.counts
    a, b = compiled.statistics.array, by_cell.statistics.array
    # amplitudes of O(1): the same solves, their sums in another order
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-9 if exact_margins else 1e-5)
    ca, cb = compiled.certificate, by_cell.certificate
    assert ca.sure == cb.sure
    assert ca.suspect_cells() == cb.suspect_cells()
    if exact_margins:  # in float64 the leakage estimate is no rounding noise
        np.testing.assert_allclose(ca.bounds, cb.bounds, rtol=1e-6, atol=1e-12)
        finite = np.isfinite(cb.margins)
        assert (np.isfinite(ca.margins) == finite).all()
        np.testing.assert_allclose(ca.margins[finite], cb.margins[finite], rtol=1e-6)
    else:  # in float32 a clean read's leakage is rounding: its bound far below alpha / C
        np.testing.assert_allclose(ca.bounds, cb.bounds, rtol=1e-2, atol=1e-3 * ca.alpha / ca.cells)


@pytest.mark.parametrize("readback", ["cancel", "lstsq"])
@pytest.mark.parametrize("name", ["G0", "G1", "G2", "G3", "G4"])
def test_the_paper_grammars_compiled_and_cell_by_cell(name, readback):
    g = fd.Grammar.builtin(name)
    for words in fd.generate(g, 3, min_len=2, max_len=9, seed=3):
        for d, dtype in ((64, "float64"), (128, "float32")):
            compiled, by_cell = both(g, words, d=d, readback=readback, dtype=dtype)
            assert_same(compiled, by_cell, exact_margins=dtype == "float64")


@pytest.mark.parametrize("readback", ["cancel", "lstsq"])
@pytest.mark.parametrize("d", [50, 100])
def test_sizes_that_are_not_whole_blocks(d, readback):
    """The compiled sweeps sum a row by blocks of columns.BLOCK terms and the rest: at d
    below one block (50) and past it (100; d/2 + 1 rows of d columns), the same numbers."""
    assert d % columns.BLOCK
    g = fd.Grammar.builtin("G2")
    for words in fd.generate(g, 2, min_len=4, max_len=7, seed=5):
        for dtype in ("float64", "float32"):
            compiled, by_cell = both(g, words, d=d, readback=readback, dtype=dtype)
            assert_same(compiled, by_cell, exact_margins=dtype == "float64")


@pytest.fixture(scope="module")
def commandtalk():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fd.GrammarWarning)
        g = fd.Grammar.from_file(COMMANDTALK, cnf="allow", encoding="latin-1")
    return g.to_cnf()


@pytest.mark.parametrize("readback", ["cancel", "lstsq"])
def test_a_real_grammar_with_cells_left_to_python(commandtalk, readback):
    """CommandTalk's cells of more than SMALL_SOLVE candidates are read the Python way in
    the middle of a compiled column; the chart is the same."""
    words = fd.generate(commandtalk, 2, min_len=9, max_len=11, seed=2)
    big = 0
    for w in words:
        compiled, by_cell = both(commandtalk, w, d=128, readback=readback, dtype="float64")
        assert_same(compiled, by_cell, exact_margins=True)
        big += int((compiled.statistics.array != 0).sum(-1).max() > SMALL_SOLVE)
    assert big  # the path of a cell too large for the compiled solve was taken


def test_the_compiled_path_is_taken_and_counts_its_detections(monkeypatch):
    """The default parse goes through the compiled calls (once per word and per column),
    and its counts are the schedule's."""
    calls = {"word": 0, "column": 0}
    for name in calls:
        real = getattr(columns, name)

        def counted(*args, _real=real, _name=name):
            calls[_name] += 1
            return _real(*args)

        monkeypatch.setattr(columns, name, counted)
    g = fd.Grammar.builtin("G2")
    words = fd.generate(g, 1, min_len=6, max_len=6, seed=0)[0]
    r = fd.dcyk(g, words, d=64)
    assert calls == {"word": 6, "column": 5}
    st = r.counts
    rows = len(fd.engine.core.rules.rule_structure(g).binary)  # every binary cell detects each
    unary = len(fd.engine.core.rules.rule_structure(g).unary)
    assert st["detections"] == schedule.detections(6, unary, rows)
    assert st["updates"] + st["pruned"] == st["detections"]


def test_a_non_finite_detection_is_reported_from_a_compiled_column():
    d = 16
    rng = np.random.default_rng(0)
    g = fd.Grammar.from_string("S -> S S | 'a'\n")
    cb = fd.Codebook.from_vectors(
        terminals={"a": 1e200 * rng.standard_normal(d)},
        nonterminals={"S": 1e200 * rng.standard_normal(d)},
        indices=[1e200 * rng.standard_normal(d) for _ in range(4)],
        permutation=rng.permutation(d),
        dtype="float64",
    )
    with pytest.raises(FloatingPointError, match="non-finite values"):
        fd.dcyk(g, "a a a", cb)


def test_the_certificate_bound_of_a_compiled_read_is_the_builders():
    """One read, its margin and bound through the compiled certificate and through
    CertificateBuilder.add, exact path (a bound above NEGLIGIBLE) and coarse path."""
    from fastdcyk.engine.core.certificate import CertificateBuilder
    from fastdcyk.engine.core.readback import solve

    rng = np.random.default_rng(1)
    d, k, m = 64, 4, 2
    v = rng.standard_normal((k + m, d)) / math.sqrt(d)
    for noise in (0.3, 1e-4):  # a noisy read (exact path) and a clean one (coarse path)
        r = v[:k].sum(0) + noise * rng.standard_normal(d)
        g, x = v @ v.T, v @ r
        a = solve(g, x)
        builder = CertificateBuilder(2, 0.5, d)
        builder.add(0, 1, g, x, a, float(r @ r), k)
        low = np.zeros((k + m, k + m))
        out = np.zeros(k + m)
        assert cleanup_parser.SMALL_SOLVE >= k + m
        from fastdcyk.engine.core.readback import RIDGE, _small_solve

        assert _small_solve(g, x, RIDGE, 0, low, out)
        # q: a half spectrum whose Parseval sum is ||r||^2 (r's own)
        q = np.conj(np.fft.rfft(r))
        w = np.full(d // 2 + 1, 2.0)
        w[0] = w[-1] = 1.0
        scratch = np.zeros(2 * (k + m))
        margin, bound = columns._certify(q, w, g, x, out, k, k + m, d, low, scratch, 0.5)
        assert margin == pytest.approx(builder.margins[0, 1], rel=1e-9)
        assert bound == pytest.approx(builder.bounds[0, 1], rel=1e-9, abs=1e-300)

"""The compiled rule layer over every split of a cell (fastdcyk.engine.core.splits) against the
split-by-split one it replaces in the numpy engine and the capacity model."""

from __future__ import annotations

import numpy as np
import pytest

import fastdcyk as fd
from fastdcyk.engine.core.rules import (
    candidate_rule_layer,
    cell_candidates,
    cell_splits,
    rule_structure,
)
from fastdcyk.engine.core.splits import CandidateChart


def _random_chart(st, n, rng, share):
    """Every cell of a sentence of n words read with a random subset of the nonterminals
    as candidates (``share`` of them, some cells with none) and random deltas."""
    nn = len(st.nonterminals)
    cells = {}
    for w in range(1, n + 1):
        for i in range(n - w + 1):
            k = rng.binomial(nn, share) if rng.random() > 0.1 else 0
            rows = np.sort(rng.choice(nn, size=k, replace=False))
            cells[(i, i + w)] = (rows, rng.uniform(-0.5, 0.5, k))
    return cells


@pytest.mark.parametrize(("grammar", "share"), [("G4", 0.5), ("random", 0.05)])
@pytest.mark.parametrize("weighted", [False, True])
def test_layer_equals_the_split_by_split_layer(grammar, share, weighted):
    if grammar == "random":
        g = fd.random_grammar(300, 80, 900, ambiguity=2, seed=3)
    else:
        g = fd.Grammar.builtin(grammar)
    st = rule_structure(g)
    rng = np.random.default_rng(7)
    n, base = 7, 0.5
    weights = rng.uniform(0.1, 2.0, st.n_binary_rules) if weighted else None
    chart = CandidateChart(st, n, base, rule_weights=weights)
    read = {}
    for (i, j), (rows, deltas) in _random_chart(st, n, rng, share).items():
        chart.add(i, j, rows, deltas)
        read[(i, j)] = cell_candidates(st, rows, deltas)
    sums = None
    if weighted:
        sums = np.bincount(st.binary_rule_row, weights=weights, minlength=len(st.binary))
    scratch = np.full(len(st.nonterminals), -1, np.intp)
    checked = 0
    for w in range(2, n + 1):
        for i in range(n - w + 1):
            want = candidate_rule_layer(
                st, cell_splits(read, i, i + w), base, scratch, rule_sums=sums, rule_weights=weights
            )
            got = chart.layer(i, i + w)
            assert got.dtype == np.float64 and got.shape == want.shape
            # float64 sums of at most a few thousand terms of size <= 2.5, in another order
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
            checked += int(np.any(got != got[0]))
    assert checked > 0  # the cells differ: candidates were seen
    assert (scratch == -1).all()


def test_a_cell_read_again_replaces_its_candidates():
    g = fd.Grammar.builtin("G4")
    st = rule_structure(g)
    chart = CandidateChart(st, 2, 0.5)
    chart.add(0, 1, np.array([0, 1]), np.array([0.3, -0.2]))
    chart.add(1, 2, np.array([2]), np.array([0.1]))
    before = chart.layer(0, 2)
    chart.add(0, 1, np.zeros(0, np.int64), np.zeros(0))  # read again: nothing there
    after = chart.layer(0, 2)
    empty = CandidateChart(st, 2, 0.5)
    empty.add(0, 1, np.zeros(0, np.int64), np.zeros(0))
    empty.add(1, 2, np.array([2]), np.array([0.1]))
    np.testing.assert_array_equal(after, empty.layer(0, 2))
    assert not np.array_equal(before, after)


def test_the_chart_grows_past_its_first_size():
    g = fd.random_grammar(300, 80, 900, ambiguity=2, seed=3)
    st = rule_structure(g)
    chart = CandidateChart(st, 2, 0.5)
    size = len(chart.rows)
    rows = np.arange(len(st.nonterminals))
    chart.add(0, 1, rows, np.full(len(rows), 0.25))
    chart.add(1, 2, rows, np.full(len(rows), -0.25))
    assert len(chart.rows) >= 2 * len(rows) > size
    read = {(0, 1): cell_candidates(st, rows, np.full(len(rows), 0.25))}
    read[(1, 2)] = cell_candidates(st, rows, np.full(len(rows), -0.25))
    scratch = np.full(len(st.nonterminals), -1, np.intp)
    want = candidate_rule_layer(st, cell_splits(read, 0, 2), 0.5, scratch)
    np.testing.assert_allclose(chart.layer(0, 2), want, rtol=0, atol=1e-12)

"""A PCFG's Viterbi scores written through the table (``weights="table"``) and read back."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import fastdcyk as fd
from fastdcyk.cfg.treebank import TreebankGrammar, clean, read_trees
from fastdcyk.cfg.viterbi import item_scores, tree_from_scores
from fastdcyk.engine.modes.weighted.numpy_parser import FLOOR, amplitude, score_of

DATA = Path(__file__).parent.parent / "data"
PP = "john saw the man with a telescope".split()


@pytest.fixture(scope="module")
def pp() -> fd.Grammar:
    return fd.Grammar.load(DATA / "pp.pcfg")


@pytest.fixture(scope="module")
def bank() -> TreebankGrammar:
    return TreebankGrammar.from_trees(DATA / "mini_treebank.mrg")


def test_amplitudes_carry_scores_within_the_beam():
    v = np.array([-3.0, -5.5, -13.0, -13.5])
    a = amplitude(v, -3.0, 10.0)
    assert a.tolist() == [1.0, 1.0 - 0.875 * 0.25, FLOOR, 0.0]  # 10.5 below: not written
    np.testing.assert_allclose(score_of(a[:3], -3.0, 10.0), v[:3], rtol=0, atol=1e-12)


def test_exact_scores_give_viterbis_tree(pp, bank):
    """The top-down reading is exact when the scores are: on every sentence of the
    mini treebank and the PP grammar's ambiguous sentence."""
    cases = [(pp, PP)] + [
        (bank.grammar, bank.words(t.leaves()))
        for t in map(clean, read_trees(DATA / "mini_treebank.mrg"))
    ]
    for g, words in cases:
        best = fd.viterbi(g, words, cnf=True)
        got = tree_from_scores(g, words, item_scores(g, words), cnf=True)
        assert got.tree == best.tree
        assert got.log_prob == pytest.approx(best.log_prob, abs=1e-12)


def test_scores_without_a_tree_give_none(pp):
    scores = item_scores(pp, PP)
    del scores[(0, 1, "NP")]  # "john" unscored: no tree of S over the sentence
    assert tree_from_scores(pp, PP, scores) == (None, -math.inf)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_table_reads_the_item_scores(pp, dtype):
    exact = item_scores(pp, PP)
    errors = {}
    for d in (256, 1024):
        r = fd.dcyk(pp, PP, d=d, dtype=dtype, weights="table")
        assert set(r.table_scores) == set(exact)  # every item within 10 nats of its cell's best
        assert r.chart == fd.cyk(pp, PP)
        errors[d] = max(abs(r.table_scores[k] - exact[k]) for k in exact)
    # an amplitude read within half the smallest written one of the amplitude written (an
    # item at the beam's edge still read as present): beam (FLOOR / 2) / (1 - FLOOR) nats
    assert errors[1024] < 10.0 * (FLOOR / 2) / (1 - FLOOR)
    assert errors[1024] < errors[256] / 2  # the read-back's leakage falls with d
    r = fd.dcyk(pp, PP, d=1024, dtype=dtype, weights="table")
    best = fd.viterbi(pp, PP)
    got = r.table_parse()
    assert got.tree == best.tree and got.log_prob == pytest.approx(best.log_prob, abs=1e-12)
    assert "(VP (VP (V saw)" in str(got.tree)  # the likelier attachment


def test_the_beam_leaves_items_out(bank):
    """Items further than the beam below their cell's best are not written: a beam of 1 nat
    keeps a subset of what the default 10 keep, each item close to its cell's best."""
    words = bank.words("The dog saw a big cat .".split())
    exact = item_scores(bank.grammar, words)
    narrow = fd.dcyk(bank.grammar, words, d=1024, weights="table", beam=1.0)
    wide = fd.dcyk(bank.grammar, words, d=1024, weights="table")
    # every item of this sentence lies within 10 nats of its cell's best: all are kept
    assert set(narrow.table_scores) < set(wide.table_scores) == set(exact)
    for i, j, a in narrow.table_scores:
        best = max(v for (p, q, _), v in exact.items() if (p, q) == (i, j))
        # the beam is applied to scores computed from read scores: within the read's
        # error (test_the_table_reads_the_viterbi_scores) of the exact ones
        assert exact[i, j, a] >= best - 1.0 - 10.0 * (FLOOR / 2) / (1 - FLOOR)


def test_unknown_words_of_a_treebank_grammar(bank):
    words = bank.words(["Mary", "saw", "the", "Zorblax", "."])
    assert words[3] != "Zorblax"  # an unknown-word class
    r = fd.dcyk(bank.grammar, words, d=1024, weights="table")
    assert r.table_parse().tree == fd.viterbi(bank.grammar, words).tree


def test_mistakes_are_refused(pp):
    with pytest.raises(ValueError, match="the grammar has none"):
        fd.dcyk(fd.Grammar.builtin("example"), "a a b", d=256, weights="table")
    with pytest.raises(ValueError, match="weights='table' needs gate 'cleanup'"):
        fd.dcyk(pp, PP, d=256, variant="trace", weights="table")
    with pytest.raises(ValueError, match="beam must be"):
        fd.dcyk(pp, PP, d=256, weights="table", beam=0)
    with pytest.raises(ValueError, match="unknown weights"):
        fd.dcyk(pp, PP, d=256, weights="tables")
    with pytest.raises(ValueError, match="did not write weights"):
        fd.dcyk(pp, PP, d=256).table_parse()


def test_the_torch_backend_refuses_a_weighted_table(pp):
    pytest.importorskip("torch")
    with pytest.raises(ValueError, match="numpy backend only, not 'torch'"):
        fd.dcyk(pp, PP, d=256, weights="table", backend="torch")


def test_the_other_entry_points(pp):
    """dcyk_batch (numpy), options= and the sequential order give the same table; the
    layer refuses the route it does not have."""
    one = fd.dcyk(pp, PP, d=512, weights="table")
    (batch,) = fd.dcyk_batch(pp, [PP], d=512, weights="table", backend="numpy")
    assert batch.table_scores == one.table_scores
    again = fd.dcyk(pp, PP, d=512, options=one.options)
    assert again.table_scores == one.table_scores
    assert "weights='table', beam=10" in repr(one)
    sequential = fd.dcyk(pp, PP, d=512, weights="table", order="sequential")
    assert sequential.table_parse().tree == one.table_parse().tree
    torch = pytest.importorskip("torch")
    from fastdcyk.nn import DCYK

    with pytest.raises(ValueError, match="numpy backend only, not 'torch'"):
        DCYK(pp, 64, dtype=torch.float64, weights="table")

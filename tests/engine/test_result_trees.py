"""Trees of a D-CYK parse: valid parses, fixed by the chart and the grammar (or a PCFG's
most probable), ranked by the decoder's gate on request, in the user's grammar."""

from __future__ import annotations

import math

import pytest

import fastdcyk as fd
from fastdcyk.cfg.forest import Forest
from fastdcyk.cfg.trees import is_parse


@pytest.mark.parametrize("name", ["G0", "G1", "G2", "G3", "G4"])
def test_best_tree_of_the_trace_variant_at_1024_is_a_parse(name):
    g = fd.Grammar.builtin(name)
    for words in fd.generate(g, 3, min_len=3, max_len=7, seed=2):
        r = fd.dcyk(g, words, d=1024, variant="trace")
        assert r.recognized
        tree = r.tree()
        assert is_parse(tree, g, words)
        assert r.tree_count == Forest(g, words).count  # exact chart: every tree


def test_trees_of_a_noisy_parse_are_parses_of_items_of_its_chart():
    g = fd.Grammar.builtin("G2")
    seen_false = recognized = 0
    for words in fd.generate(g, 8, min_len=5, max_len=7, seed=4):
        r = fd.dcyk(g, words, d=96, variant="trace")
        truth = fd.cyk(g, words)
        seen_false += sum(a not in truth[c] for c, cell in r.chart.items() for a in cell)
        if not r.recognized:
            assert r.tree() is None and r.trees(3) == [] and r.tree_count == 0
            continue
        recognized += 1
        for tree in r.trees(5):
            assert is_parse(tree, g, words)
            assert all(a in r.chart[(i, j)] for a, i, j in tree.spans())
    assert seen_false > 0 and recognized > 0  # the charts were wrong, some still parsed


def test_best_is_the_largest_sum_of_log_gates():
    g = fd.Grammar.builtin("G1")
    words = fd.generate(g, 1, min_len=7, max_len=7, seed=8)[0]
    r = fd.dcyk(g, words, d=512, variant="trace")
    scores = r.item_scores()
    beta = r.options.beta
    for (i, j, a), s in list(scores.items())[:20]:
        gate = 1.0 / (1.0 + math.exp(-beta * (r.statistics[(i, j, a)] - 0.5)))
        assert s == pytest.approx(math.log(gate), rel=1e-12, abs=1e-15)
    ranked = r.scored_trees(min(r.tree_count, 30), cnf=True)
    assert r.forest.score(r.forest.best(cnf=True)) == pytest.approx(ranked[0][0])
    total = [sum(scores[(i, j, a)] for a, i, j in t.spans()) for _, t in ranked]
    assert total == pytest.approx([s for s, _ in ranked])
    assert total == sorted(total, reverse=True)
    # tree() and trees(k) do not rank by the decoder's scores: the forest's order
    assert r.tree() == r.forest.tree(0) and r.trees(3) == [r.forest.tree(t) for t in range(3)]


def test_equal_charts_give_equal_trees_whatever_d_seed_or_backend():
    """On a grammar without weights the tree is the first of the chart's forest: on 100
    sentences of an ambiguous grammar, parses at other d, with another codebook seed and
    on the torch backend give the same trees wherever their charts are equal (the
    decoder's scores differ between them every time)."""
    pytest.importorskip("torch")
    g = fd.Grammar.builtin("G2")
    sentences = fd.generate(g, 100, min_len=3, max_len=8, seed=0)
    assert sum(Forest(g, s).count > 1 for s in sentences) >= 90  # ambiguous: many trees
    auto = [fd.dcyk(g, s) for s in sentences]
    others = [
        [fd.dcyk(g, s, d=512) for s in sentences],
        [fd.dcyk(g, s, d=256, seed=1) for s in sentences],
        fd.dcyk_batch(g, sentences, d=256, backend="torch", dtype="float64"),
    ]
    compared = 0
    for rs in others:
        for a, b in zip(auto, rs, strict=True):
            if a.chart == b.chart and a.recognized:
                # other reads, other scores (d="auto" may have chosen 512 itself: its probes
                # go by time, and at the same d, seed and backend the reads are the same)
                if rs is not others[0] or a.codebook.d != 512:
                    assert a.statistics != b.statistics
                assert a.tree() == b.tree() and a.trees(3) == b.trees(3)
                compared += 1
    assert compared >= 250  # nearly every chart is exact, so equal


def test_trees_of_a_converted_grammar_are_in_the_original():
    original = fd.Grammar.from_string(
        "S -> NP VP\nNP -> 'the' N | Name\nName -> 'Ann'\nVP -> V NP NP | V\n"
        "N -> 'dog' | 'cat'\nV -> 'gave' | 'slept'",
        cnf="allow",
    )
    g = original.to_cnf()
    words = "Ann gave the dog the cat".split()
    r = fd.dcyk(g, words, d=1024, variant="cleanup")
    assert str(r.tree()) == "(S (NP (Name Ann)) (VP (V gave) (NP the (N dog)) (NP the (N cat))))"
    assert is_parse(r.tree(), original, words) and is_parse(r.tree(cnf=True), g, words)


def test_an_undecoded_parse_has_no_trees():
    g = fd.Grammar.builtin("G0")
    r = fd.dcyk(g, "fish swim", d=64, decode=False)
    with pytest.raises(ValueError, match="decode=False"):
        r.tree()

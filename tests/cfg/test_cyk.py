"""Tests of fastdcyk.cfg.cyk against an independent brute-force recogniser and NLTK's parser."""

from __future__ import annotations

import functools
import itertools
import random

import nltk
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastdcyk.cfg.cyk import UnknownWordError, cyk, recognizes
from fastdcyk.cfg.generate import generate
from fastdcyk.cfg.grammar import Grammar, GrammarError

BUILTINS = ("example", "G0", "G1", "G2", "G3", "G4")


def brute_table(unary, binary, words):
    """The CYK table by top-down enumeration of derivations over spans, rule by rule."""

    @functools.cache
    def derives(a, i, j):
        if j - i == 1:
            return (a, words[i]) in unary
        return any(
            derives(b, i, k) and derives(c, k, j)
            for lhs, b, c in binary
            if lhs == a
            for k in range(i + 1, j)
        )

    names = {r[0] for r in unary} | {s for r in binary for s in r}
    n = len(words)
    return {
        (i, j): frozenset(a for a in names if derives(a, i, j))
        for i in range(n)
        for j in range(i + 1, n + 1)
    }


def grammar_text(unary, binary):
    lines = [f"{a} -> {b} {c}" for a, b, c in binary] + [f"{a} -> '{w}'" for a, w in unary]
    return "\n".join(lines)


def nltk_constituents(grammar: Grammar, words):
    """The (i, j, A) of the complete nonterminal edges of NLTK's bottom-up chart."""
    parser = nltk.parse.chart.BottomUpChartParser(grammar.to_nltk())
    chart = parser.chart_parse(list(words))
    return {
        (edge.start(), edge.end(), edge.lhs().symbol())
        for edge in chart.edges()
        if edge.is_complete() and isinstance(edge.lhs(), nltk.Nonterminal)
    }


def triples(table):
    return {(i, j, a) for (i, j), cell in table.items() for a in cell}


def test_running_example_table():
    table = cyk(Grammar.builtin("example"), "a a b")
    assert table == {
        (0, 1): {"D"},
        (1, 2): {"D"},
        (2, 3): {"E"},
        (0, 2): set(),
        (1, 3): {"S"},
        (0, 3): {"S"},
    }
    assert all(isinstance(cell, frozenset) for cell in table.values())
    assert recognizes(Grammar.builtin("example"), ["a", "a", "b"])
    assert not recognizes(Grammar.builtin("example"), "a b b")


def test_table_shape_and_input_forms():
    g = Grammar.builtin("G1")
    words = ["fish", "swim", "near", "fish", "swim"]
    table = cyk(g, words)
    assert list(table) == [(i, j) for i in range(5) for j in range(i + 1, 6)]
    assert cyk(g, "  fish swim\tnear fish\nswim ") == table == cyk(g, tuple(words))


_nts = ["S", "A", "B", "C"]
_terms = ["a", "b", "c"]


@pytest.mark.filterwarnings("ignore::fastdcyk.cfg.grammar.GrammarWarning")  # random grammars
@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(_nts), st.sampled_from(_terms)), min_size=1, max_size=6),
    st.lists(st.tuples(*[st.sampled_from(_nts)] * 3), max_size=8),
    st.lists(st.sampled_from([*_terms, "z"]), min_size=1, max_size=7),
)
def test_cyk_equals_brute_force(unary, binary, words):
    # "S -> ..." first, so that S is the start symbol.
    binary = [("S", "A", "B"), *binary]
    g = Grammar.from_string(grammar_text(unary, binary))
    table = cyk(g, words)
    expected = brute_table(frozenset(unary), tuple(binary), tuple(words))
    assert table == expected
    assert recognizes(g, words) == ("S" in expected[0, len(words)])


@pytest.mark.filterwarnings("ignore::fastdcyk.cfg.grammar.GrammarWarning")  # random grammars
@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(_nts), st.sampled_from(_terms)), min_size=1, max_size=5),
    st.lists(st.tuples(*[st.sampled_from(_nts)] * 3), min_size=1, max_size=8),
)
def test_cyk_recognises_exactly_the_brute_force_language(unary, binary):
    """All strings up to length 5: CYK's recognition against the enumerated derivations."""
    g = Grammar.from_string(grammar_text(unary, binary))
    for length in range(1, 6):
        for words in itertools.product(_terms, repeat=length):
            expected = brute_table(frozenset(unary), tuple(binary), words)[0, length]
            assert recognizes(g, words) == (g.start in expected)


@pytest.mark.parametrize("name", BUILTINS)
def test_cyk_equals_nltk_on_builtins(name):
    g = Grammar.builtin(name)
    sentences = generate(g, 25, min_len=1, max_len=8, seed=3)
    # Random word strings too, mostly not sentences.
    rng = random.Random(7)
    sentences += [tuple(rng.choices(g.terminals, k=rng.randint(1, 7))) for _ in range(25)]
    accepted = 0
    for words in sentences:
        expected = nltk_constituents(g, words)
        assert triples(cyk(g, words)) == expected
        in_nltk = (0, len(words), g.start) in expected
        assert recognizes(g, words) == in_nltk
        accepted += in_nltk
    assert 25 <= accepted < len(sentences)


OTHER_GRAMMARS = [
    "S -> S S | 'a'",
    "S -> A B | B A | S S\nA -> 'a' | A S\nB -> 'b' | S B",
    "S -> NP VP\nVP -> V NP | VP PP\nNP -> NP PP | 'I' | 'fish'\nPP -> P NP\nV -> 'eat'\n"
    "P -> 'with'",
]


@pytest.mark.parametrize("text", OTHER_GRAMMARS)
def test_cyk_equals_nltk_on_all_short_strings(text):
    g = Grammar.from_string(text)
    for length in range(1, 6):
        for words in itertools.product(g.terminals, repeat=length):
            assert triples(cyk(g, words)) == nltk_constituents(g, words)


def test_unknown_words():
    g = Grammar.builtin("example")
    with pytest.raises(UnknownWordError) as info:
        cyk(g, "a x b", strict=True)
    err = info.value
    assert isinstance(err, ValueError)
    assert (err.word, err.position) == ("x", 1)
    assert "'x'" in str(err) and "position 1" in str(err)
    table = cyk(g, "a x b")
    assert table[1, 2] == set()
    assert all(not cell for (i, j), cell in table.items() if i <= 1 < j)
    assert table[0, 1] == {"D"} and table[2, 3] == {"E"}
    assert not recognizes(g, "a x b")
    # Terminals are not nonterminals: the word "D" is unknown.
    with pytest.raises(UnknownWordError, match="'D' at position 0"):
        cyk(g, ["D", "b"], strict=True)


@pytest.mark.parametrize("words", ["", "   ", [], ()])
def test_empty_input(words):
    with pytest.raises(ValueError, match="at least one word"):
        cyk(Grammar.builtin("example"), words)
    with pytest.raises(ValueError, match="at least one word"):
        recognizes(Grammar.builtin("example"), words)


def test_bad_inputs():
    with pytest.raises(TypeError, match="words must be str"):
        cyk(Grammar.builtin("example"), ["a", 3])
    general = Grammar.from_string("S -> A\nA -> 'a'", cnf="allow")
    with pytest.raises(GrammarError, match="to_cnf"):
        cyk(general, "a")
    assert recognizes(general.to_cnf(), "a")


def test_cell_scores_refuses_charts_of_sentences_of_different_lengths():
    from fastdcyk.cfg.metrics import cell_scores

    g = Grammar.builtin("G0")
    with pytest.raises(ValueError, match="different lengths \\(2 and 3 words\\)"):
        cell_scores(cyk(g, "fish swim"), cyk(g, "fish swim fish"))
    assert cell_scores({(0, 1): {"D"}}, {(0, 1): {"D"}, (1, 2): {"E"}}).precision == 0.5

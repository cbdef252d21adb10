"""Tests of the shipped grammars: the paper's sizes, their nesting, and their ambiguity."""

from __future__ import annotations

import nltk
import pytest

from fastdcyk.cfg.cyk import cyk, recognizes
from fastdcyk.cfg.generate import generate
from fastdcyk.cfg.grammar import Grammar

CHAIN = ("G0", "G1", "G2", "G3", "G4")
SIZES = {"G0": 8, "G1": 25, "G2": 28, "G3": 34, "G4": 41}


@pytest.fixture(scope="module")
def grammars():
    return {name: Grammar.builtin(name) for name in CHAIN}


@pytest.fixture(scope="module")
def g0_sentences(grammars):
    return generate(grammars["G0"], 200, min_len=1, max_len=7, seed=0)


def test_sizes_match_the_paper(grammars):
    assert {name: len(g) for name, g in grammars.items()} == SIZES
    g0 = grammars["G0"]
    assert (len(g0.unary_rules), len(g0.binary_rules)) == (3, 5)
    assert all(g.is_cnf for g in grammars.values())


def test_each_grammar_extends_the_previous_one(grammars):
    for small, big in zip(CHAIN, CHAIN[1:], strict=False):
        small_rules, big_rules = set(grammars[small].rules), set(grammars[big].rules)
        assert small_rules < big_rules
        added = big_rules - small_rules
        if big == "G1":
            assert all(rule.is_unary for rule in added) and len(added) == 17
        else:
            assert all(rule.is_binary for rule in added)
        # The text of each file starts with the previous grammar's rules, in order.
        assert grammars[big].rules[: len(small_rules)] == grammars[small].rules
        assert grammars[big].start == "S"


def test_every_nonterminal_is_useful(grammars):
    for g in [*grammars.values(), Grammar.builtin("example")]:
        productive: set[str] = {a for a, _ in g.unary_rules}
        grown = True
        while grown:
            new = {a for a, b, c in g.binary_rules if b in productive and c in productive}
            grown = not new <= productive
            productive |= new
        reachable, todo = {g.start}, [g.start]
        while todo:
            a = todo.pop()
            for lhs, b, c in g.binary_rules:
                if lhs == a:
                    todo += [x for x in (b, c) if x not in reachable]
                    reachable |= {b, c}
        assert productive == reachable == set(g.nonterminals)


def test_g0_is_recursive_and_has_every_length(grammars):
    g0 = grammars["G0"]
    assert any(a in (b, c) for a, b, c in g0.binary_rules)
    assert {len(s) for s in generate(g0, 300, 2, 12, seed=1)} == set(range(2, 13))


def test_g0_sentences_are_accepted_by_all(grammars, g0_sentences):
    assert len(set(g0_sentences)) > 50
    for g in grammars.values():
        assert all(recognizes(g, s) for s in g0_sentences)


def test_g0_cells_hold_several_nonterminals(grammars, g0_sentences):
    g0 = grammars["G0"]
    shared = [cell for s in g0_sentences for cell in cyk(g0, s).values() if len(cell) >= 2]
    assert len(shared) > 100
    assert {"S", "NP"} in shared
    table = cyk(g0, "fish swim fish")
    assert table[0, 3] == {"S", "NP"}


def test_g0_sentences_are_ambiguous(grammars, g0_sentences):
    parser = nltk.ChartParser(grammars["G0"].to_nltk())
    trees = {s: len(list(parser.parse(list(s)))) for s in set(g0_sentences)}
    assert min(trees.values()) == 1
    assert sum(n >= 2 for n in trees.values()) >= len(trees) // 2
    assert trees["fish", "swim", "fish", "swim"] == 2


def test_g1_makes_g0_words_ambiguous(grammars):
    g0, g1 = grammars["G0"], grammars["G1"]
    assert all(len(g1.lexicon[w]) > len(g0.lexicon[w]) for w in ("fish", "near"))
    assert set(g1.terminals) > set(g0.terminals)
    assert set(g1.nonterminals) == set(g0.nonterminals)


def test_more_rules_put_more_items_in_the_chart(grammars, g0_sentences):
    means = [
        sum(sum(map(len, cyk(grammars[name], s).values())) for s in g0_sentences)
        / len(g0_sentences)
        for name in CHAIN
    ]
    assert all(a < b for a, b in zip(means, means[1:], strict=False)), means
    # Per sentence, a bigger grammar never has fewer items (its rules are a superset).
    for s in g0_sentences[:50]:
        tables = [cyk(grammars[name], s) for name in CHAIN]
        for small, big in zip(tables, tables[1:], strict=False):
            assert all(small[span] <= big[span] for span in small)


def test_example_accepts_the_papers_string():
    g = Grammar.builtin("example")
    assert len(g) == 4
    assert recognizes(g, "a a b")
    assert not recognizes(g, "a b a")

"""Tests of fastdcyk.cfg.generate."""

from __future__ import annotations

from collections import Counter

import pytest

from fastdcyk.cfg.cyk import recognizes
from fastdcyk.cfg.generate import generate
from fastdcyk.cfg.grammar import Grammar


def test_determinism_and_seeds():
    g = Grammar.builtin("G0")
    first = generate(g, 50, min_len=2, max_len=9, seed=11)
    assert first == generate(g, 50, min_len=2, max_len=9, seed=11)
    assert first != generate(g, 50, min_len=2, max_len=9, seed=12)
    assert generate(g, 0) == []
    assert all(isinstance(s, tuple) and all(isinstance(w, str) for w in s) for s in first)


@pytest.mark.parametrize("name", ["example", "G0", "G1", "G2", "G3", "G4"])
@pytest.mark.parametrize(("min_len", "max_len"), [(1, 7), (4, 4), (8, 12)])
def test_lengths_and_recognition(name, min_len, max_len):
    g = Grammar.builtin(name)
    sentences = generate(g, 60, min_len=min_len, max_len=max_len, seed=5)
    assert len(sentences) == 60
    assert all(min_len <= len(s) <= max_len for s in sentences)
    assert all(recognizes(g, s) for s in sentences)


def test_lengths_are_uniform_over_reachable_lengths():
    # G0 derives every length >= 2, example every length >= 2, so 1 is skipped.
    for name in ("G0", "example"):
        counts = Counter(map(len, generate(Grammar.builtin(name), 3000, 1, 6, seed=0)))
        assert set(counts) == {2, 3, 4, 5, 6}
        assert all(500 <= c <= 700 for c in counts.values()), counts


def test_trees_are_uniform():
    # Length 3: "a b b" has two trees (S -> A X with X -> B B, or S -> Y B with Y -> A B),
    # "a b c" has one, so uniform trees give them 2/3 and 1/3.
    g = Grammar.from_string(
        "S -> A X | Y B | A Z\nX -> B B\nY -> A B\nZ -> B C\nA -> 'a'\nB -> 'b'\nC -> 'c'"
    )
    counts = Counter(generate(g, 3000, 3, 3, seed=1))
    assert set(counts) == {("a", "b", "b"), ("a", "b", "c")}
    assert 1850 <= counts["a", "b", "b"] <= 2150


def test_recursive_grammars_terminate_and_vary():
    g = Grammar.from_string("S -> S S | 'a' | 'b'")
    sentences = generate(g, 50, min_len=150, max_len=200, seed=0)
    assert all(150 <= len(s) <= 200 for s in sentences)
    assert len(set(sentences)) == 50
    # A nonterminal that never terminates is never chosen.
    g = Grammar.from_string("S -> L R | S S\nS -> 'x'\nL -> L L\nR -> 'y'")
    assert set(generate(g, 20, 1, 5, seed=0)) <= {("x",) * k for k in range(1, 6)}


def test_variety():
    sentences = generate(Grammar.builtin("G0"), 200, 2, 7, seed=0)
    assert len(set(sentences)) >= 60
    assert {len(s) for s in sentences} == set(range(2, 8))


def test_unreachable_range():
    with pytest.raises(ValueError, match=r"lengths 2-30 \(lengths up to 30 checked\)"):
        generate(Grammar.builtin("example"), 5, min_len=1, max_len=1)
    even = Grammar.from_string("S -> A A | S T\nT -> A A\nA -> 'a'")
    with pytest.raises(ValueError, match=r"\[3, 3\].*lengths 2, 4, 6, .*, 30 \(lengths up to 30"):
        generate(even, 5, min_len=3, max_len=3)
    assert all(len(s) % 2 == 0 for s in generate(even, 20, 1, 41, seed=0))
    stuck = Grammar.from_string("S -> S S")
    with pytest.raises(ValueError, match="derives no sentence"):
        generate(stuck, 1)


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"n": -1}, "n must be >= 0"),
        ({"n": 2.0}, "n must be an int"),
        ({"n": True}, "n must be an int"),
        ({"n": 1, "min_len": 0}, "min_len must be >= 1"),
        ({"n": 1, "min_len": 5, "max_len": 4}, "must not exceed"),
    ],
)
def test_bad_arguments(kwargs, words):
    with pytest.raises(ValueError, match=words):
        generate(Grammar.builtin("G0"), **kwargs)


def test_needs_cnf():
    general = Grammar.from_string("S -> 'a' S | 'a'", cnf="allow")
    with pytest.raises(ValueError, match="to_cnf"):
        generate(general, 1)
    assert all(set(s) == {"a"} for s in generate(general.to_cnf(), 10, 1, 5))

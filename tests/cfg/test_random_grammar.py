"""Tests of fastdcyk.cfg.random_grammar."""

from __future__ import annotations

import hashlib
import math
import os
import subprocess
import sys
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fastdcyk
from fastdcyk.cfg.cyk import cyk, recognizes
from fastdcyk.cfg.generate import generate
from fastdcyk.cfg.grammar import Grammar
from fastdcyk.cfg.random_grammar import minimum_binary_rules, random_grammar

# (nonterminals, terminals, binary_rules, ambiguity, min_length)
SIZES = [
    (2, 1, 3, 1.0, 1),
    (2, 3, 5, 1.0, 2),
    (5, 3, 12, 1.0, 1),
    (6, 4, 12, 1.5, 1),
    (12, 8, 40, 2.5, 2),
    (40, 30, 150, 1.7, 1),
    (30, 200, 300, 3.0, 2),
    (4, 5, 64, 4.0, 1),  # every rule A -> B C and every rule A -> 'w'
]


def shortest(grammar: Grammar) -> dict[str, float]:
    """The length of the shortest sentence each nonterminal derives (inf for none)."""
    best = {a: math.inf for a in grammar.nonterminals}
    for a, _ in grammar.unary_rules:
        best[a] = 1
    changed = True
    while changed:
        changed = False
        for a, b, c in grammar.binary_rules:
            if best[b] + best[c] < best[a]:
                best[a] = best[b] + best[c]
                changed = True
    return best


def useful(grammar: Grammar) -> set[str]:
    """The nonterminals that are productive and reachable from the start symbol."""
    productive = {a for a, length in shortest(grammar).items() if length < math.inf}
    reachable, todo = {grammar.start}, [grammar.start]
    while todo:
        for b, c in grammar.binary_by_lhs[todo.pop()]:
            for child in (b, c):
                if child not in reachable:
                    reachable.add(child)
                    todo.append(child)
    return productive & reachable


def short_sentences(grammar: Grammar) -> bool:
    """Whether every nonterminal derives a sentence of at most two words (three when only
    one nonterminal has words), as random_grammar promises."""
    bound = 2 if len({a for a, _ in grammar.unary_rules}) >= 2 else 3
    return max(shortest(grammar).values()) <= bound


@pytest.mark.parametrize(("n", "t", "r", "ambiguity", "min_length"), SIZES)
def test_sizes_names_and_usefulness(n, t, r, ambiguity, min_length):
    g = random_grammar(n, t, r, ambiguity=ambiguity, min_length=min_length, seed=3)
    assert g.is_cnf and g.start == "S"
    assert set(g.nonterminals) == {"S", *(f"N{k}" for k in range(1, n))}
    assert set(g.terminals) == {f"w{k}" for k in range(1, t + 1)}
    assert len(g.binary_rules) == len(set(g.binary_rules)) == r
    unary = math.floor(ambiguity * t + 0.5)
    assert len(g.unary_rules) == len(set(g.unary_rules)) == unary
    # Every word has floor or ceil of the mean; as many nonterminals as possible have words.
    per_word = Counter(w for _, w in g.unary_rules)
    assert set(per_word) == set(g.terminals)
    assert set(per_word.values()) <= {unary // t, -(-unary // t)}
    assert abs(sum(per_word.values()) / t - ambiguity) <= 0.5 / t
    preterminals = {a for a, _ in g.unary_rules}
    assert len(preterminals) == min(n if min_length == 1 else n - 1, unary)
    assert ("S" in preterminals) == (min_length == 1)
    assert useful(g) == set(g.nonterminals)
    assert short_sentences(g)
    # Rules come grouped by left side, S first, binary rules before the rules A -> 'w'.
    lhs_order = [rule.lhs for rule in g.rules]
    assert lhs_order[0] == "S"
    assert len(list(dict.fromkeys(lhs_order))) == len(set(lhs_order))
    assert len(g.to_string().splitlines()) == len(set(lhs_order))
    assert Grammar.from_string(g.to_string()) == g


@pytest.mark.parametrize(("n", "t", "r", "ambiguity", "min_length"), SIZES)
def test_start_derives_every_length(n, t, r, ambiguity, min_length):
    g = random_grammar(n, t, r, ambiguity=ambiguity, min_length=min_length, seed=1)
    for length in range(min_length, 11):
        # generate raises ValueError when the start symbol derives no sentence this long.
        sentences = generate(g, 3, min_len=length, max_len=length, seed=length)
        assert all(len(s) == length and recognizes(g, s) for s in sentences)
    table = cyk(g, sentences[0])
    assert "S" in table[0, 10]
    if min_length == 2:
        with pytest.raises(ValueError, match="lengths 2-30"):
            generate(g, 1, min_len=1, max_len=1)
        assert not g.unary_by_lhs["S"]
    else:
        assert generate(g, 1, min_len=1, max_len=1, seed=0)[0][0] in g.unary_by_lhs["S"]


def test_same_child_share():
    for share in (0.0, 0.1, 0.5, 0.85):
        g = random_grammar(10, 5, 60, same_child=share, seed=2)
        same = sum(b == c for _, b, c in g.binary_rules)
        assert same == round(share * 60)
        assert useful(g) == set(g.nonterminals)
    # Every one of the 16 rules A -> B B over 4 nonterminals, the rest B != C.
    g = random_grammar(4, 4, 40, ambiguity=2.0, same_child=0.4, seed=0)
    assert sorted((a, b) for a, b, c in g.binary_rules if b == c) == sorted(
        (a, b) for a in g.nonterminals for b in g.nonterminals
    )
    # Default: the random rules are uniform, about 1 in `nonterminals` of them A -> B B.
    g = random_grammar(20, 10, 2000, seed=0)
    same = sum(b == c for _, b, c in g.binary_rules)
    assert 60 <= same <= 140, same


def test_reproducible_and_seeded():
    args = (30, 20, 120)
    first = random_grammar(*args, ambiguity=1.8, same_child=0.2, seed=7)
    again = random_grammar(*args, ambiguity=1.8, same_child=0.2, seed=7)
    assert first == again and first.rules == again.rules
    assert first.nonterminals == again.nonterminals
    assert random_grammar(*args, ambiguity=1.8, same_child=0.2, seed=8) != first
    assert random_grammar(*args, ambiguity=1.8, seed=7) != first
    assert random_grammar(*args, seed=None) != random_grammar(*args, seed=None)


# The digest of one grammar's text: any change to the draws changes it, which breaks the
# promise that a seed gives the same grammar everywhere (update it only on purpose).
GOLDEN = ((25, 15, 90), {"ambiguity": 1.6, "same_child": 0.25, "seed": 11})
GOLDEN_SHA256 = "7bf97a365691af8c4ca5304d4ebd7867988e1bfcbec7259c63cfec229886bf4c"


def digest(grammar: Grammar) -> str:
    return hashlib.sha256(grammar.to_string().encode()).hexdigest()


def test_same_grammar_in_every_process():
    args, kwargs = GOLDEN
    assert digest(random_grammar(*args, **kwargs)) == GOLDEN_SHA256
    code = (
        "import hashlib; from fastdcyk import random_grammar; "
        f"g = random_grammar(*{args!r}, **{kwargs!r}); "
        "print(hashlib.sha256(g.to_string().encode()).hexdigest())"
    )
    # Another process, with another string hash seed (this one's is random unless set).
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == GOLDEN_SHA256


@pytest.mark.parametrize(
    ("n", "t", "ambiguity", "min_length"),
    [(2, 1, 1.0, 1), (2, 1, 1.0, 2), (7, 3, 1.0, 1), (7, 3, 1.0, 2), (9, 30, 1.2, 1),
     (50, 10, 2.0, 2), (6, 10, 6.0, 1)],
)  # fmt: skip
def test_minimum_binary_rules_is_exact(n, t, ambiguity, min_length):
    minimum = minimum_binary_rules(n, t, ambiguity=ambiguity, min_length=min_length)
    assert minimum >= math.ceil((n - 1) / 2)  # every nonterminal but S is somebody's child
    for seed in range(5):
        g = random_grammar(n, t, minimum, ambiguity=ambiguity, min_length=min_length, seed=seed)
        assert len(g.binary_rules) == minimum
        assert useful(g) == set(g.nonterminals) and short_sentences(g)
        generate(g, 1, min_len=min_length, max_len=min_length, seed=0)
    with pytest.raises(ValueError, match=f"too few.*binary_rules >= {minimum}"):
        random_grammar(n, t, minimum - 1, ambiguity=ambiguity, min_length=min_length)


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(2, 12),
    t=st.integers(1, 8),
    extra=st.integers(0, 30),
    ambiguity=st.floats(1.0, 3.0),
    same_child=st.none() | st.floats(0.0, 0.3),
    min_length=st.sampled_from([1, 2]),
    seed=st.integers(0, 2**32),
)
def test_random_sizes(n, t, extra, ambiguity, same_child, min_length, seed):
    ambiguity = min(ambiguity, n - (min_length == 2))
    r = min(minimum_binary_rules(n, t, ambiguity=ambiguity, min_length=min_length) + extra, n**3)
    try:
        g = random_grammar(
            n, t, r, ambiguity=ambiguity, same_child=same_child, min_length=min_length, seed=seed
        )
    except ValueError as err:  # only a same_child share the backbone cannot meet
        assert same_child is not None and "same_child=" in str(err)
        return
    assert len(g.nonterminals) == n and len(g.terminals) == t and len(g.binary_rules) == r
    assert useful(g) == set(g.nonterminals) and short_sentences(g)
    if same_child is not None:
        assert sum(b == c for _, b, c in g.binary_rules) == math.floor(same_child * r + 0.5)
    for s in generate(g, 4, min_len=min_length, max_len=6, seed=seed):
        assert recognizes(g, s)


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((1, 3, 5), {}, r"nonterminals must be >= 2"),
        ((2.0, 3, 5), {}, r"nonterminals must be an int"),
        ((5, 0, 5), {}, r"terminals must be >= 1"),
        ((5, 3, "9"), {}, r"binary_rules must be an int"),
        ((5, 3, True), {}, r"binary_rules must be an int"),
        ((5, 3, 2), {}, r"binary_rules=2 is too few.*at least 4.*binary_rules >= 4"),
        ((3, 2, 28), {}, r"more than the 27 distinct rules.*binary_rules <= 27"),
        ((5, 3, 9), {"ambiguity": 0.5}, r"ambiguity .* must be >= 1"),
        ((5, 3, 9), {"ambiguity": float("nan")}, r"ambiguity must be a finite real"),
        ((5, 3, 9), {"ambiguity": 6}, r"at most 15: pass ambiguity <= 5"),
        ((5, 3, 9), {"ambiguity": 5, "min_length": 2}, r"pass ambiguity <= 4"),
        ((5, 3, 9), {"min_length": 0}, r"min_length must be 1 .* or 2"),
        ((5, 3, 9), {"min_length": True}, r"min_length must be 1"),
        ((5, 3, 9), {"same_child": 1.5}, r"same_child .* must be None or in \[0, 1\]"),
        ((5, 3, 9), {"same_child": 0.9}, r"same_child=0.9 leaves 1 rules.*need 4"),
        ((2, 2, 8), {"same_child": 0.0}, r"only 4 exist.*same_child >= 0.5"),
        ((2, 2, 8), {"same_child": 1.0}, r"only 4 exist.*same_child <= 0.5"),
        ((2, 1, 3), {"same_child": 0.0}, r"backbone needs 2; pass same_child >= 0.666667"),
        ((5, 3, 9), {"seed": "x"}, r"seed must be an int or None"),
    ],
)
def test_bad_arguments(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        random_grammar(*args, **kwargs)


def test_large_grammar_builds_and_generates():
    # the size of the engine's scaling benchmark (its build time is measured there)
    assert fastdcyk.cfg.random_grammar is random_grammar
    g = random_grammar(4000, 1000, 10000, ambiguity=2.0, seed=0)
    assert (len(g.nonterminals), len(g.terminals)) == (4000, 1000)
    assert (len(g.binary_rules), len(g.unary_rules)) == (10000, 2000)
    assert all(len(v) == 2 for v in g.lexicon.values())
    assert short_sentences(g) and useful(g) == set(g.nonterminals)
    sentences = generate(g, 5, min_len=6, max_len=6, seed=0)
    assert len(sentences) == 5 and all(recognizes(g, s) for s in sentences)

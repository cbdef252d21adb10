"""Weighted grammars: the PCFG text format, CNF that keeps the distribution, Viterbi and
inside CKY against brute force and NLTK, the weighted forest, evalb's brackets."""

from __future__ import annotations

import itertools
import math
import pickle
import random
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fastdcyk as fd
from fastdcyk.cfg.cyk import UnknownWordError
from fastdcyk.cfg.forest import Forest
from fastdcyk.cfg.grammar import Grammar, GrammarError, GrammarWarning, Rule, Symbol
from fastdcyk.cfg.metrics import evalb, labelled_brackets
from fastdcyk.cfg.trees import Tree
from fastdcyk.cfg.viterbi import inside, item_scores, viterbi

nltk = pytest.importorskip("nltk")

PP = (Path(__file__).parent.parent / "data" / "pp.pcfg").read_text()

# not in CNF: unit rules (a chain and a diamond), a long rule, a terminal inside a long rule
GENERAL = """S -> NP VP [0.7] | VP [0.2] | 'yes' 'sir' [0.1]
NP -> Det N [0.5] | N [0.3] | Det Adj N [0.2]
VP -> V NP [0.4] | V [0.3] | V NP PP [0.2] | VX [0.1]
VX -> V [1.0]
PP -> 'with' NP [1.0]
Det -> 'the' [1.0]
Adj -> 'old' [1.0]
N -> 'man' [0.6] | 'dog' [0.4]
V -> 'saw' [0.5] | 'ran' [0.5]"""

LOG_EPS = 1e-12  # float64 sums of a few dozen logs


def tree_log_prob(grammar: Grammar, tree: Tree) -> float:
    """A CNF tree's log probability, summed by hand from the grammar's rules."""
    return sum(grammar.log_prob(rule) for rule in tree.productions())


def random_pcfg(seed: int, n_nt: int = 4, n_words: int = 3) -> Grammar:
    rng = random.Random(seed)
    names = [f"N{k}" for k in range(n_nt)]
    words = [f"w{k}" for k in range(n_words)]
    rules = []
    for a in names:
        rhs = rng.sample(list(itertools.product(names, names)), 3)
        rules += [Rule(a, (Symbol(b, False), Symbol(c, False))) for b, c in rhs]
        rules += [Rule(a, (Symbol(w, True),)) for w in rng.sample(words, 2)]
    probs = []
    for a in names:
        raw = [rng.random() + 0.1 for r in rules if r.lhs == a]
        probs += [x / sum(raw) for x in raw]
    return Grammar(rules, probs=probs)


# -- the text format and NLTK ----------------------------------------------------------------


def test_pcfg_text_round_trip_is_exact():
    g = Grammar.from_string(PP)
    assert g.is_weighted and g.probs[1] == 0.2
    back = Grammar.from_string(g.to_string())
    assert back == g and back.log_probs == g.log_probs
    assert pickle.loads(pickle.dumps(g)) == g
    assert g != Grammar(g.rules)  # the same rules without probabilities
    assert g.log_prob(g.rules[0]) == 0.0


def test_pcfg_reads_and_writes_through_nltk():
    g = Grammar.from_string(GENERAL, cnf="allow")
    back = Grammar.from_nltk(g.to_nltk(), cnf="allow")
    assert back == g
    pcfg = nltk.PCFG.fromstring(GENERAL)
    assert Grammar.from_nltk(pcfg, cnf="allow") == g


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("S -> A A [1.0]\nA -> 'a' [0.5] | 'b'", "no probability"),
        ("S -> A A [1.5]\nA -> 'a' [1.0]", "outside"),
        ("S -> A A [x]\nA -> 'a' [1.0]", "not a probability"),
        ("S -> A A [nan]\nA -> 'a' [1.0]", r"\[nan\] is not a probability \(a number in"),
        ("S -> A A [0]\nA -> 'a' [1.0]", "outside .*a rule of probability 0 is left out"),
        ("S -> A [1.0] A\nA -> 'a' [1.0]", "ends it"),
        ("S -> A A [0.5] | A A [0.5]\nA -> 'a' [1.0]", "twice"),
        ("S -> A A [1.0\nA -> 'a' [1.0]", "unterminated"),
    ],
)
def test_pcfg_text_errors_say_what_and_where(text, message):
    with pytest.raises(GrammarError, match=message) as info:
        Grammar.from_string(text)
    assert info.value.line is not None


def test_probabilities_that_do_not_add_up_warn():
    with pytest.warns(GrammarWarning, match="do not add up to 1"):
        Grammar.from_string("S -> A A [1.0]\nA -> 'a' [0.5] | 'b' [0.4]")
    with warnings.catch_warnings(record=True) as caught:  # converted: named once, not twice
        warnings.simplefilter("always")
        Grammar.from_string("S -> A A A [1.0]\nA -> 'a' [0.5] | 'b' [0.4]", cnf="convert")
    assert sum("do not add up" in str(w.message) for w in caught) == 1
    g = Grammar([Rule("S", (Symbol("a", True),))], log_probs=[2.0])  # weights: no warning
    assert g.is_weighted and g.probs is None
    with pytest.raises(ValueError, match="not probabilities"):
        g.to_string()
    with pytest.raises(ValueError, match="not both"):
        Grammar(g.rules, probs=[1.0], log_probs=[0.0])
    with pytest.raises(ValueError, match="not weighted"):
        Grammar(g.rules).log_prob(g.rules[0])


@pytest.mark.parametrize(
    "name",
    [
        "NP|<DT-JJ>",
        "ROOT+S|<VP>",
        "NP^<S>",
        "-NONE-",
        ",",
        "''",
        "``",
        "#",
        "PRP$",
        "-LRB-",
        "A->B",
        "%x",
        "a'b",
    ],
)
def test_treebank_labels_are_names_and_survive_the_text_format(name):
    g = Grammar.from_string("S -> X Y [1.0]\nX -> 'a' [1.0]\nY -> 'b' [1.0]")
    renamed = Grammar(
        [
            Rule(
                name if r.lhs == "X" else r.lhs,
                tuple(Symbol(name, False) if s == Symbol("X", False) else s for s in r.rhs),
            )
            for r in g.rules
        ],
        probs=g.probs,
    )
    assert name in renamed.nonterminals
    assert Grammar.from_string(renamed.to_string()) == renamed


def test_labels_of_nltk_tree_transforms_load():
    t = nltk.Tree.fromstring("(ROOT (S (NP (DT the) (JJ old) (JJ red) (NN mat)) (VP (VBD slept))))")
    t.collapse_unary(collapsePOS=False, collapseRoot=True)
    t.chomsky_normal_form(horzMarkov=1)
    pcfg = nltk.induce_pcfg(nltk.Nonterminal(t.label()), t.productions())
    g = Grammar.from_nltk(pcfg, cnf="allow")
    assert "ROOT+S" in g.nonterminals and "NP|<JJ>" in g.nonterminals
    assert viterbi(g.to_cnf(), "the old red mat slept").tree is not None


# -- CNF keeps the distribution --------------------------------------------------------------


def sentences(words, up_to):
    for n in range(1, up_to + 1):
        yield from itertools.product(words, repeat=n)


def test_to_cnf_keeps_every_sentence_probability_as_nltk_computes_it():
    general = Grammar.from_string(GENERAL, cnf="allow")
    with pytest.warns(GrammarWarning, match="several derivations"):
        cnf = general.to_cnf()
    assert cnf.is_cnf and cnf.is_weighted
    parser = nltk.InsideChartParser(general.to_nltk())
    words = ["the", "man", "dog", "saw", "ran", "old", "with"]
    checked = 0
    for sent in sentences(words, 4):
        ours = inside(cnf, sent)
        theirs = sum(t.prob() for t in parser.parse(list(sent)))
        if theirs == 0:
            assert ours == -math.inf
            continue
        checked += 1
        assert ours == pytest.approx(math.log(theirs), abs=1e-9)
    assert checked >= 10


def test_to_cnf_refuses_what_it_cannot_keep():
    with pytest.raises(GrammarError, match="epsilon"):
        Grammar.from_string("S -> A 'b' [1.0]\nA -> 'a' [0.5] | [0.5]", cnf="allow").to_cnf()
    cycle = Grammar.from_string("S -> T | 'a'\nT -> S", cnf="allow")
    with pytest.raises(GrammarError, match="cycles"):  # weights 1, 1: a series that diverges
        Grammar(cycle.rules, cnf="allow", log_probs=[0.0, math.log(0.5), 0.0]).to_cnf()


def test_unit_cycles_below_one_sum_their_series():
    # S -> T -> S -> ... -> 'a': p(a) = 0.5 * sum_k (0.5 * 0.5)^k = 0.5 / 0.75
    g = Grammar.from_string("S -> T [0.5] | 'a' [0.5]\nT -> S [0.5] | 'b' [0.5]", cnf="allow")
    with pytest.warns(GrammarWarning):
        cnf = g.to_cnf()
    assert inside(cnf, "a") == pytest.approx(math.log(0.5 / 0.75), abs=1e-12)
    assert inside(cnf, "b") == pytest.approx(math.log(0.25 / 0.75), abs=1e-12)


# -- Viterbi and inside against brute force ------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_viterbi_and_inside_equal_brute_force(seed):
    g = random_pcfg(seed)
    rng = random.Random(seed)
    for _ in range(5):
        words = [rng.choice(g.terminals) for _ in range(rng.randint(1, 6))]
        trees = list(Forest(g, words))
        best = viterbi(g, words, cnf=True)
        if not trees:
            assert best.tree is None and best.log_prob == -math.inf
            assert inside(g, words) == -math.inf
            continue
        scores = [tree_log_prob(g, t) for t in trees]
        assert best.log_prob == pytest.approx(max(scores), abs=LOG_EPS)
        assert tree_log_prob(g, best.tree) == pytest.approx(best.log_prob, abs=LOG_EPS)
        total = np.logaddexp.reduce(scores)
        assert inside(g, words) == pytest.approx(total, abs=1e-10)
        ranked = Forest(g, words).kbest(4, cnf=True)
        expect = sorted(scores, reverse=True)[: len(ranked)]
        assert [s for s, _ in ranked] == pytest.approx(expect, abs=LOG_EPS)
        assert all(tree_log_prob(g, t) == pytest.approx(s, abs=LOG_EPS) for s, t in ranked)


@pytest.mark.parametrize("seed", range(6))
def test_item_scores_are_the_best_subtrees_and_the_beam_prunes_cell_by_cell(seed):
    """Every item's score is the log probability of its best subtree (brute force over the
    trees of its span); with a beam, the scores are those of CKY over the pruned cells:
    each kept item within the beam of its cell's best, and no better than unpruned."""
    g = random_pcfg(seed)
    rng = random.Random(seed)
    for _ in range(4):
        words = [rng.choice(g.terminals) for _ in range(rng.randint(1, 5))]
        scores = item_scores(g, words)
        for (i, j, a), v in scores.items():
            sub = Grammar(g.rules, log_probs=g.log_probs, start=a)  # the item as a sentence
            trees = [tree_log_prob(g, t) for t in Forest(sub, words[i:j])]
            assert v == pytest.approx(max(trees), abs=LOG_EPS)
        for beam in (0.5, 2.0):
            pruned = item_scores(g, words, beam=beam)
            assert set(pruned) <= set(scores)
            for (i, j, a), v in pruned.items():
                best = max(w for (p, q, _), w in pruned.items() if (p, q) == (i, j))
                assert best - v <= beam and v <= scores[i, j, a] + LOG_EPS
                if j - i > 1:  # computed from the pruned children, not the full ones
                    from_kept = max(
                        lp + pruned[i, k, r.rhs[0].name] + pruned[k, j, r.rhs[1].name]
                        for r, lp in zip(g.rules, g.log_probs, strict=True)
                        if r.lhs == a and len(r.rhs) == 2
                        for k in range(i + 1, j)
                        if (i, k, r.rhs[0].name) in pruned and (k, j, r.rhs[1].name) in pruned
                    )
                    assert v == pytest.approx(from_kept, abs=LOG_EPS)
    with pytest.raises(ValueError, match="beam must be"):
        item_scores(g, words, beam=0)


def test_viterbi_within_a_chart_is_the_best_tree_the_chart_admits():
    g = Grammar.from_string(PP)
    words = "john saw the man with a telescope".split()
    free = viterbi(g, words, cnf=True)
    # the best tree attaches the PP to the VP "saw the man": forbid that VP
    assert ("VP", 1, 4) in free.tree.spans()
    chart = {k: set(v) for k, v in fd.cyk(g, words).items()}
    chart[(1, 4)].discard("VP")
    within = viterbi(g, words, chart=chart, cnf=True)
    allowed = [t for t in Forest(g, words, chart)]
    assert within.log_prob == pytest.approx(max(tree_log_prob(g, t) for t in allowed))
    assert within.log_prob < free.log_prob
    assert ("NP", 2, 7) in within.tree.spans()  # the other attachment


def test_viterbi_errors():
    with pytest.raises(GrammarError, match="no probabilities"):
        viterbi(Grammar.builtin("example"), "a b")
    with pytest.raises(GrammarError, match="Chomsky"):
        viterbi(Grammar.from_string(GENERAL, cnf="allow"), "the man ran")
    g = Grammar.from_string(PP)
    with pytest.raises(UnknownWordError):
        viterbi(g, "john saw bob", strict=True)
    assert viterbi(g, "john saw bob").tree is None


def test_dcyk_best_tree_on_a_pcfg_is_the_most_probable():
    g = Grammar.from_string(PP)
    words = "john saw the man with a telescope".split()
    r = fd.dcyk(g, words, d=256, seed=0)
    assert r.chart == fd.cyk(g, words)
    assert r.best_parse() == viterbi(g, words)
    assert r.tree() == viterbi(g, words).tree
    scored = r.scored_trees(2)
    assert scored[0][0] == pytest.approx(viterbi(g, words).log_prob, abs=LOG_EPS)
    assert scored[1][0] < scored[0][0]
    with pytest.raises(ValueError, match="no probabilities"):
        fd.dcyk(Grammar.builtin("example"), "a b", d=64).best_parse()


# -- evalb ---------------------------------------------------------------------------------


def test_evalb_brackets_equal_a_hand_count():
    gold = Tree.fromstring(
        "(ROOT (S (NP (DT The) (NN dog)) (VP (VBD looked) (PRT (RP up)) (NP (DT the) "
        "(NN word))) (, ,) (. .)))"
    )
    test = Tree.fromstring(
        "(ROOT (S (NP (DT The) (NN dog)) (VP (VBD looked) (ADVP (RP up)) (NP (DT the) "
        "(NN word)) (, ,)) (. .)))"
    )
    # by hand, punctuation and ROOT left out, six words: S(0,6) NP(0,2) VP(2,6) ADVP(3,4)
    # (PRT counts as ADVP) NP(4,6)
    assert labelled_brackets(gold) == {
        ("S", 0, 6): 1,
        ("NP", 0, 2): 1,
        ("VP", 2, 6): 1,
        ("ADVP", 3, 4): 1,
        ("NP", 4, 6): 1,
    }
    s = evalb(gold, test)  # the test's VP also ends at 6 once the comma is gone
    assert (s.tp, s.gold, s.predicted) == (5, 5, 5)
    wrong = Tree.fromstring(
        "(ROOT (S (NP (DT The) (NN dog) (VBD looked)) (VP (RP up) (NP (DT "
        "the) (NN word))) (, ,) (. .)))"
    )
    s = evalb(gold, wrong)  # NP(0,3) VP(3,6) NP(4,6) S(0,6): S and NP(4,6) match
    assert (s.tp, s.gold, s.predicted) == (2, 5, 4)
    assert evalb(gold, None) == fd.Scores(0, 5, 0)
    assert labelled_brackets(gold.to_nltk()) == labelled_brackets(gold)


_names = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cs", "Zs", "Zl", "Zp")),
    min_size=1,
    max_size=6,
).filter(lambda s: not any(c.isspace() for c in s) and s.isprintable())


@settings(max_examples=150, deadline=None)
@given(left=_names, right=_names, prob=st.floats(min_value=1e-6, max_value=1.0))
def test_any_name_and_probability_survive_the_text_format(left, right, prob):
    rules = [
        Rule(left, (Symbol(right, False), Symbol(right, False))),
        Rule(left, (Symbol("x", True),)),
        Rule(right, (Symbol("y", True),)),
    ]
    if left == right:
        rules = rules[:2]
    probs = [prob, 1.0 - prob if prob < 1.0 else 1.0, 1.0][: len(rules)]
    if probs[1] <= 0.0:
        probs[1] = 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GrammarWarning)
        g = Grammar(rules, probs=probs)
        assert Grammar.from_string(g.to_string()) == g

"""Trees: the tree type, the forest of a chart (counts, enumeration, best, k-best, closest),
and the way back from CNF, against brute force and NLTK's chart parser."""

from __future__ import annotations

import itertools
import math
import pickle

import numpy as np
import pytest

from fastdcyk.cfg.cyk import cyk
from fastdcyk.cfg.forest import Forest, bracket_scores
from fastdcyk.cfg.generate import generate
from fastdcyk.cfg.grammar import Grammar
from fastdcyk.cfg.trees import Tree, is_parse, un_cnf

BUILTINS = ("example", "G0", "G1", "G2", "G3", "G4")

#: A grammar that to_cnf must change in every way: a terminal inside a long rule, rules of
#: three and four symbols sharing a tail, unit rules (a chain of two), and an empty rule.
GENERAL = """
S -> NP VP | S 'and' S
NP -> Det N | Det N PP | 'I' | NP2
NP2 -> Name
Name -> 'Mary' | 'John'
VP -> V NP | V NP PP | VP Adv
PP -> P NP
Adv -> 'today' | Opt 'now'
Opt -> 'right' |
Det -> 'the' | 'a'
N -> 'dog' | 'park' | 'telescope'
V -> 'saw' | 'walked'
P -> 'in' | 'with'
"""

#: The same without the empty rule (NLTK's chart parser and ours then agree tree for tree).
GENERAL_NO_EMPTY = GENERAL.replace("Opt -> 'right' |", "Opt -> 'right'").replace(
    "Adv -> 'today' | Opt 'now'", "Adv -> 'today' | Opt 'now' | 'now'"
)

GENERAL_SENTENCES = [
    "I saw the dog",
    "I saw the dog in the park with a telescope",
    "Mary saw John today and John walked the dog right now",
    "John walked a dog now",
]


def _nltk_parses(grammar_text: str, words: tuple[str, ...]) -> set[Tree]:
    nltk = pytest.importorskip("nltk")
    parser = nltk.ChartParser(nltk.CFG.fromstring(grammar_text))
    return {Tree.from_nltk(t) for t in parser.parse(list(words))}


def _brute_trees(grammar: Grammar, words, chart=None):
    """Every CNF tree of the sentence within the chart, by plain recursion (no counts)."""
    n = len(words)
    allowed = None if chart is None else {(i, j, a) for (i, j), c in chart.items() for a in c}

    def trees(i, j, a):
        if allowed is not None and (i, j, a) not in allowed:
            return []
        if j == i + 1:
            return [Tree(a, [words[i]])] if a in grammar.lexicon.get(words[i], ()) else []
        out = []
        for k in range(i + 1, j):
            for b, c in grammar.binary_by_lhs[a]:
                for lt in trees(i, k, b):
                    for rt in trees(k, j, c):
                        out.append(Tree(a, [lt, rt]))
        return out

    return trees(0, n, grammar.start)


# -- the tree type -------------------------------------------------------------------------


def test_tree_text_round_trip_and_reading():
    t = Tree("S", [Tree("NP", ["the", "dog"]), Tree("VP", [Tree("V", ["barks"]), Tree("X")])])
    assert str(t) == "(S (NP the dog) (VP (V barks) (X)))"
    assert Tree.fromstring(str(t)) == t and hash(Tree.fromstring(str(t))) == hash(t)
    assert t.leaves() == ("the", "dog", "barks")
    assert t.spans() == (("S", 0, 3), ("NP", 0, 2), ("VP", 2, 3), ("V", 2, 3), ("X", 3, 3))
    assert [str(r) for r in t.productions()] == [
        "S -> NP VP",
        "NP -> 'the' 'dog'",
        "VP -> V X",
        "V -> 'barks'",
        "X ->",
    ]
    assert t.height == 3
    assert eval(repr(t), {"Tree": Tree}) == t
    assert pickle.loads(pickle.dumps(t)) == t


def test_tree_quotes_only_words_that_cannot_be_read_back_bare():
    odd = ["two words", "(", ")", 'say "hi"', "back\\slash", "'", '"', '"hi"', "", "a\tb"]
    t = Tree("S", [Tree("W", [w]) for w in odd])
    assert Tree.fromstring(str(t)) == t
    assert t.leaves() == tuple(odd)
    # quoted where it could not stand bare, with a backslash before each backslash, quote,
    # bracket and whitespace character inside; '"' and '"hi"' bare, as NLTK reads them
    assert str(t) == (
        '(S (W "two\\ words") (W "\\(") (W "\\)") (W "say\\ \\"hi\\"") (W back\\slash) '
        '(W \') (W ") (W "hi") (W "") (W "a\\\tb"))'
    )
    # labels too: the Penn Treebank's quote tags (`` and '') are written bare
    quotes = Tree("S", [Tree("``", ["``"]), Tree("''", ["''"]), Tree("two words", ["x"])])
    assert str(quotes) == "(S (`` ``) ('' '') (\"two\\ words\" x))"
    assert Tree.fromstring(str(quotes)) == quotes


#: A sentence as the Penn Treebank writes it: words and tags with quotes, $, escaped slashes
PTB = (
    "(S (NP (PRP It)) (VP (VBZ 's) (RB n't) (NP (QP ($ $) (CD 3\\/4)) (POS ')) (`` ``) "
    "('' '') (-LRB- -LRB-) (-NONE- *T*-1)) (. .))"
)


def test_trees_are_written_as_the_penn_treebank_writes_them():
    t = Tree.fromstring(PTB)
    assert str(t) == PTB  # every word and label bare, as in the treebank's files
    assert t.leaves() == ("It", "'s", "n't", "$", "3\\/4", "'", "``", "''", "-LRB-", "*T*-1", ".")
    assert Tree.fromstring(f"( {PTB} )") == t  # the treebank's outer bracket without a label
    assert Tree.fromstring("(S (NP (PRP It)) (VP (VBZ 's)))").leaves() == ("It", "'s")
    assert Tree.fromstring("((S a))") == Tree("S", ["a"])


def test_trees_read_by_nltk_have_the_same_words():
    nltk = pytest.importorskip("nltk")
    t = Tree.fromstring(PTB)
    read = nltk.Tree.fromstring(str(t))
    assert tuple(read.leaves()) == t.leaves() and Tree.from_nltk(read) == t
    assert Tree.fromstring(str(read)) == t  # and NLTK's text reads back here


def test_fromstring_reads_what_read_trees_reads():
    from fastdcyk.cfg.treebank import read_trees

    texts = [PTB, f"( {PTB} )", "(S a)", "((S (NP (DT the) (NN dog's))))", "(S 'quoted' x\"y)"]
    for text in texts:
        (tree,) = read_trees(text)
        assert Tree.fromstring(text) == tree
        assert Tree.fromstring(str(tree)) == tree


def test_random_trees_round_trip_exactly():
    rng = np.random.default_rng(0)
    alphabet = list("ab'\"\\() \t-$`/")
    words = ["".join(rng.choice(alphabet, size=rng.integers(0, 5))) for _ in range(300)]
    labels = [w for w in words if w] + ["NP", "-NONE-", "''"]
    for k in range(100):
        kids = [Tree(str(rng.choice(labels)), [w]) for w in rng.choice(words, size=5)]
        tree = Tree(str(rng.choice(labels)), [*kids[:2], Tree("X", kids[2:])])
        assert Tree.fromstring(str(tree)) == tree, (k, str(tree))


def test_the_treebank_sample_reads_back_and_nltk_reads_the_same_words():
    """Trees of NLTK's Penn Treebank sample: ``str(tree)`` is read back exactly, and NLTK
    reads the same tree from it (skipped where NLTK's data lacks the sample)."""
    from pathlib import Path

    from fastdcyk.cfg.treebank import read_trees

    nltk = pytest.importorskip("nltk")
    try:
        sample = Path(nltk.data.find("corpora/treebank/combined"))
    except LookupError:
        pytest.skip("needs NLTK's Penn Treebank sample: nltk.download('treebank')")
    trees = read_trees(sample / "wsj_0001.mrg") + read_trees(sample / "wsj_0037.mrg")
    assert any("n't" in t.leaves() for t in trees) and any("'s" in t.leaves() for t in trees)
    for tree in trees:
        text = str(tree)
        assert Tree.fromstring(text) == tree
        assert Tree.from_nltk(nltk.Tree.fromstring(text)) == tree


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "holds no tree"),
        ("S", "text outside brackets at character 0"),
        ("(S a", r"1 bracket\(s\) not closed"),
        ("(S a))", r"'\)' without '\(' at character 5"),
        ("(S a) (S b)", "text after the tree at character 6"),
        ("(S a) x", "text outside brackets at character 6"),
        ("a (S b)", "text outside brackets at character 0"),
        ("()", "no label and holds 0 item"),
        ("((S a) (S b))", "no label and holds 2 item"),
        ("((S a) x)", "no label and holds 2 item"),
        ('("" a)', "empty label"),
    ],
)
def test_tree_fromstring_rejects_what_is_not_one_tree(text, message):
    with pytest.raises(ValueError, match=message):
        Tree.fromstring(text)


def test_tree_checks_its_parts_and_is_immutable():
    with pytest.raises(TypeError, match="label"):
        Tree("", [])
    with pytest.raises(TypeError, match="children"):
        Tree("S", [1])
    t = Tree("S", ["a"])
    with pytest.raises(AttributeError):
        t.label = "X"


def test_pretty_draws_one_constituent_per_line():
    t = Tree.fromstring("(S (NP (D the) (N dog)) (VP barks))")
    assert t.pretty() == "S\n├── NP\n│   ├── D  the\n│   └── N  dog\n└── VP  barks"
    assert t.pretty(ascii=True) == "S\n+-- NP\n|   +-- D  the\n|   `-- N  dog\n`-- VP  barks"


def test_tree_to_and_from_nltk():
    pytest.importorskip("nltk")
    t = Tree.fromstring("(S (NP (D the) (N dog)) (VP barks))")
    assert str(t.to_nltk()) == "(S (NP (D the) (N dog)) (VP barks))"
    assert Tree.from_nltk(t.to_nltk()) == t


# -- the symbolic forest -------------------------------------------------------------------


@pytest.mark.parametrize("n", range(1, 9))
def test_counts_are_catalan_numbers_and_enumeration_is_complete(n):
    g = Grammar.from_string("S -> S S | 'a'")
    f = Forest(g, ["a"] * n)
    assert f.count == math.comb(2 * (n - 1), n - 1) // n
    trees = list(f)
    assert len(trees) == len(set(trees)) == f.count
    assert set(trees) == set(_brute_trees(g, ("a",) * n))
    assert all(is_parse(t, g, ["a"] * n) for t in trees)
    assert f.tree(-1) == trees[-1]


@pytest.mark.parametrize("name", BUILTINS)
def test_builtin_forests_match_brute_force_and_cyk(name):
    g = Grammar.builtin(name)
    for words in generate(g, 12, min_len=2, max_len=6, seed=3):
        f = Forest(g, words)
        brute = _brute_trees(g, words)
        assert f.recognized and f.count == len(brute) > 0
        assert set(f) == set(brute)
        # every item of every tree is in CYK's chart
        chart = cyk(g, words)
        assert all(a in chart[(i, j)] for t in brute for a, i, j in t.spans())


@pytest.mark.parametrize("name", BUILTINS)
def test_first_trees_are_the_order_s_first_and_need_no_scores(name):
    """first(k) walks each item's first edge for the first tree and counts for the rest:
    the same trees as tree(0), tree(1), ...; a forest given its scores as a function never
    calls it for them, and calls it once when a score is needed."""
    g = Grammar.builtin(name)
    for words in generate(g, 8, min_len=2, max_len=7, seed=7):
        calls = []

        def scores(words=words, calls=calls):
            calls.append(1)
            chart = cyk(g, words)
            return {(i, j, a): -0.5 for (i, j), cell in chart.items() for a in cell}

        f = Forest(g, words, scores=scores)
        assert f.first(1) == [f.tree(0)]
        assert f.first(4) == [f.tree(t) for t in range(min(4, f.count))]
        assert not calls
        assert f.best() is not None and calls == [1]
        f.kbest(2)
        assert calls == [1]


@pytest.mark.parametrize("name", BUILTINS)
def test_tree_count_equals_the_number_of_nltk_parses(name):
    g = Grammar.builtin(name)
    for words in generate(g, 8, min_len=2, max_len=6, seed=5):
        nltk_trees = _nltk_parses(g.to_string(), words)
        f = Forest(g, words)
        assert f.count == len(nltk_trees)
        assert set(f) == nltk_trees


def test_a_sentence_outside_the_language_has_no_tree():
    g = Grammar.builtin("example")
    f = Forest(g, "b a")
    assert not f.recognized and f.count == 0 and list(f) == []
    assert f.kbest(3) == [] and f.first(3) == [] and f.closest(Tree("S", ["b"])) == (None, 0)
    with pytest.raises(ValueError, match="not recognized"):
        f.tree(0)
    unknown = Forest(g, "a zebra")
    assert not unknown.recognized


def test_forest_checks_its_arguments():
    g = Grammar.builtin("example")
    with pytest.raises(TypeError, match="Grammar"):
        Forest("S -> 'a'", "a")
    with pytest.raises(ValueError, match="Chomsky"):
        Forest(Grammar.from_string("S -> 'a' 'b'", cnf="allow"), "a b")
    f = Forest(g, "a a b")
    with pytest.raises(IndexError, match="holds 1 trees"):
        f.tree(1)
    with pytest.raises(TypeError):
        f.tree(0.0)
    with pytest.raises(ValueError, match="no scores"):
        f.best()
    with pytest.raises(ValueError, match="positive int"):
        Forest(g, "a a b", scores={}).kbest(0)


# -- scores: best and k best ------------------------------------------------------------


def _random_scores(grammar, words, seed):
    rng = np.random.default_rng(seed)
    n = len(words)
    return {
        (i, j, a): float(np.log(rng.uniform(0.5, 1.0)))
        for i in range(n)
        for j in range(i + 1, n + 1)
        for a in grammar.nonterminals
    }


@pytest.mark.parametrize("seed", range(4))
def test_best_and_kbest_against_brute_force(seed):
    g = Grammar.from_string("S -> S S | S A | A S | 'a'\nA -> S S | A A | 'a'")
    words = ("a",) * 6
    scores = _random_scores(g, words, seed)
    f = Forest(g, words, scores=scores)
    everything = sorted(((f.score(t), str(t)) for t in f), key=lambda x: -x[0])
    assert len(everything) == f.count > 50
    assert f.score(f.best()) == pytest.approx(everything[0][0], abs=1e-12)
    best = f.kbest(25)
    values = [s for s, _ in best]
    assert values == sorted(values, reverse=True)
    # the k best scores are the k largest scores (ties may come in any order)
    np.testing.assert_allclose(values, [s for s, _ in everything[:25]], atol=1e-12)
    assert len({t for _, t in best}) == 25
    for s, t in best:
        assert f.score(t) == pytest.approx(s, abs=1e-12)
    assert {t for _, t in f.kbest(f.count + 10)} == set(f)


def test_closest_tree_and_bracket_scores_against_brute_force():
    g = Grammar.from_string("S -> S S | S A | A S | 'a'\nA -> S S | A A | 'a'")
    words = ("a",) * 5
    gold = Forest(g, words)
    # a tree of another grammar over the same words: its brackets partly match
    other = Tree.fromstring("(S (B (S a) (S a)) (S (S a) (B (A a) (S a))))")
    brackets = set(other.spans())
    best = max(len(brackets & set(t.spans())) for t in gold)
    tree, shared = gold.closest(other)
    assert shared == best == len(brackets & set(tree.spans())) and 0 < shared < 9
    sc = bracket_scores(other, gold)
    assert (sc.tp, sc.gold, sc.predicted) == (best, 9, 9)
    for t in itertools.islice(gold, 20):  # a tree of the forest is its own closest
        assert bracket_scores(t, gold).f1 == 1.0
    assert bracket_scores(None, gold).recall == 0.0
    with pytest.raises(ValueError, match="over other words"):  # it scored them before
        bracket_scores(other, Forest(g, ("b",)))


# -- charts with errors ------------------------------------------------------------------


@pytest.mark.parametrize("name", ["G2", "G4"])
def test_a_chart_with_false_and_missing_items_yields_only_valid_trees(name):
    g = Grammar.builtin(name)
    rng = np.random.default_rng(7)
    seen_false = 0
    for words in generate(g, 30, min_len=3, max_len=7, seed=11):
        chart = {k: set(v) for k, v in cyk(g, words).items()}
        for cell in chart.values():  # false items everywhere, some true ones dropped
            cell |= {a for a in g.nonterminals if rng.random() < 0.3}
            cell -= {a for a in list(cell) if rng.random() < 0.1}
        f = Forest(g, words, chart)
        brute = _brute_trees(g, words, chart)
        assert f.count == len(brute)
        for t in itertools.islice(f, 50):
            assert is_parse(t, g, words)
            assert all(a in chart[(i, j)] for a, i, j in t.spans())
        truth = cyk(g, words)
        seen_false += sum(a not in truth[(i, j)] for (i, j), c in chart.items() for a in c)
        if not f.recognized:
            assert f.best() is None and list(f) == []
    assert seen_false > 100  # the charts did hold false items


# -- back from CNF -------------------------------------------------------------------------


@pytest.mark.parametrize("sentence", GENERAL_SENTENCES)
def test_trees_come_back_in_the_grammar_the_user_wrote(sentence):
    original = Grammar.from_string(GENERAL, cnf="allow")
    cnf = original.to_cnf()
    assert cnf.origin is not None and cnf.origin.grammar is original
    words = Grammar.normalize_words(sentence)
    f = Forest(cnf, words)
    assert f.recognized
    for t in f:
        assert is_parse(t, original, words), str(t)
        assert not {label for label, _, _ in t.spans()} & cnf.origin.helpers
    for k in range(min(5, f.count)):
        assert is_parse(f.tree(k, cnf=True), cnf, words)


@pytest.mark.parametrize("sentence", GENERAL_SENTENCES[:2] + GENERAL_SENTENCES[3:])
def test_un_cnf_trees_are_nltks_parses_of_the_original_grammar(sentence):
    original = Grammar.from_string(GENERAL_NO_EMPTY, cnf="allow")
    cnf = original.to_cnf()
    words = Grammar.normalize_words(sentence)
    nltk_trees = _nltk_parses(GENERAL_NO_EMPTY, words)
    ours = list(Forest(cnf, words))
    # the conversion merges no derivations here (one unit path each, no empty rule)
    assert len(ours) == len(set(ours)) == len(nltk_trees) > 0
    assert set(ours) == nltk_trees


def test_empty_constituents_are_put_back():
    original = Grammar.from_string("S -> A 'x' B\nA -> 'a' |\nB -> C C\nC -> ", cnf="allow")
    cnf = original.to_cnf()
    trees = {str(t) for t in Forest(cnf, "x")}
    assert trees == {"(S (A) x (B (C) (C)))"}
    assert {str(t) for t in Forest(cnf, "a x")} == {"(S (A a) x (B (C) (C)))"}


def test_un_cnf_through_pickle_and_of_a_foreign_tree():
    original = Grammar.from_string(GENERAL, cnf="allow")
    cnf = pickle.loads(pickle.dumps(original.to_cnf()))
    assert cnf.origin is not None and cnf.origin.grammar == original
    words = Grammar.normalize_words("I saw the dog")
    assert is_parse(Forest(cnf, words).tree(0), original, words)
    with pytest.raises(ValueError, match="does not have"):
        un_cnf(Tree.fromstring("(S (NP I) (Q saw))"), cnf)
    g = Grammar.builtin("G0")  # no origin: unchanged
    t = Tree.fromstring("(S (X a))")
    assert un_cnf(t, g) is t
    converted = Grammar.from_string(GENERAL, cnf="convert")
    assert converted.origin is not None and converted.origin.grammar == original


def test_is_parse_checks_root_leaves_and_rules():
    g = Grammar.builtin("example")
    good = Tree.fromstring("(S (D a) (E b))")
    assert is_parse(good, g, ["a", "b"])
    assert not is_parse(good, g, "a a")
    assert not is_parse(Tree.fromstring("(D (D a) (E b))"), g, "a b")
    assert not is_parse(Tree.fromstring("(S (D a) (S b))"), g, "a b")


def test_a_chart_of_another_sentence_or_no_sentence_is_refused():
    """A reversed span, a chart longer than the sentence, and an empty sentence: each was
    accepted (scored, or a forest of no tree) and each is now an error that says why."""
    from fastdcyk.cfg.metrics import cell_scores

    g = Grammar.builtin("G0")
    with pytest.raises(ValueError, match=r"the key \(1, 0\), which is no span"):
        cell_scores({(1, 0): {"S"}}, {(1, 0): {"S"}})
    three = cyk(g, "fish swim fish")
    with pytest.raises(ValueError, match=r"span \(0, 3\), beyond the sentence's 2 words"):
        Forest(g, "fish swim", chart=three)
    with pytest.raises(ValueError, match="empty sentence"):
        Forest(g, "")
    assert Forest(g, "fish swim fish", chart=three).count == Forest(g, "fish swim fish").count


def test_bare_double_quotes_read_as_nltk_reads_them():
    """A bare '"' (a word of some treebanks) is a word, not the start of a quoted token
    that runs on to the next '"' across brackets; '"hi"' stays '"hi"', as in NLTK; a word
    ending in a backslash is quoted (NLTK reads '\\)' as an escaped bracket)."""
    assert Tree.fromstring('(S (X ") (Y "))').leaves() == ('"', '"')
    assert Tree.fromstring('(S (X "hi") (Y b))').leaves() == ('"hi"', "b")
    assert str(Tree("X", ["a\\"])) == '(X "a\\\\")'
    assert Tree.fromstring(str(Tree("X", ["a\\"]))).leaves() == ("a\\",)
    odd = Tree("\"'", [" "])  # a bare label that starts with '"', then a quoted word
    assert Tree.fromstring(str(odd)) == odd

"""Per-position lexical input for the symbolic parsers: cyk(tags=), viterbi/inside/Forest
(lexical=), Grammar.preterminals and TreebankGrammar.preterminals_of."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import fastdcyk as fd
from fastdcyk.cfg.grammar import Rule, Symbol
from fastdcyk.cfg.treebank import TreebankGrammar, clean, read_trees

DATA = Path(__file__).parent.parent / "data"
PP = DATA / "pp.pcfg"
BANK = DATA / "mini_treebank.mrg"
WORDS = tuple("john saw the man with a telescope".split())


def test_preterminals_are_the_nonterminals_with_a_word_rule_in_order():
    g = fd.Grammar.load(PP)
    assert g.preterminals == tuple(a for a in g.nonterminals if g.unary_by_lhs[a])
    assert set(g.preterminals) == {a for a, _ in g.unary_rules}


def test_tags_fill_the_word_cells_as_words_with_those_tags_would():
    g = fd.Grammar.builtin("G4")
    words = ("fish", "swim", "near", "fish")
    tags = [g.lexicon[w] for w in words]
    assert fd.cyk(g, ["x1", "x2", "x3", "x4"], tags=tags) == fd.cyk(g, words)
    # None keeps a word's own rules; a single str is one tag
    assert fd.cyk(g, ["fish", "x", "near", "fish"], tags=[None, "VP", None, None]) == fd.cyk(
        g, ["fish", "swim", "near", "fish"]
    )
    with pytest.raises(ValueError, match="3 entries for a sentence of 4 words"):
        fd.cyk(g, words, tags=tags[:3])
    with pytest.raises(ValueError, match="'S', not a preterminal"):
        fd.cyk(g, words, tags=[None, None, None, {"S"}])


def test_the_grammars_own_lexical_log_probabilities_give_viterbi_and_inside_unchanged():
    g = fd.Grammar.load(PP)
    own = [{a: g.log_prob(Rule(a, (Symbol(w, True),))) for a in g.lexicon[w]} for w in WORDS]
    assert fd.viterbi(g, WORDS, lexical=own) == fd.viterbi(g, WORDS)
    assert fd.viterbi(g, WORDS, lexical=[None] * 7) == fd.viterbi(g, WORDS)
    assert fd.inside(g, WORDS, lexical=own) == pytest.approx(fd.inside(g, WORDS), abs=1e-12)


def test_lexical_scores_replace_the_words_and_rank_the_trees():
    g = fd.Grammar.load(PP)
    tokens = [f"w{i}" for i in range(7)]  # not terminals: the lexical scores stand for them
    tags = [{a: 0.0 for a in g.lexicon[w]} for w in WORDS]
    best = fd.viterbi(g, tokens, lexical=tags)
    forest = fd.Forest(g, tokens, lexical=tags)
    assert forest.count == 2  # the PP attachment's two trees
    scored = forest.kbest(2)
    assert best.log_prob == pytest.approx(scored[0][0], abs=1e-12)
    assert best.tree == scored[0][1] and tuple(best.tree.leaves()) == tuple(tokens)
    # the binary rules' log probabilities alone: the word rules' share taken out
    words_lp = sum(g.log_prob(Rule(a, (Symbol(w, True),))) for a, w in _tags_of(best.tree, WORDS))
    assert best.log_prob == pytest.approx(fd.viterbi(g, WORDS).log_prob - words_lp, abs=1e-12)
    total = math.log(sum(math.exp(s) for s, _ in scored))
    assert fd.inside(g, tokens, lexical=tags) == pytest.approx(total, abs=1e-12)
    with pytest.raises(ValueError, match="6 entries for a sentence of 7 words"):
        fd.viterbi(g, tokens, lexical=tags[:6])
    with pytest.raises(ValueError, match="'S', which is not a preterminal"):
        fd.viterbi(g, tokens, lexical=[{"S": 0.0}] + tags[1:])
    with pytest.raises(ValueError, match="finite or -inf"):
        fd.viterbi(g, tokens, lexical=[{"NP": math.nan}] + tags[1:])
    with pytest.raises(TypeError, match="one mapping"):
        fd.viterbi(g, tokens, lexical={"NP": 0.0})


def _tags_of(tree, words):
    out = []

    def walk(node):
        if len(node.children) == 1 and isinstance(node.children[0], str):
            out.append(node.label)
        else:
            for k in node.children:
                walk(k)

    walk(tree)
    return list(zip(out, words, strict=True))


def test_a_forest_on_an_unweighted_grammar_adds_the_lexical_scores_to_the_items():
    g = fd.Grammar.builtin("G4")
    words = ("fish", "swim")
    lexical = [{"NP": -1.0, "VP": -3.0}, {"VP": -0.5}]
    scores = {(i, j, a): 0.0 for (i, j), cell in fd.cyk(g, words).items() for a in cell}
    forest = fd.Forest(g, ["a", "b"], fd.cyk(g, words), scores, lexical=lexical)
    best_score, best = forest.kbest(1)[0]
    assert best_score == pytest.approx(-1.5)
    assert [label for label, _ in _tags_of(best, words)] == ["NP", "VP"]


def test_preterminals_of_a_tree_are_the_cnf_grammars_tags():
    tb = TreebankGrammar.from_trees(BANK)
    trees = [clean(t) for t in read_trees(BANK)]
    first = trees[0]  # (S (NP (DT The) (NN dog)) (VP (VBD saw) (NP ...)) (. .))
    assert tb.preterminals_of(first) == ("DT", "NN", "VBD", "DT", "JJ", "NN", ".")
    # (NP-SBJ-1 (NNP Mary)): the chain NP -> NNP over a word is the CNF rule NP -> 'Mary'
    assert tb.preterminals_of(trees[1])[0] == "NP"
    g = tb.grammar
    for tree in trees:
        tags = tb.preterminals_of(tree)
        assert len(tags) == len(tree.leaves())
        assert set(tags) <= set(g.preterminals)
        words = tb.words(tree.leaves())
        # the gold tags derive the sentence, and Viterbi with them gives the gold tree
        chart = fd.cyk(g, words, tags=tags)
        assert g.start in chart[(0, len(words))]
        best = fd.viterbi(g, words, lexical=[{t: 0.0} for t in tags])
        assert best.tree is not None
    with pytest.raises(ValueError, match="no words left"):
        tb.preterminals_of("(S (NP (-NONE- *)))")


def test_trees_over_words_the_grammar_never_saw_come_back_in_the_treebanks_labels():
    tb = TreebankGrammar.from_trees(BANK)
    g = tb.grammar
    words = ("Zorg", "saw", "the", "cat")  # 'Zorg': no rule of the grammar produces it
    lexical = [{"NP": 0.0}, {"VBD": 0.0}, {"DT": 0.0}, {"NN": 0.0}]
    best = fd.viterbi(g, words, lexical=lexical)
    # the CNF rule NP -> word stands for the chain NP -> NNP -> word of the training trees
    assert str(tb.to_treebank(best.tree, words)) == (
        "(ROOT (S (NP (NNP Zorg)) (VP (VBD saw) (NP (DT the) (NN cat)))))"
    )
    assert fd.Forest(g, words, lexical=lexical).tree(0) == best.tree
    cnf_tree = fd.viterbi(g, words, lexical=lexical, cnf=True).tree
    assert fd.un_cnf(cnf_tree, g, lexical=True) == best.tree
    with pytest.raises(ValueError, match="which the grammar does not have"):
        fd.un_cnf(cnf_tree, g)  # without lexical=True the unknown word is an error

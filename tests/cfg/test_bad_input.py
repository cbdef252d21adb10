"""Bad input on the trees, evalb, PCFG weights and decode surfaces: a clear error (or the
right result) where a wrong or meaningless one came back before."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import fastdcyk as fd
from fastdcyk.cfg.forest import Forest, bracket_scores
from fastdcyk.cfg.grammar import GrammarError, GrammarWarning, Rule, Symbol
from fastdcyk.cfg.metrics import labelled_brackets
from fastdcyk.cfg.treebank import TreebankGrammar, read_trees

DOG = "(S (NP (DT the) (NN dog)) (VP (VBZ barks)))"
CAT = "(S (NP (DT a) (NN cat)) (VP (VBZ sleeps)))"


def test_evalb_refuses_trees_of_other_sentences():
    gold = fd.Tree.fromstring(DOG)
    assert fd.evalb(gold, gold).tp == 3
    with pytest.raises(ValueError, match=r"differ at position 0 \(gold 'the', test 'a'.*Words"):
        fd.evalb(gold, fd.Tree.fromstring(CAT))
    shorter = fd.Tree.fromstring("(S (NP (DT the) (NN dog)))")
    with pytest.raises(ValueError, match=r"gold 3 words, test 2.*Length unmatch"):
        fd.evalb(gold, shorter)
    with pytest.raises(TypeError, match="gold must be a Tree or an nltk.Tree, got NoneType"):
        fd.evalb(None, gold)
    with pytest.raises(TypeError, match=r"got str \(parse it first"):
        labelled_brackets("(S (NP a))")
    assert fd.evalb(gold, None).gold == 3  # no parse: every bracket missed


def test_bracket_scores_refuse_a_tree_of_another_sentence():
    g = fd.Grammar.builtin("G0")
    forest = Forest(g, "fish swim")
    tree = forest.tree(0, cnf=True)
    assert bracket_scores(tree, forest).tp == 3
    (longer,) = fd.generate(g, 1, min_len=3, max_len=3, seed=0)
    other = Forest(g, longer).tree(0, cnf=True)
    with pytest.raises(ValueError, match="over other words"):
        bracket_scores(other, forest)
    with pytest.raises(TypeError, match="gold must be a Forest, got NoneType"):
        bracket_scores(tree, None)
    with pytest.raises(TypeError, match="tree must be a Tree or None, got str"):
        bracket_scores("(S a)", forest)


def test_treebank_reading_refuses_what_it_cannot_read(tmp_path):
    latin = tmp_path / "latin.mrg"
    latin.write_bytes("( (S (NP (NN caf\xe9)) (VP (VB x))) )".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin.mrg: not utf-8 \(byte 16.*encoding='latin-1'"):
        read_trees(latin)
    (tree,) = read_trees(latin, encoding="latin-1")
    assert tree.leaves() == ("café", "x")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="holds no .mrg files"):
        read_trees(empty)
    with pytest.raises(TypeError, match="cannot read trees from float"):
        TreebankGrammar.from_trees(3.5)
    with pytest.raises(ValueError, match="parent must be True or False, got 'no'"):
        TreebankGrammar.from_trees([DOG], parent="no")


def test_to_treebank_needs_the_sentence_of_its_tree():
    tb = TreebankGrammar.from_trees([DOG, CAT], rare=0)
    parse = tb.parse("the dog barks")
    assert parse.tree.leaves() == ("the", "dog", "barks")
    tree = fd.viterbi(tb.grammar, tb.words("the dog barks")).tree
    with pytest.raises(ValueError, match="words has 4 words for a tree of 3"):
        tb.to_treebank(tree, "the dog barks loud")
    with pytest.raises(ValueError, match="words has 2 words for a tree of 3"):
        tb.to_treebank(tree, "the dog")
    with pytest.raises(TypeError, match="tree must be a Tree or None, got str"):
        tb.to_treebank(DOG)


def test_pcfg_weights_are_checked():
    rules = [Rule("S", (Symbol("a", True),)), Rule("S", (Symbol("b", True),))]
    with pytest.raises(GrammarError, match=r"probs is a string \('11'\)"):
        fd.Grammar(rules, probs="11")
    with pytest.raises(GrammarError, match="'T -> 'a'', which is not a rule"):
        fd.Grammar(rules, probs={rules[0]: 0.5, rules[1]: 0.5, Rule("T", rules[0].rhs): 1.0})
    with pytest.raises(GrammarError, match="has the key \"S -> 'a'\", not a Rule"):
        fd.Grammar(rules, probs={"S -> 'a'": 0.5, rules[1]: 0.5})
    with pytest.raises(GrammarError, match="start symbol 'X' appears in no rule"):
        fd.Grammar(rules, start="X")
    nltk = pytest.importorskip("nltk")
    cfg = nltk.CFG.fromstring("S -> A\nA -> 'a'")
    cfg._start = nltk.Nonterminal("T")
    cfg._productions.append(nltk.Production(nltk.Nonterminal("A"), [nltk.Nonterminal("T")]))
    with pytest.warns(GrammarWarning, match="start symbol T has no rules"):
        fd.Grammar.from_nltk(cfg, cnf="allow")


def test_an_improper_pcfg_in_cnf_is_refused_by_to_string_not_written():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GrammarWarning)  # its sums of 1.8, said at read time
        g = fd.Grammar.from_string(
            "S -> A A [1.0]\nA -> B [0.9] | 'a' [0.9]\nB -> 'a' [1.0]", cnf="convert"
        )
    assert g.probs is None and max(g.log_probs) > 0  # folded: 1.8, a weight, no probability
    with pytest.raises(ValueError, match="save the grammar before to_cnf"):
        g.to_string()


def test_beam_without_the_weighted_table_and_bad_decode_inputs():
    with pytest.raises(ValueError, match="beam=3 applies to weights='table' only"):
        fd.dcyk("G0", "fish swim", d=64, beam=3)
    r = fd.dcyk("G0", "fish swim", d=64, variant="trace")
    g = fd.Grammar.builtin("G0")
    nan = np.full_like(r.p_left, np.nan)
    for readback in ("matched", "lstsq"):
        with pytest.raises(ValueError, match=r"p_left holds 4096 non-finite values"):
            fd.decode(nan, g, words="fish swim", codebook=r.codebook, readback=readback)
    with pytest.raises(ValueError, match=r"n must be an integer >= 1, got 2.5"):
        fd.decode(r.p_left, g, n=2.5, codebook=r.codebook)


def test_a_grammar_from_a_pipe_loads_and_a_folder_is_named(tmp_path):
    import os

    read, write = os.pipe()
    os.write(write, b"S -> A B [1.0]\nA -> 'a' [1.0]\nB -> 'b' [1.0]\n")
    os.close(write)
    try:  # as the shell's <(cat g.pcfg) gives it: /dev/fd/N, no regular file
        g = fd.Grammar.load(f"/dev/fd/{read}")
    finally:
        os.close(read)
    assert g.is_weighted and g.terminals == ("a", "b")
    with pytest.raises(GrammarError, match="is a folder, not a grammar file"):
        fd.Grammar.load(tmp_path)


def test_the_treebank_command_scores_an_unseen_word_as_no_tree(tmp_path, capsys):
    from fastdcyk.cli import main

    train, test = tmp_path / "train.mrg", tmp_path / "test.mrg"
    train.write_text(f"( {DOG} )\n( {CAT} )\n")
    test.write_text(f"( {DOG.replace('dog', 'cow')} )\n( {CAT} )\n")
    argv = ["treebank", "--train", str(train), "--test", str(test), "--rare", "0"]
    assert main([*argv, "--dim", "64", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "1 with words the training trees did not keep" in out
    assert "D-CYK" in out and "1/2" in out and "Traceback" not in out


RESERVED = (
    "(S (NP+X (DT a) (NN b)) (VP|<Q (V c) (NP^Z (D%1 d) (N-1 e)) (PP>R (P f) (-LRB- -LRB-) (N g))))"
)


@pytest.mark.parametrize("parent", [False, True])
def test_labels_with_the_transforms_characters_come_back_as_they_were(parent):
    from fastdcyk.cfg.treebank import _prepare, _unprepare, clean

    tree = fd.Tree.fromstring(RESERVED)
    for horizontal in (1, 2):
        assert _unprepare(_prepare(tree, horizontal, parent)) == tree
    tb = TreebankGrammar.from_trees([RESERVED], rare=0, parent=parent)
    # the parse of its one training sentence is its tree, cleaned (N-1: an index, stripped)
    got = tb.parse("a b c d e f -LRB- g").tree
    assert got == fd.Tree("ROOT", [clean(tree)]) and "N-1" not in str(got)


def test_a_word_beside_a_phrase_or_two_words_under_a_tag_are_named():
    with pytest.raises(ValueError, match=r"tree 0: S holds the word\(s\) \['b'\] beside a phrase"):
        TreebankGrammar.from_trees(["(S (NP (DT a)) b)"])
    with pytest.raises(ValueError, match=r"tree 1: NP holds the word\(s\) \['a', 'b'\] under one"):
        TreebankGrammar.from_trees([DOG, "(S (NP a b) (VP (V c)))"])


def test_generate_takes_a_grammar_by_name_and_refuses_what_is_not_one():
    assert fd.generate("G0", 2, 2, 2, seed=0) == fd.generate(fd.Grammar.builtin("G0"), 2, 2, 2)
    with pytest.raises(TypeError, match="grammar must be a fastdcyk.Grammar, .*got int"):
        fd.generate(3, 2)


def test_the_symbolic_parsers_take_a_grammar_by_name():
    g = fd.Grammar.builtin("G0")
    assert fd.cyk("G0", "fish swim") == fd.cyk(g, "fish swim")
    assert fd.recognizes("G0", "fish swim")
    pcfg = fd.Grammar.from_string("S -> A B [1.0]\nA -> 'a' [1.0]\nB -> 'b' [1.0]")
    assert fd.viterbi(pcfg, "a b").log_prob == 0.0
    for bad in (3, None, b"G0"):
        with pytest.raises(TypeError, match="grammar must be a fastdcyk.Grammar"):
            fd.cyk(bad, "fish swim")


def test_an_unknown_word_is_named_with_its_0_based_position_and_the_terminal_it_resembles():
    """Words are matched exactly; a word that differs from a terminal only by its case or the
    punctuation around it gets a did-you-mean, in Python as on the command line."""
    g = fd.Grammar.builtin("G0")
    for words, word, like in (
        ("Fish swim", "Fish", "fish"),
        ("fish swim.", "swim.", "swim"),
        ("fish (near) fish", "(near)", "near"),
    ):
        pos = words.split().index(word)
        hint = rf"word '{re.escape(word)}' at position {pos} \(0-based\).*did you mean '{like}'"
        with pytest.raises(ValueError, match=hint):
            fd.dcyk(g, words)
        with pytest.raises(ValueError, match=hint):
            fd.cyk(g, words, strict=True)
    with pytest.raises(ValueError) as info:
        fd.dcyk(g, "fish cat")
    assert "did you mean" not in str(info.value) and "(0-based)" in str(info.value)
    assert g.terminal_like("FISH") == "fish" and g.terminal_like("...") is None

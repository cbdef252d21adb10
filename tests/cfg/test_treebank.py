"""A PCFG from trees: reading, cleaning, the binarisation and its inverse, unknown words."""

from __future__ import annotations

import math
import random
from collections import Counter
from pathlib import Path

import pytest

import fastdcyk as fd
from fastdcyk.cfg.grammar import Rule, Symbol
from fastdcyk.cfg.metrics import evalb
from fastdcyk.cfg.treebank import (
    TreebankGrammar,
    _prepare,
    _unprepare,
    clean,
    read_trees,
    strip_label,
    word_class,
)
from fastdcyk.cfg.trees import Tree
from fastdcyk.cfg.viterbi import inside

BANK = Path(__file__).parent.parent / "data" / "mini_treebank.mrg"


def test_read_trees_removes_the_unlabelled_wrapper_and_reads_folders(tmp_path):
    trees = read_trees(BANK)
    assert len(trees) == 6 and trees[0].label == "S"
    (tmp_path / "a.mrg").write_text(BANK.read_text())
    (tmp_path / "b.txt").write_text("not read")
    assert read_trees(tmp_path) == trees
    assert read_trees([BANK.read_text(), str(BANK)]) == trees + trees
    assert read_trees(trees[:2]) == trees[:2]
    with pytest.raises(ValueError, match="not closed"):
        read_trees("((S (NP a)")


def test_clean_strips_tags_indices_and_empty_elements():
    assert [strip_label(x) for x in ("NP-SBJ-1", "S-TPC-2", "NP=2", "-NONE-", "-LRB-", "PRP$")] == [
        "NP",
        "S",
        "NP",
        "-NONE-",
        "-LRB-",
        "PRP$",
    ]
    second = clean(read_trees(BANK)[1])
    assert str(second) == (
        "(S (NP (NNP Mary)) (VP (VBD wanted) (S (VP (TO to) (VP (VB see) (NP (DT the) "
        "(NN dog)))))) (. .))"
    )
    assert clean(Tree("S", [Tree("-NONE-", ["*"])])) is None


@pytest.mark.parametrize("horizontal", [1, 2, 5])
@pytest.mark.parametrize("parent", [False, True])
def test_binarisation_is_undone_exactly(horizontal, parent):
    for tree in map(clean, read_trees(BANK)):
        prepared = _prepare(tree, horizontal, parent)
        for node in [prepared]:
            stack = [node]
            while stack:
                n = stack.pop()
                kids = [k for k in n.children if isinstance(k, Tree)]
                assert len(n.children) <= 2
                stack.extend(kids)
        assert _unprepare(prepared) == tree


def test_the_induced_grammar_is_a_pcfg_of_relative_frequencies():
    tb = TreebankGrammar.from_trees(BANK, rare=0)
    before = tb.grammar.origin.grammar
    totals: Counter[str] = Counter()
    for p, rule in zip(before.probs, before.rules, strict=True):
        totals[rule.lhs] += p
    assert all(t == pytest.approx(1.0, abs=1e-12) for t in totals.values())
    # counted by hand: NP -> DT NN at 6 of the 13 NP nodes (2 + 2 + 2 + 3 + 2 + 2; the
    # empty subject of the second tree is gone)
    np_rules = {r: p for r, p in zip(before.rules, before.probs, strict=True) if r.lhs == "NP"}
    dt_nn = Rule("NP", (Symbol("DT", False), Symbol("NN", False)))
    assert np_rules[dt_nn] == pytest.approx(6 / 13)
    # every training sentence parses, and its probability is at least its tree's
    for tree in map(clean, read_trees(BANK)):
        words = tree.leaves()
        parse = tb.parse(words)
        assert parse.tree is not None and parse.tree.leaves() == words
        assert inside(tb.grammar, tb.words(words)) >= parse.log_prob - 1e-12


def test_unambiguous_training_sentences_come_back_as_their_trees():
    tb = TreebankGrammar.from_trees(BANK, rare=0)
    first = clean(read_trees(BANK)[0])
    back = tb.parse(first.leaves()).tree
    assert back == Tree("ROOT", [first])
    assert evalb(first, back).f1 == 1.0


def test_unknown_words_get_classes():
    assert word_class("Frobnicated") == "UNK-INITC-ed"
    assert word_class("Frobnicated", first=True) == "UNK-CAP1-ed"
    assert word_class("IBM") == "UNK-CAPS"
    assert word_class("1987") == "UNK-NUM"
    assert word_class("ex-wife") == "UNK-LC-DASH"
    tb = TreebankGrammar.from_trees(BANK, rare=1)
    assert "dog" in tb.known and "bone" not in tb.known
    sentence = "the dog saw a frobnicating zyzzyva ."  # "saw" is in one tree only: rare
    mapped = tb.words(sentence)
    assert tb.unknown(sentence) == (2, 4, 5)
    assert [mapped[k] for k in (0, 1, 3, 6)] == ["the", "dog", "a", "."]
    assert all(mapped[k].startswith("UNK-LC") for k in (2, 4, 5))
    assert all(w in tb.grammar.lexicon for w in mapped)
    parse = tb.parse(sentence)
    assert parse.tree is not None and parse.tree.leaves() == tuple(sentence.split())
    assert math.isfinite(parse.log_prob)
    strict = TreebankGrammar.from_trees(BANK, rare=0)
    assert strict.parse(sentence).tree is None
    # D-CYK takes the grammar's terminals: an unmapped word is refused, with the way out
    with pytest.raises(ValueError, match=r"'saw' at position 2 .* unknown='class'"):
        fd.dcyk(tb.grammar, sentence, d=64)
    # unknown="class": each such word parsed as its class, as TreebankGrammar.words maps it
    assert fd.dcyk(tb.grammar, sentence, d=64, unknown="class").words == mapped
    (batch,) = fd.dcyk_batch(tb.grammar, [sentence], d=64, unknown="class", backend="numpy")
    assert batch.words == mapped
    g0 = fd.Grammar.builtin("G0")  # no classes: refused, the word and position named
    with pytest.raises(ValueError, match=r"'dog' at position 1 .* no unknown-word class"):
        fd.dcyk(g0, "fish dog", d=64, unknown="class")
    with pytest.raises(ValueError, match="unknown must be 'refuse' or 'class'"):
        fd.dcyk(g0, "fish swim", d=64, unknown="map")


def test_settings_are_checked():
    with pytest.raises(ValueError, match="horizontal"):
        TreebankGrammar.from_trees(BANK, horizontal=0)
    with pytest.raises(ValueError, match="rare"):
        TreebankGrammar.from_trees(BANK, rare=-1)
    with pytest.raises(ValueError, match="no trees"):
        TreebankGrammar.from_trees(["(S (-NONE- *))"])


def test_dcyk_parses_with_the_induced_grammar():
    tb = TreebankGrammar.from_trees(BANK, rare=1)
    sentence = "The dog saw a big cat ."
    words = tb.words(sentence)
    r = fd.dcyk(tb.grammar, words, d=512, seed=0)
    assert r.chart == fd.cyk(tb.grammar, words)
    assert tb.to_treebank(r.tree(), sentence) == tb.parse(sentence).tree


def test_nltk_trees_are_read():
    nltk = pytest.importorskip("nltk")
    trees = [t.to_nltk() for t in read_trees(BANK)]
    assert isinstance(trees[0], nltk.Tree)
    assert (
        TreebankGrammar.from_trees(trees, rare=0).grammar
        == TreebankGrammar.from_trees(BANK, rare=0).grammar
    )


def test_random_sentences_of_the_grammar_parse_to_trees_of_their_words():
    tb = TreebankGrammar.from_trees(BANK, rare=0)
    rng = random.Random(0)
    words = sorted(tb.known)
    for _ in range(10):
        sentence = [rng.choice(words) for _ in range(rng.randint(1, 6))]
        parse = tb.parse(sentence)
        if parse.tree is not None:
            assert parse.tree.leaves() == tuple(sentence)


def test_a_missing_file_is_an_os_error():
    with pytest.raises(FileNotFoundError):
        read_trees("no/such/treebank.mrg")


def test_evalb_names_the_empty_elements_of_a_tree_not_cleaned():
    raw = read_trees(BANK)[1]  # Mary wanted to see the dog: one empty subject (-NONE- *-1)
    cleaned = clean(raw)
    assert evalb(cleaned, cleaned).f1 == 1.0
    hint = r"remove them first with fastdcyk\.cfg\.treebank\.clean\(tree\)"
    with pytest.raises(ValueError, match=rf"gold 8 words, test 7.*gold tree holds 1 empty.*{hint}"):
        evalb(raw, cleaned)
    with pytest.raises(ValueError, match=rf"gold 7 words, test 8.*test tree holds 1 empty.*{hint}"):
        evalb(cleaned, raw)
    # words that differ, without empty elements: the other way out
    other = Tree.fromstring(str(cleaned).replace("Mary", "John"))
    with pytest.raises(ValueError, match="Words unmatch'\\): score a tree against the gold"):
        evalb(cleaned, other)
    nltk = pytest.importorskip("nltk")
    with pytest.raises(ValueError, match="gold tree holds 1 empty"):
        evalb(raw.to_nltk(), nltk.Tree.fromstring(str(cleaned)))


def test_read_trees_and_tree_fromstring_read_the_same_trees(tmp_path):
    text = BANK.read_text()
    trees = read_trees(text)
    assert [Tree.fromstring(str(t)) for t in trees] == trees
    # each top-level bracket of the file, the outer one without a label included
    starts = [k for k, line in enumerate(text.splitlines()) if line.startswith("(")]
    lines = text.splitlines() + [""]
    blocks = ["\n".join(lines[a:b]) for a, b in zip(starts, [*starts[1:], len(lines)], strict=True)]
    assert [Tree.fromstring(b) for b in blocks] == trees
    bad = tmp_path / "bad.mrg"
    bad.write_text("(S a)\n((S a) (S b))\n")
    with pytest.raises(ValueError, match=r"bad.mrg: the bracket at character 6 has no label"):
        read_trees(bad)

"""The command line on probabilistic grammars: ``fastdcyk parse`` prints the most probable
tree, ``fastdcyk treebank`` induces a PCFG and scores a split."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import fastdcyk as fd
from fastdcyk.cli import main

BANK = Path(__file__).parent.parent / "data" / "mini_treebank.mrg"
PCFG_FILE = Path(__file__).parent.parent / "data" / "pp.pcfg"
PCFG = PCFG_FILE.read_text()


def test_parse_on_a_pcfg_prints_the_most_probable_tree(tmp_path, capsys):
    path = PCFG_FILE
    words = "john saw the man with a telescope".split()
    assert main(["parse", "--grammar", str(path), "--dim", "256", *words]) == 0
    out = capsys.readouterr().out
    best = fd.viterbi(fd.Grammar.from_string(PCFG), words)
    assert f"log probability {best.log_prob:.4f}; the most probable tree of the grammar" in out
    assert f"\n{best.tree}\n" in out
    assert main(["parse", "--grammar", str(path), "--dim", "256", "--k", "2", *words]) == 0
    out = capsys.readouterr().out
    assert "tree 2 (log probability" in out and "gate values" not in out


def test_parse_with_the_weights_through_the_table(capsys):
    words = "john saw the man with a telescope".split()
    argv = ["parse", "--grammar", str(PCFG_FILE), "--weights", "table", *words]
    assert main(argv) == 0
    assert "the tree read from the table's scores (--weights table) is the same" in (
        capsys.readouterr().out
    )
    with pytest.raises(SystemExit) as err:  # argparse's usage error
        main(["parse", "--grammar", str(PCFG_FILE), "--beam", "-1", *words])
    assert err.value.code == 2
    assert "beam must be 'auto' or a finite number > 0" in capsys.readouterr().err
    assert main(["parse", "--weights", "table", "a", "a", "b"]) == 2  # no probabilities
    assert "the grammar has none" in capsys.readouterr().err
    assert main([*argv, "--beam", "2.5"]) == 0  # a narrower beam, the same tree here
    assert "(--weights table) is the same" in capsys.readouterr().out
    assert main(["parse", "--grammar", str(PCFG_FILE), "--beam", "5", *words]) == 2
    assert "--beam applies to --weights table only" in capsys.readouterr().err


def test_treebank_induces_scores_and_writes(tmp_path, capsys):
    grammar, records = tmp_path / "g.cfg", tmp_path / "out.jsonl"
    argv = ["treebank", "--train", str(BANK), "--test", str(BANK), "--rare", "0"]
    assert main([*argv, "--dim", "256", "--save", str(grammar), "--out", str(records)]) == 0
    out = capsys.readouterr().out
    assert "symbolic Viterbi" in out and "D-CYK" in out
    assert "6/6" in out  # every test sentence parsed, and D-CYK found Viterbi's tree
    saved = fd.Grammar.from_file(grammar, cnf="allow")
    assert saved.is_weighted and saved.start == "ROOT"
    lines = [json.loads(line) for line in records.read_text().splitlines()]
    assert len(lines) == 12 and {r["parser"] for r in lines} == {"symbolic Viterbi", "D-CYK"}
    total = sum(r["tp"] for r in lines if r["parser"] == "D-CYK")
    assert total == sum(r["tp"] for r in lines if r["parser"] == "symbolic Viterbi") > 0


def test_treebank_bad_input_is_a_message_not_a_traceback(tmp_path, capsys):
    assert main(["treebank", "--train", str(tmp_path / "missing.mrg")]) == 2
    assert "no such file" in capsys.readouterr().err
    bad = tmp_path / "bad.mrg"
    bad.write_text("((S (NP a)")
    assert main(["treebank", "--train", str(bad)]) == 2
    assert "not closed" in capsys.readouterr().err
    assert main(["treebank", "--train", str(BANK), "--test", str(BANK), "--max-length", "1"]) == 2
    assert "no sentence" in capsys.readouterr().err


def test_treebank_agreement_counts_only_sentences_both_parsers_parsed(tmp_path, capsys):
    dog = "(S (NP (DT the) (NN dog)) (VP (VBZ barks)))"
    cat = "(S (NP (DT a) (NN cat)) (VP (VBZ sleeps)))"
    train, test = tmp_path / "train.mrg", tmp_path / "test.mrg"
    train.write_text(f"{dog}\n{cat}\n")
    # two sentences with a word never seen (--rare 0): no tree for either parser
    test.write_text("\n".join([dog, dog.replace("dog", "cow"), cat, cat.replace("cat", "yak")]))
    argv = ["treebank", "--train", str(train), "--test", str(test), "--rare", "0"]
    assert main([*argv, "--dim", "256", "--no-progress"]) == 0
    out = capsys.readouterr().out
    (row,) = [line for line in out.splitlines() if line.startswith("D-CYK")]
    assert row.split()[2:3] == ["2/4"] and " 2/2 " in row and "4/4" not in row
    assert "of the sentences both it and symbolic Viterbi parsed" in out


def test_treebank_writes_trees_as_the_penn_treebank_does(tmp_path, capsys):
    nltk = pytest.importorskip("nltk")
    bank = tmp_path / "bank.mrg"
    sentence = "( (S (NP (PRP It)) (VP (VBZ 's) (RB n't) (ADJP (JJ big))) (. .)) )\n"
    bank.write_text(sentence + sentence.replace("big", "small"))
    records = tmp_path / "out.jsonl"
    argv = ["treebank", "--train", str(bank), "--test", str(bank), "--rare", "0"]
    assert main([*argv, "--out", str(records), "--no-progress"]) == 0
    capsys.readouterr()
    trees = [json.loads(line)["tree"] for line in records.read_text().splitlines()]
    assert trees[0] == "(ROOT (S (NP (PRP It)) (VP (VBZ 's) (RB n't) (ADJP (JJ big))) (. .)))"
    for text in trees:  # as NLTK (and evalb) read them: the same words, no quotes added
        words = tuple(nltk.Tree.fromstring(text).leaves())
        assert words[:3] == ("It", "'s", "n't") and fd.Tree.fromstring(text).leaves() == words


def test_treebank_save_says_which_format_and_reads_back(tmp_path, capsys):
    grammar = tmp_path / "g.pcfg"
    assert main(["treebank", "--train", str(BANK), "--rare", "0", "--save", str(grammar)]) == 0
    out = capsys.readouterr().out
    assert "fastdcyk's grammar format" in out and "fastdcyk.Grammar.from_file" in out
    assert "(NLTK's PCFG format" not in out  # not claimed to be NLTK's alone
    tb = fd.TreebankGrammar.from_trees(BANK, rare=0)
    assert fd.Grammar.from_file(grammar, cnf="allow") == tb.grammar.origin.grammar
    text = grammar.read_text()
    assert "\\." in text  # the tag '.' is escaped, as the message says
    nltk = pytest.importorskip("nltk")
    with pytest.raises(ValueError):
        nltk.PCFG.fromstring(text)

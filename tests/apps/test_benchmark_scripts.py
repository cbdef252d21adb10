"""The benchmark scripts that are not pytest-benchmark modules run (on small inputs)."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_floor_before_after_runs_two_checkouts_interleaved(capsys):
    """benchmarks/floor_before_after.py (docs/performance.md, "The engine by mode: before and
    after") with this checkout as both, at d = 64 on 5-word CommandTalk sentences."""
    spec = importlib.util.spec_from_file_location(
        "floor_before_after", ROOT / "benchmarks" / "floor_before_after.py"
    )
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    argv = [str(ROOT), str(ROOT), "--runs", "1", "--d", "64", "--words", "5", "5"]
    summary = script.main([*argv, "--rounds", "1"])
    assert set(summary) == {(str(ROOT), "CommandTalk")}  # one checkout, given twice
    parse, ratio, pooled = summary[(str(ROOT), "CommandTalk")]
    assert parse > 0 and math.isfinite(ratio) and ratio > 0 and math.isfinite(pooled)
    out = capsys.readouterr().out
    assert out.count('"checkout"') == 2 and "median parse" in out


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


def test_corpus_treebank_scores_every_parser_on_the_same_sentences(tmp_path, capsys):
    """benchmarks/corpus_treebank.py on a stand-in treebank (the hand-made trees of tests/data
    as both the training file and the test file): every sentence parsed by each parser, with
    the training trees' own scores."""
    pytest.importorskip("nltk")
    mini = (ROOT / "tests" / "data" / "mini_treebank.mrg").read_text(encoding="utf-8")
    for name in ("wsj_0001.mrg", "wsj_0180.mrg"):
        (tmp_path / name).write_text(mini, encoding="utf-8")
    out = tmp_path / "figures.json"
    argv = ["--treebank", str(tmp_path), "--workers", "1", "--nltk-sentences", "2"]
    _script("corpus_treebank").main([*argv, "--out", str(out)])
    figures = json.loads(out.read_text(encoding="utf-8"))
    n = figures["sentences"]
    assert n >= 5
    assert figures["viterbi"]["parsed"] == figures["workers=1"]["parsed"] == n
    assert figures["workers=1"]["same_as_viterbi"] == figures["workers=1"]["sure"] == n
    assert figures["workers=1"]["f1"] == figures["viterbi"]["f1"] > 0.5
    assert figures["nltk"]["finished"] == 2 and figures["nltk"]["f1"] > 0.5
    assert "NLTK ViterbiParser, first 2" in capsys.readouterr().out


def test_corpus_kill_resume_checks_every_run(tmp_path, capsys):
    """benchmarks/corpus_kill_resume.py with a built-in grammar and a few sentences of it, two
    runs: each killed, resumed, and found whole and equal to the uninterrupted run."""
    import fastdcyk as fd

    g = fd.Grammar.builtin("G1")
    sentences = fd.generate(g, 12, min_len=3, max_len=6, seed=1)
    listing = tmp_path / "sentences.txt"
    listing.write_text("".join(f"1 : {' '.join(s)}\n" for s in sentences), encoding="utf-8")
    script = _script("corpus_kill_resume")
    script.main(["--grammar", "G1", "--sentences", str(listing), "--runs", "2"])
    out = capsys.readouterr().out
    assert "uninterrupted: 24 lines" in out
    assert "2 of 2 runs whole and equal" in out


def test_corpus_parts_times_trees_and_start_up(tmp_path, capsys):
    """benchmarks/corpus_parts.py's trees and startup parts on a built-in grammar written to
    a file and a few of its sentences."""
    import fastdcyk as fd

    g = fd.Grammar.builtin("G1")
    grammar = tmp_path / "g1.cfg"
    grammar.write_text(g.to_string() + "\n", encoding="utf-8")
    sentences = fd.generate(g, 10, min_len=3, max_len=6, seed=2)
    listing = tmp_path / "sentences.txt"
    listing.write_text("".join(f"1 : {' '.join(s)}\n" for s in sentences), encoding="utf-8")
    script = _script("corpus_parts")
    argv = ["--grammar", str(grammar), "--sentences", str(listing)]
    script.main(["trees", *argv])
    script.main(["startup", *argv])
    out = capsys.readouterr().out
    assert "tree() of 10 parses at d = 256" in out
    assert out.count("8 lines, 1 worker:") == 2 and out.count("8 lines, 2 workers:") == 2

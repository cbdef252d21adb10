"""beam="auto" with weights="table": the beam widens when it loses the best tree."""

from __future__ import annotations

import warnings

import pytest

import fastdcyk as fd
from fastdcyk.cfg.viterbi import item_scores
from fastdcyk.cli import main
from fastdcyk.engine.batch import dcyk_batch
from fastdcyk.engine.beam import MAX_BEAM, START_BEAM, BeamWarning

# x is X1's word by far (its cell's best); X2's item sits 12.2 nats below it, beyond the
# default beam of 10, and makes the most probable tree (log probability -12.22); X3's sits
# 9.0 nats below, inside the beam but within its margin, and makes the next best (-13.62)
NEAR_EDGE = """
S -> X1 Y [0.000000001] | X2 Y [0.989999999] | X3 Y [0.01]
X1 -> 'x' [0.99] | 'z' [0.01]
X2 -> 'x' [0.000005] | 'z' [0.999995]
X3 -> 'x' [0.000122] | 'z' [0.999878]
Y -> 'y' [1.0]
"""
# only X2 (12.2 nats below X1) derives the sentence: a beam of 10 leaves no tree at all
ROOT_CUT = """
S -> X2 Y [1.0]
X1 -> 'x' [0.99] | 'z' [0.01]
X2 -> 'x' [0.000005] | 'z' [0.999995]
Y -> 'y' [1.0]
"""
# X2 is 207 nats below X1: beyond the widest beam
TOO_FAR = """
S -> X2 Y [1.0]
X1 -> 'x' [0.99] | 'z' [0.01]
X2 -> 'x' [1e-90] | 'z' [1.0]
Y -> 'y' [1.0]
"""
D = 256


def _table(text, words="x y", **kw):
    return fd.dcyk(fd.Grammar.from_string(text), words, d=D, weights="table", **kw)


def test_the_default_beam_widens_to_the_most_probable_tree():
    g = fd.Grammar.from_string(NEAR_EDGE)
    viterbi = fd.viterbi(g, "x y")
    assert str(viterbi.tree) == "(S (X2 x) (Y y))"
    fixed = _table(NEAR_EDGE, beam=START_BEAM)  # the beam that loses it
    assert str(fixed.table_parse().tree) == "(S (X3 x) (Y y))" and fixed.beam is None
    assert fixed.counts["beam_cut"] == 1
    r = _table(NEAR_EDGE)
    assert r.table_parse().log_prob == pytest.approx(viterbi.log_prob, abs=1e-9)
    assert r.table_parse().tree == viterbi.tree
    assert r.beam.tried == (10.0, 20.0) and r.beam.beam == 20.0 and not r.beam.capped
    assert "cut no item" in r.beam.reason and r.counts["beam_cut"] == 0
    assert r.beam.seconds > 0 and "beam=20" in repr(r)


def test_a_parseable_sentence_cut_by_the_beam_is_recognized():
    fixed = _table(ROOT_CUT, beam=10)
    assert fixed.table_parse().tree is None and not fixed.recognized
    r = _table(ROOT_CUT)
    assert r.recognized and str(r.table_parse().tree) == "(S (X2 x) (Y y))"
    assert r.beam.tried == (10.0, 20.0)


def test_the_widest_beam_warns_and_says_so():
    with pytest.warns(BeamWarning, match="widest beam, 160 nats.*start symbol was not read"):
        r = _table(TOO_FAR)
    assert r.beam.capped and r.beam.beam == MAX_BEAM
    assert r.beam.tried == (10.0, 20.0, 40.0, 80.0, 160.0)
    assert "start symbol" in r.beam.reason and r.table_parse().tree is None


def test_nothing_cut_parses_once():
    g = fd.Grammar.from_string("S -> A A [1.0]\nA -> 'a' [1.0]")
    with warnings.catch_warnings():
        warnings.simplefilter("error", BeamWarning)
        r = fd.dcyk(g, "a a", d=128, weights="table")
    assert r.beam.tried == (10.0,) and r.counts["beam_cut"] == 0
    assert r.beam.reason == "the beam of 10 nats cut no item"


def test_each_sentence_of_a_batch_widens_its_own_beam():
    g = fd.Grammar.from_string(NEAR_EDGE)
    out = dcyk_batch(g, ["x y", "z y"], d=D, weights="table", backend="numpy")
    assert [r.beam.beam for r in out] == [20.0, 10.0]
    assert out[0].table_parse().tree == fd.viterbi(g, "x y").tree
    assert out[1].table_parse().tree == fd.viterbi(g, "z y").tree


def test_beam_values():
    g = fd.Grammar.from_string(NEAR_EDGE)
    for bad in ("wide", "AUTO", 0, -1.0, float("nan"), True):
        with pytest.raises(ValueError, match="beam must be 'auto' or a finite number > 0"):
            fd.dcyk(g, "x y", d=D, weights="table", beam=bad)
    with pytest.raises(ValueError, match="got 'auto'"):  # the symbolic beam is a number
        item_scores(g, ("x", "y"), beam="auto")


def test_the_command_line_says_which_beam(tmp_path, capsys):
    path = tmp_path / "g.pcfg"
    path.write_text(NEAR_EDGE)
    argv = ["parse", "--grammar", str(path), "--weights", "table", "--dim", str(D), "x", "y"]
    assert main(argv) == 0
    assert "beam: 20 nats, tried 10, 20: the beam of 20 nats cut no item" in (
        capsys.readouterr().out
    )
    path.write_text(TOO_FAR)
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "fastdcyk parse: warning: beam='auto' stopped at its widest beam" in captured.err
    assert "Traceback" not in captured.err
    assert "beam: 160 nats (still in doubt at the widest beam)" in captured.out
    assert main([*argv[:-2], "--beam", "10", "x", "y"]) == 0
    assert "beam:" not in capsys.readouterr().out  # a fixed beam: nothing chosen

"""A corpus in, trees out: fastdcyk.parse_corpus and ``fastdcyk parse --input``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import fastdcyk as fd
import fastdcyk.hrr.memory as memory_module
from fastdcyk import cli
from fastdcyk.corpus import STATUSES, CorpusLogError, read_log

DATA = Path(__file__).resolve().parents[1] / "data"

#: A corpus of G0 with every status but "too long" and "unsure": two sentences with trees,
#: one the grammar does not derive, bytes that are not UTF-8, an empty line, unknown words.
G0_LINES = (
    b"fish swim\nfish swim fish\nfish fish\n\xff\xfe fish\n\n  \ncat swim\n"
    b"fish swim near fish swim\n"
)


def _trees(records):
    return [(r["index"], r["status"], r["tree"]) for r in records]


def test_every_line_gets_a_record_with_its_status(tmp_path):
    src = tmp_path / "in.txt"
    src.write_bytes(G0_LINES)
    s = fd.parse_corpus("G0", src)
    got = {r["index"]: r for r in s.records}
    assert [got[k]["status"] for k in range(8)] == [
        "parsed", "parsed", "no parse", "bad line", "bad line", "bad line", "unknown words",
        "parsed",
    ]  # fmt: skip
    assert got[0]["tree"] == "(S (NP fish) (VP swim))" and got[0]["sure"] is True
    assert got[0]["d"] == 128 and got[0]["seconds"] > 0 and "message" not in got[0]
    assert got[2]["tree"] is None and "does not derive it" in got[2]["message"]
    assert "b'\\xff" in got[3]["message"] and "not utf-8" in got[3]["message"]
    assert got[3]["words"] is None and got[4]["words"] == [] and "empty" in got[5]["message"]
    assert "'cat' at 0" in got[6]["message"]
    assert s.counts == {"parsed": 3, "no parse": 1, "unknown words": 1, "unsure": 0,
                        "too long": 0, "bad line": 3}  # fmt: skip
    assert set(s.counts) == set(STATUSES) and s.lines == 8 and s.written == 8
    for r in s.records:  # the trees are those of dcyk, in the grammar as written
        if r["status"] == "parsed":
            tree = fd.dcyk("G0", r["words"]).tree()
            assert r["tree"] == str(tree)


def test_a_pcfg_line_has_its_log_probability():
    g = fd.Grammar.from_file(DATA / "pp.pcfg")
    (r,) = fd.parse_corpus(g, ["john saw the man with a telescope"]).records
    best = fd.viterbi(g, "john saw the man with a telescope")
    assert r["status"] == "parsed" and r["tree"] == str(best.tree)
    assert r["log_prob"] == pytest.approx(best.log_prob, abs=1e-9)


def test_a_line_too_long_for_the_memory_is_that_line_s_status(monkeypatch):
    """A line whose parse at the start d does not fit is "too long" (the memory it needs
    named); the others parse."""
    monkeypatch.setattr(memory_module, "available_memory", lambda: 5 << 20)
    g = fd.Grammar.builtin("G0")
    long = " ".join(["fish"] + ["swim"] * 199)
    s = fd.parse_corpus(g, ["fish swim", long, "fish swim fish"])
    assert [r["status"] for r in s.records] == ["parsed", "too long", "parsed"]
    assert "200-word parse there does not fit" in s.records[1]["message"]
    monkeypatch.setattr(memory_module, "available_memory", lambda: 1 << 10)
    with pytest.raises(MemoryError, match=r"2 workers would each need .*use 0|smaller d"):
        fd.parse_corpus(g, ["fish swim"], workers=2)


def test_the_log_is_in_input_order_and_refused_without_resume(tmp_path):
    out = tmp_path / "out.jsonl"
    s = fd.parse_corpus("G0", G0_LINES, out)
    head, records = read_log(out)
    assert head["format"] == "fastdcyk-corpus" and head["lines"] == 8
    assert [r["index"] for r in records] == list(range(8)) and s.records is None
    with pytest.raises(CorpusLogError, match="exists and is not empty.*resume"):
        fd.parse_corpus("G0", G0_LINES, out)
    again = fd.parse_corpus("G0", G0_LINES, out, resume=True)  # finished: nothing to do
    assert again.written == 0 and again.resumed == 8 and read_log(out)[1] == records
    with pytest.raises(CorpusLogError, match="another grammar"):
        fd.parse_corpus("G1", G0_LINES, out, resume=True)
    with pytest.raises(CorpusLogError, match="another options"):
        fd.parse_corpus("G0", G0_LINES, out, resume=True, d=256)
    with pytest.raises(CorpusLogError, match="another input"):
        fd.parse_corpus("G0", b"fish swim\n", out, resume=True)
    assert read_log(out)[1] == records  # nothing written by the refusals


def test_a_torn_last_line_is_cut_and_its_line_parsed_again(tmp_path):
    out = tmp_path / "out.jsonl"
    fd.parse_corpus("G0", G0_LINES, out)
    head, records = read_log(out)
    lines = out.read_text().splitlines(keepends=True)
    out.write_text("".join(lines[:5]) + lines[5][:20])  # a kill during a write
    s = fd.parse_corpus("G0", G0_LINES, out, resume=True)
    assert s.torn_bytes == 20 and s.resumed == 4 and s.written == 4
    again_head, again = read_log(out)
    assert again_head == head and _trees(again) == _trees(records)


def test_two_workers_and_a_dask_cluster_give_the_same_lines(tmp_path):
    g = fd.Grammar.builtin("G2")
    sents = [" ".join(w) for w in fd.generate(g, 24, min_len=3, max_len=9, seed=4)]
    sents[5] = "fish cat"
    one = fd.parse_corpus(g, sents)
    two = fd.parse_corpus(g, sents, workers=2)
    assert _trees(two.records) == _trees(one.records)
    distributed = pytest.importorskip("dask.distributed")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        on_dask = fd.parse_corpus(g, sents, client=client)
    assert _trees(on_dask.records) == _trees(one.records)


def test_brackets_line_up_with_the_sentences_and_nltk_reads_them(tmp_path):
    nltk = pytest.importorskip("nltk")
    src = tmp_path / "in.txt"
    src.write_bytes(G0_LINES)
    out = tmp_path / "trees.txt"
    assert cli.main(["parse", "--grammar", "G0", "--input", str(src), "--output", str(out),
                     "--format", "brackets"]) == 0  # fmt: skip
    trees = out.read_text().splitlines()
    sentences = G0_LINES.decode("utf-8", "replace").splitlines()
    assert len(trees) == len(sentences)
    for text, tree in zip(sentences, trees, strict=True):
        if tree == "()":
            continue
        assert nltk.Tree.fromstring(tree).leaves() == text.split()
    assert (tmp_path / "trees.txt.jsonl").exists()  # the log --resume reads


def test_the_command_line_streams_records_and_refuses_mistakes_without_a_traceback(
    tmp_path, capsys
):
    src = tmp_path / "in.txt"
    src.write_bytes(G0_LINES)
    assert cli.main(["parse", "--grammar", "G0", "--input", str(src)]) == 0
    out = capsys.readouterr()
    records = [json.loads(line) for line in out.out.splitlines()]
    assert sorted(r["index"] for r in records) == list(range(8))
    assert "8 lines (3 parsed" in out.err
    for argv, message in (
        (["--input", str(src), "fish"], "not both"),
        (["--input", str(tmp_path / "none.txt")], "no such file"),
        (["--input", str(src), "--resume"], "--resume continues an --output"),
        ([], "or --input FILE"),
    ):
        assert cli.main(["parse", "--grammar", "G0", *argv]) == 2
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err


def test_gold_trees_are_scored_and_other_words_refused(tmp_path):
    g = fd.Grammar.builtin("G0")
    sents = ["fish swim", "fish swim fish", "fish fish"]
    gold = [str(fd.Forest(g, s).tree(0)) for s in sents[:2]] + ["(S (NP fish) (VP fish))"]
    s = fd.parse_corpus(g, sents, gold=gold)
    expected = fd.Scores(0, 0, 0)
    for sentence, tree in zip(sents, gold, strict=True):
        expected = expected + fd.evalb(fd.Tree.fromstring(tree), fd.dcyk(g, sentence).tree())
    assert s.evalb == expected and expected.gold > expected.tp > 0  # a line without a tree
    with pytest.raises(ValueError, match=r"words differ from the input.s at line 1 "):
        fd.parse_corpus(g, sents, gold=[gold[0], gold[0], gold[2]])
    with pytest.raises(ValueError, match="3 trees for 2 input lines"):
        fd.parse_corpus(g, sents[:2], gold=gold)


KILL_SCRIPT = """
import sys
import fastdcyk as fd
fd.parse_corpus("G2", sys.argv[1], sys.argv[2], resume=True)
"""


def test_killed_runs_resume_to_every_line_once_and_the_same_trees(tmp_path):
    """Runs killed (SIGKILL) at random moments, each resumed: every index once, and the
    trees of an uninterrupted run."""
    g = fd.Grammar.builtin("G2")
    src = tmp_path / "in.txt"
    src.write_text("\n".join(" ".join(w) for w in fd.generate(g, 60, min_len=4, max_len=12,
                                                              seed=9)) + "\n")  # fmt: skip
    reference = fd.parse_corpus(g, src).records
    out = tmp_path / "out.jsonl"
    script = tmp_path / "run.py"
    script.write_text(KILL_SCRIPT)
    env = dict(os.environ, PYTHONPATH=str(Path(fd.__file__).parents[1]))
    delays = [1.2, 1.5, 1.8]
    for delay in delays:
        p = subprocess.Popen([sys.executable, str(script), str(src), str(out)], env=env)
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        p.wait()
    subprocess.run([sys.executable, str(script), str(src), str(out)], env=env, check=True)
    _, records = read_log(out)
    assert [r["index"] for r in records] == list(range(60))  # each once, in input order
    assert _trees(records) == _trees(reference)


def test_treebank_warns_when_the_test_trees_were_trained_on(capsys):
    mrg = str(DATA / "mini_treebank.mrg")
    assert cli.main(["treebank", "--train", mrg, "--test", mrg, "--dim", "128"]) == 0
    err = capsys.readouterr().err
    assert "6 of the 6 test trees are training trees" in err and "overstate" in err


def test_workers_from_a_script_without_a_main_guard_say_what_to_do(tmp_path):
    """Worker processes start by importing the caller's script: one without ``if __name__ ==
    "__main__":`` would start workers again in each; that is refused with what to do, and the
    parent's error says it, rather than a pool's traceback alone (or a wait)."""
    script = tmp_path / "no_guard.py"
    script.write_text(
        "import fastdcyk as fd\n"
        "fd.parse_corpus('G0', ['fish swim'] * 8, workers=2, progress=False)\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=240, cwd=tmp_path
    )
    assert done.returncode != 0
    assert "while a worker process was importing your script" in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("RuntimeError: a worker process stopped abruptly")
    assert 'if __name__ == "__main__":' in last and "resume" in last

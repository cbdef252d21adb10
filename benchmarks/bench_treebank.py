"""A treebank PCFG: D-CYK's most probable tree against NLTK's ViterbiParser, same grammar.

The grammar is induced from the Penn Treebank sample's files 0001-0179 when
``FASTDCYK_TREEBANK`` gives its folder (fastdcyk does not ship it; ``TreebankGrammar.
from_trees``, horizontal Markovisation 1, rare words as classes), and the sentence is the
first test sentence (files 0180-0199) of 20 words. Target (docs/performance.md), in the
same run: D-CYK at d = 1024 (default variant, after a warm-up parse of another sentence,
one thread) takes less time than NLTK's ViterbiParser on the same sentence and grammar; the
symbolic Viterbi CKY of fastdcyk is timed beside them.

Run for real with

    FASTDCYK_TREEBANK=PATH/treebank python -m pytest benchmarks/bench_treebank.py \\
        --benchmark-enable -p no:cacheprovider

Under ``--benchmark-disable`` (the default) the body runs once as a smoke test, on the
hand-made treebank of tests/data at d = 64.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

import fastdcyk as fd
from fastdcyk import threads
from fastdcyk.cfg.treebank import TreebankGrammar, clean, read_trees

TREEBANK = os.environ.get("FASTDCYK_TREEBANK")
MINI = Path(__file__).resolve().parents[1] / "tests" / "data" / "mini_treebank.mrg"


def _material(timing: bool) -> tuple[TreebankGrammar, tuple[str, ...], tuple[str, ...]]:
    """The grammar, the timed sentence and a warm-up sentence."""
    if timing and TREEBANK:
        files = sorted(Path(TREEBANK).glob("wsj_*.mrg"))
        number = {f: int(f.stem.split("_")[1]) for f in files}
        tb = TreebankGrammar.from_trees([f for f in files if number[f] <= 179])
        test = [clean(t) for f in files if number[f] >= 180 for t in read_trees(f)]
        sentences = [t.leaves() for t in test if t is not None]
        timed = next(s for s in sentences if len(s) == 20)
        warm = next(s for s in sentences if len(s) == 10)
        return tb, timed, warm
    trees = [clean(t) for t in read_trees(MINI)]
    return TreebankGrammar.from_trees(MINI, rare=0), trees[1].leaves(), trees[0].leaves()


def _setup(timing: bool) -> tuple[TreebankGrammar, tuple[str, ...], tuple[str, ...], int]:
    """The grammar, the timed and warm-up sentences as its terminals, and d; a timed run
    without the treebank is skipped."""
    if timing and not TREEBANK:
        pytest.skip("set FASTDCYK_TREEBANK to the Penn Treebank sample's folder")
    tb, sentence, warm = _material(timing)
    return tb, tb.words(sentence), tb.words(warm), 1024 if timing else 64


def _nltk_parser(nltk, pcfg):
    """NLTK's ViterbiParser without its time limit (recent NLTK stops it after 5 s by default)."""
    try:
        return nltk.ViterbiParser(pcfg, max_time=None)
    except TypeError:  # an NLTK without the limit
        return nltk.ViterbiParser(pcfg)


@pytest.mark.benchmark(group="treebank PCFG: most probable tree")
def test_dcyk_against_nltk_viterbi_parser(benchmark, timing):
    nltk = pytest.importorskip("nltk")
    tb, words, warm_words, d = _setup(timing)
    with threads.limit(1):
        fd.dcyk(tb.grammar, warm_words, d=d, progress=False)  # warm: codebook, tables
        result = benchmark.pedantic(
            lambda: fd.dcyk(tb.grammar, words, d=d, progress=False), rounds=1, iterations=1
        )
        dcyk_s = benchmark.stats.stats.max if benchmark.stats else float("nan")
        t0 = time.perf_counter()
        symbolic = fd.viterbi(tb.grammar, words)
        viterbi_s = time.perf_counter() - t0
        parser = _nltk_parser(nltk, tb.grammar.to_nltk())
        t0 = time.perf_counter()
        (theirs,) = list(parser.parse(list(words)))
        nltk_s = time.perf_counter() - t0
    best = result.best_parse()
    benchmark.extra_info.update(
        {
            "words": len(words),
            "d": d,
            "dcyk_s": dcyk_s,
            "viterbi_s": viterbi_s,
            "nltk_viterbi_parser_s": nltk_s,
            "same_tree": best.log_prob == symbolic.log_prob,
        }
    )
    # NLTK's log probabilities are base 2
    assert theirs.logprob() * 0.6931471805599453 == pytest.approx(symbolic.log_prob, abs=1e-6)
    if timing:
        assert dcyk_s < nltk_s, f"D-CYK {dcyk_s:.2f} s, NLTK's ViterbiParser {nltk_s:.2f} s"


@pytest.mark.benchmark(group="treebank PCFG: weights through the table")
def test_weighted_table_against_the_chart_route(benchmark, timing):
    """``weights="table"`` (Viterbi scores written and read back, a beam of 10 nats) against
    the default parse (the chart, then Viterbi over it) on the same sentence, d and thread,
    in the same run; target: the table route costs less (its cells hold only the items near
    their best)."""
    tb, words, warm_words, d = _setup(timing)
    with threads.limit(1):
        fd.dcyk(tb.grammar, warm_words, d=d, progress=False)  # warm: codebook, tables
        fd.dcyk(tb.grammar, warm_words, d=d, progress=False, weights="table")
        t0 = time.perf_counter()
        chart = fd.dcyk(tb.grammar, words, d=d, progress=False)
        chart_s = time.perf_counter() - t0
        result = benchmark.pedantic(
            lambda: fd.dcyk(tb.grammar, words, d=d, progress=False, weights="table"),
            rounds=1,
            iterations=1,
        )
        table_s = benchmark.stats.stats.max if benchmark.stats else float("nan")
    symbolic = fd.viterbi(tb.grammar, words)
    benchmark.extra_info.update(
        {
            "words": len(words),
            "d": d,
            "chart_route_s": chart_s,
            "table_route_s": table_s,
            "table_same_tree": abs(result.table_parse().log_prob - symbolic.log_prob) < 1e-9,
            "chart_same_tree": abs(chart.best_parse().log_prob - symbolic.log_prob) < 1e-9,
        }
    )
    # the scores were read back: the start symbol over the sentence among them
    assert (0, len(words), tb.grammar.start) in result.table_scores
    if timing:
        assert table_s < chart_s, f"table {table_s:.2f} s, chart {chart_s:.2f} s"


#: What the cancelling read-back may cost beside the plain least-squares one, same parse:
#: one more write and a subtraction per cell (docs/method.md, section 7).
CANCEL_RATIO = 2.0


@pytest.mark.benchmark(group="treebank PCFG: weights through the table")
def test_cancelling_read_back_against_the_plain_one(benchmark, timing):
    """``weights="table"`` with ``readback="cancel"`` (its default) against
    ``readback="lstsq"`` on the same sentence, d and thread, in the same run; target: at
    most :data:`CANCEL_RATIO` times the plain read's time. Both trees are compared with
    symbolic Viterbi's (the point of cancelling)."""
    tb, words, warm_words, d = _setup(timing)

    def parse(readback: str) -> fd.DCYKResult:
        return fd.dcyk(tb.grammar, words, d=d, progress=False, weights="table", readback=readback)

    with threads.limit(1):
        for readback in ("lstsq", "cancel"):  # warm: codebook, tables, kernels
            fd.dcyk(tb.grammar, warm_words, d=d, progress=False, weights="table", readback=readback)
        t0 = time.perf_counter()
        plain = parse("lstsq")
        plain_s = time.perf_counter() - t0
        result = benchmark.pedantic(lambda: parse("cancel"), rounds=1, iterations=1)
        cancel_s = benchmark.stats.stats.max if benchmark.stats else float("nan")
    symbolic = fd.viterbi(tb.grammar, words)
    benchmark.extra_info.update(
        {
            "words": len(words),
            "d": d,
            "lstsq_s": plain_s,
            "cancel_s": cancel_s,
            "lstsq_same_tree": abs(plain.table_parse().log_prob - symbolic.log_prob) < 1e-9,
            "cancel_same_tree": abs(result.table_parse().log_prob - symbolic.log_prob) < 1e-9,
        }
    )
    assert result.options.readback == "cancel" and plain.options.readback == "lstsq"
    if timing:
        assert cancel_s < CANCEL_RATIO * plain_s, f"cancel {cancel_s:.2f} s, lstsq {plain_s:.2f} s"

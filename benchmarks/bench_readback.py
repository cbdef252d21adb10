"""The cleanup variant's two read-backs side by side: a long CommandTalk sentence.

CommandTalk (tests/data/commandtalk.cfg.gz, SRI's grammar: 7,984 nonterminals in CNF, cells
of up to about 250 symbols) is where the read-back decides: the matched filter reads every
nonterminal of every cell, the least-squares read-back (docs/method.md, section 7) the
cell's candidates only, and solves for them together. Target (docs/performance.md), a
ratio to a baseline of the same run:

- a 15-word CommandTalk sentence at d = 1024, float32, one thread: the least-squares
  read-back (``readback="lstsq"``) no slower than the matched filter
  (``readback="matched"``), each the best of 3 parses, timed interleaved;
- the same sentence: the cancelling read-back (``readback="cancel"``, the cleanup
  variant's default) at most :data:`CANCEL_RATIO` times the least-squares one.

Run for real with

    python -m pytest benchmarks/bench_readback.py --benchmark-enable -p no:cacheprovider

Under ``--benchmark-disable`` (the default) the body runs once at d = 64 on a 5-word
sentence as a smoke test.
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import pytest

import fastdcyk as fd
from fastdcyk import threads

COMMANDTALK = Path(__file__).parents[1] / "tests" / "data" / "commandtalk.cfg.gz"
RATIO_TARGET = 1.0


def commandtalk() -> fd.Grammar:
    with warnings.catch_warnings():  # its few undefined symbols
        warnings.simplefilter("ignore", fd.GrammarWarning)
        return fd.Grammar.from_file(COMMANDTALK, cnf="allow", encoding="latin-1").to_cnf()


def _race(
    benchmark,
    timing: bool,
    readbacks: tuple[str, str],
    grammar: fd.Grammar | None = None,
    size: tuple[int, int] = (1024, 15),
) -> tuple[dict, dict, int, int]:
    """Two read-backs on the same sentence of ``grammar`` (CommandTalk by default; ``size``
    = (d, words) when timing, (64, 5) otherwise), one thread, each the best of 3 parses
    timed interleaved (both see the same load): their best seconds and their charts' F1, d
    and the length."""
    d, n = size if timing else (64, 5)
    g = commandtalk() if grammar is None else grammar
    (s,) = fd.generate(g, 1, min_len=n, max_len=n, seed=7)
    rounds = 3 if timing else 1
    best = dict.fromkeys(readbacks, float("inf"))
    charts = {}
    with threads.limit(1):
        cb = fd.Codebook.for_grammar(g, d, 0, threads=1)
        for rb in readbacks:  # warm: rule tables, G_k, kernels
            fd.dcyk(g, s[:4], cb, variant="cleanup", readback=rb)

        def both() -> None:
            for _ in range(rounds):
                for rb in readbacks:
                    t0 = time.perf_counter()
                    charts[rb] = fd.dcyk(g, s, cb, variant="cleanup", readback=rb).chart
                    best[rb] = min(best[rb], time.perf_counter() - t0)

        benchmark.pedantic(both, rounds=1, iterations=1)
    gold = fd.cyk(g, s)
    return best, {rb: fd.cell_scores(gold, c).f1 for rb, c in charts.items()}, d, n


@pytest.mark.benchmark(group="cleanup read-backs on CommandTalk")
def test_lstsq_readback_against_matched(benchmark, timing):
    best, f1s, d, n = _race(benchmark, timing, ("lstsq", "matched"))
    f1 = f1s["lstsq"]
    ratio = best["lstsq"] / best["matched"]
    benchmark.extra_info.update(
        {
            "d": d,
            "words": n,
            "lstsq_s": best["lstsq"],
            "matched_s": best["matched"],
            "ratio": ratio,
            "lstsq_f1": f1,
        }
    )
    if timing:
        assert f1 == 1.0, f"the least-squares read-back's chart has F1 {f1}"
        assert ratio <= RATIO_TARGET, f"least squares costs {ratio:.2f}x the matched filter"


#: What the cancelling read-back (the default) may cost beside the plain least-squares one,
#: same parse: one more write and a subtraction per cell, and the words read first
#: (docs/method.md, section 7), less the false candidates the plain read's leakage makes.
CANCEL_RATIO = 1.25


@pytest.mark.benchmark(group="cleanup read-backs on CommandTalk")
def test_cancelling_readback_against_lstsq(benchmark, timing):
    """``readback="cancel"`` against ``"lstsq"`` on the same 15-word CommandTalk sentence at
    d = 1024, float32, one thread, each the best of 3 parses timed interleaved; target: at
    most :data:`CANCEL_RATIO` times the plain read's time, with the same (exact) chart."""
    best, f1, d, n = _race(benchmark, timing, ("lstsq", "cancel"))
    ratio = best["cancel"] / best["lstsq"]
    benchmark.extra_info.update(
        {"d": d, "words": n, "lstsq_s": best["lstsq"], "cancel_s": best["cancel"]}
        | {"ratio": ratio, "lstsq_f1": f1["lstsq"], "cancel_f1": f1["cancel"]}
    )
    if timing:
        assert f1["cancel"] == 1.0, f"the cancelling read-back's chart has F1 {f1['cancel']}"
        assert ratio <= CANCEL_RATIO, f"cancelling costs {ratio:.2f}x the plain read"


#: Where the plain read's leakage makes few false candidates (a small grammar, large d),
#: cancelling costs its extra passes only: at most this many times the plain read
#: (:data:`fastdcyk.engine.modes.cleanup.CANCEL_PASSES` is the cost model's figure).
SMALL_GRAMMAR_RATIO = 1.5


@pytest.mark.benchmark(group="cleanup read-backs on a small grammar")
def test_cancelling_readback_on_a_small_grammar(benchmark, timing):
    """The same race on G4 (12 words, d = 2048), where the candidates are few and the
    cancelling read-back's extra writes are not paid back: at most
    :data:`SMALL_GRAMMAR_RATIO` times the plain read."""
    best, f1, d, n = _race(
        benchmark, timing, ("lstsq", "cancel"), fd.Grammar.builtin("G4"), (2048, 12)
    )
    ratio = best["cancel"] / best["lstsq"]
    benchmark.extra_info.update(
        {"d": d, "words": n, "lstsq_s": best["lstsq"], "cancel_s": best["cancel"]}
        | {"ratio": ratio, "cancel_f1": f1["cancel"]}
    )
    if timing:
        assert f1["cancel"] == 1.0, f"the cancelling read-back's chart has F1 {f1['cancel']}"
        assert ratio <= SMALL_GRAMMAR_RATIO, f"cancelling costs {ratio:.2f}x the plain read"

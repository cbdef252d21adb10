"""A parse against the arithmetic it needs: real grammars, the default variant, d = 1024.

The floor of a parse whose table is held as P_left's 2-D half spectrum (docs/method.md,
section 4.4): per cell, one read of the table (a complex matrix-vector product over a
d x (d/2 + 1) complex64 array) and one write (a rank-1 update of it), in plain numpy, for
the sentence's n(n + 1)/2 cells, measured in the same run. Targets (docs/performance.md),
after a warm-up parse of another sentence of the same grammar (its codebook, rule tables
and index matrices are then kept), one thread:

- ATIS (``FASTDCYK_ATIS`` gives the path of NLTK's atis.cfg; without it the benchmark is
  skipped when timed), a 20-word sentence: at most 1.3 times the floor (issue 39's target;
  1.13 to 1.26 in seven runs, docs/performance.md, "The sweep in the table's precision");
- CommandTalk (tests/data/commandtalk.cfg.gz), a 15-word sentence: at most 4 times the
  floor;
- the random grammar of 20 nonterminals of benchmarks/bench_peer.py, 20-word sentences at
  d = 64, where the per-cell overhead shows: at most 3 times the floor.

Run for real with

    FASTDCYK_ATIS=PATH/atis.cfg python -m pytest benchmarks/bench_floor.py \\
        --benchmark-enable -p no:cacheprovider

Under ``--benchmark-disable`` (the default) each body runs once at d = 64 on CommandTalk's
5-word sentences as a smoke test.
"""

from __future__ import annotations

import os
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import fastdcyk as fd
from fastdcyk import threads

ATIS = os.environ.get("FASTDCYK_ATIS")
COMMANDTALK = Path(__file__).parents[1] / "tests" / "data" / "commandtalk.cfg.gz"
CASES = {"ATIS": (ATIS, "utf-8", 20, 1.3), "CommandTalk": (str(COMMANDTALK), "latin-1", 15, 4.0)}


def floor_seconds(cells: int, d: int, rounds: int = 3) -> float:
    """The best of ``rounds`` runs of ``cells`` reads and writes of a d x (d/2 + 1) complex64
    array: a matrix-vector product and a rank-1 update each."""
    h = d // 2 + 1
    rng = np.random.default_rng(0)
    table = (rng.standard_normal((d, h)) + 1j * rng.standard_normal((d, h))).astype(np.complex64)
    x = rng.standard_normal(h).astype(np.complex64)
    u = rng.standard_normal(d).astype(np.complex64)
    outer = np.empty_like(table)  # one buffer for the update: no allocation in the loop
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(cells):
            table @ x
            np.multiply(u[:, None], x[None, :], out=outer)
            table += outer
        best = min(best, time.perf_counter() - t0)
    return best


@pytest.mark.benchmark(group="a parse against its arithmetic floor")
@pytest.mark.parametrize("name", sorted(CASES))
def test_parse_against_the_floor(benchmark, timing, name):
    path, encoding, n, target = CASES[name]
    if path is None:
        if timing:
            pytest.skip("set FASTDCYK_ATIS to the path of NLTK's atis.cfg")
        path, encoding = str(COMMANDTALK), "latin-1"
    d, n = (1024, n) if timing else (64, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fd.GrammarWarning)
        g = fd.Grammar.from_file(path, cnf="allow", encoding=encoding).to_cnf()
    warm, s = fd.generate(g, 2, min_len=n, max_len=n, seed=0)
    rounds = 3 if timing else 1
    with threads.limit(1):
        fd.dcyk(g, warm, d=d)  # the codebook, its tables and index matrices are kept

        def parse() -> float:
            best = float("inf")
            for _ in range(rounds):
                t0 = time.perf_counter()
                r = fd.dcyk(g, s, d=d)
                best = min(best, time.perf_counter() - t0)
            assert fd.cell_scores(fd.cyk(g, s), r.chart).f1 == 1.0 or not timing
            return best

        seconds = benchmark.pedantic(parse, rounds=1, iterations=1)
        base = floor_seconds(n * (n + 1) // 2, d, rounds)
    ratio = seconds / base
    benchmark.extra_info.update(
        {"grammar": name, "d": d, "words": n, "parse_s": seconds, "floor_s": base, "ratio": ratio}
    )
    if timing:
        assert ratio <= target, f"a {n}-word {name} sentence costs {ratio:.2f}x the floor"


@pytest.mark.benchmark(group="a parse against its arithmetic floor")
def test_small_d_overhead(benchmark, timing):
    """Issue 39's overhead target: a 20-word sentence of the random grammar of 20
    nonterminals (bench_peer's ``peer_grammar("20")``) at d = 64, where a cell's arithmetic
    is a few microseconds: at most 3 times the floor (the best of 3 runs of 12 sentences,
    per sentence)."""
    d, n, target = (64, 20, 3.0) if timing else (64, 6, None)
    g = fd.random_grammar(20, 8, 50, ambiguity=2, seed=0)
    batch = fd.generate(g, 12, min_len=n, max_len=n, seed=1)
    rounds = 3 if timing else 1
    with threads.limit(1):
        fd.dcyk(g, batch[0], d=d)

        def parse() -> float:
            best = float("inf")
            for _ in range(rounds):
                t0 = time.perf_counter()
                for s in batch:
                    fd.dcyk(g, s, d=d)
                best = min(best, (time.perf_counter() - t0) / len(batch))
            return best

        seconds = benchmark.pedantic(parse, rounds=1, iterations=1)
        base = min(floor_seconds(n * (n + 1) // 2, d, rounds) for _ in range(5 if timing else 1))
    ratio = seconds / base
    benchmark.extra_info.update(
        {
            "grammar": "random 20",
            "d": d,
            "words": n,
            "parse_s": seconds,
            "floor_s": base,
            "ratio": ratio,
        }
    )
    if timing:
        assert ratio <= target, f"a {n}-word sentence at d = {d} costs {ratio:.2f}x the floor"

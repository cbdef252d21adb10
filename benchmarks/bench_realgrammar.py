"""The cleanup variant on a real-size grammar: its cost against G0, and its memory at d = 6000.

The grammar is NLTK's ATIS grammar when ``FASTDCYK_ATIS`` gives the path of its ``atis.cfg``
(read with ``cnf="allow"``, then ``to_cnf()``: 3,965 nonterminals; fastdcyk does not ship it),
else the random grammar of the same size (``random_grammar(4000, 1000, 10000,
ambiguity=2)``). Targets (docs/performance.md), ratios to baselines of the same run:

- a 7-word sentence of that grammar at d = 1024, variant cleanup, float32, one thread: at
  most 5 times a 7-word G0 sentence with the trace variant at the same d;
- at d = 6000 (``FASTDCYK_BENCH_LARGE=1``), a 20-word sentence of that grammar in a fresh
  process: peak RSS at most 1.5 GB.

Run for real with

    FASTDCYK_ATIS=PATH/atis.cfg FASTDCYK_BENCH_LARGE=1 python -m pytest \\
        benchmarks/bench_realgrammar.py --benchmark-enable -p no:cacheprovider

Under ``--benchmark-disable`` (the default) each body runs once at d = 64 as a smoke test,
on a smaller random grammar.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from bench_peer import best

import fastdcyk as fd
from fastdcyk import threads

ATIS = os.environ.get("FASTDCYK_ATIS")
COST_TARGET = 5.0
RSS_TARGET = 1.5e9


@pytest.mark.benchmark(group="cleanup variant on a real-size grammar")
def test_cleanup_cost_against_g0_trace(benchmark, timing, real_size_grammar):
    d = 1024 if timing else 64
    g, name = real_size_grammar
    (s,) = fd.generate(g, 1, min_len=7, max_len=7, seed=3)
    g0 = fd.Grammar.builtin("G0")
    (s0,) = fd.generate(g0, 1, min_len=7, max_len=7, seed=3)
    with threads.limit(1):
        cb = fd.Codebook.for_grammar(g, d, 0, threads=1)
        cb0 = fd.Codebook.for_grammar(g0, d, 0, threads=1)
        fd.dcyk(g, s, cb, variant="cleanup")  # warm: rule tables, G_k, kernels
        fd.dcyk(g0, s0, cb0, variant="trace")
        rounds = 5 if timing else 1
        base = best(lambda: fd.dcyk(g0, s0, cb0, variant="trace"), rounds, warm=False)
        seconds = benchmark.pedantic(
            lambda: best(lambda: fd.dcyk(g, s, cb, variant="cleanup"), rounds, warm=False),
            rounds=1,
            iterations=1,
        )
    ratio = seconds / base
    benchmark.extra_info.update(
        {"grammar": name, "d": d, "cleanup_s": seconds, "g0_trace_s": base, "ratio": ratio}
    )
    if timing:
        assert ratio <= COST_TARGET, f"cleanup on {name} costs {ratio:.2f}x G0 trace"


_LARGE_SCRIPT = textwrap.dedent(
    """
    import json, os, resource, sys, time
    import fastdcyk as fd
    d, path = int(sys.argv[1]), sys.argv[2]
    if path:
        g = fd.Grammar.from_file(path, cnf="allow").to_cnf()
    elif sys.argv[3] == "smoke":
        g = fd.random_grammar(400, 100, 1000, ambiguity=2, seed=0)
    else:
        g = fd.random_grammar(4000, 1000, 10000, ambiguity=2, seed=0)
    n = 20 if sys.argv[3] == "timed" else 5
    (s,) = fd.generate(g, 1, min_len=n, max_len=n, seed=3)
    t0 = time.perf_counter()
    r = fd.dcyk(g, s, d=d, variant="cleanup")
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    sc = fd.cell_scores(fd.cyk(g, s), r.chart)
    print(json.dumps({"wall_s": wall, "peak_rss_bytes": peak, "f1": sc.f1, "words": n}))
    """
)


@pytest.mark.benchmark(group="cleanup variant on a real-size grammar, whole process")
def test_cleanup_peak_rss_at_d6000(benchmark, d_large, large_or_smoke, timing):
    mode = "timed" if timing else "smoke"

    def run():
        out = subprocess.run(
            [sys.executable, "-c", _LARGE_SCRIPT, str(d_large), ATIS or "", mode],
            check=True,
            capture_output=True,
            text=True,
        )
        return json.loads(out.stdout.strip().splitlines()[-1])

    rec = benchmark.pedantic(run, rounds=1, iterations=1, warmup_rounds=0)
    benchmark.extra_info.update(rec)
    if timing:
        assert rec["peak_rss_bytes"] <= RSS_TARGET, rec

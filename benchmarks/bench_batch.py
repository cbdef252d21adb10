"""``dcyk_batch`` with its defaults against a loop of ``fd.dcyk`` over the same sentences,
in the same run.

Target (docs/performance.md, "Many sentences on a CPU"): on a CPU, ``fd.dcyk_batch(g,
sentences)`` with every default costs at most :data:`TARGET` times ``[fd.dcyk(g, s) for s
in sentences]``, and every result has ``sure`` set. The sentences: 50 of 4 to 10 words of
the built-in G2 and 30 of 5 to 15 words of CommandTalk (tests/data/commandtalk.cfg.gz, cells
of up to some 370 symbols); each side is warm (its codebooks built, the kernels compiled)
and timed the best of 3, interleaved, on one thread.

Run for real with

    python -m pytest benchmarks/bench_batch.py --benchmark-enable -p no:cacheprovider

Under ``--benchmark-disable`` (the default) the body runs once on 4 short sentences of each
grammar as a smoke test.
"""

from __future__ import annotations

import time

import pytest
from bench_readback import commandtalk

import fastdcyk as fd
from fastdcyk import threads

#: dcyk_batch's defaults over the loop of dcyk.
TARGET = 1.5


@pytest.mark.parametrize("name", ["G2", "CommandTalk"])
@pytest.mark.benchmark(group="dcyk_batch's defaults")
def test_the_batch_with_its_defaults_against_a_loop_of_dcyk(benchmark, timing, name):
    g = commandtalk() if name == "CommandTalk" else fd.Grammar.builtin(name)
    count, (lo, hi) = ((50, (4, 10)) if name == "G2" else (30, (5, 15))) if timing else (4, (3, 5))
    sents = fd.generate(g, count, min_len=lo, max_len=hi, seed=2)
    rounds = 3 if timing else 1
    with threads.limit(1):
        fd.dcyk_batch(g, sents)  # warm: the codebooks of every d chosen, the kernels

        def race() -> tuple[float, float, list[fd.DCYKResult], list[fd.DCYKResult]]:
            best = {"batch": float("inf"), "loop": float("inf")}
            batch: list[fd.DCYKResult] = []
            loop: list[fd.DCYKResult] = []
            for _ in range(rounds):
                t0 = time.perf_counter()
                batch = fd.dcyk_batch(g, sents)
                best["batch"] = min(best["batch"], time.perf_counter() - t0)
                t0 = time.perf_counter()
                loop = [fd.dcyk(g, s) for s in sents]
                best["loop"] = min(best["loop"], time.perf_counter() - t0)
            return best["batch"], best["loop"], batch, loop

        batch_s, loop_s, batch, loop = benchmark.pedantic(race, rounds=1, iterations=1)
    ratio = batch_s / loop_s
    benchmark.extra_info.update(
        {"sentences": len(sents), "batch_s": batch_s, "loop_s": loop_s, "ratio": ratio}
    )
    assert all(r.sure is not None and r.dimension is not None for r in batch)
    assert [r.chart for r in batch] == [r.chart for r in loop]  # the same results as dcyk
    if timing:
        assert ratio <= TARGET, f"dcyk_batch took {ratio:.2f} times the loop of dcyk"

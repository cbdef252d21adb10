"""d chosen by the certificate (``d="auto"``) against a parse at each sentence's smallest
exact fixed d, in the same run.

Target (docs/performance.md, "d chosen by the certificate"): on CommandTalk sentences of 5
to 20 words (tests/data/commandtalk.cfg.gz, cells of up to about 370 symbols, so that the
sentences need d = 128 to 512), a loop of ``fd.dcyk(g, s)`` over them in order, starting
with no d kept, costs at most :data:`TARGET` times the same loop at each sentence's
smallest d whose chart is exact, found beforehand (``d="auto"`` cannot know it: it tries,
and keeps per length the d that worked). Both loops use the same warm codebooks (one per
d, built before the timing), one thread, each the best of 3 runs, timed interleaved.

Run for real with

    python -m pytest benchmarks/bench_auto.py --benchmark-enable -p no:cacheprovider

Under ``--benchmark-disable`` (the default) the body runs once on 3 short sentences as a
smoke test.
"""

from __future__ import annotations

import time

import pytest
from bench_readback import commandtalk

import fastdcyk as fd
from fastdcyk import threads
from fastdcyk.engine import auto

#: d="auto" over the smallest exact fixed d, the sums over the sentences.
TARGET = 1.5
DIMS = (128, 256, 512, 1024, 2048)


def smallest_exact(g: fd.Grammar, s: tuple[str, ...]) -> int | None:
    """The smallest d of :data:`DIMS` whose chart of ``s`` is symbolic CYK's (None: none)."""
    gold = fd.cyk(g, s)
    for d in DIMS:
        if fd.dcyk(g, s, d=d, progress=False).chart == gold:
            return d
    return None


@pytest.mark.benchmark(group="d chosen by the certificate")
def test_auto_against_the_smallest_exact_fixed_d(benchmark, timing):
    g = commandtalk()
    count, (lo, hi) = (40, (5, 20)) if timing else (3, (4, 6))
    sents = fd.generate(g, count, min_len=lo, max_len=hi, seed=3)
    rounds = 3 if timing else 1
    with threads.limit(1):
        fixed = [smallest_exact(g, s) for s in sents]  # (the codebooks built and warm)
        pairs = [(s, d) for s, d in zip(sents, fixed, strict=True) if d is not None]
        assert len(pairs) == len(sents) or not timing

        def loop_auto() -> list[fd.DCYKResult]:
            auto.clear()  # no d kept: the loop as a user's first one
            return [fd.dcyk(g, s, progress=False) for s, _ in pairs]

        def loop_fixed() -> None:
            for s, d in pairs:
                fd.dcyk(g, s, d=d, progress=False)

        def race() -> tuple[float, float, list[fd.DCYKResult]]:
            best = {"auto": float("inf"), "fixed": float("inf")}
            results: list[fd.DCYKResult] = []
            for _ in range(rounds):
                t0 = time.perf_counter()
                results = loop_auto()
                best["auto"] = min(best["auto"], time.perf_counter() - t0)
                t0 = time.perf_counter()
                loop_fixed()
                best["fixed"] = min(best["fixed"], time.perf_counter() - t0)
            return best["auto"], best["fixed"], results

        auto_s, fixed_s, results = benchmark.pedantic(race, rounds=1, iterations=1)
    exact = sum(r.chart == fd.cyk(g, s) for r, (s, _) in zip(results, pairs, strict=True))
    ratio = auto_s / fixed_s
    chosen = [r.dimension.d for r in results]
    benchmark.extra_info.update(
        {
            "sentences": len(pairs),
            "auto_s": auto_s,
            "fixed_s": fixed_s,
            "ratio": ratio,
            "exact": exact,
            "tries": sum(len(r.dimension.tried) for r in results),
            "auto_d": {d: chosen.count(d) for d in sorted(set(chosen))},
            "fixed_d": {d: fixed.count(d) for d in sorted({d for d in fixed if d})},
        }
    )
    assert exact == len(pairs)  # every chart d="auto" returned is CYK's (the study: 300 of 300)
    if timing:
        assert ratio <= TARGET, f"d='auto' took {ratio:.2f} times the smallest exact fixed d"

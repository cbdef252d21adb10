"""The D-CYK engine: its cost in FFT pairs, its scaling with the grammar, its memory.

Targets (docs/performance.md), each a ratio to a baseline measured in the same run:

- cost of one G0 sentence of length 7 at d = 2048, float32, one thread, in units of one
  bare FFT pair (rfft + irfft along axis 0 of a d x d float32 matrix, one thread, measured
  in the same test): trace variant <= 80 pairs, paper variant with order="cell" <= 250,
  paper variant in its default sequential order <= 450;
- scaling: a random grammar of 4,000 nonterminals and 10,000 binary rules, a 6-word
  sentence, d = 256, trace variant: at most 20 times a 6-word G0 sentence;
- at d = 1024, G0 sentences of length <= 7, the faithful variant at least 5x faster per
  sentence than the plain numpy.fft implementation below;
- at d = 6000, one G0 sentence of length 7: peak memory of the whole process at most 1.5 GB
  for both variants.

Run for real with

    FASTDCYK_BENCH_LARGE=1 .venv/bin/python -m pytest benchmarks/bench_engine.py \\
        --benchmark-enable --benchmark-columns=min,median,mean,rounds -p no:cacheprovider

Under ``--benchmark-disable`` (the default) each body runs once at d = 64 as a smoke test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import fastdcyk as fd
from fastdcyk import threads

N_SENTENCES = 4


class PlainNumpyDCYK:
    """The faithful D-CYK (docs/method.md, sections 1-2) with numpy.fft and numpy's defaults.

    Every factor of every operator is applied on its own: a permutation as a fancy-index
    gather, a circulant as rfft, spectral product, irfft (a new array each time); rule
    operators are applied rule by rule; the accumulators are dense. The decoder reads
    entry (0, 0) through column 0 of P_left only, as a plain implementation would.
    """

    def __init__(self, cb: fd.Codebook, beta: float, threshold: float) -> None:
        self.cb, self.d, self.beta = cb, cb.d, beta
        self.bound = 0.5 + np.log(threshold / (1 - threshold)) / beta
        self.perm = cb.perm
        self.inv = np.argsort(cb.perm)

    def _spec(self, kind, s):
        return np.fft.rfft(self.cb.vector(kind, s))

    def circ(self, kind, s, x, transpose=False):
        spec = self._spec(kind, s)
        spec = np.conj(spec) if transpose else spec
        return np.fft.irfft(np.fft.rfft(x, axis=0) * spec[:, None], n=self.d, axis=0)

    def plus(self, kind, s, x):  # [s]+ x = C_s (Phi x)
        return self.circ(kind, s, x[self.perm])

    def minus(self, kind, s, x):  # [s]- x = Phi^T (C_s^T x)
        return self.circ(kind, s, x, transpose=True)[self.inv]

    def right_plus_minus(self, b, c, y):  # y [B]+ [C]- = ((y C_B) Phi) Phi^T C_C^T
        sb, sc = self._spec("nonterminal", b), self._spec("nonterminal", c)
        d = self.d
        y = np.fft.irfft(np.fft.rfft(y, axis=1) * np.conj(sb)[None, :], n=d, axis=1)
        y = y[:, self.inv]  # y Phi
        y = y[:, self.perm]  # y Phi^T
        return np.fft.irfft(np.fft.rfft(y, axis=1) * sc[None, :], n=d, axis=1)

    def sig(self, x):
        with np.errstate(over="ignore"):
            return (1.0 / (1.0 + np.exp(-(x - 0.5) * self.beta))).astype(x.dtype)

    def parse(self, g: fd.Grammar, words):
        d, n = self.d, len(words)
        dt = self.cb.dtype
        eye = np.eye(d, dtype=dt)
        pl = np.zeros((d, d), dt)
        for i, a in enumerate(words, 1):
            pl += self.minus("index", i - 1, self.minus("index", i, self.minus("terminal", a, eye)))
        pr = np.zeros((d, d), dt)

        def update(i, j, a, pa):
            nonlocal pl, pr
            pl += self.minus("index", i, self.minus("index", j, self.minus("nonterminal", a, pa)))
            pr += self.plus("nonterminal", a, self.plus("index", i, self.plus("index", j, pa)))

        for i in range(1, n + 1):
            for a in g.nonterminals:
                terms = [t for (lhs, t) in g.unary_rules if lhs == a]
                if not terms:
                    continue
                y = self.plus("index", i, self.plus("index", i - 1, pl))
                m = sum(self.plus("terminal", t, y) for t in terms)
                update(i - 1, i, a, self.sig(m))
        for j in range(2, n + 1):
            for i in range(j - 2, -1, -1):
                for a in g.nonterminals:
                    rules = [(b, c) for (lhs, b, c) in g.binary_rules if lhs == a]
                    if not rules:
                        continue
                    y = self.minus("index", j, self.plus("index", i, pl))
                    yr = sum(self.right_plus_minus(b, c, y) for b, c in rules)
                    diag = np.einsum("rk,kr->r", yr, pr)
                    update(i, j, a, np.diag(self.sig(diag)))
        col = pl[:, :1]
        chart = {}
        for i in range(n):
            for j in range(i + 1, n + 1):
                u = self.plus("index", j, self.plus("index", i, col))
                chart[(i, j)] = frozenset(
                    a for a in g.nonterminals if self.plus("nonterminal", a, u)[0, 0] > self.bound
                )
        return pl, pr, chart


@pytest.fixture(scope="module")
def g0_batch():
    g = fd.Grammar.builtin("G0")
    return g, fd.generate(g, N_SENTENCES, min_len=5, max_len=7, seed=7)


def _engine_batch(g, sents, cb):
    return [fd.dcyk(g, s, cb, variant="paper") for s in sents]


@pytest.mark.benchmark(group="D-CYK faithful, G0 sentences, float32")
def test_engine_paper(benchmark, d_engine, g0_batch):
    g, sents = g0_batch
    cb = fd.Codebook(d_engine, seed=0)
    _engine_batch(g, sents[:1], cb)  # warm-up: JIT, spectra, work buffers
    results = benchmark.pedantic(
        _engine_batch, args=(g, sents, cb), rounds=3, iterations=1, warmup_rounds=0
    )
    benchmark.extra_info["sentences"] = len(sents)
    assert all(r.p_left.dtype == np.float32 for r in results)


def test_plain_numpy_fft_is_the_same_algorithm(g0_batch):
    """The baseline computes what the engine computes (float64: at beta = 50 float32
    rounding differences are amplified by the gates, so only float64 can show it)."""
    g, sents = g0_batch
    cb = fd.Codebook(64, seed=0, dtype="float64")
    r = fd.dcyk(g, sents[0], cb, variant="paper")
    plain = PlainNumpyDCYK(cb, fd.engine.DEFAULT_BETA, fd.engine.DEFAULT_THRESHOLD)
    pl, pr, chart = plain.parse(g, sents[0])
    assert np.abs(r.p_left - pl).max() <= 1e-6 * np.abs(pl).max()
    assert np.abs(r.p_right - pr).max() <= 1e-6 * np.abs(pr).max()
    assert chart == r.chart


@pytest.mark.benchmark(group="D-CYK faithful, G0 sentences, float32")
def test_plain_numpy_fft(benchmark, d_engine, g0_batch):
    g, sents = g0_batch
    cb = fd.Codebook(d_engine, seed=0)
    plain = PlainNumpyDCYK(cb, fd.engine.DEFAULT_BETA, fd.engine.DEFAULT_THRESHOLD)
    out = benchmark.pedantic(
        lambda: [plain.parse(g, s) for s in sents], rounds=1, iterations=1, warmup_rounds=0
    )
    assert len(out) == len(sents)
    assert all(p.dtype == np.float32 for p, _, _ in out)


_LARGE_SCRIPT = textwrap.dedent(
    """
    import json, resource, sys, time
    import fastdcyk as fd
    variant, d = sys.argv[1], int(sys.argv[2])
    g = fd.Grammar.builtin("G0")
    s = fd.generate(g, 1, min_len=7, max_len=7, seed=3)[0]
    fd.dcyk(g, s[:3], d=64, variant=variant)  # compile the kernels first
    t0 = time.perf_counter()
    r = fd.dcyk(g, s, d=d, variant=variant)
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    sc = fd.cell_scores(fd.cyk(g, s), r.chart)
    print(json.dumps({"wall_s": wall, "peak_rss_bytes": peak, "f1": sc.f1,
                      "sentence": " ".join(s), "timings": r.timings}))
    """
)


@pytest.mark.benchmark(group="D-CYK one G0 sentence of length 7, whole process")
@pytest.mark.parametrize("variant", ["paper", "trace"])
def test_engine_large(benchmark, d_large, variant, large_or_smoke):
    """Wall time and peak RSS of a fresh process parsing one sentence (subprocess)."""

    def run():
        out = subprocess.run(
            [sys.executable, "-c", _LARGE_SCRIPT, variant, str(d_large)],
            check=True,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": "0"},
        )
        return json.loads(out.stdout.strip().splitlines()[-1])

    rec = benchmark.pedantic(run, rounds=1, iterations=1, warmup_rounds=0)
    benchmark.extra_info.update(rec)
    assert rec["peak_rss_bytes"] > 0 and 0.0 <= rec["f1"] <= 1.0


# -- cost in FFT pairs -----------------------------------------------------------------------


def _pair_times(d: int, repeats: int = 9) -> list[float]:
    """Times of one bare pair: rfft + irfft along axis 0 of a d x d float32, one thread."""
    import scipy.fft

    x = np.random.default_rng(0).standard_normal((d, d), dtype=np.float32)
    ts = []
    for _ in range(repeats + 1):
        t0 = time.perf_counter()
        scipy.fft.irfft(scipy.fft.rfft(x, axis=0, workers=1), n=d, axis=0, workers=1)
        ts.append(time.perf_counter() - t0)
    return ts[1:]  # the first call plans and allocates


def _timed(benchmark, fn, rounds: int) -> float:
    """Run ``fn`` under the benchmark fixture; the median of its own wall times."""
    times: list[float] = []

    def run():
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)

    benchmark.pedantic(run, rounds=rounds, iterations=1, warmup_rounds=0)
    return float(np.median(times))


@pytest.fixture
def one_thread():
    """One thread for the duration of a test (kernels; FFTs: codebooks with threads=1)."""
    with threads.limit(1):
        yield


#: (variant, order, target in pairs) of the G0 length-7 cost benchmark.
PAIR_TARGETS = [("trace", "cell", 80), ("paper", "cell", 250), ("paper", "sequential", 450)]


@pytest.mark.benchmark(group="D-CYK one G0 sentence of length 7, in FFT pairs, one thread")
@pytest.mark.parametrize(("variant", "order", "target"), PAIR_TARGETS)
def test_engine_pairs(benchmark, timing, d_pairs, variant, order, target, one_thread):
    g = fd.Grammar.builtin("G0")
    words = fd.generate(g, 1, min_len=7, max_len=7, seed=3)[0]
    cb = fd.Codebook(d_pairs, seed=0, threads=1, unitary=variant == "trace")
    fd.dcyk(g, words, cb, variant=variant, order=order)  # warm-up: JIT, spectra, buffers
    pair_before = _pair_times(d_pairs)
    seconds = _timed(benchmark, lambda: fd.dcyk(g, words, cb, variant=variant, order=order), 3)
    pair = float(np.median(pair_before + _pair_times(d_pairs)))  # before and after the parses
    pairs = seconds / pair
    benchmark.extra_info.update(
        {"pair_s": pair, "pairs": pairs, "target_pairs": target, "sentence": " ".join(words)}
    )
    if timing:
        assert pairs <= target, f"{variant}/{order}: {pairs:.0f} pairs > {target}"


@pytest.mark.benchmark(group="D-CYK scaling with the grammar, trace variant, one thread")
@pytest.mark.parametrize("grammar", ["G0", "random-4000"])
def test_engine_scaling(benchmark, timing, d_scaling, grammar, one_thread):
    """A 6-word sentence of G0 and of a random grammar of 4,000 nonterminals and 10,000
    binary rules (ambiguity 2): the target is the second at most 20x the first."""
    if grammar == "G0":
        g = fd.Grammar.builtin("G0")
    elif not timing:  # smoke run: the same code path on a small random grammar
        g = fd.random_grammar(40, 10, 100, ambiguity=2.0, seed=0)
    else:
        g = fd.random_grammar(4000, 1000, 10000, ambiguity=2.0, seed=0)
    words = fd.generate(g, 1, min_len=6, max_len=6, seed=3)[0]
    cb = fd.Codebook(d_scaling, seed=0, threads=1, unitary=True)
    fd.dcyk(g, words, cb, variant="trace")  # warm-up: draws the vectors, builds the tables
    median = _timed(benchmark, lambda: fd.dcyk(g, words, cb, variant="trace"), 7)
    _SCALING[grammar] = median
    benchmark.extra_info.update({"nonterminals": len(g.nonterminals), "sentence": " ".join(words)})
    if grammar != "G0" and "G0" in _SCALING:
        ratio = median / _SCALING["G0"]
        benchmark.extra_info["ratio_to_G0"] = ratio
        if timing:
            assert ratio <= 20, f"{len(g.nonterminals)} nonterminals: {ratio:.1f}x G0"


_SCALING: dict[str, float] = {}

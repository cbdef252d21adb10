"""The torch backend (fastdcyk.engine.backends.torch.driver) on the CPU against the numpy backend.

Targets, each a ratio measured in the same run:

- at d = 1024, G0 sentences of length 5..7, float32, trace variant: the torch backend at
  most 1.5x the numpy backend's time per sentence (the paper variant is recorded only);
- batched throughput (sentences per second, ``fastdcyk.engine.batch.dcyk_batch`` with its default
  batch size) at d = 1024 and 2048, and 6000 with ``FASTDCYK_BENCH_LARGE=1``: recorded, with
  the numpy backend's rate on the same sentences beside it; at d = 6000 the torch backend's
  time per sentence at most 1.5x the numpy backend's (its G_k cache sized from the free
  memory: docs/performance.md).

Run for real with

    .venv/bin/python -m pytest benchmarks/bench_torch.py --benchmark-enable \\
        --benchmark-columns=min,median,mean,rounds -p no:cacheprovider

Under ``--benchmark-disable`` (the default) each body runs once at d = 64 as a smoke test.
Both backends run on one thread (torch's intra-op pool, the Numba kernels, the FFTs).
"""

from __future__ import annotations

import time

import numpy as np
import pytest

import fastdcyk as fd
from fastdcyk import threads
from fastdcyk.engine import default_codebook
from fastdcyk.engine.batch import dcyk_batch

torch = pytest.importorskip("torch")

#: At d = 6000 the torch backend's time per sentence, batched, against the numpy backend's.
LARGE_D_TARGET = 1.5


@pytest.fixture(autouse=True)
def _one_thread():
    """One thread for both backends (as the FFT-pair benchmark of bench_engine.py): torch's
    intra-op pool, the Numba kernels and the codebooks' FFTs (``threads=1``). The ratio is
    then per core, and a busy machine does not leave torch's thread pool waiting for cores
    (which made torch up to 8x slower on a shared two-core machine)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threads.limit(1):
            yield
    finally:
        torch.set_num_threads(before)


def _sentences(count: int) -> list[tuple[str, ...]]:
    g = fd.Grammar.builtin("G0")
    return [tuple(s) for s in fd.generate(g, count, min_len=5, max_len=7, seed=7)]


def _per_sentence(fn, sentences) -> float:
    """Median seconds per sentence of ``fn(sentence)`` over the sentences."""
    times = []
    for s in sentences:
        t0 = time.perf_counter()
        fn(s)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


@pytest.mark.benchmark(group="torch backend: one G0 sentence, float32, CPU")
@pytest.mark.parametrize(("variant", "target"), [("trace", 1.5), ("paper", None)])
def test_torch_per_sentence(benchmark, timing, d_engine, variant, target):
    g = fd.Grammar.builtin("G0")
    sents = _sentences(4)
    cb = default_codebook(g, d_engine, 0, unitary=variant == "trace", threads=1)
    for backend in ("numpy", "torch"):  # warm-up: JIT, spectra, work buffers
        fd.dcyk(g, sents[0], cb, variant=variant, backend=backend)
    per = {"numpy": [], "torch": []}

    def both():
        # alternate the backends, so that both see the same load on a shared machine
        for backend in ("numpy", "torch"):
            parse = lambda s, b=backend: fd.dcyk(g, s, cb, variant=variant, backend=b)  # noqa: E731
            per[backend].append(_per_sentence(parse, sents))

    benchmark.pedantic(both, rounds=3 if timing else 1, iterations=1, warmup_rounds=0)
    numpy_s, torch_s = float(np.median(per["numpy"])), float(np.median(per["torch"]))
    ratio = torch_s / numpy_s
    benchmark.extra_info.update(
        {"numpy_s": numpy_s, "torch_s": torch_s, "ratio": ratio, "target": target}
    )
    if timing and target is not None:
        assert ratio <= target, f"{variant}: torch {ratio:.2f}x numpy per sentence > {target}"


@pytest.mark.benchmark(group="torch backend: batched throughput, G0, float32, CPU")
def test_torch_batch_throughput(benchmark, timing, d_batch):
    g = fd.Grammar.builtin("G0")
    count = 16 if timing else 4
    sents = _sentences(count)
    cb = default_codebook(g, d_batch, 0, unitary=True, threads=1)
    dcyk_batch(g, sents[:1], cb, variant="trace", backend="torch")  # warm-up
    seconds = []

    def run():
        t0 = time.perf_counter()
        out = dcyk_batch(g, sents, cb, variant="trace", backend="torch")
        seconds.append(time.perf_counter() - t0)
        return out

    results = benchmark.pedantic(run, rounds=1, iterations=1, warmup_rounds=0)
    assert len(results) == count
    numpy_s = _per_sentence(lambda s: fd.dcyk(g, s, cb, variant="trace"), sents[:4])
    rate = count / min(seconds)
    ratio = (1.0 / rate) / numpy_s
    benchmark.extra_info.update(
        {
            "sentences": count,
            "torch_sentences_per_s": rate,
            "numpy_sentences_per_s": 1.0 / numpy_s,
            "torch_over_numpy": ratio,
        }
    )
    if timing:
        assert all(r.chart == fd.cyk(g, r.words) for r in results)
        if d_batch >= 6000:
            assert ratio <= LARGE_D_TARGET, f"torch {ratio:.2f}x numpy per sentence at d = 6000"

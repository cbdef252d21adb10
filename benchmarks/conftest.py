"""Shared set-up for the benchmarks: the sizes to run and the large-case switch.

Under ``--benchmark-disable`` (the default in pyproject) every benchmark body runs once as a
smoke test, at d = 64. With ``--benchmark-enable`` the sizes are d = 512 and 2048, plus 6000
when ``FASTDCYK_BENCH_LARGE=1``; dense baselines also need ``FASTDCYK_BENCH_LARGE=1``. The
engine benchmarks (``d_engine``) run at d = 1024, the cost in FFT pairs (``d_pairs``) at
d = 2048 and the scaling with the grammar (``d_scaling``) at d = 256.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

SMOKE_D = 64
LARGE = os.environ.get("FASTDCYK_BENCH_LARGE", "") not in ("", "0")


def benchmarks_disabled(config: pytest.Config) -> bool:
    """pytest-benchmark's own rule: --benchmark-disable unless --benchmark-enable."""
    return bool(config.getoption("benchmark_disable", False)) and not config.getoption(
        "benchmark_enable", False
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrise ``d`` (and ``d_large``, the sizes of the large-only benchmarks)."""
    disabled = benchmarks_disabled(metafunc.config)
    if "d" in metafunc.fixturenames:
        sizes = [SMOKE_D] if disabled else [512, 2048] + ([6000] if LARGE else [])
        metafunc.parametrize("d", sizes)
    if "d_kernel" in metafunc.fixturenames:
        sizes = [SMOKE_D] if disabled else [2048] + ([6000] if LARGE else [])
        metafunc.parametrize("d_kernel", sizes)
    if "d_engine" in metafunc.fixturenames:
        sizes = [SMOKE_D] if disabled else [1024]
        metafunc.parametrize("d_engine", sizes)
    if "d_pairs" in metafunc.fixturenames:
        metafunc.parametrize("d_pairs", [SMOKE_D] if disabled else [2048])
    if "d_scaling" in metafunc.fixturenames:
        metafunc.parametrize("d_scaling", [SMOKE_D] if disabled else [256])
    if "d_batch" in metafunc.fixturenames:  # batched throughput (bench_torch.py)
        sizes = [SMOKE_D] if disabled else [1024, 2048] + ([6000] if LARGE else [])
        metafunc.parametrize("d_batch", sizes)
    if "d_large" in metafunc.fixturenames:
        sizes = [SMOKE_D] if disabled else [6000]
        metafunc.parametrize("d_large", sizes)


@pytest.fixture
def large_or_smoke(request: pytest.FixtureRequest) -> None:
    """Skip a timed large or dense benchmark unless FASTDCYK_BENCH_LARGE=1 (smoke runs stay)."""
    if not benchmarks_disabled(request.config) and not LARGE:
        pytest.skip("set FASTDCYK_BENCH_LARGE=1 to time the d = 6000 and dense cases")


@pytest.fixture
def timing(request: pytest.FixtureRequest) -> bool:
    """Whether this run times the benchmarks (targets are asserted only then)."""
    return not benchmarks_disabled(request.config)


#: NLTK's ATIS grammar (its atis.cfg, given by path: fastdcyk does not ship it) for the
#: real-size benchmarks; without it they use the random grammar of its size.
ATIS = os.environ.get("FASTDCYK_ATIS")


@pytest.fixture
def real_size_grammar(timing: bool) -> tuple[Any, str]:
    """(grammar, name): ATIS when ``FASTDCYK_ATIS`` gives its path (converted to CNF: 3,965
    nonterminals), else ``random_grammar(4000, 1000, 10000, ambiguity=2)``; a smaller random
    grammar in smoke runs."""
    import fastdcyk as fd

    if ATIS:
        return fd.Grammar.from_file(ATIS, cnf="allow").to_cnf(), "ATIS"
    if not timing:
        return fd.random_grammar(400, 100, 1000, ambiguity=2, seed=0), "random-400"
    return fd.random_grammar(4000, 1000, 10000, ambiguity=2, seed=0), "random-4000"

"""The registry of backends (fastdcyk.registry.backends): its facts, its refusals, and a
backend added as docs/architecture.md ("Adding a backend") adds one, without touching any
other file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import fastdcyk as fd
from fastdcyk.registry import backends, modes

ARCHITECTURE = Path(__file__).parents[2] / "docs" / "architecture.md"


def example_source() -> str:
    """The python block of docs/architecture.md's "Adding a backend", as it stands."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text[text.index("## Adding a backend") :]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.fixture
def counting():
    """The documented backend, registered for one test."""
    namespace: dict = {"__name__": "architecture_backend_example"}
    exec(compile(example_source(), str(ARCHITECTURE), "exec"), namespace)
    try:
        yield backends.BACKENDS["counting"], namespace["CountingParser"]
    finally:
        backends.unregister("counting")


def test_the_built_in_backends_and_their_facts():
    assert backends.names() == ("numpy", "torch") and backends.DEFAULT == "numpy"
    numpy, torch_ = backends.get("numpy"), backends.get("torch")
    assert numpy.certificate and not numpy.autograd and not numpy.batched
    assert torch_.autograd and torch_.batched and torch_.takes_device
    assert not torch_.certificate and not numpy.takes_device
    for record in backends.BACKENDS.values():  # every part a record names exists
        for part in ("driver", "device", "release", "batch_size", "spill", "memory"):
            if getattr(record, part) is None:
                assert record.part(part) is None
            elif record.requires is None:
                assert callable(record.part(part))
    # which backends have which mode: the modes' records, asked through the registry
    assert modes.select("cleanup").backends() == ["numpy", "torch"]
    assert modes.select("cleanup", "table").backends() == ["numpy"]


def test_unknown_backends_and_devices_are_refused_naming_those_there_are():
    with pytest.raises(ValueError, match=r"unknown backend 'jax': choose one of \('numpy', "):
        fd.dcyk("G0", "fish swim", backend="jax")
    with pytest.raises(ValueError, match=r"device='cpu' needs backend='torch'"):
        fd.dcyk("G0", "fish swim", backend="numpy", device="cpu")
    with pytest.raises(ValueError, match="is registered already"):
        backends.register(backends.Backend("numpy", "a second numpy", driver=None))
    with pytest.raises(KeyError, match="no backend 'nothing'"):
        backends.unregister("nothing")
    with pytest.raises(TypeError, match="takes a Backend"):
        backends.register("numpy")


def test_a_backend_added_in_one_record_parses_as_the_others(counting):
    record, parser = counting
    g = fd.Grammar.builtin("G0")
    sentences = ["fish swim", "fish swim near fish", "fish near fish swim fish"]
    assert record.name in backends.names()
    parser.cells_read = 0
    for words in sentences:
        r = fd.dcyk(g, words, backend="counting")  # d chosen by its certificate
        assert r.chart == fd.cyk(g, words) and r.sure and r.dimension is not None
        ref = fd.dcyk(g, words, d=r.codebook.d)
        assert r.chart == ref.chart and r.options == ref.options
    n = [len(s.split()) for s in sentences]
    assert parser.cells_read >= sum(k * (k + 1) // 2 for k in n)  # every cell read here
    got = fd.dcyk_batch(g, sentences, d=128, backend="counting")
    assert [r.chart for r in got] == [fd.cyk(g, s) for s in sentences]
    parser.cells_read = 0
    got = fd.dcyk_batch(g, sentences, backend="counting")  # d chosen: by this backend's parses
    assert [r.chart for r in got] == [fd.cyk(g, s) for s in sentences]
    assert all(r.sure and r.dimension.chosen for r in got)
    assert parser.cells_read >= sum(k * (k + 1) // 2 for k in n)
    with pytest.raises(ValueError, match=r"numpy and torch backends only, not 'counting'"):
        fd.dcyk(g, "fish swim", d=128, variant="trace", backend="counting")
    with pytest.raises(ValueError, match=r"device='cpu' needs backend='torch'"):
        fd.dcyk(g, "fish swim", backend="counting", device="cpu")
    fd.clear_caches()  # a backend that keeps nothing releases nothing

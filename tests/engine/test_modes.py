"""The registry of detection modes (fastdcyk.registry.modes): its facts, the refusals it
words, and a mode added as docs/architecture.md ("Adding a mode") adds one, without
touching any other file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import fastdcyk as fd
from fastdcyk import options
from fastdcyk.registry import modes

ARCHITECTURE = Path(__file__).parents[2] / "docs" / "architecture.md"


def example_source() -> str:
    """The python block of docs/architecture.md's "Adding a mode", as it stands."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text[text.index("## Adding a mode") :]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.fixture
def exact_mode():
    """The documented mode, registered for one test."""
    namespace: dict = {"__name__": "architecture_example"}
    exec(compile(example_source(), str(ARCHITECTURE), "exec"), namespace)
    try:
        yield modes.MODES["exact"]
    finally:
        modes.unregister("exact")


def test_the_built_in_modes_and_their_facts():
    assert list(modes.MODES) == ["entrywise", "trace", "tanh", "cleanup", "weighted"]
    assert modes.gates() == ("entrywise", "trace", "tanh", "cleanup")
    assert modes.select("cleanup").name == "cleanup"
    assert modes.select("cleanup", "table").name == "weighted"
    for mode in modes.MODES.values():  # every part named by a record exists
        for backend in mode.parsers:
            assert isinstance(mode.parser(backend), type)
        for part in ("simulation", "buffers", "cost", "reader"):
            assert (mode.part(part) is None) == (getattr(mode, part) is None)
    # the defaults of the read-backs are the first of each mode's
    assert options.resolve("cleanup").readback == "cancel"
    assert options.resolve("cleanup", weights="table").readback == "cancel"
    assert options.resolve("trace").readback == "matched"


def test_combinations_that_do_not_exist_are_refused_naming_those_that_do():
    with pytest.raises(
        ValueError, match=r"weights='table' needs gate 'cleanup'.*trace \('chart'\)"
    ):
        options.resolve("trace", weights="table")
    with pytest.raises(ValueError, match=r"unknown gate 'diagonal': choose one of"):
        options.resolve("trace", gate="diagonal")
    with pytest.raises(ValueError, match=r"not a read-back of gate='trace'.*'cleanup'"):
        options.resolve("trace", readback="lstsq")
    with pytest.raises(ValueError, match=r"not a read-back of gate='cleanup', weights='table'"):
        options.resolve("cleanup", weights="table", readback="matched")
    with pytest.raises(ValueError, match=r"numpy backend only, not 'torch'"):
        modes.select("cleanup", "table").parser("torch")
    # a mode whose simulation models only some of its read-backs: the others are refused
    partly = modes.Mode(
        "partly",
        "partly",
        "the clean-up gate, simulated with its least-squares read-back only",
        {"numpy": ".cleanup.numpy_parser:NumpyCleanupParser"},
        readbacks=("lstsq", "cancel"),
        simulation=".cleanup.simulation:CleanupSimulation",
        simulated_readbacks=("lstsq",),
    )
    with modes.registered(partly), pytest.raises(ValueError, match="no model of readback='cancel'"):
        fd.capacity.predict("G0", 3, 64, gate="partly", readback="cancel", samples=1, sentences=2)
    with pytest.raises(ValueError, match="is registered already"):
        modes.register(modes.Mode("trace2", "trace", "a second trace gate", {}))
    with pytest.raises(KeyError, match="no mode 'nothing'"):
        modes.unregister("nothing")


def test_the_documented_mode_parses_through_dcyk(exact_mode):
    """Symbolic CYK through the schedule: the decoded chart is symbolic CYK's, in both
    orders, on grammars with ambiguity and unary-rich words."""
    assert exact_mode.gate in modes.gates()
    same_child = fd.Grammar.from_string("S -> S S | A B\nA -> A A | 'a'\nB -> B B | 'b'")
    cases = [("G0", s) for s in fd.generate(fd.Grammar.builtin("G0"), 4, seed=1)]
    cases += [(same_child, "a a b b"), ("example", "a a b")]
    for grammar, words in cases:
        g = fd.Grammar.load(grammar) if isinstance(grammar, str) else grammar
        gold = fd.cyk(g, words)
        for order in ("cell", "sequential"):
            r = fd.dcyk(g, words, d=16, gate="exact", order=order)
            assert r.chart == gold, (grammar, words, order)
            assert r.options.gate == "exact" and r.counts["detections"] > 0
    assert r.recognized and r.tree() is not None  # trees come from the chart, as any mode's


def test_the_documented_mode_is_refused_where_it_has_no_part(exact_mode):
    g = fd.Grammar.builtin("G0")
    with pytest.raises(ValueError, match="numpy backend only, not 'torch'"):
        fd.dcyk(g, "fish swim", d=16, gate="exact", backend="torch")
    with pytest.raises(ValueError, match=r"no simulation of gate=.exact. \(symbolic CYK"):
        fd.capacity.predict(g, 3, 64, gate="exact", samples=1, sentences=2)
    # no cost model: no slow-parse note, and a parse that is not estimated is not slow
    assert fd.engine.cost.slow_parse_note(g, 5, 64, options.resolve(gate="exact")) is None
    # no buffers of its own: the memory estimate counts the dense results
    assert fd.estimate_memory(64, variant="cleanup", gate="exact") == 2 * 64 * 64 * 4


def test_a_mode_leaves_the_registry_as_it_found_it():
    assert "exact" not in modes.MODES
    with pytest.raises(ValueError, match="unknown gate 'exact'"):
        options.resolve(gate="exact")

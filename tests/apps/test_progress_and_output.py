"""Slow runs say so (the cost model, the note, the progress rule), and charts of large
grammars stay readable on a terminal."""

from __future__ import annotations

import pytest

import fastdcyk as fd
import fastdcyk.cli.parse as cli_parse
from fastdcyk.cli import main
from fastdcyk.display import chart_width, format_chart, format_chart_compact
from fastdcyk.engine import cost, progress
from fastdcyk.options import resolve


@pytest.fixture(scope="module")
def large():
    """A grammar of 1,200 nonterminals (the paper variant's detections grow with them)."""
    return fd.random_grammar(1200, 300, 3000, ambiguity=2, seed=0)


# -- the cost model ----------------------------------------------------------------------------


def test_the_cost_model_orders_the_variants_and_grows_with_the_parse(large):
    # the clean-up variant with the plain least-squares read: the model counts passes over
    # the table, and cancelling's two more (which its fewer false candidates more than pay
    # for on this grammar: 0.10 s against lstsq's 0.19 s measured) would rank it above trace
    paper, trace = resolve("paper"), resolve("trace")
    cleanup = resolve("cleanup", readback="lstsq")
    t = {v.variant: cost.parse_seconds(large, 10, 1024, v) for v in (paper, trace, cleanup)}
    assert t["cleanup"] < t["trace"] < t["paper"]
    cancel = cost.parse_seconds(large, 10, 1024, resolve("cleanup"))
    assert t["cleanup"] < cancel < 2 * t["cleanup"]
    assert t["paper"] > 100 * t["cleanup"]  # a detection per nonterminal and cell, in FFTs
    assert cost.parse_seconds(large, 20, 1024, cleanup) > t["cleanup"]
    assert cost.parse_seconds(large, 10, 2048, cleanup) > t["cleanup"]
    matched = resolve("cleanup", readback="matched")
    assert cost.parse_seconds(large, 10, 1024, matched) > t["cleanup"]


def test_the_cost_model_is_right_to_an_order_of_magnitude():
    """Measured against a parse of each variant (G2, a 6-word sentence, d = 512)."""
    g = fd.Grammar.builtin("G2")
    s = "fish swim fish near fish swim".split()
    for variant in ("paper", "cleanup"):
        cb = fd.engine.default_codebook(g, 512, 0, unitary=variant != "paper")
        with fd.threads.limit(1):
            fd.dcyk(g, s, cb, variant=variant)  # warm: kernels, plans, index matrices
            r = fd.dcyk(g, s, cb, variant=variant)
        took = sum(r.timings.values())
        predicted = cost.parse_seconds(g, len(s), 512, r.options)
        assert took / 10 < predicted < took * 10, (variant, took, predicted)


def test_a_slow_parse_gets_a_note_naming_the_default(large):
    note = cost.slow_parse_note(large, 10, 1024, resolve("paper"))
    assert note is not None and "variant='paper'" in note and "1,200 nonterminals" in note
    assert "variant='cleanup' (the default) takes about" in note
    assert cost.slow_parse_note(fd.Grammar.builtin("G0"), 5, 256, resolve("cleanup")) is None


# -- when to print ------------------------------------------------------------------------------


def test_library_calls_print_nothing_unless_asked_or_on_a_terminal(monkeypatch, capsys):
    g = fd.Grammar.builtin("G0")
    monkeypatch.setattr(cost, "parse_seconds", lambda *a: 7200.0)  # every parse "slow"
    fd.dcyk(g, "fish swim", d=64, variant="paper")  # not a terminal: nothing
    assert capsys.readouterr().err == ""
    assert progress.check_progress(None) is None
    fd.dcyk(g, "fish swim", d=64, variant="paper", progress=True)  # asked: note and bar
    err = capsys.readouterr().err
    assert err.startswith("fastdcyk: D-CYK with variant='paper'") and "2.0 h" in err
    monkeypatch.setattr(progress, "stderr_is_terminal", lambda: True)
    assert progress.check_progress(None) == progress.AUTO_DELAY
    fd.dcyk(g, "fish swim", d=64, variant="paper")  # a terminal: the note
    assert "about 2.0 h predicted" in capsys.readouterr().err
    fd.dcyk(g, "fish swim", d=64, variant="paper", progress=False)  # told not to
    assert capsys.readouterr().err == ""


def test_the_progress_bar_counts_detections(monkeypatch):
    counted = []

    class Bar:
        def __init__(self, *args, **kwargs):
            counted.append(kwargs.get("total", args[1] if len(args) > 1 else None))

        def update(self, k):
            counted.append(k)

        def close(self):
            pass

    import fastdcyk.engine.api as api

    monkeypatch.setattr(api, "progress_bar", lambda delay, total, *a: Bar(None, total))
    g = fd.Grammar.builtin("G0")
    r = fd.dcyk(g, "fish swim fish", d=64, variant="paper", progress=True)
    total, steps = counted[0], counted[1:]
    assert total == r.counts["detections"] == sum(steps)
    assert max(steps) == 1  # the paper's order: one detection at a time


def test_fastdcyk_parse_prints_the_estimate_of_a_slow_parse_first(monkeypatch, capsys):
    monkeypatch.setattr(cost, "parse_seconds", lambda *a: 7200.0)
    order = []
    real = cli_parse.dcyk

    def spy(*args, **kwargs):
        order.append(capsys.readouterr().err)  # what was printed before the parse
        return real(*args, **kwargs)

    monkeypatch.setattr(cli_parse, "dcyk", spy)
    assert main(["parse", "--grammar", "G0", "--dim", "64", "--variant", "paper", "fish"]) == 0
    assert order and order[0].startswith("fastdcyk parse: D-CYK with variant='paper'")
    assert "about 2.0 h predicted" in order[0]


# -- readable charts ---------------------------------------------------------------------------


def test_compact_chart_counts_errors_and_the_best_tree():
    g = fd.Grammar.builtin("G0")
    words = "fish swim fish".split()
    gold = fd.cyk(g, words)
    chart = dict(gold)
    chart[(0, 1)] = gold[(0, 1)] | {"P"}  # one false symbol
    chart[(1, 3)] = frozenset()  # a missed one
    text = format_chart_compact(chart, words, gold, [("S", 0, 3), ("NP", 0, 1)])
    lines = text.splitlines()
    assert lines[0].split() == ["i", "\\", "j", "1:fish", "2:swim", "3:fish"]
    assert "2 +1 NP" in lines[1] and "0 -1" in lines[2]
    assert chart_width(text) <= chart_width(format_chart(chart, words, gold, g.nonterminals)) + 8


def test_parse_prints_a_compact_chart_when_the_full_one_is_too_wide(monkeypatch, capsys):
    argv = ["parse", "--grammar", "G0", "--dim", "256", "fish", "swim", "fish", "near", "fish"]
    assert main([*argv[:1], "--chart", "compact", *argv[1:]]) == 0
    out = capsys.readouterr().out
    assert "a compact view" in out and "--chart full prints them all" in out
    assert "S NP" not in out  # counts, not symbols
    monkeypatch.setenv("COLUMNS", "20")  # a narrow terminal: auto chooses compact
    assert main(argv) == 0
    assert "a compact view" in capsys.readouterr().out
    monkeypatch.setenv("COLUMNS", "200")
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "a compact view" not in out and "S NP" in out

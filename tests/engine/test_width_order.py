"""The "width" order: every cell of a span width read from the table as the narrower widths
left it, its cells read back together (fastdcyk.engine.core.schedule)."""

from __future__ import annotations

import numpy as np
import pytest

import fastdcyk as fd
from fastdcyk.engine.core import schedule


@pytest.mark.parametrize("name", ["G0", "G1", "G2", "G3", "G4"])
@pytest.mark.parametrize("readback", ["cancel", "lstsq", "matched"])
def test_width_order_gives_the_cell_orders_charts_on_the_papers_grammars(name, readback):
    g = fd.Grammar.builtin(name)
    sents = fd.generate(g, 6, min_len=3, max_len=9, seed=11)
    cb = fd.engine.default_codebook(g, 128, 0, unitary=True)
    for s in sents:
        kw = dict(variant="cleanup", readback=readback)
        by_cell = fd.dcyk(g, s, cb, **kw)
        by_width = fd.dcyk(g, s, cb, order="width", **kw)
        assert by_width.options.order == "width"
        assert by_width.chart == by_cell.chart == fd.cyk(g, s)
        assert by_width.counts == by_cell.counts  # the same detections, updates, prunes


def test_width_order_on_commandtalks_big_cells(commandtalk, big_cells):
    """Cells of 122 to 373 symbols at d = 512 (where the cell order reads them exactly):
    the same charts in the width order, whose reads also see the width's other cells."""
    cb = fd.engine.default_codebook(commandtalk, 512, 0, unitary=True)
    for s in big_cells.sentences:
        for readback in ("cancel", "lstsq"):
            kw = dict(variant="cleanup", readback=readback)
            by_cell = fd.dcyk(commandtalk, s, cb, **kw)
            by_width = fd.dcyk(commandtalk, s, cb, order="width", **kw)
            assert by_width.chart == by_cell.chart == fd.cyk(commandtalk, s.split())


class _Recorder:
    """A parser that records the schedule's calls; ``together``: its ends_width()."""

    def __init__(self, together):
        self.calls, self.together = [], together

    def initialise(self):
        self.calls.append("init")

    def rows(self, step):
        return [0, 1]

    def group(self, step):
        return None

    def begin(self, i, j, step):
        pass

    def read(self, i, j, step):
        self.calls.append(("read", i, j))

    def detect(self, i, j, step, ks):
        one = np.ones((1, ks.stop - ks.start))
        return schedule.Detections(one, one, one, one)

    def write(self, i, j, step, ks, det, keep):
        self.calls.append(("write", i, j))

    def end(self, i, j, step):
        self.calls.append(("end", i, j))

    def ends_width(self, step):
        return self.together

    def end_width(self, spans, step):
        self.calls.append(("end", tuple(spans), step))


def test_the_schedule_detects_a_width_before_it_writes_then_ends_cell_by_cell():
    """Within a width every cell is detected before any writes; then each cell writes and
    ends in turn (a read sees the width's cells read before it, as in the cell order)."""
    parser = _Recorder(False)
    ledger = schedule.Ledger(fd.engine.core.arrays.NUMPY, ["A", "B"], [3], 0.0)
    schedule.run(parser, 3, "width", ledger)
    assert parser.calls == [
        "init",
        *[("read", i, i + 1) for i in range(3)],
        *[c for i in range(3) for c in (("write", i, i + 1), ("end", i, i + 1))],
        ("read", 0, 2),
        ("read", 1, 3),
        ("write", 0, 2),
        ("end", 0, 2),
        ("write", 1, 3),
        ("end", 1, 3),
        ("read", 0, 3),
        ("write", 0, 3),
        ("end", 0, 3),
    ]
    assert ledger.count_dicts() == [{"detections": 12, "updates": 12, "pruned": 0}]


def test_a_parser_may_end_a_whole_width_at_once():
    parser = _Recorder(True)
    ledger = schedule.Ledger(fd.engine.core.arrays.NUMPY, ["A", "B"], [2], 0.0)
    schedule.run(parser, 2, "width", ledger)
    assert parser.calls == [
        "init",
        ("read", 0, 1),
        ("read", 1, 2),
        ("write", 0, 1),
        ("write", 1, 2),
        ("end", ((0, 1), (1, 2)), schedule.UNARY),
        ("read", 0, 2),
        ("write", 0, 2),
        ("end", ((0, 2),), schedule.BINARY),
    ]


def test_the_width_order_is_refused_where_the_gate_has_none():
    with pytest.raises(ValueError, match="order='width' is not an order of gate="):
        fd.dcyk("G0", "fish swim", d=64, variant="paper", order="width")
    with pytest.raises(ValueError, match="order='width' is not an order"):
        fd.dcyk("G0", "fish swim", d=64, weights="table", order="width")


def test_the_capacity_model_simulates_the_width_order():
    p = fd.capacity.predict("G4", 6, 64, samples=1, sentences=8, order="width")
    q = fd.capacity.predict("G4", 6, 64, samples=1, sentences=8)
    assert p.f1 == pytest.approx(q.f1, abs=0.02)


@pytest.mark.parametrize("name", ["G0", "G1", "G2", "G3", "G4"])
def test_the_trace_gates_width_step_on_torch_is_the_schedules_width_order(name):
    """The torch backend's trace gate runs a span width as one step (every cell's reads,
    detections and writes batched); the numpy backend runs the schedule's width order
    cell by cell. The same numbers (float64, 1e-8), counts and charts, and a batch of mixed
    lengths gives what its sentences give parsed alone."""
    torch = pytest.importorskip("torch")
    g = fd.Grammar.builtin(name)
    sents = fd.generate(g, 5, min_len=2, max_len=9, seed=3)
    cb = fd.engine.default_codebook(g, 128, 0, "float64", unitary=True)
    kw = dict(variant="trace", order="width")
    batch = fd.dcyk_batch(g, sents, cb, batch_size=len(sents), backend="torch", **kw)
    for s, b in zip(sents, batch, strict=True):
        ref = fd.dcyk(g, s, cb, **kw)
        alone = fd.dcyk(g, s, cb, backend="torch", **kw)
        for r in (b, alone):
            assert r.options.order == "width"
            assert r.chart == ref.chart and r.counts == ref.counts
            for x, y in ((ref.p_left, r.p_left), (ref.p_right, r.p_right)):
                x, y = np.asarray(x), np.asarray(y)
                np.testing.assert_allclose(y, x, rtol=1e-8, atol=1e-8 * np.abs(x).max())
            np.testing.assert_allclose(
                r.statistics.array, ref.statistics.array, rtol=1e-8, atol=1e-10
            )
    del torch


def test_the_trace_gates_width_step_takes_a_few_cells_a_product(monkeypatch):
    """A width whose cells' index matrices do not fit the budget at once is written a few
    cells at a time (here one): the same numbers."""
    pytest.importorskip("torch")
    from fastdcyk.engine.modes.trace import torch_parser

    g = fd.Grammar.builtin("G4")
    sents = fd.generate(g, 3, min_len=6, max_len=9, seed=5)
    cb = fd.engine.default_codebook(g, 64, 0, "float64", unitary=True)
    kw = dict(variant="trace", order="width", batch_size=3, backend="torch")
    whole = fd.dcyk_batch(g, sents, cb, **kw)
    monkeypatch.setattr(torch_parser.TorchTraceParser, "cells_at_once", lambda self, cells: 1)
    parts = fd.dcyk_batch(g, sents, cb, **kw)
    for a, b in zip(whole, parts, strict=True):
        assert a.chart == b.chart and a.counts == b.counts
        np.testing.assert_allclose(np.asarray(b.p_left), np.asarray(a.p_left), atol=1e-12)
        np.testing.assert_allclose(np.asarray(b.p_right), np.asarray(a.p_right), atol=1e-12)


def test_the_capacity_model_predicts_the_trace_gates_width_order():
    """The capacity model's simulation follows the trace gate's width order (its default):
    on G4, 6 words, d = 128, its F1 is within 0.03 of the measured (the model's target
    elsewhere), and it tells the width order from the cell order as measurement does."""
    g = fd.Grammar.builtin("G4")
    sents = fd.generate(g, 20, min_len=6, max_len=6, seed=2)

    def measured(order):
        tp = gold = pred = 0
        for s in sents:
            sc = fd.cell_scores(
                fd.cyk(g, s), fd.dcyk(g, s, d=128, variant="trace", order=order).chart
            )
            tp, gold, pred = tp + sc.tp, gold + sc.gold, pred + sc.predicted
        return 2 * tp / (gold + pred)

    width = fd.capacity.predict("G4", 6, 128, variant="trace", samples=2, sentences=20)
    cell = fd.capacity.predict("G4", 6, 128, variant="trace", order="cell", samples=2, sentences=20)
    assert width.f1 == pytest.approx(measured("width"), abs=0.03)
    assert cell.f1 == pytest.approx(measured("cell"), abs=0.03)
    assert width.f1 > cell.f1  # as measured (study (j): the width order ahead at small d)

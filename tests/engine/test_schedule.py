"""The CYK schedule (fastdcyk.engine.core.schedule) with a recording parser: the order of cells,
when a cell is read again, the bookkeeping, and the layout's compatibility shims."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import fastdcyk as fd
from fastdcyk.engine.core import schedule
from fastdcyk.engine.core.arrays import NUMPY


class Recorder:
    """A CellParser that logs every call; the update of row r is kept iff r is in ``on``."""

    def __init__(self, unary=(0,), binary=(1, 2), on=(1, 2), group=None, bad=None):
        self._rows = {schedule.UNARY: np.array(unary), schedule.BINARY: np.array(binary)}
        self.on, self._group, self.bad = set(on), group, bad
        self.calls: list[tuple] = []

    def initialise(self):
        self.calls.append(("init",))

    def rows(self, step):
        return self._rows[step]

    def group(self, step):
        return self._group

    def begin(self, i, j, step):
        self.calls.append(("begin", i, j))

    def read(self, i, j, step):
        self.calls.append(("read", i, j))

    def detect(self, i, j, step, ks):
        rows = self._rows[step][ks]
        self.calls.append(("detect", i, j, tuple(rows.tolist())))
        peaks = np.array([[1.0 if r in self.on else 0.0 for r in rows]])
        readouts = peaks.copy()
        if self.bad == (i, j):
            readouts[0, 0] = np.nan
        return schedule.Detections(readouts, peaks, peaks, None)

    def write(self, i, j, step, ks, det, keep):
        self.calls.append(("write", i, j, tuple(self._rows[step][ks][keep[0]].tolist())))

    def end(self, i, j, step):
        self.calls.append(("end", i, j))


def _ledger(n, record=False):
    return schedule.Ledger(NUMPY, ["A", "B", "C"], [n], 0.5, record=record)


def test_cells_come_in_the_papers_order():
    # unary over the words, then j ascending and, for each j, i descending
    assert list(schedule.cells(3)) == [
        (0, 1, "unary"),
        (1, 2, "unary"),
        (2, 3, "unary"),
        (0, 2, "binary"),
        (1, 3, "binary"),
        (0, 3, "binary"),
    ]


def test_cell_order_reads_once_and_writes_the_kept_updates_together():
    p, led = Recorder(), _ledger(2)
    done = []
    schedule.run(p, 2, "cell", led, on_progress=done.append)
    binary = [c for c in p.calls if c[1:3] == (0, 2)]
    assert binary == [("begin", 0, 2), ("read", 0, 2), ("detect", 0, 2, (1, 2)),
                      ("write", 0, 2, (1, 2)), ("end", 0, 2)]  # fmt: skip
    # the progress counts detections, group by group: 2 unary cells of one, a binary of two
    assert done == [1, 1, 2] and sum(done) == schedule.detections(2, 1, 2)
    # unary row 0 is pruned: detected, never written
    assert ("write", 0, 1, ()) not in p.calls and ("detect", 0, 1, (0,)) in p.calls
    assert led.count_dicts() == [{"detections": 4, "updates": 2, "pruned": 2}]


def test_sequential_order_reads_again_only_after_an_applied_update():
    p = Recorder(binary=(0, 1, 2), on=(1,))
    schedule.run(p, 2, "sequential", _ledger(2))
    binary = [c[0] for c in p.calls if c[1:3] == (0, 2)]
    # row 0 pruned (no new read), row 1 written (read again before row 2)
    assert binary == ["begin", "read", "detect", "detect", "write", "read", "detect", "end"]


def test_groups_split_a_cells_detections():
    p = Recorder(binary=(0, 1, 2), group=2)
    schedule.run(p, 2, "cell", _ledger(2))
    detects = [c[3] for c in p.calls if c[0] == "detect" and c[1:3] == (0, 2)]
    assert detects == [(0, 1), (2,)]
    assert [c[0] for c in p.calls if c[1:3] == (0, 2)].count("read") == 1


def test_the_log_and_the_non_finite_check():
    led = _ledger(2, record=True)
    schedule.run(Recorder(), 2, "cell", led)
    (log,) = led.log_lists()
    assert [(e["i"], e["j"], e["A"], e["applied"]) for e in log] == [
        (0, 1, "A", False),
        (1, 2, "A", False),
        (0, 2, "B", True),
        (0, 2, "C", True),
    ]
    with pytest.raises(FloatingPointError, match=r"detections in cell \(0, 2\)"):
        schedule.run(Recorder(bad=(0, 2)), 2, "cell", _ledger(2))


@pytest.mark.parametrize("order", ["cell", "width", "sequential"])
def test_deferred_checks_raise_for_the_first_bad_cell_at_the_end(order):
    """A ledger with ``defer_checks`` (a parser on a device) reads no flag per cell: every
    cell's writes are made (a pruned update's gate is 0), and the first cell whose values
    were not finite is named at the end, as the per-cell check names it."""
    led = schedule.Ledger(NUMPY, ["A", "B", "C"], [3], 0.5, defer_checks=True)
    p = Recorder(bad=(1, 3))
    with pytest.raises(FloatingPointError, match=r"detections in cell \(1, 3\)"):
        schedule.run(p, 3, order, led)
    assert ("end", 0, 3) in p.calls  # the parse ran to its end before the error
    # the unary cells' detection keeps nothing, yet its (empty) write is made
    assert ("write", 0, 1, ()) in p.calls
    p = Recorder(bad=(1, 3))  # the same cell without deferral: raised at the cell
    with pytest.raises(FloatingPointError, match=r"detections in cell \(1, 3\)"):
        schedule.run(p, 3, order, schedule.Ledger(NUMPY, ["A", "B", "C"], [3], 0.5))
    assert ("end", 0, 3) not in p.calls
    led = schedule.Ledger(NUMPY, ["A", "B", "C"], [3], 0.5, defer_checks=True)
    schedule.run(Recorder(), 3, order, led)  # finite: nothing raised, nothing left
    assert led.pending == []


def test_options_object_or_keywords():
    g = fd.Grammar.builtin("example")
    opt = fd.options.resolve("trace", dtype="float32")
    a = fd.dcyk(g, "a a b", d=128, options=opt)
    b = fd.dcyk(g, "a a b", d=128, variant="trace")
    assert a.options == b.options and a.chart == b.chart
    np.testing.assert_array_equal(a.p_left, b.p_left)
    with pytest.raises(ValueError, match="either as a DCYKOptions or as keywords"):
        fd.dcyk(g, "a a b", d=128, options=opt, beta=10.0)
    with pytest.raises(TypeError, match="DCYKOptions"):
        fd.dcyk_batch(g, ["a b"], d=64, options={"variant": "trace"}, backend="numpy")


@pytest.mark.parametrize(
    "old",
    ["grammar", "codebook", "cyk", "batch", "fft", "metrics", "operators"],
)
def test_the_flat_modules_of_0_1_are_gone(old):
    """0.3.0 removed the forwarding modules of the old flat layout (CHANGELOG names the new
    homes); the names fastdcyk binds are the functions and classes."""
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(f"fastdcyk.{old}")
    assert callable(fd.decode) and callable(fd.cyk) and callable(fd.generate)
    assert callable(fd.random_grammar)

"""The CYK schedule of D-CYK, written once for every backend (docs/architecture.md).

D-CYK visits the cells of the CYK table in the paper's order: the unary step over the words
(cell (i - 1, i) for i = 1..n, Algorithm 2), then the binary step with j ascending and, for
each j, i descending (Algorithm 3). In each cell every nonterminal with rules of that step is
*detected* (a readout of the accumulators, gated) and its *update* written back. Two orders
of detections within a cell (``DCYKOptions.order``):

- ``"sequential"`` (the paper's): each update is applied before the next detection of the
  same cell, which then reads the table again;
- ``"cell"``: every detection of the cell reads the table as it was before the cell; one
  shared pass serves them all;
- ``"width"``: every cell of a span width is detected from the table as it stands after
  the narrower widths, before any of them writes (CYK's cells of one width depend only on
  shorter spans); then each cell writes and ends (the clean-up gate reads it back), cell
  by cell, so that a read sees the cells of its width already read (and, cancelling,
  subtracted) as the cell order's reads do. A parser whose reads subtract nothing may
  instead write the whole width and end it at once (``end_width``).

This module owns that control flow and its bookkeeping: which cells, in which order, when
the table is read again, the counts of detections, updates and pruned updates, the pruning
rule, the detection log, the check for non-finite readouts and its message, the readouts
kept for a differentiable layer, the progress callback and the step timings. The arithmetic
belongs to the detection modes (:mod:`fastdcyk.registry.modes`), whose parsers and
simulations implement :class:`CellParser`: each mode's numpy and torch parsers and the
capacity model's simulation of it.

A backend that works on a batch of sentences gives every array a leading batch axis and an
``active(j)`` mask (the sentences long enough to have cells ending at j); the numpy backend
parses one sentence (a batch of one).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np

from fastdcyk.engine.core.arrays import ArrayNamespace

__all__ = [
    "BINARY",
    "UNARY",
    "CellParser",
    "Detections",
    "Ledger",
    "SuspectCell",
    "cells",
    "detections",
    "ends",
    "non_finite",
    "run",
    "stopping_at_suspect",
    "width_cells",
]

Step = Literal["unary", "binary"]
UNARY: Step = "unary"
BINARY: Step = "binary"


def detections(n: int, unary: int, binary: int) -> int:
    """How many detections an n-word parse makes with ``unary`` and ``binary`` rows."""
    return n * unary + (n * (n - 1) // 2) * binary


def cells(n: int) -> Iterator[tuple[int, int, Step]]:
    """The cells (i, j) of an n-word table in D-CYK's order, with their step."""
    for i in range(1, n + 1):
        yield i - 1, i, UNARY
    for j in range(2, n + 1):
        for i in range(j - 2, -1, -1):
            yield i, j, BINARY


def width_cells(n: int, w: int) -> list[tuple[int, int]]:
    """The cells (i, i + w) of span width w of an n-word table, in the "width" order."""
    return [(i, i + w) for i in range(n - w + 1)]


def ends(n: int, order: str) -> list[tuple[int, int]]:
    """Every cell (i, j) of an n-word table in the order :func:`run` ends them (reads them
    back): :func:`cells`' order, or width by width in the "width" order."""
    if order == "width":
        return [span for w in range(1, n + 1) for span in width_cells(n, w)]
    return [(i, j) for i, j, _ in cells(n)]


@dataclass
class Detections:
    """What a backend read for some nonterminals of a cell, (batch, k) arrays.

    Attributes
    ----------
    readouts : array
        The gate's argument per nonterminal (the readout a differentiable layer scores).
    means, peaks : array
        The mean of P_A's diagonal (how much of I the gate let through) and P_A's largest
        entry in magnitude: ``peaks`` at most the prune level means the update is skipped.
    values : object
        What :meth:`CellParser.write` needs (gates, P_A matrices): the backend's own.
    check : array or None
        What must be finite (default ``readouts``): a backend that gates a whole matrix
        checks the matrix.
    """

    readouts: Any
    means: Any
    peaks: Any
    values: Any = None
    check: Any = None


class CellParser(Protocol):
    """What a backend implements for :func:`run`.

    ``rows(step)`` are the nonterminals (grammar rows) with rules of the step; a detection
    call names some of them by position, as a slice ``ks`` of ``rows(step)``. A backend's
    parser may subclass it for the defaults of :meth:`group`, :meth:`begin` and :meth:`end`
    (all of a cell's detections in one call; nothing before or after a cell).
    """

    def initialise(self) -> None:
        """Write the words into the accumulators."""

    def rows(self, step: Step) -> Sequence[int]:
        """The rows of the nonterminals detected in every cell of ``step``."""

    def group(self, step: Step) -> int | None:
        """In the ``"cell"`` order, how many detections one call to :meth:`detect` makes
        (None, the default: all of the cell's; 1 where each detection is a d x d matrix)."""
        return None

    def begin(self, i: int, j: int, step: Step) -> None:
        """Called once per cell, before its first :meth:`read` (default: nothing)."""

    def read(self, i: int, j: int, step: Step) -> None:
        """The shared pass of cell (i, j): read the accumulators as they are now."""

    def detect(self, i: int, j: int, step: Step, ks: slice) -> Detections:
        """The detections of nonterminals ``rows(step)[ks]`` from the last :meth:`read`."""

    def write(self, i: int, j: int, step: Step, ks: slice, det: Detections, keep: Any) -> None:
        """Apply the updates of ``det`` that ``keep`` (batch, k) marks."""

    def end(self, i: int, j: int, step: Step) -> None:
        """Called once per cell when it is complete (every cell, with rules or not; default:
        nothing)."""

    # Optional, in the "cell" order with a plain ledger (:attr:`Ledger.plain`):
    # ``run_column(j, ledger, on_progress)`` fills every binary cell (i, j), i = j - 2 down
    # to 0, detections, writes and ends, and ``run_word(i, ledger, on_progress)`` unary
    # cell (i, i + 1) (a parser with one has both); each returns True, or False having done
    # nothing (the cells are then visited one by one).
    # Optional, in the "width" order: ``end_width(spans, step)`` ends the cells ``spans``
    # (a list of (i, j), i ascending) of one width at once, after all of their writes, where
    # ``ends_width(step)`` is true (a parser whose reads subtract nothing). And
    # ``run_width(spans, step, ledger, on_progress) -> bool``: the whole width (begin,
    # reads, detections, the ledger's decisions through ``Ledger.decide_cells``, writes
    # and ends) in one call, where it returns True (else cell by cell as above).


def non_finite(where: str) -> FloatingPointError:
    """The error raised when non-finite values appear (``where``: in which computation)."""
    return FloatingPointError(
        f"non-finite values appeared in D-CYK's accumulators ({where}): the codebook's "
        "vectors or beta are too large for this dtype; use float64, smaller vectors or a "
        "smaller beta"
    )


class Ledger:
    """The bookkeeping of one (batched) parse: counts, pruning, log, readouts, checks.

    Parameters
    ----------
    xp : ArrayNamespace
        The array library of the backend (:mod:`fastdcyk.engine.core.arrays`).
    names : sequence of str
        The grammar's nonterminals (the log names them).
    lengths : sequence of int
        The sentences' lengths (one for the numpy backend).
    prune : float
        An update whose P_A has no entry above this in magnitude is skipped.
    record : bool
        Keep the log of every detection.
    readouts : bool
        Keep every detection's readout (for :meth:`readout_list`).
    active : callable, optional
        ``active(j)``: (batch,) mask of the sentences that have cells ending at j (None:
        every sentence has every cell).
    defer_checks : bool, default False
        Read nothing back per cell: every cell's updates are applied (a pruned one's gate
        is 0 already) and its finiteness check is kept, to be read with the others' by
        :meth:`settle` (which :func:`run` calls at the end), which raises for the first
        cell, in the parse's order, whose values were not finite. For a parser on a
        device (a GPU), where reading a flag back stops the host until the device has
        caught up, and whose cells read nothing else back; the error is the same, raised
        at the end of the parse instead of at the cell.
    """

    def __init__(
        self,
        xp: ArrayNamespace,
        names: Sequence[str],
        lengths: Sequence[int],
        prune: float,
        *,
        record: bool = False,
        readouts: bool = False,
        active: Callable[[int], Any] | None = None,
        defer_checks: bool = False,
    ) -> None:
        self.xp, self.names, self.lengths = xp, names, list(lengths)
        self.prune, self.active = prune, active
        #: The cells' finiteness checks not read yet, (i, j, flag) (``defer_checks``).
        self.pending: list[tuple[int, int, Any]] | None = [] if defer_checks else None
        self.counts = xp.int_counts(len(self.lengths))
        self.log: list[tuple[int, int, Any, Any, Any, Any]] | None = [] if record else None
        self.readouts: list[tuple[int, int, Any, Any]] | None = [] if readouts else None

    @property
    def plain(self) -> bool:
        """Whether the parse keeps no log and no readouts and every sentence has every cell
        (a parser may then fill a column of cells in one call, ``run_column``, adding to
        :attr:`counts` itself)."""
        return self.log is None and self.readouts is None and self.active is None

    def decide(self, i: int, j: int, rows: Any, det: Detections) -> tuple[Any, bool]:
        """Which updates of ``det`` clear the prune level, (batch, k), and whether any does.

        Counts, logs and keeps the readouts of every detection; raises FloatingPointError
        when a checked value is not finite.
        """
        keep = det.peaks > self.prune
        k = keep.shape[-1]
        if self.active is None:
            n_act = k
        else:
            act = self.active(j)
            keep = keep & act[:, None]
            n_act = self.xp.as_int(act) * k
        self._count(n_act, keep.sum(-1))
        if self.readouts is not None:
            self.readouts.append((i, j, rows, det.readouts))
        if self.log is not None:
            self.log.append((i, j, rows, det.means, det.peaks, keep))
        check = det.readouts if det.check is None else det.check
        if self.pending is not None:
            self.pending.append((i, j, self.xp.finite_flag(check)))
            return keep, True
        any_kept, finite = self.xp.flags(keep, check)
        if not finite:
            raise non_finite(f"detections in cell ({i}, {j})")
        return keep, any_kept

    def decide_cells(
        self, cells: Sequence[tuple[int, int]], rows: Any, det: Detections, active: Any = None
    ) -> tuple[Any, bool]:
        """:meth:`decide` for several cells at once (a parser that detects a whole span
        width together): ``det``'s arrays are (batch, C, k) for the C ``cells``, all of
        them detecting the nonterminals ``rows``; ``active`` (batch, C) is the mask of the
        sentences that have each cell (None: all). Returns the kept updates (batch, C, k)
        and whether any is kept; counts, logs and checks as :meth:`decide` does cell by
        cell, and a non-finite cell is named as :meth:`decide` names it (the first of
        ``cells``)."""
        xp = self.xp
        keep = det.peaks > self.prune
        k = keep.shape[-1]
        if active is not None:
            keep = keep & active[..., None]
            n_act = xp.as_int(active).sum(-1) * k
        else:
            n_act = len(cells) * k
        self._count(n_act, keep.sum((-2, -1)))
        for c, (i, j) in enumerate(cells):
            if self.readouts is not None:
                self.readouts.append((i, j, rows, det.readouts[:, c]))
            if self.log is not None:
                self.log.append((i, j, rows, det.means[:, c], det.peaks[:, c], keep[:, c]))
        check = det.readouts if det.check is None else det.check
        if self.pending is not None:
            finite = xp.cell_flags(check)  # (C,), read at the end
            self.pending.extend((i, j, finite[c]) for c, (i, j) in enumerate(cells))
            return keep, True
        any_kept, all_finite = xp.flags(keep, check)
        if not all_finite:
            _raise_first(cells, xp.read_flags(list(xp.cell_flags(check))))
        return keep, any_kept

    def _count(self, n_act: Any, n_kept: Any) -> None:
        """Detections, updates and pruned updates (per sentence) added to :attr:`counts`
        in place through views of its rows (``counts[0] += x`` would also write a torch
        tensor's row back onto itself: on a device, launches for nothing)."""
        for row, x in ((0, n_act), (1, n_kept), (2, n_act - n_kept)):
            view = self.counts[row]
            view += x

    def settle(self) -> None:
        """Read the checks deferred so far (``defer_checks``) and raise FloatingPointError
        for the first cell whose values were not finite, as :meth:`decide` would have."""
        if not self.pending:
            return
        pending, self.pending = self.pending, []
        _raise_first([(i, j) for i, j, _ in pending], self.xp.read_flags([f for *_, f in pending]))

    def count_dicts(self) -> list[dict[str, int]]:
        """Per sentence: detections, updates applied and updates pruned."""
        c = self.xp.tolist(self.counts)
        keys = ("detections", "updates", "pruned")
        return [{key: int(c[r][b]) for r, key in enumerate(keys)} for b in range(len(c[0]))]

    def log_lists(self) -> list[list[dict[str, Any]]] | None:
        """Per sentence, one dict per detection (None when the parse kept no log)."""
        if self.log is None:
            return None
        logs: list[list[dict[str, Any]]] = [[] for _ in self.lengths]
        tolist = self.xp.tolist
        for i, j, rows, means, peaks, keep in self.log:
            means, peaks, keep = tolist(means), tolist(peaks), tolist(keep)
            rows = tolist(rows)
            for b, n in enumerate(self.lengths):
                if j > n:
                    continue
                for k, row in enumerate(rows):
                    logs[b].append(
                        {
                            "step": UNARY if j == i + 1 else BINARY,
                            "i": i,
                            "j": j,
                            "A": self.names[row],
                            "p_diag_mean": float(means[b][k]),
                            "p_max": float(peaks[b][k]),
                            "applied": bool(keep[b][k]),
                        }
                    )
        return logs


def _raise_first(cells: Sequence[tuple[int, int]], finite: Sequence[bool]) -> None:
    """FloatingPointError for the first of ``cells`` whose values were not ``finite``."""
    for (i, j), ok in zip(cells, finite, strict=True):
        if not ok:
            raise non_finite(f"detections in cell ({i}, {j})")


#: Whether a parse stops at its first suspect cell (:func:`stopping_at_suspect`).
_STOP_AT_SUSPECT: ContextVar[bool] = ContextVar("fastdcyk_stop_at_suspect", default=False)


class SuspectCell(Exception):
    """A parse stopped at a cell its certificate flags (:func:`stopping_at_suspect`)."""


@contextmanager
def stopping_at_suspect(stop: bool = True) -> Iterator[None]:
    """Within the block (in this thread or task), a parser with ``suspect()`` (one whose
    reads give a certificate) stops the parse with :class:`SuspectCell` as soon as a cell
    it has read is suspect by its own bound, after which its certificate cannot be sure:
    ``d="auto"`` asks for it below its largest d, where such a parse is not kept. With
    ``stop`` False the block parses to the end whatever an enclosing block asked."""
    token = _STOP_AT_SUSPECT.set(stop)
    try:
        yield
    finally:
        _STOP_AT_SUSPECT.reset(token)


def _suspect_check(parser: Any) -> Callable[[], None]:
    """What :func:`run` calls after each cell, column or width: raises :class:`SuspectCell`
    where :func:`stopping_at_suspect` asks it to and the parser has read a suspect cell."""
    suspect = getattr(parser, "suspect", None) if _STOP_AT_SUSPECT.get() else None
    if suspect is None:
        return _nothing

    def check() -> None:
        if suspect():
            raise SuspectCell("a cell read is suspect: the chart cannot be sure at this d")

    return check


def _nothing() -> None:
    pass


def run(
    parser: CellParser,
    n: int,
    order: str,
    ledger: Ledger,
    *,
    on_progress: Callable[[int], None] | None = None,
    timings: dict[str, float] | None = None,
) -> None:
    """Fill the table: the words, then every cell's detections and updates in D-CYK's order.

    Parameters
    ----------
    parser : CellParser
    n : int
        The (longest) sentence's length.
    order : {"sequential", "cell", "width"}
        The order of detections within a cell, or of the cells of a width (see the
        module's docstring).
    ledger : Ledger
        Counts, log, pruning and checks.
    on_progress : callable, optional
        Called with the number of detections just made, after each group of them (a
        progress bar over :func:`detections`: it moves within a cell, where one cell of a
        large grammar can take minutes).
    timings : dict, optional
        Gets the seconds of the unary step (the words included) and of the binary step.
    """
    rows = {step: parser.rows(step) for step in (UNARY, BINARY)}
    arrays = {step: np.asarray(rows[step]) for step in rows}
    t0 = time.perf_counter()
    parser.initialise()
    check = _suspect_check(parser)
    if order == "width":
        _run_widths(parser, n, ledger, rows, arrays, on_progress, timings, t0, check)
        ledger.settle()
        return
    t1 = None
    column = getattr(parser, "run_column", None) if order == "cell" and ledger.plain else None
    columns_done = 0  # the last column j that run_column filled whole
    for i, j, step in cells(n):
        check()  # the cells before this one
        if step == BINARY and t1 is None:
            t1 = time.perf_counter()
        count = len(rows[step])
        if column is not None and step == UNARY and parser.run_word(i, ledger, on_progress):
            continue
        if column is not None and step == BINARY:
            if i == j - 2 and column(j, ledger, on_progress):
                columns_done = j
            if columns_done == j:
                continue
        if count:
            parser.begin(i, j, step)
            if order == "cell":
                parser.read(i, j, step)
                size = parser.group(step) or count
                for k0 in range(0, count, size):
                    ks = slice(k0, min(count, k0 + size))
                    det = parser.detect(i, j, step, ks)
                    keep, any_kept = ledger.decide(i, j, arrays[step][ks], det)
                    if any_kept:
                        parser.write(i, j, step, ks, det, keep)
                    if on_progress is not None:
                        on_progress(ks.stop - ks.start)
            else:
                stale = True  # read again only after an update: a pruned one changes nothing
                for k in range(count):
                    if stale:
                        parser.read(i, j, step)
                        stale = False
                    ks = slice(k, k + 1)
                    det = parser.detect(i, j, step, ks)
                    keep, any_kept = ledger.decide(i, j, arrays[step][ks], det)
                    if any_kept:
                        parser.write(i, j, step, ks, det, keep)
                        stale = True
                    if on_progress is not None:
                        on_progress(1)
        parser.end(i, j, step)
    check()
    ledger.settle()
    t2 = time.perf_counter()
    if timings is not None:
        timings["unary"] = (t2 if t1 is None else t1) - t0
        timings["binary"] = 0.0 if t1 is None else t2 - t1


def _run_widths(
    parser: CellParser,
    n: int,
    ledger: Ledger,
    rows: dict[Step, Sequence[int]],
    arrays: dict[Step, np.ndarray],
    on_progress: Callable[[int], None] | None,
    timings: dict[str, float] | None,
    t0: float,
    check: Callable[[], None],
) -> None:
    """The "width" order: per span width, every cell's detections from the table as the
    narrower widths left it, then cell by cell its writes and its end (or all the writes
    and one ``end_width`` where the parser's ``ends_width(step)`` says so); ``check`` after
    each width (:func:`_suspect_check`)."""
    ends_width = getattr(parser, "ends_width", None)
    whole = getattr(parser, "run_width", None)
    t1 = None
    for w in range(1, n + 1):
        step = UNARY if w == 1 else BINARY
        if step == BINARY and t1 is None:
            t1 = time.perf_counter()
        spans = width_cells(n, w)
        if whole is not None and whole(spans, step, ledger, on_progress):
            check()
            continue
        count = len(rows[step])
        writes = []
        if count:
            size = parser.group(step) or count
            for i, j in spans:
                parser.begin(i, j, step)
                parser.read(i, j, step)
                for k0 in range(0, count, size):
                    ks = slice(k0, min(count, k0 + size))
                    det = parser.detect(i, j, step, ks)
                    keep, any_kept = ledger.decide(i, j, arrays[step][ks], det)
                    if any_kept:
                        writes.append((i, j, ks, det, keep))
                    if on_progress is not None:
                        on_progress(ks.stop - ks.start)
        if ends_width is not None and ends_width(step):
            for i, j, ks, det, keep in writes:
                parser.write(i, j, step, ks, det, keep)
            parser.end_width(spans, step)  # type: ignore[attr-defined]
            check()
            continue
        by_cell: dict[tuple[int, int], list] = {}
        for i, j, ks, det, keep in writes:
            by_cell.setdefault((i, j), []).append((ks, det, keep))
        for i, j in spans:
            for ks, det, keep in by_cell.get((i, j), ()):
                parser.write(i, j, step, ks, det, keep)
            parser.end(i, j, step)
        check()
    t2 = time.perf_counter()
    if timings is not None:
        timings["unary"] = (t2 if t1 is None else t1) - t0
        timings["binary"] = 0.0 if t1 is None else t2 - t1

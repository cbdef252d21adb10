"""d chosen for you: ``d="auto"`` (docs/method.md, section 7, "d chosen by the certificate").

A parse at d = :data:`START_D` costs a small part of one at the d a long sentence of a real
grammar needs, and the certificate of the least-squares read-backs
(:mod:`fastdcyk.engine.core.certificate`) says whether its chart can be trusted. ``d="auto"``
parses at a small d and doubles d while the certificate flags a cell, up to a largest d
(:data:`MAX_D` by default) that is checked against the memory before the first parse. A
parse's cost grows at least as fast as d, so the tries below the last cost at most about as
much as the last one again (with cost growing as d^2, as it does once d outweighs the cells'
bookkeeping, a third of it). A try below the largest d stops at its first suspect cell (the
chart could not be sure after it), so that a failed try costs only the cells up to there.

A word whose cell holds more symbols than d is no reason to skip that d: such a cell is
read within the amplitudes' bounds and judged by the certificate like any other
(docs/method.md, section 7, "Beyond d: the bounded read"), and a try whose word cell is
suspect stops there.

The d to start at is kept per grammar, options and codebook (seed, dtype, vectors) and
length (in bins of :data:`LENGTH_BIN` words), in a :class:`Table`: the next sentence of that
bin starts where the bin's sentences parse **fastest** and sure, not at :data:`START_D`
(the fastest sure d is not always the smallest: at d = 128 an ATIS sentence's cells of more
than 0.9 d take the bounded read, and d = 256 parses 67 sentences a second where 128 parses
39). A sentence that needs more than the bin's d moves the bin up to the d it needed. After
:data:`STEP_DOWN_AFTER` sentences of a bin sure at once at its d, the next is a probe: it
starts at half of it, or at twice it (in turn), and the bin moves there if its sentences
parse faster there, in seconds per cell of the sentence, the failed tries counted, over the
last :data:`RATE_WINDOW` sentences started at each d. :func:`fastdcyk.clear_caches` forgets
it all. :func:`sharing` lets worker processes share one table (a corpus,
:mod:`fastdcyk.corpus`): each job parses with a copy of it (:meth:`Table.handout`, which
gives a bin's probe to one job only) and returns what it saw (:class:`Seen`), which the
parent adds to its table.
"""

from __future__ import annotations

import contextvars
import copy
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from fastdcyk.checks import check_int
from fastdcyk.engine.core import schedule
from fastdcyk.engine.core.result import DimensionChoice
from fastdcyk.engine.memory import largest_fitting_d, parse_bytes
from fastdcyk.hrr import memory as system_memory
from fastdcyk.hrr.codebook import Codebook
from fastdcyk.options import DCYKOptions
from fastdcyk.registry import backends
from fastdcyk.registry.backends import Backend

__all__ = [
    "AUTO",
    "LENGTH_BIN",
    "MAX_D",
    "START_D",
    "STEP_DOWN_AFTER",
    "RATE_WINDOW",
    "Bin",
    "DimensionChoice",
    "DimensionWarning",
    "Seen",
    "Table",
    "certified",
    "check_auto",
    "choose",
    "clear",
    "dimension_cap",
    "is_auto",
    "needed",
    "refuse_codebook",
    "sharing",
]

#: The value of ``d`` that chooses d.
AUTO = "auto"
#: The first d tried (for a length not seen before).
START_D = 128
#: The largest d tried by default (``max_d``).
MAX_D = 8192
#: Sentences whose lengths fall in the same bin of this many words share a starting d.
LENGTH_BIN = 5
#: After this many sentences of a bin sure at once at its kept d, the next starts at half of
#: it or twice it, in turn (and the bin keeps that d if its sentences parse faster there): a
#: probe down costs about a quarter of a parse, up about four times one, once in 9.
STEP_DOWN_AFTER = 8

#: The sentences per start d whose time a bin's rate there averages.
RATE_WINDOW = 16

#: The clock of the policy's rates (a test may give another).
_clock = time.perf_counter


@dataclass(frozen=True)
class Seen:
    """One sentence parsed by ``d="auto"``, as a :class:`Table` learns from it.

    Attributes
    ----------
    bin : int
        Its length bin.
    start : int
        The d its parse started at.
    final : int
        The d of its result (``start`` when sure at once).
    sure : bool
        Whether the result is sure.
    seconds : float
        The time of all its tries.
    cells : int
        Its cells, n (n + 1) / 2 (the rates are per cell, so that a bin's lengths compare).
    probe : bool
        Whether it was a probe (a start at half or twice the bin's d).
    """

    bin: int
    start: int
    final: int
    sure: bool
    seconds: float
    cells: int
    probe: bool


@dataclass
class Bin:
    """What a table knows of a length bin: the d its sentences start at, how many in a row
    were sure at once there, the probes made, and per start d the seconds and cells of the
    last :data:`RATE_WINDOW` sentences sure in the end."""

    kept: int | None = None
    streak: int = 0
    probes: int = 0
    times: dict[int, deque[tuple[float, int]]] = field(default_factory=dict)
    #: Why the bin is at ``kept``: a sentence needed it, or its sentences parse faster there.
    why: str = "needed"

    def rate(self, d: int) -> float | None:
        """Seconds per cell of the sentences started at d (None: none seen)."""
        seen = self.times.get(d)
        if not seen:
            return None
        return sum(t for t, _ in seen) / max(1, sum(c for _, c in seen))


class Table:
    """The starting d of each length bin for one kind of parse (:class:`Bin` each), and
    how it learns from a sentence parsed (:meth:`learn`).

    ``probing=False``: no probes; each bin's d only rises, to the d a sentence needed, so
    that the largest d of its parses is the d the sentences need (:func:`needed`)."""

    def __init__(self, probing: bool = True) -> None:
        self.bins: dict[int, Bin] = {}
        self.probing = probing
        # a table that hands out copies (:meth:`handout`) counts a probe when it hands it out
        self.hands_out = False

    def bin(self, index: int) -> Bin:
        return self.bins.setdefault(index, Bin())

    def learn(self, seen: Seen) -> None:
        """Move the bin's d by what one sentence showed."""
        b = self.bin(seen.bin)
        if not seen.sure:
            return
        times = b.times.setdefault(seen.start, deque(maxlen=RATE_WINDOW))
        times.append((seen.seconds, seen.cells))
        if seen.probe and not self.hands_out:
            b.probes += 1
        if seen.final != seen.start or b.kept is None:  # it needed more (or is the first)
            b.kept, b.streak, b.why = seen.final, 0, "needed"
        elif seen.probe:  # sure at once at the probed d: kept there if faster there
            here, there = b.rate(seen.start), b.rate(b.kept)
            if there is None or here <= there:
                b.kept, b.why = seen.start, "faster"
            b.streak = 0
        else:
            b.streak += 1

    def copy(self) -> Table:
        out = Table(self.probing)
        out.bins = copy.deepcopy(self.bins)
        return out

    def due(self, b: Bin) -> bool:
        """Whether the bin's next sentence is a probe."""
        return self.probing and b.kept is not None and b.streak >= STEP_DOWN_AFTER

    def handout(self) -> Table:
        """A copy for one job of a corpus (parsed elsewhere, inside :func:`sharing`); a
        bin's probe, when due, goes to this copy only.

        Jobs in flight at once would each copy a bin due a probe, and each would probe:
        with two jobs a worker, every job's first sentence of the bin. Here the copy keeps
        the probe and this table counts it as made (its streak starts again, the next one
        goes the other way), so that the jobs handed out after it parse at the bin's d.
        """
        out = self.copy()
        self.hands_out = True
        for b in self.bins.values():
            if self.due(b):
                b.streak, b.probes = 0, b.probes + 1
        return out


# what the parse depends on -> its table
_TABLES: dict[Hashable, Table] = {}
_LOCK = threading.Lock()
# a table shared by the workers of a corpus, and what this process saw since it was given
_SHARED: contextvars.ContextVar[tuple[Table, list[Seen]] | None] = contextvars.ContextVar(
    "fastdcyk_auto_shared", default=None
)


@contextmanager
def sharing(table: Table) -> Iterator[list[Seen]]:
    """``with sharing(table) as seen:`` every ``d="auto"`` parse inside the block starts by
    ``table`` (whatever its grammar and options: one kind of parse at a time) and teaches it,
    and ``seen`` lists what each sentence showed (:class:`Seen`): what a worker process
    sends back for its parent to :meth:`Table.learn`."""
    seen: list[Seen] = []
    token = _SHARED.set((table, seen))
    try:
        yield seen
    finally:
        _SHARED.reset(token)


@contextmanager
def needed() -> Iterator[None]:
    """``with needed():`` the ``d="auto"`` parses inside the block start from d =
    :data:`START_D` with a table of their own that never probes (``Table(probing=False)``):
    each result's d is then one its sentence needed (a probe would have started it at twice
    the d it needs), as one d for a batch is chosen (:func:`fastdcyk.choose_dimension`)."""
    with sharing(Table(probing=False)):
        yield


class DimensionWarning(UserWarning):
    """``d="auto"`` reached its largest d with cells the certificate still flags."""


def is_auto(d: Any) -> bool:
    """Whether ``d`` asks for d to be chosen (``"auto"``); any other str is refused."""
    if isinstance(d, str):
        if d != AUTO:
            raise ValueError(f"the dimension d must be an integer >= 2 or 'auto', got {d!r}")
        return True
    return False


def certified(opt: DCYKOptions, backend: Backend | None = None) -> bool:
    """Whether a parse with the options ``opt`` gives a certificate, which ``d="auto"``
    needs: a read-back of the mode's that has one
    (:attr:`fastdcyk.registry.modes.Mode.certified_readbacks`), on a backend that gives
    it (:attr:`fastdcyk.registry.backends.Backend.certificate`; None: any that does)."""
    return opt.readback in opt.mode.certified_readbacks and (backend is None or backend.certificate)


def refuse_codebook(codebook: Codebook | None) -> None:
    """Refuse ``d="auto"`` with a codebook, which fixes d (ValueError)."""
    if codebook is not None:
        raise ValueError(
            f"d='auto' builds a codebook at each d it tries, and a codebook was given (its d "
            f"is {codebook.d}): leave the codebook out, or leave d out"
        )


def check_auto(codebook: Codebook | None, backend: Backend, opt: DCYKOptions) -> None:
    """Refuse ``d="auto"`` where it cannot work, saying what to pass instead.

    Raises
    ------
    ValueError
        With a codebook (it fixes d), with a backend whose parses give no certificate (the
        torch backend), or with options whose parse gives none (the entrywise and trace
        gates, ``readback="matched"``).
    """
    refuse_codebook(codebook)
    if not backend.certificate:
        able = " or ".join(repr(b.name) for b in backends.BACKENDS.values() if b.certificate)
        raise ValueError(
            f"d='auto' parses with a backend whose reads give the certificate it doubles d "
            f"by ({able}), not {backend.name!r}: choose d for the {backend.name} backend with "
            "fastdcyk.choose_dimension(grammar, sentences) and pass it as d"
        )
    if not certified(opt):
        mode = opt.mode
        raise ValueError(
            f"d='auto' doubles d while the certificate of the least-squares read-backs flags "
            f"a cell, and {mode.describe()} with readback={opt.readback!r} gives none: use "
            "variant='cleanup' with readback='cancel' (the default) or 'lstsq', or pass d"
        )


def dimension_cap(
    max_d: Any, dtype: Any, fft: Any, opt: DCYKOptions, n: int
) -> tuple[int, str | None]:
    """The largest d to try and, when memory lowered it, why.

    ``max_d`` None means :data:`MAX_D`, lowered to the largest power of two that fits in
    the memory available (a tenth kept free); a ``max_d`` given must fit.

    Raises
    ------
    ValueError
        When ``max_d`` is not an integer >= :data:`START_D`.
    MemoryError
        When the ``max_d`` given does not fit, or not even :data:`START_D` does.
    """
    explicit = max_d is not None
    cap = MAX_D if max_d is None else check_int("max_d", max_d, START_D)
    avail = system_memory.available_memory()
    if avail is None or parse_bytes(cap, dtype, fft, opt, n) <= 0.9 * avail:
        return cap, None
    fits = largest_fitting_d(int(0.9 * avail), dtype, fft, upper=cap, options=opt, n=n)
    power = START_D
    while fits is not None and 2 * power <= fits:
        power *= 2
    need = system_memory.format_bytes(parse_bytes(cap, dtype, fft, opt, n))
    have = system_memory.format_bytes(avail)
    if fits is None or fits < START_D:
        raise MemoryError(
            f"d='auto' starts at d = {START_D}, and a {n}-word parse there does not fit in "
            f"the {have} of memory available: free memory, or pass a smaller d"
        )
    if explicit:
        raise MemoryError(
            f"d='auto' may go up to max_d = {cap}, where a {n}-word parse needs about "
            f"{need}, and {have} of memory is available: pass max_d={power} (the largest "
            "power of two that fits) or less"
        )
    return power, (
        f"max_d lowered from {MAX_D} to {power}, the largest power of two whose parse fits in "
        f"the {have} of memory available"
    )


def choose(
    parse: Callable[[int], Any],
    key: Hashable,
    n: int,
    cap: int,
    cap_note: str | None = None,
) -> tuple[Any, DimensionChoice]:
    """Parse at doubling d until the certificate is sure or d reaches ``cap``.

    Parameters
    ----------
    parse : callable
        ``parse(d) -> DCYKResult`` (with a certificate).
    key : hashable
        What the parse depends on (grammar, options, codebook's seed, dtype and vectors):
        the starting d is kept per key and length bin.
    n : int
        The sentence's length.
    cap : int
        The largest d to try (:func:`dimension_cap`); ``cap_note`` says why, if not
        asked for.

    Returns
    -------
    result, DimensionChoice
        The last parse, and how its d was chosen. A :class:`DimensionWarning` is issued
        when the last parse is not sure.

    Notes
    -----
    Below ``cap`` a parse runs within :func:`fastdcyk.engine.core.schedule.stopping_at_suspect`:
    it stops at the first cell whose own bound makes it suspect, after which its chart
    could not be sure, so d doubles at once. The d chosen, the tries and the result are
    those of parses run to the end; only the time of the tries that fail is less.
    """
    shared = _SHARED.get()
    if shared is None:
        with _LOCK:
            table = _TABLES.setdefault(key, Table())
    else:
        table = shared[0]
    index = (n - 1) // LENGTH_BIN
    with _LOCK:
        b = table.bin(index)
        kept, streak, probes, why = b.kept, b.streak, b.probes, b.why
        due = table.due(b)
    start = min(kept or START_D, cap)
    # after STEP_DOWN_AFTER sentences sure at once at the bin's d, one starts at half of it
    # or twice it, in turn: the bin moves where its sentences parse fastest and sure
    probe = None
    if due:
        ways = [w for w, ok in (("down", start // 2 >= START_D), ("up", 2 * start <= cap)) if ok]
        if ways:
            probe = ways[probes % len(ways)]
            start = start // 2 if probe == "down" else 2 * start
    tried: list[int] = []
    stopped: list[int] = []  # the d whose parse stopped at its first suspect cell
    t0 = _clock()
    d = start
    while True:
        tried.append(d)
        if d >= cap:  # the last d: its parse is the result, sure or not
            result = parse(d)
            break
        try:  # below the last d a parse that cannot be sure stops at its first suspect cell
            with schedule.stopping_at_suspect():
                result = parse(d)
        except schedule.SuspectCell:
            stopped.append(d)
        else:
            if result.sure:
                break
        d = min(2 * d, cap)
    seconds = _clock() - t0
    lo = index * LENGTH_BIN + 1
    bin_words = f"{lo} to {lo + LENGTH_BIN - 1} words"
    if probe == "down":
        begun = (
            f"started at d = {start}, half the d at which the last {streak} sentences of "
            f"{bin_words} were sure, to see whether less serves faster"
        )
    elif probe == "up":
        begun = (
            f"started at d = {start}, twice the d at which the last {streak} sentences of "
            f"{bin_words} were sure, to see whether more parses faster"
        )
    elif kept is not None and why == "faster":
        begun = f"started at d = {start}, where the sentences of {bin_words} parse fastest and sure"
    elif kept is not None:
        begun = f"started at d = {start}, where the last sentence of {bin_words} was sure"
    else:
        begun = f"started at d = {start}"
    flagged = [f"d = {t}" for t in tried[:-1]]
    if stopped and len(stopped) == len(flagged):
        flagged[-1] += (
            ", each try stopping at its first" if len(stopped) > 1 else ", where it stopped"
        )
    elif stopped:
        flagged[-1] += (
            "; the tries at " + ", ".join(f"d = {t}" for t in stopped) + " stopped at the first"
        )
    sure = bool(result.sure)
    seen = Seen(index, start, d, sure, seconds, n * (n + 1) // 2, probe is not None)
    with _LOCK:
        table.learn(seen)
    if shared is not None:
        shared[1].append(seen)
    if sure:
        reason = f"the certificate is sure of the chart at d = {d} ({begun}"
        reason += f"; suspect cells at {', '.join(flagged)})" if flagged else ")"
    else:
        suspects = len(result.suspect_cells())
        reason = (
            f"the certificate still flags {suspects} cell(s) at d = {d}, the largest d "
            f"allowed ({cap_note or f'max_d = {cap}'}; {begun}): the chart may be wrong "
            "there (result.suspect_cells())"
        )
        warnings.warn(
            f"d='auto': {reason}; a larger max_d may read it", DimensionWarning, stacklevel=4
        )
    choice = DimensionChoice(d, tuple(tried), sure, cap, reason, seconds)
    return result, choice


def clear() -> None:
    """Forget the starting d kept per grammar and length."""
    with _LOCK:
        _TABLES.clear()

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

The d a sentence needed is kept per grammar, options and codebook (seed, dtype, vectors)
and length (in bins of :data:`LENGTH_BIN` words): the next sentence of that bin starts
there, not at :data:`START_D`. After :data:`STEP_DOWN_AFTER` sentences of a bin sure at once
at that d, the next starts at half of it, and the bin keeps the smaller d if the certificate
is sure there: one hard sentence does not hold its bin at a large d for good.
:func:`fastdcyk.clear_caches` forgets it all.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable, Hashable
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
    "DimensionChoice",
    "DimensionWarning",
    "certified",
    "check_auto",
    "choose",
    "clear",
    "dimension_cap",
    "is_auto",
    "refuse_codebook",
]

#: The value of ``d`` that chooses d.
AUTO = "auto"
#: The first d tried (for a length not seen before).
START_D = 128
#: The largest d tried by default (``max_d``).
MAX_D = 8192
#: Sentences whose lengths fall in the same bin of this many words share a starting d.
LENGTH_BIN = 5
#: After this many sentences of a bin sure at once at its kept d, the next starts at half
#: of it (and keeps that d if sure there): a probe costs about a quarter of a parse.
STEP_DOWN_AFTER = 8

# (what the parse depends on, length bin) -> (the d the last sure parse of that bin used,
# how many sentences in a row were sure at once there)
_WORKED: dict[tuple[Hashable, int], tuple[int, int]] = {}
_LOCK = threading.Lock()


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
    slot = (key, (n - 1) // LENGTH_BIN)
    with _LOCK:
        kept, streak = _WORKED.get(slot, (None, 0))
    start = min(kept or START_D, cap)
    # after STEP_DOWN_AFTER sentences sure at the kept d, one starts at half of it: a bin
    # whose first sentence needed a large d is not held there for good
    probe = kept is not None and streak >= STEP_DOWN_AFTER and start // 2 >= START_D
    if probe:
        start //= 2
    tried: list[int] = []
    stopped: list[int] = []  # the d whose parse stopped at its first suspect cell
    t0 = time.perf_counter()
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
    seconds = time.perf_counter() - t0
    lo = (n - 1) // LENGTH_BIN * LENGTH_BIN + 1
    bin_words = f"{lo} to {lo + LENGTH_BIN - 1} words"
    if probe:
        begun = (
            f"started at d = {start}, half the d at which the last {streak} sentences of "
            f"{bin_words} were sure, to see whether less serves"
        )
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
    if result.sure:
        with _LOCK:  # a streak counts the sentences sure at once at the kept d
            _WORKED[slot] = (d, 0 if probe or len(tried) > 1 else streak + 1)
    if result.sure:
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
    choice = DimensionChoice(d, tuple(tried), bool(result.sure), cap, reason, seconds)
    return result, choice


def clear() -> None:
    """Forget the starting d kept per grammar and length."""
    with _LOCK:
        _WORKED.clear()

"""The weighted table's beam chosen for you: ``beam="auto"`` (docs/method.md, section 10,
"A beam that widens").

With ``weights="table"`` an item more than the beam below its cell's best Viterbi score is
not written (:mod:`fastdcyk.engine.modes.weighted.numpy_parser`). That bound is a cell's,
not the sentence's: an item far below its cell's best can still lie on the most probable
tree, and cutting it loses that tree, or every tree. ``beam="auto"`` parses with
:data:`START_BEAM` and doubles the beam, up to :data:`MAX_BEAM`, while the result shows the
signs of a cut that mattered:

- the start symbol was not read over the sentence although the beam cut items, or
- the table's best tree uses an item within :data:`MARGIN` of the beam of its cell's best
  (more than ``beam * (1 - MARGIN)`` below it): its neighbours just beyond the edge, cut,
  could have made a better tree.

A parse in which the beam cut nothing is final: a wider beam writes the same items. The
check is a heuristic, not a proof: a better tree through an item cut far beyond the edge,
while the tree found keeps clear of it, goes unseen (docs/method.md says when). When the
last beam still shows a sign, the parse there is returned with a :class:`BeamWarning`, and
``result.beam`` says so.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from typing import Any

from fastdcyk.engine.core.result import BeamChoice
from fastdcyk.options import AUTO_BEAM, DEFAULT_BEAM

__all__ = [
    "MARGIN",
    "MAX_BEAM",
    "START_BEAM",
    "BeamChoice",
    "BeamWarning",
    "choose",
    "is_auto",
    "widen",
]

#: The first beam tried (nats).
START_BEAM = DEFAULT_BEAM
#: The widest beam tried (nats): four doublings of :data:`START_BEAM`.
MAX_BEAM = 160.0
#: The share of the beam, next to its edge, where an item of the best tree asks for a wider
#: beam. A trade between re-parses and safety, set on measurement (docs/results.md, study
#: (g)): with exact scores pruned as the table prunes (:func:`fastdcyk.cfg.viterbi.item_scores`
#: with ``beam``), on two treebank PCFGs every tree lost at 10 nats had no root or an item
#: 9.1 nats down, while 5, 10 and 17 of the 138 right trees of study (g) had one above 9, 8
#: and 7.5 nats (a re-parse each, about three times the cost of the first at d = 512). It
#: must exceed the read's own error near the edge (about 0.6 nats at 10).
MARGIN = 0.2


class BeamWarning(UserWarning):
    """The widest beam (``MAX_BEAM``) still showed the signs of a cut that mattered."""


def widen(result: Any, beam: float) -> str | None:
    """Why ``result``, parsed with ``beam``, needs a wider one; None when it does not.

    Parameters
    ----------
    result : DCYKResult
        A parse with ``weights="table"``.
    beam : float
        Its beam (nats).

    Returns
    -------
    str or None
        The sign found (the start symbol missing while items were cut, or the best tree's
        item nearest the beam's edge), or None.
    """
    cut = result.counts.get("beam_cut", 0)
    if not cut:
        return None
    scores = result.table_scores or {}
    parse = result.table_parse(cnf=True)  # kept by the result for its caller
    if parse.tree is None:
        return (
            f"the start symbol was not read over the sentence, and the beam of {beam:g} "
            f"nats cut {cut} items"
        )
    best: dict[tuple[int, int], float] = {}
    for (i, j, _), v in scores.items():
        best[(i, j)] = max(best.get((i, j), -math.inf), v)
    gaps = [
        (best[(i, j)] - scores[(i, j, a)], (i, j, a))
        for a, i, j in parse.tree.spans()
        if (i, j, a) in scores
    ]
    gap, at = max(gaps, default=(0.0, None))
    if at is not None and gap > beam * (1.0 - MARGIN):
        i, j, a = at
        return (
            f"the best tree's item {a} over words {i}..{j - 1} is {gap:.2f} nats below its "
            f"cell's best, within {MARGIN:.0%} of the beam's edge ({beam:g} nats)"
        )
    return None


def choose(
    parse_at: Callable[[float], Any],
    start: float = START_BEAM,
    cap: float = MAX_BEAM,
) -> tuple[Any, BeamChoice]:
    """Parse with ``start``, doubling the beam while :func:`widen` gives a reason, up to
    ``cap``.

    Parameters
    ----------
    parse_at : callable
        ``parse_at(beam)`` parses the sentence with that beam.
    start, cap : float
        The first and the widest beam (nats).

    Returns
    -------
    (DCYKResult, BeamChoice)
        The last parse, and what was done (its caller sets ``result.beam``).

    Warns
    -----
    BeamWarning
        When the parse at ``cap`` still gives a reason to widen.
    """
    t0 = time.perf_counter()
    tried: list[float] = []
    beam = float(start)
    while True:
        result = parse_at(beam)
        tried.append(beam)
        why = widen(result, beam)
        if why is None or beam * 2 > cap:
            break
        beam *= 2
    capped = why is not None
    if capped:
        words = " ".join(result.words)
        warnings.warn(
            f"beam='auto' stopped at its widest beam, {beam:g} nats, on {words!r}: {why}. "
            "The tree read from the table may not be the most probable, or a parseable "
            "sentence may read as not recognized; result.best_parse() ranks the decoded "
            "chart's trees instead, and fastdcyk.viterbi gives the symbolic answer",
            BeamWarning,
            stacklevel=4,
        )
    reason = why if capped else _kept(result, beam, tried)
    return result, BeamChoice(beam, tuple(tried), capped, reason, time.perf_counter() - t0)


def _kept(result: Any, beam: float, tried: list[float]) -> str:
    if not result.counts.get("beam_cut", 0):
        return f"the beam of {beam:g} nats cut no item"
    first = "" if len(tried) == 1 else f" (after {len(tried) - 1} narrower beams)"
    return f"the best tree keeps clear of the edge of the beam of {beam:g} nats{first}"


def is_auto(beam: object) -> bool:
    """Whether ``beam`` asks for the beam to be chosen."""
    return isinstance(beam, str) and beam == AUTO_BEAM

"""Sidon sets modulo d, and the symbols of a grammar in the order a codebook shifts them.

A unitary codebook (:class:`~fastdcyk.hrr.codebook.Codebook`) shifts one random base vector
by the offsets of a Sidon set (all differences s_a - s_b, a != b, distinct mod d) to give
span indices, and the symbols of a grammar, vectors whose near matches read exactly 0 or
-+1/d (docs/method.md, section 3).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

__all__ = ["check_shifted_symbols", "grammar_symbols", "sidon_offsets"]

#: Greedy Sidon sets modulo d, extended on demand: d -> (offsets, their differences mod d,
#: the next candidate, exhausted).
_SIDON: dict[int, tuple[list[int], set[int], int, bool]] = {}
_SIDON_LOCK = threading.Lock()


def sidon_offsets(d: int, count: int) -> list[int]:
    """The first ``count`` (at most) offsets of the greedy Sidon set modulo ``d``.

    s_0 = 0, and each next offset is the smallest c > s_k whose differences to all earlier
    offsets, taken mod d in both directions, are new. Every difference s_a - s_b (a != b) is
    then distinct and nonzero mod d, so that s_a - s_b + s_c - s_e = 0 mod d only when
    {a, c} = {b, e}. The set is a prefix-stable sequence for each d; fewer than ``count``
    offsets come back when the set modulo d holds fewer (it holds about 21 at d = 1024,
    28 at d = 2048, 45 at d = 6000).

    Examples
    --------
    >>> sidon_offsets(1024, 8)
    [0, 1, 3, 7, 12, 20, 30, 44]
    """
    with _SIDON_LOCK:
        offs, diffs, c, done = _SIDON.get(d, ([0], set(), 1, False))
        while len(offs) < count and not done:
            if c >= d:
                done = True
                break
            new: set[int] = set()
            for x in offs:
                a, b = (c - x) % d, (x - c) % d
                if a in diffs or b in diffs or a in new or b in new or a == b:
                    break
                new.update((a, b))
            else:
                offs.append(c)
                diffs |= new
            c += 1
        _SIDON[d] = (offs, diffs, c, done)
        return offs[:count]


def grammar_symbols(grammar: Any) -> tuple[tuple[str, Any], ...]:
    """The symbols of a grammar, in the priority order of ``Codebook(shifted_symbols=...)``.

    Nonterminals, then their right-child roles, then terminals, each sorted by name: the
    nonterminals first, because near matches between rules' symbols set the trace
    variant's noise floor, and the right-child roles always (the same codebook then serves
    both encodings).

    Parameters
    ----------
    grammar : Grammar
        Anything with ``nonterminals`` and ``terminals``.
    """
    nts = sorted(grammar.nonterminals, key=str)
    return (
        *(("nonterminal", a) for a in nts),
        *(("right", a) for a in nts),
        *(("terminal", t) for t in sorted(grammar.terminals, key=str)),
    )


def check_shifted_symbols(symbols: Iterable[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """``Codebook(shifted_symbols=...)`` checked: (kind, symbol) pairs, each once, of the
    kinds a codebook shifts (not span indices)."""
    if isinstance(symbols, str | bytes):
        raise ValueError("shifted_symbols must be a sequence of (kind, symbol) pairs")
    out: list[tuple[str, Any]] = []
    seen: set[tuple[str, Any]] = set()
    for item in symbols:
        if not (isinstance(item, tuple) and len(item) == 2):
            raise ValueError(f"shifted_symbols: expected (kind, symbol) pairs, got {item!r}")
        kind, sym = item
        if kind not in ("terminal", "nonterminal", "right"):
            raise ValueError(
                f"shifted_symbols: kind {kind!r} is not one of 'terminal', 'nonterminal', "
                "'right' (span indices are shifted by index_vectors)"
            )
        if item in seen:
            raise ValueError(f"shifted_symbols lists {item!r} twice")
        seen.add(item)
        out.append(item)
    return out

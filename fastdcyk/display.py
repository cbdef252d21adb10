"""Text rendering of CYK charts, with a decoded chart's disagreements marked."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

__all__ = ["format_chart"]

Chart = Mapping[tuple[int, int], Iterable[str]]


def _cell(found: Iterable[str], gold: Iterable[str] | None, order: Sequence[str]) -> str:
    rank = {a: k for k, a in enumerate(order)}
    found = set(found)
    key = lambda a: (rank.get(a, len(rank)), a)  # noqa: E731
    if gold is None:
        return " ".join(sorted(found, key=key))
    gold = set(gold)
    parts = []
    for a in sorted(found | gold, key=key):
        if a in found and a in gold:
            parts.append(a)
        elif a in found:
            parts.append(f"+{a}")  # decoded but not in the symbolic chart: a false positive
        else:
            parts.append(f"-{a}")  # in the symbolic chart but not decoded: a miss
    return " ".join(parts)


def format_chart(
    chart: Chart,
    words: Sequence[str],
    gold: Chart | None = None,
    nonterminals: Sequence[str] = (),
) -> str:
    """The chart as a table: one row per start i, one column per end j.

    Parameters
    ----------
    chart : mapping ``{(i, j): nonterminals}``
    words : sequence of str
    gold : mapping, optional
        The symbolic chart; when given, ``+A`` marks a decoded A that CYK does not have
        (false positive) and ``-A`` an A that CYK has and the decoder missed.
    nonterminals : sequence of str
        Order of the symbols inside a cell (the grammar's order).

    Returns
    -------
    str
    """
    n = len(words)
    header = ["i \\ j"] + [f"{j}:{words[j - 1]}" for j in range(1, n + 1)]
    rows = [header]
    for i in range(n):
        row = [f"{i}"]
        for j in range(1, n + 1):
            if j <= i:
                row.append("")
                continue
            g = None if gold is None else gold.get((i, j), ())
            row.append(_cell(chart.get((i, j), ()), g, nonterminals) or ".")
        rows.append(row)
    widths = [max(len(r[c]) for r in rows) for c in range(len(header))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows
    ]
    return "\n".join(lines)

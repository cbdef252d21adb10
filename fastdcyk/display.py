"""Text rendering of CYK charts, with a decoded chart's disagreements marked."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

__all__ = ["CHART_STYLES", "chart_width", "format_chart", "format_chart_compact"]

Chart = Mapping[tuple[int, int], Iterable[str]]

#: How a chart is printed: ``"full"`` (every symbol of every cell), ``"compact"`` (counts,
#: errors and the parse tree's symbols) or ``"auto"`` (full when it fits the width).
CHART_STYLES = ("auto", "full", "compact")


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

    def cell(i: int, j: int) -> str:
        g = None if gold is None else gold.get((i, j), ())
        return _cell(chart.get((i, j), ()), g, nonterminals) or "."

    return _grid(words, cell)


def _grid(words: Sequence[str], cell: Callable[[int, int], str]) -> str:
    """A chart's table: one row per start i, one column per end j, ``cell(i, j)`` in each."""
    n = len(words)
    rows = [["i \\ j"] + [f"{j}:{words[j - 1]}" for j in range(1, n + 1)]]
    for i in range(n):
        rows.append([f"{i}"] + ["" if j <= i else cell(i, j) for j in range(1, n + 1)])
    return _table(rows)


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows
    ]
    return "\n".join(lines)


def chart_width(text: str) -> int:
    """The width of a printed chart (its longest line)."""
    return max((len(line) for line in text.splitlines()), default=0)


#: The longest tree label a compact cell shows whole.
_LABEL = 20


def format_chart_compact(
    chart: Chart,
    words: Sequence[str],
    gold: Chart | None = None,
    tree_spans: Iterable[tuple[str, int, int]] = (),
) -> str:
    """The chart as a table of counts, for grammars whose cells hold tens to hundreds of
    symbols: per cell the number of symbols, then ``+k`` and ``-k`` (with ``gold``: false
    and missed symbols) and a tree's symbol at that cell (``tree_spans``: its
    ``(label, i, j)``, as :meth:`fastdcyk.Tree.spans` gives them; a label of over 20
    characters cut, ending in "..").

    Examples
    --------
    >>> chart = {(0, 1): {"D"}, (1, 2): {"D", "X"}, (0, 2): {"S"}}
    >>> gold = {(0, 1): {"D"}, (1, 2): {"D"}, (0, 2): {"S"}}
    >>> print(format_chart_compact(chart, ["a", "a"], gold, [("S", 0, 2), ("D", 0, 1)]))
    i \\ j  1:a  2:a
    0      1 D  1 S
    1           2 +1
    >>> print(format_chart_compact(chart, ["a", "a"]))
    i \\ j  1:a  2:a
    0      1    1
    1           2
    """
    at = {(i, j): label for label, i, j in tree_spans if j > i}

    def cell(i: int, j: int) -> str:
        found = set(chart.get((i, j), ()))
        want = set(() if gold is None else gold.get((i, j), ()))
        parts = [str(len(found))] if found or want else ["."]
        if gold is not None and found - want:
            parts.append(f"+{len(found - want)}")
        if want - found:
            parts.append(f"-{len(want - found)}")
        if (i, j) in at:
            label = at[(i, j)]
            parts.append(label if len(label) <= _LABEL else label[: _LABEL - 2] + "..")
        return " ".join(parts)

    return _grid(words, cell)

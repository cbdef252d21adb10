"""The figure of one parse: its chart, readout by readout, and its two accumulators.

:func:`figure_parse` draws a decoded parse (``fastdcyk parse --figure``): each cell's
symbols with their decoder statistics against the decision boundary, coloured against the
symbolic chart (:data:`PARSE_COLOURS`), and P_left and P_right as images.
:func:`~fastdcyk.plots.files.save_figure` writes it; in a notebook the returned figure
displays inline.
"""

from __future__ import annotations

from typing import Any

from fastdcyk.checks import check_int
from fastdcyk.plots.files import STYLE

__all__ = ["PARSE_COLOURS", "figure_parse"]

#: Colours of a symbol of a cell against the symbolic chart: in both (a true positive),
#: decoded only (a false triple), in the symbolic chart only (a miss).
PARSE_COLOURS = {"true": "#2e7d32", "false": "#c62828", "missed": "#ef6c00"}


def figure_parse(
    result: Any,
    gold: Any = None,
    *,
    max_symbols: int = 6,
    matrix_size: int = 256,
) -> Any:
    """The picture of one parse: its chart, readout by readout, and its two accumulators.

    Left, the chart as the text charts print it (row i, column j: the cell of words i..j-1).
    In each cell, one bar per symbol that is decoded there or in the symbolic chart: its
    decoder statistic (0 absent, 1 present; clipped to [-0.25, 1.25]) against the decision
    boundary (the dashed line, ``0.5 + logit(threshold) / beta``), coloured by
    :data:`PARSE_COLOURS`: green in both charts, red decoded only (a false triple), orange
    in the symbolic chart only (a miss). At most ``max_symbols`` per cell, the largest
    statistics first (the cell says how many more). Right, P_left and P_right as images (their
    top-left ``matrix_size`` x ``matrix_size`` block when d is larger), on one colour scale
    symmetric about 0.

    Parameters
    ----------
    result : DCYKResult
        A decoded parse (``fastdcyk.dcyk(...)``).
    gold : mapping ``{(i, j): nonterminals}``, optional
        The chart to colour against; default symbolic CYK's.
    max_symbols : int, default 6
    matrix_size : int, default 256

    Returns
    -------
    matplotlib.figure.Figure
        Displayed inline by a notebook; :func:`save_figure` writes it.

    Raises
    ------
    ValueError
        When the parse was not decoded (``decode=False``), or ``max_symbols`` or
        ``matrix_size`` is not an integer >= 1.
    TypeError
        When ``result`` is not a parse or ``gold`` not a chart.
    """
    from matplotlib import rc_context
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    from fastdcyk.cfg.cyk import cyk
    from fastdcyk.cfg.weights import check_chart
    from fastdcyk.engine.core.decode import decision_boundary
    from fastdcyk.engine.core.result import DCYKResult

    if not isinstance(result, DCYKResult):
        raise TypeError(
            f"result must be a DCYKResult (fastdcyk.dcyk(...)), got {type(result).__name__}"
        )
    check_chart("gold", gold)
    max_symbols = check_int("max_symbols", max_symbols, 1)
    matrix_size = check_int("matrix_size", matrix_size, 1)
    if result.statistics is None or result.chart is None:
        raise ValueError("this parse was not decoded (decode=False): it has nothing to draw")
    words, n = result.words, len(result.words)
    gold = cyk(result.grammar, words) if gold is None else gold
    bound = decision_boundary(result.options.beta, result.options.threshold)
    stats = result.statistics
    width = max(4.0, 1.15 * n)
    with rc_context(STYLE):
        fig = Figure(figsize=(width + 5.6, max(3.4, 0.95 * n + 1.2)), layout="constrained")
        grid = fig.add_gridspec(2, 2, width_ratios=(width, 2.6))
        ax = fig.add_subplot(grid[:, 0])
        for i in range(n):
            for j in range(i + 1, n + 1):
                _draw_cell(ax, i, j, stats, result.chart[(i, j)], gold.get((i, j), ()),
                           bound, max_symbols)  # fmt: skip
        ax.set_xlim(0, n)
        ax.set_ylim(n, 0)
        ax.set_xticks(
            [j - 0.5 for j in range(1, n + 1)], [f"{j}:{w}" for j, w in enumerate(words, 1)]
        )
        ax.set_yticks([i + 0.5 for i in range(n)], [str(i) for i in range(n)])
        ax.xaxis.tick_top()
        ax.tick_params(length=0)
        for side in ("left", "bottom", "right", "top"):
            ax.spines[side].set_visible(False)
        o = result.options
        ax.set_title(
            f"variant {o.variant!r}, d = {result.codebook.d}: each symbol's statistic against "
            f"the boundary {bound:.3f} (dashed)",
            loc="left",
        )
        handles = [Line2D([], [], color=c, linewidth=6) for c in PARSE_COLOURS.values()]
        labels = ["decoded, in the CYK chart", "decoded, not in the CYK chart", "missed"]
        ax.legend(handles, labels, loc="lower left", frameon=False, fontsize=8)
        scale = (
            max(
                float(abs(m[:matrix_size, :matrix_size]).max())
                for m in (result.p_left, result.p_right)
            )
            or 1.0
        )
        for row, (name, m) in enumerate((("P_left", result.p_left), ("P_right", result.p_right))):
            mx = fig.add_subplot(grid[row, 1])
            block = m[:matrix_size, :matrix_size]
            image = mx.imshow(
                block, cmap="RdBu_r", vmin=-scale, vmax=scale, interpolation="nearest"
            )
            shown = "" if block.shape == m.shape else f" [:{block.shape[0]}, :{block.shape[1]}]"
            unused = "" if m.any() else " (not written by this variant)"
            mx.set_title(f"{name}{shown}{unused}")
            mx.set_xticks([])
            mx.set_yticks([])
        fig.colorbar(image, ax=fig.axes[1:], shrink=0.8)
    return fig


def _draw_cell(
    ax: Any, i: int, j: int, stats: Any, decoded: Any, gold: Any, bound: float, most: int
) -> None:
    """One cell of :func:`figure_parse`: its box and a bar per symbol."""
    from matplotlib.patches import Rectangle

    ax.add_patch(Rectangle((j - 1, i), 1, 1, fill=False, linewidth=0.6, edgecolor="0.6"))
    shown = sorted(set(decoded) | set(gold), key=lambda a: -float(stats.get((i, j, a), 0.0)))
    more = len(shown) - most
    shown = shown[:most]
    lo, hi = -0.25, 1.25
    left, span = j - 1 + 0.08, 0.84

    def x(value: float) -> float:
        return left + span * (min(max(value, lo), hi) - lo) / (hi - lo)

    step = 0.86 / max(len(shown) + (more > 0), 1)
    for k, a in enumerate(shown):
        y = i + 0.07 + k * step
        s = float(stats.get((i, j, a), 0.0))
        kind = "true" if a in decoded and a in gold else "false" if a in decoded else "missed"
        # at least a sliver, so that a statistic below the range still shows its colour
        bar = max(x(s) - x(lo), 0.03)
        ax.add_patch(Rectangle((x(lo), y + 0.15 * step), bar, 0.7 * step,
                               color=PARSE_COLOURS[kind], linewidth=0))  # fmt: skip
        ax.text(left + 0.05, y + 0.5 * step, f"{a} {s:+.2f}", fontsize=7, va="center",
                color="black")  # fmt: skip
    if shown:
        ax.plot([x(bound)] * 2, [i + 0.05, i + 0.95], linestyle="--", linewidth=0.6, color="0.3")
    if more > 0:
        ax.text(left, i + 0.07 + len(shown) * step + 0.5 * step, f"+{more} more", fontsize=6,
                va="center", color="0.4")  # fmt: skip

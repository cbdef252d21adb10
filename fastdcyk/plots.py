"""Figures of the paper's three studies, drawn from experiment records with matplotlib.

- Study (a): F1, precision and recall against d, on the sentences of length <= 7 (G0).
- Study (b): F1 against sentence length, one line per d (G0).
- Study (c): F1, precision and recall against sentence length, one line per grammar, at one
  d (G0..G4 where present).
- One parse (:func:`figure_parse`): the decoded chart as a triangle of cells, each symbol's
  decoder statistic against the decision boundary, coloured against the symbolic chart, and
  P_left and P_right as images (:func:`save_figure` writes it; in a notebook the returned
  figure displays inline).

Each figure has one column of panels per variant, 95% confidence intervals as error bars
(micro averages with their bootstrap intervals by default, or macro averages with their t
intervals: see :func:`fastdcyk.experiments.aggregate`), and is written as PNG and SVG.
Figures are built on :class:`matplotlib.figure.Figure` directly (the Agg canvas, no pyplot
and no global backend change), and matplotlib is imported only when a figure is drawn.

Writing is all or nothing: every file is first written in full to a temporary file in the
target folder, and the figures replace their files only once all of them are written. A
failure (a full disk, a folder that cannot be written) removes the temporary files and
raises :class:`FigureWriteError`, leaving the folder as it was.
"""

from __future__ import annotations

import contextlib
import errno
import io
import math
import os
import secrets
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from fastdcyk.experiments.aggregate import default_study_c_dim, study_rows
from fastdcyk.experiments.config import PAPER_DIMS
from fastdcyk.options import check_int, check_path

__all__ = [
    "FIGURE_FORMATS",
    "FIGURE_NAMES",
    "FigureWriteError",
    "check_figures_folder",
    "figure_parse",
    "figure_study",
    "plot_studies",
    "save_figure",
]


class FigureWriteError(OSError):
    """The figures could not be written (a full disk, an unusable folder).

    Nothing half written is left; the message names the path, the cause and what was kept.
    """


#: The formats a figure is written in.
FIGURE_FORMATS = ("png", "svg", "pdf")

#: File stem of each study's figure.
FIGURE_NAMES = {
    "a": "study_a_scores_vs_d",
    "b": "study_b_f1_vs_length",
    "c": "study_c_grammars",
}
_SCORES = ("f1", "precision", "recall")
_LABEL = {"f1": "F1", "precision": "precision", "recall": "recall"}
_MARKERS = "osD^vP*Xh<>"
_STYLE = {
    "font.size": 9,
    "axes.titlesize": 9,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "svg.fonttype": "none",  # text stays text: smaller SVG files
    "svg.hashsalt": "fastdcyk",  # stable ids: the same data gives the same SVG
}


def _series(ax: Any, xs: list, rows: list[dict], key: str, *, offset: float, **style) -> None:
    ys = [r[key] for r in rows]
    lo = [r[f"{key}_lo"] for r in rows]
    hi = [r[f"{key}_hi"] for r in rows]
    err = [
        [0.0 if lo_ != lo_ else y - lo_ for y, lo_ in zip(ys, lo, strict=True)],
        [0.0 if hi_ != hi_ else hi_ - y for y, hi_ in zip(ys, hi, strict=True)],
    ]
    ax.errorbar(
        [x + offset for x in xs],
        ys,
        yerr=err,
        capsize=2.5,
        linewidth=1.2,
        markersize=4,
        elinewidth=0.8,
        **style,
    )


def _finish_axes(ax: Any, xlabel: str, ylabel: str | None) -> None:
    ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    ax.set_ylim(-0.02, 1.04)
    ax.grid(True, linewidth=0.4, alpha=0.5)


def _grammar_label(spec: str) -> str:
    return Path(spec).stem if os.sep in spec or spec.endswith(".cfg") else spec


def figure_study(
    records: Sequence[dict[str, Any]],
    study: str,
    *,
    average: str = "micro",
    grammar: str = "G0",
    max_len: int = 7,
    d: int | None = None,
    beta: float | None = None,
) -> Any:
    """The figure of one study (a :class:`matplotlib.figure.Figure`), or None without data.

    Parameters
    ----------
    records : sequence of dict
        Experiment records (:func:`fastdcyk.experiments.load_records`).
    study : {"a", "b", "c"}
    average : {"micro", "macro"}
        Which average (and interval) to draw.
    grammar, max_len, d, beta
        As :func:`fastdcyk.experiments.study_rows`.
    """
    from matplotlib import rc_context
    from matplotlib.figure import Figure

    if average not in ("micro", "macro"):
        raise ValueError(f"average must be 'micro' or 'macro', got {average!r}")
    if isinstance(records, str | bytes | dict) or not isinstance(records, Iterable):
        raise TypeError(
            "records must be a sequence of experiment records (dicts: "
            f"fastdcyk.experiments.load_records), got {type(records).__name__}"
        )
    max_len = check_int("max_len", max_len, 1)
    if study == "c" and d is None:
        d = default_study_c_dim(records)
    rows = study_rows(records, study, grammar=grammar, max_len=max_len, d=d, beta=beta)
    if not rows:
        return None

    # one column of panels per variant, or per (variant, order) when the records hold more
    # than one order of a variant (the rows then carry "order")
    def panel(r: dict[str, Any]) -> str:
        return f"{r['variant']}', order '{r['order']}" if "order" in r else r["variant"]

    variants = list(dict.fromkeys(panel(r) for r in sorted(rows, key=panel)))
    score_rows: tuple[str | None, ...] = (None,)
    if study == "c":
        score_rows = _SCORES
    elif study == "a" and any(not math.isnan(r.get("bracket_f1", math.nan)) for r in rows):
        score_rows = (None, "trees")  # the records carry their best trees' scores
    with rc_context(_STYLE):
        fig = Figure(
            figsize=(3.4 * len(variants) + 0.4, 3.3 * len(score_rows) ** 0.8),
            layout="constrained",
        )
        axes = fig.subplots(len(score_rows), len(variants), squeeze=False, sharey=True)
        g = rows[0]["grammar"] if study != "c" else None
        # one colour and marker per d (study b) or grammar (study c), the same in every panel
        field = "d" if study == "b" else "grammar"
        series_of = {v: k for k, v in enumerate(sorted({r[field] for r in rows}, key=_sort_key))}
        beta_used = rows[0]["beta"]
        for col, variant in enumerate(variants):
            vrows = [r for r in rows if panel(r) == variant]
            for row_k, score in enumerate(score_rows):
                ax = axes[row_k][col]
                if study == "a" and score == "trees":
                    _draw_trees(ax, vrows)
                    _finish_axes(ax, "dimension d", "best tree" if col == 0 else None)
                elif study == "a":
                    _draw_a(ax, vrows, average)
                    _finish_axes(ax, "dimension d", "cell score" if col == 0 else None)
                elif study == "b":
                    _draw_by(ax, vrows, average, "d", lambda v: f"d = {v}", "f1", series_of)
                    _finish_axes(ax, "sentence length", "F1" if col == 0 else None)
                else:
                    _draw_by(ax, vrows, average, "grammar", _grammar_label, score, series_of)
                    _finish_axes(
                        ax,
                        "sentence length" if row_k == len(score_rows) - 1 else "",
                        _LABEL[score] if col == 0 else None,
                    )
                if row_k == 0:
                    ax.set_title(f"variant '{variant}'")
                if study in ("b", "c"):
                    ax.xaxis.get_major_locator().set_params(integer=True)
        avg = f"{average}-averaged, 95% CI"
        if study == "a":
            title = (
                f"(a) Cell F1, precision and recall against d ({g}, sentences of length "
                f"≤ {max_len}; {avg}; β = {beta_used:g})"
            )
            if len(score_rows) > 1:
                title += (
                    "\nbelow: the best tree's labelled-bracket F1, and the share of "
                    "sentences with a tree"
                )
        elif study == "b":
            title = f"(b) Cell F1 against sentence length ({g}; {avg}; β = {beta_used:g})"
        else:
            title = (
                f"(c) Cell scores against sentence length per grammar (d = {d}; {avg}; "
                f"β = {beta_used:g})"
            )
        legend: dict[str, Any] = {}
        for ax in fig.axes:
            for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
                legend.setdefault(label, handle)
        labels = list(legend)
        handles = list(legend.values())
        fig.legend(
            handles, labels, loc="outside lower center", ncol=min(len(labels), 7), frameon=False
        )
        fig.suptitle(title, fontsize=9)
    return fig


def _draw_a(ax: Any, rows: list[dict], average: str) -> None:
    rows = sorted(rows, key=lambda r: r["d"])
    xs = [r["d"] for r in rows]
    span = (max(xs) - min(xs)) or 1
    styles = {"f1": "-", "precision": "--", "recall": ":"}
    for k, score in enumerate(_SCORES):
        _series(
            ax,
            xs,
            rows,
            f"{average}_{score}",
            offset=(k - 1) * span * 0.008,
            marker=_MARKERS[k],
            color=f"C{k}",
            linestyle=styles[score],
            label=_LABEL[score],
        )
    _d_ticks(ax, xs)


def _d_ticks(ax: Any, xs: list[int]) -> None:
    """Study (a)'s axis of d: a labelled tick at each d, except that where the d's crowd
    (spaced by less than a twelfth of the axis) the paper's d (``PAPER_DIMS``) keep their
    labels and the others get an unlabelled minor tick."""
    span = (max(xs) - min(xs)) or 1
    close = any(b - a < span / 12 for a, b in zip(xs, xs[1:], strict=False))
    major = [d for d in xs if d in PAPER_DIMS] if close else xs
    ax.set_xticks(major or xs)
    ax.set_xticks([d for d in xs if d not in major], minor=True)


def _draw_trees(ax: Any, rows: list[dict]) -> None:
    """Study (a)'s second row: the best tree's labelled-bracket F1 (micro, with its
    interval) and the share of sentences whose decoded chart gave a tree, against d."""
    rows = sorted(
        (r for r in rows if not math.isnan(r.get("bracket_f1", math.nan))), key=lambda r: r["d"]
    )
    if not rows:
        return
    xs = [r["d"] for r in rows]
    _series(ax, xs, rows, "bracket_f1", offset=0.0, marker="o", color="C3", label="bracket F1")
    ax.plot(
        xs,
        [r["trees"] for r in rows],
        marker="s",
        markersize=4,
        linewidth=1.2,
        linestyle="--",
        color="C4",
        label="sentences with a tree",
    )
    _d_ticks(ax, xs)


def _sort_key(v: Any) -> tuple:
    return (str(type(v)), v)


def _draw_by(
    ax: Any,
    rows: list[dict],
    average: str,
    field: str,
    label: Any,
    score: str,
    series_of: dict[Any, int],
) -> None:
    m = len(series_of)
    for v in sorted({r[field] for r in rows}, key=_sort_key):
        k = series_of[v]
        series = sorted((r for r in rows if r[field] == v), key=lambda r: r["length"])
        _series(
            ax,
            [r["length"] for r in series],
            series,
            f"{average}_{score}",
            offset=(k - (m - 1) / 2) * 0.07,
            marker=_MARKERS[k % len(_MARKERS)],
            color=f"C{k % 10}",
            label=label(v),
        )


def _save_png(fig: Any, fh: Any, dpi: int) -> None:
    """PNG with a 256-colour palette: a third of the size of RGBA, and the same picture."""
    from PIL import Image

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    buf.seek(0)
    with Image.open(buf) as im:
        quantized = im.convert("RGB").quantize(256, dither=Image.Dither.NONE)
        quantized.save(fh, format="PNG", optimize=True)


def _save(fig: Any, fmt: str, path: Path, dpi: int) -> None:
    """Write ``fig`` in format ``fmt`` to the new file ``path`` (created here), durably."""
    from matplotlib import rc_context

    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    with os.fdopen(fd, "wb") as fh, rc_context(_STYLE):  # svg.* settings are read on save
        if fmt == "png":
            _save_png(fig, fh, dpi)
        else:
            fig.savefig(fh, format=fmt, dpi=dpi, metadata={"Date": None} if fmt == "svg" else None)
        fh.flush()
        os.fsync(fh.fileno())


def check_figures_folder(out_dir: str | os.PathLike[str]) -> Path:
    """Refuse a figures folder that is a file, or lies under one, before anything is drawn.

    Returns
    -------
    Path
        ``out_dir``.

    Raises
    ------
    FigureWriteError
        When ``out_dir``, or a folder above it, is a file (errno ``ENOTDIR``).
    TypeError
        When ``out_dir`` is not a path.
    """
    out = check_path("out_dir", out_dir)
    for folder in (out, *out.parents):
        if folder.exists():
            if not folder.is_dir():
                where = (
                    f"cannot write figures into {str(out)!r}: it"
                    if folder == out
                    else f"cannot create the figures folder {str(out)!r}: {str(folder)!r}"
                )
                raise FigureWriteError(
                    errno.ENOTDIR,
                    f"{where} is a file, not a folder; choose a folder (it is created if "
                    "absent, and figures in it are replaced)",
                )
            break
    return out


def _make_folder(out: Path) -> list[Path]:
    """Create ``out`` and its missing parents (:func:`check_figures_folder` has passed);
    returns those created, deepest last."""
    created = []
    for folder in (*reversed(out.parents), out):
        if not folder.exists():
            created.append(folder)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        _remove_folders(created)
        raise FigureWriteError(
            exc.errno,
            f"cannot create the figures folder {str(out)!r}: {exc.strerror or exc}; choose "
            "a folder that can be written",
        ) from exc
    return created


def _remove_folders(folders: list[Path]) -> None:
    for folder in reversed(folders):
        try:
            folder.rmdir()  # only when empty
        except OSError:
            return


def plot_studies(
    records: Sequence[dict[str, Any]],
    out_dir: str | os.PathLike[str],
    *,
    formats: Sequence[str] = ("png", "svg"),
    studies: Sequence[str] = ("a", "b", "c"),
    average: str = "micro",
    grammar: str = "G0",
    max_len: int = 7,
    d: int | None = None,
    beta: float | None = None,
    dpi: int = 110,
) -> list[Path]:
    """Draw the studies and write each as PNG and SVG; returns the paths written.

    Study (c) compares grammars and is skipped when the records hold a single grammar at
    its dimension. ``out_dir`` is created if absent; in an existing folder, the figures
    replace their files of the same name, and the figure files of a study in ``studies``
    that has no data this time are removed (they would show another run's results); nothing
    else is touched. Either every figure is written or none is (see the module's notes): no
    file is ever left half written.

    Parameters
    ----------
    records : sequence of dict
    out_dir : path
    formats : sequence of {"png", "svg", "pdf"}
    studies : sequence of {"a", "b", "c"}
    average, grammar, max_len, d, beta
        As :func:`figure_study`.
    dpi : int
        Resolution of raster formats.

    Returns
    -------
    list of Path

    Raises
    ------
    FigureWriteError
        When ``out_dir`` is a file or cannot be created, or a figure cannot be written (a
        full disk): the message names the path and the cause. No figure was written then,
        and the folder holds what it held before (a folder created here is removed). A
        file in place of the folder is refused before any figure is drawn.
    ValueError
        On an unknown format or average, or ``dpi`` or ``max_len`` not an integer >= 1.
    TypeError
        When ``out_dir`` is not a path.
    """
    for f in formats:
        if f not in FIGURE_FORMATS:
            raise ValueError(f"unknown figure format {f!r}: choose from png, svg, pdf")
    out = check_path("out_dir", out_dir)
    dpi = check_int("dpi", dpi, 1)
    max_len = check_int("max_len", max_len, 1)
    check_figures_folder(out)  # before anything is drawn
    figures = []
    for study in studies:
        if study == "c":
            d_c = default_study_c_dim(records) if d is None else d
            if len({r["grammar"] for r in records if r["d"] == d_c}) < 2:
                continue
        fig = figure_study(
            records, study, average=average, grammar=grammar, max_len=max_len, d=d, beta=beta
        )
        if fig is not None:
            figures.append((study, fig))
    created = _make_folder(out)
    pending: list[tuple[Path, Path]] = []  # (temporary file, its final path)
    written: list[Path] = []
    path = out
    try:
        for study, fig in figures:
            for f in formats:
                path = out / f"{FIGURE_NAMES[study]}.{f}"
                tmp = out / f".{path.name}.{secrets.token_hex(4)}.tmp"
                pending.append((tmp, path))
                _save(fig, f, tmp, dpi)
        for tmp, path in pending:
            os.replace(tmp, path)
            written.append(path)
    except BaseException as exc:
        for tmp, _ in pending:
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass
        if not written:
            _remove_folders(created)
        if isinstance(exc, OSError):
            done = (
                f"only {', '.join(p.name for p in written)} replaced"
                if written
                else "no figure was written"
            )
            raise FigureWriteError(
                exc.errno,
                f"cannot write the figure {str(path)!r}: {exc.strerror or exc}; {done} (free "
                "some space, or choose another folder, and draw again)",
            ) from exc
        raise
    drawn = {study for study, _ in figures}
    for study in studies:
        if study not in drawn:  # no data this time: a figure of it here is another run's
            for f in FIGURE_FORMATS:
                with contextlib.suppress(OSError):
                    (out / f"{FIGURE_NAMES[study]}.{f}").unlink(missing_ok=True)
    return written


# -- one parse ----------------------------------------------------------------------------

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
    with rc_context(_STYLE):
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


def figure_format(path: str | os.PathLike[str]) -> str:
    """The format of a figure file, from its suffix (one of :data:`FIGURE_FORMATS`).

    Raises
    ------
    ValueError
        On another suffix.
    TypeError
        When ``path`` is not a path.
    """
    fmt = check_path("path", path).suffix.lower().lstrip(".")
    if fmt not in FIGURE_FORMATS:
        raise ValueError(f"{os.fspath(path)!r}: give a file ending in .png, .svg or .pdf")
    return fmt


def save_figure(fig: Any, path: str | os.PathLike[str], *, dpi: int = 110) -> Path:
    """Write a figure to ``path`` in the format its suffix names (.png, .svg, .pdf), whole or
    not at all (a temporary file renamed into place).

    Raises
    ------
    ValueError
        On another suffix, or ``dpi`` not an integer >= 1.
    TypeError
        When ``fig`` is not a figure or ``path`` not a path.
    FigureWriteError
        When the file cannot be written (the message names it and the cause).
    """
    if not callable(getattr(fig, "savefig", None)):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    path = check_path("path", path)
    fmt = figure_format(path)
    dpi = check_int("dpi", dpi, 1)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        _save(fig, fmt, tmp, dpi)
        os.replace(tmp, path)
    except OSError as exc:
        raise FigureWriteError(
            exc.errno, f"cannot write the figure {str(path)!r}: {exc.strerror or exc}"
        ) from exc
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
    return path

"""The figures of the paper's three studies, drawn from experiment records.

- Study (a): F1, precision and recall against d, on the sentences of length <= 7 (G0).
- Study (b): F1 against sentence length, one line per d (G0).
- Study (c): F1, precision and recall against sentence length, one line per grammar, at one
  d (G0..G4 where present).

Each figure has one column of panels per variant, 95% confidence intervals as error bars
(micro averages with their bootstrap intervals by default, or macro averages with their t
intervals: see :func:`fastdcyk.experiments.aggregate`). :func:`figure_study` draws one;
:func:`plot_studies` draws them and writes them, all or nothing
(:func:`fastdcyk.plots.files.write_figures`).
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from fastdcyk.checks import check_int, check_path
from fastdcyk.experiments.aggregate import default_study_c_dim, study_rows
from fastdcyk.experiments.config import PAPER_DIMS
from fastdcyk.plots.files import FIGURE_FORMATS, STYLE, check_figures_folder, write_figures

__all__ = ["FIGURE_NAMES", "figure_study", "plot_studies"]


#: File stem of each study's figure.
FIGURE_NAMES = {
    "a": "study_a_scores_vs_d",
    "b": "study_b_f1_vs_length",
    "c": "study_c_grammars",
}
_SCORES = ("f1", "precision", "recall")
_LABEL = {"f1": "F1", "precision": "precision", "recall": "recall"}
_MARKERS = "osD^vP*Xh<>"


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
    with rc_context(STYLE):
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
    written = write_figures([(FIGURE_NAMES[s], fig) for s, fig in figures], out, formats, dpi)
    drawn = {study for study, _ in figures}
    for study in studies:
        if study not in drawn:  # no data this time: a figure of it here is another run's
            for f in FIGURE_FORMATS:
                with contextlib.suppress(OSError):
                    (out / f"{FIGURE_NAMES[study]}.{f}").unlink(missing_ok=True)
    return written

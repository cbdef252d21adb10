"""Figures: the paper's three studies, drawn from experiment records, and one parse, with
matplotlib.

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

The figures live in modules of their own, whose public names this package gives:
:mod:`fastdcyk.plots.studies` (the studies), :mod:`fastdcyk.plots.parse` (one parse) and
:mod:`fastdcyk.plots.files` (the formats, the style, writing files).
"""

from __future__ import annotations

from fastdcyk.plots.files import (
    FIGURE_FORMATS,
    FigureWriteError,
    check_figures_folder,
    figure_format,
    save_figure,
)
from fastdcyk.plots.parse import PARSE_COLOURS, figure_parse
from fastdcyk.plots.studies import FIGURE_NAMES, figure_study, plot_studies

__all__ = [
    "FIGURE_FORMATS",
    "FIGURE_NAMES",
    "PARSE_COLOURS",
    "FigureWriteError",
    "check_figures_folder",
    "figure_format",
    "figure_parse",
    "figure_study",
    "plot_studies",
    "save_figure",
]

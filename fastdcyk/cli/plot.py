"""``fastdcyk plot``: the paper's three figures and their tables from results files."""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fastdcyk.cli.common import (
    UsageError,
    beta,
    check_out_folder,
    dimension,
    draw,
    positive_int,
)
from fastdcyk.experiments import (
    ResultsFileError,
    ResultsWarning,
    format_table,
    load_records,
    study_rows,
)
from fastdcyk.plots.files import FIGURE_FORMATS, FigureWriteError, check_figures_folder


def load_records_noting(paths: Sequence[str | Path], command: str = "plot") -> list[dict]:
    """:func:`load_records`, each record outside its file's grid left out with a note on
    stderr ("fastdcyk plot: note: ..."), not a Python warning; other warnings pass on."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResultsWarning)
        records = load_records(list(paths))
    for w in caught:
        if issubclass(w.category, ResultsWarning):
            print(f"fastdcyk {command}: note: {w.message}", file=sys.stderr)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return records


def _cmd_plot(args: argparse.Namespace) -> int:
    try:
        records = load_records_noting(args.results)
    except ResultsFileError as exc:
        raise UsageError(str(exc)) from exc
    if not records:
        raise UsageError(f"no records in {', '.join(args.results)}: nothing to plot")
    _check_plot_choices(args, records)
    _check_figures_folder(Path(args.out))  # before any table is computed
    kw = {"grammar": args.grammar, "max_len": args.max_len, "beta": args.beta}
    tables = (
        ("a", True, ("grammar", "variant", "d"), f"scores against d, length <= {args.max_len}"),
        ("b", True, ("grammar", "variant", "d", "length"), "scores against sentence length"),
        ("c", False, ("d", "variant", "grammar"), "scores per grammar, all lengths"),
        ("c", True, ("d", "variant", "grammar", "length"), "scores per grammar and length"),
    )
    computed = []
    for study, per_length, keys, what in tables:
        d = args.dim if study == "c" else None
        computed.append(
            (study, keys, what, study_rows(records, study, d=d, per_length=per_length, **kw))
        )
    if not computed[0][3]:  # study (a): nothing (study (b) has every length of its records)
        _no_sentence_that_short(args, sorted({r["length"] for r in computed[1][3]}))
    for study, keys, what, rows in computed:
        if study == "c" and len({r["grammar"] for r in rows}) < 2:
            continue
        print(f"\nstudy ({study}): {what}")
        print(format_table(rows, keys, markdown=args.markdown))
    print()
    draw(
        records,
        Path(args.out),
        formats=tuple(args.formats),
        average=args.average,
        d=args.dim,
        **kw,
    )
    return 0


def _check_figures_folder(out: Path) -> None:
    """A usage error unless the figures can be written into ``out`` (a file in its place,
    or a folder that cannot be written): checked before any table is computed."""
    try:
        check_figures_folder(out)
    except FigureWriteError as exc:
        raise UsageError(exc.strerror) from exc
    check_out_folder("--out", out)


def _no_sentence_that_short(args: argparse.Namespace, lengths: list[int]) -> None:
    """Study (a) is empty: no sentence of its grammar (at its beta) is as short as
    --max-len (a UsageError naming the ``lengths`` there are)."""
    if not lengths:
        raise UsageError(
            f"--grammar {args.grammar}: the results hold no records of it at the beta drawn; "
            "name one of its betas with --beta"
        )
    shown = ", ".join(map(str, lengths))
    if len(lengths) > 2 and lengths == list(range(lengths[0], lengths[-1] + 1)):
        shown = f"{lengths[0]} to {lengths[-1]}"
    raise UsageError(
        f"--max-len {args.max_len}: no sentence of {args.grammar} in the results is that "
        f"short, so study (a) would be empty (its sentences are of length {shown}): give "
        f"--max-len {lengths[0]} or more"
    )


def _check_plot_choices(args: argparse.Namespace, records: list) -> None:
    """--grammar, --beta and --dim must name values the records hold (UsageError)."""
    grammars = sorted({r["grammar"] for r in records})
    if args.grammar is None:
        args.grammar = "G0" if "G0" in grammars else grammars[0]
    elif args.grammar not in grammars:
        raise UsageError(
            f"--grammar {args.grammar}: the results hold no records of it; their grammars "
            f"are {', '.join(grammars)}"
        )
    betas = sorted({float(r["beta"]) for r in records})
    if args.beta is not None and float(args.beta) not in betas:
        raise UsageError(
            f"--beta {args.beta:g}: the results hold no records of it; their betas are "
            + ", ".join(f"{b:g}" for b in betas)
        )
    dims = sorted({int(r["d"]) for r in records})
    if args.dim is not None and args.dim not in dims:
        raise UsageError(
            f"--dim {args.dim}: the results hold no records of it; their dimensions are "
            + ", ".join(str(d) for d in dims)
        )


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the subcommand to ``sub`` (the parser's subparsers)."""
    p = sub.add_parser(
        "plot",
        help="draw the paper's three figures from results files",
        description="Draw study (a) F1, precision and recall against d; (b) F1 against "
        "sentence length per d; (c) scores against sentence length per grammar, as PNG and "
        "SVG, with 95% confidence intervals; print their tables.",
    )
    p.add_argument("results", nargs="+", help="results files of fastdcyk experiment")
    p.add_argument(
        "--out",
        default="figures",
        help="folder of the figures, created if absent; figures already in it are replaced, "
        "other files are left alone (default figures)",
    )
    p.add_argument(
        "--average",
        choices=("micro", "macro"),
        default="micro",
        help="micro (pooled counts, bootstrap CI) or macro (mean, t CI); default micro",
    )
    p.add_argument(
        "--grammar",
        help="grammar of studies a and b (default G0, or the first grammar of the results "
        "when they hold no G0)",
    )
    p.add_argument(
        "--max-len", type=positive_int, default=7, help="longest sentence in study a (7)"
    )
    p.add_argument("--dim", type=dimension, help="d of study c (default: most grammars)")
    p.add_argument(
        "--beta",
        type=beta,
        help="beta to draw (default: fastdcyk's default beta, or the smallest of the results "
        "without it)",
    )
    p.add_argument("--formats", nargs="+", choices=FIGURE_FORMATS, default=["png", "svg"])
    p.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    p.set_defaults(func=_cmd_plot)
    return p

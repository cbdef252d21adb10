"""``fastdcyk parse``: one sentence, its decoded chart beside the symbolic one."""

from __future__ import annotations

import argparse
import shutil
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from fastdcyk.cfg.cyk import UnknownWordError, cyk
from fastdcyk.cfg.grammar import Grammar
from fastdcyk.cli.common import (
    UsageError,
    add_grammar_file_options,
    add_parse_options,
    check_out_file,
    dimension,
    dimension_or_auto,
    load_grammar,
    option_values,
    parse_kwargs,
    positive_int,
    report,
)
from fastdcyk.cli.corpus import add_corpus_options, run_corpus
from fastdcyk.display import CHART_STYLES, chart_width, format_chart, format_chart_compact
from fastdcyk.engine import dcyk
from fastdcyk.engine.auto import START_D, DimensionWarning, certified
from fastdcyk.engine.beam import BeamWarning
from fastdcyk.engine.cost import slow_parse_note
from fastdcyk.engine.memory import check_parse_memory
from fastdcyk.engine.prepare import UNKNOWN, map_unknown
from fastdcyk.engine.progress import AUTO_DELAY, stderr_is_terminal
from fastdcyk.options import resolve

#: ``fastdcyk parse`` shows its progress bar (on a terminal) once a parse has run this long.
PARSE_PROGRESS_DELAY = AUTO_DELAY


def _cmd_parse(args: argparse.Namespace) -> int:
    if args.input is not None:  # a corpus: every line of a file
        return run_corpus(args)
    if not args.words:
        raise UsageError("give the sentence, one word per argument, or --input FILE")
    if args.plot is not None:  # before any work: a figure format and a file that can be written
        from fastdcyk.plots.files import figure_format

        try:
            figure_format(args.plot)
        except ValueError as exc:
            raise UsageError(f"--plot {exc}") from None
        check_out_file("--plot", Path(args.plot))
    grammar = load_grammar(args.grammar, encoding=args.grammar_encoding, to_cnf=args.to_cnf)
    words = Grammar.normalize_words(args.words)
    try:
        words = tuple(map_unknown(grammar, words, args.unknown))
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    try:
        gold = cyk(grammar, words, strict=True)
    except UnknownWordError as exc:
        nfc = "" if exc.word.isascii() else " (words and terminals compared in Unicode NFC)"
        if len(exc.word.split()) > 1:  # the whole sentence quoted as one argument
            nfc += " (it holds spaces: give the sentence one word per argument, unquoted)"
        terms = grammar.terminals
        some = ", ".join(repr(t) for t in terms[:12]) + (" ..." if len(terms) > 12 else "")
        hint = f"; its terminals are {some}"
        if "UNK" in grammar.terminal_set:  # a grammar induced from trees: classes
            hint += "; the grammar has unknown-word classes: --unknown class parses the word as one"
        raise UsageError(f"{exc}{nfc}{hint}") from exc
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    show = stderr_is_terminal() if args.progress is None else args.progress
    progress = PARSE_PROGRESS_DELAY if show else False
    kwargs = parse_kwargs(args)
    try:  # a bad option is an error, and nothing else is printed
        opt = resolve(dtype=args.dtype, **option_values(args))
    except ValueError as exc:
        if args.beam is not None and "beam=" in str(exc):
            raise UsageError(
                "--beam applies to --weights table only: add --weights table"
            ) from None
        raise UsageError(str(exc)) from exc
    table = opt.mode.writes_probabilities  # the weights' table
    if table and args.k is not None:
        raise UsageError(
            "--k lists the decoded chart's trees; --weights table prints the tree read from "
            "the table's scores beside the most probable one: leave one of them out"
        )
    has_certificate = certified(opt)
    dim = args.dim if args.dim is not None else ("auto" if has_certificate else 1024)
    if dim == "auto":
        if not has_certificate:
            which = (
                f"--readback {opt.readback}"
                if opt.mode.chooses_readback
                else f"--variant {opt.variant}"
            )
            raise UsageError(
                f"--dim auto doubles d while the certificate flags a cell, and {which} has "
                "no certificate (only the cleanup variant's least-squares read-backs give "
                "one): use --variant cleanup with --readback cancel (the defaults) or lstsq, "
                "or pass --dim"
            )
        if args.max_dim is not None and args.max_dim < START_D:
            raise UsageError(f"--max-dim must be at least {START_D}, where --dim auto starts")
        kwargs["max_d"] = args.max_dim
    else:
        if args.max_dim is not None:
            raise UsageError("--max-dim applies to --dim auto only")
        # a parse that cannot fit is refused (MemoryError) before its cost is estimated
        check_parse_memory(dim, np.dtype(args.dtype), "auto", opt, len(words))
        note = slow_parse_note(grammar, len(words), dim, opt)
        if note is not None:  # before a long parse: what it will cost, and the faster option
            print(f"fastdcyk parse: {note}", file=sys.stderr, flush=True)
    # Parse before printing anything else, so that a bad option is an error and nothing else.
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", DimensionWarning)
            warnings.simplefilter("always", BeamWarning)
            result = dcyk(grammar, words, d=dim, progress=progress, **kwargs)
    except (KeyError, ValueError) as exc:
        raise UsageError(str(exc)) from exc
    for w in caught:  # d or beam 'auto' at its largest with doubts left: said, not a traceback
        if issubclass(w.category, DimensionWarning | BeamWarning):
            print(f"fastdcyk parse: warning: {w.message}", file=sys.stderr, flush=True)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    print(f"sentence: {' '.join(words)}   grammar: {args.grammar}")
    full = format_chart(gold, words, nonterminals=grammar.nonterminals)
    style = args.chart
    if style == "auto":
        decoded = format_chart(result.chart, words, gold=gold, nonterminals=grammar.nonterminals)
        width = max(chart_width(full), chart_width(decoded))  # the decoded one marks errors
        fits = width <= shutil.get_terminal_size((120, 24)).columns
        style = "full" if fits else "compact"
    print("symbolic CYK:")
    print(full if style == "full" else format_chart_compact(gold, words))
    report(grammar, words, result, sys.stdout, style, gold)
    if style == "full":
        print("(+A: decoded but not in the CYK chart; -A: in the CYK chart but not decoded)")
    else:
        why = (
            "--chart compact"
            if args.chart == "compact"
            else "the charts being wider than the terminal"
        )
        print(
            f"(a compact view, {why}: per cell its number of symbols,\n"
            " +k and -k the symbols decoded but not in the CYK chart and in it but not\n"
            " decoded, and the symbol of the tree --tree prints; --chart full prints them all)"
        )
        _print_errors(result.chart, gold)
    if grammar.is_weighted and args.k is None:
        _print_most_probable(result, ascii=args.ascii)
    elif args.tree or args.k is not None:
        _print_trees(result, gold, args.k or 1, ascii=args.ascii)
    if args.plot is not None:
        from fastdcyk.plots.files import FigureWriteError, save_figure
        from fastdcyk.plots.parse import figure_parse

        try:
            path = save_figure(figure_parse(result, gold), args.plot)
        except FigureWriteError as exc:
            raise UsageError(exc.strerror) from exc
        print(f"\nfigure written to {path.resolve()}")
    return 0


def _print_errors(chart: Any, gold: Any, most: int = 20) -> None:
    """The decoded chart's false and missed items, at most ``most`` of each."""
    for what, sign, items in (
        ("decoded but not in the CYK chart", "+", _items(chart, gold)),
        ("in the CYK chart but not decoded", "-", _items(gold, chart)),
    ):
        if items:
            print(f"{what}:")
            for i, j, a in items[:most]:
                print(f"  ({i}, {j}) {sign}{a}")
            if len(items) > most:
                print(f"  and {len(items) - most} more")


def _items(chart: Any, other: Any) -> list[tuple[int, int, str]]:
    """The items of ``chart`` that ``other`` lacks, in cell order."""
    return sorted(
        (i, j, a) for (i, j), cell in chart.items() for a in cell if a not in other.get((i, j), ())
    )


def _print_most_probable(result: Any, *, ascii: bool) -> None:
    """On a weighted grammar: the most probable tree of the decoded chart, its log
    probability, and whether symbolic Viterbi over the grammar finds the same."""
    from fastdcyk.cfg.viterbi import viterbi

    best = result.best_parse()
    symbolic = viterbi(result.grammar, result.words)
    if best.tree is None:
        why = (
            "the grammar does not derive the sentence (symbolic Viterbi agrees)"
            if symbolic.tree is None
            else "the decoded chart holds no derivation over the whole sentence"
        )
        print(f"\nno tree: {why}")
        _print_beam(result)
        return
    same = (
        "the most probable tree of the grammar too"
        if best.log_prob == symbolic.log_prob
        else f"symbolic Viterbi's best has {symbolic.log_prob:.4f}"
    )
    print(
        f"\nmost probable tree of the decoded chart (log probability {best.log_prob:.4f}; {same}):"
    )
    print(best.tree.pretty(ascii=ascii))
    print(best.tree)
    if result.table_scores is not None:
        table = result.table_parse()
        if table.tree is None:
            print("\nthe table's scores give no tree of the start symbol over the sentence")
        elif table.tree == best.tree or abs(table.log_prob - best.log_prob) < 1e-9:
            print("\nthe tree read from the table's scores (--weights table) is the same")
        else:
            print(
                f"\nthe tree read from the table's scores (--weights table; log probability "
                f"{table.log_prob:.4f}):"
            )
            print(table.tree.pretty(ascii=ascii))
            print(table.tree)
        _print_beam(result)


def _print_beam(result: Any) -> None:
    """With beam='auto': the beam the table was parsed with, and why."""
    if result.beam is not None:
        b = result.beam
        tried = ", ".join(f"{x:g}" for x in b.tried)
        doubt = " (still in doubt at the widest beam)" if b.capped else ""
        print(f"beam: {b.beam:g} nats{doubt}, tried {tried}: {b.reason}")


def _print_trees(result: Any, gold: Any, k: int, *, ascii: bool) -> None:
    """k trees of the decoded chart, drawn and bracketed: a PCFG's k most probable; a
    grammar without weights, the first k of the chart's forest (what result.trees gives)."""
    forest = result.forest
    start, n = result.grammar.start, len(result.words)
    if not forest.recognized:
        why = (
            "the grammar does not derive the sentence (symbolic CYK agrees)"
            if start not in gold[(0, n)]
            else f"the decoded chart holds no derivation of {start} over the whole sentence"
        )
        print(f"\nno tree: {why}")
        return
    print(f"\nthe decoded chart admits {forest.count} tree{'s' if forest.count != 1 else ''}")
    if result.grammar.is_weighted:
        shown = [f"log probability {score:.4f}" for score, _ in forest.kbest(k)]
    else:  # the forest's order: the chart and the grammar fix it, not the reads' noise
        shown = [
            f"the forest's tree {t + 1} of {forest.count}" for t in range(min(k, forest.count))
        ]
    for rank, (what, tree) in enumerate(zip(shown, result.trees(k), strict=True), 1):
        print(f"\ntree {rank} ({what}):")
        print(tree.pretty(ascii=ascii))
        print(tree)


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the subcommand to ``sub`` (the parser's subparsers)."""
    p = sub.add_parser(
        "parse",
        help="parse one sentence and compare the decoded chart with symbolic CYK, or a file "
        "of sentences (--input)",
        description="Parse one sentence with D-CYK and print the decoded chart beside the "
        "symbolic CYK chart; +A marks a false positive, -A a miss. With --input FILE, parse "
        "every line of the file instead: one record (or tree) per line.",
    )
    p.add_argument(
        "--grammar",
        default="example",
        help=f"a grammar file or a built-in name {Grammar.builtin_names()} (default example)",
    )
    add_grammar_file_options(p)
    p.add_argument(
        "--dim",
        type=dimension_or_auto,
        default=None,
        help="dimension d, or 'auto': parse at d = 128 and double d while the certificate "
        "flags a cell (default: auto where the parse gives a certificate, as the cleanup "
        "variant's least-squares read-backs do; 1024 otherwise)",
    )
    p.add_argument(
        "--max-dim",
        type=dimension,
        default=None,
        help="the largest d that --dim auto tries (default 8192, lowered to what fits in "
        "the memory available)",
    )
    add_parse_options(p)
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=f"show a progress bar once the parse has run {PARSE_PROGRESS_DELAY:g} s "
        "(default: on when stderr is a terminal)",
    )
    p.add_argument(
        "--chart",
        choices=CHART_STYLES,
        default="auto",
        help="how to print the charts: 'full' (every symbol of every cell), 'compact' (per "
        "cell the number of symbols, the errors against CYK and the symbol of the tree --tree "
        "prints) or "
        "'auto' (full when it fits the terminal's width; the default)",
    )
    p.add_argument(
        "--tree",
        action="store_true",
        help="also print the tree of the decoded chart (in the grammar as written, when it "
        "went through --to-cnf): for a grammar without weights the first of its forest, "
        "which the chart and the grammar fix; on a probabilistic grammar the most probable "
        "tree, always printed",
    )
    p.add_argument(
        "--k",
        type=positive_int,
        metavar="K",
        help="print K trees (implies --tree): a PCFG's K most probable; for a grammar "
        "without weights the first K of the decoded chart's forest, in its fixed order",
    )
    p.add_argument("--ascii", action="store_true", help="draw trees with ASCII characters only")
    p.add_argument(
        "--plot",
        metavar="FILE",
        help="also draw the parse into FILE (.png, .svg or .pdf): the chart, each symbol's "
        "statistic against the decision boundary, and P_left and P_right as images",
    )
    p.add_argument(
        "--unknown",
        choices=UNKNOWN,
        default="refuse",
        help="a word the grammar lacks: 'refuse' it, naming it, or parse it as the grammar's "
        "unknown-word 'class' (a treebank grammar's UNK-...) (default: refuse)",
    )
    add_corpus_options(p)
    p.add_argument("words", nargs="*", help="the sentence, one word per argument")
    p.set_defaults(func=_cmd_parse)
    return p

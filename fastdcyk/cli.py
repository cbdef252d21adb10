"""The ``fastdcyk`` command line.

Subcommands:

- ``fastdcyk demo``: D-CYK (both variants) on the paper's running example and a few G0
  sentences, each decoded chart printed against the symbolic CYK chart; then a small
  reproduction of the paper's experiments (G0, 40 sentences, three dimensions, both
  variants) with its table and figures, written to ``./fastdcyk-demo/``.
- ``fastdcyk parse --grammar G0 --dim 1024 fish swim fish``: one sentence, decoded chart
  beside the symbolic one with every disagreement marked (a progress bar on a terminal when
  the parse runs longer than a few seconds).
- ``fastdcyk experiment``: a resumable grid of grammars x dimensions x variants (x order x
  beta x codebook seed) over generated sentences (the paper's setup by default), appended to a
  JSON Lines results file, on a process pool or a dask cluster, or (``--backend torch
  --device cuda``) in batches on one GPU; a summary table at the end.
- ``fastdcyk plot RESULTS...``: the paper's three figures (PNG and SVG) and their tables.

Exit status: 0 on success; 2 for a bad argument (with a message that says what was wrong,
including a results file written for another configuration, and a figures folder that
cannot be written); 1 for a failure at run time
(memory, non-finite values, a results file that cannot be written); 130 when interrupted
(every record written so far is kept, and rerunning the same command resumes); 141, quietly,
when the reader of the output has gone (``fastdcyk parse ... | head -1``).

Grammar files are read as UTF-8 unless ``--grammar-encoding`` says otherwise (NLTK's ATIS
grammar is ``latin-1``); a grammar that is not in Chomsky normal form is refused unless
``--to-cnf`` asks for its conversion.
"""

from __future__ import annotations

import argparse
import codecs
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from fastdcyk import options
from fastdcyk.cfg.cyk import UnknownWordError, cyk
from fastdcyk.cfg.generate import generate
from fastdcyk.cfg.grammar import Grammar, GrammarError
from fastdcyk.cfg.metrics import cell_scores
from fastdcyk.display import format_chart
from fastdcyk.engine import dcyk
from fastdcyk.experiments import (
    PAPER_DIMS,
    PAPER_GRAMMARS,
    PAPER_GRID_CORE_HOURS,
    ExperimentConfig,
    ResultsFileError,
    ResultsWriteError,
    format_table,
    load_records,
    read_results,
    run_experiment,
    study_rows,
    summary_table,
)
from fastdcyk.options import (
    BACKENDS,
    CODEBOOKS,
    DECODERS,
    DEFAULT_BETA,
    DEFAULT_THRESHOLD,
    ENCODINGS,
    EXECUTORS,
    GATES,
    ORDERS,
    VARIANTS,
)

__all__ = [
    "DEMO_GRID",
    "UsageError",
    "add_grid_options",
    "add_run_options",
    "build_parser",
    "main",
    "run_options",
]


#: The demo's small reproduction (G0 only: it draws studies a and b).
#: Sized so that the whole demo takes well under a minute on a slow 2-core machine: the
#: faithful variant in the paper's order costs about 1.8 s per sentence at d = 1024 on such
#: a machine, 0.4 s at d = 512 (docs/performance.md).
DEMO_GRID = ExperimentConfig(
    grammars=("G0",), dims=(64, 256, 512), variants=tuple(VARIANTS), sentences=40, max_len=6
)
DEMO_CHART_SENTENCES = 2
#: d of the demo's printed charts.
DEMO_CHART_DIM = 512
#: ``fastdcyk parse`` shows its progress bar (on a terminal) once a parse has run this long.
PARSE_PROGRESS_DELAY = 2.0
#: Each variant's own order, for the help: "paper sequential, trace cell".
_VARIANT_ORDERS = ", ".join(f"{v} {VARIANTS[v]['order']}" for v in VARIANTS)


class UsageError(Exception):
    """A bad command-line argument (exit status 2)."""


class _RunError(Exception):
    """A failure at run time (exit status 1)."""


class _Interrupted(Exception):
    """Ctrl-C during a grid; the message says what is kept (exit status 130)."""


def _number(text: str, kind: type, what: str) -> int | float:
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None


def _checked(check, value):
    """``check(value)`` (a validator of :mod:`fastdcyk.options`), its error as a usage error."""
    try:
        return check(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _dimension(text: str) -> int:
    return _checked(options.check_dim, _number(text, int, "the dimension, an integer >= 2"))


def _threshold(text: str) -> float:
    return _checked(options.check_threshold, _number(text, float, "a number in (0, 1)"))


def _beta(text: str) -> float:
    return _checked(options.check_beta, _number(text, float, "a finite number > 0"))


def _encoding_name(text: str) -> str:
    try:
        codecs.lookup(text)
    except LookupError:
        raise argparse.ArgumentTypeError(
            f"unknown encoding {text!r} (try utf-8 or latin-1)"
        ) from None
    return text


def add_grammar_file_options(p: argparse.ArgumentParser) -> None:
    """How a grammar file is read: its text encoding, and conversion to CNF."""
    p.add_argument(
        "--grammar-encoding",
        type=_encoding_name,
        default="utf-8",
        metavar="ENCODING",
        help="text encoding of grammar files, e.g. latin-1 (default: utf-8)",
    )
    p.add_argument(
        "--to-cnf",
        action="store_true",
        help="convert a grammar that is not in Chomsky normal form (Grammar.to_cnf) "
        "instead of refusing it",
    )


def add_parse_options(p: argparse.ArgumentParser) -> None:
    """The D-CYK options shared by the subcommands that parse."""
    p.add_argument(
        "--variant",
        choices=tuple(VARIANTS),
        default="paper",
        help="'paper': the faithful algorithm; 'trace': the improved one (default: paper)",
    )
    p.add_argument("--gate", choices=GATES, help="override the variant's gate")
    p.add_argument("--decoder", choices=DECODERS, help="override the variant's decoder")
    p.add_argument(
        "--order",
        choices=ORDERS,
        help="order of the updates in a cell: 'sequential' (the paper's: each update applied "
        "before the next detection) or 'cell' (every detection of a cell reads the table as "
        f"it was before the cell; much cheaper); default: the variant's ({_VARIANT_ORDERS})",
    )
    p.add_argument(
        "--encoding",
        choices=ENCODINGS,
        help="'paper': the paper's encoding; 'roles': right children under their own "
        "vectors, so that rules A -> B B stay distinct (default: paper)",
    )
    p.add_argument(
        "--unary-mask",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="mask the unary P_A to its diagonal",
    )
    p.add_argument(
        "--beta", type=_beta, default=None, help=f"sigmoid slope (default {DEFAULT_BETA:g})"
    )
    p.add_argument(
        "--threshold",
        type=_threshold,
        default=None,
        help=f"decoder threshold on sigma (default {DEFAULT_THRESHOLD})",
    )
    p.add_argument("--seed", type=_nonnegative_int, default=0, help="codebook seed (default 0)")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    p.add_argument(
        "--unitary",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="unitary symbol vectors (default: the variant's choice)",
    )


def _int_at_least(text: str, low: int) -> int:
    k = _number(text, int, f"an integer >= {low}")
    if k < low:
        raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {k}")
    return k


def _nonnegative_int(text: str) -> int:
    return _int_at_least(text, 0)


def _positive_int(text: str) -> int:
    return _int_at_least(text, 1)


def add_grid_options(p: argparse.ArgumentParser, defaults: ExperimentConfig) -> None:
    """The options that define an experiment grid (see :class:`ExperimentConfig`)."""
    g = p.add_argument_group("the grid (its hash names the configuration of a results file)")
    g.add_argument(
        "--grammars",
        nargs="+",
        default=list(defaults.grammars),
        metavar="GRAMMAR",
        help="builtin names or grammar files (default: %(default)s)",
    )
    g.add_argument(
        "--dims",
        nargs="+",
        type=_dimension,
        default=list(defaults.dims),
        metavar="D",
        help="dimensions d >= 2 (default: %(default)s)",
    )
    g.add_argument(
        "--variants",
        nargs="+",
        choices=tuple(VARIANTS),
        default=list(defaults.variants),
        help="D-CYK variants (default: %(default)s)",
    )
    own_orders = None in defaults.orders
    g.add_argument(
        "--orders",
        nargs="+",
        choices=ORDERS,
        default=None if own_orders else list(defaults.orders),
        help="orders of the updates in a cell, each crossed with every variant (default: "
        + (f"each variant's own: {_VARIANT_ORDERS})" if own_orders else "%(default)s)"),
    )
    g.add_argument(
        "--encoding",
        choices=ENCODINGS,
        default=defaults.encoding,
        help="encoding of every parse: 'paper' (the paper's) or 'roles' (the right child "
        "under its own vector, so that rules A -> B B stay distinct) (default: each "
        "variant's own: "
        + ", ".join(f"{v!r} uses {VARIANTS[v]['encoding']!r}" for v in VARIANTS)
        + ")",
    )
    g.add_argument(
        "--codebooks",
        choices=CODEBOOKS,
        default=defaults.codebooks,
        help="codebooks of the unitary (trace) variant: 'grammar' gives the grammar's symbols "
        "shifted vectors, as 'fastdcyk parse' does; 'plain' random ones (default: %(default)s)",
    )
    g.add_argument(
        "--betas",
        nargs="+",
        type=_beta,
        default=list(defaults.betas),
        metavar="BETA",
        help="sigmoid slopes (default: %(default)s)",
    )
    g.add_argument(
        "--seeds",
        nargs="+",
        type=_nonnegative_int,
        default=list(defaults.seeds),
        metavar="SEED",
        help="codebook seeds (default: %(default)s)",
    )
    g.add_argument(
        "--sentences",
        type=_positive_int,
        default=defaults.sentences,
        help="sentences in the sample (default: %(default)s)",
    )
    g.add_argument(
        "--source",
        default=defaults.source,
        help="grammar the sentences are generated from (default: %(default)s)",
    )
    g.add_argument(
        "--min-len",
        type=_positive_int,
        default=defaults.min_len,
        help="shortest sentence (default: %(default)s)",
    )
    g.add_argument(
        "--max-len",
        type=_positive_int,
        default=defaults.max_len,
        help="longest sentence (default: %(default)s)",
    )
    g.add_argument(
        "--sentence-seed",
        type=_nonnegative_int,
        default=defaults.sentence_seed,
        help="seed of the sentence generator (default: %(default)s)",
    )
    g.add_argument(
        "--threshold",
        type=_threshold,
        default=defaults.threshold,
        help="decoder threshold on sigma (default: %(default)s)",
    )
    g.add_argument(
        "--dtype",
        choices=("float32", "float64"),
        default=defaults.dtype,
        help="precision of the codebooks and accumulators (default: %(default)s)",
    )


def add_run_options(p: argparse.ArgumentParser, *, default_executor: str = "process") -> None:
    """How a grid runs: the executor, its workers, the backend and its device, batching and
    the progress bar. ``default_executor`` is the executor without ``--executor``, but with
    ``--backend torch`` (always "serial": :func:`run_options`)."""
    r = p.add_argument_group("running (not part of the configuration or its hash)")
    r.add_argument(
        "--executor",
        choices=EXECUTORS,
        help=f"'process': a pool of worker processes; 'serial': this process; 'dask': a "
        "dask.distributed cluster (needs --scheduler; pip install 'fastdcyk[dask]'). "
        f"Default: {default_executor}, but serial with --backend torch (its only executor)",
    )
    p.set_defaults(default_executor=default_executor)
    r.add_argument("--workers", type=_positive_int, help="worker processes (default: one per core)")
    r.add_argument("--scheduler", metavar="ADDRESS", help="dask scheduler, e.g. tcp://host:8786")
    r.add_argument(
        "--backend",
        choices=BACKENDS,
        default="numpy",
        help="'numpy': the numpy engine, one sentence at a time per worker (default); "
        "'torch': each task's sentences in batches with PyTorch, on --device, from this "
        "process (pip install 'fastdcyk[torch]'). The records have the same fields (and in "
        "float64 the same values); their seconds are then a batch's time divided evenly "
        "among its sentences",
    )
    r.add_argument(
        "--device",
        metavar="DEVICE",
        help="where --backend torch computes: cpu (default), cuda, cuda:1, ...",
    )
    r.add_argument(
        "--batch-size",
        type=_positive_int,
        help="distinct sentences per task (default: a few seconds of work per task; with "
        "--backend torch, up to an hour of one core's work, at most 256 sentences)",
    )
    r.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="show a progress bar with the ETA (default: on)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fastdcyk",
        description="D-CYK: CYK parsing over distributed (holographic) representations.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    demo = sub.add_parser(
        "demo",
        help="D-CYK on the running example and G0 sentences, then a small reproduction",
        description="Parse the paper's running example and a few G0 sentences with both "
        "variants, printing each decoded chart against the symbolic CYK chart; then run a "
        "small reproduction of the paper's experiments (G0, both variants, a few "
        "dimensions), print its table and write its figures.",
    )
    demo.add_argument(
        "--dim",
        type=_dimension,
        default=DEMO_CHART_DIM,
        help=f"d of the printed charts (default {DEMO_CHART_DIM})",
    )
    demo.add_argument(
        "--sentences",
        type=_nonnegative_int,
        default=DEMO_CHART_SENTENCES,
        help=f"G0 sentences whose charts are printed (default {DEMO_CHART_SENTENCES})",
    )
    demo.add_argument(
        "--repro-sentences",
        type=_nonnegative_int,
        default=DEMO_GRID.sentences,
        help="sentences of the small reproduction (default %(default)s; 0 skips it)",
    )
    demo.add_argument(
        "--repro-dims",
        nargs="+",
        type=_dimension,
        default=list(DEMO_GRID.dims),
        metavar="D",
        help="dimensions of the small reproduction (default: %(default)s)",
    )
    demo.add_argument(
        "--out",
        default="fastdcyk-demo",
        help="folder for the reproduction's results and figures (default ./fastdcyk-demo)",
    )
    demo.add_argument(
        "--workers", type=_positive_int, help="worker processes (default: one per core)"
    )
    demo.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True)
    demo.set_defaults(func=_cmd_demo)

    parse = sub.add_parser(
        "parse",
        help="parse one sentence and compare the decoded chart with symbolic CYK",
        description="Parse one sentence with D-CYK and print the decoded chart beside the "
        "symbolic CYK chart; +A marks a false positive, -A a miss.",
    )
    parse.add_argument(
        "--grammar",
        default="example",
        help=f"a grammar file or a built-in name {Grammar.builtin_names()} (default example)",
    )
    add_grammar_file_options(parse)
    parse.add_argument("--dim", type=_dimension, default=1024, help="dimension d (default 1024)")
    add_parse_options(parse)
    parse.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=f"show a progress bar once the parse has run {PARSE_PROGRESS_DELAY:g} s "
        "(default: on when stderr is a terminal)",
    )
    parse.add_argument("words", nargs="+", help="the sentence, one word per argument")
    parse.set_defaults(func=_cmd_parse)

    exp = sub.add_parser(
        "experiment",
        help="run (or resume) a grid of D-CYK runs scored against symbolic CYK",
        description="Run the paper's experiments: every grammar x dimension x variant (x "
        "order) x beta x codebook seed over sentences generated from --source, each "
        "sentence's decoded chart scored against symbolic CYK. Records are appended to --out "
        "as tasks finish; rerunning the same command resumes an interrupted run. The "
        "defaults are the paper's grid (2,000 G0 sentences of length 2..10, G0..G4, d = "
        "100..6000, both variants, each in its own order): some "
        f"{PAPER_GRID_CORE_HOURS} core-hours (docs/results.md), so use the dask executor "
        "for it.",
    )
    add_grid_options(exp, ExperimentConfig())
    add_grammar_file_options(exp)
    exp.add_argument(
        "--out",
        help="results file (JSON Lines; default fastdcyk-results/<config hash>.jsonl)",
    )
    exp.add_argument("--figures", metavar="DIR", help="also draw the figures into DIR")
    add_run_options(exp)
    exp.set_defaults(func=_cmd_experiment)

    plot = sub.add_parser(
        "plot",
        help="draw the paper's three figures from results files",
        description="Draw study (a) F1, precision and recall against d; (b) F1 against "
        "sentence length per d; (c) scores against sentence length per grammar, as PNG and "
        "SVG, with 95% confidence intervals; print their tables.",
    )
    plot.add_argument("results", nargs="+", help="results files of fastdcyk experiment")
    plot.add_argument(
        "--out",
        default="figures",
        help="folder of the figures, created if absent; figures already in it are replaced, "
        "other files are left alone (default figures)",
    )
    plot.add_argument(
        "--average",
        choices=("micro", "macro"),
        default="micro",
        help="micro (pooled counts, bootstrap CI) or macro (mean, t CI); default micro",
    )
    plot.add_argument(
        "--grammar",
        help="grammar of studies a and b (default G0, or the first grammar of the results "
        "when they hold no G0)",
    )
    plot.add_argument(
        "--max-len", type=_positive_int, default=7, help="longest sentence in study a (7)"
    )
    plot.add_argument("--dim", type=_dimension, help="d of study c (default: most grammars)")
    plot.add_argument(
        "--beta",
        type=_beta,
        help="beta to draw (default: the engine's, or the smallest of the results without it)",
    )
    plot.add_argument("--formats", nargs="+", choices=("png", "svg", "pdf"), default=["png", "svg"])
    plot.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    plot.set_defaults(func=_cmd_plot)

    cap = sub.add_parser(
        "capacity",
        help="predict D-CYK's F1 against d, and the d a grammar needs, without parsing",
        description="Predict cell precision, recall and F1 of D-CYK for sentences of one "
        "length drawn from the grammar, at a range of dimensions, with the capacity model "
        "(fastdcyk.capacity: symbolic CYK over modelled readouts, no d x d work), and the "
        "smallest d predicted to reach --target-f1.",
    )
    cap.add_argument(
        "--grammar",
        default="G0",
        help=f"a grammar file or a built-in name {Grammar.builtin_names()} (default G0)",
    )
    add_grammar_file_options(cap)
    cap.add_argument("--length", type=_positive_int, required=True, help="sentence length")
    cap.add_argument(
        "--target-f1", type=_probability_or_one, default=0.99, help="target F1 (default 0.99)"
    )
    cap.add_argument(
        "--variant",
        choices=tuple(VARIANTS),
        default="trace",
        help="'trace' (default) or 'paper'",
    )
    cap.add_argument("--encoding", choices=ENCODINGS, help="override the variant's encoding")
    cap.add_argument(
        "--dims",
        nargs="+",
        type=_dimension,
        default=[256, 512, 1024, 2048, 4096],
        metavar="D",
        help="dimensions of the table (default: 256 512 1024 2048 4096)",
    )
    cap.add_argument(
        "--sentences", type=_positive_int, default=50, help="sentences drawn (default 50)"
    )
    cap.add_argument("--samples", type=_positive_int, default=2, help="codebook draws (default 2)")
    cap.add_argument("--seed", type=_nonnegative_int, default=0, help="seed (default 0)")
    cap.set_defaults(func=_cmd_capacity)
    return parser


def _load_grammar(spec: str, *, encoding: str = "utf-8", to_cnf: bool = False) -> Grammar:
    """A builtin grammar or a grammar file, read as the options say (see
    :func:`add_grammar_file_options`); a grammar not in CNF is converted or refused."""
    try:
        grammar = Grammar.load(spec, cnf="allow", encoding=encoding)
    except GrammarError as exc:
        raise UsageError(_grammar_load_error(spec, exc, encoding)) from exc
    except OSError as exc:
        raise UsageError(f"cannot load grammar {spec!r}: {exc}") from exc
    if grammar.is_cnf:
        return grammar
    if not to_cnf:
        raise UsageError(
            f"grammar {spec!r} is not in Chomsky normal form ({_non_cnf_rule(grammar)}): "
            "pass --to-cnf to convert it"
        )
    try:
        return grammar.to_cnf()
    except GrammarError as exc:
        raise UsageError(f"cannot convert grammar {spec!r} to Chomsky normal form: {exc}") from exc


def _grammar_load_error(spec: str, exc: GrammarError, encoding: str) -> str:
    """The message for a grammar that cannot be read, with the command line's advice."""
    fault = _decoding_fault(exc, encoding)
    if fault is None:
        return f"cannot load grammar {spec!r}: {exc}"
    return (
        f"cannot load grammar {spec!r}: {fault}: pass --grammar-encoding latin-1 "
        "(or the file's encoding)"
    )


def _decoding_fault(exc: GrammarError, encoding: str) -> str | None:
    """'FILE is not ENCODING text (byte ...)' when ``exc`` is a decoding error, else None."""
    # Grammar.from_file raises its decoding error while handling the UnicodeDecodeError.
    bad = exc.__context__
    if not (isinstance(bad, UnicodeDecodeError) and isinstance(bad.object, bytes)):
        return None
    shown = "UTF-8" if codecs.lookup(encoding).name == "utf-8" else encoding
    return (
        f"{exc.source or 'the file'} is not {shown} text "
        f"(byte {bad.start} is 0x{bad.object[bad.start]:02x})"
    )


def _non_cnf_rule(grammar: Grammar) -> str:
    rule = next(r for r in grammar.rules if not (r.is_unary or r.is_binary))
    return f"its rule {rule} is neither A -> B C nor A -> 'a'"


def _parse_kwargs(args: argparse.Namespace) -> dict:
    return {
        "variant": args.variant,
        "gate": args.gate,
        "decoder": args.decoder,
        "order": args.order,
        "encoding": args.encoding,
        "unary_mask": args.unary_mask,
        "beta": args.beta,
        "threshold": args.threshold,
        "seed": args.seed,
        "dtype": args.dtype,
        "unitary": args.unitary,
    }


def _report(grammar: Grammar, words: Sequence[str], result, out) -> None:
    gold = cyk(grammar, words)
    o = result.options
    sc = cell_scores(gold, result.chart)
    t = sum(result.timings.values())
    print(
        f"D-CYK, variant={o.variant} (gate={o.gate}, decoder={o.decoder}, order={o.order}, "
        f"encoding={o.encoding}, beta={o.beta:g}, threshold={o.threshold:g}), "
        f"d={result.codebook.d}, "
        f"{result.codebook.dtype}: {t:.2f} s",
        file=out,
    )
    print(format_chart(result.chart, words, gold=gold, nonterminals=grammar.nonterminals), file=out)
    print(f"cells: {sc}", file=out)


def _cmd_parse(args: argparse.Namespace) -> int:
    grammar = _load_grammar(args.grammar, encoding=args.grammar_encoding, to_cnf=args.to_cnf)
    words = Grammar.normalize_words(args.words)
    try:
        gold = cyk(grammar, words, strict=True)
    except UnknownWordError as exc:
        nfc = "" if exc.word.isascii() else " (words and terminals compared in Unicode NFC)"
        raise UsageError(f"{exc}{nfc}") from exc
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    show = sys.stderr.isatty() if args.progress is None else args.progress
    progress = PARSE_PROGRESS_DELAY if show else False
    # Parse before printing anything, so that a bad option is an error and nothing else.
    try:
        result = dcyk(grammar, words, d=args.dim, progress=progress, **_parse_kwargs(args))
    except (KeyError, ValueError) as exc:
        raise UsageError(str(exc)) from exc
    print(f"sentence: {' '.join(words)}   grammar: {args.grammar}")
    print("symbolic CYK:")
    print(format_chart(gold, words, nonterminals=grammar.nonterminals))
    _report(grammar, words, result, sys.stdout)
    print("(+A: decoded but not in the CYK chart; -A: in the CYK chart but not decoded)")
    return 0


def _print_charts(args: argparse.Namespace) -> None:
    example = Grammar.builtin("example")
    g0 = Grammar.builtin("G0")
    jobs = [(example, "example", ("a", "a", "b"))]
    jobs += [(g0, "G0", s) for s in generate(g0, args.sentences, min_len=3, max_len=6, seed=1)]
    for grammar, name, words in jobs:
        print(f"\n=== {name}: {' '.join(words)}")
        print("symbolic CYK:")
        print(format_chart(cyk(grammar, words), words, nonterminals=grammar.nonterminals))
        for variant in VARIANTS:
            print()
            _report(grammar, words, dcyk(grammar, words, d=args.dim, variant=variant), sys.stdout)
    print("\n(+A: decoded but not in the CYK chart; -A: in the CYK chart but not decoded)")


def _echo(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run_options(args: argparse.Namespace) -> dict:
    """The keywords of :func:`run_experiment` that :func:`add_run_options` gives: executor,
    backend and device (the executor defaulted: serial with ``--backend torch``).

    Raises
    ------
    UsageError
        For ``--device`` without ``--backend torch``, or ``--backend torch`` with another
        executor than serial.
    """
    backend = getattr(args, "backend", "numpy")
    device = getattr(args, "device", None)
    executor = getattr(args, "executor", None)
    if device is not None and backend != "torch":
        raise UsageError(
            f"--device {device} is only used with --backend torch (the numpy backend "
            "computes on the CPU): add --backend torch, or leave out --device"
        )
    if backend == "torch" and executor not in (None, "serial"):
        raise UsageError(
            f"--backend torch runs with --executor serial only, not {executor}: its batches "
            "run on one device from this process (one process per GPU); leave out "
            "--executor (or give --executor serial)"
        )
    if executor is None:
        executor = "serial" if backend == "torch" else getattr(args, "default_executor", "process")
    return {"executor": executor, "backend": backend, "device": device}


def _run_grid(config: ExperimentConfig, out: Path, args: argparse.Namespace) -> None:
    """Run a grid for a subcommand, turning failures into the CLI's exit statuses."""
    how = run_options(args)
    try:
        summary = run_experiment(
            config,
            out,
            workers=args.workers,
            scheduler=getattr(args, "scheduler", None),
            batch_size=getattr(args, "batch_size", None),
            progress=args.progress,
            echo=_echo,
            **how,
        )
    except KeyboardInterrupt:
        done = _count_records(out)
        raise _Interrupted(
            f"interrupted: {done} records are safe in {out}; rerun the same command to resume"
        ) from None
    except ResultsWriteError as exc:
        raise _RunError(str(exc.strerror)) from exc
    except OSError as exc:  # a dask scheduler that cannot be reached, for instance
        raise _RunError(f"{type(exc).__name__}: {exc}") from exc
    except ImportError as exc:
        raise UsageError(str(exc)) from exc
    except (ValueError, GrammarError, ResultsFileError) as exc:
        raise UsageError(str(exc)) from exc
    torch = f" by the torch backend on {summary.device}" if summary.backend == "torch" else ""
    print(
        f"{summary.written} records written{torch} in {summary.seconds:.1f} s "
        f"({summary.resumed} were already there); {out}: "
        f"{summary.resumed + summary.written}/{summary.total} records"
    )


def _count_records(path: Path) -> int:
    try:
        return len(read_results(path).records)
    except (ResultsFileError, OSError):
        return 0


def _config_from_args(args: argparse.Namespace) -> ExperimentConfig:
    try:
        return ExperimentConfig(
            grammars=tuple(args.grammars),
            dims=tuple(args.dims),
            variants=tuple(args.variants),
            orders=tuple(args.orders) if args.orders else (None,),
            encoding=args.encoding,
            codebooks=args.codebooks,
            grammar_encoding=args.grammar_encoding,
            to_cnf=args.to_cnf,
            betas=tuple(args.betas),
            seeds=tuple(args.seeds),
            sentences=args.sentences,
            source=args.source,
            min_len=args.min_len,
            max_len=args.max_len,
            sentence_seed=args.sentence_seed,
            threshold=args.threshold,
            dtype=args.dtype,
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from exc


def _check_out_file(option: str, path: Path) -> None:
    """A usage error unless ``path`` can be a regular file that is created or appended to."""
    if path.exists() and not path.is_file():
        raise UsageError(
            f"{option} {path}: not a regular file (give a file path, e.g. results.jsonl)"
        )
    _check_out_folder(option, path.parent)


def _check_out_folder(option: str, path: Path) -> None:
    """A usage error when ``path`` or a folder above it exists but is not a folder."""
    for folder in (path, *path.parents):
        if folder.exists():
            if not folder.is_dir():
                raise UsageError(f"{option} {path}: {folder} exists and is not a folder")
            return


#: Why ``fastdcyk experiment`` refuses a grammar file that ``fastdcyk parse`` can read.
_GRID_READS = (
    "fastdcyk experiment reads grammar files as they are, as UTF-8 text in Chomsky normal "
    "form (--grammar-encoding and --to-cnf do not reach its grid yet)"
)


def _check_experiment_args(args: argparse.Namespace, config: ExperimentConfig) -> None:
    """Usage errors for the paths and grammar files, before any work is done."""
    if args.out:
        _check_out_file("--out", Path(args.out))
    if args.figures:
        _check_out_folder("--figures", Path(args.figures))
    for spec in dict.fromkeys((*config.grammars, config.source)):
        # the messages of parse (pass --to-cnf, --grammar-encoding), before any work
        _load_grammar(spec, encoding=config.grammar_encoding, to_cnf=config.to_cnf)


def _cmd_experiment(args: argparse.Namespace) -> int:
    executor = run_options(args)["executor"]
    if executor == "dask" and not args.scheduler:
        raise UsageError("--executor dask needs --scheduler ADDRESS (e.g. tcp://host:8786)")
    if args.scheduler and executor != "dask":
        raise UsageError("--scheduler is only used with --executor dask")
    config = _config_from_args(args)
    _check_experiment_args(args, config)
    try:
        config_hash = config.hash()
    except (GrammarError, OSError) as exc:
        raise UsageError(f"cannot load a grammar: {exc}") from exc
    out = Path(args.out) if args.out else Path("fastdcyk-results") / f"{config_hash[:12]}.jsonl"
    _run_grid(config, out, args)
    records = load_records(out)
    print()
    print(summary_table(records))
    print("(micro P/R/F1: pooled counts, 95% bootstrap CI; macro F1: mean, 95% t CI)")
    if args.figures:
        _draw(records, Path(args.figures), formats=("png", "svg"))
    else:
        print(f"figures: fastdcyk plot {out} --out figures")
    return 0


def _draw(records: list, out: Path, **kwargs) -> list[Path]:
    from fastdcyk.plots import FigureWriteError, plot_studies

    try:
        paths = plot_studies(records, out, **kwargs)
    except FigureWriteError as exc:
        raise UsageError(exc.strerror) from exc
    print(f"figures written to {out.resolve()}{os.sep}: " + ", ".join(p.name for p in paths))
    return paths


def _cmd_plot(args: argparse.Namespace) -> int:
    try:
        records = load_records(args.results)
    except ResultsFileError as exc:
        raise UsageError(str(exc)) from exc
    if not records:
        raise UsageError(f"no records in {', '.join(args.results)}: nothing to plot")
    _check_plot_choices(args, records)
    kw = {"grammar": args.grammar, "max_len": args.max_len, "beta": args.beta}
    tables = (
        ("a", True, ("grammar", "variant", "d"), f"scores against d, length <= {args.max_len}"),
        ("b", True, ("grammar", "variant", "d", "length"), "scores against sentence length"),
        ("c", False, ("d", "variant", "grammar"), "scores per grammar, all lengths"),
        ("c", True, ("d", "variant", "grammar", "length"), "scores per grammar and length"),
    )
    for study, per_length, keys, what in tables:
        d = args.dim if study == "c" else None
        rows = study_rows(records, study, d=d, per_length=per_length, **kw)
        if study == "c" and len({r["grammar"] for r in rows}) < 2:
            continue
        print(f"\nstudy ({study}): {what}")
        print(format_table(rows, keys, markdown=args.markdown))
    print()
    _draw(
        records,
        Path(args.out),
        formats=tuple(args.formats),
        average=args.average,
        d=args.dim,
        **kw,
    )
    return 0


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


def _probability_or_one(text: str) -> float:
    try:
        p = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1], got {text!r}") from None
    if not 0.0 < p <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1], got {p}")
    return p


def _cmd_capacity(args: argparse.Namespace) -> int:
    from fastdcyk import capacity

    grammar = _load_grammar(args.grammar, encoding=args.grammar_encoding, to_cnf=args.to_cnf)
    kw = dict(
        variant=args.variant,
        encoding=args.encoding,
        samples=args.samples,
        sentences=args.sentences,
        seed=args.seed,
    )
    t0 = time.perf_counter()
    made: dict = {}
    try:
        for d in sorted(set(args.dims)):
            made[d] = capacity.predict(grammar, args.length, d, **kw)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    rows = list(made.values())
    enc = args.encoding or VARIANTS[args.variant]["encoding"]
    print(
        f"capacity model: {args.grammar}, {args.sentences} sentences of length {args.length}, "
        f"variant={args.variant}, encoding={enc}, {args.samples} "
        + ("codebook" if args.samples == 1 else "codebooks")
    )
    print(f"{'d':>6} {'precision':>9} {'recall':>7} {'F1':>7} {'exact':>6}")
    for p in rows:
        print(f"{p.d:>6} {p.precision:>9.4f} {p.recall:>7.4f} {p.f1:>7.4f} {p.p_exact:>6.2f}")
    need = capacity.required_dim(grammar, args.length, args.target_f1, predictions=made, **kw)
    if need is None:
        top = capacity.DIM_GRID[-1]
        print(f"no d up to {top} is predicted to reach F1 >= {args.target_f1:g}")
    else:
        print(
            f"d needed for F1 >= {args.target_f1:g}: {need} (the smallest of the grid "
            "64 * 2^(k/4) predicted to reach it)"
        )
    print(f"({time.perf_counter() - t0:.1f} s, no D-CYK run)")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    _print_charts(args)
    if args.repro_sentences == 0:
        print(f"\ndemo finished in {time.perf_counter() - t0:.1f} s")
        return 0
    config = ExperimentConfig(
        grammars=DEMO_GRID.grammars,
        dims=tuple(args.repro_dims),
        variants=DEMO_GRID.variants,
        orders=DEMO_GRID.orders,
        sentences=args.repro_sentences,
        max_len=DEMO_GRID.max_len,
    )
    out = Path(args.out)
    try:
        results = out / f"results-{config.hash()[:12]}.jsonl"
    except (GrammarError, OSError) as exc:
        raise UsageError(str(exc)) from exc
    print(
        f"\n=== a small reproduction of the paper's experiments: {config.sentences} G0 "
        f"sentences of length {config.min_len}..{config.max_len}, d in {list(config.dims)}, "
        f"variants {', '.join(config.variants)}"
    )
    _run_grid(config, results, args)
    records = load_records(results)
    print()
    print(summary_table(records))
    print("(micro P/R/F1: pooled counts, 95% bootstrap CI; macro F1: mean, 95% t CI)")
    _draw(records, out, studies=("a", "b"), max_len=config.max_len)
    print(
        f"the paper's full grid: fastdcyk experiment --out results.jsonl "
        f"(defaults: {len(PAPER_GRAMMARS)} grammars, d in {list(PAPER_DIMS)}); "
        "see docs/results.md"
    )
    print(f"demo finished in {time.perf_counter() - t0:.1f} s")
    return 0


#: Exit status when the reader of stdout has gone (``fastdcyk ... | head``): 128 + SIGPIPE,
#: as for a process that a broken pipe ends.
EXIT_BROKEN_PIPE = 141


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments after the program name (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0 on success, 2 for a bad argument, 1 for a failure at run time, 130 when
        interrupted, :data:`EXIT_BROKEN_PIPE` when the reader of stdout has gone.
    """
    try:
        status = _main(argv)
        sys.stdout.flush()  # a reader that has gone is noticed here, not at exit
    except BrokenPipeError:
        # The reader of stdout closed it (``| head``): stop quietly. Python would report
        # the broken pipe again when it flushes stdout at exit, so point stdout at devnull.
        _stdout_to_devnull()
        return EXIT_BROKEN_PIPE
    return status


def _stdout_to_devnull() -> None:
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (a test's capture)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except UsageError as exc:
        print(f"fastdcyk {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except (MemoryError, FloatingPointError, _RunError) as exc:
        print(f"fastdcyk {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except _Interrupted as exc:
        print(f"fastdcyk {args.command}: {exc}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print(f"fastdcyk {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        raise
    except OSError as exc:
        # A path given on the command line that cannot be used (an --out that is not a
        # folder, a file without permission) is a usage error; other system errors are not.
        if exc.filename is None:
            print(f"fastdcyk {args.command}: error: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 1
        what = exc.strerror or type(exc).__name__
        if isinstance(exc, FileExistsError) and not os.path.isdir(exc.filename):
            what = "exists and is not a folder"
        print(f"fastdcyk {args.command}: error: {exc.filename}: {what}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

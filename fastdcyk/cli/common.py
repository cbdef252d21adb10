"""What the subcommands share: argument types and option groups, grammar loading, the
errors that become exit statuses, running a grid, and the output checks."""

from __future__ import annotations

import argparse
import codecs
import contextlib
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fastdcyk import options
from fastdcyk.cfg.cyk import cyk
from fastdcyk.cfg.grammar import Grammar, GrammarError
from fastdcyk.cfg.metrics import cell_scores
from fastdcyk.checks import check_dim
from fastdcyk.display import format_chart, format_chart_compact
from fastdcyk.experiments import (
    ExperimentConfig,
    ResultsFileError,
    ResultsWriteError,
    read_results,
    run_experiment,
)
from fastdcyk.options import (
    CODEBOOKS,
    DEFAULT_VARIANT,
    ENCODINGS,
    EXECUTORS,
    NAMES,
    ORDERS,
    VARIANTS,
)
from fastdcyk.registry import backends, modes

#: Each variant's own order, for the help: "paper sequential, trace cell".
VARIANT_ORDERS = ", ".join(f"{v} {VARIANTS[v]['order']}" for v in VARIANTS)


class UsageError(Exception):
    """A bad command-line argument (exit status 2)."""


class RunError(Exception):
    """A failure at run time (exit status 1)."""


class Interrupted(Exception):
    """Ctrl-C during a grid; the message says what is kept (exit status 130)."""


def number(text: str, kind: type, what: str) -> int | float:
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None


def checked(check, value):
    """``check(value)`` (a validator of :mod:`fastdcyk.options`), its error as a usage error."""
    try:
        return check(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def dimension(text: str) -> int:
    return checked(check_dim, number(text, int, "the dimension, an integer >= 2"))


def dimension_or_auto(text: str) -> int | str:
    """An integer d >= 2, or "auto" (d chosen by the certificate)."""
    if text.strip().lower() == "auto":
        return "auto"
    return checked(check_dim, number(text, int, "the dimension, an integer >= 2 or 'auto'"))


def threshold(text: str) -> float:
    return checked(options.check_threshold, number(text, float, "a number in (0, 1)"))


def beta(text: str) -> float:
    return checked(options.check_beta, number(text, float, "a finite number > 0"))


def encoding_name(text: str) -> str:
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
        type=encoding_name,
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


def add_option_arguments(
    p: Any,
    names: Sequence[str] = NAMES,
    *,
    allowed: dict[str, Sequence[Any]] | None = None,
    help: dict[str, str] | None = None,
) -> None:
    """An argument ``--name`` for each option of ``names``, as :mod:`fastdcyk.options`
    declares it: its choices (``allowed`` narrows them), its check, its help (the
    declaration's command-line help unless ``help`` gives one). ``--variant`` defaults to
    :data:`~fastdcyk.options.DEFAULT_VARIANT`, every other to None (the variant's choice);
    :func:`option_values` reads them back."""
    allowed, help = allowed or {}, help or {}
    fields = options.DCYKOptions.__dataclass_fields__
    for name in names:
        meta = fields[name].metadata
        flag = "--" + name.replace("_", "-")
        text = help.get(name) or meta["cli"] or meta["doc"].split(". ")[0]
        kw: dict[str, Any] = {"dest": name, "help": text, "default": None}
        values = allowed.get(name, options.choices(name))
        if name == "variant":
            kw["default"] = DEFAULT_VARIANT
        if values is not None:
            kw["choices"] = tuple(values)
        elif fields[name].type in ("bool", bool):
            kw["action"] = argparse.BooleanOptionalAction
        else:
            what = meta["expects"] or f"a number for --{name.replace('_', '-')}"
            kw["type"] = _checked_number(name, meta["check"], what)
        p.add_argument(flag, **kw)


def _checked_number(name: str, check: Any, what: str) -> Any:
    def convert(text: str) -> float | str:
        if text.strip() == "auto":  # the options that take it (beam); the others refuse it
            return checked(check, "auto")
        return checked(check, number(text, float, what))

    convert.__name__ = name  # argparse names the type in its messages
    return convert


def option_values(args: argparse.Namespace) -> dict[str, Any]:
    """The option keywords of the parsed ``args`` (those :func:`add_option_arguments` gave,
    None where not given)."""
    return {name: getattr(args, name) for name in NAMES if hasattr(args, name)}


def add_parse_options(p: argparse.ArgumentParser) -> None:
    """The D-CYK options (every declared one) and the codebook's, shared by the
    subcommands that parse."""
    add_option_arguments(p)
    p.add_argument("--seed", type=nonnegative_int, default=0, help="codebook seed (default 0)")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    p.add_argument(
        "--unitary",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="unitary symbol vectors (default: the variant's choice)",
    )


def int_at_least(text: str, low: int) -> int:
    k = number(text, int, f"an integer >= {low}")
    if k < low:
        raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {k}")
    return k


def nonnegative_int(text: str) -> int:
    return int_at_least(text, 0)


def positive_int(text: str) -> int:
    return int_at_least(text, 1)


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
        type=dimension,
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
        + (f"each variant's own: {VARIANT_ORDERS})" if own_orders else "%(default)s)"),
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
    add_option_arguments(
        g,
        ["readback"],
        help={
            "readback": "the cleanup variant's read-back: 'cancel' (its default: its "
            "candidates solved for by least squares, each cell read from the table less what "
            "was read before it), 'lstsq' (the same from the whole table) or 'matched' (one "
            "matched filter per nonterminal); docs/method.md, section 7"
        },
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
        type=beta,
        default=list(defaults.betas),
        metavar="BETA",
        help="sigmoid slopes (default: %(default)s)",
    )
    g.add_argument(
        "--seeds",
        nargs="+",
        type=nonnegative_int,
        default=list(defaults.seeds),
        metavar="SEED",
        help="codebook seeds (default: %(default)s)",
    )
    g.add_argument(
        "--sentences",
        type=positive_int,
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
        type=positive_int,
        default=defaults.min_len,
        help="shortest sentence (default: %(default)s)",
    )
    g.add_argument(
        "--max-len",
        type=positive_int,
        default=defaults.max_len,
        help="longest sentence (default: %(default)s)",
    )
    g.add_argument(
        "--sentence-seed",
        type=nonnegative_int,
        default=defaults.sentence_seed,
        help="seed of the sentence generator (default: %(default)s)",
    )
    g.add_argument(
        "--threshold",
        type=threshold,
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
        "dask.distributed cluster (needs --scheduler; pip install 'dask[distributed]'). "
        f"Default: {default_executor}, but serial with --backend torch (its only executor)",
    )
    p.set_defaults(default_executor=default_executor)
    r.add_argument("--workers", type=positive_int, help="worker processes (default: one per core)")
    r.add_argument("--scheduler", metavar="ADDRESS", help="dask scheduler, e.g. tcp://host:8786")
    r.add_argument(
        "--backend",
        choices=backends.names(),
        default="numpy",
        help="'numpy': the numpy backend, one sentence at a time per worker (default); "
        "'torch': each task's sentences in batches with PyTorch, on --device, from this "
        "process (pip install torch). The records have the same fields (and in "
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
        type=positive_int,
        help="distinct sentences per task (default: a few seconds of work per task; with "
        "--backend torch, up to an hour of one core's work, at most 256 sentences)",
    )
    r.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="show a progress bar with the ETA (default: on)",
    )


def load_grammar(spec: str, *, encoding: str = "utf-8", to_cnf: bool = False) -> Grammar:
    """A builtin grammar or a grammar file, read as the options say (see
    :func:`add_grammar_file_options`); a grammar not in CNF is converted or refused."""
    try:
        grammar = Grammar.load(spec, cnf="allow", encoding=encoding)
    except GrammarError as exc:
        raise UsageError(grammar_load_error(spec, exc, encoding)) from exc
    except OSError as exc:
        raise UsageError(f"cannot load grammar {spec!r}: {exc}") from exc
    if grammar.is_cnf:
        return grammar
    if not to_cnf:
        raise UsageError(
            f"grammar {spec!r} is not in Chomsky normal form ({non_cnf_rule(grammar)}): "
            "pass --to-cnf to convert it"
        )
    try:
        return grammar.to_cnf()
    except GrammarError as exc:
        raise UsageError(f"cannot convert grammar {spec!r} to Chomsky normal form: {exc}") from exc


def grammar_load_error(spec: str, exc: GrammarError, encoding: str) -> str:
    """The message for a grammar that cannot be read, with the command line's advice."""
    fault = decoding_fault(exc, encoding)
    if fault is None:
        return f"cannot load grammar {spec!r}: {exc}"
    return (
        f"cannot load grammar {spec!r}: {fault}: pass --grammar-encoding latin-1 "
        "(or the file's encoding)"
    )


def decoding_fault(exc: GrammarError, encoding: str) -> str | None:
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


def non_cnf_rule(grammar: Grammar) -> str:
    rule = next(r for r in grammar.rules if not (r.is_unary or r.is_binary))
    return f"its rule {rule} is neither A -> B C nor A -> 'a'"


def parse_kwargs(args: argparse.Namespace) -> dict:
    """The keywords of :func:`fastdcyk.dcyk` that :func:`add_parse_options` gives."""
    return {**option_values(args), "seed": args.seed, "dtype": args.dtype, "unitary": args.unitary}


def report(
    grammar: Grammar, words: Sequence[str], result, out, style: str = "full", gold=None
) -> None:
    """The parse's settings, its decoded chart against symbolic CYK (``style``: "full", or
    "compact": counts, errors and the tree's symbols) and its cell scores."""
    gold = cyk(grammar, words) if gold is None else gold
    o = result.options
    sc = cell_scores(gold, result.chart)
    t = sum(result.timings.values())
    mode = o.mode
    print(
        f"D-CYK, variant={o.variant} (gate={o.gate}, "
        + (f"readback={o.readback}, " if mode.chooses_readback else "")
        + (f"decoder={o.decoder}, " if modes.reader_of(o.readback) is None else "")
        + f"order={o.order}, encoding={o.encoding}, beta={o.beta:g}, "
        f"threshold={o.threshold:g}), "
        f"d={result.codebook.d}, "
        f"{result.codebook.dtype}: {t:.2f} s",
        file=out,
    )
    if result.dimension is not None and result.dimension.chosen:
        print(f"d chosen: {result.dimension.reason}", file=out)
    if result.certificate is not None:
        suspects = result.suspect_cells()
        bound = 1.0 - result.confidence
        verdict = (
            "sure (under the reads' noise model, the chance that any decision is wrong is "
            + (f"at most {bound:.1e})" if bound > 1e-12 else "below 1e-12)")
            if result.sure
            else f"{len(suspects)} suspect cell(s), the lowest {suspects[0]}: the chart may "
            "be wrong there"
        )
        print(f"certificate: {verdict}", file=out)
    if style == "compact":
        tree = result.tree(cnf=True)
        spans = () if tree is None else tree.spans()
        print(format_chart_compact(result.chart, words, gold, spans), file=out)
    else:
        chart = format_chart(result.chart, words, gold=gold, nonterminals=grammar.nonterminals)
        print(chart, file=out)
    print(f"cells: {sc}", file=out)


def echo(message: str) -> None:
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
    record = backends.get(backend)
    if device is not None and not record.takes_device:
        able = " or ".join(
            f"--backend {b.name}" for b in backends.BACKENDS.values() if b.takes_device
        )
        raise UsageError(
            f"--device {device} is only used with {able} (the {backend} backend computes on "
            f"the CPU): add {able}, or leave out --device"
        )
    if record.batched and executor not in (None, "serial"):
        raise UsageError(
            f"--backend {backend} runs with --executor serial only, not {executor}: its "
            "batches run on one device from this process (one process per GPU); leave out "
            "--executor (or give --executor serial)"
        )
    if executor is None:
        executor = "serial" if record.batched else getattr(args, "default_executor", "process")
    return {"executor": executor, "backend": backend, "device": device}


def run_grid(
    config: ExperimentConfig, out: Path, args: argparse.Namespace, dims_option: str = "--dims"
) -> None:
    """Run a grid for a subcommand, turning failures into the CLI's exit statuses.

    ``dims_option``: the subcommand's option for the dimensions, which a memory error names.
    """
    how = run_options(args)
    try:
        summary = run_experiment(
            config,
            out,
            workers=args.workers,
            scheduler=getattr(args, "scheduler", None),
            batch_size=getattr(args, "batch_size", None),
            progress=args.progress,
            echo=echo,
            **how,
        )
    except (KeyboardInterrupt, SystemError) as exc:
        if not is_interrupt(exc):
            raise
        done = count_records(out)
        raise Interrupted(
            f"interrupted: {done} records are safe in {out}; rerun the same command to resume"
        ) from None
    except ResultsWriteError as exc:
        raise RunError(str(exc.strerror)) from exc
    except MemoryError as exc:
        raise MemoryError(f"{exc} (the dimensions: {dims_option})") from None
    except OSError as exc:  # a dask scheduler that cannot be reached, for instance
        raise RunError(f"{type(exc).__name__}: {exc}") from exc
    except ImportError as exc:
        raise UsageError(str(exc)) from exc
    except (ValueError, GrammarError, ResultsFileError) as exc:
        raise UsageError(str(exc)) from exc
    where = f" by the {summary.backend} backend on {summary.device}" if summary.device else ""
    print(
        f"{summary.written} records written{where} in {summary.seconds:.1f} s "
        f"({summary.resumed} were already there); {out}: "
        f"{summary.resumed + summary.written}/{summary.total} records"
    )


def is_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is Ctrl-C: a KeyboardInterrupt, or the SystemError that CPython raises
    when the interrupt lands inside a compiled (Numba) kernel ("returned a result with an
    exception set"), which carries the KeyboardInterrupt as its cause or context."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return False


def count_records(path: Path) -> int:
    try:
        return len(read_results(path).records)
    except (ResultsFileError, OSError):
        return 0


def check_out_file(option: str, path: Path) -> None:
    """A usage error unless ``path`` can be a regular file that is created or appended to
    (tried: the file opened for appending, or a file created and removed beside it)."""
    if path.exists() and not path.is_file():
        raise UsageError(
            f"{option} {path}: not a regular file (give a file path, e.g. results.jsonl)"
        )
    if path.exists():
        try:
            open(path, "ab").close()  # appending nothing changes nothing
        except OSError as exc:
            raise UsageError(f"{option} {path}: cannot write to it ({exc.strerror})") from None
        return
    check_out_folder(option, path.parent, named=path)


def check_out_folder(option: str, path: Path, *, named: Path | None = None) -> None:
    """A usage error unless files can be written into the folder ``path``, before any work.

    Tried, not guessed: the missing folders are created, a file is created in ``path`` and
    removed, and the folders created are removed again (nothing is left behind).
    ``named``: the file the option names, when ``path`` is its folder (for the message).
    """
    label = path if named is None else named
    for folder in (path, *path.parents):
        if folder.exists():
            if not folder.is_dir():
                raise UsageError(f"{option} {label}: {folder} exists and is not a folder")
            break
    created: list[Path] = []
    try:
        for folder in (*reversed(path.parents), path):
            if not folder.exists():
                folder.mkdir()
                created.append(folder)
        handle, probe = tempfile.mkstemp(dir=path, prefix=".fastdcyk-probe-")
        os.close(handle)
        os.remove(probe)
    except OSError as exc:
        where = "there" if named is None else f"into {path}"
        raise UsageError(
            f"{option} {label}: cannot write {where} ({exc.strerror or exc}); give a folder "
            "you can write to"
        ) from None
    finally:
        for folder in reversed(created):
            with contextlib.suppress(OSError):
                folder.rmdir()


def draw(records: list, out: Path, **kwargs) -> list[Path]:
    from fastdcyk.plots.files import FigureWriteError
    from fastdcyk.plots.studies import plot_studies

    try:
        paths = plot_studies(records, out, **kwargs)
    except FigureWriteError as exc:
        raise UsageError(exc.strerror) from exc
    print(f"figures written to {out.resolve()}{os.sep}: " + ", ".join(p.name for p in paths))
    if "c" in kwargs.get("studies", "abc") and not any("study_c" in p.name for p in paths):
        print(
            "(no study (c) figure: it compares grammars at one d, and no d of these results "
            "has two grammars or more; run the experiment on G1..G4 too, as "
            "docs/tutorials/reproduce.md does)"
        )
    return paths

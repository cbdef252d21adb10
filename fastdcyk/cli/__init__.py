"""The ``fastdcyk`` command line: one module per subcommand (:mod:`.parse`,
:mod:`.experiment`, :mod:`.plot`, :mod:`.capacity`, :mod:`.demo`, :mod:`.treebank`,
:mod:`.learn`), what they share in :mod:`.common`.

Subcommands:

- ``fastdcyk demo``: D-CYK (the three variants) on the paper's running example and a few
  G0 sentences, each decoded chart printed against the symbolic CYK chart; then a small
  reproduction of the paper's experiments (G0, 40 sentences, three dimensions, the paper's
  two variants) with its table and figures, written to ``./fastdcyk-demo/``.
- ``fastdcyk parse --grammar G0 --dim 1024 fish swim fish``: one sentence, decoded chart
  beside the symbolic one with every disagreement marked (a progress bar on a terminal when
  the parse runs longer than a few seconds).
- ``fastdcyk experiment``: a resumable grid of grammars x dimensions x variants (x order x
  beta x codebook seed) over generated sentences (the paper's setup by default), appended to a
  JSON Lines results file, on a process pool or a dask cluster, or (``--backend torch
  --device cuda``) in batches on one GPU; a summary table at the end.
- ``fastdcyk plot RESULTS...``: the paper's three figures (PNG and SVG) and their tables.
- ``fastdcyk treebank --train FILES --test FILES [--dim D ...]``: a PCFG induced from
  bracketed trees, evaluated with evalb's labelled brackets (symbolic Viterbi, and D-CYK at
  the dimensions given).
- ``fastdcyk learn --strings FILE [--labels FILE] --nonterminals N --out grammar.cfg``: a
  grammar learned from strings through the D-CYK table (``--checkpoint DIR`` and
  ``--resume`` continue a killed run).

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
import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any

from fastdcyk.cfg.grammar import GrammarWarning
from fastdcyk.cli import capacity, demo, experiment, learn, parse, plot, treebank
from fastdcyk.cli.common import (
    Interrupted,
    RunError,
    UsageError,
    add_grid_options,
    add_run_options,
    is_interrupt,
    run_options,
)
from fastdcyk.cli.demo import DEMO_GRID
from fastdcyk.cli.experiment import config_from_args
from fastdcyk.cli.parse import PARSE_PROGRESS_DELAY

__all__ = [
    "DEMO_GRID",
    "PARSE_PROGRESS_DELAY",
    "UsageError",
    "add_grid_options",
    "add_run_options",
    "build_parser",
    "config_from_args",
    "main",
    "run_options",
]


def build_parser() -> argparse.ArgumentParser:
    """The parser of every subcommand."""
    parser = argparse.ArgumentParser(
        prog="fastdcyk",
        description="D-CYK: CYK parsing over distributed (holographic) representations.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for module in (demo, parse, experiment, plot, capacity, treebank, learn):
        module.add_parser(sub)
    return parser


#: Exit status when the reader of stdout has gone (``fastdcyk ... | head``): 128 + SIGPIPE,
#: as for a process that a broken pipe ends.
EXIT_BROKEN_PIPE = 141


def reference_markdown(width: int = 100) -> str:
    """The command line's reference page (docs/cli.md): every subcommand's ``--help``, as
    argparse prints it at ``width`` columns."""
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)  # argparse wraps its help to the terminal's width
    try:
        parser = build_parser()
        (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parts = [
            "# The command line\n",
            "Every subcommand's help, as `fastdcyk SUBCOMMAND --help` prints it (written from",
            "the parser at each build of the documentation).\n",
            "```text",
            parser.format_help().rstrip(),
            "```\n",
        ]
        for name, command in sub.choices.items():
            parts += [f"## fastdcyk {name}\n", "```text", command.format_help().rstrip(), "```\n"]
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old
    return "\n".join(parts)


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


def _show_warning(command: str) -> Any:
    """``warnings.showwarning`` for the command line: a grammar's warning as one line
    ("fastdcyk parse: warning: ..."), other warnings as Python shows them."""
    default = warnings.showwarning

    def show(message: Any, category: type, filename: str, lineno: int, *rest: Any) -> None:
        if issubclass(category, GrammarWarning):
            print(f"fastdcyk {command}: warning: {message}", file=sys.stderr)
        else:
            default(message, category, filename, lineno, *rest)

    return show


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
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning(args.command)
            return args.func(args)
    except UsageError as exc:
        print(f"fastdcyk {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except (MemoryError, FloatingPointError, RunError) as exc:
        print(f"fastdcyk {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except Interrupted as exc:
        print(f"fastdcyk {args.command}: {exc}", file=sys.stderr)
        return 130
    except (KeyboardInterrupt, SystemError) as exc:
        if not is_interrupt(exc):  # a SystemError of another cause is a bug: show it
            raise
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

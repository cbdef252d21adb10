"""``fastdcyk parse --input FILE``: a corpus in, trees out (:func:`fastdcyk.parse_corpus`).

The options of ``fastdcyk parse`` that only a corpus takes (:func:`add_corpus_options`) and
what they do (:func:`run_corpus`): every line of the input parsed, on ``--workers`` processes
or a Dask cluster, into a JSON Lines log (``--output``) that ``--resume`` continues, or onto
the standard output as the lines finish; ``--format brackets`` gives one tree a line in input
order.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from fastdcyk.cli.common import (
    Interrupted,
    RunError,
    UsageError,
    check_out_file,
    is_interrupt,
    load_grammar,
    parse_kwargs,
    positive_int,
)
from fastdcyk.corpus import CorpusLogError, parse_corpus

__all__ = ["FORMATS", "add_corpus_options", "run_corpus"]

#: What ``--format`` writes: the records (JSON Lines), or one tree a line.
FORMATS = ("jsonl", "brackets")


def add_corpus_options(p: argparse.ArgumentParser) -> None:
    """The options of ``fastdcyk parse`` for a file of sentences."""
    c = p.add_argument_group(
        "a corpus (--input)",
        "parse every line of a file (one sentence a line, whitespace-separated words): one "
        "record or tree per input line, the input's order kept",
    )
    c.add_argument(
        "--input",
        metavar="FILE",
        help="the sentences, one a line ('-': the standard input); instead of WORDS",
    )
    c.add_argument(
        "--output",
        metavar="FILE",
        help="write here (default: none: the records go to the standard output as lines "
        "finish). JSON Lines: a "
        "header, then one record per input line (index, words, status, tree, d, sure, "
        "log_prob, seconds, message), appended as lines finish and put back in input order "
        "at the end; --resume continues it after a kill",
    )
    c.add_argument(
        "--format",
        choices=FORMATS,
        default="jsonl",
        help="'jsonl' (the records; the default) or 'brackets': one tree a line in the "
        "Penn Treebank's bracketed form, in input order, '()' for a line without one, so "
        "that the trees line up with the sentences (with --output FILE, the log --resume "
        "reads is FILE.jsonl beside it)",
    )
    c.add_argument(
        "--workers",
        type=positive_int,
        default=1,
        help="worker processes, one thread each (default 1: this process); their memory is "
        "checked first",
    )
    c.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="a Dask scheduler (tcp://host:8786): parse on its cluster instead "
        "(pip install 'dask[distributed]')",
    )
    c.add_argument(
        "--resume",
        action="store_true",
        help="continue --output: parse the lines it lacks (same grammar, options, input)",
    )
    c.add_argument(
        "--gold",
        metavar="TREES",
        help="gold trees, one per input line (bracketed, one a line, or a .mrg file): print "
        "evalb's labelled bracket precision, recall and F1 of the trees",
    )
    c.add_argument(
        "--input-encoding",
        metavar="CODEC",
        default="utf-8",
        help="the input's encoding (default utf-8); a line that is not its text is a 'bad line'",
    )


def _log_path(args: argparse.Namespace) -> Path | None:
    if args.output is None:
        return None
    out = Path(args.output)
    return out.with_name(out.name + ".jsonl") if args.format == "brackets" else out


def run_corpus(args: argparse.Namespace) -> int:
    """``fastdcyk parse --input``: the corpus parsed; a summary on the standard error."""
    if args.words:
        raise UsageError("give the sentence's WORDS or --input FILE, not both")
    if args.resume and args.output is None:
        raise UsageError("--resume continues an --output file: give the one to continue")
    for flag in ("plot", "k"):
        if getattr(args, flag, None):
            raise UsageError(f"--{flag} draws one sentence's parse: leave it out with --input")
    if args.input == "-":
        source: Any = sys.stdin.buffer.read()
    else:
        path = Path(args.input)
        if not path.is_file():
            raise UsageError(f"--input {args.input}: no such file")
        source = path
    out = _log_path(args)
    brackets = None
    if args.output is not None:
        check_out_file("--output", Path(args.output))
        if args.format == "brackets":
            brackets = Path(args.output)
    if args.gold is not None and not Path(args.gold).exists():
        raise UsageError(f"--gold {args.gold}: no such file")
    grammar = load_grammar(args.grammar, encoding=args.grammar_encoding, to_cnf=args.to_cnf)
    options = {k: v for k, v in parse_kwargs(args).items() if v is not None}
    if args.dim is not None:
        options["d"] = args.dim
    if args.max_dim is not None:
        options["max_d"] = args.max_dim
    options["unknown"] = args.unknown
    pending: dict[int, str] = {}
    state = {"next": 0}

    def emit(records: list[dict[str, Any]]) -> None:
        if out is not None:
            return  # written to the file
        if args.format == "jsonl":
            for r in records:
                print(json.dumps(r, ensure_ascii=False), flush=True)
            return
        for r in records:  # trees in input order, as soon as the lines before are done
            pending[r["index"]] = r["tree"] or "()"
        while state["next"] in pending:
            print(pending.pop(state["next"]), flush=True)
            state["next"] += 1

    def echo(line: str) -> None:
        print(f"fastdcyk: {line}", file=sys.stderr, flush=True)

    try:
        summary = parse_corpus(
            grammar,
            source,
            out,
            workers=args.workers,
            scheduler=args.scheduler,
            resume=args.resume,
            gold=args.gold,
            brackets=brackets,
            progress=args.progress,
            encoding=args.input_encoding,
            echo=echo,
            on_records=emit,
            **options,
        )
    except (KeyboardInterrupt, SystemError) as exc:
        if not is_interrupt(exc):
            raise
        kept = f"the lines parsed are safe in {out}; add --resume to go on" if out else ""
        raise Interrupted(f"interrupted{': ' + kept if kept else ''}") from None
    except CorpusLogError as exc:
        raise UsageError(str(exc)) from exc
    except (ValueError, TypeError, ImportError) as exc:
        raise UsageError(str(exc)) from exc
    except MemoryError as exc:
        raise RunError(str(exc)) from exc
    except OSError as exc:
        raise RunError(f"{type(exc).__name__}: {exc}") from exc
    print(f"fastdcyk: {summary}", file=sys.stderr)
    return 0

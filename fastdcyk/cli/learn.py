"""``fastdcyk learn``: a grammar learned from strings through the D-CYK table
(:func:`fastdcyk.learn_grammar`), written in the text format ``Grammar.from_file`` reads.

Input files, UTF-8: ``--strings``, one sentence a line (whitespace-separated words);
``--labels``, one label a line (1 or 0, true or false, yes or no, + or -); ``--brackets``,
one line per sentence, its unlabelled spans as ``i-j`` (the words i..j-1, 0-based),
separated by spaces (an empty line: none).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from fastdcyk.cli.common import (
    Interrupted,
    RunError,
    UsageError,
    check_out_file,
    dimension,
    is_interrupt,
    nonnegative_int,
    number,
    positive_int,
)
from fastdcyk.learn import learn_grammar

__all__ = ["add_parser", "read_brackets", "read_labels", "read_strings"]

#: The words ``--labels`` reads as True and as False (any case).
TRUE, FALSE = ("1", "true", "yes", "+", "y", "t"), ("0", "false", "no", "-", "n", "f")


def _lines(option: str, path: str) -> list[str]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{option} {path}: not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise UsageError(f"{option} {path}: {exc.strerror or exc}") from None
    return text.splitlines()


def read_strings(path: str) -> list[list[str]]:
    """The sentences of ``--strings``: one a line; an empty line is refused."""
    lines = _lines("--strings", path)
    out = []
    for k, line in enumerate(lines, 1):
        words = line.split()
        if not words:
            raise UsageError(
                f"--strings {path}: line {k} is empty (one sentence a line, every line a sentence)"
            )
        out.append(words)
    if not out:
        raise UsageError(f"--strings {path}: no sentences (one a line)")
    return out


def read_labels(path: str, count: int) -> list[bool]:
    """The labels of ``--labels``: one a line, as many as sentences."""
    lines = [line.strip() for line in _lines("--labels", path)]
    while lines and not lines[-1]:
        lines.pop()
    out = []
    for k, line in enumerate(lines, 1):
        word = line.lower()
        if word not in TRUE + FALSE:
            raise UsageError(
                f"--labels {path}: line {k} is {line!r}: a label is 1 or 0 (true/false, "
                "yes/no, +/-), one a line"
            )
        out.append(word in TRUE)
    if len(out) != count:
        raise UsageError(
            f"--labels {path}: {len(out)} labels for {count} sentences: one label a line, "
            "one line per sentence of --strings"
        )
    return out


def read_brackets(path: str, count: int) -> list[list[tuple[int, int]]]:
    """The brackets of ``--brackets``: one line per sentence, spans ``i-j``."""
    lines = _lines("--brackets", path)
    while len(lines) > count and not lines[-1].strip():
        lines.pop()
    if len(lines) != count:
        raise UsageError(
            f"--brackets {path}: {len(lines)} lines for {count} sentences: one line per "
            "sentence of --strings (an empty line where it has no brackets)"
        )
    out = []
    for k, line in enumerate(lines, 1):
        spans = []
        for token in line.split():
            i, dash, j = token.partition("-")
            if not (dash and i.isdigit() and j.isdigit()):
                raise UsageError(
                    f"--brackets {path}: line {k} holds {token!r}: a bracket is i-j, the words "
                    "i..j-1 of the sentence (0-based), e.g. 0-2"
                )
            spans.append((int(i), int(j)))
        out.append(spans)
    return out


def _fraction(text: str) -> float:
    x = number(text, float, "a fraction in [0, 1)")
    if not 0 <= x < 1:
        raise argparse.ArgumentTypeError(f"expected a fraction in [0, 1), got {x}")
    return x


def _nonnegative(text: str) -> float:
    x = number(text, float, "a number >= 0")
    if not (math.isfinite(x) and x >= 0):
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {x}")
    return x


def _cmd_learn(args: argparse.Namespace) -> int:
    out = Path(args.out)
    check_out_file("--out", out)
    if args.resume and args.checkpoint is None:
        raise UsageError("--resume continues a checkpoint: give --checkpoint DIR too")
    strings = read_strings(args.strings)
    labels = None if args.labels is None else read_labels(args.labels, len(strings))
    brackets = None if args.brackets is None else read_brackets(args.brackets, len(strings))
    kw: dict[str, Any] = dict(
        nonterminals=args.nonterminals,
        start=args.start,
        brackets=brackets,
        seed=args.seed,
        max_steps=args.steps,
        restarts=args.restarts,
        method=args.method,
        gate=args.gate,
        d=args.dim,
        dtype=args.dtype,
        l1=args.l1,
        held_out=args.held_out,
        checkpoint=args.checkpoint,
        resume=args.resume,
    )
    try:
        learned = learn_grammar(strings, labels, **kw)
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from exc
    except ImportError as exc:
        raise RunError(str(exc)) from exc
    except (KeyboardInterrupt, SystemError) as exc:
        if not is_interrupt(exc):
            raise
        where = (
            f"; the checkpoint in {args.checkpoint} keeps the steps done: rerun with --resume"
            if args.checkpoint
            else " (nothing kept: --checkpoint DIR keeps a run's steps)"
        )
        raise Interrupted("interrupted" + where) from None
    learned.save(out)
    rules = 0 if learned.grammar is None else len(learned.grammar)
    print(
        f"learned {rules} rules (threshold {learned.threshold:.3g}; accuracy "
        f"{learned.held_out_accuracy:.3f} held out, {learned.train_accuracy:.3f} trained on; "
        f"{learned.seconds:.0f} s): {out}"
    )
    if learned.grammar is not None:
        print(learned.grammar.to_string())
    return 0


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "learn",
        help="learn a grammar from strings through the D-CYK table",
        description="Learn a CNF grammar from strings (and, optionally, their labels and "
        "unlabelled brackets) by gradient through the D-CYK table (fastdcyk.learn_grammar), "
        "and write it in the grammar text format. --strings: one sentence a line; --labels: "
        "one label a line (1/0, true/false, yes/no, +/-); --brackets: one line per sentence, "
        "spans i-j (words i..j-1, 0-based) separated by spaces.",
    )
    p.add_argument("--strings", metavar="FILE", required=True, help="one sentence a line")
    p.add_argument(
        "--labels",
        metavar="FILE",
        help="one label a line (default: none, every string in the language)",
    )
    p.add_argument("--brackets", metavar="FILE", help="one line of spans i-j per sentence")
    p.add_argument(
        "--nonterminals",
        type=positive_int,
        required=True,
        metavar="N",
        help="how many nonterminals the grammar may use (the start symbol among them)",
    )
    p.add_argument("--out", metavar="FILE", required=True, help="where the grammar is written")
    p.add_argument(
        "--checkpoint",
        metavar="DIR",
        help="keep the run's state here (every 10 steps): a killed run continues with --resume",
    )
    p.add_argument("--resume", action="store_true", help="continue the run in --checkpoint")
    p.add_argument("--start", default="S", help="the start symbol's name (default S)")
    p.add_argument("--seed", type=nonnegative_int, default=0, help="seed (default 0)")
    p.add_argument(
        "--steps", type=positive_int, default=600, help="training steps per restart (default 600)"
    )
    p.add_argument(
        "--restarts",
        type=positive_int,
        default=1,
        help="independent starts; the best on the held-out strings wins (default 1)",
    )
    p.add_argument(
        "--method",
        choices=("table", "chart"),
        default="table",
        help="through the D-CYK table (default), or the control: the same gates over a "
        "symbolic chart",
    )
    p.add_argument(
        "--gate",
        choices=("sigmoid", "tanh"),
        default="sigmoid",
        help="what a detection writes: the trace gate's sigmoid (default sigmoid), or "
        "tanh(s), 0 where nothing is derived",
    )
    p.add_argument("--dim", type=dimension, default=128, metavar="D", help="d (default 128)")
    p.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    p.add_argument(
        "--l1", type=_nonnegative, default=0.01, help="penalty on the mean weight (default 0.01)"
    )
    p.add_argument(
        "--held-out",
        type=_fraction,
        default=0.2,
        metavar="FRACTION",
        help="strings held out to choose the threshold and the restart (default 0.2)",
    )
    p.set_defaults(func=_cmd_learn)
    return p

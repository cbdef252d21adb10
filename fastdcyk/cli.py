"""The ``fastdcyk`` command line.

Subcommands:

- ``fastdcyk demo``: D-CYK (both variants) on the paper's running example and a few G0
  sentences, each decoded chart printed against the symbolic CYK chart.
- ``fastdcyk parse --grammar G0 --dim 1024 fish swim fish``: one sentence, decoded chart
  beside the symbolic one with every disagreement marked.

Bad arguments exit with status 2 and a message that says what was wrong; a parse that fails
at run time (memory, non-finite values) exits with status 1.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

import numpy as np

from fastdcyk.cyk import cyk
from fastdcyk.decode import DECODERS
from fastdcyk.display import format_chart
from fastdcyk.engine import DEFAULT_BETA, DEFAULT_THRESHOLD, GATES, VARIANTS, dcyk
from fastdcyk.generate import generate
from fastdcyk.grammar import Grammar, GrammarError
from fastdcyk.metrics import cell_scores

__all__ = ["build_parser", "main"]


class UsageError(Exception):
    """A bad command-line argument (exit status 2)."""


def _dimension(text: str) -> int:
    try:
        d = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"the dimension must be an integer, got {text!r}"
        ) from None
    if d < 2:
        raise argparse.ArgumentTypeError(f"the dimension must be >= 2, got {d}")
    return d


def _probability(text: str) -> float:
    try:
        p = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}") from None
    if not 0.0 < p < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number strictly between 0 and 1, got {p}")
    return p


def _positive(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not (x > 0 and np.isfinite(x)):
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {x}")
    return x


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
        "--unary-mask",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="mask the unary P_A to its diagonal",
    )
    p.add_argument(
        "--beta", type=_positive, default=None, help=f"sigmoid slope (default {DEFAULT_BETA:g})"
    )
    p.add_argument(
        "--threshold",
        type=_probability,
        default=None,
        help=f"decoder threshold on sigma (default {DEFAULT_THRESHOLD})",
    )
    p.add_argument("--seed", type=int, default=0, help="codebook seed (default 0)")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    p.add_argument(
        "--unitary",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="unitary symbol vectors (default: the variant's choice)",
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
        help="D-CYK on the running example and a few G0 sentences, against symbolic CYK",
        description="Parse the paper's running example and a few G0 sentences with both "
        "variants, printing each decoded chart against the symbolic CYK chart.",
    )
    demo.add_argument("--dim", type=_dimension, default=1024, help="dimension d (default 1024)")
    demo.add_argument("--sentences", type=int, default=3, help="G0 sentences (default 3)")
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
    parse.add_argument("--dim", type=_dimension, default=1024, help="dimension d (default 1024)")
    add_parse_options(parse)
    parse.add_argument("words", nargs="+", help="the sentence, one word per argument")
    parse.set_defaults(func=_cmd_parse)
    return parser


def _load_grammar(spec: str) -> Grammar:
    try:
        return Grammar.load(spec)
    except (GrammarError, OSError) as exc:
        raise UsageError(f"cannot load grammar {spec!r}: {exc}") from exc


def _parse_kwargs(args: argparse.Namespace) -> dict:
    return {
        "variant": args.variant,
        "gate": args.gate,
        "decoder": args.decoder,
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
        f"D-CYK, variant={o.variant} (gate={o.gate}, decoder={o.decoder}, beta={o.beta:g}, "
        f"threshold={o.threshold:g}), d={result.codebook.d}, {result.codebook.dtype}: "
        f"{t:.2f} s",
        file=out,
    )
    print(format_chart(result.chart, words, gold=gold, nonterminals=grammar.nonterminals), file=out)
    print(f"cells: {sc}", file=out)


def _cmd_parse(args: argparse.Namespace) -> int:
    grammar = _load_grammar(args.grammar)
    words = args.words
    try:
        gold = cyk(grammar, words, strict=True)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    print(f"sentence: {' '.join(words)}   grammar: {args.grammar}")
    print("symbolic CYK:")
    print(format_chart(gold, words, nonterminals=grammar.nonterminals))
    try:
        result = dcyk(grammar, words, d=args.dim, **_parse_kwargs(args))
    except (KeyError, ValueError) as exc:
        raise UsageError(str(exc)) from exc
    _report(grammar, words, result, sys.stdout)
    print("(+A: decoded but not in the CYK chart; -A: in the CYK chart but not decoded)")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    if args.sentences < 0:
        raise UsageError(f"--sentences must be >= 0, got {args.sentences}")
    t0 = time.perf_counter()
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
    print(f"demo finished in {time.perf_counter() - t0:.1f} s")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except UsageError as exc:
        print(f"fastdcyk {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except (MemoryError, FloatingPointError) as exc:
        print(f"fastdcyk {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"fastdcyk {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""``fastdcyk capacity``: predicted F1 against d, and the d a grammar needs, without parsing."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from fastdcyk import capacity, options
from fastdcyk.cfg.generate import generate
from fastdcyk.cfg.grammar import Grammar
from fastdcyk.cli.common import (
    UsageError,
    add_grammar_file_options,
    add_option_arguments,
    dimension,
    load_grammar,
    nonnegative_int,
    option_values,
    positive_int,
)
from fastdcyk.engine.cost import duration
from fastdcyk.hrr.memory import format_bytes
from fastdcyk.options import DEFAULT_VARIANT, resolve
from fastdcyk.registry import modes


def _probability_or_one(text: str) -> float:
    try:
        p = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1], got {text!r}") from None
    if not 0.0 < p <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1], got {p}")
    return p


#: The capacity model shows its progress bar (on a terminal) once a dimension has run this long.
PROGRESS_DELAY = 2.0


def _cmd_capacity(args: argparse.Namespace) -> int:
    grammar = load_grammar(args.grammar, encoding=args.grammar_encoding, to_cnf=args.to_cnf)
    given = option_values(args)
    max_cells = None if args.max_cells == 0 else args.max_cells
    kw = dict(
        given, samples=args.samples, sentences=args.sentences, seed=args.seed, max_cells=max_cells
    )
    t0 = time.perf_counter()
    dims = sorted(set(args.dims))
    try:
        opt = resolve(**given)
        # a length the grammar does not derive is an error before anything is printed
        generate(grammar, 1, min_len=args.length, max_len=args.length, seed=args.seed)
        need = capacity.estimate_memory(grammar, args.length, max(dims), **given)
        seconds = sum(capacity.estimate_seconds(grammar, args.length, d, **kw) for d in dims)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    drawn = capacity.sentences_drawn(args.length, args.sentences, args.samples, max_cells)
    mode = opt.mode
    how = f"encoding={opt.encoding}"
    if mode.chooses_readback:
        how += f", readback={opt.readback}"
    memory = format_bytes(need)
    fewer = ""
    if drawn < args.sentences:
        fewer = f" (of the {args.sentences} asked: {max_cells} cells in all, --max-cells)"
    print(
        f"capacity model: {args.grammar}, {drawn} "
        + ("sentence" if drawn == 1 else "sentences")
        + f" of length {args.length}{fewer}, variant={args.variant}, {how}, {args.samples} "
        + ("codebook" if args.samples == 1 else "codebooks")
        + f"; about {memory} of memory and {duration(seconds)} for {len(dims)} "
        + ("dimension" if len(dims) == 1 else "dimensions")
        + (", more if the search for the d needed tries others" if len(dims) > 1 else ""),
        flush=True,
    )
    made: dict = {}
    progress = PROGRESS_DELAY if sys.stderr.isatty() else False
    header = False
    try:
        for d in dims:
            p = capacity.predict(grammar, args.length, d, progress=progress, **kw)
            made[d] = p
            if not header:  # after the first dimension: a bad option prints nothing
                print(f"{'d':>6} {'precision':>9} {'recall':>7} {'F1':>7} {'exact':>6}")
                header = True
            print(
                f"{p.d:>6} {p.precision:>9.4f} {p.recall:>7.4f} {p.f1:>7.4f} {p.p_exact:>6.2f}",
                flush=True,
            )
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    top = max(args.dims) if args.max_dim is None else args.max_dim
    if top < capacity.DIM_GRID[0]:  # the search runs on its grid, from 64
        print(
            f"(no search for the d needed: it runs over d = {capacity.DIM_GRID[0]} * "
            f"2^(k/4), and would stop at d = {top} (--max-dim, or the largest of --dims): "
            f"give --max-dim {capacity.DIM_GRID[0]} or more for it)"
        )
        print(f"({time.perf_counter() - t0:.1f} s, no D-CYK run)")
        return 0
    try:
        need = capacity.required_dim(
            grammar, args.length, args.target_f1, predictions=made, max_dim=top, **kw
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    if need is None:
        further = (
            f" (--max-dim {capacity.DIM_GRID[-1]} searches further; each d costs more)"
            if top < capacity.DIM_GRID[-1]
            else ""
        )
        print(f"no d up to {top} is predicted to reach F1 >= {args.target_f1:g}{further}")
        if mode is not resolve(DEFAULT_VARIANT).mode:
            print(
                "(on a grammar of many rules per nonterminal the trace detection's noise "
                "grows with the grammar: --variant cleanup, docs/method.md section 6)"
            )
    else:
        there = f"predicted F1 {made[need].f1:.4f} there, " if need in made else ""
        print(
            f"d needed for F1 >= {args.target_f1:g}: {need} ({there}the smallest of the "
            "grid 64 * 2^(k/4) predicted to reach it"
            + ("" if need in dims else "; not among --dims, so not in the table above")
            + ")"
        )
    print(f"({time.perf_counter() - t0:.1f} s, no D-CYK run)")
    return 0


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the subcommand to ``sub`` (the parser's subparsers)."""
    p = sub.add_parser(
        "capacity",
        help="predict D-CYK's F1 against d, and the d a grammar needs, without parsing",
        description="Predict cell precision, recall and F1 of D-CYK for sentences of one "
        "length drawn from the grammar, at a range of dimensions, with the capacity model "
        "(fastdcyk.capacity: symbolic CYK over modelled readouts, no d x d work), and the "
        "smallest d predicted to reach --target-f1.",
    )
    p.add_argument(
        "--grammar",
        default="G0",
        help=f"a grammar file or a built-in name {Grammar.builtin_names()} (default G0)",
    )
    add_grammar_file_options(p)
    p.add_argument("--length", type=positive_int, required=True, help="sentence length")
    p.add_argument(
        "--target-f1", type=_probability_or_one, default=0.99, help="target F1 (default 0.99)"
    )
    # the options the model simulates, and the read-backs it has a model of
    names = ("variant", *capacity.predict.option_names)
    simulated = {r for m in modes.MODES.values() for r in m.modelled_readbacks}
    modelled = tuple(r for r in options.choices("readback") if r in simulated)
    add_option_arguments(
        p,
        names,
        allowed={"readback": modelled},
    )
    p.add_argument(
        "--dims",
        nargs="+",
        type=dimension,
        default=[256, 512, 1024, 2048, 4096],
        metavar="D",
        help="dimensions of the table (default: 256 512 1024 2048 4096)",
    )
    p.add_argument(
        "--max-dim",
        type=dimension,
        metavar="D",
        help="the largest d the search for the d needed tries (default: the largest of --dims; "
        "the grid of the search goes up to 16384)",
    )
    p.add_argument(
        "--sentences", type=positive_int, default=50, help="sentences drawn (default 50)"
    )
    p.add_argument("--samples", type=positive_int, default=2, help="codebook draws (default 2)")
    p.add_argument(
        "--max-cells",
        type=nonnegative_int,
        default=capacity.MAX_CELLS,
        metavar="N",
        help="draw fewer sentences where --sentences x --samples of them would pass N cells, "
        f"at least one per codebook (default {capacity.MAX_CELLS}; 0: no limit)",
    )
    p.add_argument("--seed", type=nonnegative_int, default=0, help="seed (default 0)")
    p.set_defaults(func=_cmd_capacity)
    return p

"""``fastdcyk demo``: the running example and G0 sentences, then a small reproduction."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from fastdcyk.cfg.cyk import cyk
from fastdcyk.cfg.generate import generate
from fastdcyk.cfg.grammar import Grammar, GrammarError
from fastdcyk.cli.common import (
    UsageError,
    check_out_folder,
    dimension,
    draw,
    nonnegative_int,
    positive_int,
    report,
    run_grid,
)
from fastdcyk.display import format_chart
from fastdcyk.engine import dcyk
from fastdcyk.experiments import (
    PAPER_GRID_CORE_HOURS,
    ExperimentConfig,
    load_records,
    summary_table,
)
from fastdcyk.experiments.config import PAPER_VARIANTS
from fastdcyk.options import VARIANTS

#: The demo's small reproduction (G0 only: it draws studies a and b).
#: Sized so that the whole demo takes well under a minute on a slow 2-core machine: the
#: faithful variant in the paper's order costs about 1.8 s per sentence at d = 1024 on such
#: a machine, 0.4 s at d = 512 (docs/performance.md).
DEMO_GRID = ExperimentConfig(
    grammars=("G0",), dims=(64, 256, 512), variants=PAPER_VARIANTS, sentences=40, max_len=6
)


DEMO_CHART_SENTENCES = 2


#: d of the demo's printed charts.
DEMO_CHART_DIM = 512


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
            result = dcyk(grammar, words, d=args.dim, variant=variant, progress=False)
            report(grammar, words, result, sys.stdout)
    print("\n(+A: decoded but not in the CYK chart; -A: in the CYK chart but not decoded)")


def _cmd_demo(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    if args.repro_sentences:  # the folder of the results and figures, before any work
        check_out_folder("--out", Path(args.out))
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
    run_grid(config, results, args, dims_option="--repro-dims")
    records = load_records(results)
    print()
    print(summary_table(records))
    print("(micro P/R/F1: pooled counts, 95% bootstrap CI; macro F1: mean, 95% t CI)")
    draw(records, out, studies=("a", "b"), max_len=config.max_len)
    full = ExperimentConfig()
    print(
        f"the paper's full grid: fastdcyk experiment --out results.jsonl (its defaults: "
        f"{full.sentences:,} G0 sentences of {full.min_len} to {full.max_len} words, "
        f"{len(full.grammars)} grammars, d in {list(full.dims)}): some "
        f"{PAPER_GRID_CORE_HOURS} core-hours, {PAPER_GRID_CORE_HOURS / 2:g} hours on 2 cores "
        "(--executor dask spreads it over a cluster); see docs/results.md"
    )
    print(f"demo finished in {time.perf_counter() - t0:.1f} s")
    return 0


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the subcommand to ``sub`` (the parser's subparsers)."""
    p = sub.add_parser(
        "demo",
        help="D-CYK on the running example and G0 sentences, then a small reproduction",
        description="Parse the paper's running example and a few G0 sentences with the "
        "three variants (paper, trace, cleanup), printing each decoded chart against the "
        "symbolic CYK chart; then run a small reproduction of the paper's experiments (G0, "
        "the paper's two variants, paper and trace, a few dimensions), print its table and "
        "write its figures.",
    )
    p.add_argument(
        "--dim",
        type=dimension,
        default=DEMO_CHART_DIM,
        help=f"d of the printed charts (default {DEMO_CHART_DIM})",
    )
    p.add_argument(
        "--sentences",
        type=nonnegative_int,
        default=DEMO_CHART_SENTENCES,
        help=f"G0 sentences whose charts are printed (default {DEMO_CHART_SENTENCES})",
    )
    p.add_argument(
        "--repro-sentences",
        type=nonnegative_int,
        default=DEMO_GRID.sentences,
        help="sentences of the small reproduction (default %(default)s; 0 skips it)",
    )
    p.add_argument(
        "--repro-dims",
        nargs="+",
        type=dimension,
        default=list(DEMO_GRID.dims),
        metavar="D",
        help="dimensions of the small reproduction (default: %(default)s)",
    )
    p.add_argument(
        "--out",
        default="fastdcyk-demo",
        help="folder for the reproduction's results and figures (default ./fastdcyk-demo)",
    )
    p.add_argument("--workers", type=positive_int, help="worker processes (default: one per core)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True)
    p.set_defaults(func=_cmd_demo)
    return p

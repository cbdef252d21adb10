"""``fastdcyk experiment``: a resumable grid of D-CYK runs scored against symbolic CYK."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from fastdcyk.cfg.grammar import GrammarError
from fastdcyk.cli.common import (
    UsageError,
    add_grammar_file_options,
    add_grid_options,
    add_run_options,
    check_out_file,
    check_out_folder,
    draw,
    load_grammar,
    run_grid,
    run_options,
)
from fastdcyk.cli.plot import load_records_noting
from fastdcyk.experiments import (
    PAPER_GRID_CORE_HOURS,
    ExperimentConfig,
    ResultsFileError,
    summary_table,
)


def config_from_args(args: argparse.Namespace) -> ExperimentConfig:
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
            readback=args.readback,
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


#: Why ``fastdcyk experiment`` refuses a grammar file that ``fastdcyk parse`` can read.
_GRID_READS = (
    "fastdcyk experiment reads grammar files as they are, as UTF-8 text in Chomsky normal "
    "form (--grammar-encoding and --to-cnf do not reach its grid yet)"
)


def _check_experiment_args(args: argparse.Namespace, config: ExperimentConfig) -> None:
    """Usage errors for the paths and grammar files, before any work is done."""
    if args.out:
        check_out_file("--out", Path(args.out))
    if args.figures:
        check_out_folder("--figures", Path(args.figures))
    for spec in dict.fromkeys((*config.grammars, config.source)):
        # the messages of parse (pass --to-cnf, --grammar-encoding), before any work
        load_grammar(spec, encoding=config.grammar_encoding, to_cnf=config.to_cnf)


def _cmd_experiment(args: argparse.Namespace) -> int:
    executor = run_options(args)["executor"]
    if executor == "dask" and not args.scheduler:
        raise UsageError("--executor dask needs --scheduler ADDRESS (e.g. tcp://host:8786)")
    if args.scheduler and executor != "dask":
        raise UsageError("--scheduler is only used with --executor dask")
    config = config_from_args(args)
    _check_experiment_args(args, config)
    try:
        config_hash = config.hash()
    except (GrammarError, OSError) as exc:
        raise UsageError(f"cannot load a grammar: {exc}") from exc
    out = Path(args.out) if args.out else Path("fastdcyk-results") / f"{config_hash[:12]}.jsonl"
    try:
        run_grid(config, out, args)
    except UsageError as exc:
        cause = exc.__cause__
        if isinstance(cause, ResultsFileError) and cause.cli_message != str(cause):
            # the message in this command's options (--out), not run_experiment's arguments
            raise UsageError(cause.cli_message) from cause
        raise
    records = load_records_noting([out], "experiment")
    print()
    print(summary_table(records))
    print("(micro P/R/F1: pooled counts, 95% bootstrap CI; macro F1: mean, 95% t CI)")
    if args.figures:
        draw(records, Path(args.figures), formats=("png", "svg"))
    else:
        print(f"figures: fastdcyk plot {out} --out figures")
    return 0


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the subcommand to ``sub`` (the parser's subparsers)."""
    p = sub.add_parser(
        "experiment",
        help="run (or resume) a grid of D-CYK runs scored against symbolic CYK",
        description="Run the paper's experiments: every grammar x dimension x variant (x "
        "order) x beta x codebook seed over sentences generated from --source, each "
        "sentence's decoded chart scored against symbolic CYK. Records are appended to --out "
        "as tasks finish; rerunning the same command resumes an interrupted run. The "
        "defaults are the paper's grid (2,000 G0 sentences of length 2..7, G0..G4, d = "
        "100..6000, the paper's two variants, paper and trace, each in its own order): some "
        f"{PAPER_GRID_CORE_HOURS} core-hours (docs/results.md), so use the dask executor "
        "for it.",
    )
    add_grid_options(p, ExperimentConfig())
    add_grammar_file_options(p)
    p.add_argument(
        "--out",
        help="results file (JSON Lines; default fastdcyk-results/<config hash>.jsonl)",
    )
    p.add_argument("--figures", metavar="DIR", help="also draw the figures into DIR")
    add_run_options(p)
    p.set_defaults(func=_cmd_experiment)
    return p

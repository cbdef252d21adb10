"""``fastdcyk treebank``: induce a PCFG from treebank files and evaluate it on a split."""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

from tqdm import tqdm

from fastdcyk.cfg.metrics import Scores, evalb
from fastdcyk.cfg.treebank import TreebankGrammar, clean, read_trees
from fastdcyk.cfg.viterbi import ViterbiParse, viterbi
from fastdcyk.cli.common import (
    UsageError,
    check_out_file,
    dimension,
    nonnegative_int,
    positive_int,
)
from fastdcyk.engine.progress import stderr_is_terminal


def _trees(paths: list[str], what: str) -> list:
    trees = []
    for path in paths:
        if not Path(path).exists():
            raise UsageError(f"{what} {path}: no such file or folder")
        try:
            trees.extend(read_trees(Path(path)))
        except ValueError as exc:
            raise UsageError(f"{what} {exc}") from None
    return trees


def _save(tb: TreebankGrammar, path: Path) -> None:
    """Write the induced PCFG (before CNF) in fastdcyk's grammar format, and say so."""
    path.write_text(tb.grammar.origin.grammar.to_string() + "\n", encoding="utf-8")
    print(
        f"grammar written to {path.resolve()} (before CNF), in fastdcyk's grammar format: "
        "NLTK's PCFG format with a backslash before each character NLTK's names cannot hold "
        "(\\$, NP\\|<DT>), which nltk.PCFG.fromstring refuses; read it back with "
        "fastdcyk.Grammar.from_file"
    )


def _cmd_treebank(args: argparse.Namespace) -> int:
    if args.out is not None:
        check_out_file("--out", Path(args.out))
    if args.save is not None:
        check_out_file("--save", Path(args.save))
    show = stderr_is_terminal() if args.progress is None else args.progress
    t0 = time.perf_counter()
    train = _trees(args.train, "--train")
    try:
        tb = TreebankGrammar.from_trees(
            train, horizontal=args.horizontal, parent=args.parent, rare=args.rare
        )
    except ValueError as exc:
        raise UsageError(f"--train: {exc}") from None
    print(f"{tb} ({time.perf_counter() - t0:.1f} s)")
    if args.save is not None:
        _save(tb, Path(args.save))
    if not args.test:
        return 0
    tested = _trees(args.test, "--test")
    seen = {str(t) for t in train}
    overlap = sum(str(t) in seen for t in tested)
    if overlap:
        print(
            f"warning: {overlap} of the {len(tested)} test trees are training trees "
            f"({'the same files' if sorted(args.test) == sorted(args.train) else 'shared'}): "
            "the grammar was trained on them, so its scores there overstate what it does on "
            "sentences it has not seen",
            file=sys.stderr,
        )
    gold = [g for g in (clean(t) for t in tested) if g is not None]
    gold = [g for g in gold if len(g.leaves()) <= args.max_length]
    if args.limit is not None:
        gold = gold[: args.limit]
    if not gold:
        raise UsageError(f"--test: no sentence of at most {args.max_length} words")
    unknown = sum(bool(tb.unknown(g.leaves())) for g in gold)
    print(
        f"test: {len(gold)} sentences of at most {args.max_length} words, {unknown} with "
        "words the training trees did not keep"
    )
    parsers: list[tuple[str, int | None]] = [("symbolic Viterbi", None)]
    parsers += [("D-CYK", d) for d in args.dim]
    out = open(args.out, "a", encoding="utf-8") if args.out is not None else None  # noqa: SIM115
    rows: list[dict[str, Any]] = []
    try:
        for name, d in parsers:  # symbolic Viterbi first: the others are compared with it
            reference = rows[0]["log_probs"] if rows else None
            rows.append(_evaluate(tb, gold, name, d, args, show, out, reference))
    finally:
        if out is not None:
            out.close()
    print()
    print(
        f"{'parser':<18} {'d':>5} {'parsed':>8} {'P':>7} {'R':>7} {'F1':>7} "
        f"{'= Viterbi':>10} {'s/sentence':>11}"
    )
    for row in rows:
        d = "" if row["d"] is None else str(row["d"])
        same = "" if row["d"] is None else f"{row['same']}/{row['both']}"
        s = row["scores"]
        print(
            f"{row['parser']:<18} {d:>5} {row['parsed']:>4}/{row['sentences']:<3} "
            f"{s.precision:7.4f} {s.recall:7.4f} {s.f1:7.4f} {same:>10} {row['seconds']:11.3f}"
        )
    print(
        "(labelled brackets as evalb counts them: punctuation and the root left out; "
        "'= Viterbi': of the sentences both it and symbolic Viterbi parsed, those whose best "
        "tree has symbolic Viterbi's log probability)"
    )
    return 0


def _evaluate(tb, gold, name, d, args, show, out, reference) -> dict[str, Any]:
    """One parser over the test trees: its scores, and (``reference``: symbolic Viterbi's
    log probabilities) of the sentences both parsed, how many (``same``, of ``both``) its
    tree has Viterbi's log probability."""
    from fastdcyk.engine import dcyk

    total, parsed, same, both, seconds = Scores(0, 0, 0), 0, 0, 0, 0.0
    known = tb.grammar.terminal_set
    log_probs = []
    label = name if d is None else f"{name} d={d}"
    for k, g in enumerate(tqdm(gold, desc=label, disable=not show, leave=False)):
        sentence = g.leaves()
        words = tb.words(sentence)
        t0 = time.perf_counter()
        if d is None:
            best = viterbi(tb.grammar, words)
        elif not known.issuperset(words):  # --rare 0: a word never seen has no rule
            best = ViterbiParse(None, -math.inf)  # as symbolic Viterbi says: no tree
        else:
            result = dcyk(tb.grammar, words, d=d, seed=args.seed, progress=False)
            best = result.best_parse()
        seconds += time.perf_counter() - t0
        tree = tb.to_treebank(best.tree, sentence)
        scores = evalb(g, tree)
        total = total + scores
        parsed += tree is not None
        log_probs.append(best.log_prob)
        if reference is not None and tree is not None and reference[k] > -math.inf:
            both += 1
            same += best.log_prob == reference[k]
        if out is not None:
            out.write(
                json.dumps(
                    {
                        "parser": name,
                        "d": d,
                        "words": len(sentence),
                        "tp": scores.tp,
                        "gold": scores.gold,
                        "predicted": scores.predicted,
                        "log_prob": None if math.isinf(best.log_prob) else best.log_prob,
                        "tree": None if tree is None else str(tree),
                    }
                )
                + "\n"
            )
    return {
        "log_probs": log_probs,
        "parser": name,
        "d": d,
        "sentences": len(gold),
        "parsed": parsed,
        "same": same,
        "both": both,
        "scores": total,
        "seconds": seconds / len(gold),
    }


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the subcommand to ``sub`` (the parser's subparsers)."""
    p = sub.add_parser(
        "treebank",
        help="induce a PCFG from treebank files and evaluate it on test files",
        description="Induce a probabilistic grammar from bracketed trees (.mrg files or "
        "folders: function tags and empty elements stripped, unary chains collapsed, "
        "Markovised binarisation, rare words as unknown-word classes), then parse the test "
        "trees' sentences with symbolic Viterbi CKY and, with --dim, with D-CYK (the most "
        "probable tree of the decoded chart), and score the trees with evalb's labelled "
        "brackets.",
    )
    p.add_argument(
        "--train",
        nargs="+",
        required=True,
        metavar="PATH",
        help="training trees: .mrg files or folders of them",
    )
    p.add_argument(
        "--test",
        nargs="*",
        default=[],
        metavar="PATH",
        help="test trees (none: only induce, and --save)",
    )
    p.add_argument(
        "--horizontal",
        type=positive_int,
        default=1,
        help="order of horizontal Markovisation (default 1)",
    )
    p.add_argument("--parent", action="store_true", help="annotate phrases with their parent")
    p.add_argument(
        "--rare",
        type=nonnegative_int,
        default=1,
        help="words seen at most this often become unknown-word classes (default 1)",
    )
    p.add_argument(
        "--max-length",
        type=positive_int,
        default=25,
        help="test sentences of at most this many words (default 25)",
    )
    p.add_argument("--limit", type=positive_int, help="only the first N test sentences")
    p.add_argument(
        "--dim",
        type=dimension,
        nargs="*",
        default=[],
        help="also parse with D-CYK at these dimensions (default: none)",
    )
    p.add_argument("--seed", type=int, default=0, help="codebook seed of D-CYK (default 0)")
    p.add_argument("--save", metavar="FILE", help="write the induced PCFG (before CNF) to FILE")
    p.add_argument("--out", metavar="FILE", help="append one JSON line per sentence and parser")
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="a progress bar per parser (default: on when stderr is a terminal)",
    )
    p.set_defaults(func=_cmd_treebank)
    return p

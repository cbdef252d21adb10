"""The treebank study of docs/results.md: a PCFG induced from the Penn Treebank sample, its
most probable trees by symbolic Viterbi CKY, by D-CYK (Viterbi over the decoded chart, and
through the table: ``weights="table"``) and by NLTK's ViterbiParser, scored with evalb's
labelled brackets.

Train on files 0001-0179, test on every sentence of files 0180-0199 of at most 25 words
(unknown words included). Each (parser, d, sentence) is one record of
``docs/lab/treebank_study.json``, so a run resumes where it stopped. The treebank sample may not
be copied into the project: give its folder.

Usage::

    python docs/lab/treebank_study.py --treebank PATH/treebank --parser viterbi
    python docs/lab/treebank_study.py --treebank PATH/treebank --parser dcyk --dim 2048
    python docs/lab/treebank_study.py --treebank PATH/treebank --parser table --dim 1024
    python docs/lab/treebank_study.py --treebank PATH/treebank --parser table --readback lstsq
    python docs/lab/treebank_study.py --treebank PATH/treebank --parser beam    # the beam's bound
    python docs/lab/treebank_study.py --treebank PATH/treebank --parser nltk --length 20
    python docs/lab/treebank_study.py --table
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

from tqdm import tqdm

import fastdcyk as fd
from fastdcyk.cfg.treebank import TreebankGrammar, clean, read_trees
from fastdcyk.cfg.viterbi import ViterbiParse, item_scores, tree_from_scores

HERE = Path(__file__).resolve().parent
OUT = HERE / "treebank_study.json"
MAX_LEN = 25


def split(folder: Path) -> tuple[list[Path], list[Path]]:
    files = sorted(folder.glob("wsj_*.mrg"))
    number = {f: int(f.stem.split("_")[1]) for f in files}
    return [f for f in files if number[f] <= 179], [f for f in files if number[f] >= 180]


def _nltk_parser(nltk, pcfg):
    """NLTK's ViterbiParser without its time limit (recent NLTK stops it after 5 s by default)."""
    try:
        return nltk.ViterbiParser(pcfg, max_time=None)
    except TypeError:  # an NLTK without the limit
        return nltk.ViterbiParser(pcfg)


def run(args: argparse.Namespace) -> None:
    fd.threads.set_threads(1)
    done = json.loads(OUT.read_text()) if OUT.exists() else {}
    train, test = split(Path(args.treebank))
    t0 = time.perf_counter()
    tb = TreebankGrammar.from_trees(train)
    print(f"{tb} ({time.perf_counter() - t0:.1f} s)", flush=True)
    gold = [g for g in (clean(t) for t in read_trees(test)) if g is not None]
    gold = [(k, g) for k, g in enumerate(gold) if len(g.leaves()) <= MAX_LEN]
    if args.length is not None:
        gold = [(k, g) for k, g in gold if len(g.leaves()) == args.length]
    if args.words is not None:
        gold = [(k, g) for k, g in gold if len(g.leaves()) <= args.words]
    if args.limit is not None:
        gold = gold[: args.limit]
    name = args.parser if args.parser in ("viterbi", "nltk") else f"{args.parser}-{args.dim}"
    if args.parser == "beam":
        name = f"beam{args.beam:g}"
    if args.parser == "table":
        name = f"table-{args.readback}-{args.dim}"
        if args.beam != fd.options.DEFAULT_BEAM:
            name += f"-beam{args.beam:g}"
    parser = None
    if args.parser == "nltk":
        import nltk

        parser = _nltk_parser(nltk, tb.grammar.to_nltk())
    for k, g in tqdm(gold, desc=name):
        key = f"{name}|{k}"
        if key in done:
            continue
        sentence = g.leaves()
        words = tb.words(sentence)
        t1 = time.perf_counter()
        symbolic = fd.viterbi(tb.grammar, words)
        seconds = time.perf_counter() - t1
        extra = {}
        if args.parser == "viterbi":
            best = symbolic
        elif args.parser == "nltk":
            t1 = time.perf_counter()
            trees = list(parser.parse(list(words)))
            seconds = time.perf_counter() - t1
            # NLTK's logprob is base 2; its tree is of the CNF grammar
            logp = trees[0].logprob() * math.log(2) if trees else -math.inf
            tree = fd.un_cnf(fd.Tree.from_nltk(trees[0]), tb.grammar) if trees else None
            best = ViterbiParse(tree, logp)
        elif args.parser == "beam":  # exact scores pruned as the table prunes: its bound
            t1 = time.perf_counter()
            pruned = item_scores(tb.grammar, words, beam=args.beam)
            best = tree_from_scores(tb.grammar, words, pruned)
            seconds = time.perf_counter() - t1
        elif args.parser == "table":  # the weights written into the table and read back
            t1 = time.perf_counter()
            result = fd.dcyk(
                tb.grammar,
                words,
                d=args.dim,
                seed=0,
                progress=False,
                weights="table",
                beam=args.beam,
                readback=args.readback,
            )
            best = result.table_parse()
            seconds = time.perf_counter() - t1
            exact = item_scores(tb.grammar, words)
            extra = {"items": len(result.table_scores), **_errors(result.table_scores, exact)}
            # against what the table computes: the beam's exact scores (the same pruning)
            pruned = item_scores(tb.grammar, words, beam=args.beam)
            beam = _errors(result.table_scores, pruned)
            extra.update({f"beam_{k}": v for k, v in beam.items()})
            extra["beam_items_differ"] = len(set(result.table_scores) ^ set(pruned))
        else:
            t1 = time.perf_counter()
            result = fd.dcyk(tb.grammar, words, d=args.dim, seed=0, progress=False)
            best = result.best_parse()
            seconds = time.perf_counter() - t1
            cells = fd.cell_scores(fd.cyk(tb.grammar, words), result.chart)
            extra = {
                "cell_tp": cells.tp,
                "cell_gold": cells.gold,
                "cell_predicted": cells.predicted,
            }
        tree = tb.to_treebank(best.tree, sentence)
        scores = fd.evalb(g, tree)
        done[key] = {
            "parser": name,
            "d": args.dim if args.parser in ("dcyk", "table") else None,
            "sentence": k,
            "words": len(sentence),
            "unknown": len(tb.unknown(sentence)),
            "log_prob": None if math.isinf(best.log_prob) else best.log_prob,
            "viterbi_log_prob": None if math.isinf(symbolic.log_prob) else symbolic.log_prob,
            "same": best.log_prob == symbolic.log_prob
            or abs(best.log_prob - symbolic.log_prob) < 1e-9,
            "tp": scores.tp,
            "gold": scores.gold,
            "predicted": scores.predicted,
            "seconds": seconds,
            **extra,
        }
        OUT.write_text(json.dumps(done, indent=0, sort_keys=True))


def _errors(read: dict, exact: dict) -> dict:
    """The read scores' errors against symbolic Viterbi's scores of the same items: their
    median, 95th percentile and largest (nats), and the items read that symbolic CYK does
    not have (a false item)."""
    import numpy as np

    e = np.abs([v - exact[x] for x, v in read.items() if x in exact])
    out = {"false_items": sum(x not in exact for x in read)}
    if len(e):
        out |= {
            "error_median": float(np.median(e)),
            "error_p95": float(np.percentile(e, 95)),
            "error_max": float(e.max()),
        }
    return out


def _order(name: str) -> tuple:
    """The tables' row order: viterbi, nltk, the beam's bound, dcyk by d, then the weighted
    table by read-back and d."""
    parts = name.split("-")  # viterbi, nltk, beamB, dcyk-D, table-READBACK-D[-beamB]
    kinds = ("viterbi", "nltk", "beam", "dcyk", "table")
    kind = next((k for k, p in enumerate(kinds) if parts[0].startswith(p)), len(kinds))
    readback = parts[1] if parts[0] == "table" else ""
    d = next((int(p) for p in parts[1:] if p.isdigit()), 0)
    return (kind, readback, d, name)


def table() -> None:
    """The table of docs/results.md from docs/lab/treebank_study.json: per parser its bracket
    scores, and symbolic Viterbi's F1 on the same sentences (a run may cover a subset)."""
    done = json.loads(OUT.read_text())
    by: dict[str, list[dict]] = {}
    for e in done.values():
        by.setdefault(e["parser"], []).append(e)
    viterbi = {e["sentence"]: e for e in by.get("viterbi", [])}

    def f1(rows: list[dict]) -> float:
        return fd.Scores(*(sum(r[k] for r in rows) for k in ("tp", "gold", "predicted"))).f1

    print(
        "| parser | sentences | parsed | bracket P | bracket R | bracket F1 | Viterbi's F1 on "
        "them | = Viterbi | cell F1 | s/sentence |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")

    for name in sorted(by, key=_order):
        rows = by[name]
        s = fd.Scores(*(sum(r[k] for r in rows) for k in ("tp", "gold", "predicted")))
        parsed = sum(r["log_prob"] is not None for r in rows)
        same = sum(r["same"] for r in rows)
        base = [viterbi[r["sentence"]] for r in rows if r["sentence"] in viterbi]
        ref = f"{f1(base):.4f}" if len(base) == len(rows) else ""
        cells = ""
        if "cell_tp" in rows[0]:
            keys = ("cell_tp", "cell_gold", "cell_predicted")
            cells = f"{fd.Scores(*(sum(r[k] for r in rows) for k in keys)).f1:.5f}"
        sec = sum(r["seconds"] for r in rows) / len(rows)
        print(
            f"| {name} | {len(rows)} | {parsed} | {s.precision:.4f} | {s.recall:.4f} | "
            f"{s.f1:.4f} | {ref} | {same}/{len(rows)} | {cells} | {sec:.2f} |"
        )


def table_route() -> None:
    """The weighted table's rows (``--parser table``) and the beam's bound (``--parser
    beam``): how often the tree is symbolic Viterbi's, and the read scores' errors."""
    import numpy as np

    done = json.loads(OUT.read_text())
    by: dict[str, list[dict]] = {}
    for e in done.values():
        if e["parser"].startswith(("table", "beam")):
            by.setdefault(e["parser"], []).append(e)
    if not by:
        return
    print(
        "\n| route 2 | sentences | = Viterbi | share | share, <= 15 words | share, 16-25 | "
        "items per sentence | error median (nats) | error p95 | error max | against the beam's "
        "scores: error median | sentences off by > 0.01 | items not the beam's | "
        "false items | s/sentence |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")

    for name in sorted(by, key=_order):
        rows = by[name]
        same = sum(r["same"] for r in rows)
        sec = sum(r["seconds"] for r in rows) / len(rows)
        if "items" in rows[0]:
            med = np.median([r["error_median"] for r in rows if "error_median" in r])
            p95 = np.median([r["error_p95"] for r in rows if "error_p95" in r])
            top = max(r.get("error_max", 0.0) for r in rows)
            items = np.mean([r["items"] for r in rows])
            false = sum(r["false_items"] for r in rows)
            beam = [r for r in rows if "beam_error_max" in r]
            beam_col = " |  | "
            if beam:
                off = sum(r["beam_error_max"] > 0.01 for r in beam)
                edge = sum(r["beam_items_differ"] for r in beam)
                beam_col = (
                    f"{np.median([r['beam_error_median'] for r in beam]):.2g} | "
                    f"{off}/{len(beam)} | {edge}"
                )
            cols = f"{items:.0f} | {med:.2g} | {p95:.2g} | {top:.2f} | {beam_col} | {false}"
        else:
            cols = " |  |  |  |  |  |  | "
        short = [r["same"] for r in rows if r["words"] <= 15]
        long = [r["same"] for r in rows if r["words"] > 15]
        parts = " | ".join(f"{np.mean(x):.3f} ({len(x)})" if x else "" for x in (short, long))
        print(
            f"| {name} | {len(rows)} | {same} | {same / len(rows):.3f} | {parts} | {cols} | "
            f"{sec:.2f} |"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--treebank", help="the folder of wsj_0001.mrg .. wsj_0199.mrg")
    ap.add_argument(
        "--parser", choices=("viterbi", "dcyk", "table", "beam", "nltk"), default="viterbi"
    )
    ap.add_argument("--dim", type=int, default=2048)
    ap.add_argument("--length", type=int, help="only the test sentences of this many words")
    ap.add_argument("--words", type=int, help="only the test sentences of at most this many words")
    ap.add_argument("--limit", type=int, help="only the first N test sentences")
    ap.add_argument(
        "--beam", type=float, default=fd.options.DEFAULT_BEAM, help="--parser table's beam (nats)"
    )
    ap.add_argument(
        "--readback",
        choices=("cancel", "lstsq"),
        default="cancel",
        help="--parser table's read-back (default 'cancel', the library's for weights='table')",
    )
    ap.add_argument("--table", action="store_true")
    args = ap.parse_args()
    if args.table:
        table()
        table_route()
    elif args.treebank is None:
        ap.error("--treebank or --table")
    else:
        run(args)


if __name__ == "__main__":
    main()

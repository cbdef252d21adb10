"""A treebank's test sentences parsed as a corpus: throughput, the share parsed and sure, and
evalb's labelled F1, beside symbolic Viterbi and NLTK's ViterbiParser on the same sentences
(docs/performance.md, "A corpus in, trees out").

    python benchmarks/corpus_treebank.py --treebank PATH/treebank [--workers 1 2]
        [--nltk-sentences 20] [--nltk-limit 60] [--out FILE]

The grammar is the PCFG ``fastdcyk treebank`` induces from the Penn Treebank sample's files
0001-0179 (:meth:`fastdcyk.cfg.treebank.TreebankGrammar.from_trees`, its defaults: horizontal
Markovisation 1, words seen once as unknown-word classes); the corpus is the sentences of
files 0180-0199 of at most 40 words (their trees cleaned as ``fastdcyk treebank`` cleans
them), one a line. The treebank is not shipped: give its folder.

- fastdcyk: :func:`fastdcyk.parse_corpus` with ``d="auto"`` and ``unknown="class"`` (the
  words the training trees did not keep read as their classes), for each ``--workers``
  count, the start of the worker processes counted; each record's tree is turned back into
  the treebank's labels (:meth:`TreebankGrammar.to_treebank`) and scored against the gold;
- symbolic Viterbi CKY (:func:`fastdcyk.viterbi`) on every sentence, in this process;
- NLTK's ``ViterbiParser`` on the first ``--nltk-sentences`` sentences (it takes about 40 s
  on one of 20 words), each stopped after ``--nltk-limit`` seconds (its own ``max_time``):
  how many it finished, and its scores on those, beside the others' on the same ones.

Each line gives sentences a second, the share parsed and sure, evalb's labelled P, R and F1
(punctuation and the root left out, as evalb counts) and how many trees have symbolic
Viterbi's log probability.
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
import warnings
from pathlib import Path

import fastdcyk as fd
from fastdcyk.cfg.metrics import Scores, evalb
from fastdcyk.cfg.treebank import TreebankGrammar, clean, read_trees
from fastdcyk.cfg.trees import Tree, un_cnf


def material(folder: Path, longest: int) -> tuple[TreebankGrammar, list[Tree]]:
    """The grammar induced from files 0001-0179 and the cleaned test trees (0180-0199) of at
    most ``longest`` words."""
    files = sorted(folder.glob("wsj_*.mrg"))
    if not files:
        raise SystemExit(f"{folder}: no wsj_*.mrg files (give the treebank sample's folder)")
    number = {f: int(f.stem.split("_")[1]) for f in files}
    tb = TreebankGrammar.from_trees([f for f in files if number[f] <= 179])
    gold = [clean(t) for f in files if number[f] >= 180 for t in read_trees(f)]
    return tb, [g for g in gold if g is not None and len(g.leaves()) <= longest]


def score(tb: TreebankGrammar, gold: list[Tree], trees: list[Tree | None]) -> Scores:
    """evalb's labelled brackets of the trees (of the grammar) against the gold."""
    total = Scores(0, 0, 0)
    for g, t in zip(gold, trees, strict=True):
        total = total + evalb(g, tb.to_treebank(t, g.leaves()))
    return total


def line(name: str, n: int, seconds: float, parsed: int, s: Scores, extra: str = "") -> str:
    return (
        f"{name:<34} {n / seconds:8.2f} sentences/s ({seconds:7.1f} s)  parsed {parsed}/{n}  "
        f"P {s.precision:.4f} R {s.recall:.4f} F1 {s.f1:.4f}{extra}"
    )


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--treebank", type=Path, required=True, help="the sample's folder")
    p.add_argument("--workers", type=int, nargs="+", default=[2], help="worker counts to run")
    p.add_argument("--longest", type=int, default=40, help="test sentences of at most N words")
    p.add_argument("--nltk-sentences", type=int, default=20, help="NLTK on the first N")
    p.add_argument("--nltk-limit", type=float, default=60.0, help="NLTK's seconds a sentence")
    p.add_argument("--out", type=Path, help="write the figures as JSON here")
    args = p.parse_args(argv)
    warnings.simplefilter("ignore", fd.DimensionWarning)
    t0 = time.perf_counter()
    tb, gold = material(args.treebank, args.longest)
    print(f"{tb} ({time.perf_counter() - t0:.1f} s)", flush=True)
    sentences = [g.leaves() for g in gold]
    lengths = [len(s) for s in sentences]
    print(
        f"{len(gold)} test sentences of {min(lengths)} to {max(lengths)} words "
        f"(mean {sum(lengths) / len(lengths):.1f})",
        flush=True,
    )
    figures: dict = {"sentences": len(gold), "grammar": str(tb)}

    t0 = time.perf_counter()
    symbolic = [fd.viterbi(tb.grammar, tb.words(s)) for s in sentences]
    seconds = time.perf_counter() - t0
    viterbi_trees = [v.tree for v in symbolic]
    s = score(tb, gold, viterbi_trees)
    parsed = sum(t is not None for t in viterbi_trees)
    print(line("symbolic Viterbi (fastdcyk.viterbi)", len(gold), seconds, parsed, s), flush=True)
    figures["viterbi"] = {"seconds": seconds, "parsed": parsed, "f1": s.f1}

    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus.txt"
        corpus.write_text("".join(" ".join(x) + "\n" for x in sentences), encoding="utf-8")
        for workers in args.workers:
            t0 = time.perf_counter()
            summary = fd.parse_corpus(
                tb.grammar, corpus, workers=workers, unknown="class", progress=False
            )
            seconds = time.perf_counter() - t0
            records = summary.records
            trees = [Tree.fromstring(r["tree"]) if r["tree"] else None for r in records]
            s = score(tb, gold, trees)
            sure = sum(bool(r["sure"]) for r in records)
            same = sum(
                r["log_prob"] is not None
                and math.isclose(r["log_prob"], v.log_prob, rel_tol=0, abs_tol=1e-9)
                for r, v in zip(records, symbolic, strict=True)
            )
            ds = sorted({r["d"] for r in records if r["d"] is not None})
            name = f"D-CYK parse_corpus, {workers} worker{'s' if workers > 1 else ''}"
            extra = f"  sure {sure}  = Viterbi {same}  d {ds}  statuses {summary.counts}"
            print(line(name, len(gold), seconds, summary.counts["parsed"], s, extra), flush=True)
            figures[f"workers={workers}"] = {
                "seconds": seconds,
                "parsed": summary.counts["parsed"],
                "sure": sure,
                "same_as_viterbi": same,
                "f1": s.f1,
                "d": ds,
                "counts": summary.counts,
            }

    import nltk

    k = min(args.nltk_sentences, len(gold))
    parser = nltk.ViterbiParser(tb.grammar.to_nltk(), max_time=args.nltk_limit)
    finished, nltk_trees, nltk_seconds = [], [], 0.0
    for i in range(k):
        words = list(tb.words(sentences[i]))
        t0 = time.perf_counter()
        try:
            got = next(iter(parser.parse(words)), None)
        except TimeoutError:
            nltk_seconds += time.perf_counter() - t0
            print(f"  NLTK: sentence {i} ({len(words)} words) not finished", flush=True)
            continue
        took = time.perf_counter() - t0
        nltk_seconds += took
        finished.append(i)
        nltk_trees.append(None if got is None else un_cnf(Tree.from_nltk(got), tb.grammar))
        print(f"  NLTK: sentence {i} ({len(words)} words) {took:.1f} s", flush=True)
    done = [gold[i] for i in finished]
    s = score(tb, done, nltk_trees)
    parsed = sum(t is not None for t in nltk_trees)
    print(
        line(f"NLTK ViterbiParser, first {k}", k, nltk_seconds, parsed, s)
        + f"  finished {len(finished)}/{k} within {args.nltk_limit:g} s",
        flush=True,
    )
    same = score(tb, done, [viterbi_trees[i] for i in finished])
    print(f"  symbolic Viterbi on those {len(finished)}: F1 {same.f1:.4f}", flush=True)
    figures["nltk"] = {
        "sentences": k,
        "finished": len(finished),
        "seconds": nltk_seconds,
        "f1": s.f1,
        "viterbi_f1_same": same.f1,
    }
    if args.out is not None:
        args.out.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

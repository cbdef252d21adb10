"""Study (g) of docs/results.md, the beam: is the tree read from a weighted table
(``weights="table"``) symbolic Viterbi's, with ``beam="auto"`` (the default) and with fixed
beams, and what the re-parses cost.

Two PCFGs induced from the Penn Treebank sample (train: files 0001-0179), test sentences from
files 0180-0199:

- ``study``: the grammar of study (g) (:class:`fastdcyk.cfg.treebank.TreebankGrammar`), its
  138 test sentences of at most 25 words (unknown words through its word classes);
- ``nltk``: a grammar made with NLTK's own transforms: each training tree cleaned
  (:func:`fastdcyk.cfg.treebank.clean`: empty elements and function tags stripped), then
  ``collapse_unary(collapsePOS=True, collapseRoot=True)`` and
  ``chomsky_normal_form(horzMarkov=1)``, ``ROOT`` above every tree's top label,
  ``nltk.induce_pcfg``, loaded with ``Grammar.from_nltk(..., cnf="convert")``; its test
  sentences of 3 to 20 words whose words it knows.

Each sentence is parsed at ``--dim`` with ``beam="auto"`` and with each fixed beam, in turn
(one thread), and its table tree compared with symbolic Viterbi's log probability (1e-6);
the seconds are the parse's and its table tree's.
The treebank sample may not be copied into the project: give its folder. Writes
``docs/lab/beam_study.json``; ``--table`` prints the Markdown table of docs/results.md.

Usage::

    python docs/lab/beam_study.py --treebank PATH/treebank --dim 512
    python docs/lab/beam_study.py --table
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

from tqdm import tqdm
from treebank_study import split  # the same split of the sample: train 0001-0179, test the rest

import fastdcyk as fd
from fastdcyk.cfg.treebank import TreebankGrammar, clean, read_trees
from fastdcyk.engine.beam import BeamWarning

HERE = Path(__file__).resolve().parent
OUT = HERE / "beam_study.json"
FIXED = (10.0, 20.0)


def study_grammar(train, test):
    tb = TreebankGrammar.from_trees(train)
    gold = [g for g in (clean(t) for t in read_trees(test)) if g is not None]
    return tb.grammar, [tuple(tb.words(g.leaves())) for g in gold if len(g.leaves()) <= 25]


def nltk_grammar(train, test):
    import nltk

    productions = []
    for f in train:
        for t in read_trees(f):
            c = clean(t)
            if c is None:
                continue
            t = c.to_nltk()
            t.collapse_unary(collapsePOS=True, collapseRoot=True)
            t.chomsky_normal_form(horzMarkov=1)
            productions.append(
                nltk.Production(nltk.Nonterminal("ROOT"), [nltk.Nonterminal(t.label())])
            )
            productions += t.productions()
    pcfg = nltk.induce_pcfg(nltk.Nonterminal("ROOT"), productions)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fd.GrammarWarning)
        g = fd.Grammar.from_nltk(pcfg, cnf="convert")
    known = set(g.terminals)
    sentences = []
    for f in test:
        for t in read_trees(f):
            c = clean(t)
            ws = tuple(c.leaves()) if c is not None else ()
            if 3 <= len(ws) <= 20 and all(w in known for w in ws):
                sentences.append(ws)
    return g, sentences


def parse(g, ws, d, beam):
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", BeamWarning)
        r = fd.dcyk(g, ws, d=d, seed=0, weights="table", beam=beam, progress=False)
        p = r.table_parse()  # the time to the tree (beam="auto" has read it already)
    seconds = time.perf_counter() - t0
    out = {"log_prob": p.log_prob if p.tree is not None else None, "seconds": seconds}
    if r.beam is not None:
        out |= {"beam": r.beam.beam, "tried": list(r.beam.tried), "capped": r.beam.capped}
        out["warned"] = any(issubclass(w.category, BeamWarning) for w in caught)
    return out


def run(args: argparse.Namespace) -> None:
    fd.threads.set_threads(1)
    done = json.loads(OUT.read_text()) if OUT.exists() else {}
    train, test = split(Path(args.treebank))
    for name, make in (("study", study_grammar), ("nltk", nltk_grammar)):
        g, sentences = make(train, test)
        print(f"{name}: {g}, {len(sentences)} sentences", flush=True)
        for k, ws in enumerate(tqdm(sentences, desc=name)):
            key = f"{name}|{args.dim}|{k}"
            if key in done:
                continue
            v = fd.viterbi(g, ws)
            row = {"length": len(ws), "viterbi": v.log_prob if v.tree is not None else None}
            row["auto"] = parse(g, ws, args.dim, "auto")
            for b in FIXED:
                row[f"{b:g}"] = parse(g, ws, args.dim, b)
            done[key] = row
            OUT.write_text(json.dumps(done, indent=0, sort_keys=True))


def _same(row: dict, run: dict) -> bool:
    if row["viterbi"] is None:
        return run["log_prob"] is None
    return run["log_prob"] is not None and abs(run["log_prob"] - row["viterbi"]) < 1e-6


def table() -> None:
    done = json.loads(OUT.read_text())
    groups: dict[tuple[str, str], list[dict]] = {}
    for key, row in done.items():
        name, dim, _ = key.split("|")
        groups.setdefault((name, dim), []).append(row)
    print(
        "| grammar | d | sentences (parseable) | beam | = Viterbi | parseable, no tree | "
        "widened | at the widest, warned | seconds | time / beam 10's |"
    )
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    for (name, dim), rows in sorted(groups.items()):
        n, ok = len(rows), sum(r["viterbi"] is not None for r in rows)
        base = sum(r["10"]["seconds"] for r in rows)
        for col in ("auto", *(f"{b:g}" for b in FIXED)):
            same = sum(_same(r, r[col]) for r in rows)
            lost = sum(r["viterbi"] is not None and r[col]["log_prob"] is None for r in rows)
            secs = sum(r[col]["seconds"] for r in rows)
            widened = capped = ""
            if col == "auto":
                widened = str(sum(len(r[col]["tried"]) > 1 for r in rows))
                capped = str(sum(r[col]["capped"] for r in rows))
            label = "auto (default)" if col == "auto" else f"{col} (fixed)"
            print(
                f"| {name} | {dim} | {n} ({ok}) | {label} | {same}/{n} | {lost} | {widened} | "
                f"{capped} | {secs:.1f} | {secs / base:.2f} |"
            )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--treebank", help="the Penn Treebank sample's folder (wsj_*.mrg)")
    p.add_argument("--dim", type=int, default=512)
    p.add_argument("--table", action="store_true", help="print the table and stop")
    args = p.parse_args()
    if args.table:
        table()
    elif args.treebank is None:
        p.error("--treebank is needed to run the study")
    else:
        run(args)


if __name__ == "__main__":
    main()

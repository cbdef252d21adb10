"""The "width" order against the "cell" order on real grammars (docs/results.md, study (i)).

The sentences of docs/lab/default_study.py (100 drawn from each grammar, seed 1, on its
target's lengths: ATIS 11-30 words, CommandTalk 5-20, the treebank rules 5-15), parsed by
the cleanup variant with the default read-back (``"cancel"``) and codebook (seed 0),
float32, one thread, in both orders, at the d of the grammar: per point, micro F1 over the
cells, the share of exact charts, the share the certificate calls sure and the seconds of
the parses (the orders alternate sentence by sentence, so that both see the same load).

Usage::

    python docs/lab/width_study.py --grammar atis --path PATH/atis.cfg
    python docs/lab/width_study.py --grammar commandtalk
    python docs/lab/width_study.py --grammar ptb --path PATH/ptb_sample.cfg
    python docs/lab/width_study.py --table

Results go to docs/lab/width_GRAMMAR.json (a rerun skips the points there).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from default_study import GRAMMARS, LABELS, SENTENCES, record, summary
from readback_study import load
from tqdm import tqdm

import fastdcyk as fd

HERE = Path(__file__).resolve().parent
DIMS = {"atis": (128, 256), "commandtalk": (256, 512), "ptb": (1024,)}
ORDERS = ("cell", "width")


def run(args: argparse.Namespace) -> None:
    fd.threads.set_threads(1)
    out = HERE / f"width_{args.grammar}.json"
    done = json.loads(out.read_text()) if out.exists() else {}
    g = load(args.grammar, args.path)
    _, (lo, hi), _, _ = GRAMMARS[args.grammar]
    sents = fd.generate(g, SENTENCES, min_len=lo, max_len=hi, seed=1)
    golds = [fd.cyk(g, w) for w in sents]
    for d in args.dims or DIMS[args.grammar]:
        if str(d) in done:
            continue
        cb = fd.Codebook.for_grammar(g, d, 0)
        for order in ORDERS:  # warm: rule tables, kernels
            fd.dcyk(g, sents[0][:3], cb, order=order)
        rows: dict[str, list] = {o: [] for o in ORDERS}
        for w, gold in zip(tqdm(sents, desc=f"d={d}", leave=False), golds, strict=True):
            for order in ORDERS:
                t0 = time.perf_counter()
                r = fd.dcyk(g, w, cb, order=order, progress=False)
                rows[order].append(record(gold, r, time.perf_counter() - t0))
        done[str(d)] = {o: {"rows": rows[o], **summary(rows[o])} for o in ORDERS}
        out.write_text(json.dumps(done, indent=1, sort_keys=True) + "\n")
        print(f"d={d}: " + "; ".join(f"{o} {_line(done[str(d)][o])}" for o in ORDERS), flush=True)


def _line(e: dict) -> str:
    return f"F1 {e['f1']:.4f}, exact {e['exact']:.0%}, sure {e['sure']:.0%}, {e['seconds']:.1f} s"


def table() -> None:
    print("| grammar | d | order | F1 | exact | sure | seconds (100 sentences) |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for name in GRAMMARS:
        path = HERE / f"width_{name}.json"
        if not path.exists():
            continue
        for d, entry in sorted(json.loads(path.read_text()).items(), key=lambda kv: int(kv[0])):
            for o in ORDERS:
                e = entry[o]
                print(
                    f"| {LABELS[name]} | {d} | {o} | {e['f1']:.4f} | {e['exact']:.0%} | "
                    f"{e['sure']:.0%} | {e['seconds']:.1f} |"
                )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--grammar", choices=sorted(GRAMMARS))
    ap.add_argument("--path", help="the grammar file (ATIS, the treebank grammar)")
    ap.add_argument("--dims", nargs="*", type=int, help="instead of the grammar's own")
    ap.add_argument("--table", action="store_true")
    args = ap.parse_args()
    if args.table:
        table()
    elif args.grammar:
        run(args)
    else:
        ap.error("give --grammar or --table")

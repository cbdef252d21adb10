"""Seconds per sentence where cells hold hundreds of candidates: the treebank rules of
docs/results.md, study (h) (``ptb_sample.cfg``), the sentences of the certificate study
(``generate(g, N, min_len=5, max_len=15, seed=2)``), parsed one at a time by the default
variant with one thread, at one d; the figures of docs/performance.md, "Reads of many
candidates".

Prints, per sentence, its length, the seconds of its parse (the best of ``--runs``, after
one warm-up parse of the first sentence), the largest number of nonterminals in a cell of
its chart, and whether the certificate called it sure::

    python benchmarks/large_cells.py --path PATH/ptb_sample.cfg --dim 1024 --count 8

``--root DIR`` imports fastdcyk from another checkout (a git worktree of an earlier
commit), for a before-and-after pair in the same session.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

from checkout import use_checkout


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--path", required=True, help="the treebank rules (ptb_sample.cfg)")
    ap.add_argument("--dim", type=int, default=1024)
    ap.add_argument("--count", type=int, default=8, help="sentences, from the list's start")
    ap.add_argument("--skip", type=int, default=0, help="sentences of the list to skip first")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--root", help="import fastdcyk from this checkout instead")
    args = ap.parse_args(argv)
    if args.root:
        use_checkout(args.root)
    import fastdcyk as fd

    fd.threads.set_threads(1)
    with warnings.catch_warnings():  # the rules' undefined symbols: harmless here
        warnings.simplefilter("ignore", fd.GrammarWarning)
        g = fd.Grammar.from_file(args.path, cnf="allow", encoding="utf-8").to_cnf()
    sents = fd.generate(g, args.skip + args.count, min_len=5, max_len=15, seed=2)[args.skip :]
    cb = fd.Codebook.for_grammar(g, args.dim, 0)
    fd.dcyk(g, sents[0], cb, progress=False)  # warm-up: kernels, caches
    total = 0.0
    print(f"fastdcyk {fd.__version__} from {fd.__file__}; d = {args.dim}")
    for words in sents:
        best = float("inf")
        for _ in range(args.runs):
            t0 = time.perf_counter()
            r = fd.dcyk(g, words, cb, progress=False)
            best = min(best, time.perf_counter() - t0)
        total += best
        largest = max(len(cell) for cell in r.chart.values())
        print(f"{len(words):3d} words  {best:7.2f} s  largest cell {largest:5d}  sure {r.sure}")
    print(f"total {total:.2f} s for {len(sents)} sentences")
    return 0


if __name__ == "__main__":
    sys.exit(main())

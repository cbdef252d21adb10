"""The d x d FFTs of one parse, counted by call site (issue 40, item 4).

``python benchmarks/fft_count.py [--d 2048] [--variant paper]`` parses a 7-word G0 sentence
(``generate(G0, 50, min_len=7, max_len=7, seed=0)[0]``) twice with the default codebook (the
first parse builds the plans and index matrices) and prints, for the second, how many
forward and inverse real FFTs of a d x d array it ran, and from where
(docs/performance.md, "The paper variant's transforms").
"""

from __future__ import annotations

import argparse
import collections
import traceback

import fastdcyk as fd
from fastdcyk.engine.prepare import default_codebook
from fastdcyk.options import VARIANTS


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--d", type=int, default=2048)
    ap.add_argument("--variant", default="paper", choices=sorted(VARIANTS))
    args = ap.parse_args()
    d = args.d
    g = fd.Grammar.builtin("G0")
    words = fd.generate(g, 50, min_len=7, max_len=7, seed=0)[0]
    cb = default_codebook(g, d, 0, unitary=VARIANTS[args.variant]["unitary"])
    sites: collections.Counter = collections.Counter()
    cls = type(cb.fft)
    for name in ("rfft", "irfft"):
        original = getattr(cls, name)

        def counted(self, x, *a, _original=original, _name=name, **k):
            if x.ndim == 2 and min(x.shape) >= d // 2:  # a d x d array (or its half spectrum)
                stack = traceback.extract_stack(limit=4)[:-1]
                where = " <- ".join(f"{f.name}:{f.lineno}" for f in reversed(stack))
                sites[(_name, where)] += 1
            return _original(self, x, *a, **k)

        setattr(cls, name, counted)
    fd.dcyk(g, words, cb, variant=args.variant)
    sites.clear()
    fd.dcyk(g, words, cb, variant=args.variant)
    print(f"{' '.join(words)!r}, d = {d}, variant {args.variant}:")
    for (name, where), count in sites.most_common():
        print(f"{count:6d} {name:5s} {where}")
    totals = collections.Counter()
    for (name, _), count in sites.items():
        totals[name] += count
    print(f"d x d transforms: {totals['rfft']} rfft, {totals['irfft']} irfft")


if __name__ == "__main__":
    main()

"""The decision-rule study of docs/method.md (section 3, "The decision rule").

Run with ``python docs/lab/decision_study.py [d ...]`` (default: 256 512): the trace variant with
its defaults (and its own codebooks) on G2 and G4, 100 G0 sentences of length 2..7 (seed 0),
codebook seeds 0..2; micro F1 for
beta in {20, 50, 100} (each a parse) and decoder thresholds {0.5, 0.9, 0.99, 0.999} (the
same parse decoded again from its kept statistics).
"""

from __future__ import annotations

import sys

import fastdcyk as fd

BETAS = (20.0, 50.0, 100.0)
THRESHOLDS = (0.5, 0.9, 0.99, 0.999)

if __name__ == "__main__":
    dims = [int(a) for a in sys.argv[1:]] or [256, 512]
    sents = fd.generate(fd.Grammar.builtin("G0"), 100, min_len=2, max_len=7, seed=0)
    print("| d | grammar | beta | " + " | ".join(f"threshold {t:g}" for t in THRESHOLDS) + " |")
    print("|---:|---|---:|" + "---:|" * len(THRESHOLDS))
    for d, name in ((d, name) for d in dims for name in ("G2", "G4")):
        g = fd.Grammar.builtin(name)
        golds = [fd.cyk(g, s) for s in sents]
        for beta in BETAS:
            totals = [fd.Scores(0, 0, 0) for _ in THRESHOLDS]
            for seed in (0, 1, 2):
                cb = fd.engine.default_codebook(g, d, seed, unitary=True)  # dcyk's own
                for s, gold in zip(sents, golds, strict=True):
                    r = fd.dcyk(g, s, cb, variant="trace", beta=beta, progress=False)
                    for k, t in enumerate(THRESHOLDS):
                        totals[k] = totals[k] + fd.cell_scores(gold, r.chart_at(threshold=t))
            cells = " | ".join(f"{t.f1:.4f}" for t in totals)
            print(f"| {d} | {name} | {beta:g} | {cells} |", flush=True)

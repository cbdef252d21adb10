"""The beta study of docs/method.md: how sigma's slope affects D-CYK's accuracy.

Run with ``python docs/lab/beta_study.py``; prints micro-averaged P, R, F1 and exact tables for
each variant, d and beta over 20 G0 sentences of length 2..7 (the sentences of the
engine's accuracy tests, codebook seed 0).
"""

from __future__ import annotations

import fastdcyk as fd
from fastdcyk.engine.core.decode import decision_boundary
from fastdcyk.options import VARIANTS

g = fd.Grammar.builtin("G0")
sents = fd.generate(g, 20, min_len=2, max_len=7, seed=11)
gold = [fd.cyk(g, s) for s in sents]
print("variant  d     beta  boundary  P      R      F1     exact")
for variant in ("paper", "trace"):
    for d in (512, 1024):
        cb = fd.Codebook(d, seed=0, unitary=VARIANTS[variant]["unitary"])
        for beta in (10.0, 20.0, 50.0, 100.0):
            total = fd.Scores(0, 0, 0)
            exact = 0
            for s, gd in zip(sents, gold, strict=True):
                r = fd.dcyk(g, s, cb, variant=variant, beta=beta, progress=False)
                total = total + fd.cell_scores(gd, r.chart)
                exact += r.chart == gd
            bound = decision_boundary(beta, 0.99)
            print(
                f"{variant:8s} {d:5d} {beta:5.0f}  {bound:.3f}     {total.precision:.3f}  "
                f"{total.recall:.3f}  {total.f1:.3f}  {exact}/{len(sents)}",
                flush=True,
            )

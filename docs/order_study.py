"""The order study of docs/method.md: the paper's order against ``order="cell"``.

Run with ``python docs/order_study.py``; prints micro-averaged P, R, F1 and exact tables for
each grammar G0..G4, variant and order over the distinct sentences of a sample of 200 G0
sentences of length 2..7 (every grammar accepts them), at d = 1024, codebook seeds 0 and 1.
"""

from __future__ import annotations

import fastdcyk as fd
from fastdcyk.engine import VARIANTS

D, SEEDS = 1024, (0, 1)
g0 = fd.Grammar.builtin("G0")
sents = sorted(set(fd.generate(g0, 200, min_len=2, max_len=7, seed=0)), key=lambda s: (len(s), s))
print(f"{len(sents)} distinct sentences, d = {D}, codebook seeds {SEEDS}")
print("grammar  variant  order       P      R      F1     exact")
for name in ("G0", "G1", "G2", "G3", "G4"):
    g = fd.Grammar.builtin(name)
    gold = [fd.cyk(g, s) for s in sents]
    for variant in ("paper", "trace"):
        for order in ("sequential", "cell"):
            total = fd.Scores(0, 0, 0)
            exact = 0
            for seed in SEEDS:
                cb = fd.Codebook(D, seed=seed, unitary=VARIANTS[variant]["unitary"])
                for s, gd in zip(sents, gold, strict=True):
                    r = fd.dcyk(g, s, cb, variant=variant, order=order)
                    total = total + fd.cell_scores(gd, r.chart)
                    exact += r.chart == gd
            print(
                f"{name:8s} {variant:8s} {order:10s}  {total.precision:.3f}  {total.recall:.3f}  "
                f"{total.f1:.3f}  {exact}/{len(sents) * len(SEEDS)}",
                flush=True,
            )

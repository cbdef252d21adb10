"""The worked example of docs/method.md: D-CYK on the running example "a a b".

Run it with ``python docs/lab/worked_example.py``; every number in docs/method.md's example
section is printed by this script.
"""

from __future__ import annotations

import numpy as np

import fastdcyk as fd
from fastdcyk.display import format_chart

D = 1024
g = fd.Grammar.builtin("example")
words = "a a b".split()
gold = fd.cyk(g, words)

print(f"grammar:\n{g}\n")
print("symbolic CYK:")
print(format_chart(gold, words, nonterminals=g.nonterminals))

cb = fd.Codebook(D, seed=0)
print("\nthe operator algebra:")
for name, op in [
    ("[a]+", cb.plus("terminal", "a")),
    ("[a]-", cb.minus("terminal", "a")),
    ("[a]+ [a]-", cb.plus("terminal", "a") @ cb.minus("terminal", "a")),
    ("[j]- [i]+ (span check)", cb.minus("index", 3) @ cb.plus("index", 1)),
    (
        "R_b^S = [D]+ [E]- + [D]+ [S]-",
        sum(
            cb.plus("nonterminal", b) @ cb.minus("nonterminal", c)
            for b, c in (("D", "E"), ("D", "S"))
        ),
    ),
]:
    print(f"  {name:32s} -> {op.skeleton()}")
m = (cb.plus("terminal", "a") @ cb.minus("terminal", "a")).to_dense()
off = m[~np.eye(D, dtype=bool)]
print(
    f"  [a]+ [a]- at d = {D}: mean diagonal {np.diag(m).mean():.4f}, "
    f"off-diagonal std {off.std():.4f} (1/sqrt(d) = {1 / np.sqrt(D):.4f})"
)

for variant in ("paper", "trace"):
    r = fd.dcyk(g, words, d=D, variant=variant, record=True)
    o = r.options
    print(
        f"\n=== variant={variant}: gate={o.gate}, decoder={o.decoder}, beta={o.beta:g}, "
        f"threshold={o.threshold}, unitary={r.codebook.unitary}, d={D}"
    )
    print("detections (P_A's diagonal mean, largest entry, applied):")
    for e in r.log:
        print(
            f"  {e['step']:6s} ({e['i']}, {e['j']}) {e['A']}: diag mean {e['p_diag_mean']:.3f}"
            f"  max {e['p_max']:.3g}  {'applied' if e['applied'] else 'pruned'}"
        )
    bound = 0.5 + np.log(o.threshold / (1 - o.threshold)) / o.beta
    print(f"decoder statistics (A is decoded in (i, j) when > {bound:.3f}):")
    for i, j in sorted(gold):
        cells = "  ".join(f"{a}={r.statistics[(i, j, a)]:+.3f}" for a in g.nonterminals)
        print(f"  ({i}, {j}): {cells}")
    print("decoded chart against symbolic CYK (+A false positive, -A miss):")
    print(format_chart(r.chart, words, gold=gold, nonterminals=g.nonterminals))
    print(f"cells: {fd.cell_scores(gold, r.chart)}")

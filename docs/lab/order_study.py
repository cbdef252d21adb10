"""The order study of docs/method.md: the paper's order against ``order="cell"``.

Run with ``python docs/lab/order_study.py``; prints micro-averaged P, R, F1 and exact tables for
each grammar G0..G4, variant and order over the distinct sentences of a sample of 200 G0
sentences of length 2..7 (every grammar accepts them), at d = 1024, codebook seed 0. The
jobs run on a process pool, one per core.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor

import fastdcyk as fd
from fastdcyk import threads
from fastdcyk.options import VARIANTS

D, SEED = 1024, 0
GRAMMARS = ("G0", "G1", "G2", "G3", "G4")


def sentences() -> list[tuple[str, ...]]:
    sample = fd.generate(fd.Grammar.builtin("G0"), 200, min_len=2, max_len=7, seed=0)
    return sorted(set(sample), key=lambda s: (len(s), s))


def job(args: tuple[str, str, str]) -> tuple[str, str, str, fd.Scores, int]:
    name, variant, order = args
    threads.set_threads(1)
    g = fd.Grammar.builtin(name)
    cb = fd.Codebook(D, seed=SEED, unitary=VARIANTS[variant]["unitary"], threads=1)
    total, exact = fd.Scores(0, 0, 0), 0
    for s in sentences():
        gold = fd.cyk(g, s)
        chart = fd.dcyk(g, s, cb, variant=variant, order=order, progress=False).chart
        total = total + fd.cell_scores(gold, chart)
        exact += chart == gold
    return name, variant, order, total, exact


if __name__ == "__main__":
    jobs = [(n, v, o) for n in GRAMMARS for v in ("paper", "trace") for o in ("sequential", "cell")]
    n = len(sentences())
    print(f"{n} distinct sentences, d = {D}, codebook seed {SEED}")
    print("| grammar | variant | order | P | R | F1 | exact tables |")
    print("|---|---|---|---:|---:|---:|---:|")
    with ProcessPoolExecutor(os.cpu_count()) as pool:
        for name, variant, order, sc, exact in pool.map(job, jobs):
            print(
                f"| {name} | {variant} | {order} | {sc.precision:.3f} | {sc.recall:.3f} | "
                f"{sc.f1:.3f} | {exact}/{n} |",
                flush=True,
            )

"""The trace variant's fidelity targets of docs/results.md ("Fidelity of the trace variant").

Run with ``python docs/targets_study.py [--variant V] [d ...]`` (default: the trace variant,
d in 1024 2048). For every d it parses, with the variant and its defaults (for the trace
variant: roles encoding, unitary vectors, shifted span indices):

- 200 sentences of length 2..7 drawn from G0 (seed 0, as in the paper: every grammar
  accepts them) with each of G0..G4;
- 200 sentences of length 2..7 drawn from each of G1..G4 itself (seed 0);
- 200 sentences of length 2..7 drawn from each of NLTK's two demo grammars
  (``nltk.parse.chart.demo_grammar()`` and ``nltk.parse.generate.demo_grammar``, converted
  to CNF);

with codebook seeds 0, 1 and 2, and prints micro-averaged P, R, F1 over all (i, j, A)
triples and the count of exact tables. Jobs run on a process pool, one per core.
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ProcessPoolExecutor

import fastdcyk as fd
from fastdcyk import threads

SEEDS = (0, 1, 2)
N_SENTENCES = 200


def grammar(name: str) -> fd.Grammar:
    if name.startswith("nltk-"):
        import nltk
        from nltk.parse.chart import demo_grammar as chart_demo
        from nltk.parse.generate import demo_grammar as generate_demo

        src = chart_demo() if name == "nltk-chart" else nltk.CFG.fromstring(generate_demo)
        return fd.Grammar.from_nltk(src, cnf="convert")
    return fd.Grammar.builtin(name)


def job(args: tuple[str, str, int, int, str]) -> tuple[str, str, int, int, fd.Scores, int, int]:
    name, source, d, seed, variant = args
    threads.set_threads(1)
    g = grammar(name)
    sents = fd.generate(grammar(source), N_SENTENCES, min_len=2, max_len=7, seed=0)
    cb = fd.engine.default_codebook(g, d, seed, unitary=True, threads=1)  # dcyk's own
    total, exact = fd.Scores(0, 0, 0), 0
    for s in sents:
        gold = fd.cyk(g, s)
        chart = fd.dcyk(g, s, cb, variant=variant).chart
        total = total + fd.cell_scores(gold, chart)
        exact += chart == gold
    return name, source, d, seed, total, exact, len(sents)


def jobs(dims: list[int], variant: str) -> list[tuple[str, str, int, int, str]]:
    pairs = [(f"G{k}", "G0") for k in range(5)]
    pairs += [(f"G{k}", f"G{k}") for k in range(1, 5)]
    pairs += [("nltk-chart", "nltk-chart"), ("nltk-generate", "nltk-generate")]
    return [(n, src, d, seed, variant) for d in dims for n, src in pairs for seed in SEEDS]


if __name__ == "__main__":
    argv = sys.argv[1:]
    variant = "trace"
    if argv[:1] == ["--variant"]:
        variant, argv = argv[1], argv[2:]
    dims = [int(a) for a in argv] or [1024, 2048]
    print(f"variant {variant}")
    print("| d | grammar | sentences from | P | R | F1 | exact tables |")
    print("|---:|---|---|---:|---:|---:|---:|")
    acc: dict[tuple[str, str, int], list] = {}
    with ProcessPoolExecutor(os.cpu_count()) as pool:
        for name, src, d, _seed, sc, exact, n in pool.map(job, jobs(dims, variant)):
            a = acc.setdefault((name, src, d), [fd.Scores(0, 0, 0), 0, 0, 0])
            a[0], a[1], a[2], a[3] = a[0] + sc, a[1] + exact, a[2] + n, a[3] + 1
            if a[3] == len(SEEDS):
                t = a[0]
                print(
                    f"| {d} | {name} | {src} | {t.precision:.4f} | {t.recall:.4f} | "
                    f"{t.f1:.4f} | {a[1]}/{a[2]} |",
                    flush=True,
                )

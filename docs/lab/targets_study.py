"""The trace variant's fidelity targets of docs/results.md ("Fidelity of the trace variant").

Run with ``python docs/lab/targets_study.py [--variant V] [--atis PATH] [d ...]`` (default: the
trace variant, d in 1024 2048). For every d it parses, with the variant and its defaults
(for the trace variant: roles encoding, unitary vectors, shifted span indices):

- 200 sentences of length 2..7 drawn from G0 (seed 0, as in the paper: every grammar
  accepts them) with each of G0..G4;
- 200 sentences of length 2..7 drawn from each of G1..G4 itself (seed 0);
- 200 sentences of length 2..7 drawn from each of NLTK's two demo grammars
  (``nltk.parse.chart.demo_grammar()`` and ``nltk.parse.generate.demo_grammar``, converted
  to CNF);

with codebook seeds 0, 1 and 2, and prints micro-averaged P, R, F1 over all (i, j, A)
triples, the count of exact tables, and the count of sentences whose best tree
(``DCYKResult.tree``) is a parse of the sentence under the grammar (``is_parse``). With
``--atis PATH`` (NLTK's atis.cfg, converted to CNF) it also parses 200 sentences of 3 to 10
words drawn from ATIS (seed 1, as docs/lab/realgrammar_study.py). Jobs run on a process pool,
one per core.
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ProcessPoolExecutor

import fastdcyk as fd
from fastdcyk import threads

SEEDS = (0, 1, 2)
N_SENTENCES = 200


ATIS: str | None = None


def grammar(name: str) -> fd.Grammar:
    if name == "atis":
        return fd.Grammar.from_file(ATIS, cnf="allow").to_cnf()
    if name.startswith("nltk-"):
        import nltk
        from nltk.parse.chart import demo_grammar as chart_demo
        from nltk.parse.generate import demo_grammar as generate_demo

        src = chart_demo() if name == "nltk-chart" else nltk.CFG.fromstring(generate_demo)
        return fd.Grammar.from_nltk(src, cnf="convert")
    return fd.Grammar.builtin(name)


def job(args: tuple) -> tuple[str, str, int, int, fd.Scores, int, int, int]:
    name, source, d, seed, variant, atis = args
    global ATIS
    ATIS = atis
    threads.set_threads(1)
    g = grammar(name)
    if source == "atis":
        sents = fd.generate(g, N_SENTENCES, min_len=3, max_len=10, seed=1)
    else:
        sents = fd.generate(grammar(source), N_SENTENCES, min_len=2, max_len=7, seed=0)
    cb = fd.engine.default_codebook(g, d, seed, unitary=True, threads=1)  # dcyk's own
    total, exact, trees = fd.Scores(0, 0, 0), 0, 0
    for s in sents:
        gold = fd.cyk(g, s)
        r = fd.dcyk(g, s, cb, variant=variant, progress=False)
        total = total + fd.cell_scores(gold, r.chart)
        exact += r.chart == gold
        tree = r.tree(cnf=True)
        trees += tree is not None and fd.is_parse(tree, g, s)
    return name, source, d, seed, total, exact, trees, len(sents)


def jobs(dims: list[int], variant: str, atis: str | None) -> list[tuple]:
    pairs = [("atis", "atis")] if atis else []
    pairs += [(f"G{k}", "G0") for k in range(5)]
    pairs += [(f"G{k}", f"G{k}") for k in range(1, 5)]
    pairs += [("nltk-chart", "nltk-chart"), ("nltk-generate", "nltk-generate")]
    return [(n, src, d, seed, variant, atis) for d in dims for n, src in pairs for seed in SEEDS]


if __name__ == "__main__":
    argv = sys.argv[1:]
    variant = "trace"
    atis = None
    while argv[:1] in (["--variant"], ["--atis"]):
        if argv[0] == "--variant":
            variant = argv[1]
        else:
            atis = argv[1]
        argv = argv[2:]
    dims = [int(a) for a in argv] or [1024, 2048]
    print(f"variant {variant}")
    print("| d | grammar | sentences from | P | R | F1 | exact tables | best tree a parse |")
    print("|---:|---|---|---:|---:|---:|---:|---:|")
    acc: dict[tuple[str, str, int], list] = {}
    with ProcessPoolExecutor(os.cpu_count()) as pool:
        for name, src, d, _seed, sc, exact, trees, n in pool.map(job, jobs(dims, variant, atis)):
            a = acc.setdefault((name, src, d), [fd.Scores(0, 0, 0), 0, 0, 0, 0])
            a[0], a[1], a[2], a[3], a[4] = a[0] + sc, a[1] + exact, a[2] + trees, a[3] + n, a[4] + 1
            if a[4] == len(SEEDS):
                t = a[0]
                print(
                    f"| {d} | {name} | {src} | {t.precision:.4f} | {t.recall:.4f} | "
                    f"{t.f1:.4f} | {a[1]}/{a[3]} | {a[2]}/{a[3]} |",
                    flush=True,
                )

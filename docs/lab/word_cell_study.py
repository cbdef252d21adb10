"""Study (l) of docs/results.md: how often a chart called sure is wrong at a small d, where
words' cells go wrong (the certificate's check of word cells, docs/method.md, section 7,
"A certificate per cell", (3)).

The paper's grammars G0 to G4 (100 sentences of 3 to 12 words each, ``fd.generate(g, 100,
min_len=3, max_len=12, seed=7)``) at d = 32, 48 and 64, and a random grammar of 60
nonterminals (``fd.random_grammar(60, 20, 400, ambiguity=3, seed=1)``, 40 sentences of 8
to 14 words, seed 1) at d = 24, 32, 64 and 128; the default variant (clean-up, cancelling,
with its certificate), float32. Per point: the charts that are not CYK's, the charts called
sure, and those called sure but wrong.

    python docs/lab/word_cell_study.py            # this checkout
    PYTHONPATH=OTHER python docs/lab/word_cell_study.py   # another checkout of fastdcyk

About three minutes on one core.
"""

from __future__ import annotations

import warnings

import fastdcyk as fd

POINTS = [
    *((name, None, (32, 48, 64)) for name in ("G0", "G1", "G2", "G3", "G4")),
    ("random 60", (60, 20, 400), (24, 32, 64, 128)),
]


def main() -> None:
    warnings.simplefilter("ignore", fd.DimensionWarning)
    print("| grammar | d | sentences | wrong | called sure | sure but wrong |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, spec, dims in POINTS:
        if spec is None:
            g = fd.Grammar.builtin(name)
            sents = fd.generate(g, 100, min_len=3, max_len=12, seed=7)
        else:
            g = fd.random_grammar(*spec, ambiguity=3, seed=1)
            sents = fd.generate(g, 40, min_len=8, max_len=14, seed=1)
        gold = [fd.cyk(g, s) for s in sents]
        for d in dims:
            wrong = sure = missed = 0
            for s, chart in zip(sents, gold, strict=True):
                r = fd.dcyk(g, s, d=d, progress=False)
                right = r.chart == chart
                wrong += not right
                sure += r.sure
                missed += r.sure and not right
            print(f"| {name} | {d} | {len(sents)} | {wrong} | {sure} | {missed} |", flush=True)


if __name__ == "__main__":
    main()

"""A corpus parsed: sentences a second by policy for d and by worker count
(docs/performance.md, "A corpus in, trees out").

    python benchmarks/corpus_rates.py --grammar PATH/atis.cfg --sentences PATH/atis_sentences.txt
        [--repeat 10] [--before CHECKOUT]

The corpus is the ATIS test sentences of NLTK's large_grammars data (``atis_sentences.txt``:
lines ``N : words``, N the number of parses; kept: N > 0 and 2 to 30 words, 70 sentences)
under NLTK's ATIS grammar (``atis.cfg``, converted to CNF), repeated ``--repeat`` times so
that the policy for d and the workers' start-up are amortised as on a real corpus. Every
run is a fresh process (fresh caches and tables; the Numba cache warm), which parses one
sentence at d = 128 and 256 before its clock starts:

- ``dcyk`` at d = 128 and at d = 256 for every sentence, one after the other (each
  result's d and certificate kept, not the result);
- the same at d = 128 on one thread (``fastdcyk.threads.set_threads(1)``: FFTs, kernels and BLAS);
- ``dcyk`` with ``d="auto"``, one after the other;
- ``--before CHECKOUT``: the same with the fastdcyk of another checkout (a commit before the
  fastest-sure-d policy), its ``d="auto"`` the smallest sure d;
- ``parse_corpus`` with 1 worker (every core, and one thread) and with 2 (the start of
  the worker processes counted; each worker runs on one thread).

Each line says sentences a second and the d the sentences were parsed at; then the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

RUN = r"""
import json, sys, time, warnings
from collections import Counter
warnings.simplefilter("ignore")
import fastdcyk as fd
kind, grammar, corpus = sys.argv[1], sys.argv[2], sys.argv[3]
if kind.endswith(" threads=1"):
    kind = kind[: -len(" threads=1")]
    fd.threads.set_threads(1)
g = fd.Grammar.from_file(grammar, cnf="allow").to_cnf()
sents = [line.split() for line in open(corpus, encoding="utf-8")]
for d in (128, 256):
    fd.dcyk(g, sents[0], d=d)
fd.clear_caches()
t0 = time.perf_counter()
if kind.startswith("d="):
    d = kind[2:]
    ds, sure = [], 0
    for s in sents:  # what a record keeps, not the results (a few MB each)
        r = fd.dcyk(g, s, d=d if d == "auto" else int(d))
        ds.append(r.codebook.d)
        sure += bool(r.sure)
else:
    s = fd.parse_corpus(g, corpus, workers=int(kind[8:]), progress=False)
    ds = [r["d"] for r in s.records]
    sure = sum(bool(r["sure"]) for r in s.records)
seconds = time.perf_counter() - t0
print(json.dumps({"seconds": seconds, "d": sorted(Counter(ds).items()), "sure": sure}))
"""


def atis_test_sentences(path: Path) -> list[str]:
    """The test sentences of NLTK's ``atis_sentences.txt``: parsed by the grammar (N > 0),
    2 to 30 words."""
    kept = []
    for line in path.read_text(encoding="latin-1").splitlines():
        if line.startswith("#") or " : " not in line:
            continue
        count, words = line.split(" : ", 1)
        if int(count) > 0 and 2 <= len(words.split()) <= 30:
            kept.append(" ".join(words.split()))
    return kept


def run(kind: str, grammar: Path, corpus: Path, source: Path | None) -> dict:
    """One timed run in a fresh process (``source``: another checkout's fastdcyk)."""
    env = dict(os.environ)
    if source is not None:
        env["PYTHONPATH"] = str(source)
    out = subprocess.run(
        [sys.executable, "-c", RUN, kind, str(grammar), str(corpus)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--grammar", type=Path, required=True, help="NLTK's atis.cfg")
    p.add_argument("--sentences", type=Path, required=True, help="NLTK's atis_sentences.txt")
    p.add_argument(
        "--repeat", type=int, default=10, help="the corpus is the sentences this many times"
    )
    p.add_argument("--before", type=Path, help="a checkout of an earlier fastdcyk")
    args = p.parse_args(argv)
    sentences = atis_test_sentences(args.sentences)
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus.txt"
        corpus.write_text("\n".join(sentences * args.repeat) + "\n", encoding="utf-8")
        lines = len(sentences) * args.repeat
        print(f"{len(sentences)} sentences x {args.repeat} = {lines} lines", flush=True)
        kinds = [("d=128", None), ("d=128 threads=1", None), ("d=256", None), ("d=auto", None)]
        if args.before is not None:
            kinds.append(("d=auto", args.before))
        kinds += [("workers=1", None), ("workers=1 threads=1", None), ("workers=2", None)]
        rate = {}
        for kind, source in kinds:
            got = run(kind, args.grammar, corpus, source)
            label = f"{kind} ({'before' if source else 'now'})"
            rate[label] = lines / got["seconds"]
            print(
                f"{label}: {rate[label]:.1f} sentences/s in {got['seconds']:.1f} s, "
                f"d {got['d']}, sure {got['sure']}/{lines}",
                flush=True,
            )
        one = max(rate["workers=1 (now)"], rate["workers=1 threads=1 (now)"])
        if args.before is not None:
            ratio = one / rate["d=auto (before)"]
            print(
                f"1 worker (the faster thread count), fastest sure d / d='auto' before: {ratio:.2f}"
            )
        print(
            f"2 workers / 1 worker (the faster thread count): {rate['workers=2 (now)'] / one:.2f}"
        )


if __name__ == "__main__":
    main()

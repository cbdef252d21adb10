"""Where a corpus run's time goes: the figures behind docs/performance.md, "What the first
measurements missed, and the figures after".

    python benchmarks/corpus_parts.py PART --grammar PATH/atis.cfg \
        --sentences PATH/atis_sentences.txt        # PART: held, startup or trees
    python benchmarks/corpus_parts.py blas --grammar PATH/ptb_sample.cfg

With ``PYTHONPATH=CHECKOUT`` a part runs another checkout's fastdcyk (``trees`` before the
first tree was found without counts: d0db71e).

- ``held``: the 70 ATIS test sentences three times at d = 128 (``r.sure`` asked, as a
  record does), the results dropped or held, each in a fresh process: sentences a second
  and the peak resident memory;
- ``startup``: ``parse_corpus`` of the first 8 sentences with 1 worker and with 2, twice
  each, in one process (its grammar built first): the seconds of each run;
- ``trees``: ``tree()`` of the 70 sentences' parses at d = 256, timed after the parses;
- ``blas``: 3 generated sentences of 18 to 22 words of the given grammar (the Penn
  Treebank sample's rules) at d = 1024 and 2048, BLAS on every core and on one
  (threadpoolctl), two rounds: seconds a sentence.

The import time was read with ``python -X importtime -c "import fastdcyk"`` (its last line).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus_rates import atis_test_sentences  # noqa: E402

HELD = r"""
import resource, sys, time, warnings
warnings.simplefilter("ignore")
import fastdcyk as fd
keep, grammar, corpus = sys.argv[1] == "keep", sys.argv[2], sys.argv[3]
g = fd.Grammar.from_file(grammar, cnf="allow").to_cnf()
sents = [line.split() for line in open(corpus, encoding="utf-8")]
fd.dcyk(g, sents[0], d=128).sure
held = []
t0 = time.perf_counter()
for s in sents * 3:
    r = fd.dcyk(g, s, d=128)
    r.sure
    if keep:
        held.append(r)
rate = 3 * len(sents) / (time.perf_counter() - t0)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"results {'held' if keep else 'dropped'}: {rate:.1f} sentences/s, peak {peak:.0f} MB")
"""


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("part", choices=["held", "startup", "trees", "blas"])
    p.add_argument("--grammar", type=Path, required=True)
    p.add_argument("--sentences", type=Path, help="NLTK's atis_sentences.txt")
    args = p.parse_args(argv)
    warnings.simplefilter("ignore")
    import fastdcyk as fd

    g = fd.Grammar.from_file(args.grammar, cnf="allow").to_cnf()
    if args.part == "blas":
        from threadpoolctl import threadpool_limits

        sents = fd.generate(g, 3, min_len=18, max_len=22, seed=1)
        for d in (1024, 2048):
            fd.dcyk(g, sents[0], d=d)
            for _ in range(2):
                for blas in (None, 1):
                    with threadpool_limits(blas, user_api="blas"):
                        t0 = time.perf_counter()
                        sure = [fd.dcyk(g, s, d=d).sure for s in sents]
                        took = (time.perf_counter() - t0) / len(sents)
                    print(
                        f"d = {d}, BLAS on {blas or 'every core'}: {took:.2f} s a sentence "
                        f"({sum(map(bool, sure))} sure)"
                    )
        return
    if args.sentences is None:
        p.error(f"{args.part} needs --sentences")
    sentences = atis_test_sentences(args.sentences)
    if args.part == "held":
        corpus = Path(__file__).resolve().parent / ".corpus_parts.txt"
        corpus.write_text("\n".join(sentences) + "\n", encoding="utf-8")
        try:
            for keep in ("drop", "keep"):
                cmd = [sys.executable, "-c", HELD, keep, str(args.grammar), str(corpus)]
                print(
                    subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()
                )
        finally:
            corpus.unlink()
    elif args.part == "startup":
        fd.dcyk(g, sentences[0].split(), d=128)
        for workers in (1, 2, 1, 2):
            t0 = time.perf_counter()
            fd.parse_corpus(g, sentences[:8], workers=workers, progress=False)
            print(
                f"8 lines, {workers} worker{'s' if workers > 1 else ''}: "
                f"{time.perf_counter() - t0:.2f} s"
            )
    else:
        results = [fd.dcyk(g, s.split(), d=256) for s in sentences]
        t0 = time.perf_counter()
        for r in results:
            r.tree()
        print(f"tree() of {len(results)} parses at d = 256: {time.perf_counter() - t0:.2f} s")


if __name__ == "__main__":
    main()

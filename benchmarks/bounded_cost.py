"""What the bounded read costs a parse: the CommandTalk sentences of tests/conftest.py's
BIG_CELLS (cells of 122 to 373 symbols) parsed at d (default 256) with the bounded read
from 0.9 d on (the default, ``engine.readback.BOUNDED_FROM``) and with the ridge solve at
every size (the read before it), interleaved, best of 3, one thread; with the charts'
exactness and the certificate's verdicts of both (docs/performance.md):

    python benchmarks/bounded_cost.py [d]
"""

import sys
import time
import warnings
from pathlib import Path

import fastdcyk as fd
from fastdcyk.engine.core import readback

fd.threads.set_threads(1)
d = int(sys.argv[1]) if len(sys.argv) > 1 else 256
root = Path(__file__).parents[1]
sys.path.insert(0, str(root / "tests"))
from conftest import BIG_CELLS  # noqa: E402  (the sentences the tests use)

with warnings.catch_warnings():  # its few undefined symbols
    warnings.simplefilter("ignore", fd.GrammarWarning)
    path = root / "tests" / "data" / "commandtalk.cfg.gz"
    g = fd.Grammar.from_file(path, cnf="allow", encoding="latin-1").to_cnf()
sents = [s.split() for s in BIG_CELLS]
golds = [fd.cyk(g, w) for w in sents]
cb = fd.Codebook.for_grammar(g, d, 0, threads=1)
fd.dcyk(g, sents[0], cb)  # warm: rule tables, kernels
default = readback.BOUNDED_FROM
best = {"bounded": float("inf"), "linear": float("inf")}
verdicts = {}
for _ in range(3):
    for name in best:
        readback.BOUNDED_FROM = default if name == "bounded" else 1e6  # never bounded
        t0 = time.perf_counter()
        results = [fd.dcyk(g, w, cb, progress=False) for w in sents]
        best[name] = min(best[name], time.perf_counter() - t0)
        exact = sum(r.chart == gold for r, gold in zip(results, golds, strict=True))
        verdicts[name] = (exact, sum(bool(r.sure) for r in results))
readback.BOUNDED_FROM = default
for name, seconds in best.items():
    exact, sure = verdicts[name]
    print(
        f"d = {d}, {name}: {seconds / len(sents):.4f} s per sentence, "
        f"{exact} of {len(sents)} exact, {sure} sure"
    )
print(f"bounded / linear: {best['bounded'] / best['linear']:.2f}x")

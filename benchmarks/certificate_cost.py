"""What the certificate costs a cancelling parse: six 15-word CommandTalk sentences
(``generate(..., seed=3)``) parsed at d (default 512) with the certificate and with its
per-cell work replaced by nothing, interleaved, best of 3, one thread
(docs/performance.md):

    python benchmarks/certificate_cost.py [d]
"""

import sys
import time
import warnings
from pathlib import Path

import fastdcyk as fd
from fastdcyk.engine.core.certificate import CertificateBuilder

fd.threads.set_threads(1)
d = int(sys.argv[1]) if len(sys.argv) > 1 else 512
path = Path(__file__).parents[1] / "tests" / "data" / "commandtalk.cfg.gz"
with warnings.catch_warnings():  # its few undefined symbols
    warnings.simplefilter("ignore", fd.GrammarWarning)
    g = fd.Grammar.from_file(path, cnf="allow", encoding="latin-1").to_cnf()
sents = fd.generate(g, 6, min_len=15, max_len=15, seed=3)
cb = fd.Codebook.for_grammar(g, d, 0, threads=1)
fd.dcyk(g, sents[0][:3], cb)  # warm: rule tables, kernels
with_it = CertificateBuilder.add
best = {"with": float("inf"), "without": float("inf")}
for _ in range(3):
    for name in best:
        CertificateBuilder.add = with_it if name == "with" else (lambda self, *a, **k: None)
        t0 = time.perf_counter()
        for w in sents:
            fd.dcyk(g, w, cb, progress=False)
        best[name] = min(best[name], time.perf_counter() - t0)
CertificateBuilder.add = with_it
print(
    f"d = {d}: {best['with'] / len(sents):.3f} s per sentence with the certificate, "
    f"{best['without'] / len(sents):.3f} s without: {best['with'] / best['without']:.3f}x"
)

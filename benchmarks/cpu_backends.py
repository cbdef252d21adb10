"""The numpy backend one sentence at a time against the torch backend's batches, on the CPU:
the rule by which ``dcyk_batch`` chooses its backend (docs/performance.md, "Many sentences
on a CPU").

    python benchmarks/cpu_backends.py

For G2 (50 sentences of 4 to 10 words) and CommandTalk (30 of 5 to 15,
tests/data/commandtalk.cfg.gz), seed 2, the default variant: sentences a second with the
numpy backend at the d the certificate chooses per sentence (``dcyk_batch``'s defaults), the
numpy backend at the largest d chosen, and the torch backend's batches at that d (its own
threads), each the best of 3, after a warm-up.
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import fastdcyk as fd

COMMANDTALK = Path(__file__).resolve().parents[1] / "tests" / "data" / "commandtalk.cfg.gz"


def main() -> None:
    warnings.simplefilter("ignore")
    ct = fd.Grammar.from_file(COMMANDTALK, cnf="allow", encoding="latin-1").to_cnf()
    cases = (
        ("G2", fd.Grammar.builtin("G2"), (4, 10), 50),
        ("CommandTalk", ct, (5, 15), 30),
    )
    for name, g, (lo, hi), count in cases:
        sents = fd.generate(g, count, min_len=lo, max_len=hi, seed=2)
        d = max(r.codebook.d for r in fd.dcyk_batch(g, sents))
        fd.dcyk_batch(g, sents[:2], d=d, backend="torch")  # warm
        runs = {
            "numpy, d chosen per sentence": {},
            f"numpy, d = {d}": {"d": d, "backend": "numpy"},
            f"torch batches, d = {d}": {"d": d, "backend": "torch"},
        }
        best = dict.fromkeys(runs, float("inf"))
        for _ in range(3):
            for label, kw in runs.items():
                t0 = time.perf_counter()
                fd.dcyk_batch(g, sents, **kw)
                best[label] = min(best[label], time.perf_counter() - t0)
        for label, seconds in best.items():
            print(f"{name}: {label}: {len(sents) / seconds:.1f} sentences/s", flush=True)


if __name__ == "__main__":
    main()

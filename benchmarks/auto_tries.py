"""d="auto" over a loop of sentences, with a given checkout of fastdcyk (before and after a
change, alternating fresh processes): the loop's seconds, the tries, and, where a try stopped
at its first suspect cell, the share of the sentence's cells it had read.

    python benchmarks/auto_tries.py --root CHECKOUT --path PATH/ptb_sample.cfg
    python benchmarks/auto_tries.py --root CHECKOUT --first   # the first parse at each d

The codebooks of d = 128 to 2048 are built and warm before the loop (``--first`` times the
first parse at 128, 256 and 512 of CommandTalk instead, codebook built inside, against the
second); no d is kept when the loop starts; one thread (run with OPENBLAS_NUM_THREADS=1).
Recorded in docs/performance.md, "d chosen by the certificate".
"""

from __future__ import annotations

import argparse
import time
import warnings

from checkout import use_checkout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", required=True, help="the checkout of fastdcyk to import")
    ap.add_argument("--path", help="a grammar file (default: CommandTalk)")
    ap.add_argument("--sentences", type=int, default=16)
    ap.add_argument("--lengths", type=int, nargs=2, default=(5, 15))
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--first", action="store_true")
    args = ap.parse_args()
    use_checkout(args.root)  # the checkout given, not the installed (editable) one
    import numpy as np
    from bench_readback import commandtalk

    import fastdcyk as fd
    from fastdcyk.engine import auto
    from fastdcyk.engine.core import certificate

    fd.threads.set_threads(1)
    if args.path:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", fd.GrammarWarning)
            g = fd.Grammar.from_file(args.path, cnf="allow").to_cnf()
    else:
        g = commandtalk()
    lo, hi = args.lengths
    sents = fd.generate(g, args.sentences, min_len=lo, max_len=hi, seed=args.seed)
    if args.first:
        fd.dcyk(g, sents[0][:3], d=64, progress=False)  # the kernels compiled
        for d in (128, 256, 512):
            t0 = time.perf_counter()
            fd.dcyk(g, sents[1], d=d, progress=False)
            first = time.perf_counter() - t0
            t0 = time.perf_counter()
            fd.dcyk(g, sents[2], d=d, progress=False)
            print(f"d={d}: first {first:.3f} s, second {time.perf_counter() - t0:.3f} s")
        return
    for d in (128, 256, 512, 1024, 2048):
        fd.dcyk(g, sents[0][:3], d=d, progress=False)
    shares: list[float] = []
    suspect = getattr(certificate.CertificateBuilder, "suspect", None)
    if suspect is not None:  # a checkout whose tries stop: how far each got

        def spy(self, *a):
            verdict = suspect(self, *a)
            if verdict:
                n = self.bounds.shape[0]
                shares.append(float(np.isfinite(self.margins).sum()) / (n * (n + 1) // 2))
            return verdict

        certificate.CertificateBuilder.suspect = spy
    auto.clear()
    t0 = time.perf_counter()
    tries = [fd.dcyk(g, s, progress=False).dimension.tried for s in sents]
    seconds = time.perf_counter() - t0
    print(f"{args.root}: {seconds:.1f} s, {sum(map(len, tries))} tries: {tries}")
    if shares:
        print(f"{len(shares)} tries stopped, having read {np.mean(shares):.2f} of their cells")


if __name__ == "__main__":
    main()

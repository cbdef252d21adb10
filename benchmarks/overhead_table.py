"""A parse against its arithmetic floor at several d: where the per-cell overhead shows.

For each d, sentences of one length of the random grammar of 20 nonterminals of
benchmarks/bench_peer.py, parsed one at a time with the default variant on one thread (the
best of ``--runs`` runs over the sentences, per sentence, after a warm-up parse), against
the floor of benchmarks/bench_floor.py (the n(n + 1)/2 reads and writes of a d x (d/2 + 1)
complex64 table in plain numpy, best of 5). Prints a markdown table::

    python benchmarks/overhead_table.py --dims 64 256 1024 4096 --length 20

Run it from another checkout (``PYTHONPATH=../before python benchmarks/overhead_table.py``)
for a before-and-after pair in the same session.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_floor import floor_seconds  # noqa: E402
from bench_peer import peer_grammar, sentences  # noqa: E402

import fastdcyk as fd  # noqa: E402
from fastdcyk import threads  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", type=int, nargs="+", default=[64, 256, 1024, 4096])
    ap.add_argument("--length", type=int, default=20)
    ap.add_argument("--sentences", type=int, default=12, help="per d below 2048 (3 above)")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    g = peer_grammar("20")
    n = args.length
    print(f"fastdcyk {fd.__version__} from {Path(fd.__file__).parent}")
    print("| d | parse, ms | floor, ms | ratio |")
    print("|---:|---:|---:|---:|")
    with threads.limit(1):
        for d in args.dims:
            batch = sentences(g, n, args.sentences if d < 2048 else 3)
            fd.dcyk(g, batch[0], d=d)
            best = float("inf")
            for _ in range(args.runs):
                t0 = time.perf_counter()
                for s in batch:
                    fd.dcyk(g, s, d=d)
                best = min(best, (time.perf_counter() - t0) / len(batch))
            floor = min(floor_seconds(n * (n + 1) // 2, d, 1) for _ in range(5))
            print(f"| {d} | {best * 1e3:.2f} | {floor * 1e3:.2f} | {best / floor:.2f} |")


if __name__ == "__main__":
    main()

"""The torch backend's batch rate on the CPU, with and without the cancelling reads in
groups (docs/performance.md, "Reads in turn").

Sentences of the random grammar of 20 nonterminals of benchmarks/bench_peer.py
(``sentences(peer_grammar("20"), length, batch)``), the default variant, ``dcyk_batch(...,
backend="torch", batch_size=batch)`` with the process's threads: the best of ``--runs``
batches after a warm-up, in sentences per second. ``--turn-batch`` sets
``fastdcyk.engine.modes.cleanup.torch_parser.TURN_BATCH`` (1: groups at every batch size;
a large value: cell by cell); ``--one-at-a-time`` parses with ``dcyk(..., backend="torch")``
instead. Prints one line per case::

    python benchmarks/torch_batch_rates.py --dims 256 1024 --batches 2 4 8 --lengths 10 \\
        --turn-batch 1 1000

Run it from another checkout (``PYTHONPATH=../before python benchmarks/torch_batch_rates.py``,
without ``--turn-batch``) for a before-and-after pair in the same session.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_peer import peer_grammar, sentences  # noqa: E402

import fastdcyk as fd  # noqa: E402


def rate(g: fd.Grammar, sents: list, cb: fd.Codebook, batch: int, runs: int, one: bool) -> float:
    """Sentences per second: the best of ``runs`` passes over ``sents`` after a warm-up."""

    def parse() -> None:
        if one:
            for s in sents:
                fd.dcyk(g, s, cb, backend="torch")
        else:
            fd.dcyk_batch(g, sents, cb, backend="torch", batch_size=batch)

    parse()
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        parse()
        best = min(best, time.perf_counter() - t0)
    return len(sents) / best


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dims", type=int, nargs="+", default=[256])
    p.add_argument("--batches", type=int, nargs="+", default=[32])
    p.add_argument("--lengths", type=int, nargs="+", default=[5, 10, 20])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--turn-batch", type=int, nargs="*", default=[], help="TURN_BATCH values")
    p.add_argument("--one-at-a-time", action="store_true", help="dcyk, one sentence a call")
    args = p.parse_args(argv)
    g = peer_grammar("20")
    settings: list[int | None] = list(args.turn_batch) or [None]
    for d in args.dims:
        cb = fd.engine.default_codebook(g, d, 0, unitary=True)
        for batch in args.batches:
            for length in args.lengths:
                sents = sentences(g, length, batch)
                for setting in settings:
                    if setting is not None:
                        from fastdcyk.engine.modes.cleanup import torch_parser

                        torch_parser.TURN_BATCH = setting
                    r = rate(g, sents, cb, batch, args.runs, args.one_at_a_time)
                    label = "" if setting is None else f", TURN_BATCH {setting}"
                    print(f"d = {d}, batch {batch}, {length} words{label}: {r:.1f}/s", flush=True)


if __name__ == "__main__":
    main()

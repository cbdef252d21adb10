"""A parse against its arithmetic floor, before and after a change: ``bench_floor.py``'s
measure for two checkouts, interleaved, each run in a fresh process.

    python benchmarks/floor_before_after.py OLD_CHECKOUT NEW_CHECKOUT [--runs 5] \\
        [--atis PATH/atis.cfg] [--d 1024]

Each run imports fastdcyk from its checkout (first on ``sys.path``; checked), parses, on one
thread, a 20-word ATIS sentence (with ``--atis``) and a 15-word CommandTalk sentence with the
default variant after a warm-up parse of another sentence of the same length, best of 5, and
times
the floor (``bench_floor.floor_seconds``: the n(n + 1)/2 reads and writes of a
d x (d/2 + 1) complex64 array, best of 5). It prints one JSON line per run and, at the end,
each checkout's median parse time, its median ratio to the floor of its own runs, and its
ratio to the floor of all runs pooled (the floor is the same numpy arithmetic in every
checkout, and its own spread, 10% from run to run, would otherwise dominate the comparison;
docs/performance.md, "The engine by mode: before and after").
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
COMMANDTALK = HERE.parent / "tests" / "data" / "commandtalk.cfg.gz"

#: What one run executes, in the checkout's own fastdcyk (argv: checkout, d, cases as JSON).
RUN = """
import json, sys, time, warnings
checkout, d, cases = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
sys.path[:0] = [checkout, checkout + "/benchmarks"]  # before the working folder's
import fastdcyk as fd
from fastdcyk import threads
from bench_floor import floor_seconds
out = {"fastdcyk": fd.__file__}
for name, (path, encoding, n, rounds) in cases.items():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = fd.Grammar.from_file(path, cnf="allow", encoding=encoding).to_cnf()
    warm, s = fd.generate(g, 2, min_len=n, max_len=n, seed=0)
    with threads.limit(1):
        fd.dcyk(g, warm, d=d)
        best = float("inf")
        for _ in range(rounds):
            t0 = time.perf_counter()
            r = fd.dcyk(g, s, d=d)
            best = min(best, time.perf_counter() - t0)
        floor = floor_seconds(n * (n + 1) // 2, d, rounds)
    f1 = fd.cell_scores(fd.cyk(g, s), r.chart).f1
    out[name] = {"parse": best, "floor": floor, "ratio": best / floor, "f1": f1}
print(json.dumps(out))
"""


def run(checkout: str, d: int, cases: dict) -> dict:
    """One run in a fresh process, fastdcyk imported from ``checkout``."""
    env = dict(os.environ, PYTHONPATH=checkout)
    argv = [sys.executable, "-c", RUN, checkout, str(d), json.dumps(cases)]
    done = subprocess.run(argv, env=env, cwd=checkout, capture_output=True, text=True, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if not Path(result["fastdcyk"]).is_relative_to(checkout):
        raise RuntimeError(f"the run for {checkout} imported {result['fastdcyk']}")
    return result


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("checkouts", nargs=2, metavar="CHECKOUT", help="before and after")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--d", type=int, default=1024)
    p.add_argument("--atis", help="NLTK's atis.cfg (without it, CommandTalk only)")
    p.add_argument("--words", type=int, nargs=2, default=(20, 15), metavar=("ATIS", "CT"))
    p.add_argument("--rounds", type=int, default=5, help="parses and floor runs per run")
    args = p.parse_args(argv)
    cases = {"CommandTalk": (str(COMMANDTALK), "latin-1", args.words[1], args.rounds)}
    if args.atis:
        cases["ATIS"] = (args.atis, "utf-8", args.words[0], args.rounds)
    got: dict[str, list[dict]] = {c: [] for c in args.checkouts}
    for _ in range(args.runs):
        for checkout in args.checkouts:  # interleaved
            result = run(str(Path(checkout).resolve()), args.d, cases)
            got[checkout].append(result)
            print(json.dumps({"checkout": checkout, **result}), flush=True)
    # the floor is the same numpy arithmetic in every checkout: its runs, pooled, are one
    # floor, against which the medians of the parses compare without the floor's own spread
    summary = {}
    for name in cases:
        floor = statistics.median(r[name]["floor"] for runs in got.values() for r in runs)
        for checkout, runs in got.items():
            parse = statistics.median(r[name]["parse"] for r in runs)
            ratio = statistics.median(r[name]["ratio"] for r in runs)
            summary[(checkout, name)] = (parse, ratio, parse / floor)
            print(
                f"{checkout} {name}: median parse {parse * 1000:.1f} ms, median ratio "
                f"{ratio:.2f}, against the pooled floor ({floor * 1000:.1f} ms) "
                f"{parse / floor:.2f}"
            )
    return summary


if __name__ == "__main__":
    main()

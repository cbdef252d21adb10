"""The "width" order against the "cell" order for the trace variant (docs/results.md,
study (j)).

The trace variant with its defaults (numpy backend, float32, one thread, the codebook
``dcyk`` builds for each grammar, seed 0) on the paper's grammars G0..G4, each sentence
parsed in both orders one after the other: the G0 sentences of the paper's study (200 drawn
from G0, 2 to 7 words, seed 0, the distinct ones) at d = 128, 256, 512 and 1024, and 40 of
each grammar's own sentences of 10 to 20 words (seed 1) at d = 1024 and 2048. Per point:
micro F1 over the cells, exact charts, and the sentences on which the two orders' charts
differ. The jobs run on a pool of two processes.

Usage::

    python docs/lab/trace_width_study.py          # runs what docs/lab/width_trace.json lacks
    python docs/lab/trace_width_study.py --table
    python docs/lab/trace_width_study.py --grids  # the paper's grids in both orders

``--grids`` compares the records of studies (a) and (c) (docs/lab/records/g0 and grammars:
the trace variant in the cell order) with the same grids run in the width order
(docs/lab/records/width/, written by ``fastdcyk experiment --sentences 2000 --max-len 7
--grammars G0 --dims D --variants trace``, and ``--grammars G1 G2 G3 G4``; see
docs/lab/records/README.md).
"""

from __future__ import annotations

import argparse
import json
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import fastdcyk as fd

HERE = Path(__file__).resolve().parent
OUT = HERE / "width_trace.json"
GRAMMARS = ("G0", "G1", "G2", "G3", "G4")
ORDERS = ("cell", "width")
#: (set, d): the paper's G0 sentences at four d, each grammar's long sentences at two
POINTS = [("G0 2-7", d) for d in (128, 256, 512, 1024)] + [("own 10-20", d) for d in (1024, 2048)]


def sentences(name: str, kind: str) -> list[tuple[str, ...]]:
    if kind == "G0 2-7":
        sample = fd.generate(fd.Grammar.builtin("G0"), 200, min_len=2, max_len=7, seed=0)
        return sorted(set(sample), key=lambda s: (len(s), s))
    return fd.generate(fd.Grammar.builtin(name), 40, min_len=10, max_len=20, seed=1)


def job(key: tuple[str, str, int]) -> tuple[str, dict]:
    name, kind, d = key
    fd.threads.set_threads(1)
    g = fd.Grammar.builtin(name)
    cb = fd.engine.default_codebook(g, d, 0, unitary=True)
    out: dict = {o: {"tp": 0, "gold": 0, "predicted": 0, "exact": 0} for o in ORDERS}
    differ = 0
    sents = sentences(name, kind)
    for w in sents:
        gold = fd.cyk(g, w)
        charts = {}
        for order in ORDERS:
            chart = fd.dcyk(g, w, cb, variant="trace", order=order, progress=False).chart
            s = fd.cell_scores(gold, chart)
            e = out[order]
            e["tp"] += s.tp
            e["gold"] += s.gold
            e["predicted"] += s.predicted
            e["exact"] += chart == gold
            charts[order] = chart
        differ += charts["cell"] != charts["width"]
    for e in out.values():
        e["f1"] = 2 * e["tp"] / (e["gold"] + e["predicted"])
    return f"{name}|{kind}|{d}", {"sentences": len(sents), "differ": differ, **out}


def run() -> None:
    done = json.loads(OUT.read_text()) if OUT.exists() else {}
    keys = [(n, k, d) for k, d in POINTS for n in GRAMMARS if f"{n}|{k}|{d}" not in done]
    with ProcessPoolExecutor(min(2, os.cpu_count() or 1)) as pool:
        for key, entry in pool.map(job, keys):
            done[key] = entry
            OUT.write_text(json.dumps(done, indent=1, sort_keys=True) + "\n")
            c, w = entry["cell"], entry["width"]
            print(
                f"{key}: F1 {c['f1']:.4f} / {w['f1']:.4f}, exact {c['exact']} / {w['exact']} "
                f"of {entry['sentences']}, charts differ on {entry['differ']}",
                flush=True,
            )


def table() -> None:
    done = json.loads(OUT.read_text())
    print("| sentences | d | grammar | F1 cell | F1 width | exact cell | exact width | differ |")
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    for kind, d in POINTS:
        for name in GRAMMARS:
            e = done.get(f"{name}|{kind}|{d}")
            if e is None:
                continue
            c, w, n = e["cell"], e["width"], e["sentences"]
            print(
                f"| {kind} | {d} | {name} | {c['f1']:.4f} | {w['f1']:.4f} | "
                f"{c['exact']}/{n} | {w['exact']}/{n} | {e['differ']} |"
            )


def grid_lines() -> list[str]:
    """The table of ``--grids``: per grid and d, micro F1 and exact charts in each order."""
    from fastdcyk.experiments import load_records

    records = HERE / "records"
    lines = [
        "| grammars | d | F1, cell | F1, width | exact, cell | exact, width |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for grid, name in (("g0", "G0"), ("grammars", "G1..G4")):
        for width in sorted((records / "width").glob(f"{grid}-d*.jsonl.gz"), key=_d):
            d = _d(width)
            cells = [_totals(load_records(records / grid / f"trace-d{d}.jsonl.gz"))]
            cells.append(_totals(load_records(width)))
            (fc, ec, n), (fw, ew, nw) = cells
            assert n == nw, (grid, d)
            lines.append(f"| {name} | {d} | {fc:.4f} | {fw:.4f} | {ec:,}/{n:,} | {ew:,}/{nw:,} |")
    return lines


def _d(path: Path) -> int:
    return int(path.name.split("-d")[1].split(".")[0])


def _totals(recs: list[dict]) -> tuple[float, int, int]:
    """Micro F1, exact charts and records of one grid point."""
    tp, gold, pred = (sum(r[k] for r in recs) for k in ("tp", "gold", "predicted"))
    exact = sum(r["tp"] == r["gold"] == r["predicted"] for r in recs)
    return 2 * tp / (gold + pred), exact, len(recs)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--table", action="store_true")
    ap.add_argument("--grids", action="store_true", help="the paper's grids in both orders")
    args = ap.parse_args()
    if args.grids:
        print("\n".join(grid_lines()))
    else:
        table() if args.table else run()

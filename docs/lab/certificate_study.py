"""How often a chart the certificate calls sure is wrong, on enough sentences to bound it
(docs/results.md, study (h), "The certificate on 600 sentences per point, and more").

Study (h) saw no sure chart that was wrong, but its 100 sentences per point bound the miss
rate only to about 1 in 35 per point. Here each point gets ``--sentences`` (default 600)
sentences drawn from the grammar on the lengths of study (h) (ATIS 11-30 words, CommandTalk
5-20), seed 2 (other sentences than study (h)'s seed 1), parsed by the cleanup variant with
its defaults (``readback="cancel"``, codebook seed 0, float32, one thread) at each d of
study (h); per point: the sentences the certificate calls sure, the sure charts that differ
from symbolic CYK's (misses), the exact charts not called sure (false alarms), and the
one-sided 95% upper bound of the miss rate (Clopper-Pearson; with no miss among s sure
charts, 1 - 0.05^(1/s), about 3/s).

Usage::

    python docs/lab/certificate_study.py --grammar atis --path PATH/atis.cfg
    python docs/lab/certificate_study.py --grammar commandtalk
    python docs/lab/certificate_study.py --grammar ptb --path PATH/ptb_sample.cfg --dims 1024
    python docs/lab/certificate_study.py --table

Results go to docs/lab/certificate_GRAMMAR.json (a rerun skips the points there, unless
``--sentences`` asks for more than a point had: the list drawn is the same list extended,
and the point is run again on it). Where the certificate calls fewer charts sure, more
sentences are needed to bound its miss rate to 1 in 200 (about 600 sure charts)::

    python docs/lab/certificate_study.py --grammar commandtalk --dims 128 --sentences 2400
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
from pathlib import Path

from default_study import GRAMMARS, LABELS
from readback_study import load
from scipy.stats import beta
from tqdm import tqdm

import fastdcyk as fd

HERE = Path(__file__).resolve().parent
SENTENCES = 600
SEED = 2


def upper_bound(misses: int, sure: int, level: float = 0.95) -> float:
    """The one-sided Clopper-Pearson upper bound of a rate seen ``misses`` times in ``sure``."""
    if sure == 0:
        return 1.0
    if misses >= sure:
        return 1.0
    return float(beta.ppf(level, misses + 1, sure - misses))


def summary(rows: list) -> dict:
    """A point's counts from its rows [sure, right], one per sentence."""
    sure = sum(s for s, _ in rows)
    misses = sum(s and not right for s, right in rows)
    return {
        "sure": sure,
        "misses": misses,
        "exact": sum(right for _, right in rows),
        "false_alarms": sum(right and not s for s, right in rows),
        "miss_rate_upper_95": upper_bound(misses, sure),
    }


def save(out: Path, updates: dict, drop: tuple[str, ...] = ()) -> dict:
    """Merge ``updates`` into the record ``out`` (less the keys ``drop``) under a lock, read
    again first, so that runs of different d side by side keep each other's points; the
    file replaced whole, so a stopped run leaves the last record. Returns the record."""
    with open(out.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = json.loads(out.read_text()) if out.exists() else {}
        done.update(updates)
        for key in drop:
            done.pop(key, None)
        tmp = out.with_suffix(".tmp")
        tmp.write_text(json.dumps(done, indent=1, sort_keys=True) + "\n")
        os.replace(tmp, out)
    return done


def run(args: argparse.Namespace) -> None:
    fd.threads.set_threads(1)
    out = HERE / f"certificate_{args.grammar}.json"
    done = json.loads(out.read_text()) if out.exists() else {}
    g = load(args.grammar, args.path)
    _, (lo, hi), dims, _ = GRAMMARS[args.grammar]
    sents = fd.generate(g, args.sentences, min_len=lo, max_len=hi, seed=SEED)
    golds = [fd.cyk(g, w) for w in sents]
    for d in args.dims or dims["cancel"]:
        if done.get(str(d), {}).get("sentences", 0) >= len(sents):
            continue  # (a point of fewer sentences is run again on the longer list)
        cb = fd.Codebook.for_grammar(g, d, 0)
        # per sentence [sure, right], saved every 10 sentences so that a stopped run resumes
        rows = done.get(f"{d}|partial", [])
        todo = list(zip(sents, golds, strict=True))[len(rows) :]
        for w, gold in tqdm(todo, desc=f"d={d}", leave=False):
            r = fd.dcyk(g, w, cb, progress=False)
            rows.append([bool(r.sure), r.chart == gold])
            if len(rows) % 10 == 0 and len(rows) < len(sents):
                save(out, {f"{d}|partial": rows})
        point = {"sentences": len(sents), **summary(rows)}
        save(out, {str(d): point}, drop=(f"{d}|partial",))
        print(f"d={d}: {point}", flush=True)


def table() -> None:
    print(
        "| grammar | d | sentences | exact | called sure | sure but wrong | miss rate, "
        "95% upper bound | exact not called sure |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name in GRAMMARS:
        path = HERE / f"certificate_{name}.json"
        if not path.exists():
            continue
        record = json.loads(path.read_text())
        points = {k: e for k, e in record.items() if "|" not in k}
        for key, rows in record.items():  # a run stopped before the end: its rows so far
            d = key.split("|")[0]
            done_before = int(points.get(d, {}).get("sentences", 0))
            if key.endswith("|partial") and len(rows) > done_before:
                points[d] = {**summary(rows), "sentences": f"{len(rows)} (stopped)"}
        for d, e in sorted(points.items(), key=lambda kv: int(kv[0])):
            bound = e["miss_rate_upper_95"]
            print(
                f"| {LABELS[name]} | {d} | {e['sentences']} | {e['exact']} | {e['sure']} | "
                f"{e['misses']} | {bound:.4f} (1 in {1 / bound:.0f}) | {e['false_alarms']} |"
            )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--grammar", choices=sorted(GRAMMARS))
    ap.add_argument("--path", help="the grammar file (ATIS, the treebank grammar)")
    ap.add_argument("--sentences", type=int, default=SENTENCES)
    ap.add_argument("--dims", type=int, nargs="*", help="only these d (default: study (h)'s)")
    ap.add_argument("--table", action="store_true")
    args = ap.parse_args()
    if args.table:
        table()
    elif args.grammar:
        run(args)
    else:
        ap.error("give --grammar or --table")

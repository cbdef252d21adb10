"""The cancelling read-back as the default, the certificate, and d chosen by it (study (h)).

Three real grammars, as in docs/lab/readback_study.py: NLTK's ATIS grammar and the rules of
NLTK's Penn Treebank sample (given as paths: their licences keep them out of fastdcyk), and
SRI's CommandTalk grammar (tests/data/commandtalk.cfg.gz), each read with ``cnf="allow"``
and converted with ``to_cnf()``. 100 sentences are drawn from each (``generate``, seed 1)
on the lengths of the grammar's target (ATIS 11-30 words, CommandTalk 5-20, the treebank
grammar 5-15) and parsed by the cleanup variant with its default codebook (seed 0),
float32, one thread. Studies:

- ``dims``: at each d of the grammar, the default read-back (``"cancel"``) and
  ``"lstsq"``: per sentence, whether the chart is symbolic CYK's, its cell counts, whether
  the certificate calls it sure, and the seconds of the parse;
- ``auto``: the same sentences in order with ``d="auto"`` after ``fd.clear_caches()``
  (what a user's loop does): the d chosen, the d tried, the seconds of all the tries
  (codebooks built included) and whether the chart is exact; and next to each, timed under
  the same load, a parse at the smallest d of the dims study whose chart is exact for that
  sentence (its codebook built beforehand, as the dims study's);
- ``agreement`` (ATIS and CommandTalk): the capacity model's prediction for the default
  read-back against measurement, lengths 5, 10 and 20, d = 256 and 512, 50 sentences;
- ``cells``: per sentence, the symbols of the largest cell of symbolic CYK's chart and of
  its largest one-word cell, which the table sets against the dims study's wrong charts.

Results go to docs/lab/default_GRAMMAR.json, one entry per point, written as each finishes (a
rerun skips what is there; the points of CommandTalk and the treebank rules parsed before
the bounded read of cells of more than d regressors are kept as ``linear|KEY``, study (k)
of docs/results.md); ``--table`` prints the tables of docs/results.md and ``--plot``
draws docs/figures/default.png.

Usage::

    python docs/lab/default_study.py --grammar atis --path PATH/atis.cfg
    python docs/lab/default_study.py --grammar commandtalk
    python docs/lab/default_study.py --grammar ptb --path PATH/ptb_sample.cfg
    python docs/lab/default_study.py --paper        # G0..G4 at d = 128
    python docs/lab/default_study.py --table
    python docs/lab/default_study.py --plot
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
from readback_study import load  # the same grammars, read the same way
from tqdm import tqdm

import fastdcyk as fd

HERE = Path(__file__).resolve().parent
GRAMMARS = {
    # name: (encoding, lengths, d of the dims study per read-back, agreement study)
    "atis": ("utf-8", (11, 30), {"cancel": (128, 256, 512), "lstsq": (128, 256, 512)}, True),
    "commandtalk": (
        "latin-1",
        (5, 20),
        {"cancel": (128, 256, 512, 1024), "lstsq": (128, 256, 512, 1024)},
        True,
    ),
    "ptb": ("utf-8", (5, 15), {"cancel": (512, 1024, 2048), "lstsq": (1024, 2048)}, False),
}
LABELS = {"atis": "ATIS", "commandtalk": "CommandTalk", "ptb": "treebank rules"}
SENTENCES = 100
AGREEMENT = {"dims": (256, 512), "lengths": (5, 10, 20), "sentences": 50}


def record(gold: dict, r: fd.DCYKResult, seconds: float) -> dict:
    """One sentence's numbers."""
    s = fd.cell_scores(gold, r.chart)
    return {
        "n": len(r.words),
        "exact": r.chart == gold,
        "tp": s.tp,
        "gold": s.gold,
        "predicted": s.predicted,
        "sure": bool(r.sure),
        "margin": float(min(r.certificate.smallest_margin, 1e9)),
        "s": seconds,
    }


def summary(rows: list[dict]) -> dict:
    """A point's totals: micro F1, exact share, the certificate's misses and false alarms."""
    tp, gold, pred = (sum(r[k] for r in rows) for k in ("tp", "gold", "predicted"))
    sure = [r for r in rows if r["sure"]]
    exact = [r for r in rows if r["exact"]]
    return {
        "sentences": len(rows),
        "f1": 2 * tp / (gold + pred) if gold + pred else 1.0,
        "exact": len(exact) / len(rows),
        "sure": len(sure) / len(rows),
        # the certificate: a sure chart that is wrong (miss), an exact one not called sure
        "misses": sum(not r["exact"] for r in sure),
        "false_alarms": sum(not r["sure"] for r in exact),
        "seconds": sum(r["s"] for r in rows),
    }


def run(args: argparse.Namespace) -> None:
    fd.threads.set_threads(1)
    out = HERE / f"default_{args.grammar}{args.part or ''}.json"
    done = json.loads(out.read_text()) if out.exists() else {}
    if args.part:  # a part run beside the main one: the points it has not done
        main = HERE / f"default_{args.grammar}.json"
        done.update({k: v for k, v in json.loads(main.read_text()).items() if k not in done})

    def save(key: str, entry: dict) -> None:
        done[key] = entry
        out.write_text(json.dumps(done, indent=1, sort_keys=True) + "\n")

    g = load(args.grammar, args.path)
    _, (lo, hi), dims, agreement = GRAMMARS[args.grammar]
    print(f"{args.grammar}: {len(g.nonterminals)} nonterminals", flush=True)
    sents = fd.generate(g, SENTENCES, min_len=lo, max_len=hi, seed=1)
    golds = [fd.cyk(g, w) for w in sents]
    studies = args.study or ("dims", "auto", "agreement", "cells")
    if "cells" in studies and "cells" not in done:
        save(
            "cells",
            {
                "largest": [max(len(v) for v in gold.values()) for gold in golds],
                "word": [
                    max(len(gold.get((i, i + 1), ())) for i in range(len(w)))
                    for w, gold in zip(sents, golds, strict=True)
                ],
            },
        )
    if "dims" in studies:
        for rb, ds in dims.items():
            for d in ds:
                key = f"dims|{rb}|{d}"
                if key in done or (args.readback and rb not in args.readback):
                    continue
                cb = fd.Codebook.for_grammar(g, d, 0)
                fd.dcyk(g, sents[0][:3], cb, readback=rb)  # warm: rule tables, kernels
                rows = []
                for w, gold in zip(tqdm(sents, desc=key, leave=False), golds, strict=True):
                    t0 = time.perf_counter()
                    r = fd.dcyk(g, w, cb, readback=rb, progress=False)
                    rows.append(record(gold, r, time.perf_counter() - t0))
                entry = {"readback": rb, "d": d, "rows": rows, **summary(rows)}
                save(key, entry)
                print(f"{key}: " + _line(entry), flush=True)
    if "auto" in studies and "auto" not in done:
        best = smallest_exact(done) if any(k.startswith("dims|cancel|") for k in done) else None
        fd.clear_caches()
        rows, baselines = [], {}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", fd.DimensionWarning)
            for i, (w, gold) in enumerate(
                zip(tqdm(sents, desc="auto", leave=False), golds, strict=True)
            ):
                t0 = time.perf_counter()
                r = fd.dcyk(g, w, d="auto", progress=False)
                row = record(gold, r, time.perf_counter() - t0)
                row.update(d=r.dimension.d, tried=list(r.dimension.tried))
                if best is not None and best[i] is not None:
                    # the baseline, timed next to it: a parse at the smallest d of the dims
                    # study whose chart is exact (its codebook built, as the study's was)
                    fixed = baselines.get(best[i][0])
                    if fixed is None:  # built and warmed once, outside the timing
                        fixed = baselines[best[i][0]] = fd.Codebook.for_grammar(g, best[i][0], 0)
                        fd.dcyk(g, w[:3], fixed, progress=False)
                    t0 = time.perf_counter()
                    fd.dcyk(g, w, fixed, progress=False)
                    row.update(fixed_d=best[i][0], fixed_s=time.perf_counter() - t0)
                rows.append(row)
        entry = {"readback": "cancel", "d": "auto", "rows": rows, **summary(rows)}
        entry["warnings"] = len(caught)
        save("auto", entry)
        print("auto: " + _line(entry), flush=True)
    if "agreement" in studies and agreement:
        for d in AGREEMENT["dims"]:
            for n in AGREEMENT["lengths"]:
                key = f"agreement|{d}|{n}"
                if key in done:
                    continue
                some = fd.generate(g, AGREEMENT["sentences"], min_len=n, max_len=n, seed=1)
                cb = fd.Codebook.for_grammar(g, d, 0)
                total, exact = fd.Scores(0, 0, 0), 0
                for w in tqdm(some, desc=key, leave=False):
                    gold, chart = fd.cyk(g, w), fd.dcyk(g, w, cb, progress=False).chart
                    total, exact = total + fd.cell_scores(gold, chart), exact + (chart == gold)
                p = fd.capacity.predict(g, some, d, samples=1, seed=0)
                entry = {
                    "d": d,
                    "n": n,
                    "f1": total.f1,
                    "exact": exact / len(some),
                    "predicted_f1": p.f1,
                    "predicted_exact": p.p_exact,
                    "sentences": len(some),
                }
                save(key, entry)
                print(
                    f"{key}: F1 {total.f1:.4f} predicted {p.f1:.4f}, exact "
                    f"{entry['exact']:.2f} predicted {p.p_exact:.2f}",
                    flush=True,
                )


def paper_grammars() -> None:
    """G0..G4 at d = 128 with the defaults: 100 sentences each, 2 to 10 words (seed 1)."""
    fd.threads.set_threads(1)
    out = HERE / "default_paper.json"
    done = json.loads(out.read_text()) if out.exists() else {}
    for name in ("G0", "G1", "G2", "G3", "G4"):
        if name in done:
            continue
        g = fd.Grammar.builtin(name)
        cb = fd.Codebook.for_grammar(g, 128, 0)
        rows = []
        for w in tqdm(fd.generate(g, SENTENCES, min_len=2, max_len=10, seed=1), desc=name):
            t0 = time.perf_counter()
            r = fd.dcyk(g, w, cb, progress=False)
            rows.append(record(fd.cyk(g, w), r, time.perf_counter() - t0))
        done[name] = {"readback": "cancel", "d": 128, "rows": rows, **summary(rows)}
        out.write_text(json.dumps(done, indent=1, sort_keys=True) + "\n")
        print(f"{name}: " + _line(done[name]), flush=True)


def _line(e: dict) -> str:
    return (
        f"F1 {e['f1']:.5f}, exact {e['exact']:.2f}, sure {e['sure']:.2f}, misses "
        f"{e['misses']}, false alarms {e['false_alarms']}, {e['seconds']:.1f} s"
    )


def smallest_exact(entries: dict) -> list[tuple[int, float] | None]:
    """Per sentence, the smallest d of the dims study (default read-back) whose chart is
    exact, and the seconds of that parse; None where no d is."""
    points = sorted((e["d"], e["rows"]) for k, e in entries.items() if k.startswith("dims|cancel|"))
    best: list[tuple[int, float] | None] = [None] * len(points[0][1])
    for d, rows in points:
        for i, r in enumerate(rows):
            if best[i] is None and r["exact"]:
                best[i] = (d, r["s"])
    return best


def table() -> None:
    """The tables of docs/results.md, study (h)."""
    path = HERE / "default_paper.json"
    if path.exists():
        print("\n| grammar | micro F1 | exact | called sure | sentences |")
        print("|---|---:|---:|---:|---:|")
        for name, e in json.loads(path.read_text()).items():
            print(
                f"| {name} | {e['f1']:.5f} | {e['exact']:.2f} | {e['sure']:.2f} | "
                f"{e['sentences']} |"
            )
    for name in GRAMMARS:
        path = HERE / f"default_{name}.json"
        if not path.exists():
            continue
        entries = json.loads(path.read_text())
        lo, hi = GRAMMARS[name][1]
        print(f"\n{LABELS[name]}, {lo}-{hi} words, {SENTENCES} sentences:\n")
        print(
            "| d | read-back | micro F1 | exact | called sure | sure but wrong | exact, "
            "not called sure | s per sentence |"
        )
        print("|---:|---|---:|---:|---:|---:|---:|---:|")
        dims = sorted(
            (e for k, e in entries.items() if k.startswith("dims|")),
            key=lambda e: (e["d"], e["readback"]),
        )
        for e in dims:
            n = e["sentences"]
            print(
                f"| {e['d']} | {e['readback']} | {e['f1']:.5f} | {e['exact']:.2f} | "
                f"{e['sure']:.2f} | {e['misses']} of {round(e['sure'] * n)} | "
                f"{e['false_alarms']} of {round(e['exact'] * n)} | {e['seconds'] / n:.3f} |"
            )
        linear = {
            k.removeprefix("linear|"): e for k, e in entries.items() if k.startswith("linear|")
        }
        if linear:  # study (k): the same points before the bounded read
            print(
                "\n| d | read-back | exact, linear read beyond d | exact, bounded read | "
                "F1, linear read | F1, bounded read |"
            )
            print("|---:|---|---:|---:|---:|---:|")
            for e in dims:
                before = linear.get(f"dims|{e['readback']}|{e['d']}")
                if before is not None:
                    print(
                        f"| {e['d']} | {e['readback']} | {before['exact']:.2f} | "
                        f"{e['exact']:.2f} | {before['f1']:.5f} | {e['f1']:.5f} |"
                    )
        cells = entries.get("cells")
        if cells is not None:
            largest = cells["largest"]
            print(
                "\n| d | read-back | sentences with a cell of more than d symbols | their "
                "charts exact | the others' charts exact |"
            )
            print("|---:|---|---:|---:|---:|")
            for e in dims:
                over = [big > e["d"] for big in largest]
                exact = [r["exact"] for r in e["rows"]]
                n_over = sum(over)
                print(
                    f"| {e['d']} | {e['readback']} | {n_over} | "
                    f"{sum(x for x, o in zip(exact, over, strict=True) if o)} of {n_over} | "
                    f"{sum(x for x, o in zip(exact, over, strict=True) if not o)} of "
                    f"{len(over) - n_over} |"
                )
            word = sum(w == big for w, big in zip(cells["word"], largest, strict=True))
            print(
                f"\nlargest cell: {min(largest)} to {max(largest)} symbols (median "
                f"{int(np.median(largest))}); a one-word cell in {word} of {len(largest)} "
                "sentences"
            )
        auto = entries.get("auto")
        if auto is None:
            continue
        rows = auto["rows"]
        chosen = {}
        for r in rows:
            chosen[r["d"]] = chosen.get(r["d"], 0) + 1
        paired = [(r["s"], r["fixed_s"]) for r in rows if "fixed_s" in r]
        ratios = np.array([a / b for a, b in paired])
        print(
            f"\nd='auto': exact {auto['exact']:.3f}, sure {auto['sure']:.3f}, misses "
            f"{auto['misses']}; d chosen "
            + ", ".join(f"{d}: {k}" for d, k in sorted(chosen.items()))
            + f"; {auto['warnings']} warning(s) at max_d; tries per sentence "
            f"{np.mean([len(r['tried']) for r in rows]):.2f}"
        )
        print(
            f"time: {sum(a for a, _ in paired):.1f} s against {sum(b for _, b in paired):.1f} s "
            f"at each sentence's smallest exact fixed d ({len(paired)} sentences exact at some "
            f"d; ratio of the sums {sum(a for a, _ in paired) / sum(b for _, b in paired):.2f}, "
            f"per sentence median {np.median(ratios):.2f}, 90th percentile "
            f"{np.percentile(ratios, 90):.2f})"
        )
        agree = sorted(
            (e for k, e in entries.items() if k.startswith("agreement|")),
            key=lambda e: (e["d"], e["n"]),
        )
        if agree:
            print("\n| d | words | F1 measured | F1 predicted | difference | exact | predicted |")
            print("|---:|---:|---:|---:|---:|---:|---:|")
            for e in agree:
                print(
                    f"| {e['d']} | {e['n']} | {e['f1']:.4f} | {e['predicted_f1']:.4f} | "
                    f"{e['predicted_f1'] - e['f1']:+.4f} | {e['exact']:.2f} | "
                    f"{e['predicted_exact']:.2f} |"
                )


def plot() -> None:
    from matplotlib.figure import Figure

    data = {}
    for name in GRAMMARS:
        path = HERE / f"default_{name}.json"
        if path.exists():
            data[name] = json.loads(path.read_text())
    if not data:
        raise SystemExit("no docs/lab/default_*.json yet: run a study first")
    fig = Figure(figsize=(4.2 * len(data), 6.4), layout="constrained")
    axes = fig.subplots(2, len(data), squeeze=False)
    colours = {"cancel": "tab:green", "lstsq": "tab:blue"}
    for col, (name, entries) in enumerate(data.items()):
        for rb, c in colours.items():
            pts = sorted(
                (e["d"], e["exact"], e["sure"], e["misses"])
                for k, e in entries.items()
                if k.startswith(f"dims|{rb}|")
            )
            if not pts:
                continue
            ds, exact, sure, _ = zip(*pts, strict=True)
            axes[0, col].plot(ds, exact, "o-", color=c, label=f"{rb}: exact charts")
            axes[0, col].plot(ds, sure, "x--", color=c, alpha=0.7, label=f"{rb}: called sure")
        auto = entries.get("auto")
        if auto is not None:
            chosen = [r["d"] for r in auto["rows"]]
            values, counts = np.unique(chosen, return_counts=True)
            axes[1, col].bar([str(v) for v in values], counts, color="tab:green")
        lo, hi = GRAMMARS[name][1]
        axes[0, col].set_title(f"{LABELS[name]}: {lo}-{hi} words")
        axes[0, col].set_xscale("log", base=2)
        axes[0, col].set_ylim(-0.03, 1.03)
        axes[0, col].set_xlabel("d")
        axes[0, col].grid(alpha=0.3)
        axes[1, col].set_xlabel("d chosen by d='auto'")
        axes[1, col].set_ylabel("sentences")
    axes[0, 0].set_ylabel("share of the sentences")
    axes[0, 0].legend(loc="lower right", fontsize=8)
    fig.suptitle("The default read-back (cancel) against lstsq, and the d that d='auto' chose")
    fig.savefig(HERE.parent / "figures" / "default.png", dpi=110)
    print(f"wrote {HERE.parent / 'figures' / 'default.png'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--grammar", choices=sorted(GRAMMARS))
    ap.add_argument("--path", help="the grammar file (ATIS, the treebank grammar)")
    ap.add_argument("--study", nargs="*", choices=("dims", "auto", "agreement", "cells"))
    ap.add_argument("--paper", action="store_true", help="G0..G4 at d = 128 (default_paper.json)")
    ap.add_argument("--readback", nargs="*", help="only these read-backs (dims study)")
    ap.add_argument(
        "--part",
        help="write to docs/lab/default_GRAMMAR<PART>.json, to run beside the main run (merge "
        "with --merge PART)",
    )
    ap.add_argument("--merge", help="merge docs/lab/default_GRAMMAR<PART>.json into the main file")
    ap.add_argument("--table", action="store_true", help="print the tables of docs/results.md")
    ap.add_argument("--plot", action="store_true", help="draw docs/figures/default.png")
    args = ap.parse_args()
    if args.merge:
        main, part = (HERE / f"default_{args.grammar}{x}.json" for x in ("", args.merge))
        merged = json.loads(main.read_text()) | json.loads(part.read_text())
        main.write_text(json.dumps(merged, indent=1, sort_keys=True) + "\n")
        part.unlink()
    elif args.paper:
        paper_grammars()
    elif args.table:
        table()
    elif args.plot:
        plot()
    elif args.grammar is None:
        ap.error("--grammar, --table or --plot")
    else:
        run(args)


if __name__ == "__main__":
    main()

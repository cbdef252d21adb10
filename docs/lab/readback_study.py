"""Reading a cell to its capacity: the two read-backs of the cleanup variant on real grammars.

Three real grammars: NLTK's ATIS grammar and the rules of NLTK's Penn Treebank sample (both
given as paths: their licences keep them out of fastdcyk), and SRI's CommandTalk grammar
(tests/data/commandtalk.cfg.gz). Each is read with ``cnf="allow"`` and converted with
``to_cnf()``. Sentences are drawn from each grammar (``generate``, seed 1) and parsed by the
cleanup variant with its default codebook (seed 0, and 1 for the agreement study), once
with each read-back (``readback="lstsq"``, the default when this study ran, and
``"matched"``; ``--readback cancel``: the least-squares read-back with cancelling, the
default since, which the capacity model did not predict then and this script does not ask
it to; docs/lab/default_study.py measures it with its prediction); the capacity model predicts
every point on the same sentences with the same codebooks. Studies:

- ``dims``: F1 and exact tables against d in {256, 512, 1024, 2048, 4096}, on the lengths
  of the grammar's target (ATIS 11-20 words, CommandTalk 5-15, the treebank grammar 5-12),
  100 sentences per point (50 at d = 4096, but on ATIS and CommandTalk, which ran first);
- ``lengths``: F1 and exact tables against the sentence length (2 to 30 words, in bins of
  five) at one d (1024; 2048 for the treebank grammar), 20 sentences per bin (10 for the
  treebank grammar, whose long sentences have cells of thousands of symbols);
- ``agreement``: the capacity model against measurement at lengths 5, 10 and 20, d = 512
  and 1024, two codebooks (ATIS and CommandTalk).

Results go to docs/lab/readback_GRAMMAR.json, one entry per point, written as each finishes (a
rerun skips what is there); ``--plot`` draws docs/figures/readback.png from the files
there. Each run computes on one thread, so that two can run side by side.

Usage (docs/results.md gives the runs behind its tables)::

    python docs/lab/readback_study.py --grammar atis --path PATH/atis.cfg --study dims
    python docs/lab/readback_study.py --grammar commandtalk --study lengths
    python docs/lab/readback_study.py --grammar ptb --path PATH/ptb_sample.cfg --study dims
    python docs/lab/readback_study.py --grammar atis --path PATH/atis.cfg --readback cancel \
        --dims 256 512
    python docs/lab/readback_study.py --plot
    python docs/lab/readback_study.py --table
"""

from __future__ import annotations

import argparse
import json
import time
import types
import warnings
from pathlib import Path

from tqdm import tqdm

import fastdcyk as fd

HERE = Path(__file__).resolve().parent
COMMANDTALK = HERE.parents[1] / "tests" / "data" / "commandtalk.cfg.gz"
GRAMMARS = {
    # name: (encoding, target lengths, d of the length study, sentences per length bin)
    "atis": ("utf-8", (11, 20), 1024, 20),
    "commandtalk": ("latin-1", (5, 15), 1024, 20),
    "ptb": ("utf-8", (5, 12), 2048, 10),
}
DIMS = (256, 512, 1024, 2048, 4096)
LENGTH_BINS = ((2, 5), (6, 10), (11, 15), (16, 20), (21, 25), (26, 30))
READBACKS = ("lstsq", "matched", "cancel")
LABELS = {"atis": "ATIS", "commandtalk": "CommandTalk", "ptb": "treebank sample"}


def load(name: str, path: str | None) -> fd.Grammar:
    if name == "commandtalk" and path is None:
        path = str(COMMANDTALK)
    if path is None:
        raise SystemExit(f"--grammar {name} needs --path (the grammar file)")
    with warnings.catch_warnings():  # undefined symbols of the grammars: harmless here
        warnings.simplefilter("ignore", fd.GrammarWarning)
        return fd.Grammar.from_file(path, cnf="allow", encoding=GRAMMARS[name][0]).to_cnf()


def point(g, sents, readback: str, d: int, seed: int) -> dict:
    """Measured and predicted scores of the cleanup variant with one read-back."""
    cb = fd.Codebook.for_grammar(g, d, seed)
    total, exact, t0 = fd.Scores(0, 0, 0), 0, time.perf_counter()
    for w in tqdm(sents, desc=f"{readback} d={d} seed={seed}", leave=False):
        gold = fd.cyk(g, w)
        chart = fd.dcyk(g, w, cb, variant="cleanup", readback=readback, progress=False).chart
        total, exact = total + fd.cell_scores(gold, chart), exact + (chart == gold)
    seconds = (time.perf_counter() - t0) / len(sents)
    if readback == "cancel":  # not predicted by this study (docs/lab/default_study.py)
        p = types.SimpleNamespace(f1=None, p_exact=None)
    else:
        p = fd.capacity.predict(
            g, sents, d, variant="cleanup", readback=readback, samples=1, seed=seed
        )
    return {
        "tp": total.tp,
        "gold": total.gold,
        "predicted": total.predicted,
        "precision": total.precision,
        "recall": total.recall,
        "f1": total.f1,
        "exact": exact / len(sents),
        "predicted_f1": p.f1,
        "predicted_exact": p.p_exact,
        "sentences": len(sents),
        "s_per_sentence": seconds,
    }


def plan(name: str, study: str, sentences: int) -> list[tuple]:
    """(key, readback, d, min_len, max_len, n_sentences, seed) of every point of a study."""
    _, (lo, hi), length_d, per_bin = GRAMMARS[name]
    out = []
    if study == "dims":
        for d in DIMS:
            for rb in READBACKS:  # the largest d costs most: half the sentences there
                out.append((rb, d, lo, hi, sentences if d < 4096 else sentences // 2, 0))
    elif study == "lengths":
        for a, b in LENGTH_BINS:
            for rb in READBACKS:
                out.append((rb, length_d, a, b, per_bin, 0))
    else:
        for d in (512, 1024):
            for n in (5, 10, 20):
                for rb in READBACKS:
                    for seed in (0, 1):
                        out.append((rb, d, n, n, 50, seed))
    return [
        (f"{study}|{rb}|{d}|{a}-{b}|{seed}", rb, d, a, b, k, seed) for rb, d, a, b, k, seed in out
    ]


def run(args: argparse.Namespace) -> None:
    fd.threads.set_threads(1)
    out = HERE / f"readback_{args.grammar}.json"
    done = json.loads(out.read_text()) if out.exists() else {}
    g = load(args.grammar, args.path)
    print(
        f"{args.grammar}: {len(g.nonterminals)} nonterminals, {len(g.binary_rules)} binary "
        f"and {len(g.unary_rules)} unary rules",
        flush=True,
    )
    for key, rb, d, lo, hi, k, seed in plan(args.grammar, args.study, args.sentences):
        if key in done or (args.dims and d not in args.dims) or rb not in args.readback:
            continue
        sents = fd.generate(g, k, min_len=lo, max_len=hi, seed=1)
        largest = max(len(c) for w in sents for c in fd.cyk(g, w).values())
        entry = point(g, sents, rb, d, seed)
        entry.update(study=args.study, readback=rb, d=d, min_len=lo, max_len=hi, seed=seed)
        entry["largest_cell"] = largest
        done[key] = entry
        out.write_text(json.dumps(done, indent=1, sort_keys=True) + "\n")
        predicted = (
            ""
            if rb == "cancel"
            else f" (predicted {entry['predicted_f1']:.5f}, exact {entry['predicted_exact']:.2f})"
        )
        print(
            f"{key}: F1 {entry['f1']:.5f}, exact {entry['exact']:.2f}{predicted}, "
            f"{entry['s_per_sentence']:.2f} s/sentence, largest cell {largest}",
            flush=True,
        )


def plot() -> None:
    from matplotlib.figure import Figure

    data = {}
    for name in GRAMMARS:
        path = HERE / f"readback_{name}.json"
        if path.exists():
            data[name] = json.loads(path.read_text())
    if not data:
        raise SystemExit("no docs/lab/readback_*.json yet: run a study first")
    fig = Figure(figsize=(4.2 * len(data), 9.6), layout="constrained")
    axes = fig.subplots(4, len(data), squeeze=False)
    colours = {"lstsq": "tab:blue", "matched": "tab:red", "cancel": "tab:green"}
    for col, (name, entries) in enumerate(data.items()):
        for rb in READBACKS:
            for row, (study, x_of, field) in enumerate(
                (
                    ("dims", lambda e: e["d"], "f1"),
                    ("dims", lambda e: e["d"], "exact"),
                    ("lengths", lambda e: (e["min_len"] + e["max_len"]) / 2, "f1"),
                    ("lengths", lambda e: (e["min_len"] + e["max_len"]) / 2, "exact"),
                )
            ):
                pts = sorted(
                    (x_of(e), e[field], e[f"predicted_{field}"])
                    for e in entries.values()
                    if e["study"] == study and e["readback"] == rb and e["seed"] == 0
                )
                if not pts:
                    continue
                ax = axes[row, col]
                xs, ys, ps = zip(*pts, strict=True)
                c = colours[rb]
                ax.plot(xs, ys, "o-", color=c, label=f"{rb}, measured")
                if rb != "cancel":  # not predicted by this study
                    ax.plot(xs, ps, "x--", color=c, alpha=0.7, label=f"{rb}, predicted")
                if study == "dims":
                    ax.set_xscale("log", base=2)
                    ax.set_xticks(DIMS, [str(d) for d in DIMS])
        lo, hi = GRAMMARS[name][1]
        axes[0, col].set_title(f"{LABELS[name]}: {lo}-{hi} words")
        axes[2, col].set_title(f"{LABELS[name]}: d = {GRAMMARS[name][2]}")
        for row, label in enumerate(("micro F1", "exact tables", "micro F1", "exact tables")):
            ax = axes[row, col]
            ax.set_ylim(-0.03, 1.03)
            ax.grid(alpha=0.3)
            if col == 0:
                ax.set_ylabel(label)
            ax.set_xlabel("d" if row < 2 else "sentence length (bin centre)")
    axes[0, 0].legend(loc="lower right", fontsize=8)
    fig.suptitle(
        "The cleanup variant's read-backs: least squares, with cancelling, and the matched filter"
    )
    fig.savefig(HERE.parent / "figures" / "readback.png", dpi=110)
    print(f"wrote {HERE.parent / 'figures' / 'readback.png'}")


def table() -> None:
    """The tables of docs/results.md, in Markdown, from the files there: per grammar and
    study, the two read-backs side by side, measured and predicted."""
    for name in GRAMMARS:
        path = HERE / f"readback_{name}.json"
        if not path.exists():
            continue
        entries = json.loads(path.read_text())
        for study in ("dims", "lengths", "agreement"):
            points: dict[tuple, dict[str, dict]] = {}
            for e in entries.values():
                if e["study"] == study:
                    key = (e["d"], e["min_len"], e["max_len"], e["seed"])
                    points.setdefault(key, {})[e["readback"]] = e
            if not points:
                continue
            print(f"\n{LABELS[name]}, {study}:\n")
            head = {
                "dims": "| d | words",
                "lengths": "| words | d",
                "agreement": "| d | words | seed",
            }
            cols = head[study].count("|")
            print(
                f"{head[study]} | least squares F1 | predicted | exact | matched F1 | "
                "predicted | exact | cancelling F1 | exact | sentences |"
            )
            print("|" + "---:|" * (cols + 9))
            order = sorted(points, key=lambda k: (k[1], k[0], k[3]) if study == "lengths" else k)
            for d, lo, hi, seed in order:
                words = f"{lo}-{hi}" if lo < hi else str(lo)
                lead = {"dims": f"| {d} | {words}", "lengths": f"| {words} | {d}"}.get(
                    study, f"| {d} | {words} | {seed}"
                )
                cells = []
                for rb in READBACKS:
                    e = points[(d, lo, hi, seed)].get(rb)
                    if rb == "cancel":
                        cells += ["", ""] if e is None else [f"{e['f1']:.5f}", f"{e['exact']:.2f}"]
                    else:
                        cells += (
                            ["", "", ""]
                            if e is None
                            else [
                                f"{e['f1']:.5f}",
                                f"{e['predicted_f1']:.5f}",
                                f"{e['exact']:.2f}",
                            ]
                        )
                counts = [points[(d, lo, hi, seed)].get(rb) for rb in READBACKS]
                n = " / ".join(dict.fromkeys(str(e["sentences"]) for e in counts if e))
                print(f"{lead} | " + " | ".join(cells) + f" | {n} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--grammar", choices=sorted(GRAMMARS))
    ap.add_argument("--path", help="the grammar file (ATIS, the treebank grammar)")
    ap.add_argument("--study", choices=("dims", "lengths", "agreement"), default="dims")
    ap.add_argument("--sentences", type=int, default=100, help="per point of the dims study")
    ap.add_argument("--dims", type=int, nargs="*", help="only these d")
    ap.add_argument(
        "--readback",
        nargs="*",
        choices=READBACKS,
        default=("lstsq", "matched"),
        help="the read-backs to run (default: lstsq and matched; cancel is not predicted)",
    )
    ap.add_argument("--plot", action="store_true")
    ap.add_argument("--table", action="store_true", help="print the tables of docs/results.md")
    args = ap.parse_args()
    if args.plot:
        plot()
    elif args.table:
        table()
    elif args.grammar is None:
        ap.error("--grammar or --plot")
    else:
        run(args)


if __name__ == "__main__":
    main()

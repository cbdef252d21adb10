"""D-CYK on real-size grammars: F1 and exact tables against d, measured and predicted.

Two grammars of real size: NLTK's ATIS grammar (given as a path: its licence keeps it out of
fastdcyk; read with ``cnf="allow"`` and converted with ``to_cnf()``) and a random grammar of
the same size (``random_grammar(4000, 1000, 10000, ambiguity=2)``). Sentences of 3 to 10
words are drawn from each grammar (``generate``, seed 1); every variant parses them with its
default codebook (seeds ``--seeds``) at every d, and the capacity model predicts the same
points. Results go to docs/lab/realgrammar_GRAMMAR.json, one entry per (grammar, variant, d,
seed), written as each finishes (a rerun skips what is there); ``--plot`` draws the figure
from both files. Each run computes on one thread, so that the two can run side by side.

Usage (docs/results.md gives the runs behind its tables)::

    python docs/lab/realgrammar_study.py --grammar atis --atis PATH/atis.cfg
    python docs/lab/realgrammar_study.py --grammar random
    python docs/lab/realgrammar_study.py --plot
    python docs/lab/realgrammar_study.py --points --grammar atis --atis PATH/atis.cfg
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from tqdm import tqdm

import fastdcyk as fd

HERE = Path(__file__).resolve().parent
#: (variant, d, sentences, seeds): the paper variant's entrywise gate costs a dense product
#: per cell over thousands of nonterminals, so it parses a few sentences only.
PLAN = {
    "cleanup": {512: None, 1024: None, 2048: None},
    "trace": {1024: 50, 2048: 20},
    "paper": {1024: 3},
}


def load(name: str, atis: str | None) -> fd.Grammar:
    if name == "atis":
        if atis is None:
            raise SystemExit("--grammar atis needs --atis PATH (NLTK's atis.cfg)")
        return fd.Grammar.from_file(atis, cnf="allow").to_cnf()
    return fd.random_grammar(4000, 1000, 10000, ambiguity=2, seed=0)


def measure(g, sents, variant: str, d: int, seed: int) -> dict:
    cb = fd.engine.default_codebook(g, d, seed, unitary=fd.options.VARIANTS[variant]["unitary"])
    total, exact, t0 = fd.Scores(0, 0, 0), 0, time.perf_counter()
    for w in tqdm(sents, desc=f"{variant} d={d} seed={seed}", leave=False):
        gold = fd.cyk(g, w)
        chart = fd.dcyk(g, w, cb, variant=variant, progress=False).chart
        total, exact = total + fd.cell_scores(gold, chart), exact + (chart == gold)
    seconds = (time.perf_counter() - t0) / len(sents)
    p = fd.capacity.predict(g, sents, d, variant=variant, samples=1, seed=seed)
    return {
        "tp": total.tp,
        "gold": total.gold,
        "predicted": total.predicted,
        "f1": total.f1,
        "exact": exact / len(sents),
        "predicted_f1": p.f1,
        "predicted_exact": p.p_exact,
        "sentences": len(sents),
        "s_per_sentence": seconds,
    }


def run(args: argparse.Namespace) -> None:
    fd.threads.set_threads(1)
    out = HERE / f"realgrammar_{args.grammar}.json"
    done = json.loads(out.read_text()) if out.exists() else {}
    g = load(args.grammar, args.atis)
    sents = fd.generate(g, args.sentences, min_len=3, max_len=10, seed=1)
    print(
        f"{args.grammar}: {len(g.nonterminals)} nonterminals, {len(g.binary_rules)} binary "
        f"and {len(g.unary_rules)} unary rules; {len(sents)} sentences, the largest cell "
        f"holds {max(len(c) for w in sents[:50] for c in fd.cyk(g, w).values())} symbols"
    )
    for variant in args.variants:
        for d, count in PLAN[variant].items():
            for seed in args.seeds if count is None else args.seeds[:1]:
                key = f"{args.grammar}|{variant}|{d}|{seed}"
                if key in done:
                    continue
                done[key] = measure(g, sents[: count or len(sents)], variant, d, seed)
                r = done[key]
                print(f"{key}: F1 {r['f1']:.4f} (predicted {r['predicted_f1']:.4f}), exact "
                      f"{r['exact']:.3f}, {r['s_per_sentence']:.2f} s/sentence")  # fmt: skip
                out.write_text(json.dumps(done, indent=1, sort_keys=True))


def points(args: argparse.Namespace) -> None:
    """The capacity model against measurement at fixed lengths (5 and 8), d = 512 and 1024:
    50 sentences of each length, codebook seeds 0 and 1, the same codebooks in both."""
    fd.threads.set_threads(1)
    g = load(args.grammar, args.atis)
    print("| grammar | length | d | measured F1 | predicted F1 | difference |")
    print("|---|---:|---:|---:|---:|---:|")
    for length in (5, 8):
        sents = fd.generate(g, 50, min_len=length, max_len=length, seed=2)
        for d in (512, 1024):
            total, pred = fd.Scores(0, 0, 0), fd.Scores(0, 0, 0)
            for seed in (0, 1):
                cb = fd.Codebook.for_grammar(g, d, seed)
                for w in sents:
                    chart = fd.dcyk(g, w, cb, variant="cleanup", progress=False).chart
                    total = total + fd.cell_scores(fd.cyk(g, w), chart)
                p = fd.capacity.predict(g, sents, d, variant="cleanup", samples=1, seed=seed)
                pred = pred + p.scores
            print(f"| {args.grammar} | {length} | {d} | {total.f1:.4f} | {pred.f1:.4f} | "
                  f"{pred.f1 - total.f1:+.4f} |", flush=True)  # fmt: skip


def pooled(done: dict, grammar: str, variant: str, d: int) -> dict | None:
    rows = [v for k, v in done.items() if k.startswith(f"{grammar}|{variant}|{d}|")]
    if not rows:
        return None
    s = fd.Scores(sum(r["tp"] for r in rows), sum(r["gold"] for r in rows),
                  sum(r["predicted"] for r in rows))  # fmt: skip
    n = sum(r["sentences"] for r in rows)
    return {
        "f1": s.f1,
        "exact": sum(r["exact"] * r["sentences"] for r in rows) / n,
        "predicted_f1": sum(r["predicted_f1"] for r in rows) / len(rows),
        "sentences": n,
        "seeds": len(rows),
        "s": sum(r["s_per_sentence"] for r in rows) / len(rows),
    }


def plot(args: argparse.Namespace) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    done = {}
    for name in ("atis", "random"):
        path = HERE / f"realgrammar_{name}.json"
        if path.exists():
            done |= json.loads(path.read_text())
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, grammar in zip(axes, ("atis", "random"), strict=True):
        for variant, style in (("cleanup", "o-"), ("trace", "s-"), ("paper", "^-")):
            dims = sorted(PLAN[variant])
            pts = [(d, pooled(done, grammar, variant, d)) for d in dims]
            pts = [(d, p) for d, p in pts if p is not None]
            if not pts:
                continue
            xs = [d for d, _ in pts]
            line = ax.plot(xs, [p["f1"] for _, p in pts], style, label=f"{variant} measured")
            ax.plot(xs, [p["predicted_f1"] for _, p in pts], ":", color=line[0].get_color(),
                    label=f"{variant} predicted")  # fmt: skip
        ax.set_xscale("log", base=2)
        ax.set_xlabel("d")
        ax.set_title({"atis": "NLTK's ATIS grammar (CNF)", "random": "random, ATIS size"}[grammar])
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("micro F1 (cells)")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    path = Path(args.figure)
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")
    for grammar in ("atis", "random"):
        for variant in ("cleanup", "trace", "paper"):
            for d in sorted(PLAN[variant]):
                p = pooled(done, grammar, variant, d)
                if p:
                    cells = [grammar, variant, d, f"{p['f1']:.4f}", f"{p['predicted_f1']:.4f}",
                             f"{p['exact']:.3f}", f"{p['sentences']} ({p['seeds']} codebooks)",
                             f"{p['s']:.2f}"]  # fmt: skip
                    print("| " + " | ".join(map(str, cells)) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grammar", choices=("atis", "random"), default="atis")
    ap.add_argument("--atis", help="path of NLTK's atis.cfg")
    ap.add_argument("--variants", nargs="+", default=["cleanup", "trace", "paper"])
    ap.add_argument("--sentences", type=int, default=200)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--plot", action="store_true")
    ap.add_argument("--points", action="store_true", help="the capacity model at lengths 5, 8")
    ap.add_argument("--figure", default=str(HERE.parent / "figures" / "realgrammar.png"))
    args = ap.parse_args()
    if args.plot:
        plot(args)
    elif args.points:
        points(args)
    else:
        run(args)


if __name__ == "__main__":
    main()

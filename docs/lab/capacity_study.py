"""The capacity model against measurement, and study (d) of docs/results.md.

Run with ``python docs/lab/capacity_study.py`` (about 45 minutes on 2 cores;
``--predict-only`` recomputes the predictions and keeps the stored measurements, in minutes;
``--measure-d 256`` measures the points at d = 256 again and keeps the others'). Writes
``docs/lab/capacity_study.json`` (every point: predicted and measured P, R, F1, exact) and the
figures ``docs/figures/capacity_validation.png`` and ``docs/figures/study_d_random_grammars.png``.

Validation: each point parses ``N`` sentences of one length drawn from the grammar itself
(seed 0) with codebook seeds 0 and 1 (0 to 5 for the paper variant, whose F1 varies more
between codebooks; 0 to 9 for every point at d = 256, where one codebook's F1 is up to the
tolerance away from the mean), and predicts them with ``fastdcyk.capacity.predict(grammar,
sentences, d, samples=...)`` (the same codebooks).

- trace variant, both encodings: G0..G4 and two random grammars, d in {256, 1024},
  lengths 3, 6 and 10; with roles also d = 4096 on G0, G2, G4 and R-small, length 3;
- paper variant (its own encoding): G0, G2, G4 and R-small, d in {256, 1024}, lengths 3
  and 6.

Study (d): random grammars at d = 1024, sentences of length 6: F1 against the number of
nonterminals (5 to 40, 2.5 binary rules and 2 words per nonterminal, ambiguity 1) and
against lexical ambiguity (1 to 3 nonterminals per word, 10 nonterminals), both encodings,
measured and predicted.
"""

from __future__ import annotations

import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import fastdcyk as fd
from fastdcyk import capacity, threads

N = 20
SEEDS = (0, 1)
#: The paper variant's F1 moves by up to 0.3 between codebooks at d = 256 (its unary junk
#: feeds back), so its points average six.
PAPER_SEEDS = (0, 1, 2, 3, 4, 5)
#: At d = 256 one codebook's F1 differs from the model's expectation by up to 0.04 (standard
#: deviation over ten codebooks, R-large, trace, length 6), so a point of two codebooks is
#: uncertain by about the tolerance itself: every point at d = 256 averages ten codebooks.
MANY_SEEDS = tuple(range(10))
LOW_D = 256


def seeds(variant: str, d: int) -> tuple[int, ...]:
    if d <= LOW_D:
        return MANY_SEEDS
    return PAPER_SEEDS if variant == "paper" else SEEDS


HERE = Path(__file__).resolve().parent

RANDOM = {
    "R-small": dict(nonterminals=10, terminals=20, binary_rules=25, ambiguity=1.5, seed=1),
    "R-large": dict(nonterminals=40, terminals=80, binary_rules=100, ambiguity=1.5, seed=2),
}


def grammar(name: str) -> fd.Grammar:
    if name in RANDOM:
        return fd.random_grammar(**RANDOM[name], min_length=2)
    if name.startswith("size-"):
        k = int(name.split("-")[1])
        return fd.random_grammar(k, 2 * k, int(2.5 * k), ambiguity=1.0, seed=3, min_length=2)
    if name.startswith("amb-"):
        a = float(name.split("-")[1])
        return fd.random_grammar(10, 20, 25, ambiguity=a, seed=3, min_length=2)
    return fd.Grammar.builtin(name)


def predicted(args: tuple[str, str, str, int, int, str]) -> dict:
    """The model's prediction for one point (the same sentences and codebook seeds)."""
    name, variant, encoding, d, length, study = args
    threads.set_threads(1)
    g = grammar(name)
    sents = fd.generate(g, N, min_len=length, max_len=length, seed=0)
    n = len(seeds(variant, d))
    pred = capacity.predict(g, sents, d, variant=variant, encoding=encoding, samples=n)
    return dict(
        study=study, grammar=name, variant=variant, encoding=encoding, d=d, length=length,
        nonterminals=len(g.nonterminals), rules=len(g.rules),
        pred_p=pred.precision, pred_r=pred.recall, pred_f1=pred.f1, pred_exact=pred.p_exact,
    )  # fmt: skip


def point(args: tuple[str, str, str, int, int, str]) -> dict:
    """Prediction and measurement (D-CYK itself) of one point."""
    name, variant, encoding, d, length, study = args
    row = predicted(args)
    g = grammar(name)
    sents = fd.generate(g, N, min_len=length, max_len=length, seed=0)
    total, exact = fd.Scores(0, 0, 0), 0
    unitary = fd.options.VARIANTS[variant]["unitary"]
    for seed in seeds(variant, d):
        cb = fd.engine.default_codebook(g, d, seed, unitary=unitary, threads=1)  # dcyk's own
        for s in sents:
            gold = fd.cyk(g, s)
            chart = fd.dcyk(g, s, cb, variant=variant, encoding=encoding, progress=False).chart
            total = total + fd.cell_scores(gold, chart)
            exact += chart == gold
    row.update(p=total.precision, r=total.recall, f1=total.f1,
               exact=exact / (len(seeds(variant, d)) * len(sents)))  # fmt: skip
    return row


def points() -> list[tuple]:
    out = []
    trace_grammars = ["G0", "G1", "G2", "G3", "G4", *RANDOM]
    for enc in ("roles", "paper"):
        for name in trace_grammars:
            for d in (256, 1024):
                for length in (3, 6, 10):
                    out.append((name, "trace", enc, d, length, "validation"))
            if enc == "roles" and name in ("G0", "G2", "G4", "R-small"):
                out.append((name, "trace", enc, 4096, 3, "validation"))
    for name in ("G0", "G2", "G4", "R-small"):
        for d in (256, 1024):
            for length in (3, 6):
                out.append((name, "paper", "paper", d, length, "validation"))
    for enc in ("roles", "paper"):
        for k in (5, 10, 20, 40):
            out.append((f"size-{k}", "trace", enc, 1024, 6, "size"))
        for a in (1.0, 1.5, 2.0, 3.0):
            out.append((f"amb-{a}", "trace", enc, 1024, 6, "ambiguity"))
    # the expensive points first, so that the pool ends together
    return sorted(out, key=lambda p: -(p[3] ** 2) * p[4] ** 2)


def figures(rows: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    val = [r for r in rows if r["study"] == "validation"]
    fig, ax = plt.subplots(figsize=(5.2, 5.0))
    styles = {
        ("trace", "roles"): ("o", "tab:blue", "trace, roles (tolerance 0.03)"),
        ("trace", "paper"): ("s", "tab:orange", "trace, paper encoding (tolerance 0.03)"),
        ("paper", "paper"): ("^", "tab:red", "paper variant (tolerance 0.05)"),
    }
    for key, (marker, color, label) in styles.items():
        sel = [r for r in val if (r["variant"], r["encoding"]) == key]
        ax.scatter([r["f1"] for r in sel], [r["pred_f1"] for r in sel], marker=marker,
                   color=color, label=f"{label}: {len(sel)} points", alpha=0.75, s=22)  # fmt: skip
    ax.plot([0, 1], [0, 1], color="black", lw=0.8)
    for tol, ls in ((0.03, "--"), (0.05, ":")):
        ax.plot([0, 1], [tol, 1 + tol], color="grey", lw=0.8, ls=ls)
        ax.plot([0, 1], [-tol, 1 - tol], color="grey", lw=0.8, ls=ls)
    ax.set_xlim(0.2, 1.005)
    ax.set_ylim(0.2, 1.005)
    ax.set_xlabel("measured F1 (D-CYK)")
    ax.set_ylabel("predicted F1 (fastdcyk.capacity)")
    ax.set_title("Capacity model against measurement\nd 256-4096, lengths 3-10", fontsize=10)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(HERE.parent / "figures" / "capacity_validation.png", dpi=130)
    plt.close(fig)

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), sharey=True)
    for ax, study, xkey, xlabel in (
        (axes[0], "size", "nonterminals", "nonterminals (2.5 binary rules each)"),
        (axes[1], "ambiguity", "ambiguity", "nonterminals per word"),
    ):
        for enc, color in (("roles", "tab:blue"), ("paper", "tab:orange")):
            sel = [r for r in rows if r["study"] == study and r["encoding"] == enc]
            for r in sel:
                r["ambiguity"] = float(r["grammar"].split("-")[1]) if study == "ambiguity" else 1
            sel.sort(key=lambda r: r[xkey])
            xs = [r[xkey] for r in sel]
            ax.plot(xs, [r["f1"] for r in sel], "o-", color=color, label=f"{enc}: measured")
            ax.plot(xs, [r["pred_f1"] for r in sel], "x--", color=color, label=f"{enc}: predicted")
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("cell F1")
    axes[0].legend(fontsize=7)
    fig.suptitle("Study (d): random grammars, trace variant, d = 1024, length 6", fontsize=10)
    fig.tight_layout()
    fig.savefig(HERE.parent / "figures" / "study_d_random_grammars.png", dpi=130)
    plt.close(fig)


KEY = ("study", "grammar", "variant", "encoding", "d", "length")


if __name__ == "__main__":
    # --predict-only: recompute the predictions of docs/lab/capacity_study.json and keep its
    # measurements (seconds instead of half an hour; valid only while the codebooks and the
    # engine are those the measurements were taken with). --measure-d D: measure the points
    # of dimension D again (and predict every point), keeping the others' measurements.
    args = sys.argv[1:]
    predict_only = "--predict-only" in args
    measure_d = int(args[args.index("--measure-d") + 1]) if "--measure-d" in args else None
    todo = points()
    old = {}
    if predict_only or measure_d is not None:
        stored = json.loads((HERE / "capacity_study.json").read_text())
        old = {tuple(r[k] for k in KEY): r for r in stored}
        todo = [p for p in todo if (p[5], *p[:5]) in old or p[3] == measure_d]

    def measured(p: tuple) -> bool:
        return not predict_only and (measure_d is None or p[3] == measure_d)

    rows = []
    with ProcessPoolExecutor(os.cpu_count()) as pool:
        jobs = [pool.submit(point if measured(p) else predicted, p) for p in todo]
        for p, job in zip(todo, jobs, strict=True):
            row = job.result()
            if not measured(p):
                row = {**old[tuple(row[k] for k in KEY)], **row}
            rows.append(row)
            print(json.dumps(row), flush=True)
    rows.sort(key=lambda r: (r["study"], r["variant"], r["encoding"], r["grammar"], r["d"]))
    (HERE / "capacity_study.json").write_text(json.dumps(rows, indent=1) + "\n")
    figures(rows)

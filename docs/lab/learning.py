"""Learning a codebook by gradient descent (docs/learning.md).

At a small d the default codebook's near matches leave D-CYK far from exact. fastdcyk.nn.DCYK
makes the symbol vectors parameters; a few dozen steps of Adam on the binary cross-entropy
against symbolic CYK, over training sentences, raise F1 on held-out sentences (none of them
in the training set). Held-out F1 is measured with the numpy backend on the learned codebook
(``layer.codebook()``), so the figure also checks that the learned vectors work outside
torch.

    python docs/lab/learning.py                      # G2 at d = 64, codebook seeds 0 1 2
    python docs/lab/learning.py --grammar random --d 128 --beta 20 --steps 200 --seeds 0 \\
        --json docs/lab/learning_random.json --figure docs/figures/learning_random.png

Writes docs/lab/learning.json and docs/figures/learning.png (loss and held-out F1 per step).
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np
import torch

import fastdcyk as fd
from fastdcyk.nn import DCYK

HERE = Path(__file__).resolve().parent


def grammar_of(name: str) -> fd.Grammar:
    if name == "random":  # 16 nonterminals, 24 words, 48 binary rules, 2 per word
        return fd.random_grammar(16, 24, 48, ambiguity=2.0, seed=3)
    return fd.Grammar.builtin(name)


def micro_f1(grammar: fd.Grammar, sentences, charts) -> float:
    tp = gold = pred = 0
    for words, chart in zip(sentences, charts, strict=True):
        s = fd.cell_scores(fd.cyk(grammar, words), chart)
        tp, gold, pred = tp + s.tp, gold + s.gold, pred + s.predicted
    return 2 * tp / (gold + pred)


def held_out_f1(layer: DCYK, grammar: fd.Grammar, sentences) -> float:
    """F1 of the numpy backend with the module's codebook (and options)."""
    cb, o = layer.codebook(), layer.options
    kw = {"gate": o.gate, "decoder": o.decoder, "order": o.order, "encoding": o.encoding}
    kw |= {"beta": o.beta, "threshold": o.threshold, "prune": o.prune, "progress": False}
    charts = [fd.dcyk(grammar, w, cb, variant=o.variant, **kw).chart for w in sentences]
    return micro_f1(grammar, sentences, charts)


def run(args: argparse.Namespace, seed: int, train, test, grammar) -> dict:
    torch.manual_seed(seed)
    kw = {} if args.beta is None else {"beta": args.beta}
    layer = DCYK(grammar, args.d, variant="trace", seed=seed, max_length=args.max_len, **kw)
    opt = torch.optim.Adam(layer.parameters(), lr=args.lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, args.steps)
    curve = {"step": [], "loss": [], "held_out_f1": []}
    f1 = held_out_f1(layer, grammar, test)
    before = {"held_out_f1": f1, "train_f1": held_out_f1(layer, grammar, train)}
    t0 = time.perf_counter()
    for step in range(args.steps + 1):
        if step % args.every == 0 or step == args.steps:
            curve["step"].append(step)
            curve["held_out_f1"].append(f1 if step == 0 else held_out_f1(layer, grammar, test))
        if step == args.steps:
            break
        opt.zero_grad()
        loss = layer(train).loss()
        loss.backward()
        opt.step()
        sched.step()
        if step % args.every == 0:
            curve["loss"].append(float(loss.detach()))
            print(
                f"seed {seed} step {step:4d} loss {curve['loss'][-1]:.4f} "
                f"held-out F1 {curve['held_out_f1'][-1]:.4f}",
                flush=True,
            )
    seconds = time.perf_counter() - t0
    after = {
        "held_out_f1": curve["held_out_f1"][-1],
        "train_f1": held_out_f1(layer, grammar, train),
    }
    if args.save:
        layer.codebook().save(Path(args.save).with_suffix(f".seed{seed}.npz"))
    print(
        f"seed {seed}: held-out F1 {before['held_out_f1']:.4f} -> {after['held_out_f1']:.4f} "
        f"(train {before['train_f1']:.4f} -> {after['train_f1']:.4f}), {seconds:.1f} s"
    )
    return {"seed": seed, "before": before, "after": after, "curve": curve, "seconds": seconds}


def figure(results: list[dict], args: argparse.Namespace, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
    for r in results:
        c = r["curve"]
        ax1.plot(c["step"][: len(c["loss"])], c["loss"], label=f"codebook seed {r['seed']}")
        ax2.plot(c["step"], c["held_out_f1"], marker="o", ms=3, label=f"codebook seed {r['seed']}")
    ax1.set(xlabel="step (Adam)", ylabel="training loss (BCE vs symbolic CYK)", yscale="log")
    ax2.set(xlabel="step (Adam)", ylabel="held-out micro F1 (numpy backend)", ylim=(0, 1.02))
    ax2.axhline(1.0, color="grey", lw=0.5)
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    beta = args.beta if args.beta is not None else fd.options.DEFAULT_BETA
    fig.suptitle(
        f"Learning the codebook: {args.grammar}, d = {args.d}, trace variant, beta = {beta:g}; "
        f"{len(args.train_sentences)} training, {len(args.test_sentences)} held-out sentences"
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--grammar", default="G2", help="a built-in grammar, or 'random'")
    p.add_argument("--d", type=int, default=64)
    p.add_argument("--steps", type=int, default=150)
    p.add_argument("--every", type=int, default=10, help="held-out F1 every this many steps")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--beta", type=float, default=None)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--train", type=int, default=256)
    p.add_argument("--test", type=int, default=64)
    p.add_argument("--max-len", type=int, default=6)
    p.add_argument("--json", default=str(HERE / "learning.json"))
    p.add_argument("--figure", default=str(HERE.parent / "figures" / "learning.png"))
    p.add_argument("--save", default=None, help="save the learned codebooks (PATH.seedK.npz)")
    args = p.parse_args(argv)
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # one thread, for torch and fastdcyk: timings per core
    try:
        with fd.threads.limit(1):
            return _main(args, argv)
    finally:
        torch.set_num_threads(before)


def _main(args: argparse.Namespace, argv: list[str] | None) -> dict:
    grammar = grammar_of(args.grammar)
    train = fd.generate(grammar, args.train, min_len=2, max_len=args.max_len, seed=1)
    seen = set(train)
    test = [
        s for s in fd.generate(grammar, 4 * args.test, 2, args.max_len, seed=2) if s not in seen
    ]
    test = list(dict.fromkeys(test))[: args.test]  # distinct, none in the training set
    args.train_sentences, args.test_sentences = train, test
    results = [run(args, seed, train, test, grammar) for seed in args.seeds]
    out = {
        "command": "python docs/lab/learning.py " + " ".join(argv or []),
        "machine": f"{platform.processor() or platform.machine()}, torch {torch.__version__}, "
        "one thread",
        "grammar": args.grammar,
        "d": args.d,
        "steps": args.steps,
        "lr": args.lr,
        "beta": args.beta,
        "train": len(train),
        "test": len(test),
        "results": results,
    }
    Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    figure(results, args, Path(args.figure))
    mean = np.mean([r["after"]["held_out_f1"] for r in results])
    print(f"held-out F1 after {args.steps} steps, mean over codebooks: {mean:.4f}")
    return out


if __name__ == "__main__":
    main()

"""What the first probe missed (docs/learning.md, "Learning a grammar from strings"): the
nonterminals started alike, and the table's crosstalk at d = 64.

    python docs/lab/grammar_symmetry.py [--out grammar_symmetry.json]

1. Symmetry: :func:`fastdcyk.learn_grammar`'s recipe over the symbolic chart
   (``method="chart"``) on a^n b^n (1,000 members of 2 to 10 words and 1,000 one-edit
   negatives, 4 nonterminals, 600 steps), seeds 0 to 4, with every parameter started at
   the same value (noise 0, as the probe did) and with the default noise (0.5); each
   grammar read off is compared with a^n b^n on every string of up to 8 words.
2. Crosstalk: for random rule weights (4 nonterminals, binary weights around 0.12 and ten
   raised), the start symbol's top-cell value through the table (``fastdcyk.nn.DCYK``,
   trace variant, float64) against the exact chart with the same gates, on 20 random
   strings of 1 to 10 words, at d = 64, 128, 256 and 1024 and beta = 3 and 10: the largest
   difference.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import random
from pathlib import Path

import torch

import fastdcyk as fd
from fastdcyk.learn import inputs, model, train
from fastdcyk.nn import DCYK


def anbn(n: int) -> tuple[str, ...]:
    return ("a",) * n + ("b",) * n


def member(w) -> bool:
    return len(w) % 2 == 0 and w == anbn(len(w) // 2)


def strings(seed: int):
    rng = random.Random(seed)
    pos = [anbn(rng.randint(1, 5)) for _ in range(1000)]
    neg = []
    for w in pos:
        while True:
            w2 = list(w)
            kind = rng.choice("ids")
            at = rng.randrange(len(w2) + (kind == "i"))
            if kind == "i":
                w2.insert(at, rng.choice("ab"))
            elif kind == "d" and len(w2) > 1:
                del w2[at]
            else:
                w2[min(at, len(w2) - 1)] = rng.choice("ab")
            if w2 and not member(tuple(w2)):
                neg.append(tuple(w2))
                break
    return pos + neg, [True] * 1000 + [False] * 1000


def symmetry(seed: int, noise: float) -> dict:
    ss, ys = strings(seed)
    s = train._settings(
        nonterminals=4, start="S", seed=seed, max_steps=600, restarts=1, method="chart",
        d=128, dtype="float64", batch_size=32, lr=0.05, l1=0.01, beta=(3.0, 20.0),
        held_out=0.2, bracket_weight=1.0,
    )  # fmt: skip
    s = dataclasses.replace(s, noise=noise)
    data = inputs.check_data(ss, ys)
    tr, held = inputs.split(data, s.held_out, s.seed)
    inv = model.inventory(4, "S", data.words)
    run = train._Run(s, inv, "")
    learned = train._train(run, tr, held, None, None)
    wrong = [
        "".join(w)
        for n in range(1, 9)
        for w in itertools.product("ab", repeat=n)
        if learned.accepts(w) != member(w)
    ]
    return {
        "seed": seed,
        "noise": noise,
        "held_out": learned.held_out_accuracy,
        "disagree_up_to_8": len(wrong),
        "first_disagreements": wrong[:4],
        "grammar": None if learned.grammar is None else learned.grammar.to_string(),
    }


def crosstalk() -> list[dict]:
    inv = model.inventory(4, "S", ("a", "b"))
    gen = torch.Generator().manual_seed(0)
    tu = 0.5 * torch.randn(inv.n_unary, generator=gen, dtype=torch.float64)
    tb = -2 + 0.5 * torch.randn(inv.n_binary, generator=gen, dtype=torch.float64)
    tb[torch.randperm(inv.n_binary, generator=gen)[:10]] += 4
    wu, wb = torch.sigmoid(tu), torch.sigmoid(tb)
    rng = random.Random(0)
    ss = [tuple(rng.choice("ab") for _ in range(rng.randint(1, 10))) for _ in range(20)]
    out = []
    for d in (64, 128, 256, 1024):
        for beta in (3.0, 10.0):
            layer = DCYK(
                inv.grammar, d, variant="trace", learn=(), beta=beta, dtype=torch.float64,
                max_length=10,
            )  # fmt: skip
            with torch.no_grad():
                table = model.table_cells(layer, ss, wu, wb).top()
                chart = model.chart_cells(inv, ss, wu, wb, beta).top()
            out.append({"d": d, "beta": beta, "max_difference": float((table - chart).abs().max())})
            print(out[-1], flush=True)
    return out


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=Path(__file__).with_name("grammar_symmetry.json"))
    args = p.parse_args(argv)
    result = {"crosstalk": crosstalk(), "symmetry": []}
    for noise in (0.0, 0.5):
        for seed in range(5):
            result["symmetry"].append(symmetry(seed, noise))
            print({k: v for k, v in result["symmetry"][-1].items() if k != "grammar"}, flush=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    fd.threads.set_threads(1)
    main()

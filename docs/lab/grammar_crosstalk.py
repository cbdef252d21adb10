"""Study (m): why a grammar the chart learns is not learned through the table. The weights
the exact chart learns (``fastdcyk.learn_grammar(method="chart")``, seed 0) are put into
the table at several d, and the start symbol's top-cell value of 200 training strings
compared with the chart's (docs/results.md, study (m)).

    python docs/lab/grammar_crosstalk.py arith --gate tanh --dims 256 512 1024

One JSON line per (language, gate, d) is appended to grammar_crosstalk.jsonl beside this
script: the chart's accuracy on the 200 strings (value > 1/2 against the labels), the
table's with the same weights, and the largest and mean |table - chart|.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import grammar_study as study  # beside this script
import torch

import fastdcyk as fd
from fastdcyk.learn import model


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("language", choices=list(study.LANGUAGES))
    p.add_argument("--gate", choices=["tanh", "sigmoid"], default="tanh")
    p.add_argument("--dims", nargs="+", type=int, default=[256, 512, 1024])
    p.add_argument(
        "--record", type=Path, default=Path(__file__).with_name("grammar_crosstalk.jsonl")
    )
    args = p.parse_args(argv)
    g = study.generator(args.language)
    sets = study.data(g, 0)
    k = len(g.nonterminals) + 1
    learned = fd.learn_grammar(
        *sets["train"], nonterminals=k, method="chart", gate=args.gate, seed=0, progress=False
    )
    inv = model.inventory(k, "S", learned.config["words"])
    w = torch.tensor([learned.weights[str(r)] for r in inv.rules()], dtype=torch.float64)
    wb, wu = w[: inv.n_binary], w[inv.n_binary :]
    beta = learned.config["beta"][1]  # the last stage's
    strings, labels = sets["train"]
    rows = list(range(0, len(strings), 8))[:200]
    ss = [strings[r] for r in rows]
    ys = torch.tensor([labels[r] for r in rows])
    exact = model.chart_cells(inv, ss, wu, wb, beta, args.gate).top()
    chart_acc = float(((exact > 0.5) == ys).double().mean())
    for d in args.dims:
        t0 = time.perf_counter()
        layer = model.table_layer(inv, d, args.gate, beta, torch.float64, max(map(len, ss)))
        got = torch.cat(
            [model.table_cells(layer, ss[i : i + 32], wu, wb).top() for i in range(0, len(ss), 32)]
        )
        err = (got - exact).abs()
        record = {
            "language": args.language, "gate": args.gate, "d": d,
            "nonterminals": k, "weights above 0.1": int((w > 0.1).sum()),
            "chart accuracy": chart_acc,
            "table accuracy": float(((got > 0.5) == ys).double().mean()),
            "largest error": float(err.max()), "mean error": float(err.mean()),
            "seconds": time.perf_counter() - t0,
        }  # fmt: skip
        print(json.dumps(record), flush=True)
        with args.record.open("a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()

"""Write tests/data/reference_parses.npz: the numbers that restructuring must not move.

For every option set that changes the accumulators (variant's codebook, gate, unary mask,
encoding, order) on two grammars, in float64 and with both backends: P_left, P_right, both
decoders' statistics, the chart, the counts; and the capacity model's predictions of both
variants. tests/engine/test_reference.py checks the package against this file at 1e-9 relative.

Run from the repository root (PyTorch installed) only when a change is meant to move the
numbers, and say why in the commit::

    python tests/data/make_reference.py
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np

import fastdcyk as fd

HERE = Path(__file__).parent
OUT = HERE / "reference_parses.npz"

SAME_CHILD = """
S -> S S | A B
A -> A A | 'a'
B -> B B | 'b'
"""
#: (grammar, sentence, d)
CASES = {
    "G0": ("G0", "fish swim near fish", 32),
    "same-child": (SAME_CHILD, "a a b b", 32),
}


def option_sets() -> list[dict]:
    """Every combination that changes the accumulators (the decoder does not)."""
    out = []
    for variant, gate, mask, encoding, order in itertools.product(
        ("paper", "trace"),
        ("entrywise", "trace"),
        (False, True),
        ("paper", "roles"),
        ("sequential", "cell"),
    ):
        if gate == "trace" and mask:
            continue  # a trace gate's P_A is a multiple of I: the mask changes nothing
        out.append(
            {
                "variant": variant,
                "gate": gate,
                "unary_mask": mask,
                "encoding": encoding,
                "order": order,
            }
        )
    return out


def grammar(source: str) -> fd.Grammar:
    return fd.Grammar.builtin(source) if source in ("G0",) else fd.Grammar.from_string(source)


def key(case: str, backend: str, opts: dict) -> str:
    return "|".join([case, backend, *(f"{k}={v}" for k, v in sorted(opts.items()))])


def parses(backend: str, case: str):
    """(key, options, result, entry statistics) of every option set of one case."""
    source, sentence, d = CASES[case]
    g = grammar(source)
    for opts in option_sets():
        cb = fd.engine.default_codebook(g, d, 3, "float64", unitary=opts["variant"] == "trace")
        r = fd.dcyk(g, sentence, cb, decoder="trace", backend=backend, **opts)
        entry = fd.decode_statistics(r.p_left, g, len(r.words), cb, decoder="entry")
        yield key(case, backend, opts), opts, r, entry


def stats_array(stats: dict, g: fd.Grammar, n: int) -> np.ndarray:
    return np.array(
        [stats[(i, j, a)] for i in range(n) for j in range(i + 1, n + 1) for a in g.nonterminals]
    )


def predictions() -> dict[str, list[float]]:
    out = {}
    # each variant in the order its predictions were stored with: the trace variant's was
    # "cell", its default until the width order became it
    for variant, order in (("paper", "sequential"), ("trace", "cell")):
        for name, d in (("G0", 64), ("G2", 128)):
            p = fd.capacity.predict(
                name, 4, d, variant=variant, order=order, samples=2, sentences=6
            )
            out[f"{name}|{variant}|{d}"] = [p.precision, p.recall, p.f1, p.p_exact]
    return out


def main() -> None:
    arrays: dict[str, np.ndarray] = {}
    meta: dict[str, dict] = {}
    for backend in ("numpy", "torch"):
        for case in CASES:
            for k, opts, r, entry in parses(backend, case):
                n = len(r.words)
                arrays[f"{k}|p_left"] = r.p_left
                arrays[f"{k}|p_right"] = r.p_right
                arrays[f"{k}|trace_stats"] = stats_array(r.statistics, r.grammar, n)
                arrays[f"{k}|entry_stats"] = stats_array(entry, r.grammar, n)
                meta[k] = {
                    "options": opts,
                    "counts": r.counts,
                    "chart": sorted([i, j, sorted(v)] for (i, j), v in r.chart.items()),
                }
    arrays["meta"] = np.array(json.dumps({"parses": meta, "capacity": predictions()}))
    np.savez_compressed(OUT, **arrays)
    print(f"wrote {OUT} ({OUT.stat().st_size / 1e6:.2f} MB, {len(meta)} parses)")


if __name__ == "__main__":
    main()

"""A snapshot of fastdcyk's outputs, to show that a restructuring moves no number.

Every mode and read-back, both orders, float32 and float64, the numpy and torch backends, on
G0, a grammar whose rules repeat a child (A -> A A), CommandTalk and a PCFG: P_left, P_right,
the decoder statistics, charts, counts, detection logs, the decoders of a bare P_left, soft
words, the weighted table's scores and tree, ``d="auto"``'s choice, a torch batch, the
capacity model's predictions and memory, ``estimate_memory``, and ``nn.DCYK``'s scores,
readouts and gradients. Only the public API is called, so that the same script runs on the
code before a change and after it.

Run from the repository root (PyTorch installed), before and after, on one machine::

    python benchmarks/snapshot.py write before.npz     # on the old commit
    python benchmarks/snapshot.py write after.npz      # on the new one
    python benchmarks/snapshot.py compare before.npz after.npz

``compare`` exits 1 unless both files hold the same outputs, equal bit for bit.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import warnings
from pathlib import Path

import numpy as np

import fastdcyk as fd

ROOT = Path(__file__).resolve().parents[1]

SAME_CHILD = """
S -> S S | A B
A -> A A | 'a'
B -> B B | 'b'
"""


def _grammars() -> dict[str, tuple[fd.Grammar, str]]:
    ct = fd.Grammar.from_file(
        ROOT / "tests" / "data" / "commandtalk.cfg.gz", cnf="allow", encoding="latin-1"
    ).to_cnf()
    ct_sentence = " ".join(fd.generate(ct, 6, 1, seed=3)[0])
    pcfg = fd.Grammar.from_file(ROOT / "tests" / "data" / "pp.pcfg")
    return {
        "G0": (fd.Grammar.builtin("G0"), "fish swim near fish"),
        "same-child": (fd.Grammar.from_string(SAME_CHILD), "a a b b"),
        "commandtalk": (ct, ct_sentence),
        "pcfg": (pcfg, "john saw the man with a telescope"),
    }


def _text(x: object) -> np.ndarray:
    return np.array(repr(x))


def _chart(chart: dict) -> np.ndarray:
    return _text(sorted((i, j, sorted(v)) for (i, j), v in chart.items()))


def _array(x: object) -> np.ndarray:
    a = np.asarray(x)
    return _text(x) if a.dtype == object else a


def _stats(stats: object) -> np.ndarray:
    if stats is None:
        return _text(None)
    return np.asarray(stats.array)  # (n, n + 1, N) float64


def _result(out: dict, key: str, r: object) -> None:
    out[f"{key}|p_left"] = _array(r.p_left)
    out[f"{key}|p_right"] = _array(r.p_right)
    out[f"{key}|statistics"] = _stats(r.statistics)
    out[f"{key}|chart"] = _chart(r.chart)
    out[f"{key}|counts"] = _text(sorted(r.counts.items()))
    out[f"{key}|log"] = _text(r.log)
    out[f"{key}|sure"] = _text(r.sure)
    out[f"{key}|table_scores"] = _text(
        None if r.table_scores is None else sorted(r.table_scores.items())
    )


def parses(out: dict) -> None:
    """dcyk over every mode, read-back, order, dtype and backend."""
    combos = []
    for variant in ("paper", "trace", "cleanup"):
        for order in ("sequential", "cell", "width"):
            readbacks = ("cancel", "lstsq", "matched") if variant == "cleanup" else (None,)
            for rb in readbacks:
                combos.append({"variant": variant, "order": order, "readback": rb})
    combos.append({"variant": "paper", "gate": "trace", "order": "cell", "readback": None})
    combos.append({"variant": "trace", "unary_mask": True, "gate": "entrywise", "readback": None})
    for (name, (g, words)), opts, dtype, backend in itertools.product(
        _grammars().items(), combos, ("float32", "float64"), ("numpy", "torch")
    ):
        if name == "commandtalk" and opts["variant"] != "cleanup":
            continue  # a real grammar: the default variant only
        kw = {k: v for k, v in opts.items() if v is not None}
        d = 256 if name == "commandtalk" else 64
        key = f"dcyk|{name}|{sorted(kw.items())}|{dtype}|{backend}"
        try:
            r = fd.dcyk(g, words, d=d, dtype=dtype, backend=backend, record=True, **kw)
        except ValueError as exc:  # a combination that does not exist: its message
            out[key + "|refused"] = _text(str(exc))
            continue
        _result(out, key, r)
        if backend == "numpy" and name in ("G0", "pcfg"):
            for decoder in ("entry", "trace"):
                got = fd.decode(r.p_left, g, codebook=r.codebook, words=words, decoder=decoder)
                out[f"{key}|decode-{decoder}"] = _chart(got)
            if opts["variant"] == "cleanup":
                for rb in ("lstsq", "cancel"):
                    got = fd.decode(r.p_left, g, codebook=r.codebook, words=words, readback=rb)
                    out[f"{key}|decode-{rb}"] = _chart(got)
            out[f"{key}|tree"] = _text(str(r.tree()) if r.chart else None)


def weighted(out: dict) -> None:
    """The weighted table and a PCFG's trees; soft words."""
    g, words = _grammars()["pcfg"]
    for rb, dtype in itertools.product(("cancel", "lstsq"), ("float32", "float64")):
        r = fd.dcyk(g, words, d=128, dtype=dtype, weights="table", readback=rb, record=True)
        key = f"weighted|{rb}|{dtype}"
        _result(out, key, r)
        out[f"{key}|tree"] = _text(str(r.tree()))
    soft = words.split()
    soft[3] = {"man": 0.7, "telescope": 0.3}
    for variant, backend in itertools.product(("cleanup", "trace"), ("numpy", "torch")):
        r = fd.dcyk(g, soft, d=128, dtype="float64", variant=variant, backend=backend)
        _result(out, f"soft|{variant}|{backend}", r)


def chosen(out: dict) -> None:
    """d='auto' and a torch batch."""
    gs = _grammars()
    for name in ("G0", "commandtalk"):
        g, words = gs[name]
        r = fd.dcyk(g, words)
        out[f"auto|{name}|d"] = np.array(r.codebook.d)
        out[f"auto|{name}|chart"] = _chart(r.chart)
        out[f"auto|{name}|dimension"] = _text(r.dimension.tried)
    g, _ = gs["G0"]
    sentences = ["fish swim", "fish swim near fish", "fish near fish swim fish"]
    for variant in ("trace", "cleanup", "paper"):
        rs = fd.dcyk_batch(g, sentences, d=64, dtype="float64", variant=variant, backend="torch")
        for k, r in enumerate(rs):
            _result(out, f"batch|{variant}|{k}", r)


def models(out: dict) -> None:
    """The capacity model and the memory estimates."""
    for variant, (name, length) in itertools.product(
        ("paper", "trace", "cleanup"), (("G0", 5), ("G2", 6))
    ):
        p = fd.capacity.predict(name, length, 96, variant=variant, samples=2, sentences=8)
        out[f"predict|{variant}|{name}"] = np.array(
            [p.precision, p.recall, p.f1, p.p_exact, p.sentences]
        )
        out[f"capacity-memory|{variant}|{name}"] = np.array(
            fd.capacity.estimate_memory(name, length, 512, variant)
        )
    for variant, d, dtype, rb in itertools.product(
        ("paper", "trace", "cleanup"), (256, 1024, 6000), ("float32", "float64"), (None, "cancel")
    ):
        kw = {"readback": rb} if rb is not None and variant == "cleanup" else {}
        out[f"memory|{variant}|{d}|{dtype}|{rb}"] = np.array(
            fd.estimate_memory(d, dtype, variant=variant, **kw)
        )


def layer(out: dict) -> None:
    """nn.DCYK's scores, readouts and gradients."""
    import torch

    from fastdcyk.nn import DCYK

    g = fd.Grammar.builtin("G0")
    for variant, learn in itertools.product(
        ("trace", "cleanup", "paper"), (("vectors",), ("vectors", "indices", "rules"))
    ):
        torch.manual_seed(0)
        m = DCYK(g, 64, variant=variant, dtype=torch.float64, learn=learn)
        o = m(["fish swim", "fish swim near fish"])
        o.loss().backward()
        key = f"layer|{variant}|{learn}"
        out[f"{key}|scores"] = o.scores.detach().numpy()
        out[f"{key}|readouts"] = o.readouts.detach().numpy()
        for name, p in m.named_parameters():
            out[f"{key}|grad|{name}"] = p.grad.numpy()
    m = DCYK(g, 64, variant="cleanup", dtype=torch.float64)
    pre = torch.full((1, 3, len(m.preterminals)), 0.7, dtype=torch.float64, requires_grad=True)
    o = m(preterminals=pre)
    o.loss([fd.cyk(g, "fish swim fish")]).backward()
    out["layer|preterminals|scores"] = o.scores.detach().numpy()
    out["layer|preterminals|grad"] = pre.grad.numpy()


def write(path: str) -> int:
    out: dict[str, np.ndarray] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for part in (parses, weighted, chosen, models, layer):
            part(out)
            print(f"{part.__name__}: {len(out)} outputs so far", file=sys.stderr)
    np.savez_compressed(path, **out)
    print(f"{len(out)} outputs written to {path}")
    return 0


def compare(a: str, b: str) -> int:
    with np.load(a) as za, np.load(b) as zb:
        ka, kb = set(za.files), set(zb.files)
        differ = [
            k
            for k in sorted(ka & kb)
            if za[k].dtype != zb[k].dtype
            or za[k].shape != zb[k].shape
            or not np.array_equal(za[k], zb[k], equal_nan=za[k].dtype.kind in "fc")
        ]
    for k in sorted(ka - kb):
        print(f"only in {a}: {k}")
    for k in sorted(kb - ka):
        print(f"only in {b}: {k}")
    for k in differ:
        print(f"differ: {k}")
    same = len(ka & kb) - len(differ)
    print(f"{same} of {len(ka | kb)} outputs equal bit for bit")
    return 0 if same == len(ka | kb) else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    w = sub.add_parser("write")
    w.add_argument("path")
    c = sub.add_parser("compare")
    c.add_argument("a")
    c.add_argument("b")
    args = ap.parse_args()
    return write(args.path) if args.what == "write" else compare(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main())

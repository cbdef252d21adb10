"""The operations of one ``dcyk_batch`` call on the torch backend: the top-level aten
operations that are not views, each of which is a kernel launch on a GPU, where a small
batch's time goes to launches and Python rather than arithmetic (docs/performance.md,
"The bar of the GPU rows, best of three"). G0 (or the grammar named), batches of 32
sentences of ``bench_peer.sentences``, d = 64, on the CPU: the count does not depend on d,
and on a device only the cells' checks differ (read at the end of the parse there).

    python benchmarks/op_count.py 5,10,20 [GRAMMAR] [VARIANT] [-v]

``-v`` lists the 30 most frequent operations with the fastdcyk function that called them.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_peer import sentences  # noqa: E402 - the benchmarks' folder first

import fastdcyk as fd  # noqa: E402
from fastdcyk.engine import default_codebook  # noqa: E402

#: Operations that make views (no launch).
VIEWS = frozenset(
    "aten::" + name
    for name in (
        "select alias detach detach_ unsqueeze squeeze transpose permute slice numpy_T t "
        "resolve_conj resolve_neg lift_fresh view reshape _reshape_alias as_strided expand "
        "_conj conj real imag view_as_real split narrow chunk unbind is_nonzero"
    ).split()
)


def _under_aten(event: Any) -> bool:
    p = event.cpu_parent
    while p is not None:
        if p.name.startswith("aten::"):
            return True
        p = p.cpu_parent
    return False


def _caller(event: Any) -> str | None:
    p = event.cpu_parent
    while p is not None:
        if "/fastdcyk/" in p.name:
            return p.name.split("/fastdcyk/")[-1]
        p = p.cpu_parent
    return None


def count(grammar: fd.Grammar, length: int, variant: str) -> Counter:
    """(operation, caller) -> calls, over one warm ``dcyk_batch`` call of 32 sentences."""
    cb = default_codebook(grammar, 64, 0, unitary=True)
    sents = sentences(grammar, length, 32)
    kw = {"backend": "torch", "device": "cpu", "batch_size": 32, "variant": variant}
    fd.dcyk_batch(grammar, sents, cb, **kw)  # warm: the codebook's caches made
    with profile(activities=[ProfilerActivity.CPU], with_stack=True) as prof:
        fd.dcyk_batch(grammar, sents, cb, **kw)
    return Counter(
        (e.name, _caller(e))
        for e in prof.events()
        if e.name.startswith("aten::") and e.name not in VIEWS and not _under_aten(e)
    )


def main(argv: list[str]) -> None:
    torch.set_num_threads(1)
    flags = [a for a in argv if a.startswith("-")]
    args = [a for a in argv if not a.startswith("-")]
    g = fd.Grammar.builtin(args[1] if len(args) > 1 else "G0")
    variant = args[2] if len(args) > 2 else "trace"
    for length in map(int, args[0].split(",")):
        c = count(g, length, variant)
        print(f"{length} words: {sum(c.values())} operations")
        if "-v" in flags:
            for (name, caller), calls in c.most_common(30):
                print(f"  {calls:5d} {name} ({caller})")


if __name__ == "__main__":
    main(sys.argv[1:])

"""The cost estimate of the paper's whole grid in docs/results.md.

Run with ``python docs/lab/grid_cost.py``: times one G0 sentence of length 7 at d = 3000 with
one thread, for each variant in the orders the grid can use. docs/results.md scales the
previous estimate (335 core-hours, for the engine of commit 3b1b792) by the ratio of these
times to those of that engine on the same machine (the same script, without ``order``).
"""

from __future__ import annotations

import inspect
import time

import fastdcyk as fd
from fastdcyk import threads

threads.set_threads(1)
g = fd.Grammar.builtin("G0")
s = fd.generate(g, 1, min_len=7, max_len=7, seed=3)[0]
has_order = "order" in inspect.signature(fd.dcyk).parameters
runs = (
    [("paper", "sequential"), ("paper", "cell"), ("trace", "cell")]
    if has_order
    else [
        ("paper", None),
        ("trace", None),
    ]
)
for variant, order in runs:
    extra = {"order": order} if order else {}
    fd.dcyk(g, s[:3], d=64, variant=variant, progress=False, **extra)  # compile the kernels first
    cb = fd.Codebook(3000, seed=0, threads=1, unitary=variant == "trace")
    t = time.perf_counter()
    fd.dcyk(g, s, codebook=cb, variant=variant, progress=False, **extra)
    print(f"{variant} {order or 'default'}: {time.perf_counter() - t:.1f} s", flush=True)

"""The GPU rows of docs/performance.md: batched throughput of the torch backend on a device.

The measure of ``bench_torch.py::test_torch_batch_throughput`` (G0 sentences of 5 to 7
words, ``generate(..., seed=7)``, the trace variant, ``dcyk_batch`` with its default batch
size, float32, one warm-up sentence), on ``--device``, at each ``--dims``; then
``--many`` sentences, more batches of the same size (the default batch on a GPU holds 64,
31 and 3 sentences at d = 1024, 2048 and 6000; each row records it). The first timed pass
at a d still pays one-time costs (the G_k matrices it is the first to use). Every decoded
chart is checked against symbolic CYK. Prints one line per case and, with ``--json``,
writes the numbers there.

Usage::

    python benchmarks/gpu_rows.py --device cuda --dims 1024 2048 6000 --json gpu_rows.json
"""

from __future__ import annotations

import argparse
import json
import time

import torch

import fastdcyk as fd
from fastdcyk.engine import default_codebook
from fastdcyk.engine.backends.torch.device import default_batch_size
from fastdcyk.engine.backends.torch.driver import release_caches
from fastdcyk.engine.batch import dcyk_batch


def main(argv: list[str] | None = None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--dims", type=int, nargs="+", default=[1024, 2048, 6000])
    p.add_argument("--count", type=int, default=16, help="sentences of the first case")
    p.add_argument("--many", type=int, default=128, help="sentences of the second case")
    p.add_argument("--json", default=None, help="write the rows here")
    args = p.parse_args(argv)
    dev = torch.device(args.device)
    g = fd.Grammar.builtin("G0")
    # the benchmark's sentences, drawn for each count as it draws them
    sets = {n: [tuple(s) for s in fd.generate(g, n, 5, 7, seed=7)] for n in (args.count, args.many)}
    rows = []
    for d in args.dims:
        # the last d's results and G_k matrices go before this d's are counted
        out = None
        release_caches()
        cb = default_codebook(g, d, 0, unitary=True)
        dcyk_batch(g, sets[args.count][:1], cb, variant="trace", device=dev)  # warm-up
        for count in (args.count, args.many):
            if dev.type == "cuda":
                torch.cuda.reset_peak_memory_stats(dev)
            t0 = time.perf_counter()
            out = dcyk_batch(g, sets[count], cb, variant="trace", device=dev)
            seconds = time.perf_counter() - t0  # the results are decoded on the host: synced
            exact = sum(r.chart == fd.cyk(g, r.words) for r in out)
            row = {
                "d": d,
                "sentences": count,
                "batch": default_batch_size(d, "float32", dev),
                "seconds": seconds,
                "sentences_per_s": count / seconds,
                "exact_charts": exact,
                "peak_device_gb": (
                    torch.cuda.max_memory_allocated(dev) / 1e9 if dev.type == "cuda" else None
                ),
            }
            rows.append(row)
            print(
                f"d = {d}: {count} sentences in {seconds:.2f} s, "
                f"{row['sentences_per_s']:.2f} sentences/s, {exact}/{count} charts exact"
                + (f", peak {row['peak_device_gb']:.2f} GB" if row["peak_device_gb"] else ""),
                flush=True,
            )
    if args.json:
        info = {"device": str(dev), "torch": torch.__version__, "fastdcyk": fd.__version__}
        if dev.type == "cuda":
            info["name"] = torch.cuda.get_device_name(dev)
        with open(args.json, "w") as f:
            json.dump({"machine": info, "rows": rows}, f, indent=1)
    return rows


if __name__ == "__main__":
    main()

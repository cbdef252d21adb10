"""Where a batch's time goes on the torch backend: ``dcyk_batch``, the parse and charts
only, and the parse with and without its decoder statistics and dense matrices.

G0 (``--grammar``), batches of 32 sentences drawn as benchmarks/bench_peer.py draws them
(``sentences(g, L, 32)``), the ``--variant`` (default the trace variant, in its own order
or ``--order``), float32, on ``--device``: per d and length, after a warm-up, the best of
three of

- ``full``: :func:`fastdcyk.dcyk_batch` as a user calls it (results made, charts decoded);
- ``charts_only``: :func:`fastdcyk.engine.backends.torch.driver.parse` (the driver) with
  ``dense=False``;
- ``core``, ``core_decode``, ``core_dense``:
  :func:`fastdcyk.engine.backends.torch.driver.parse_tensors` alone, without the decoder
  statistics, with them, and with the dense matrices too;

with the charts of the ``full`` run checked against symbolic CYK (``exact``). With
``--profile`` a torch profile of one ``dcyk_batch`` call at the first d and length is
written beside the JSON. docs/performance.md, "On a GPU (2026-11-27, third session)".

Usage::

    python benchmarks/gpu_batch_parts.py --device cuda --dims 1024 2048 --json parts.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

import fastdcyk as fd
from fastdcyk.engine import default_codebook
from fastdcyk.engine.backends.torch import driver as tb
from fastdcyk.engine.prepare import prepare
from fastdcyk.registry import backends

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_peer import best, sentences  # noqa: E402 - the benchmarks' folder first


def main(argv: list[str] | None = None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--grammar", default="G0")
    p.add_argument("--variant", default="trace")
    p.add_argument("--order", default=None, help="default: the variant's own")
    p.add_argument("--dims", type=int, nargs="+", default=[1024, 2048])
    p.add_argument("--lengths", type=int, nargs="+", default=[5, 10, 20])
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--json", default=None, help="write the rows here")
    p.add_argument("--profile", action="store_true", help="a torch profile, beside --json")
    args = p.parse_args(argv)
    dev = torch.device(args.device)
    g = fd.Grammar.builtin(args.grammar)
    options = {"variant": args.variant} | ({"order": args.order} if args.order else {})
    kw = {"backend": "torch", "device": dev, "batch_size": args.batch, **options}

    def sync() -> None:
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)

    def timed(f) -> float:
        """bench_peer's best of three, the device synchronised around each call."""
        sync()
        return best(lambda: (f(), sync()), 3, warm=False)

    rows = []
    st = tb.rule_structure(g)
    for d in args.dims:
        cb = default_codebook(g, d, 0, unitary=True)
        for length in args.lengths:
            sents = sentences(g, length, args.batch)
            rows.append(_parts(g, st, cb, sents, options, kw, dev, timed))
            row = rows[-1]
            print(
                f"d = {d}, {length} words: full {args.batch / row['full']:.0f}/s, charts "
                f"only {args.batch / row['charts_only']:.0f}/s, parse "
                f"{args.batch / row['core']:.0f}/s; {row['exact']}/{args.batch} charts exact",
                flush=True,
            )
    if args.json:
        Path(args.json).write_text(json.dumps({"device": str(dev), "rows": rows}, indent=1))
    if args.profile:
        from torch.profiler import ProfilerActivity, profile

        cb = default_codebook(g, args.dims[0], 0, unitary=True)
        sents = sentences(g, args.lengths[0], args.batch)
        fd.dcyk_batch(g, sents, cb, **kw)
        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev.type == "cuda" else [])
        with profile(activities=acts) as prof:
            fd.dcyk_batch(g, sents, cb, **kw)
            sync()
        key = "self_cuda_time_total" if dev.type == "cuda" else "self_cpu_time_total"
        table = prof.key_averages().table(sort_by=key, row_limit=30)
        out = Path(args.json or "parts.json").with_suffix(".profile.txt")
        out.write_text(table)
        print(table)
    return rows


def _parts(g, st, cb, sents, options, kw, dev, timed) -> dict:
    """One (d, length) row: the times of the parts, best of three each."""
    exact = sum(r.chart == fd.cyk(g, r.words) for r in fd.dcyk_batch(g, sents, cb, **kw))
    row = {"d": cb.d, "words": len(sents[0]), "batch": len(sents), "exact": exact}
    row["full"] = timed(lambda: fd.dcyk_batch(g, sents, cb, **kw))
    plan = prepare(
        g, sents, cb, d=None, seed=0, dtype=None, unitary=None, fft="auto",
        check_memory=False, backend="torch", device=dev, options=options,
    )  # fmt: skip
    row["charts_only"] = timed(
        lambda: tb.parse(plan, backends.get("torch"), device=dev, dense=False)
    )
    n = max(len(s) for s in plan.sentences)
    vec = tb.symbol_vectors(cb, st, n, encoding=plan.options.encoding, device=dev)
    ids = [st.terminal_ids(s) for s in plan.sentences]
    cache = tb._codebook_g_cache(cb, vec)
    with torch.no_grad():
        for name, extra in (
            ("core", {"decode": False}),
            ("core_decode", {}),
            ("core_dense", {"dense": True}),
        ):
            row[name] = timed(
                lambda e=extra: tb.parse_tensors(vec, st, ids, plan.options, g_cache=cache, **e)
            )
    return row


if __name__ == "__main__":
    main()

"""Where tasks run: serially, in a process pool, or on a dask.distributed cluster."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from fastdcyk.experiments.tasks import Task, run_task
from fastdcyk.processes import init_worker

# -- executors ------------------------------------------------------------------------------


def run_serial(
    tasks: list[Task], backend: str = "numpy", device: Any = None
) -> Iterator[tuple[Task, list[dict[str, Any]]]]:
    """Run the tasks in this process, one after the other (the only executor of a batched
    backend, torch: its batches run on one device, from this process)."""
    for task in tasks:
        yield task, run_task(task, backend=backend, device=device)


def run_pool(tasks: list[Task], workers: int) -> Iterator[tuple[Task, list[dict[str, Any]]]]:
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    # spawn, not fork: the parent may already run FFT, Numba or tqdm threads.
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=init_worker,
        initargs=(os.getpid(),),  # workers exit when this process dies, even by SIGKILL
    )
    pending = {pool.submit(run_task, t): t for t in tasks}
    finished = False
    try:
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                task = pending.pop(fut)
                yield task, fut.result()
        finished = True
    finally:
        if finished:
            pool.shutdown(wait=True)
        else:
            # Interrupted or failed: drop queued tasks and stop the workers now, rather than
            # waiting for the running ones (their records would be lost anyway).
            processes = list(getattr(pool, "_processes", {}).values())
            pool.shutdown(wait=False, cancel_futures=True)
            for p in processes:
                p.terminate()


def run_dask(
    tasks: list[Task], scheduler: str | None, client: Any
) -> Iterator[tuple[Task, list[dict[str, Any]]]]:
    try:
        from dask.distributed import Client, as_completed
    except ImportError as exc:
        raise ImportError(
            "the dask executor needs dask.distributed: pip install 'dask[distributed]'"
        ) from exc
    own = client is None
    if own:
        client = Client(scheduler)
    futures = [client.submit(run_task, t, pure=False) for t in tasks]
    by_key = {f.key: t for f, t in zip(futures, tasks, strict=True)}
    try:
        # Not as_completed(..., with_results=True): its result gathering can wait for ever on
        # results already in memory (dask/distributed issue 7331; seen here once, with every
        # task finished on the scheduler). Each result is fetched on its own instead.
        for fut in as_completed(futures):
            yield by_key[fut.key], fut.result()
    finally:
        client.cancel([f for f in futures if not f.done()])
        if own:
            client.close()

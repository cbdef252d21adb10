"""Where tasks run: serially, in a process pool, or on a dask.distributed cluster."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from typing import Any

from fastdcyk import threads
from fastdcyk.experiments.tasks import Task, run_task

_PARENT_POLL = 0.5


def _exit_with_parent(parent: int, interval: float = _PARENT_POLL) -> threading.Thread:
    """Exit this process (``os._exit``) soon after the process ``parent`` is gone.

    A daemon thread compares ``os.getppid()`` with ``parent`` every ``interval`` seconds:
    an orphan is adopted by another process (init, or a subreaper), so the two differ once
    the parent has died, however it died (SIGKILL, SIGTERM, a crash). Without this a pool
    worker whose parent was killed waits for work for ever, or finishes its task and
    blocks writing the result, and keeps the resource tracker alive with it.
    """

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(interval)
        os._exit(1)

    thread = threading.Thread(target=watch, name="fastdcyk-exit-with-parent", daemon=True)
    thread.start()
    return thread


def _init_worker(parent: int | None = None) -> None:
    """Process-pool initializer: one thread per worker, leave Ctrl-C to the parent, and
    exit when the parent (pid ``parent``) dies."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threads.set_threads(1)
    if parent is not None:
        _exit_with_parent(parent)


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
        initializer=_init_worker,
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

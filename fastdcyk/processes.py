"""Worker processes that leave Ctrl-C to their parent and die with it.

The experiment grid's process pool (:mod:`fastdcyk.experiments.executors`) and a corpus's
(:mod:`fastdcyk.corpus`) start their workers with :func:`init_worker`: one thread each, Ctrl-C
ignored (the parent stops them), and an exit as soon as the parent is gone, however it went
(a pool worker whose parent was killed would otherwise wait for work for ever).
"""

from __future__ import annotations

import os
import threading
import time

from fastdcyk import threads

__all__ = ["exit_with_parent", "init_worker"]

_PARENT_POLL = 0.5


def exit_with_parent(parent: int, interval: float = _PARENT_POLL) -> threading.Thread:
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


def init_worker(parent: int | None = None) -> None:
    """Process-pool initializer: one thread per worker, leave Ctrl-C to the parent, and
    exit when the parent (pid ``parent``) dies."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threads.set_threads(1)
    if parent is not None:
        exit_with_parent(parent)

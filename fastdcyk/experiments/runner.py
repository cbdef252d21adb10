"""Running a grid: :func:`run_experiment` plans, runs and records, resuming a file."""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastdcyk import threads
from fastdcyk.cfg.grammar import Grammar
from fastdcyk.checks import check_choice, check_int, check_path
from fastdcyk.engine.memory import estimate_memory, largest_fitting_d
from fastdcyk.experiments.config import ExperimentConfig
from fastdcyk.experiments.executors import run_dask, run_pool, run_serial
from fastdcyk.experiments.records import grid_mismatch, record_key
from fastdcyk.experiments.store import (
    ResultsFileError,
    open_results,
    refuse_compressed,
    results_appender,
    results_lock,
)
from fastdcyk.experiments.tasks import Task, check_sample, plan_tasks
from fastdcyk.hrr import memory as _memory
from fastdcyk.options import EXECUTORS, VARIANTS, check_backend
from fastdcyk.registry import modes

# -- memory ---------------------------------------------------------------------------------


def _check_grid_memory(
    cells: Iterable[tuple[int, str, str, int]], dtype: str, readback: str | None = None
) -> tuple[int, int | None]:
    """Refuse a grid whose largest parse cannot fit in this machine's memory.

    ``cells``: (d, variant, order, longest sentence) of the parses to run; ``readback``:
    the cleanup variant's read-back (``"cancel"`` holds one more spectrum). Every parse
    runs in a worker with one FFT thread, as :func:`run_task` runs it.

    Returns
    -------
    (int, int or None)
        Bytes of the largest parse (:func:`fastdcyk.estimate_memory`), and the bytes
        available (None when unknown).

    Raises
    ------
    MemoryError
        Before any worker starts, when the largest parse needs more than is available;
        the message names its d, the memory needed and available, and the largest d that
        fits.
    """
    cells = list(cells)

    def read(variant: str) -> str | None:
        return modes.own_readback(VARIANTS[variant]["gate"], readback)

    def need(cell: tuple[int, str, str, int]) -> int:
        d, variant, order, n = cell
        return estimate_memory(
            d, dtype, "auto", 1, variant=variant, order=order, readback=read(variant), n=n
        )

    worst = max(cells, key=need)
    most = need(worst)
    avail = _memory.available_memory()
    if avail is None or most <= avail:
        return most, avail
    fits = min(
        largest_fitting_d(
            int(0.9 * avail),
            dtype,
            "auto",
            threads=1,
            variant=v,
            order=o,
            readback=read(v),
            n=n,
            upper=worst[0],
        )
        or 0
        for _, v, o, n in cells
    )
    hint = (
        f"run the dimensions d <= {fits} only"
        if fits >= 2
        else "free some memory (not even d = 2 fits)"
    )
    d, variant, order, n = worst
    raise MemoryError(
        f"the grid's largest parse (d = {d}, variant {variant!r}, order {order!r}, "
        f"sentences of up to {n} words, {dtype}) needs about {_memory.format_bytes(most)} for its "
        f"accumulators and work buffers, but only {_memory.format_bytes(avail)} of memory is "
        f"available: {hint}. Nothing was run"
    )


# -- the runner -----------------------------------------------------------------------------


@dataclass
class RunSummary:
    """What :func:`run_experiment` did.

    Attributes
    ----------
    path : Path
        The results file.
    config_hash : str
    total : int
        Records of the whole grid.
    resumed : int
        Records of the grid found in the file at the start (skipped).
    written : int
        Records written by this run.
    seconds : float
        Wall time of this run.
    torn_bytes : int
        Bytes of a torn last line cut off at the start (0 when the file was clean).
    tasks : int
        Tasks this run had to do.
    executor : str
    workers : int
        Pool size (1 for the serial and dask executors).
    backend : str
        The backend that parsed (``"numpy"`` or ``"torch"``).
    device : str or None
        The torch backend's device (``"cpu"``, ``"cuda"``, ...); None for numpy.
    duplicates : int
        Records found in the file at the start that repeat one before them (the same grid
        cell and sentence): counted once, in ``resumed``.
    outside : int
        Records found in the file at the start that are not of the grid (edited or joined
        in by hand: a d that the configuration does not have, say): not counted.
        Duplicates and records outside the grid are left in the file.
    """

    path: Path
    config_hash: str
    total: int
    resumed: int
    written: int
    seconds: float
    torn_bytes: int = 0
    tasks: int = 0
    executor: str = "serial"
    workers: int = 1
    backend: str = "numpy"
    device: str | None = None
    duplicates: int = 0
    outside: int = 0

    @property
    def complete(self) -> bool:
        """Whether the results file now holds the whole grid."""
        return self.resumed + self.written == self.total


def run_experiment(
    config: ExperimentConfig,
    out: str | os.PathLike[str],
    *,
    executor: str = "process",
    workers: int | None = None,
    scheduler: str | None = None,
    client: Any = None,
    batch_size: int | None = None,
    progress: bool = True,
    echo: Callable[[str], None] | None = None,
    backend: str = "numpy",
    device: Any = None,
) -> RunSummary:
    """Run (or resume) the grid of ``config``, appending its records to ``out``.

    The run holds ``out``'s lock from start to end (see the module's notes), so a second
    run on the same file is refused. Before anything runs (and before a new file is
    created), the memory of the largest parse still to do is checked against what this
    machine has available (not with the dask executor, whose workers are elsewhere); a
    process pool that would not fit at that d gets fewer workers (``echo`` says so). Pool
    workers exit when this process dies, even when it is killed.

    The backend and its device are options of the run, not of the grid: they are not part
    of the configuration or its hash, and the records do not name them. Both backends give
    the same records in float64 (the parse time aside; in float32 the paper variant's can
    differ sentence by sentence: :func:`run_task`), so a file begun with one may be resumed
    with the other; the summary (and ``echo``) says which one ran.

    Parameters
    ----------
    config : ExperimentConfig
    out : path
        The results file (JSON Lines, created with its folder if absent). An existing file
        of the same configuration is resumed: its records are skipped.
    executor : {"process", "serial", "dask"}, default "process"
        ``"process"``: a pool of ``workers`` processes (default: one per core);
        ``"serial"``: this process; ``"dask"``: a dask.distributed cluster, at
        ``scheduler`` (an address such as ``"tcp://host:8786"``) or through ``client``.
        Every executor gives the same records (the parse time aside).
    workers : int, optional
        Pool size for ``"process"`` (default: all cores); fewer when that many parses at
        the largest d would not fit in the memory available.
    scheduler : str, optional
        Address of the dask scheduler.
    client : dask.distributed.Client, optional
        An existing client (the caller keeps and closes it).
    batch_size : int, optional
        Distinct sentences per task (see :func:`plan_tasks`; larger by default for the
        torch backend).
    progress : bool, default True
        Show a progress bar (tqdm) with the ETA, weighted by the estimated cost of tasks.
    echo : callable, optional
        Receives one-line messages (the file, what is resumed); default: none.
    backend : {"numpy", "torch"}, default "numpy"
        ``"numpy"``: every sentence parsed by :func:`fastdcyk.dcyk`, on one thread per
        worker. ``"torch"``: each task's sentences parsed in batches by the torch backend
        (:func:`run_task`), on ``device``; the records' ``seconds`` is then the time of a
        batch divided evenly among its sentences. The torch backend runs with the serial
        executor only: its batches run on one device from this process (a pool of
        processes would only compete for one GPU, and on a CPU each would start torch's
        own pool of threads). Its memory is not checked in advance: a batch that does not
        fit on the device is halved, down to one sentence.
    device : torch.device or str, optional
        Where the torch backend computes (default the CPU): ``"cuda"``, ``"cuda:1"``, ... Only with
        ``backend="torch"``; checked (:func:`fastdcyk.engine.backends.torch.device.check_device`)
        before the results file is created or opened.

    Returns
    -------
    RunSummary

    Raises
    ------
    ConfigMismatchError
        When ``out`` holds another configuration's records.
    ResultsFileError
        When ``out`` is a folder, or a file that is not a results file.
    TypeError
        When ``out`` is not a path.
    ResultsLockedError
        When another run is writing ``out`` (the file is not touched).
    MemoryError
        When one parse at the largest d still to do needs more memory than is available
        (the message says how much, and which dimensions fit); nothing is run. With the
        torch backend, when a single sentence does not fit on the device.
    ResultsWriteError
        When records cannot be written (a full disk); those written before are kept.
    ValueError, GrammarError
        On a bad argument or grammar: with the torch backend, an executor other than
        ``"serial"``, or a device that PyTorch cannot use here (CUDA not available, say).
    ImportError
        For the torch backend without PyTorch installed.
    KeyboardInterrupt
        Passed on after the executor is stopped; every record written is kept.
    """
    check_choice("executor", executor, EXECUTORS)
    if workers is not None:
        workers = check_int("workers", workers, 1)
    out = check_path("out", out)
    if out.is_dir():
        raise ResultsFileError(
            f"out={str(out)!r} is a folder: give the path of a results file (JSON Lines), "
            "such as results.jsonl in it"
        )
    if executor == "dask" and not scheduler and client is None:
        raise ValueError("the dask executor needs a scheduler address (or a client)")
    device = _check_backend(backend, device, executor)
    refuse_compressed(Path(out))
    say = echo or (lambda _msg: None)
    t0 = time.perf_counter()
    grammars = config.load_grammars()
    config_hash = config.hash(grammars)
    sentences = config.sample(grammars)
    check_sample(config, grammars, sentences)  # before the results file is created
    path = Path(out)
    # parses one at a time running here: their memory can be checked here (a batched
    # backend's, torch's, is not estimated: it halves a batch that does not fit on its device)
    local = executor != "dask" and not check_backend(backend).batched
    fresh = not path.exists() or (path.is_file() and path.stat().st_size == 0)
    if local and fresh:  # every task is to do: check before the file is created
        longest = max(len(s) for s in sentences)
        _check_grid_memory(
            [(d, v, o, longest) for d in config.dims for v, o in config.variant_orders()],
            config.dtype,
            config.readback,
        )
    with results_lock(path):  # one run at a time on a file, until this one ends
        return _run_locked(
            config,
            path,
            config_hash,
            grammars,
            sentences,
            executor=executor,
            workers=workers,
            scheduler=scheduler,
            client=client,
            batch_size=batch_size,
            progress=progress,
            say=say,
            t0=t0,
            backend=backend,
            device=device,
        )


def _check_backend(backend: str, device: Any, executor: str) -> Any:
    """The device to run on (a torch.device; None for a backend that takes none), once the
    backend, the device and the executor are checked together: before any file is touched."""
    record = check_backend(backend, device)
    if record.batched and executor != "serial":
        raise ValueError(
            f"the {record.name} backend runs with the serial executor only, not {executor!r}: "
            "its batches run on one device from this process (one process per GPU); use "
            "executor='serial' (fastdcyk experiment --executor serial)"
        )
    return record.check_device(device)  # ImportError with the install hint


def _run_locked(
    config: ExperimentConfig,
    path: Path,
    config_hash: str,
    grammars: dict[str, Grammar],
    sentences: list[tuple[str, ...]],
    *,
    executor: str,
    workers: int | None,
    scheduler: str | None,
    client: Any,
    batch_size: int | None,
    progress: bool,
    say: Callable[[str], None],
    t0: float,
    backend: str = "numpy",
    device: Any = None,
) -> RunSummary:
    """:func:`run_experiment` once the results file's lock is held."""
    results = open_results(path, config, config_hash, grammars)
    keys = [record_key(r) for r in results.records]
    done = set(keys)
    tasks = plan_tasks(
        config,
        done,
        batch_size=batch_size,
        grammars=grammars,
        sentences=sentences,
        backend=backend,
    )
    need = avail = None
    local = executor != "dask" and not check_backend(backend).batched
    if local and tasks:  # what is left to do (a resumed file: maybe less)
        cells = {(t.d, t.variant, t.order, max(len(w) for w, _ in t.items)) for t in tasks}
        need, avail = _check_grid_memory(cells, config.dtype, config.readback)
    total = config.grid_size()
    # what the file holds of the grid: every grid record not to do (a record of the file
    # that repeats another, or lies outside the grid, is not one of them)
    resumed = total - sum(t.n_records for t in tasks)
    duplicates = len(keys) - len(done)
    outside = len(done) - resumed
    n_workers = 1
    if executor == "process":
        n_workers = max(1, min(workers or threads.cores(), len(tasks)))
        if need is not None and avail is not None and n_workers * need > avail:
            fit = max(1, avail // need)
            say(
                f"memory: a parse at the grid's largest d needs about {_memory.format_bytes(need)} "
                f"and {_memory.format_bytes(avail)} is available, so the pool has {fit} workers "
                f"instead of {n_workers}"
            )
            n_workers = fit
    summary = RunSummary(
        results.path,
        config_hash,
        total,
        resumed,
        0,
        0.0,
        results.torn_bytes,
        len(tasks),
        executor,
        n_workers,
        backend,
        None if device is None else str(device),
        duplicates,
        outside,
    )
    note = f", cut a torn last line of {results.torn_bytes} bytes" if results.torn_bytes else ""
    how = (
        f"{executor}, {n_workers} worker{'s' if n_workers != 1 else ''}"
        if executor == "process"
        else executor
    )
    how += f", {backend} on {device}" if device is not None else ""
    say(
        f"results: {results.path} (config {config_hash[:12]}): {total} records in the grid, "
        f"{resumed} already written{note}, {total - resumed} to do"
        + (f" in {len(tasks)} tasks ({how})" if tasks else "")
        + _ignored_note(results.records, config, duplicates, outside)
    )
    if not tasks:
        summary.seconds = time.perf_counter() - t0
        return summary

    if executor == "serial":
        stream = run_serial(tasks, backend, device)
    elif executor == "process":
        stream = run_pool(tasks, n_workers)
    else:
        stream = run_dask(tasks, scheduler, client)

    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(
            total=sum(_units(t) for t in tasks),
            desc="D-CYK grid",
            bar_format="{desc}: {percentage:3.0f}%|{bar}| [{elapsed}<{remaining}{postfix}]",
            file=sys.stderr,
        )
        bar.set_postfix_str(f"{resumed}/{total} records")
    appender = results_appender(results.path)
    try:
        for task, records in stream:
            appender.write(records)
            summary.written += len(records)
            if bar is not None:
                bar.update(_units(task))
                bar.set_postfix_str(f"{resumed + summary.written}/{total} records")
    finally:
        stream.close()
        appender.close()
        if bar is not None:
            bar.close()
        summary.seconds = time.perf_counter() - t0
    return summary


def _units(task: Task) -> int:
    """A task's share of the progress bar: its estimated cost in whole milliseconds (at least
    one), so that the bar's total is the exact sum of its updates in any order (a sum of
    float costs taken in another order overshot it, and tqdm clamped the bar)."""
    return max(1, math.ceil(task.cost * 1000))


def _ignored_note(
    records: list[dict[str, Any]], config: ExperimentConfig, duplicates: int, outside: int
) -> str:
    """What a resumed file holds besides the grid's records, and why it is not counted."""
    parts = []
    if duplicates:
        parts.append(f"{duplicates} {'repeat' if duplicates > 1 else 'repeats'} an earlier one")
    if outside:
        why = next((w for r in records if (w := grid_mismatch(r, config))), None)
        why = why or "its sentence, order or encoding is not the grid's"
        parts.append(f"{outside} {'lie' if outside > 1 else 'lies'} outside the grid ({why})")
    if not parts:
        return ""
    n = duplicates + outside
    return (
        f"; {n} record{'s' if n > 1 else ''} of the file not counted: "
        + " and ".join(parts)
        + f" ({'they are' if n > 1 else 'it is'} left in the file)"
    )

"""A corpus in, trees out: :func:`parse_corpus`.

The lines (:mod:`.lines`) are parsed in jobs of a few lines each (:mod:`.worker`), by this
process, a pool of worker processes or a Dask cluster; each job's records are appended to the
output log (:mod:`.log`) as it finishes. With ``d="auto"`` (the default) the table of the d
each length parses fastest and sure at (:mod:`fastdcyk.engine.auto`) is kept here and sent
with every job, and learns from what each job's sentences showed: the workers share it.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastdcyk import logfile
from fastdcyk.cfg.grammar import Grammar
from fastdcyk.cfg.metrics import Scores, evalb
from fastdcyk.cfg.treebank import clean, read_trees
from fastdcyk.cfg.trees import Tree
from fastdcyk.checks import check_dtype, check_int, check_path
from fastdcyk.corpus import log as corpus_log
from fastdcyk.corpus.lines import Line, input_digest, read_lines
from fastdcyk.corpus.worker import Job, parse_job, setup
from fastdcyk.engine import auto
from fastdcyk.engine.api import dcyk
from fastdcyk.engine.memory import parse_bytes
from fastdcyk.engine.prepare import cnf_grammar, option_keywords
from fastdcyk.engine.progress import check_progress, progress_bar
from fastdcyk.hrr import memory as system_memory
from fastdcyk.hrr.fft import get_fft
from fastdcyk.options import NAMES, resolve
from fastdcyk.processes import init_worker

__all__ = ["CorpusSummary", "parse_corpus"]

#: Lines a job holds (fewer at the end): the records come back, and are written, a few at a
#: time, and the shared table of d is sent with each job.
JOB_LINES = 4

#: The keywords of :func:`fastdcyk.dcyk` that a corpus passes through; the others (the
#: sentence, a codebook, progress, record, decode, backend and device) are the run's own.
_OWN = ("grammar", "words", "codebook", "progress", "record", "decode", "backend", "device")


@dataclass
class CorpusSummary:
    """What :func:`parse_corpus` did.

    Attributes
    ----------
    out : Path or None
        The output log (None: the records are in :attr:`records`).
    lines : int
        The input's lines.
    counts : dict of str to int
        Lines per status (:data:`fastdcyk.corpus.STATUSES`), over the whole output (the
        lines of a resumed log included).
    written : int
        The lines this run parsed and wrote.
    resumed : int
        The lines the output held already (``resume=True``).
    seconds : float
        This run's wall time.
    workers : int
        The worker processes (1: this process); with a Dask cluster, its address in
        :attr:`scheduler`.
    scheduler : str or None
        The Dask scheduler's address (or client) the lines ran on; None on this machine.
    torn_bytes : int
        The bytes of a torn last line cut off a resumed log.
    evalb : Scores or None
        With ``gold``: the labelled brackets of the parsed lines' trees against the gold
        trees, pooled (evalb's bracketing precision, recall and F1; a line without a tree
        scores its gold brackets as missed).
    records : list of dict or None
        Without ``out``: every line's record, in input order.
    """

    out: Path | None
    lines: int
    counts: dict[str, int]
    written: int
    resumed: int
    seconds: float
    workers: int = 1
    scheduler: str | None = None
    torn_bytes: int = 0
    evalb: Scores | None = None
    records: list[dict[str, Any]] | None = field(default=None, repr=False)

    @property
    def sentences_per_second(self) -> float:
        """The lines this run parsed a second."""
        return self.written / self.seconds if self.seconds > 0 else 0.0

    def __str__(self) -> str:
        where = f"{self.out}: " if self.out is not None else ""
        statuses = ", ".join(f"{n} {s}" for s, n in self.counts.items() if n)
        line = (
            f"{where}{self.lines} lines ({statuses}); this run read {self.written} in "
            f"{self.seconds:.1f} s ({self.sentences_per_second:.1f} lines a second"
        )
        line += f", {self.resumed} there already)" if self.resumed else ")"
        if self.evalb is not None:
            e = self.evalb
            line += f"; evalb P={e.precision:.4f} R={e.recall:.4f} F1={e.f1:.4f}"
        return line


def _options(options: dict[str, Any]) -> dict[str, Any]:
    """The :func:`fastdcyk.dcyk` options of a run, checked: names, and values as far as
    they can be checked without a sentence."""
    allowed = [p for p in inspect.signature(dcyk).parameters if p not in _OWN]
    for name in options:
        if name in _OWN:
            raise TypeError(
                f"parse_corpus takes no {name}= (each line is parsed by the numpy backend, "
                "with a codebook per d, without progress bars or logs of detections)"
            )
        if name not in allowed:
            import difflib

            near = difflib.get_close_matches(name, allowed, n=2)
            hint = f" (did you mean {' or '.join(near)}?)" if near else ""
            raise TypeError(f"parse_corpus got an unexpected keyword {name!r}{hint}")
    out = {k: v for k, v in options.items() if v is not None}
    option_names = {k: v for k, v in out.items() if k in NAMES}
    resolve(dtype=check_dtype(out.get("dtype")), **option_keywords(None, option_names))
    if out.get("unknown", "refuse") not in ("refuse", "class"):
        raise ValueError(f"unknown must be 'refuse' or 'class', got {out['unknown']!r}")
    return out


def _canonical(options: dict[str, Any]) -> dict[str, Any]:
    """The options as the log's header keeps them (plain JSON)."""
    return json.loads(json.dumps(options, sort_keys=True, default=str))


def _gold(gold: Any, lines: list[Line], encoding: str) -> list[Tree | None]:
    """The gold trees, one per input line, cleaned as evalb reads them; refused where a
    tree's words are not its line's."""
    trees = read_trees(gold, encoding=encoding) if not isinstance(gold, list) else gold
    trees = [t if isinstance(t, Tree) else read_trees([t])[0] for t in trees]
    if len(trees) != len(lines):
        raise ValueError(
            f"gold holds {len(trees)} trees for {len(lines)} input lines: give one tree per "
            "line, in the same order"
        )
    out = [clean(t) for t in trees]
    differ = [
        line.index
        for line, t in zip(lines, out, strict=True)
        if line.message is None and (t is None or tuple(t.leaves()) != line.words)
    ]
    if differ:
        shown = ", ".join(str(k) for k in differ[:8]) + (" ..." if len(differ) > 8 else "")
        raise ValueError(
            f"the gold trees' words differ from the input's at line"
            f"{'s' if len(differ) > 1 else ''} {shown} (0-based; {len(differ)} in all): give "
            "the gold trees of these very sentences, one per input line in the same order"
        )
    return out


def _check_workers(
    grammar: Grammar, lines: list[Line], options: dict[str, Any], workers: int
) -> None:
    """Refuse ``workers`` processes whose shares of the memory (each counts on ``1 /
    workers`` of what is available: :func:`fastdcyk.hrr.memory.set_share`) cannot parse a
    typical line (the median length) at the start d, naming the number that can. A longer
    line that does not fit in its worker's share is that line's "too long"."""
    avail = system_memory.available_memory()
    lengths = sorted(len(ln.words) for ln in lines if ln.message is None)
    if avail is None or not lengths or not options.get("check_memory", True):
        return
    typical = lengths[len(lengths) // 2]
    named = {k: v for k, v in options.items() if k in NAMES}
    dtype = check_dtype(options.get("dtype"))
    opt = resolve(dtype=dtype, **option_keywords(None, named))
    given = options.get("d")
    start = auto.START_D if given is None or auto.is_auto(given) else int(given)
    need = parse_bytes(start, dtype, get_fft(options.get("fft", "auto")), opt, typical)
    if workers * need > 0.9 * avail:
        fit = int(0.9 * avail // need)
        what = f"use {fit} worker{'s' if fit != 1 else ''} or fewer" if fit else "use a smaller d"
        raise MemoryError(
            f"{workers} workers would each need about {system_memory.format_bytes(need)} to "
            f"parse a line of {typical} words (the median) at d = {start}, and "
            f"{system_memory.format_bytes(avail)} is available: {what}"
        )


def _jobs(lines: list[Line], size: int) -> Iterator[tuple[Line, ...]]:
    for k in range(0, len(lines), size):
        yield tuple(lines[k : k + size])


def _serial(
    chunks: Iterator[tuple[Line, ...]], grammar: Grammar, options: dict[str, Any], table: Any
) -> Iterator[list[dict[str, Any]]]:
    for chunk in chunks:
        records, _ = parse_job(Job(chunk, table), grammar, options)  # the table learns here
        yield records


def _init(parent: int, grammar: Grammar, options: dict[str, Any], share: float) -> None:
    init_worker(parent)
    system_memory.set_share(share)  # the pool's processes share the machine's memory
    setup(grammar, options)


def _importing_main() -> bool:
    """Whether this is a worker process importing the parent's main script (as ``spawn``
    starts a process), where starting workers of its own would fail."""
    import multiprocessing

    return bool(getattr(multiprocessing.current_process(), "_inheriting", False))


def _pool(
    chunks: Iterator[tuple[Line, ...]],
    grammar: Grammar,
    options: dict[str, Any],
    table: Any,
    workers: int,
) -> Iterator[list[dict[str, Any]]]:
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),  # the parent may run threads
        initializer=_init,
        initargs=(os.getpid(), grammar, options, 1.0 / workers),
    )
    pending: set[Any] = set()
    finished = False

    def submit() -> bool:
        chunk = next(chunks, None)
        if chunk is None:
            return False
        pending.add(pool.submit(parse_job, Job(chunk, None if table is None else table.handout())))
        return True

    try:
        for _ in range(2 * workers):  # two jobs a worker in flight: none waits for work
            if not submit():
                break
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                pending.discard(fut)
                try:
                    records, seen = fut.result()
                except BrokenProcessPool as exc:
                    raise RuntimeError(
                        "a worker process stopped abruptly (killed, out of memory, or it "
                        "failed to start: called from a script, parse_corpus must be under "
                        "'if __name__ == \"__main__\":', since each worker imports the "
                        "script). The lines written are kept: resume the run"
                    ) from exc
                if table is not None:
                    for s in seen:  # the shared table learns what the worker saw
                        table.learn(s)
                submit()
                yield records
        finished = True
    finally:
        if finished:
            pool.shutdown(wait=True)
        else:  # interrupted or failed: what is written is kept; the rest is dropped now
            processes = list(getattr(pool, "_processes", {}).values())
            pool.shutdown(wait=False, cancel_futures=True)
            for p in processes:
                p.terminate()


def _dask(
    chunks: Iterator[tuple[Line, ...]],
    grammar: Grammar,
    options: dict[str, Any],
    table: Any,
    scheduler: str | None,
    client: Any,
) -> Iterator[list[dict[str, Any]]]:
    try:
        from dask.distributed import Client, as_completed
    except ImportError as exc:
        raise ImportError(
            "a Dask cluster needs dask.distributed: pip install 'dask[distributed]'"
        ) from exc
    own = client is None
    if own:
        client = Client(scheduler)
    workers = max(1, len(client.scheduler_info().get("workers", {})))
    shared = client.scatter([grammar, options], broadcast=True)

    def submit() -> Any:
        chunk = next(chunks, None)
        if chunk is None:
            return None
        job = Job(chunk, None if table is None else table.handout())
        return client.submit(parse_job, job, shared[0], shared[1], pure=False)

    first = [f for f in (submit() for _ in range(2 * workers)) if f is not None]
    stream = as_completed(first)
    try:
        for fut in stream:
            records, seen = fut.result()
            if table is not None:
                for s in seen:
                    table.learn(s)
            nxt = submit()
            if nxt is not None:
                stream.add(nxt)
            yield records
    finally:
        client.cancel([f for f in stream.futures])
        if own:
            client.close()


def parse_corpus(
    grammar: Grammar | str,
    sentences: Any,
    out: str | os.PathLike[str] | None = None,
    *,
    workers: int = 1,
    scheduler: str | None = None,
    client: Any = None,
    resume: bool = False,
    gold: Any = None,
    brackets: str | os.PathLike[str] | None = None,
    progress: bool | float | None = None,
    encoding: str = "utf-8",
    echo: Callable[[str], None] | None = None,
    on_records: Callable[[list[dict[str, Any]]], None] | None = None,
    **options: Any,
) -> CorpusSummary:
    """Parse a corpus with D-CYK: one record per input line, written as it is parsed.

    Every line gets a record (:data:`fastdcyk.corpus.FIELDS`): its ``index`` (from 0), its
    ``words``, a ``status`` (:data:`fastdcyk.corpus.STATUSES`: ``"parsed"``, ``"no parse"``,
    ``"unknown words"``, ``"unsure"`` (not sure at the largest d), ``"too long"`` (for the
    memory), ``"bad line"`` (empty, or not the encoding's text)), its ``tree`` in the Penn
    Treebank's bracketed form, in the grammar as written (before CNF; the first tree of the
    chart's forest, or a PCFG's most probable: :meth:`fastdcyk.DCYKResult.tree`), the ``d``
    it was parsed at, the certificate's verdict (``sure``), a PCFG's ``log_prob``, the
    ``seconds`` of its parse, and a ``message`` saying why where the status is not
    ``"parsed"``. A bad line never stops the run.

    Parameters
    ----------
    grammar : Grammar or str
        A CNF grammar, or a built-in name or file (as :func:`fastdcyk.dcyk` takes it).
    sentences : path, bytes or iterable
        A text file's path (one sentence a line, whitespace-separated words), its bytes, or
        an iterable of sentences (each a str or a sequence of words).
    out : path, optional
        The output: a JSON Lines log, a header line then one record per input line,
        appended as lines are parsed (in any order), and rewritten in input order when every
        line is there. Killed at any moment, a run resumed with ``resume=True`` parses
        exactly the lines the log lacks. None: the records are returned
        (:attr:`CorpusSummary.records`).
    workers : int, default 1
        Worker processes (1: this process). Each parses on one thread and counts on its
        share of the memory available (its memory checks, and the largest d ``d="auto"``
        tries, within it); too many workers to parse a typical line each are refused before
        they start, naming the number that fits.
    scheduler : str, optional
        The address of a Dask scheduler (``"tcp://host:8786"``): the jobs run on its
        cluster's workers instead (``pip install 'dask[distributed]'``); or ``client=``, a
        ``dask.distributed.Client``.
    resume : bool, default False
        Continue the log ``out``: it must have been written with the same grammar, options
        and input. Without it an existing non-empty ``out`` is refused.
    gold : path, str or list of trees, optional
        Gold trees, one per input line in the same order (bracketed, one a line or a
        ``.mrg`` file; :func:`fastdcyk.cfg.treebank.read_trees`): the summary's ``evalb``
        holds the labelled brackets of every line's tree against its gold tree. A gold
        tree whose words are not its line's is refused (naming the lines) before any work.
    brackets : path, optional
        Also write the trees, one a line in input order, ``()`` where a line has none
        (when every line is parsed; with ``out``, from the whole log).
    progress : bool, float or None, default None
        A progress bar over the lines (sentences a second, the time left): None, after 2
        seconds on a terminal; True at once; False never.
    encoding : str, default "utf-8"
        The encoding of a file's lines (a line that is not its text is a bad line).
    echo : callable, optional
        Called with one line about the run before it starts (the command line prints it).
    on_records : callable, optional
        Called with each job's records as they are written (in the order jobs finish):
        the command line streams them to its output.
    **options
        The options of :func:`fastdcyk.dcyk` (``d`` (default ``"auto"``: the d each length
        of sentence parses fastest and sure at, shared by the workers), ``max_d``,
        ``variant``, ``seed``, ``dtype``, ``unknown``, ...).

    Returns
    -------
    CorpusSummary

    Raises
    ------
    CorpusLogError
        An ``out`` that holds a log without ``resume``, one of another run's settings, one
        another run is writing, or a file that is not a corpus log; nothing is written.
    ValueError, TypeError
        Bad options, input or gold (named), before any work.
    MemoryError
        When even one line at the start d does not fit in a worker's share of the memory.

    Examples
    --------
    >>> import fastdcyk as fd
    >>> s = fd.parse_corpus("G0", ["fish swim", "fish fish", "", "cat swim"])
    >>> [(r["status"], r["tree"]) for r in s.records]  # doctest: +NORMALIZE_WHITESPACE
    [('parsed', '(S (NP fish) (VP swim))'), ('no parse', None), ('bad line', None),
     ('unknown words', None)]
    """
    t0 = time.perf_counter()
    workers = check_int("workers", workers, 1)
    if workers > 1 and _importing_main():
        raise RuntimeError(
            "parse_corpus(workers=...) ran while a worker process was importing your script "
            "(worker processes start by importing it): put the code that calls it under "
            "'if __name__ == \"__main__\":'"
        )
    delay = check_progress(progress)
    grammar = cnf_grammar(grammar)
    options = _options(options)
    chosen = options.get("d") is None or auto.is_auto(options.get("d"))
    lines = read_lines(sentences, encoding)
    golds = None if gold is None else _gold(gold, lines, encoding)
    settings = {
        "grammar_sha256": hashlib.sha256(grammar.to_string().encode("utf-8")).hexdigest(),
        "options": _canonical(options),
        "input_sha256": input_digest(lines),
        "lines": len(lines),
    }
    path = None if out is None else check_path("out", out)
    if brackets is not None:
        check_path("brackets", brackets)
    _check_workers(grammar, lines, options, 1 if scheduler or client else workers)
    run_options = options
    lock: Any = None
    log = None
    if path is not None:
        if path.is_dir():
            raise corpus_log.CorpusLogError(
                f"out={str(path)!r} is a folder: give the path of a file (JSON Lines)"
            )

        def locked(where: str) -> corpus_log.CorpusLogError:
            return corpus_log.CorpusLogError(
                f"{where!r} is being written by another run (it holds the file's lock): wait "
                "for it to end, or write to another file. Nothing was written"
            )

        lock = logfile.Lock(path, locked)
        lock.__enter__()
    try:
        if path is not None:
            log = corpus_log.open_log(path, settings, resume)
        held = [] if log is None else log.records
        done = {r["index"] for r in held}
        todo = [line for line in lines if line.index not in done]
        if echo is not None:
            how = f"on {workers} workers" if workers > 1 else "in this process"
            if scheduler or client:
                how = f"on the Dask cluster {scheduler or client}"
            echo(
                f"{len(lines)} lines, {len(done)} there already, {len(todo)} to parse {how}"
                + (f" into {path}" if path is not None else "")
            )
        table = auto.Table() if chosen else None
        chunks = _jobs(todo, JOB_LINES)
        if scheduler or client:
            stream = _dask(chunks, grammar, run_options, table, scheduler, client)
        elif workers > 1:
            stream = _pool(chunks, grammar, run_options, table, workers)
        else:
            stream = _serial(chunks, grammar, run_options, table)
        appender = None
        if path is not None:

            def failed(exc: OSError) -> OSError:
                return OSError(
                    exc.errno,
                    f"cannot write to {str(path)!r} ({exc.strerror or exc}); the lines written "
                    "before are kept: free space and resume the run",
                )

            appender = logfile.Appender(path, failed, ensure_ascii=False)
        new: list[dict[str, Any]] = []
        bar = progress_bar(delay, len(todo), "parsing", "sentence")
        try:
            for records in stream:
                if appender is not None:
                    appender.write(records)
                new.extend(records)
                if on_records is not None:
                    on_records(records)
                if bar is not None:
                    bar.update(len(records))
        finally:
            if bar is not None:
                bar.close()
            if appender is not None:
                appender.close()
            if hasattr(stream, "close"):
                stream.close()
        every = {r["index"]: r for r in (*held, *new)}
        complete = len(every) == len(lines)
        if path is not None and complete and log is not None:
            corpus_log.sort(path, log.header, list(every.values()))
    finally:
        if lock is not None:
            lock.__exit__(None, None, None)
    ordered = [every[k] for k in sorted(every)]
    if brackets is not None and complete:
        text = "".join((r["tree"] or "()") + "\n" for r in ordered)
        logfile.write_all(Path(brackets), text.encode("utf-8"))
    counts = dict.fromkeys(corpus_log.STATUSES, 0)
    for r in ordered:
        counts[r["status"]] += 1
    scores = None
    if golds is not None:
        total = Scores(0, 0, 0)
        for r in ordered:
            g = golds[r["index"]]
            if g is None:
                continue
            tree = Tree.fromstring(r["tree"]) if r["tree"] else None
            total = total + evalb(g, tree)
        scores = total
    return CorpusSummary(
        out=path,
        lines=len(lines),
        counts=counts,
        written=len(new),
        resumed=len(held),
        seconds=time.perf_counter() - t0,
        workers=1 if scheduler or client else workers,
        scheduler=scheduler if scheduler else (None if client is None else str(client)),
        torn_bytes=0 if log is None else log.torn_bytes,
        evalb=scores,
        records=ordered if path is None else None,
    )

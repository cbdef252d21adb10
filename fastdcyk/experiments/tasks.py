"""Tasks: the units of work of a grid, how they are planned, and how one is run.

A task is one (grammar, variant, order, beta, d, codebook seed, batch of sentences) unit;
:func:`run_task` needs nothing else, so it runs the same in any process. It parses with a
backend's driver (:mod:`fastdcyk.registry.backends`): the numpy backend one sentence at a
time, the torch backend the task's sentences in batches on one device; the records have the
same fields either way, and in float64 the same values (the parse time aside).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Container, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from fastdcyk import threads
from fastdcyk.cfg.cyk import cyk
from fastdcyk.cfg.forest import Forest, bracket_scores
from fastdcyk.cfg.grammar import Grammar
from fastdcyk.cfg.metrics import cell_scores
from fastdcyk.cfg.trees import is_parse
from fastdcyk.checks import check_choice
from fastdcyk.engine.api import parse_plan
from fastdcyk.engine.batch import in_batches
from fastdcyk.engine.core.decode import item_scores
from fastdcyk.engine.core.plan import Plan
from fastdcyk.engine.core.result import DCYKResult
from fastdcyk.engine.prepare import default_codebook, prepare
from fastdcyk.experiments.config import ExperimentConfig
from fastdcyk.experiments.records import BACKEND_FIELD, cell_settings
from fastdcyk.hrr.codebook import Codebook
from fastdcyk.options import CODEBOOKS, VARIANTS, check_backend, resolve
from fastdcyk.registry import backends, modes
from fastdcyk.registry.backends import Backend

#: Rough seconds per parse on one core: c * n (n + 1) / 2 * (d^2 log2 d + c0), times a
#: factor per variant and order, from the d = 3000 times of docs/results.md ("Cost"): the
#: paper variant costs 0.44 of its sequential time in cell order; the trace variant (the 2-D
#: spectral parser, the same cost in either order) 0.09. Only used to cut tasks of a few
#: seconds and to weigh the progress bar, never in a result.
_COST_C = 6e-9
_COST_C0 = 5e4
_COST_FACTOR = {
    ("paper", "sequential"): 1.0,
    ("paper", "cell"): 0.44,
    ("trace", "sequential"): 0.09,
    ("trace", "cell"): 0.09,
    ("trace", "width"): 0.09,  # the same work per cell as the cell order (study (j))
    # the clean-up variant (measured 2026-12-07: a 7-word G0 sentence at d = 1024, one
    # thread: 0.031, 0.067 and 0.055 s in the cell, sequential and width orders against
    # 6.12 s for the paper variant in its own): without them a grid with the cleanup
    # variant was costed as the paper variant, and its progress bar jumped
    ("cleanup", "cell"): 0.005,
    ("cleanup", "sequential"): 0.011,
    ("cleanup", "width"): 0.009,
}
_TASK_SECONDS = 4.0
_TASK_MAX_SENTENCES = 256
#: The cut of tasks for a batched backend (torch): about an hour of one core's work by the
#: model above (far less on a GPU), at most 256 distinct sentences, so that a task holds
#: batches large enough to keep a GPU busy (a paper parse of 6 words at d = 3000 costs some
#: 13 s by the model: numpy's cut gives one sentence per task there).
_BATCHED_TASK_SECONDS = 3600.0

# -- tasks ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Task:
    """One unit of work: a grid cell and a batch of distinct sentences.

    Attributes
    ----------
    grammar : str
        The grammar's spec (written into the records).
    grammar_text : str
        Its text (:meth:`Grammar.to_string`): workers need no file.
    variant, beta, d, seed, threshold, dtype
        The grid cell.
    items : tuple of (words, indices)
        Each distinct sentence once, with the sample indices it has (those still to do).
    order : {"sequential", "cell"}, optional
        The order of the updates in a cell (:data:`fastdcyk.options.ORDERS`). None (the
        default) is resolved to the variant's own, so a task always holds the order it
        parses in.
    encoding : {"paper", "roles"}, optional
        The encoding (:data:`fastdcyk.options.ENCODINGS`); None is resolved to the
        variant's own.
    codebooks : {"grammar", "plain"}, default "grammar"
        As :attr:`ExperimentConfig.codebooks`.
    readback : {"lstsq", "matched"}, optional
        The cleanup variant's read-back (None: its own); other variants read "matched".

    Raises
    ------
    ValueError
        On an unknown variant, order or encoding.
    """

    grammar: str
    grammar_text: str
    variant: str
    beta: float
    d: int
    seed: int
    threshold: float
    dtype: str
    items: tuple[tuple[tuple[str, ...], tuple[int, ...]], ...]
    order: str | None = None
    encoding: str | None = None
    codebooks: str = "grammar"
    readback: str | None = None

    def __post_init__(self) -> None:
        check_choice("codebooks", self.codebooks, CODEBOOKS)
        gate = VARIANTS[check_choice("variant", self.variant, VARIANTS)]["gate"]
        readback = modes.own_readback(gate, self.readback)
        opt = resolve(self.variant, order=self.order, encoding=self.encoding, readback=readback)
        object.__setattr__(self, "order", opt.order)
        object.__setattr__(self, "encoding", opt.encoding)
        object.__setattr__(self, "readback", opt.readback)

    @property
    def n_records(self) -> int:
        return sum(len(ix) for _, ix in self.items)

    @property
    def cost(self) -> float:
        """Estimated seconds on one core (a rough model, for batching and the ETA)."""
        return sum(_parse_cost(len(w), self.d, self.variant, self.order) for w, _ in self.items)


def _parse_cost(n: int, d: int, variant: str, order: str | None = None) -> float:
    order = order or VARIANTS.get(variant, {}).get("order", "sequential")
    scale = _COST_FACTOR.get((variant, order), 1.0)
    return scale * _COST_C * n * (n + 1) / 2 * (d * d * math.log2(d) + _COST_C0)


def plan_tasks(
    config: ExperimentConfig,
    done: Container[tuple] = frozenset(),
    *,
    batch_size: int | None = None,
    grammars: dict[str, Grammar] | None = None,
    sentences: list[tuple[str, ...]] | None = None,
    backend: str = "numpy",
) -> list[Task]:
    """The tasks that produce the records of ``config`` not in ``done``.

    Parameters
    ----------
    config : ExperimentConfig
    done : set of tuple
        Keys (:func:`record_key`) already written.
    batch_size : int, optional
        Distinct sentences per task. Default: as many as fit in about four seconds of work
        by a rough cost model (at most 256), so that tasks stay short whatever d is; for
        a batched backend (torch), about an hour of one core's work (at most 256), so that a
        task's batches keep a GPU busy.
    grammars, sentences : optional
        Already loaded grammars and generated sample (computed when omitted).
    backend : {"numpy", "torch"}, default "numpy"
        The backend the tasks will run on (:func:`run_task`): sets the default size of a
        task only. The tasks of both hold the same cells and sentences, in the same order.

    Returns
    -------
    list of Task
        Ordered by d, then grammar, variant, order (:meth:`ExperimentConfig.variant_orders`),
        beta and seed, so the small dimensions finish first.

    Raises
    ------
    ValueError
        When a word of the sample is not a terminal of one of the grammars.
    """
    if batch_size is not None and (isinstance(batch_size, bool) or batch_size < 1):
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
    seconds = _BATCHED_TASK_SECONDS if check_backend(backend).batched else _TASK_SECONDS
    grammars = config.load_grammars() if grammars is None else grammars
    sentences = config.sample(grammars) if sentences is None else sentences
    check_sample(config, grammars, sentences)
    # Distinct sentences in a fixed order (by length, then words), each with its indices.
    positions: dict[tuple[str, ...], list[int]] = {}
    for index, s in enumerate(sentences):
        positions.setdefault(s, []).append(index)
    distinct = sorted(positions, key=lambda s: (len(s), s))
    tasks = []
    for d in config.dims:
        for spec in config.grammars:
            text = grammars[spec].to_string()
            for variant, order in config.variant_orders():
                encoding = config.encoding or VARIANTS[variant]["encoding"]
                settings = cell_settings(config, variant)  # as record_key reads them
                for beta in config.betas:
                    for seed in config.seeds:
                        items = []
                        cell = (spec, variant, order, encoding, float(beta), d, seed, *settings)
                        for s in distinct:
                            words = " ".join(s)
                            todo = tuple(i for i in positions[s] if (*cell, i, words) not in done)
                            if todo:
                                items.append((s, todo))
                        for batch in _batches(items, d, variant, order, batch_size, seconds):
                            tasks.append(
                                Task(
                                    spec,
                                    text,
                                    variant,
                                    beta,
                                    d,
                                    seed,
                                    config.threshold,
                                    config.dtype,
                                    tuple(batch),
                                    order,
                                    encoding,
                                    config.codebooks,
                                    config.readback,
                                )
                            )
    return tasks


def check_sample(
    config: ExperimentConfig, grammars: dict[str, Grammar], sentences: list[tuple[str, ...]]
) -> None:
    words = {w for s in sentences for w in s}
    for spec in config.grammars:
        missing = sorted(words - grammars[spec].terminal_set)
        if missing:
            raise ValueError(
                f"grammar {spec!r} has no rule for the words {missing} of the sentences "
                f"generated from {config.source!r}: it cannot parse the sample"
            )


def _batches(
    items: list,
    d: int,
    variant: str,
    order: str | None,
    batch_size: int | None,
    seconds: float = _TASK_SECONDS,
) -> Iterator[list]:
    if batch_size is not None:
        for k in range(0, len(items), batch_size):
            yield items[k : k + batch_size]
        return
    batch: list = []
    cost = 0.0
    for item in items:
        batch.append(item)
        cost += _parse_cost(len(item[0]), d, variant, order)
        if cost >= seconds or len(batch) >= _TASK_MAX_SENTENCES:
            yield batch
            batch, cost = [], 0.0
    if batch:
        yield batch


# -- the worker -----------------------------------------------------------------------------

# One codebook per thread (a dask worker may run several tasks at once in threads, and a
# codebook's work buffers must not be shared); only the last one is kept, so a worker
# holds the d x d buffers of one dimension at a time.
_local = threading.local()
_grammar_cache: dict[str, Grammar] = {}


def _worker_codebook(task: Task) -> tuple[Codebook, bool]:
    """The thread's codebook for a task, and whether it was just built."""
    unitary = VARIANTS[task.variant]["unitary"]
    per_grammar = unitary and task.codebooks == "grammar"  # the grammar's symbols shifted
    key = (task.d, task.seed, task.dtype, unitary, task.grammar_text if per_grammar else None)
    held = getattr(_local, "codebook", None)
    if held is not None and held[0] == key:
        return held[1], False
    _local.codebook = None  # release the old buffers before allocating new ones
    if per_grammar:
        grammar = _worker_grammar(task.grammar_text)
        cb = default_codebook(grammar, task.d, task.seed, task.dtype, unitary=True)
    else:
        cb = Codebook(task.d, seed=task.seed, dtype=task.dtype, unitary=unitary)
    _local.codebook = (key, cb)
    return cb, True


def _worker_grammar(text: str) -> Grammar:
    grammar = _grammar_cache.get(text)
    if grammar is None:
        grammar = _grammar_cache[text] = Grammar.from_string(text)
    return grammar


def run_task(task: Task, *, backend: str = "numpy", device: Any = None) -> list[dict[str, Any]]:
    """Parse a task's sentences and score them: its records, sorted by sentence index.

    Runs anywhere fastdcyk is installed (a pool process, a dask worker): the codebook is
    rebuilt from the task's seed (and kept for the next task of the same d, seed and
    variant). The task runs on one thread (:func:`fastdcyk.threads.limit`: its FFTs and
    kernels), whatever the process's setting, which it leaves as it was. A new codebook
    is warmed up first on a two-word prefix of the first sentence, outside the timing, in
    the task's order. Every record names the order (``task.order``, resolved). The charts
    alone are made (no P_left or P_right).

    Parameters
    ----------
    task : Task
    backend : {"numpy", "torch"}, default "numpy"
        The backend's driver parses the sentences (:func:`fastdcyk.engine.api.parse_plan`).
        One that parses a sentence at a time (numpy): ``seconds`` is each parse's time. A
        batched one (torch): the task's sentences by length, in batches of its default
        size (halved while the device runs out of memory), with torch's own threads
        (which :mod:`fastdcyk.threads` leaves alone); ``seconds`` is then the batch's time
        divided evenly among its sentences. In float64 the charts, and so every other
        field, are those of the numpy backend (the statistics agree to rounding). In
        float32 the trace variant's agree too as a rule, but the paper variant's entrywise
        gate amplifies rounding (up to beta / 4 per gate, docs/method.md, section 4): at
        beta = 50 its statistics, and so its charts, can differ between the backends
        sentence by sentence, as two float32 computations of a chaotic map do.
    device : torch.device or str, optional
        Where a backend that takes a device computes (default its own: the CPU).

    Returns
    -------
    list of dict
        The records (:data:`fastdcyk.experiments.RECORD_FIELDS`).

    Raises
    ------
    MemoryError
        When the torch device runs out of memory on a batch of one sentence.
    ValueError
        On an unknown backend, or a device given to a backend that takes none.
    """
    record = check_backend(backend, device)
    with threads.limit(1):
        return _run_task(task, record, device)


def _run_task(task: Task, backend: Backend, device: Any) -> list[dict[str, Any]]:
    grammar = _worker_grammar(task.grammar_text)
    cb, fresh = _worker_codebook(task)
    items = sorted(task.items, key=lambda item: len(item[0]))  # similar lengths per batch
    opts = {"variant": task.variant, "beta": task.beta, "threshold": task.threshold}
    opts |= {"order": task.order, "encoding": task.encoding, "readback": task.readback}
    plan = prepare(
        grammar,
        [words for words, _ in items],
        cb,
        d=None,
        seed=None,
        dtype=None,
        unitary=None,
        fft="auto",
        check_memory=True,
        backend=backend.name,
        device=device,
        options={k: v for k, v in opts.items() if v is not None},
    )

    def charts(sentences: list[tuple[str, ...]]) -> list[DCYKResult]:
        part = Plan(plan.grammar, sentences, plan.options, plan.codebook)
        return parse_plan(part, backend.name, device=device, dense=False)

    if fresh and items:
        # Untimed warm-up on a short prefix: loads the kernels and plans the FFTs of this d
        # (on a device, its caches), so that ``seconds`` measures parsing only.
        charts([items[0][0][:2]])

    def too_large(item: tuple[tuple[str, ...], Any]) -> str:
        return (
            f"the torch device {str(device)!r} ran out of memory parsing one sentence "
            f"of {len(item[0])} words at d = {task.d} ({task.variant}, {task.dtype}): run "
            "the smaller dimensions (--dims), or use a device with more memory"
        )

    def parse(chunk: list[tuple[tuple[str, ...], Any]]) -> list[DCYKResult]:
        return charts([words for words, _ in chunk])

    records: list[dict[str, Any]] = []
    if backend.batched:
        size = backend.part("batch_size")(task.d, task.dtype, device)
        batches = in_batches(items, size, parse, backend, device, too_large)
    else:  # one sentence at a time: each parse timed on its own
        batches = ((chunk, *_timed(parse, chunk)) for chunk in ([item] for item in items))
    for chunk, got, seconds in batches:
        for (words, indices), r in zip(chunk, got, strict=True):
            records += _records(
                task, grammar, words, indices, r.chart, r.statistics, seconds / len(chunk), backend
            )
    records.sort(key=lambda r: r["index"])
    return records


def _timed(parse: Any, chunk: list) -> tuple[list[DCYKResult], float]:
    t0 = time.perf_counter()
    got = parse(chunk)
    return got, time.perf_counter() - t0


def _records(
    task: Task,
    grammar: Grammar,
    words: tuple[str, ...],
    indices: tuple[int, ...],
    chart: dict[tuple[int, int], frozenset[str]],
    statistics: Mapping[tuple[int, int, str], float],
    seconds: float,
    backend: Backend,
) -> list[dict[str, Any]]:
    """The records of one distinct sentence: its decoded chart scored against CYK's, and
    its best tree (:func:`tree_fields`), once per index it has in the sample (those of a
    backend other than the default say so: :data:`~fastdcyk.experiments.store.BACKEND_FIELD`,
    so that the default's records are those written before backends were recorded)."""
    scores = cell_scores(cyk(grammar, words), chart)
    trees = tree_fields(grammar, words, chart, item_scores(statistics, chart, beta=task.beta))
    extra = {} if backend.name == backends.DEFAULT else {BACKEND_FIELD: backend.name}
    return [
        {
            "grammar": task.grammar,
            "variant": task.variant,
            "order": task.order,
            "encoding": task.encoding,
            "beta": task.beta,
            "d": task.d,
            "seed": task.seed,
            "index": index,
            "words": " ".join(words),
            "length": len(words),
            "tp": scores.tp,
            "gold": scores.gold,
            "predicted": scores.predicted,
            "precision": scores.precision,
            "recall": scores.recall,
            "f1": scores.f1,
            "seconds": round(seconds, 6),
        }
        | trees
        | extra
        for index in indices
    ]


def tree_fields(
    grammar: Grammar,
    words: tuple[str, ...],
    chart: Mapping[tuple[int, int], Iterable[str]],
    scores: Mapping[tuple[int, int, str], float],
) -> dict[str, int]:
    """A record's tree fields (:data:`~fastdcyk.experiments.records.TREE_FIELDS`).

    ``tree``: 1 when the decoded chart admits a tree and its best tree under ``scores``
    (:func:`~fastdcyk.engine.core.decode.item_scores`, the decoder's ranking: the first of
    :meth:`DCYKResult.scored_trees <fastdcyk.engine.DCYKResult.scored_trees>`) is a parse of
    the sentence, else 0. Every tree of a decoded chart is built from rules of the grammar
    over the words, so it is 1 exactly when the chart admits a tree;
    :func:`~fastdcyk.cfg.trees.is_parse` checks it all the same. ``bracket_tp``,
    ``bracket_gold``, ``bracket_predicted``: the labelled brackets of that tree against the
    closest tree of the symbolic forest (:func:`~fastdcyk.cfg.forest.bracket_scores`; 0
    predicted without a tree).
    """
    tree = Forest(grammar, words, chart, scores).best(cnf=True)
    brackets = bracket_scores(tree, Forest(grammar, words))
    return {
        "tree": int(tree is not None and is_parse(tree, grammar, words)),
        "bracket_tp": brackets.tp,
        "bracket_gold": brackets.gold,
        "bracket_predicted": brackets.predicted,
    }

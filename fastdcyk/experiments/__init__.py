"""The paper's experiments: a resumable grid of D-CYK runs scored against symbolic CYK.

A grid (:class:`ExperimentConfig`) crosses grammars, dimensions d, variants (each with its
own order of updates, or with the orders asked for), sigmoid slopes beta and codebook seeds
over one sample of sentences generated from a source grammar (G0 in the paper: its
experiments section, docs/results.md). Every (grammar, variant, order, beta, d, codebook
seed, sentence) gives one record: the sentence's decoded chart scored against its symbolic
CYK chart (cell precision, recall, F1 and the counts tp, gold, predicted) and the parse
time.

Results file
    JSON Lines. The first line is a header holding the configuration and its hash (sha256 of
    the canonical JSON of the configuration and of the text of every grammar it names),
    and the sha256 of each grammar's text (``grammar_sha256``; headers of older files lack
    it); every other line is one record. Records are appended as their task finishes, then
    flushed and fsync'ed, so an interrupted run (Ctrl-C, kill -9, a full disk) loses only
    the tasks that had not finished. Rerunning the same configuration on the same file
    resumes: finished records are skipped, and a torn last line (no newline, or invalid
    JSON) is cut off first. A file written for another configuration is refused
    (:class:`ConfigMismatchError`, whose message names what differs: fields of the
    configuration, or the grammar whose text changed): records of two grids are never
    mixed. Records in the file that are not of its grid (a duplicate, or a record edited or
    joined in by hand) are ignored, counted and left in place: a resumed run counts only
    the grid's records, and :func:`load_records` leaves out (with a
    :class:`ResultsWarning`) records outside the grid of their file's configuration. The
    header names its results format version: a file of a newer version than this code
    knows (written by a newer fastdcyk) is refused, for reading and for resuming
    (:class:`ResultsFileError`).
    Every record names the order it was parsed in (:data:`fastdcyk.options.ORDERS`); a record
    of an older file, written before records had one, is read as ``"sequential"``: every
    variant was then parsed in the paper's order. One run at a time writes a file: a run
    holds an exclusive lock on it (``flock``, on POSIX systems) from the start to the end,
    and a second run on the same file is refused (:class:`ResultsLockedError`) without
    touching it. The lock goes with the process that holds it, so a killed run leaves none
    behind.

Tasks
    A task is one (grammar, variant, order, beta, d, codebook seed, batch of sentences) unit,
    and :func:`run_task` needs nothing else: a worker rebuilds the codebook from its seed and
    the grammar from its text, so the serial loop, the process pool and a dask.distributed
    cluster produce the same records (bit for bit, the parse time aside). Each worker uses
    one thread for FFTs and Numba kernels (a pool of one worker per core must not
    oversubscribe the cores; the serial executor does the same, so that rows are identical
    whichever executor ran them). A sample of short G0 sentences holds many repeats: each
    distinct sentence is parsed once per grid cell and its record is emitted for every index
    it has in the sample (with the same parse time).

Backends
    A run parses with the numpy backend (the default) or with the torch backend
    (``run_experiment(..., backend="torch", device="cuda")``), which parses the sentences of
    each task in batches on one device, from this process (the serial executor only; tasks
    are larger by default, so that their batches keep a GPU busy). The backend and device
    are options of the run, not of the grid: they are not in the configuration or its hash,
    and records do not name them. Records of both have the same fields, and in float64 the
    same values but for ``seconds`` (for torch, its batch's time divided evenly among the
    batch's sentences); so a file begun with one backend may be resumed with the other. In
    float32 the paper variant amplifies rounding (docs/method.md, section 4), and its
    records can differ between the backends sentence by sentence (see :func:`run_task`).

Aggregates
    :func:`aggregate` gives micro averages (pooled counts, with a percentile bootstrap over
    sentences, fixed seed) and macro averages (the mean of per-sentence scores, with a
    Student t interval), each with its 95% confidence interval. The intervals measure the
    sampling of sentences only: one codebook seed is one fixed draw of the vectors, and the
    variation between codebooks shows only across seeds. Groups by variant are split by
    order when a variant was run in more than one order (or in another than its own).
"""

from __future__ import annotations

from fastdcyk.experiments.aggregate import (
    aggregate,
    default_study_c_dim,
    format_table,
    study_rows,
    summary_table,
)
from fastdcyk.experiments.config import (
    PAPER_DIMS,
    PAPER_GRAMMARS,
    PAPER_GRID_CORE_HOURS,
    ExperimentConfig,
)
from fastdcyk.experiments.records import (
    BACKEND_FIELD,
    RECORD_FIELDS,
    TREE_FIELDS,
    grid_mismatch,
    record_backend,
    record_encoding,
    record_key,
    record_order,
    record_readback,
)
from fastdcyk.experiments.runner import RunSummary, run_experiment
from fastdcyk.experiments.store import (
    RESULTS_FORMAT,
    RESULTS_VERSION,
    ConfigMismatchError,
    ResultsFileError,
    ResultsLockedError,
    ResultsWarning,
    ResultsWriteError,
    load_records,
    open_results,
    read_results,
)
from fastdcyk.experiments.tasks import Task, plan_tasks, run_task
from fastdcyk.options import CODEBOOKS, EXECUTORS

__all__ = [
    "CODEBOOKS",
    "EXECUTORS",
    "PAPER_DIMS",
    "PAPER_GRAMMARS",
    "PAPER_GRID_CORE_HOURS",
    "BACKEND_FIELD",
    "TREE_FIELDS",
    "RECORD_FIELDS",
    "RESULTS_FORMAT",
    "RESULTS_VERSION",
    "ConfigMismatchError",
    "ExperimentConfig",
    "ResultsFileError",
    "ResultsLockedError",
    "ResultsWarning",
    "ResultsWriteError",
    "RunSummary",
    "Task",
    "aggregate",
    "default_study_c_dim",
    "format_table",
    "grid_mismatch",
    "load_records",
    "open_results",
    "plan_tasks",
    "read_results",
    "record_backend",
    "record_encoding",
    "record_key",
    "record_order",
    "record_readback",
    "run_experiment",
    "run_task",
    "study_rows",
    "summary_table",
]

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
    the canonical JSON of the configuration and of the text of every grammar it names);
    every other line is one record. Records are appended as their task finishes, then
    flushed and fsync'ed, so an interrupted run (Ctrl-C, kill -9, a full disk) loses only
    the tasks that had not finished. Rerunning the same configuration on the same file
    resumes: finished records are skipped, and a torn last line (no newline, or invalid
    JSON) is cut off first. A file written for another configuration is refused
    (:class:`ConfigMismatchError`): records of two grids are never mixed. The header names
    its results format version: a file of a newer version than this code knows (written by
    a newer fastdcyk) is refused, for reading and for resuming (:class:`ResultsFileError`).
    Every record names the order it was parsed in (:data:`fastdcyk.engine.ORDERS`); a record
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

Aggregates
    :func:`aggregate` gives micro averages (pooled counts, with a percentile bootstrap over
    sentences, fixed seed) and macro averages (the mean of per-sentence scores, with a
    Student t interval), each with its 95% confidence interval. The intervals measure the
    sampling of sentences only: one codebook seed is one fixed draw of the vectors, and the
    variation between codebooks shows only across seeds. Groups by variant are split by
    order when a variant was run in more than one order (or in another than its own).
"""

from __future__ import annotations

import codecs
import hashlib
import json
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Container, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from fastdcyk import _kernels
from fastdcyk.codebook import Codebook, _available_memory, _format_bytes
from fastdcyk.cyk import cyk
from fastdcyk.engine import (
    DEFAULT_BETA,
    DEFAULT_THRESHOLD,
    ENCODINGS,
    ORDERS,
    VARIANTS,
    _largest_fitting_d,
    dcyk,
    default_codebook,
    estimate_memory,
)
from fastdcyk.generate import generate
from fastdcyk.grammar import Grammar, GrammarError
from fastdcyk.metrics import cell_scores

__all__ = [
    "CODEBOOKS",
    "EXECUTORS",
    "PAPER_DIMS",
    "PAPER_GRAMMARS",
    "PAPER_GRID_CORE_HOURS",
    "RECORD_FIELDS",
    "ConfigMismatchError",
    "ExperimentConfig",
    "ResultsFileError",
    "ResultsLockedError",
    "ResultsWriteError",
    "RunSummary",
    "Task",
    "aggregate",
    "default_study_c_dim",
    "format_table",
    "load_records",
    "open_results",
    "plan_tasks",
    "read_results",
    "record_key",
    "record_encoding",
    "record_order",
    "run_experiment",
    "run_task",
    "study_rows",
    "summary_table",
]

#: The paper's dimensions (its experiments section; docs/results.md).
PAPER_DIMS = (100, 1000, 2000, 3000, 4000, 5000, 6000)
#: The paper's grammars, as reconstructed in fastdcyk/grammars (docs/grammars.md).
PAPER_GRAMMARS = ("G0", "G1", "G2", "G3", "G4")
#: Core-hours of the paper's whole grid (the defaults of :class:`ExperimentConfig`, each
#: variant in its own order), one thread per worker: docs/results.md, "Cost". Quoted by
#: ``fastdcyk experiment --help``, the README and docs/results.md (tests check they agree).
PAPER_GRID_CORE_HOURS = 250
EXECUTORS = ("serial", "process", "dask")

RESULTS_FORMAT = "fastdcyk-results"
#: The results format this code writes (the header's ``format_version``); it reads every
#: version up to this one and refuses a newer one (:class:`ResultsFileError`: upgrade).
RESULTS_VERSION = 1

#: How :class:`ExperimentConfig` builds the codebooks of unitary variants.
CODEBOOKS = ("grammar", "plain")
#: The fields of a record, in the order they are written. ``seconds`` is the parse time
#: (D-CYK and its decoder, not symbolic CYK) and the only field that differs between runs.
#: ``order`` is the order the parse used (resolved: never None); records of files written
#: before it existed lack it and are read as their variant's own order. ``encoding`` is the
#: encoding (resolved); records written before it existed lack it and are read as "paper".
RECORD_FIELDS = (
    "grammar",
    "variant",
    "order",
    "encoding",
    "beta",
    "d",
    "seed",
    "index",
    "words",
    "length",
    "tp",
    "gold",
    "predicted",
    "precision",
    "recall",
    "f1",
    "seconds",
)
#: Fields a record may lack (older results files): filled in when the file is read.
_OPTIONAL_FIELDS = ("order", "encoding")
#: Settings of the configuration that a record was produced with and does not write (its
#: file's header holds them): :func:`read_results` gives every record those of its header,
#: so that :func:`record_key` tells apart records of files of other thresholds, dtypes,
#: codebooks or sentence samples. The sample is named by its source, lengths and seed, not
#: its size: the first k sentences of a sample are the sample of k sentences.
_SETTINGS = ("threshold", "dtype", "codebooks", "source", "min_len", "max_len", "sentence_seed")
#: A header's configuration without a setting was written before the setting existed, and
#: is read as the value of that time: ``codebooks`` "plain" (random symbol vectors for every
#: variant); every other setting has always been in the header.
_SETTINGS_BEFORE = {"codebooks": "plain"}

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
}
_TASK_SECONDS = 4.0
_TASK_MAX_SENTENCES = 256


class ResultsFileError(ValueError):
    """A results file that cannot be read or used (not a results file, corrupt)."""


class ConfigMismatchError(ResultsFileError):
    """A results file written for another configuration than the one being run."""


class ResultsLockedError(ResultsFileError):
    """A results file that another run (another process, or thread) is writing."""


class ResultsWriteError(OSError):
    """Writing records failed (a full disk, for instance); what was written is kept."""


# -- configuration --------------------------------------------------------------------------

#: ExperimentConfig.orders by default: each variant in its own order.
_DEFAULT_ORDERS: tuple[str | None, ...] = (None,)


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _int_tuple(name: str, values: Iterable[Any], low: int) -> tuple[int, ...]:
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < low:
            raise ValueError(f"{name} must hold integers >= {low}, got {v!r}")
        out.append(int(v))
    if not out:
        raise ValueError(f"{name} must not be empty")
    return tuple(sorted(set(out)))


@dataclass(frozen=True)
class ExperimentConfig:
    """A grid of D-CYK runs over one sample of generated sentences.

    The defaults are the paper's setup (docs/results.md): 2,000 sentences generated from
    G0 (lengths 2 to 10: the paper restricts study a to lengths <= 7, so its sample had
    longer ones; their bound is not published), the grammars G0..G4, d in {100, 1000, ...,
    6000}, and both variants, each in its own order. Lists are normalised (sorted, without
    repeats; a single value is a list of one), so the same grid always has the same hash.

    Parameters
    ----------
    grammars : sequence of str
        Builtin names or grammar files, each parsed for every sentence. Every word of the
        sample must be a terminal of each of them.
    dims : sequence of int
        Dimensions d (>= 2).
    variants : sequence of str
        Keys of :data:`fastdcyk.engine.VARIANTS` ("paper", "trace"); each uses its own
        codebook choice (``VARIANTS[v]["unitary"]``).
    orders : sequence of {None, "sequential", "cell"}
        Orders of the updates in a cell (:data:`fastdcyk.engine.ORDERS`), each crossed with
        every variant; None is each variant's own (``VARIANTS[v]["order"]``: paper
        "sequential", trace "cell"). A pair that two entries resolve to is run once. The
        default ``(None,)`` is left out of :meth:`to_dict` and of the hash, so a grid that
        asks for no other order has the hash it had before orders existed.
    betas : sequence of float
        Sigmoid slopes (default: the engine's :data:`~fastdcyk.engine.DEFAULT_BETA` only).
    seeds : sequence of int
        Codebook seeds (default: 0 only).
    sentences : int
        Size of the sample.
    source : str
        Grammar the sentences are generated from.
    min_len, max_len : int
        Sentence lengths, inclusive (see :func:`fastdcyk.generate`).
    sentence_seed : int
        Seed of the sentence generator.
    threshold : float
        Decoder threshold on sigma (the paper's 0.99).
    dtype : {"float32", "float64"}
        Precision of the codebooks and accumulators.
    encoding : {None, "paper", "roles"}
        The encoding of every parse (:data:`fastdcyk.engine.ENCODINGS`); None (the default)
        is each variant's own (``VARIANTS[v]["encoding"]``: paper "paper", trace "roles").
    codebooks : {"grammar", "plain"}
        How the codebooks of unitary variants (trace) are built: ``"grammar"`` (the default,
        what :func:`fastdcyk.dcyk` builds) gives the grammar's symbols shifted vectors
        (:meth:`fastdcyk.Codebook.for_grammar`), ``"plain"`` random ones
        (``Codebook(d, seed, unitary=True)``). Always in :meth:`to_dict`: files written
        before the codebooks changed are refused, not resumed with other codebooks.
    grammar_encoding : str
        Encoding of grammar files (default "utf-8"; "latin-1" for NLTK's ATIS grammar).
    to_cnf : bool
        Convert grammars that are not in Chomsky normal form (:meth:`Grammar.to_cnf`)
        instead of refusing them.

    Raises
    ------
    ValueError
        On an empty list, d < 2, an unknown variant, order or encoding, a bad beta, threshold, dtype
        or length.
    """

    grammars: tuple[str, ...] = PAPER_GRAMMARS
    dims: tuple[int, ...] = PAPER_DIMS
    variants: tuple[str, ...] = tuple(VARIANTS)
    betas: tuple[float, ...] = (DEFAULT_BETA,)
    seeds: tuple[int, ...] = (0,)
    sentences: int = 2000
    source: str = "G0"
    min_len: int = 2
    max_len: int = 10
    sentence_seed: int = 0
    threshold: float = DEFAULT_THRESHOLD
    dtype: str = "float32"
    orders: tuple[str | None, ...] = (None,)
    encoding: str | None = None
    codebooks: str = "grammar"
    grammar_encoding: str = "utf-8"
    to_cnf: bool = False

    def __post_init__(self) -> None:
        def put(name: str, value: Any) -> None:
            object.__setattr__(self, name, value)

        for name in ("grammars", "dims", "variants", "betas", "seeds", "orders"):
            value = getattr(self, name)
            if value is None or isinstance(value, str | int | float | os.PathLike):
                put(name, (value,))  # one value, not a list
        grammars = tuple(dict.fromkeys(os.fspath(g) for g in self.grammars))
        if not grammars:
            raise ValueError("grammars must not be empty")
        put("grammars", tuple(sorted(grammars)))
        put("dims", _int_tuple("dims", self.dims, 2))
        variants = tuple(dict.fromkeys(self.variants))
        if not variants:
            raise ValueError("variants must not be empty")
        for v in variants:
            if v not in VARIANTS:
                raise ValueError(f"unknown variant {v!r}: choose from {tuple(VARIANTS)}")
        put("variants", tuple(v for v in VARIANTS if v in variants))
        orders = tuple(dict.fromkeys(self.orders))
        if not orders:
            raise ValueError("orders must not be empty (None: each variant's own order)")
        for o in orders:
            if o is not None and o not in ORDERS:
                raise ValueError(
                    f"unknown order {o!r}: choose from {ORDERS} (or None: each variant's own)"
                )
        put("orders", tuple(o for o in (None, *ORDERS) if o in orders))
        betas = []
        for b in self.betas:
            ok = isinstance(b, int | float) and not isinstance(b, bool)
            if not (ok and math.isfinite(b) and b > 0):
                raise ValueError(f"betas must hold finite numbers > 0, got {b!r}")
            betas.append(float(b))
        if not betas:
            raise ValueError("betas must not be empty")
        put("betas", tuple(sorted(set(betas))))
        put("seeds", _int_tuple("seeds", self.seeds, 0))
        for name in ("sentences", "min_len", "max_len", "sentence_seed"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | np.integer):
                raise ValueError(f"{name} must be an integer, got {value!r}")
            put(name, int(value))
        if self.sentences < 1:
            raise ValueError(f"sentences must be >= 1, got {self.sentences}")
        if not 1 <= self.min_len <= self.max_len:
            raise ValueError(
                f"need 1 <= min_len <= max_len, got min_len={self.min_len}, max_len={self.max_len}"
            )
        if not (isinstance(self.threshold, int | float) and 0.0 < self.threshold < 1.0):
            raise ValueError(f"threshold must be strictly between 0 and 1, got {self.threshold}")
        put("threshold", float(self.threshold))
        if str(self.dtype) not in ("float32", "float64"):
            raise ValueError(f"dtype must be 'float32' or 'float64', got {self.dtype!r}")
        put("dtype", str(self.dtype))
        put("source", str(self.source))
        if self.encoding is not None and self.encoding not in ENCODINGS:
            raise ValueError(
                f"unknown encoding {self.encoding!r}: choose from {ENCODINGS} "
                "(or None: each variant's own)"
            )
        if self.codebooks not in CODEBOOKS:
            raise ValueError(f"unknown codebooks {self.codebooks!r}: choose from {CODEBOOKS}")
        try:
            codecs.lookup(self.grammar_encoding)
        except (LookupError, TypeError):
            raise ValueError(
                f"unknown grammar_encoding {self.grammar_encoding!r}: give a Python codec name "
                "such as 'utf-8' or 'latin-1'"
            ) from None
        if not isinstance(self.to_cnf, bool | np.bool_):
            raise ValueError(f"to_cnf must be True or False, got {self.to_cnf!r}")
        put("to_cnf", bool(self.to_cnf))

    # -- serialisation ------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The configuration as plain JSON types.

        ``orders``, ``encoding`` and ``codebooks`` are always there, so that a configuration
        differs in hash from those written before they existed: their trace records were
        parsed with another order, encoding or codebook than the trace variant's of today,
        and a run must not add records of the new default to such a file (it refuses the
        file instead).
        """
        out = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}
        # how grammar files are read: left out at their defaults, so that the hash of every
        # grid that reads UTF-8 files in CNF is the one it had before these options existed
        # (the hash covers the grammars' text as read in any case)
        for name, default in (("grammar_encoding", "utf-8"), ("to_cnf", False)):
            if out[name] == default:
                del out[name]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ExperimentConfig:
        """Inverse of :meth:`to_dict`; unknown keys are an error, a missing one takes its
        default (``orders``: each variant's own order)."""
        known = set(cls.__dataclass_fields__)
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown configuration keys: {sorted(unknown)}")
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})

    def load_grammars(self) -> dict[str, Grammar]:
        """Every grammar of the grid and the source, by its spec.

        Raises
        ------
        GrammarError
            For an unknown builtin name, a missing file or an invalid grammar.
        """
        out = {}
        cnf = "convert" if self.to_cnf else "allow"
        for spec in (*self.grammars, self.source):
            if spec not in out:
                grammar = Grammar.load(spec, cnf=cnf, encoding=self.grammar_encoding)
                if not grammar.is_cnf:
                    raise GrammarError(
                        f"grammar {spec!r} is not in Chomsky normal form: convert it with "
                        "to_cnf=True (fastdcyk experiment --to-cnf)"
                    )
                out[spec] = grammar
        return out

    def hash(self, grammars: dict[str, Grammar] | None = None) -> str:
        """sha256 of the canonical JSON of the configuration and of its grammars' text.

        Hashing the text, not just the name, means that editing a grammar file (or a
        builtin grammar changing between releases) gives another configuration.
        """
        grammars = self.load_grammars() if grammars is None else grammars
        texts = {spec: _sha256(grammars[spec].to_string()) for spec in sorted(grammars)}
        return _sha256(_canonical({"config": self.to_dict(), "grammar_sha256": texts}))

    def sample(self, grammars: dict[str, Grammar] | None = None) -> list[tuple[str, ...]]:
        """The generated sentences, in index order."""
        grammars = self.load_grammars() if grammars is None else grammars
        return generate(
            grammars[self.source],
            self.sentences,
            min_len=self.min_len,
            max_len=self.max_len,
            seed=self.sentence_seed,
        )

    def variant_orders(self) -> tuple[tuple[str, str], ...]:
        """The (variant, order) pairs of the grid, orders resolved, each once.

        Ordered by variant, then as in :attr:`orders` (None, the variant's own, first).
        """
        pairs = {}
        for v in self.variants:
            for o in self.orders:
                pairs[v, VARIANTS[v]["order"] if o is None else o] = None
        return tuple(pairs)

    def grid_size(self) -> int:
        """Records of the complete grid."""
        return (
            len(self.grammars)
            * len(self.variant_orders())
            * len(self.betas)
            * len(self.dims)
            * len(self.seeds)
            * self.sentences
        )


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
        The order of the updates in a cell (:data:`fastdcyk.engine.ORDERS`). None (the
        default) is resolved to the variant's own, so a task always holds the order it
        parses in.
    encoding : {"paper", "roles"}, optional
        The encoding (:data:`fastdcyk.engine.ENCODINGS`); None is resolved to the
        variant's own.
    codebooks : {"grammar", "plain"}, default "grammar"
        As :attr:`ExperimentConfig.codebooks`.

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

    def __post_init__(self) -> None:
        if self.codebooks not in CODEBOOKS:
            raise ValueError(f"unknown codebooks {self.codebooks!r}: choose from {CODEBOOKS}")
        if self.variant not in VARIANTS:
            raise ValueError(f"unknown variant {self.variant!r}: choose from {tuple(VARIANTS)}")
        if self.order is None:
            object.__setattr__(self, "order", VARIANTS[self.variant]["order"])
        elif self.order not in ORDERS:
            raise ValueError(f"unknown order {self.order!r}: choose from {ORDERS}")
        if self.encoding is None:
            object.__setattr__(self, "encoding", VARIANTS[self.variant]["encoding"])
        elif self.encoding not in ENCODINGS:
            raise ValueError(f"unknown encoding {self.encoding!r}: choose from {ENCODINGS}")

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


def record_order(record: dict[str, Any]) -> str | None:
    """The order a record was parsed in.

    A record of a file written before records named their order lacks ``"order"``: every
    variant was then parsed in the paper's order, so it is read as ``"sequential"``.
    """
    return record.get("order") or "sequential"


def record_encoding(record: dict[str, Any]) -> str:
    """The encoding a record was parsed with: ``"paper"`` for a record of a file written
    before records named it (every variant then used the paper's encoding)."""
    return record.get("encoding") or "paper"


def _settings_key(get: Callable[[str], Any]) -> tuple:
    """(threshold, dtype, codebooks, source, min_len, max_len, sentence_seed), normalised."""
    return (
        float(get("threshold")),
        str(get("dtype")),
        str(get("codebooks")),
        str(get("source")),
        int(get("min_len")),
        int(get("max_len")),
        int(get("sentence_seed")),
    )


def record_key(record: dict[str, Any], config: ExperimentConfig | None = None) -> tuple:
    """What identifies a record: no two records of one key are kept (:func:`load_records`).

    The key is (grammar, variant, order, encoding, beta, d, seed, threshold, dtype,
    codebooks, source, min_len, max_len, sentence_seed, index, words): the grid cell, the
    configuration's settings that change a record (the decoder threshold, the precision,
    how unitary codebooks are built, and the sentence sample: its source, lengths and seed)
    and the sentence. Records read from a results file hold their file's settings
    (:func:`read_results`), so the records of two files of other settings never share a
    key.

    Parameters
    ----------
    record : dict
        A record. One without ``"order"`` (an older file) was parsed in the paper's order
        (:func:`record_order`), one without ``"encoding"`` in the paper's encoding.
    config : ExperimentConfig, optional
        The configuration the record was produced with, for a record that does not hold
        its settings (one straight from :func:`run_task`). Without it, a setting the record
        lacks is read as the default of :class:`ExperimentConfig`.

    Returns
    -------
    tuple
    """

    def setting(name: str) -> Any:
        if name in record:
            return record[name]
        return _setting_default(name) if config is None else getattr(config, name)

    return (
        record["grammar"],
        record["variant"],
        record_order(record),
        record_encoding(record),
        float(record["beta"]),
        int(record["d"]),
        int(record["seed"]),
        *_settings_key(setting),
        int(record["index"]),
        record.get("words"),
    )


def plan_tasks(
    config: ExperimentConfig,
    done: Container[tuple] = frozenset(),
    *,
    batch_size: int | None = None,
    grammars: dict[str, Grammar] | None = None,
    sentences: list[tuple[str, ...]] | None = None,
) -> list[Task]:
    """The tasks that produce the records of ``config`` not in ``done``.

    Parameters
    ----------
    config : ExperimentConfig
    done : set of tuple
        Keys (:func:`record_key`) already written.
    batch_size : int, optional
        Distinct sentences per task. Default: as many as fit in about four seconds of work
        by a rough cost model (at most 256), so that tasks stay short whatever d is.
    grammars, sentences : optional
        Already loaded grammars and generated sample (computed when omitted).

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
    grammars = config.load_grammars() if grammars is None else grammars
    sentences = config.sample(grammars) if sentences is None else sentences
    _check_sample(config, grammars, sentences)
    # Distinct sentences in a fixed order (by length, then words), each with its indices.
    positions: dict[tuple[str, ...], list[int]] = {}
    for index, s in enumerate(sentences):
        positions.setdefault(s, []).append(index)
    distinct = sorted(positions, key=lambda s: (len(s), s))
    settings = _settings_key(lambda name: getattr(config, name))
    tasks = []
    for d in config.dims:
        for spec in config.grammars:
            text = grammars[spec].to_string()
            for variant, order in config.variant_orders():
                encoding = config.encoding or VARIANTS[variant]["encoding"]
                for beta in config.betas:
                    for seed in config.seeds:
                        items = []
                        cell = (spec, variant, order, encoding, float(beta), d, seed, *settings)
                        for s in distinct:
                            words = " ".join(s)
                            todo = tuple(i for i in positions[s] if (*cell, i, words) not in done)
                            if todo:
                                items.append((s, todo))
                        for batch in _batches(items, d, variant, order, batch_size):
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
                                )
                            )
    return tasks


def _check_sample(
    config: ExperimentConfig, grammars: dict[str, Grammar], sentences: list[tuple[str, ...]]
) -> None:
    words = {w for s in sentences for w in s}
    for spec in config.grammars:
        missing = sorted(words - set(grammars[spec].terminals))
        if missing:
            raise ValueError(
                f"grammar {spec!r} has no rule for the words {missing} of the sentences "
                f"generated from {config.source!r}: it cannot parse the sample"
            )


def _batches(
    items: list, d: int, variant: str, order: str | None, batch_size: int | None
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
        if cost >= _TASK_SECONDS or len(batch) >= _TASK_MAX_SENTENCES:
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
        cb = default_codebook(grammar, task.d, task.seed, task.dtype, unitary=True, threads=1)
    else:
        cb = Codebook(task.d, seed=task.seed, dtype=task.dtype, unitary=unitary, threads=1)
    _local.codebook = (key, cb)
    return cb, True


def _worker_grammar(text: str) -> Grammar:
    grammar = _grammar_cache.get(text)
    if grammar is None:
        grammar = _grammar_cache[text] = Grammar.from_string(text)
    return grammar


#: Seconds between two looks of a pool worker at its parent (see :func:`_exit_with_parent`).
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
    _kernels.set_threads(1)
    if parent is not None:
        _exit_with_parent(parent)


def run_task(task: Task) -> list[dict[str, Any]]:
    """Parse a task's sentences and score them: its records, sorted by sentence index.

    Runs anywhere fastdcyk is installed (a pool process, a dask worker): the codebook is
    rebuilt from the task's seed with one FFT thread (and kept for the next task of the
    same d, seed and variant), and the Numba kernels are set to one thread. A new codebook
    is warmed up first on a two-word prefix of the first sentence, outside the timing, in
    the task's order. Every record names the order (``task.order``, resolved).
    """
    _kernels.set_threads(1)
    grammar = _worker_grammar(task.grammar_text)
    cb, fresh = _worker_codebook(task)
    if fresh and task.items:
        # Untimed warm-up on a short prefix: loads the Numba kernels and plans the FFTs of
        # this d, so that ``seconds`` measures parsing only.
        dcyk(
            grammar,
            task.items[0][0][:2],
            cb,
            variant=task.variant,
            beta=task.beta,
            order=task.order,
            encoding=task.encoding,
        )
    records = []
    for words, indices in task.items:
        t0 = time.perf_counter()
        result = dcyk(
            grammar,
            words,
            cb,
            variant=task.variant,
            beta=task.beta,
            threshold=task.threshold,
            order=task.order,
            encoding=task.encoding,
        )
        seconds = time.perf_counter() - t0
        scores = cell_scores(cyk(grammar, words), result.chart)
        for index in indices:
            records.append(
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
            )
    records.sort(key=lambda r: r["index"])
    return records


# -- the results file -----------------------------------------------------------------------


def _header(config: ExperimentConfig, config_hash: str) -> dict[str, Any]:
    from fastdcyk import __version__

    return {
        "format": RESULTS_FORMAT,
        "format_version": RESULTS_VERSION,
        "config_hash": config_hash,
        "config": config.to_dict(),
        "fastdcyk": __version__,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def _fsync_write(path: Path, data: bytes, mode: str) -> None:
    with open(path, mode) as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


@dataclass
class _Parsed:
    header: dict[str, Any] | None
    records: list[dict[str, Any]]
    good_bytes: int  # length of the valid prefix (header and complete records)
    torn: bool  # a torn last line follows the valid prefix


def _check_format_version(path: Path, header: dict[str, Any]) -> None:
    """Refuse a header of a results format this code does not know (a newer fastdcyk's)."""
    version = header.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ResultsFileError(
            f"{str(path)!r} has no valid results format version in its header (found "
            f"{version!r}; this fastdcyk reads versions 1 to {RESULTS_VERSION}): the file is "
            "corrupt"
        )
    if version > RESULTS_VERSION:
        from fastdcyk import __version__

        writer = header.get("fastdcyk")
        by = f"fastdcyk {writer}" if isinstance(writer, str) else "a newer fastdcyk"
        raise ResultsFileError(
            f"{str(path)!r} was written by {by} in results format version {version}; this "
            f"fastdcyk ({__version__}) reads versions up to {RESULTS_VERSION}: upgrade "
            "fastdcyk to read it"
        )


def _setting_default(name: str) -> Any:
    return ExperimentConfig.__dataclass_fields__[name].default


def _parse_file(path: Path) -> _Parsed:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ResultsFileError(f"cannot read results file {str(path)!r}: {exc}") from exc
    header = None
    settings: dict[str, Any] = {}
    records: list[dict[str, Any]] = []
    pos = 0
    line_no = 0
    while pos < len(data):
        end = data.find(b"\n", pos)
        last = end < 0 or end == len(data) - 1
        line = data[pos:] if end < 0 else data[pos:end]
        line_no += 1
        try:
            if end < 0:
                raise ValueError("no newline")
            obj = json.loads(line)
            if not isinstance(obj, dict):
                raise ValueError("not an object")
        except ValueError:
            if header is None and not line.startswith(b'{"config"'):
                raise ResultsFileError(
                    f"{str(path)!r} is not a fastdcyk results file (its first line is not a "
                    "results header)"
                ) from None
            if last:  # a write cut short by a crash or a full disk: drop it on resume
                return _Parsed(header, records, pos, True)
            raise ResultsFileError(
                f"{str(path)!r}, line {line_no}: not a JSON object (the file is corrupt; "
                "only its last line may be torn)"
            ) from None
        if header is None:
            if obj.get("format") != RESULTS_FORMAT:
                raise ResultsFileError(
                    f"{str(path)!r} is not a fastdcyk results file (its first line has no "
                    f'"format": "{RESULTS_FORMAT}" header)'
                )
            _check_format_version(path, obj)
            if not isinstance(obj.get("config"), dict):
                raise ResultsFileError(
                    f"{str(path)!r}: its header holds no configuration (the file is corrupt)"
                )
            settings = {
                name: obj["config"].get(name, _SETTINGS_BEFORE.get(name, _setting_default(name)))
                for name in _SETTINGS
            }
            header = obj
        else:
            missing = [f for f in RECORD_FIELDS if f not in obj and f not in _OPTIONAL_FIELDS]
            if missing:
                raise ResultsFileError(f"{str(path)!r}, line {line_no}: record lacks {missing}")
            if "order" not in obj:  # written before records named their order
                obj["order"] = record_order(obj)
            if "encoding" not in obj:  # written before records named their encoding
                obj["encoding"] = record_encoding(obj)
            for name, value in settings.items():  # the header's, for record_key
                obj.setdefault(name, value)
            records.append(obj)
        pos = end + 1
    return _Parsed(header, records, pos, False)


@dataclass
class ResultsFile:
    """A results file as read: its header, its records, and what was repaired."""

    path: Path
    header: dict[str, Any]
    records: list[dict[str, Any]]
    torn_bytes: int = 0

    @property
    def config(self) -> ExperimentConfig:
        return ExperimentConfig.from_dict(self.header["config"])

    @property
    def config_hash(self) -> str:
        return self.header["config_hash"]


def read_results(path: str | os.PathLike[str]) -> ResultsFile:
    """Read a results file (without changing it); a torn last line is ignored.

    Every record is given the settings of its file's configuration that it does not write
    itself, from the header: ``threshold``, ``dtype``, ``codebooks``, and the sample's
    ``source``, ``min_len``, ``max_len`` and ``sentence_seed`` (:func:`record_key` reads
    them). A header written before ``codebooks`` existed gives ``"plain"``, the codebooks
    of that time. Records of older files also get ``order`` (:func:`record_order`) and
    ``encoding`` (:func:`record_encoding`).

    Raises
    ------
    ResultsFileError
        When the file cannot be read, is not a results file, is corrupt before its last
        line, or was written by a newer fastdcyk in a results format version this one does
        not know (:data:`RESULTS_VERSION`).
    """
    path = Path(path)
    parsed = _parse_file(path)
    if parsed.header is None:
        raise ResultsFileError(f"{str(path)!r} holds no results header (empty or torn file)")
    torn = path.stat().st_size - parsed.good_bytes if parsed.torn else 0
    return ResultsFile(path, parsed.header, parsed.records, torn)


#: The results files this process holds the lock of: (device, inode) -> the holding thread.
_HELD_LOCKS: dict[tuple[int, int], int] = {}
_HELD_LOCKS_GUARD = threading.Lock()


class _ResultsLock:
    """The one-writer lock of a results file, as a context manager.

    An exclusive, non-blocking ``flock`` on the results file itself (created empty when
    absent, with its folder), held from ``__enter__`` to ``__exit__``. The kernel drops it
    when the process ends, however it ends, so nothing stale is left behind. A thread that
    already holds the lock of a file may enter it again. On systems without ``fcntl``
    (Windows) no lock is taken.

    Raises
    ------
    ResultsLockedError
        On entering, when another process, or another thread of this one, holds the lock.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._fd: int | None = None
        self._key: tuple[int, int] | None = None

    def __enter__(self) -> _ResultsLock:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            return self
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDONLY | os.O_CREAT, 0o666)
        try:
            st = os.fstat(fd)
            key = (st.st_dev, st.st_ino)
            with _HELD_LOCKS_GUARD:
                mine = _HELD_LOCKS.get(key) == threading.get_ident()
            if mine:  # this thread holds it already: nothing to take
                os.close(fd)
                return self
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise ResultsLockedError(
                f"{str(self.path)!r} is being written by another run (it holds the file's "
                "lock); two runs on one file would both do every task and write every "
                "record twice: wait for that run to end (or stop it), or write to another "
                "file (--out). The file was not changed"
            ) from None
        except OSError as exc:  # a file system without locks: go on unlocked
            os.close(fd)
            import warnings

            warnings.warn(
                f"cannot lock {str(self.path)!r} ({exc}): nothing stops a second run from "
                "writing to it at the same time",
                RuntimeWarning,
                stacklevel=2,
            )
            return self
        except BaseException:
            os.close(fd)
            raise
        with _HELD_LOCKS_GUARD:
            _HELD_LOCKS[key] = threading.get_ident()
        self._fd, self._key = fd, key
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is None:
            return
        with _HELD_LOCKS_GUARD:
            _HELD_LOCKS.pop(self._key, None)
        try:
            os.close(self._fd)  # closing the last descriptor of the file releases the lock
        finally:
            self._fd = self._key = None


def open_results(
    path: str | os.PathLike[str], config: ExperimentConfig, config_hash: str
) -> ResultsFile:
    """Create the results file of ``config``, or open it to resume.

    A missing or empty file (or one holding only a torn header) gets a new header. An
    existing one must carry ``config_hash``; a torn last line is cut off (truncated) so
    that appending continues on a clean line. The file's lock is held meanwhile (see
    :func:`run_experiment`), so a file that another run is writing is left alone.

    Raises
    ------
    ResultsLockedError
        When another run is writing the file.
    ConfigMismatchError
        When the file was written for another configuration (the message names the file
        and both hashes).
    ResultsFileError
        When the file is not a results file or is corrupt.
    """
    path = Path(path)
    with _ResultsLock(path):
        return _open_results(path, config, config_hash)


def _open_results(path: Path, config: ExperimentConfig, config_hash: str) -> ResultsFile:
    if path.exists() and path.stat().st_size > 0:
        parsed = _parse_file(path)
        if parsed.header is not None:
            found = parsed.header.get("config_hash")
            if found != config_hash:
                raise ConfigMismatchError(
                    f"{str(path)!r} holds results of another configuration (hash {found}) "
                    f"than this run's (hash {config_hash}); records of two configurations "
                    "are never mixed: write to a new file (--out) or rerun with the "
                    "file's own configuration"
                )
            torn = 0
            if parsed.torn:
                torn = path.stat().st_size - parsed.good_bytes
                with open(path, "r+b") as fh:
                    fh.truncate(parsed.good_bytes)
                    fh.flush()
                    os.fsync(fh.fileno())
            return ResultsFile(path, parsed.header, parsed.records, torn)
    path.parent.mkdir(parents=True, exist_ok=True)
    header = _header(config, config_hash)
    _fsync_write(path, (_canonical(header) + "\n").encode("ascii"), "wb")
    return ResultsFile(path, header, [])


class _Appender:
    """Appends records with flush + fsync; on a failed write, cuts back the partial line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fh = open(path, "ab")  # noqa: SIM115 - closed by close()

    def write(self, records: list[dict[str, Any]]) -> None:
        data = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records)
        start = self.fh.tell()
        try:
            self.fh.write(data.encode("utf-8"))
            self.fh.flush()
            os.fsync(self.fh.fileno())
        except OSError as exc:
            try:
                self.fh.truncate(start)
            except OSError:
                pass  # the next run cuts the torn line off instead
            raise ResultsWriteError(
                exc.errno,
                f"cannot write records to {str(self.path)!r} ({exc.strerror or exc}); the "
                "records written before are kept: free space (or fix the problem) and rerun "
                "the same command to resume",
            ) from exc

    def close(self) -> None:
        try:
            self.fh.close()
        except OSError:
            pass


def load_records(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
) -> list[dict[str, Any]]:
    """The records of one or more results files, each key once (the first one wins).

    Records of files of other configurations (another threshold, dtype, codebooks or
    sentence sample: see :func:`record_key`) have other keys and are all kept; a record
    that two files share (the same grid cell, settings and sentence: a resumed or copied
    run) is kept once.

    Parameters
    ----------
    paths : path or sequence of paths

    Returns
    -------
    list of dict
        As :func:`read_results` gives them, in file order.

    Raises
    ------
    ResultsFileError
        As :func:`read_results`.
    """
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    seen: set[tuple] = set()
    out = []
    for p in paths:
        for r in read_results(p).records:
            k = record_key(r)
            if k not in seen:
                seen.add(k)
                out.append(r)
    return out


# -- executors ------------------------------------------------------------------------------


def _default_workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _run_serial(tasks: list[Task]) -> Iterator[tuple[Task, list[dict[str, Any]]]]:
    previous = _kernels.get_threads()
    _kernels.set_threads(1)
    try:
        for task in tasks:
            yield task, run_task(task)
    finally:
        _kernels.set_threads(previous)


def _run_pool(tasks: list[Task], workers: int) -> Iterator[tuple[Task, list[dict[str, Any]]]]:
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


def _run_dask(
    tasks: list[Task], scheduler: str | None, client: Any
) -> Iterator[tuple[Task, list[dict[str, Any]]]]:
    try:
        from dask.distributed import Client, as_completed
    except ImportError as exc:
        raise ImportError(
            "the dask executor needs dask.distributed: pip install 'fastdcyk[dask]'"
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


# -- memory ---------------------------------------------------------------------------------


def _check_grid_memory(
    cells: Iterable[tuple[int, str, str, int]], dtype: str
) -> tuple[int, int | None]:
    """Refuse a grid whose largest parse cannot fit in this machine's memory.

    ``cells``: (d, variant, order, longest sentence) of the parses to run. Every parse
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

    def need(cell: tuple[int, str, str, int]) -> int:
        d, variant, order, n = cell
        return estimate_memory(d, dtype, "auto", 1, variant=variant, order=order, n=n)

    worst = max(cells, key=need)
    most = need(worst)
    avail = _available_memory()
    if avail is None or most <= avail:
        return most, avail
    fits = min(
        _largest_fitting_d(
            int(0.9 * avail), dtype, "auto", threads=1, variant=v, order=o, n=n, upper=worst[0]
        )
        or 0
        for _, v, o, n in cells
    )
    hint = (
        f"run the dimensions d <= {fits} only (--dims)"
        if fits >= 2
        else "free some memory (not even d = 2 fits)"
    )
    d, variant, order, n = worst
    raise MemoryError(
        f"the grid's largest parse (d = {d}, variant {variant!r}, order {order!r}, "
        f"sentences of up to {n} words, {dtype}) needs about {_format_bytes(most)} for its "
        f"accumulators and work buffers, but only {_format_bytes(avail)} of memory is "
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
        Records found in the file at the start (skipped).
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
) -> RunSummary:
    """Run (or resume) the grid of ``config``, appending its records to ``out``.

    The run holds ``out``'s lock from start to end (see the module's notes), so a second
    run on the same file is refused. Before anything runs (and before a new file is
    created), the memory of the largest parse still to do is checked against what this
    machine has available (not with the dask executor, whose workers are elsewhere); a
    process pool that would not fit at that d gets fewer workers (``echo`` says so). Pool
    workers exit when this process dies, even when it is killed.

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
        Distinct sentences per task (see :func:`plan_tasks`).
    progress : bool, default True
        Show a progress bar (tqdm) with the ETA, weighted by the estimated cost of tasks.
    echo : callable, optional
        Receives one-line messages (the file, what is resumed); default: none.

    Returns
    -------
    RunSummary

    Raises
    ------
    ConfigMismatchError
        When ``out`` holds another configuration's records.
    ResultsLockedError
        When another run is writing ``out`` (the file is not touched).
    MemoryError
        When one parse at the largest d still to do needs more memory than is available
        (the message says how much, and which dimensions fit); nothing is run.
    ResultsWriteError
        When records cannot be written (a full disk); those written before are kept.
    ValueError, GrammarError
        On a bad argument or grammar.
    KeyboardInterrupt
        Passed on after the executor is stopped; every record written is kept.
    """
    if executor not in EXECUTORS:
        raise ValueError(f"unknown executor {executor!r}: choose from {EXECUTORS}")
    if workers is not None and (isinstance(workers, bool) or workers < 1):
        raise ValueError(f"workers must be an integer >= 1, got {workers!r}")
    if executor == "dask" and not scheduler and client is None:
        raise ValueError("the dask executor needs a scheduler address (or a client)")
    say = echo or (lambda _msg: None)
    t0 = time.perf_counter()
    grammars = config.load_grammars()
    config_hash = config.hash(grammars)
    sentences = config.sample(grammars)
    _check_sample(config, grammars, sentences)  # before the results file is created
    path = Path(out)
    local = executor != "dask"  # the parses run here: their memory can be checked here
    fresh = not path.exists() or (path.is_file() and path.stat().st_size == 0)
    if local and fresh:  # every task is to do: check before the file is created
        longest = max(len(s) for s in sentences)
        _check_grid_memory(
            [(d, v, o, longest) for d in config.dims for v, o in config.variant_orders()],
            config.dtype,
        )
    with _ResultsLock(path):  # one run at a time on a file, until this one ends
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
        )


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
) -> RunSummary:
    """:func:`run_experiment` once the results file's lock is held."""
    results = open_results(path, config, config_hash)
    done = {record_key(r) for r in results.records}
    tasks = plan_tasks(config, done, batch_size=batch_size, grammars=grammars, sentences=sentences)
    need = avail = None
    if executor != "dask" and tasks:  # what is left to do (a resumed file: maybe less)
        cells = {(t.d, t.variant, t.order, max(len(w) for w, _ in t.items)) for t in tasks}
        need, avail = _check_grid_memory(cells, config.dtype)
    total = config.grid_size()
    n_workers = 1
    if executor == "process":
        n_workers = max(1, min(workers or _default_workers(), len(tasks)))
        if need is not None and avail is not None and n_workers * need > avail:
            fit = max(1, avail // need)
            say(
                f"memory: a parse at the grid's largest d needs about {_format_bytes(need)} "
                f"and {_format_bytes(avail)} is available, so the pool has {fit} workers "
                f"instead of {n_workers}"
            )
            n_workers = fit
    summary = RunSummary(
        results.path,
        config_hash,
        total,
        len(done),
        0,
        0.0,
        results.torn_bytes,
        len(tasks),
        executor,
        n_workers,
    )
    note = f", cut a torn last line of {results.torn_bytes} bytes" if results.torn_bytes else ""
    how = f"{executor}, {n_workers} workers" if executor == "process" else executor
    say(
        f"results: {results.path} (config {config_hash[:12]}): {total} records in the grid, "
        f"{len(done)} already written{note}, {total - len(done)} to do"
        + (f" in {len(tasks)} tasks ({how})" if tasks else "")
    )
    if not tasks:
        summary.seconds = time.perf_counter() - t0
        return summary

    if executor == "serial":
        stream = _run_serial(tasks)
    elif executor == "process":
        stream = _run_pool(tasks, n_workers)
    else:
        stream = _run_dask(tasks, scheduler, client)

    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(
            total=sum(t.cost for t in tasks),
            desc="D-CYK grid",
            bar_format="{desc}: {percentage:3.0f}%|{bar}| [{elapsed}<{remaining}{postfix}]",
            file=sys.stderr,
        )
        bar.set_postfix_str(f"{len(done)}/{total} records")
    appender = _Appender(results.path)
    try:
        for task, records in stream:
            appender.write(records)
            summary.written += len(records)
            if bar is not None:
                bar.update(task.cost)
                bar.set_postfix_str(f"{len(done) + summary.written}/{total} records")
    finally:
        stream.close()
        appender.close()
        if bar is not None:
            bar.close()
        summary.seconds = time.perf_counter() - t0
    return summary


# -- aggregation ----------------------------------------------------------------------------


def _prf(tp: np.ndarray, gold: np.ndarray, pred: np.ndarray) -> tuple[np.ndarray, ...]:
    """Vectorised :class:`~fastdcyk.metrics.Scores` precision, recall and F1."""
    tp, gold, pred = (np.asarray(x, dtype=np.float64) for x in (tp, gold, pred))
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(pred > 0, tp / np.where(pred > 0, pred, 1), np.where(gold == 0, 1.0, 0.0))
        r = np.where(gold > 0, tp / np.where(gold > 0, gold, 1), np.where(pred == 0, 1.0, 0.0))
        f = np.where(p + r > 0, 2 * p * r / np.where(p + r > 0, p + r, 1), 0.0)
    return p, r, f


def _t_interval(values: np.ndarray, level: float) -> tuple[float, float]:
    from scipy import stats

    n = values.size
    mean = float(values.mean())
    if n < 2:
        return math.nan, math.nan
    sem = float(values.std(ddof=1)) / math.sqrt(n)
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * sem
    return max(0.0, mean - half), min(1.0, mean + half)


def _split_by(records: Iterable[dict[str, Any]], name: str) -> bool:
    """Whether groups by variant must name ``name`` ("order" or "encoding").

    True when a variant of ``records`` was parsed with more than one value of it, or with
    another than its own (``VARIANTS[v][name]``; see :func:`record_order` and
    :func:`record_encoding` for records of older files).
    """
    seen: dict[str, set[Any]] = {}
    for r in records:
        seen.setdefault(r["variant"], set()).add(_field(r, name))
    return any(values != {VARIANTS.get(variant, {}).get(name)} for variant, values in seen.items())


def _after_variant(keys: Sequence[str], name: str) -> tuple[str, ...]:
    """``keys`` with ``name`` ("order" or "encoding") just after "variant" (and "order")
    (unchanged when they lack "variant" or already hold ``name``)."""
    keys = tuple(keys)
    if "variant" not in keys or name in keys:
        return keys
    k = keys.index("variant") + 1 + (name == "encoding" and "order" in keys)
    return (*keys[:k], name, *keys[k:])


def _field(record: dict[str, Any], name: str) -> Any:
    if name == "order":
        return record_order(record)
    if name == "encoding":
        return record_encoding(record)
    return record[name]


def aggregate(
    records: Iterable[dict[str, Any]],
    by: Sequence[str] = ("grammar", "variant", "beta", "d"),
    *,
    level: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Micro and macro averages of precision, recall and F1 per group, with intervals.

    Micro: the scores of the pooled counts (sum of tp, gold and predicted over the group's
    records), with a percentile bootstrap interval: ``n_boot`` resamples of the records
    with replacement, drawn from ``numpy.random.default_rng(seed)``. Macro: the mean of the
    per-record scores, with a Student t interval (mean +- t_{n-1} s / sqrt(n), clipped to
    [0, 1]). Each record is one sentence of the sample (repeats count as often as they
    occur), so the intervals describe the sampling of sentences. A group of one record gets
    NaN bounds.

    Parameters
    ----------
    records : iterable of dict
        Records (see :data:`RECORD_FIELDS`).
    by : sequence of str
        The fields that define a group (the rest is pooled: seeds, for instance). When it
        holds "variant" but not "order", and a variant of ``records`` was parsed in more
        than one order (or in another than its own: ``VARIANTS[v]["order"]``), "order" is
        added after "variant", so that two orders are never pooled; otherwise (one order
        per variant, its own) the rows are as without orders.
    level : float
        Confidence level (default 0.95).
    n_boot : int
        Bootstrap resamples for the micro intervals.
    seed : int
        Seed of the bootstrap.

    Returns
    -------
    list of dict
        One row per group, sorted by the ``by`` fields (and "order" when it was added), with
        ``n`` (records), ``distinct`` (distinct sentences), ``mean_length``, ``seconds``
        (mean parse time), and for
        ``m`` in {"micro", "macro"} and ``s`` in {"precision", "recall", "f1"} the keys
        ``f"{m}_{s}"``, ``f"{m}_{s}_lo"`` and ``f"{m}_{s}_hi"``.
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    records = list(records)
    by = tuple(by)
    for name in ("order", "encoding"):
        if _split_by(records, name):
            by = _after_variant(by, name)
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in records:
        groups.setdefault(tuple(_field(r, k) for k in by), []).append(r)
    rows = []
    for key in sorted(groups, key=lambda k: tuple((str(type(x)), x) for x in k)):
        rs = groups[key]
        tp = np.array([r["tp"] for r in rs])
        gold = np.array([r["gold"] for r in rs])
        pred = np.array([r["predicted"] for r in rs])
        n = len(rs)
        row: dict[str, Any] = dict(zip(by, key, strict=True))
        row["n"] = n
        row["distinct"] = len({r["words"] for r in rs})
        row["mean_length"] = float(np.mean([r["length"] for r in rs]))
        row["seconds"] = float(np.mean([r["seconds"] for r in rs]))
        micro = _prf(tp.sum(), gold.sum(), pred.sum())
        if n >= 2:
            rng = np.random.default_rng(seed)
            boot = [np.empty(n_boot) for _ in range(3)]
            chunk = max(1, 2_000_000 // n)
            for start in range(0, n_boot, chunk):
                stop = min(n_boot, start + chunk)
                idx = rng.integers(0, n, size=(stop - start, n))
                for b, v in zip(
                    boot, _prf(tp[idx].sum(1), gold[idx].sum(1), pred[idx].sum(1)), strict=True
                ):
                    b[start:stop] = v
            alpha = (1 - level) / 2
            bounds = [np.quantile(b, [alpha, 1 - alpha]) for b in boot]
        else:
            bounds = [(math.nan, math.nan)] * 3
        per = _prf(tp, gold, pred)
        for k, name in enumerate(("precision", "recall", "f1")):
            row[f"micro_{name}"] = float(micro[k])
            row[f"micro_{name}_lo"] = float(bounds[k][0])
            row[f"micro_{name}_hi"] = float(bounds[k][1])
            row[f"macro_{name}"] = float(per[k].mean())
            lo, hi = _t_interval(per[k], level)
            row[f"macro_{name}_lo"] = lo
            row[f"macro_{name}_hi"] = hi
        rows.append(row)
    return rows


def study_rows(
    records: Sequence[dict[str, Any]],
    study: str,
    *,
    grammar: str = "G0",
    max_len: int = 7,
    d: int | None = None,
    beta: float | None = None,
    per_length: bool = True,
    **kwargs: Any,
) -> list[dict[str, Any]]:
    """Aggregates for one of the paper's three studies (docs/results.md).

    Parameters
    ----------
    records : sequence of dict
    study : {"a", "b", "c"}
        ``"a"``: scores against d, on the sentences of length <= ``max_len`` of
        ``grammar`` (groups: variant, d). ``"b"``: scores against sentence length for every
        d, with ``grammar`` (groups: variant, d, length). ``"c"``: scores against sentence
        length for every grammar, at dimension ``d`` (groups: variant, grammar, length).
        Groups by variant are split by order as in :func:`aggregate`.
    grammar : str
        The grammar of studies a and b (default "G0"; when absent, the first grammar of the
        records).
    max_len : int
        Longest sentence of study a (the paper's 7).
    d : int, optional
        Dimension of study c. Default: the one shared by the most grammars (the largest
        such d on a tie).
    beta : float, optional
        Keep only this beta. Default: the engine's DEFAULT_BETA when present, else the
        smallest beta of the records.
    per_length : bool, default True
        Studies b and c: one row per sentence length; False pools the lengths (all of
        them, unlike study a).
    **kwargs
        Passed to :func:`aggregate`.

    Returns
    -------
    list of dict
        As :func:`aggregate`; each row also has ``study`` (and ``d`` for study c).
    """
    if study not in ("a", "b", "c"):
        raise ValueError(f"unknown study {study!r}: choose 'a', 'b' or 'c'")
    if not records:
        return []
    betas = sorted({float(r["beta"]) for r in records})
    if beta is None:
        beta = DEFAULT_BETA if DEFAULT_BETA in betas else betas[0]
    rs = [r for r in records if float(r["beta"]) == float(beta)]
    if study in ("a", "b"):
        names = sorted({r["grammar"] for r in rs})
        g = grammar if grammar in names else (names[0] if names else grammar)
        rs = [r for r in rs if r["grammar"] == g]
        if study == "a":
            rs = [r for r in rs if r["length"] <= max_len]
            rows = aggregate(rs, ("grammar", "variant", "beta", "d"), **kwargs)
        else:
            by = ("grammar", "variant", "beta", "d", "length")
            rows = aggregate(rs, by if per_length else by[:-1], **kwargs)
    else:
        if d is None:
            d = default_study_c_dim(rs)
        rs = [r for r in rs if r["d"] == d]
        by = ("d", "variant", "beta", "grammar", "length")
        rows = aggregate(rs, by if per_length else by[:-1], **kwargs)
    for row in rows:
        row["study"] = study
    return rows


def default_study_c_dim(records: Sequence[dict[str, Any]]) -> int | None:
    """The d shared by the most grammars in ``records`` (the largest such d on a tie)."""
    per_d: dict[int, set[str]] = {}
    for r in records:
        per_d.setdefault(int(r["d"]), set()).add(r["grammar"])
    if not per_d:
        return None
    return max(per_d, key=lambda k: (len(per_d[k]), k))


# -- tables ---------------------------------------------------------------------------------


def _fmt_ci(row: dict[str, Any], name: str) -> str:
    v, lo, hi = row[name], row[f"{name}_lo"], row[f"{name}_hi"]
    if math.isnan(lo):
        return f"{v:.3f}"
    return f"{v:.3f} [{lo:.3f}, {hi:.3f}]"


def format_table(
    rows: Sequence[dict[str, Any]], keys: Sequence[str], markdown: bool = False
) -> str:
    """A text (or Markdown) table of aggregate rows: the keys, n, micro P/R/F1, macro F1.

    Intervals are the 95% ones of :func:`aggregate`, written ``value [lo, hi]``. When the
    rows are split by order or encoding (:func:`aggregate` added "order" or "encoding") and
    ``keys`` has "variant", an "order" or "encoding" column follows it.
    """
    for name in ("order", "encoding"):
        if any(name in row for row in rows):
            keys = _after_variant(keys, name)
    head = [*keys, "n", "micro P", "micro R", "micro F1", "macro F1", "s/sentence"]
    body = []
    for row in rows:
        body.append(
            [
                *(f"{row[k]:g}" if isinstance(row[k], float) else str(row[k]) for k in keys),
                str(row["n"]),
                _fmt_ci(row, "micro_precision"),
                _fmt_ci(row, "micro_recall"),
                _fmt_ci(row, "micro_f1"),
                _fmt_ci(row, "macro_f1"),
                f"{row['seconds']:.3f}",
            ]
        )
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(r) + " |" for r in body]
        return "\n".join(lines)
    widths = [max(len(x) for x in col) for col in zip(head, *body, strict=True)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join(fmt.format(*r).rstrip() for r in [head, *body])


def summary_table(records: Sequence[dict[str, Any]], markdown: bool = False) -> str:
    """Per grammar, variant, beta and d, over all sentence lengths: the run's summary.

    A variant run in more than one order (or in another than its own) gets a row per order
    (see :func:`aggregate`).
    """
    keys = ("grammar", "variant", "beta", "d")
    return format_table(aggregate(records, keys), keys, markdown=markdown)

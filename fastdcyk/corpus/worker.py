"""A corpus's lines parsed: what runs in each worker (a process of a pool, a Dask worker, or
the caller's own process).

:func:`parse_job` parses a :class:`Job`'s lines with :func:`fastdcyk.dcyk` and gives each its
record (:data:`fastdcyk.corpus.log.FIELDS`): the status, the tree in the grammar as written,
d, the certificate's verdict, a PCFG's log probability, the seconds, and why a line has no
tree. With ``d="auto"`` it parses within :func:`fastdcyk.engine.auto.sharing` of the job's
table, and returns what its sentences showed, so that the parent's table (the d each length
parses fastest and sure at) learns from every worker.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from typing import Any

from fastdcyk.cfg.grammar import Grammar
from fastdcyk.cfg.trees import Tree
from fastdcyk.corpus.lines import Line
from fastdcyk.engine import auto
from fastdcyk.engine.api import dcyk

__all__ = ["Job", "parse_job", "record"]


@dataclass(frozen=True)
class Job:
    """Lines to parse, and the table of the d to start them at (None: d is not chosen)."""

    lines: tuple[Line, ...]
    table: auto.Table | None = None


#: The grammar and options of the run, set once in a worker process (:func:`setup`).
_RUN: dict[str, Any] = {}


def setup(grammar: Grammar, options: dict[str, Any]) -> None:
    """Keep the run's grammar and :func:`fastdcyk.dcyk` options in this process."""
    _RUN["grammar"], _RUN["options"] = grammar, options


def parse_job(
    job: Job, grammar: Grammar | None = None, options: dict[str, Any] | None = None
) -> tuple[list[dict[str, Any]], list[auto.Seen]]:
    """The records of a job's lines, in its order, and what its sentences showed the table.

    ``grammar`` and ``options``: the run's, where this process was not :func:`setup`.
    """
    grammar = _RUN["grammar"] if grammar is None else grammar
    options = _RUN["options"] if options is None else options
    if job.table is None:
        return [record(line, grammar, options) for line in job.lines], []
    with auto.sharing(job.table) as seen:
        out = [record(line, grammar, options) for line in job.lines]
    return out, list(seen)


def _with_words(tree: Tree, words: tuple[str, ...]) -> Tree:
    """``tree`` with its leaves replaced, in order, by ``words`` (a sentence parsed as its
    unknown-word classes, given back its words)."""
    it = iter(words)

    def walk(node: Tree | str) -> Tree | str:
        if isinstance(node, str):
            return next(it)
        return Tree(node.label, [walk(k) for k in node.children])

    return walk(tree)  # type: ignore[return-value]


def _unknown(grammar: Grammar, words: tuple[str, ...]) -> str | None:
    """The words the grammar lacks, named with their 0-based positions (None: none)."""
    known = grammar.terminal_set
    normal = Grammar.normalize_words(words)
    missing = [(k, w) for k, (w, n) in enumerate(zip(words, normal, strict=True)) if n not in known]
    if not missing:
        return None
    named = []
    for k, w in missing[:10]:
        like = grammar.terminal_like(w)
        named.append(f"{w!r} at {k}" + (f" (did you mean {like!r}?)" if like else ""))
    more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
    return f"not terminals of the grammar: {', '.join(named)}{more} (0-based positions)"


def record(line: Line, grammar: Grammar, options: dict[str, Any]) -> dict[str, Any]:
    """One line's record (:data:`fastdcyk.corpus.log.FIELDS`)."""
    out: dict[str, Any] = {
        "index": line.index,
        "words": None if line.words is None else list(line.words),
    }
    empty = {"tree": None, "d": None, "sure": None, "log_prob": None, "seconds": 0.0}
    if line.message is not None:
        return out | {"status": "bad line"} | empty | {"message": line.message}
    if options.get("unknown", "refuse") == "refuse":
        missing = _unknown(grammar, line.words)
        if missing is not None:
            return out | {"status": "unknown words"} | empty | {"message": missing}
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", auto.DimensionWarning)  # the status says it
            r = dcyk(grammar, line.words, progress=False, **options)
    except MemoryError as exc:
        seconds = round(time.perf_counter() - t0, 6)
        return out | {"status": "too long"} | empty | {"seconds": seconds, "message": str(exc)}
    except ValueError as exc:  # a sentence the options cannot parse (its unknown words' class)
        seconds = round(time.perf_counter() - t0, 6)
        return out | {"status": "unknown words"} | empty | {"seconds": seconds, "message": str(exc)}
    seconds = round(time.perf_counter() - t0, 6)
    tree = r.tree()
    if tree is not None and tuple(r.words) != line.words:  # parsed as unknown-word classes
        tree = _with_words(tree, line.words)
    sure = r.sure
    log_prob = None
    if tree is not None and grammar.is_weighted:
        log_prob = float(r.best_parse().log_prob)
    fields = {
        "tree": None if tree is None else str(tree),
        "d": r.codebook.d,
        "sure": sure,
        "log_prob": log_prob,
        "seconds": seconds,
    }
    if sure is False:
        cells = len(r.suspect_cells())
        message = (
            f"the certificate still flags {cells} cell(s) at d = {r.codebook.d}, the largest d "
            "allowed: the chart (and its tree, if any) may be wrong; a larger max_d may read it"
        )
        return out | {"status": "unsure"} | fields | {"message": message}
    if tree is None:
        start = grammar.start
        message = f"the decoded chart holds no {start} over the whole sentence" + (
            " and the certificate is sure of it: the grammar does not derive it" if sure else ""
        )
        return out | {"status": "no parse"} | fields | {"message": message}
    return out | {"status": "parsed"} | fields

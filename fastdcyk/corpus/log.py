"""A parsed corpus's output: an append-only JSON Lines log, one line per input line.

Its first line is a header (the format, the grammar's hash, the options, the input's hash and
length); then one record per input line, appended as its parse finishes, in any order
(:data:`FIELDS`). It is written as the experiment grid's results file is
(:mod:`fastdcyk.logfile`: one run at a time, whole lines flushed and ``fsync``-ed, a torn last
line cut before a run appends again), so a run killed at any moment loses at most the lines
being parsed, and a resumed run parses exactly the lines the log lacks. When every line is
there the log is rewritten in input order (:func:`sort`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fastdcyk import logfile

__all__ = [
    "FIELDS",
    "FORMAT",
    "STATUSES",
    "VERSION",
    "CorpusLog",
    "CorpusLogError",
    "open_log",
    "read_log",
    "sort",
]

FORMAT = "fastdcyk-corpus"
VERSION = 1

#: The statuses of a line: a tree found and sure; the decoded chart admits no tree (and the
#: certificate is sure of it: the sentence is outside the grammar's language); words the
#: grammar lacks; not sure at the largest d; too long for the memory; a line that is not a
#: sentence (empty, or not the encoding's text).
STATUSES = ("parsed", "no parse", "unknown words", "unsure", "too long", "bad line")

#: A record's fields.
FIELDS = ("index", "words", "status", "tree", "d", "sure", "log_prob", "seconds", "message")


class CorpusLogError(ValueError):
    """An output file that cannot be used: not a corpus log, corrupt, of another grammar,
    options or input than the run's, locked by another run, or written by a newer
    fastdcyk."""


@dataclass
class CorpusLog:
    """A log as opened for a run: its header, the records it holds, the bytes of a torn
    last line cut."""

    path: Path
    header: dict[str, Any]
    records: list[dict[str, Any]]
    torn_bytes: int = 0

    @property
    def done(self) -> set[int]:
        """The indices of the input lines it holds."""
        return {r["index"] for r in self.records}


def header(settings: dict[str, Any]) -> dict[str, Any]:
    """The header of a new log: :data:`FORMAT`, :data:`VERSION`, the version of fastdcyk,
    the time, and ``settings`` (the grammar's hash, the options, the input's hash and
    length), which a resumed run must match."""
    from fastdcyk import __version__

    return {
        "format": FORMAT,
        "format_version": VERSION,
        "fastdcyk": __version__,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        **settings,
    }


def _parse(path: Path) -> tuple[dict[str, Any] | None, list[dict[str, Any]], logfile.Scan]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CorpusLogError(f"cannot read {str(path)!r}: {exc}") from exc

    def corrupt(line_no: int, line: bytes, read: int) -> CorpusLogError:
        if not read:
            return CorpusLogError(f"{str(path)!r} is not a fastdcyk corpus log")
        return CorpusLogError(
            f"{str(path)!r}, line {line_no}: not a JSON object (the file is corrupt; only its "
            "last line may be torn)"
        )

    found = logfile.scan(data, corrupt)
    if not found.objects:
        return None, [], found
    (_, head), *rest = found.objects
    if head.get("format") != FORMAT:
        raise CorpusLogError(
            f"{str(path)!r} is not a fastdcyk corpus log (its first line has no "
            f'"format": "{FORMAT}" header): give another output file'
        )
    version = head.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version > VERSION:
        raise CorpusLogError(
            f"{str(path)!r} was written in corpus format version {version!r}; this fastdcyk "
            f"reads versions up to {VERSION}: upgrade fastdcyk to resume it"
        )
    records = []
    for line_no, obj in rest:
        if not isinstance(obj.get("index"), int) or obj.get("status") not in STATUSES:
            raise CorpusLogError(
                f"{str(path)!r}, line {line_no}: not a corpus record (no index or status): "
                "the file was edited or is corrupt"
            )
        records.append(obj)
    return head, records, found


def read_log(path: str | os.PathLike[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The header and records of a corpus log, in file order (a torn last line left out).

    Raises
    ------
    CorpusLogError
        When the file is not a corpus log, is corrupt before its last line, or is empty.
    """
    head, records, _ = _parse(Path(path))
    if head is None:
        raise CorpusLogError(f"{str(path)!r} holds no corpus log header (empty or torn)")
    return head, records


def open_log(path: Path, settings: dict[str, Any], resume: bool) -> CorpusLog:
    """The log of a run, its lock held by the caller: new (a header written), or resumed.

    Raises
    ------
    CorpusLogError
        When the file holds a log and ``resume`` is False (nothing is written over it), or
        it is resumed with other settings than the run's (naming those that differ), or it
        is not a corpus log.
    """
    if path.exists() and path.stat().st_size > 0:
        if not resume:
            raise CorpusLogError(
                f"{str(path)!r} exists and is not empty: resume the run that wrote it "
                "(resume=True; --resume), or give another output file. Nothing was written"
            )
        head, records, found = _parse(path)
        if head is not None:
            differ = [k for k in settings if head.get(k) != settings[k]]
            if differ:
                raise CorpusLogError(
                    f"{str(path)!r} was written by a run of another "
                    f"{', '.join(k.replace('_', ' ') for k in differ)} than this one: resume "
                    "it with the same grammar, options and input, or give another output file"
                )
            torn = logfile.cut(path, found.good_bytes) if found.torn else 0
            return CorpusLog(path, head, records, torn)
    path.parent.mkdir(parents=True, exist_ok=True)
    head = header(settings)
    logfile.write_all(path, (json.dumps(head, sort_keys=True) + "\n").encode("utf-8"))
    return CorpusLog(path, head, [])


def sort(path: Path, head: dict[str, Any], records: list[dict[str, Any]]) -> None:
    """Rewrite a complete log in input order (one record per index, the first written kept):
    written beside it and moved over it, so that a kill leaves one or the other whole."""
    seen: dict[int, dict[str, Any]] = {}
    for r in records:
        seen.setdefault(r["index"], r)
    lines = [json.dumps(head, sort_keys=True)]
    lines += [json.dumps(seen[k], separators=(",", ":"), ensure_ascii=False) for k in sorted(seen)]
    tmp = path.with_name(path.name + ".sorting")
    logfile.write_all(tmp, ("\n".join(lines) + "\n").encode("utf-8"))
    os.replace(tmp, path)

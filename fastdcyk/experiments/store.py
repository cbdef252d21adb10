"""The results file: a JSON Lines file written crash-safely by one run at a time.

See the package's docstring (:mod:`fastdcyk.experiments`) for its format and guarantees.
Here are the file's format (its header, its format version, gzip for reading), its lock,
the appends (flush and fsync), the repair of a torn last line, the errors, and the reading
of one or more files (:func:`read_results`, :func:`load_records`). What a record's fields
mean, what identifies it and whether it lies in a grid are
:mod:`fastdcyk.experiments.records`'s.
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fastdcyk import logfile
from fastdcyk.checks import check_path
from fastdcyk.experiments.config import ExperimentConfig, _canonical
from fastdcyk.experiments.mismatch import API_OUT as _API_OUT
from fastdcyk.experiments.mismatch import CLI_OUT as _CLI_OUT
from fastdcyk.experiments.mismatch import mismatch_message as _mismatch_message
from fastdcyk.experiments.records import (
    complete_record,
    grid_mismatch,
    header_settings,
    record_fault,
    record_key,
)

RESULTS_FORMAT = "fastdcyk-results"

#: The results format this code writes (the header's ``format_version``); it reads every
#: version up to this one and refuses a newer one (:class:`ResultsFileError`: upgrade).
RESULTS_VERSION = 1


class ResultsFileError(ValueError):
    """A results file that cannot be read or used (not a results file, corrupt).

    Attributes
    ----------
    cli_message : str
        The message as ``fastdcyk experiment`` words it (its options, such as ``--out``,
        in place of the arguments of :func:`~fastdcyk.experiments.run_experiment`); the
        same as ``str(error)`` for most errors.
    """

    def __init__(self, message: str = "", *, cli_message: str | None = None) -> None:
        super().__init__(message)
        self.cli_message = message if cli_message is None else cli_message


class ConfigMismatchError(ResultsFileError):
    """A results file written for another configuration than the one being run.

    The message names what differs (the fields of the configuration, or the grammar whose
    text changed) and what to do.
    """


class ResultsLockedError(ResultsFileError):
    """A results file that another run (another process, or thread) is writing."""


class ResultsWriteError(OSError):
    """Writing records failed (a full disk, for instance); what was written is kept."""


class ResultsWarning(UserWarning):
    """Records of a results file that were left out as it was read: records outside the
    grid of the file's own configuration (:func:`load_records`). The file is not changed."""


def _header(
    config: ExperimentConfig, config_hash: str, grammar_sha256: dict[str, str] | None = None
) -> dict[str, Any]:
    """A new file's header; ``grammar_sha256``: the sha256 of each grammar's text
    (:meth:`ExperimentConfig.grammar_hashes`), so that a refusal can name a grammar that
    changed (headers of older files lack it)."""
    from fastdcyk import __version__

    header = {
        "format": RESULTS_FORMAT,
        "format_version": RESULTS_VERSION,
        "config_hash": config_hash,
        "config": config.to_dict(),
    }
    if grammar_sha256 is not None:
        header["grammar_sha256"] = dict(grammar_sha256)
    header["fastdcyk"] = __version__
    header["created"] = datetime.now(UTC).isoformat(timespec="seconds")
    return header


@dataclass
class _Parsed:
    header: dict[str, Any] | None
    records: list[dict[str, Any]]
    good_bytes: int  # length of the valid prefix (header and complete records)
    torn: bool  # a torn last line follows the valid prefix
    size: int = 0  # bytes of the (decompressed) file


#: The first bytes of a gzip stream: results files kept compressed (read, never appended to).
_GZIP_MAGIC = b"\x1f\x8b"


def _is_gzip(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(2) == _GZIP_MAGIC
    except OSError:
        return False


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


def _parse_file(path: Path) -> _Parsed:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ResultsFileError(f"cannot read results file {str(path)!r}: {exc}") from exc
    if data[:2] == _GZIP_MAGIC:  # a results file kept compressed, as docs/lab/records/ keeps them
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise ResultsFileError(
                f"{str(path)!r} is a damaged gzip file ({exc}); gunzip it to see what it holds"
            ) from None
    parsed = _parse_bytes(path, data)
    parsed.size = len(data)
    return parsed


def _parse_bytes(path: Path, data: bytes) -> _Parsed:
    def corrupt(line_no: int, line: bytes, read: int) -> ResultsFileError:
        if not read and not line.startswith(b'{"config"'):
            return ResultsFileError(
                f"{str(path)!r} is not a fastdcyk results file (its first line is not a "
                "results header)"
            )
        return ResultsFileError(
            f"{str(path)!r}, line {line_no}: not a JSON object (the file is corrupt; only its "
            "last line may be torn)"
        )

    found = logfile.scan(data, corrupt)
    if found.torn and not found.objects and not data.lstrip().startswith(b'{"config"'):
        raise corrupt(1, data.lstrip(), 0)
    header = None
    settings: dict[str, Any] = {}
    records: list[dict[str, Any]] = []
    for line_no, obj in found.objects:
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
            try:
                ExperimentConfig.from_dict(obj["config"])
            except (ValueError, TypeError) as exc:
                raise ResultsFileError(
                    f"{str(path)!r}: its header's configuration is not valid ({exc}): the "
                    "file was edited or is corrupt"
                ) from None
            settings = header_settings(obj["config"])
            header = obj
        else:
            fault = record_fault(obj)
            if fault:
                raise ResultsFileError(f"{str(path)!r}, line {line_no}: {fault}")
            records.append(complete_record(obj, settings))
    return _Parsed(header, records, found.good_bytes, found.torn)


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
    TypeError
        When ``path`` is not a path.
    """
    path = check_path("path", path)
    parsed = _parse_file(path)
    if parsed.header is None:
        raise ResultsFileError(f"{str(path)!r} holds no results header (empty or torn file)")
    torn = parsed.size - parsed.good_bytes if parsed.torn else 0
    return ResultsFile(path, parsed.header, parsed.records, torn)


def results_lock(path: str | os.PathLike[str]) -> logfile.Lock:
    """The one-writer lock of a results file (:class:`fastdcyk.logfile.Lock`): entering it
    raises :class:`ResultsLockedError` while another run writes the file."""

    def locked(where: str) -> ResultsLockedError:
        def message(out: str) -> str:
            return (
                f"{where!r} is being written by another run (it holds the file's lock); "
                "two runs on one file would both do every task and write every record "
                "twice: wait for that run to end (or stop it), or write to another file "
                f"({out}). The file was not changed"
            )

        return ResultsLockedError(message(_API_OUT), cli_message=message(_CLI_OUT))

    return logfile.Lock(path, locked)


def open_results(
    path: str | os.PathLike[str],
    config: ExperimentConfig,
    config_hash: str,
    grammars: dict[str, Any] | None = None,
) -> ResultsFile:
    """Create the results file of ``config``, or open it to resume.

    A missing or empty file (or one holding only a torn header) gets a new header, which
    keeps the sha256 of each grammar's text beside the configuration's hash. An existing
    one must carry ``config_hash``; a torn last line is cut off (truncated) so that
    appending continues on a clean line. The file's lock is held meanwhile (see
    :func:`run_experiment`), so a file that another run is writing is left alone.

    Parameters
    ----------
    path : path
    config : ExperimentConfig
    config_hash : str
        ``config.hash()``.
    grammars : dict, optional
        The grammars of ``config`` (:meth:`ExperimentConfig.load_grammars`; loaded when
        omitted), whose text the header's grammar hashes are of.

    Raises
    ------
    ResultsLockedError
        When another run is writing the file.
    ConfigMismatchError
        When the file was written for another configuration: the message names the file,
        both hashes, what differs (the fields of the configuration, or the grammar whose
        text changed) and what to do.
    ResultsFileError
        When the file is not a results file or is corrupt.
    """
    path = Path(path)
    refuse_compressed(path)
    with results_lock(path):
        return _open_results(path, config, config_hash, grammars)


def refuse_compressed(path: Path) -> None:
    """Refuse to write to a gzip file, or to a new file named ``*.gz``, before any lock or
    file is made: a run appends to a plain results file (compressed ones are read only).

    Raises
    ------
    ResultsFileError
        Saying how to resume from a compressed file.
    """
    if path.suffix == ".gz" or _is_gzip(path):

        def compressed(out: str) -> str:
            return (
                f"{str(path)!r} is (or is named as) a gzip file: a run appends to a plain "
                "results file. Write to a .jsonl (to resume a compressed file, 'gunzip -k' "
                f"it and name the .jsonl with {out}); fastdcyk plot reads compressed files as "
                "they are"
            )

        raise ResultsFileError(compressed(_API_OUT), cli_message=compressed(_CLI_OUT))


def _grammar_hashes(
    config: ExperimentConfig, grammars: dict[str, Any] | None
) -> dict[str, str] | None:
    """The sha256 of each grammar's text (None when a grammar cannot be loaded)."""
    try:
        return config.grammar_hashes(grammars)
    except (ValueError, OSError, KeyError):  # GrammarError is a ValueError
        return None


def _open_results(
    path: Path,
    config: ExperimentConfig,
    config_hash: str,
    grammars: dict[str, Any] | None = None,
) -> ResultsFile:
    if path.exists() and path.stat().st_size > 0:
        parsed = _parse_file(path)
        if parsed.header is not None:
            found = parsed.header.get("config_hash")
            if found != config_hash:
                hashes = _grammar_hashes(config, grammars)
                api, cli = (
                    _mismatch_message(path, parsed.header, config, config_hash, hashes, flag)
                    for flag in (False, True)
                )
                raise ConfigMismatchError(api, cli_message=cli)
            if _canonical(parsed.header["config"]) != _canonical(config.to_dict()):
                # the hash is this run's, the configuration is not: the header was edited
                # by hand, and records of the file's real configuration would be mixed
                changed = sorted(
                    k
                    for k in {*parsed.header["config"], *config.to_dict()}
                    if parsed.header["config"].get(k) != config.to_dict().get(k)
                )
                message = (
                    f"{str(path)!r}: its header's configuration does not match its hash "
                    f"(it differs from the configuration of that hash in {changed}): the "
                    "header was edited. Its records cannot be trusted to belong to either "
                    "configuration; restore the header or write to a new file "
                )
                raise ResultsFileError(
                    message + f"({_API_OUT})", cli_message=message + f"({_CLI_OUT})"
                )
            torn = logfile.cut(path, parsed.good_bytes) if parsed.torn else 0
            return ResultsFile(path, parsed.header, parsed.records, torn)
    path.parent.mkdir(parents=True, exist_ok=True)
    header = _header(config, config_hash, _grammar_hashes(config, grammars))
    logfile.write_all(path, (_canonical(header) + "\n").encode("ascii"))
    return ResultsFile(path, header, [])


def results_appender(path: Path) -> logfile.Appender:
    """Appends records to a results file (:class:`fastdcyk.logfile.Appender`); a write the
    disk refuses raises :class:`ResultsWriteError`, the records before it kept."""

    def failed(exc: OSError) -> ResultsWriteError:
        return ResultsWriteError(
            exc.errno,
            f"cannot write records to {str(path)!r} ({exc.strerror or exc}); the records "
            "written before are kept: free space (or fix the problem) and rerun the same "
            "command to resume",
        )

    return logfile.Appender(path, failed)


def load_records(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    grid_only: bool = True,
) -> list[dict[str, Any]]:
    """The records of one or more results files, each key once (the first one wins).

    Records of files of other configurations (another threshold, dtype, codebooks or
    sentence sample: see :func:`record_key`) have other keys and are all kept; a record
    that two files share (the same grid cell, settings and sentence: a resumed or copied
    run) is kept once. A record outside the grid of its own file's configuration (a d,
    grammar, variant, beta or seed that the header does not name, or an index beyond its
    sample: :func:`grid_mismatch`; a file edited or joined by hand) is left out, with a
    :class:`ResultsWarning` that names the file, how many records and why; the file is
    not changed.

    Parameters
    ----------
    paths : path or sequence of paths
    grid_only : bool, default True
        Leave out the records outside their file's grid (False: keep them, unwarned).

    Returns
    -------
    list of dict
        As :func:`read_results` gives them, in file order.

    Raises
    ------
    ResultsFileError
        As :func:`read_results`.
    TypeError
        When ``paths`` is not a path or a sequence of paths.

    Warns
    -----
    ResultsWarning
        Once per file that holds records outside its grid (``grid_only``).
    """
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    if not isinstance(paths, Sequence):
        raise TypeError(f"paths must be a path or a sequence of paths, got {type(paths).__name__}")
    for k, p in enumerate(paths):
        check_path(f"paths[{k}]", p)
    seen: set[tuple] = set()
    out = []
    for p in paths:
        results = read_results(p)
        records = results.records
        if grid_only:
            records = _in_grid(results)
        for r in records:
            k = record_key(r)
            if k not in seen:
                seen.add(k)
                out.append(r)
    return out


def _in_grid(results: ResultsFile) -> list[dict[str, Any]]:
    """The records of ``results`` in its configuration's grid; warns of the others."""
    import warnings

    config = results.config
    kept, reasons = [], []
    for r in results.records:
        why = grid_mismatch(r, config)
        if why is None:
            kept.append(r)
        else:
            reasons.append(why)
    if reasons:
        n = len(reasons)
        first = reasons[0]
        more = "" if all(why == first for why in reasons) else ", among others"
        warnings.warn(
            f"{str(results.path)!r}: {n} record{'s' if n > 1 else ''} outside the grid of "
            f"the file's configuration left out ({first}{more}): no run of that "
            "configuration wrote them (was the file edited, or joined with another, by "
            "hand?). The file is unchanged; to draw those records, move them to a results "
            "file of their own configuration",
            ResultsWarning,
            stacklevel=3,
        )
    return kept

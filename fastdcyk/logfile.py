"""An append-only JSON Lines log written crash-safely by one run at a time.

The experiment grid's results file (:mod:`fastdcyk.experiments.store`) and a parsed corpus's
output (:mod:`fastdcyk.corpus`) are such logs: a header line, then one JSON object a line,
appended as work finishes. What makes them safe to kill at any moment and resume:

- :class:`Lock`: one run at a time writes a file (an exclusive ``flock`` on the file itself,
  which the kernel drops when the process ends, however it ends);
- :class:`Appender`: whole lines, flushed and ``fsync``-ed, a write that fails cut back;
- :func:`scan`: reads the lines back, and tells a torn last line (a write cut short by a
  kill, a crash or a full disk) from a corrupt file; :func:`cut` drops the torn line before
  a run appends again.

What a line means, and what a header must hold, is each log's own.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Appender", "Lock", "Scan", "cut", "scan", "write_all"]

#: The files this process holds the lock of: (device, inode) -> the holding thread.
_HELD: dict[tuple[int, int], int] = {}
_HELD_GUARD = threading.Lock()


class Lock:
    """The one-writer lock of a log file, as a context manager.

    An exclusive, non-blocking ``flock`` on the file itself (created empty when absent, with
    its folder), held from ``__enter__`` to ``__exit__``. The kernel drops it when the process
    ends, however it ends, so nothing stale is left behind. A thread that already holds the
    lock of a file may enter it again. On systems without ``fcntl`` (Windows) no lock is
    taken; on a file system without locks a RuntimeWarning says so and no lock is taken.

    Parameters
    ----------
    path : path
    locked : callable
        ``locked(path) -> exception``: what ``__enter__`` raises when another process, or
        another thread of this one, holds the lock (the log's own words).
    """

    def __init__(self, path: str | os.PathLike[str], locked: Callable[[str], BaseException]):
        self.path = Path(path)
        self._locked = locked
        self._fd: int | None = None
        self._key: tuple[int, int] | None = None

    def __enter__(self) -> Lock:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            return self
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDONLY | os.O_CREAT, 0o666)
        try:
            st = os.fstat(fd)
            key = (st.st_dev, st.st_ino)
            with _HELD_GUARD:
                mine = _HELD.get(key) == threading.get_ident()
            if mine:  # this thread holds it already: nothing to take
                os.close(fd)
                return self
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise self._locked(str(self.path)) from None
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
        with _HELD_GUARD:
            _HELD[key] = threading.get_ident()
        self._fd, self._key = fd, key
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is None:
            return
        with _HELD_GUARD:
            _HELD.pop(self._key, None)
        try:
            os.close(self._fd)  # closing the last descriptor of the file releases the lock
        finally:
            self._fd = self._key = None


class Appender:
    """Appends JSON objects to a log, a line each, with flush and ``fsync``; on a failed
    write, cuts back the partial line (or leaves it for :func:`cut`, when even that fails).

    Parameters
    ----------
    path : Path
    failed : callable
        ``failed(exc) -> exception``: what :meth:`write` raises when the disk refuses a
        write (``exc`` the OSError; the log's own words).
    ensure_ascii : bool, default True
        Write non-ASCII characters as JSON escapes (False: as UTF-8).
    """

    def __init__(
        self,
        path: Path,
        failed: Callable[[OSError], BaseException],
        *,
        ensure_ascii: bool = True,
    ) -> None:
        self.path = path
        self._failed = failed
        self._ascii = ensure_ascii
        self.fh = open(path, "ab")  # noqa: SIM115 - closed by close()

    def write(self, objects: list[dict[str, Any]]) -> None:
        """Append ``objects``, whole lines, all or none of them."""
        data = "".join(
            json.dumps(r, separators=(",", ":"), ensure_ascii=self._ascii) + "\n" for r in objects
        )
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
            raise self._failed(exc) from exc

    def close(self) -> None:
        try:
            self.fh.close()
        except OSError:
            pass


@dataclass
class Scan:
    """What :func:`scan` read of a log.

    Attributes
    ----------
    objects : list of (int, dict)
        Each complete line's object, with its line number (from 1).
    good_bytes : int
        The length of the valid prefix (every complete line).
    torn : bool
        Whether a torn last line follows the valid prefix.
    """

    objects: list[tuple[int, dict[str, Any]]]
    good_bytes: int
    torn: bool


def scan(data: bytes, corrupt: Callable[[int, bytes, int], BaseException]) -> Scan:
    """The lines of a log's bytes, each a JSON object; blank lines skipped.

    The last line may be torn (no newline, or not a whole JSON object): a write cut short.
    Any other line that is not a JSON object means the file is corrupt: ``corrupt(line
    number, the line, the objects read before it)`` is raised.
    """
    objects: list[tuple[int, dict[str, Any]]] = []
    pos = 0
    line_no = 0
    while pos < len(data):
        end = data.find(b"\n", pos)
        last = end < 0 or end == len(data) - 1
        line = data[pos:] if end < 0 else data[pos:end]
        line_no += 1
        if end >= 0 and not line.strip():  # a blank line (an editor's): nothing to read
            pos = end + 1
            continue
        try:
            if end < 0:
                raise ValueError("no newline")
            obj = json.loads(line)
            if not isinstance(obj, dict):
                raise ValueError("not an object")
        except ValueError:
            if last:
                return Scan(objects, pos, True)
            raise corrupt(line_no, line, len(objects)) from None
        objects.append((line_no, obj))
        pos = end + 1
    return Scan(objects, pos, False)


def cut(path: Path, good_bytes: int) -> int:
    """Cut a torn last line off the file at ``path`` (keeping its first ``good_bytes``);
    the bytes cut."""
    torn = path.stat().st_size - good_bytes
    with open(path, "r+b") as fh:
        fh.truncate(good_bytes)
        fh.flush()
        os.fsync(fh.fileno())
    return torn


def write_all(path: Path, data: bytes, mode: str = "wb") -> None:
    """Write ``data`` to ``path`` (``mode`` "wb" or "ab"), flushed and ``fsync``-ed."""
    with open(path, mode) as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())

"""How much memory this process may still allocate (read from the OS), and byte counts in words.

Every memory check of fastdcyk (a codebook's draws, a parse's accumulators, an experiment's
workers) asks :func:`available_memory`; tests replace it here.
"""

from __future__ import annotations

import os
import sys

__all__ = [
    "available_memory",
    "format_bytes",
    "limit_headroom",
    "proc_status_bytes",
    "set_share",
]

#: The share of the system's available memory this process counts on: 1, or 1 / workers in
#: a worker of a pool whose processes share the machine (:func:`set_share`).
_SHARE = [1.0]


def set_share(fraction: float) -> None:
    """Count on ``fraction`` of the system's available memory from now on (a worker of a
    pool of ``1 / fraction`` processes, so that their memory checks do not each count on
    all of it)."""
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"the memory share must be in (0, 1], got {fraction!r}")
    _SHARE[0] = float(fraction)


def format_bytes(n: float) -> str:
    """``n`` bytes in GiB (or TiB, PiB, EiB for the huge figures of an impossible d)."""
    for unit, shift in (("EiB", 60), ("PiB", 50), ("TiB", 40)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.2f} {unit}"
    return f"{n / 2**30:.2f} GiB"


def proc_status_bytes(*fields: str) -> dict[str, int]:
    """Fields of /proc/self/status given in kB (VmSize, VmData), in bytes; {} off Linux."""
    out: dict[str, int] = {}
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                name, _, rest = line.partition(":")
                if name in fields:
                    out[name] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return out


def limit_headroom() -> int | None:
    """Bytes left under the process's address-space and data limits (``ulimit -v``,
    ``ulimit -d``), or None when neither is set (or they cannot be read)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import resource
    except ImportError:  # pragma: no cover - Linux always has it
        return None
    limits = []
    for name, field in (("RLIMIT_AS", "VmSize"), ("RLIMIT_DATA", "VmData")):
        which = getattr(resource, name, None)
        if which is None:
            continue
        soft, _ = resource.getrlimit(which)
        if soft != resource.RLIM_INFINITY and soft >= 0:
            limits.append((soft, field))
    if not limits:
        return None
    used = proc_status_bytes(*(field for _, field in limits))
    room = [max(0, soft - used[field]) for soft, field in limits if field in used]
    return min(room) if room else None


def available_memory() -> int | None:
    """Bytes this process may still allocate, or None when unknown.

    The system's available memory (``MemAvailable`` of /proc/meminfo, or the free pages),
    times this process's share of it (:func:`set_share`; 1 by default), bounded by what the
    process's limits leave (``ulimit -v``, ``ulimit -d``).
    """
    avail = None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    if avail is None:
        try:
            avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            avail = None
    if avail is not None and _SHARE[0] < 1.0:
        avail = int(avail * _SHARE[0])
    room = limit_headroom()
    if room is not None:
        avail = room if avail is None else min(avail, room)
    return avail

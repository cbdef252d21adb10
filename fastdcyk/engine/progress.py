"""Progress bars for long computations (tqdm.auto: a widget in notebooks).

tqdm's convention: a library call shows nothing unless asked (``progress=True``, or a delay
in seconds) or, by default (``progress=None``), when its standard error is a terminal, and
then only once the work has run :data:`AUTO_DELAY` seconds.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np

__all__ = ["AUTO_DELAY", "check_progress", "progress_bar", "stderr_is_terminal"]

#: With ``progress=None`` on a terminal, a bar shows once the work has run this long.
AUTO_DELAY = 2.0


def stderr_is_terminal() -> bool:
    """Whether the standard error is attached to a terminal (where bars and notes go)."""
    try:
        return bool(sys.stderr.isatty())
    except (AttributeError, ValueError):  # replaced or closed
        return False


def check_progress(progress: Any) -> float | None:
    """The bar's delay in seconds (None: no bar) for a ``progress`` argument: True, False,
    a delay in seconds, or None (a bar after :data:`AUTO_DELAY` seconds on a terminal, none
    elsewhere); ValueError for anything else."""
    if progress is None:
        return AUTO_DELAY if stderr_is_terminal() else None
    if progress is False:
        return None
    if progress is True:
        return 0.0
    if (
        isinstance(progress, int | float | np.integer | np.floating)
        and math.isfinite(progress)
        and progress >= 0
    ):
        return float(progress)
    raise ValueError(f"progress must be True, False or a delay in seconds >= 0, got {progress!r}")


def progress_bar(delay: float | None, total: int, desc: str, unit: str = "cell") -> Any:
    """A bar over ``total`` units that shows once ``delay`` seconds have passed (None for
    no bar, then None is returned)."""
    if delay is None:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit, delay=delay, leave=False)

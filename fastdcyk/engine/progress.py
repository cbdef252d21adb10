"""Progress bars for long computations (tqdm.auto: a widget in notebooks)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["check_progress", "progress_bar"]


def check_progress(progress: Any) -> float | None:
    """The bar's delay in seconds (None: no bar) for a ``progress`` argument: True, False
    or a delay in seconds; ValueError for anything else."""
    if progress is False or progress is None:
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

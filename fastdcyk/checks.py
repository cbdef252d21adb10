"""The checks of arguments that the whole package shares.

Each returns the value it checked, converted where that helps (an int, a
:class:`~pathlib.Path`, a :class:`numpy.dtype`), or raises the error a user sees, naming the
argument and what it must be: :func:`check_choice` (one of some values), :func:`check_int`
(an integer from a bound), :func:`check_dim` (the dimension d), :func:`check_dtype`
(:data:`DTYPES`), :func:`check_path` (a path) and :func:`check_flag` (True or False). The
checks of one option's value (its range, its default) are declared with the option, in
:mod:`fastdcyk.options`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "DTYPES",
    "check_choice",
    "check_dim",
    "check_dtype",
    "check_flag",
    "check_int",
    "check_path",
]

#: The dtypes fastdcyk computes in (the accumulators', the codebook's): :func:`check_dtype`.
DTYPES = ("float32", "float64")


def check_choice(name: str, value: Any, allowed: Any, *, none: str | None = None) -> Any:
    """``value`` when it is one of ``allowed``; else a ValueError naming the choices.

    ``none``: what None means, when None is allowed too (it is then returned as is).
    """
    if value is None and none is not None:
        return None
    if isinstance(value, str | int | float | bool | type(None)) and value in tuple(allowed):
        return value
    also = f" (or None: {none})" if none is not None else ""
    raise ValueError(f"unknown {name} {value!r}: choose one of {tuple(allowed)}{also}")


def check_int(name: str, value: Any, low: int) -> int:
    """``value`` as an int when it is an integer >= ``low`` (bools refused)."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def check_dim(d: Any) -> int:
    """The dimension d: an integer >= 2."""
    if isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 2:
        raise ValueError(f"the dimension d must be an integer >= 2, got {d!r}")
    return int(d)


def check_dtype(dtype: Any) -> np.dtype:
    """float32 or float64 (None: float32)."""
    try:
        dt = np.dtype("float32" if dtype is None else dtype)
    except TypeError:
        dt = None
    if dt is None or dt.name not in DTYPES:
        raise ValueError(f"dtype must be 'float32' or 'float64', got {dtype!r}")
    return dt


def check_path(name: str, value: Any) -> Path:
    """``value`` as a :class:`~pathlib.Path` when it is a str or path-like (not empty); else
    a TypeError (a ValueError for ``""``) naming ``name``."""
    if not isinstance(value, str | os.PathLike):
        raise TypeError(f"{name} must be a path (a str or path-like), got {type(value).__name__}")
    if os.fspath(value) == "":
        raise ValueError(f"{name} is empty: give a file's path")
    return Path(value)


def check_flag(name: str, value: Any) -> bool:
    """``value`` as a bool when it is True or False (numpy's too)."""
    if not isinstance(value, bool | np.bool_):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)

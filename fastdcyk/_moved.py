"""Forwarding for modules that moved into the subpackages (a warning on first use).

The old flat modules (``fastdcyk.grammar``, ``fastdcyk.codebook``, ...) are kept as modules
whose attributes forward to the new ones: importing them is silent (so that the names
:mod:`fastdcyk` binds, such as the function ``fastdcyk.decode``, are never replaced by a
module), and reading a name from them warns once with :class:`DeprecationWarning`, naming
the new module.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["forward"]


def forward(old: str, new: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``old`` that warns and returns ``new``'s attribute."""

    def __getattr__(name: str) -> Any:  # noqa: N807 - a module's __getattr__
        if name.startswith("__"):
            raise AttributeError(name)
        target = importlib.import_module(new)
        value = getattr(target, name)  # AttributeError as from the new module
        warnings.warn(
            f"{old} moved to {new}: import {name} from {new} (or from fastdcyk); "
            f"the old module will be removed in a future release",
            DeprecationWarning,
            stacklevel=2,
        )
        return value

    return __getattr__

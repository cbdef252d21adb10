"""A record's parts, named ``"module:attribute"`` and imported on first use.

The registries (:mod:`fastdcyk.registry.modes`, :mod:`fastdcyk.registry.backends`) name
the code of each mode and backend instead of importing it, so that they import nothing of
fastdcyk and a part that needs PyTorch loads only when it is used.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

__all__ = ["Part", "load"]

#: A part of a record: the object itself, or its ``"module:attribute"`` name.
Part = Any


def load(ref: Part, package: str) -> Any:
    """The object ``ref`` names (``ref`` itself when it is not a str): ``"module:attribute"``,
    the module relative to ``package`` when it starts with a dot."""
    if not isinstance(ref, str):
        return ref
    module, _, attribute = ref.partition(":")
    if module.startswith("."):
        module = package + module
    loaded = sys.modules.get(module)  # looked up each time: a test may patch the attribute
    return getattr(loaded if loaded is not None else importlib.import_module(module), attribute)

"""A record's parts, named ``"module:attribute"`` and imported on first use.

The registries (:mod:`fastdcyk.registry.modes`, :mod:`fastdcyk.registry.backends`) name
the code of each mode and backend instead of importing it, so that they import nothing of
fastdcyk and a part that needs PyTorch loads only when it is used.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator, MutableMapping
from contextlib import contextmanager
from typing import Any

__all__ = ["Part", "load", "registered", "take"]

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


def take(table: MutableMapping[str, Any], name: str, kind: str) -> Any:
    """Remove the record ``name`` from a registry's ``table`` and return it (a KeyError
    naming the ``kind`` of record and those registered when there is none)."""
    try:
        return table.pop(name)
    except KeyError:
        raise KeyError(f"no {kind} {name!r} is registered (there are {list(table)})") from None


@contextmanager
def registered(
    record: Any, register: Callable[[Any], Any], unregister: Callable[[str], Any]
) -> Iterator[Any]:
    """``with registered(record, register, unregister):`` the record is registered inside
    the block only."""
    register(record)
    try:
        yield record
    finally:
        unregister(record.name)

"""The D-CYK engine, by role (docs/architecture.md, "The engine, by role"):

- :mod:`.core`: the algorithm written once for every mode and backend (the schedule, the
  rules, the read-back, the certificate, the decoders, the :class:`~.core.plan.Plan` a
  driver takes and the :class:`DCYKResult` it returns);
- :mod:`.backends`: where the arithmetic runs (numpy, torch; the capacity model's
  simulation), each backend's parsers' base class and its driver;
- :mod:`.modes`: the detection modes (entrywise, trace, clean-up, weighted), a folder each
  with its parsers, its capacity simulation, its buffers and its cost model;
- the policies: :mod:`.auto` (d chosen by the certificate), :mod:`.beam` (the weighted
  table's beam), :mod:`.cost`, :mod:`.memory`, :mod:`.progress`;
- the front doors: :mod:`.prepare` (a parse prepared once), :mod:`.api` (:func:`dcyk`,
  :func:`~.api.decode`, :func:`~.api.parse_plan`), :mod:`.batch`
  (:func:`~.batch.dcyk_batch`).

What modes and backends exist is :mod:`fastdcyk.registry`'s, below the engine. The modules
of the engine's root before 0.5 (``fastdcyk.engine.torch_backend``, ``.rules``, ``.plan``,
...) are refused on import until 0.6, with a message naming where each went.
"""

from __future__ import annotations

import importlib.abc
import sys

from fastdcyk.engine.api import dcyk, parse_plan
from fastdcyk.engine.core.result import DCYKResult
from fastdcyk.engine.memory import estimate_memory
from fastdcyk.engine.prepare import default_codebook
from fastdcyk.options import (
    DEFAULT_BETA,
    DEFAULT_THRESHOLD,
    ENCODINGS,
    ORDERS,
    VARIANTS,
    DCYKOptions,
)

__all__ = [
    "DEFAULT_BETA",
    "DEFAULT_THRESHOLD",
    "ENCODINGS",
    "ORDERS",
    "VARIANTS",
    "DCYKOptions",
    "DCYKResult",
    "dcyk",
    "default_codebook",
    "estimate_memory",
    "parse_plan",
]


#: The engine's modules before 0.5, and where they went (refused on import until 0.6).
MOVED = {
    "arrays": "fastdcyk.engine.core.arrays",
    "certificate": "fastdcyk.engine.core.certificate",
    "decode": "fastdcyk.engine.core.decode",
    "deferred": "fastdcyk.engine.core.deferred",
    "numpy_backend": "fastdcyk.engine.backends.numpy (parser: NumpyParser; driver: the parse)",
    "numpy_spectral": "fastdcyk.engine.backends.numpy.spectral",
    "plan": "fastdcyk.engine.prepare (Plan: fastdcyk.engine.core.plan)",
    "readback": "fastdcyk.engine.core.readback",
    "result": "fastdcyk.engine.core.result",
    "rules": "fastdcyk.engine.core.rules",
    "schedule": "fastdcyk.engine.core.schedule",
    "simulation": "fastdcyk.engine.backends.simulation.parser",
    "soft": "fastdcyk.engine.core.soft",
    "splits": "fastdcyk.engine.core.splits",
    "torch_backend": (
        "fastdcyk.engine.backends.torch (driver: parse_tensors, parse; device: check_device; "
        "later: spill_deferred)"
    ),
    "torch_common": "fastdcyk.engine.backends.torch.parser",
    "torch_spectral": "fastdcyk.engine.backends.torch.spectral",
}


class _Moved(importlib.abc.MetaPathFinder):
    """Refuses an import of a module of :data:`MOVED`, naming where it went."""

    def find_spec(self, fullname: str, path: object, target: object = None) -> None:
        package, _, name = fullname.rpartition(".")
        if package == __name__ and name in MOVED:
            raise ImportError(
                f"{fullname} moved after 0.4 (the engine by role, docs/architecture.md): "
                f"import from {MOVED[name]}",
                name=fullname,
            )
        return None


if not any(isinstance(f, _Moved) for f in sys.meta_path):
    sys.meta_path.append(_Moved())

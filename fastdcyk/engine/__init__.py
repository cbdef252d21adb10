"""The D-CYK engine: the schedule, the detection modes, the backends, the rule structure, the
decoder, memory.

- :mod:`.api`: :func:`dcyk` and :func:`~.api.decode`, the front doors, and
  :func:`~.api.parse_plan`, the one place a backend is chosen; :mod:`.batch`:
  :func:`~.batch.dcyk_batch`;
- :mod:`.plan`: a parse prepared once (grammar, words, options, codebook) for any backend;
- :mod:`.schedule`: the order of cells and detections and its bookkeeping, written once;
- :mod:`.modes`: the registry of detection modes (entrywise, trace, clean-up, weighted), each
  a folder with its numpy and torch parsers, its capacity simulation, its buffers and its
  cost model;
- :mod:`.numpy_backend` (with :mod:`.numpy_spectral`, the table as 2-D spectra) and
  :mod:`.torch_backend` (with :mod:`.torch_common` and :mod:`.torch_spectral`): what each
  backend's parsers share, and its driver;
- :mod:`.arrays`: the array operations the shared code needs, per array library;
- :mod:`.rules`: the grammar's rule structure, its spectra and the rule layers;
- :mod:`.readback`: the least-squares read-back of a cell (its solve);
- :mod:`.decode`: reading the table back (the paper's Algorithm 4 and the trace decoder);
- :mod:`.cost`, :mod:`.memory`: what a parse will cost and hold, asked of its mode;
- :mod:`.simulation`: what the capacity model's simulations share;
- :mod:`.result`: :class:`DCYKResult`.

docs/architecture.md shows how they fit together.
"""

from __future__ import annotations

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

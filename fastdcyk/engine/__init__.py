"""The D-CYK engine: the schedule, its backends, the rule structure, the decoder, memory.

- :mod:`.api`: :func:`dcyk` and :func:`~.api.decode`, the front doors, and
  :func:`~.api.parse_plan`, the one place a backend is chosen; :mod:`.batch`:
  :func:`~.batch.dcyk_batch`;
- :mod:`.plan`: a parse prepared once (grammar, words, options, codebook) for any backend;
- :mod:`.schedule`: the order of cells and detections and its bookkeeping, written once;
- :mod:`.numpy_backend` (and :mod:`.numpy_cleanup`, :mod:`.numpy_weighted`: its clean-up
  and weighted-table parsers), :mod:`.torch_backend` (its parsers in :mod:`.torch_trace`,
  :mod:`.torch_cleanup`, :mod:`.torch_dense`, on :mod:`.torch_common`): the arithmetic of
  each backend;
- :mod:`.cost`: what a parse will cost, and the note for a slow one;
- :mod:`.rules`: the grammar's rule structure and the rule spectra;
- :mod:`.decode`: reading the table back (the paper's Algorithm 4 and the trace decoder);
- :mod:`.readback`: the cleanup variant's least-squares read-back of a cell (its solve);
- :mod:`.memory`: the memory a parse needs, checked before it starts;
- :mod:`.simulate`: the capacity model's simulations of the read-backs (no d x d work);
- :mod:`.result`: :class:`DCYKResult`.

docs/architecture.md shows how they fit together.
"""

from __future__ import annotations

from fastdcyk.engine.api import dcyk, parse_plan
from fastdcyk.engine.memory import estimate_memory
from fastdcyk.engine.plan import default_codebook
from fastdcyk.engine.result import DCYKResult
from fastdcyk.options import (
    DEFAULT_BETA,
    DEFAULT_THRESHOLD,
    ENCODINGS,
    GATES,
    ORDERS,
    VARIANTS,
    DCYKOptions,
)

__all__ = [
    "DEFAULT_BETA",
    "DEFAULT_THRESHOLD",
    "ENCODINGS",
    "GATES",
    "ORDERS",
    "VARIANTS",
    "DCYKOptions",
    "DCYKResult",
    "dcyk",
    "default_codebook",
    "estimate_memory",
    "parse_plan",
]

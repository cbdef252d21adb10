"""D-CYK's detection modes, a folder each: how a cell of the table is read and gated.

- :mod:`.entrywise`: the paper's gate, P_A = sigma(M) entry by entry;
- :mod:`.trace`: the trace gate, P_A = sigma(tr(M) / d) I;
- :mod:`.cleanup`: the clean-up gate, the grammar's rules over each cell's read-back;
- :mod:`.weighted`: the clean-up gate writing a PCFG's Viterbi scores into the table.

Each folder holds the mode's parser for each backend that has it (``numpy_parser``,
``torch_parser``), the capacity model's simulation of it (``simulation``), and in its
``__init__`` its d x d buffers and cost model. What each mode is, and which part is where, is
its record in :mod:`fastdcyk.registry.modes`, which every caller asks.
"""

from __future__ import annotations

from typing import Any

from fastdcyk.registry import modes as _registry

#: The names the registry had here before 0.5, refused until 0.6 with a message.
_MOVED = frozenset(_registry.__all__)


class MovedError(ImportError):
    """A name of the registry asked for here, where it was before 0.5. An ImportError, not
    an AttributeError, so that ``from fastdcyk.engine.modes import register`` shows this
    message rather than Python's bare "cannot import name"."""


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        raise MovedError(
            f"fastdcyk.engine.modes.{name} moved to fastdcyk.registry.modes.{name} after 0.4 (the "
            "registry of modes now sits below the engine, beside that of the backends): "
            "import it with 'from fastdcyk.registry import modes'"
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

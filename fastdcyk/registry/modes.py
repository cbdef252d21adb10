"""D-CYK's detection modes: one registry of what each mode is and where its parts live.

A *detection mode* is how D-CYK reads a cell of the table and gates what it writes: the
paper's entrywise gate, the trace gate, the clean-up gate with its least-squares read-back,
and the clean-up gate writing a PCFG's scores (docs/method.md, sections 2, 3, 6, 7 and 10).
The CYK schedule around it is the same for every mode (:mod:`fastdcyk.engine.core.schedule`).
Each mode is one folder of :mod:`fastdcyk.engine.modes`, its parts side by side: its parser
for each backend (:class:`~fastdcyk.engine.core.schedule.CellParser` implementations), the
capacity model's simulation of it, the d x d buffers it holds and the cost model of one parse.

This module is the table of :class:`Mode` records. Whatever depends on the mode asks it:
the options (which gates, read-backs and weights combine, :func:`fastdcyk.options.resolve`;
resolved options carry their mode, :attr:`fastdcyk.options.DCYKOptions.mode`), the plan
(whether a backend has the mode), the backends (the parser), the memory check, the cost
model, the capacity model and the layer. A combination that does not exist is refused here,
with a message that names what does (:func:`select`, :meth:`Mode.parser`).

The parts are named ``"module:attribute"`` (a module relative to :data:`PACKAGE` when it
starts with a dot) and imported on first use: this module imports nothing of fastdcyk but
the registry's own loader, so that :mod:`fastdcyk.options` can consult it, and a mode's
torch parser is imported only with PyTorch. :func:`register` adds a mode (its parts may then
be the objects themselves); docs/architecture.md, "Adding a mode", is a worked example that
a test follows. A backend added later brings its own parsers of the modes
(:attr:`fastdcyk.registry.backends.Backend.parsers`).

Examples
--------
>>> from fastdcyk.registry import modes
>>> [m.name for m in modes.MODES.values()]
['entrywise', 'trace', 'tanh', 'cleanup', 'weighted']
>>> modes.select("cleanup", "table").name
'weighted'
>>> modes.select("trace", "table")
Traceback (most recent call last):
...
ValueError: weights='table' needs gate 'cleanup'; the gates and their weights: entrywise ...
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from fastdcyk.registry import backends, parts
from fastdcyk.registry.parts import Part, load

__all__ = [
    "MODES",
    "Mode",
    "gates",
    "own_readback",
    "reader_of",
    "register",
    "registered",
    "select",
    "unregister",
]

#: Where the built-in modes' parts are: their names start with a dot, relative to it.
PACKAGE = "fastdcyk.engine.modes"


@dataclass(frozen=True)
class Mode:
    """What one detection mode is, and where its parts are.

    Attributes
    ----------
    name : str
        The mode's name (the key of :data:`MODES`).
    gate : str
        The value of the ``gate`` option that selects it (with ``weights``).
    summary : str
        One line: what the mode does (errors and documentation quote it).
    parsers : mapping of str to part
        Per backend (``"numpy"``, ``"torch"``), the class that parses with the mode: a
        :class:`~fastdcyk.engine.core.schedule.CellParser` built as the backend's driver
        builds its parsers. A backend missing here has the mode only where its own record
        brings a parser of it (:attr:`fastdcyk.registry.backends.Backend.parsers`).
    weights : str, default "chart"
        The value of the ``weights`` option that selects it: ``"chart"`` (a PCFG's
        probabilities rank the decoded chart's trees) or ``"table"`` (the mode writes them).
    readbacks : tuple of str, default ("matched",)
        The read-backs the mode has (``readback`` option); the first is its default.
    orders : tuple of str, default ("sequential", "cell")
        The orders of the schedule the mode's parsers follow (``order`` option,
        :mod:`fastdcyk.engine.core.schedule`).
    certified_readbacks : tuple of str, default ()
        The read-backs whose numpy parse gives a certificate per cell
        (:mod:`fastdcyk.engine.core.certificate`; ``DCYKResult.sure``), which ``d="auto"``
        doubles d by.
    simulation : part, optional
        The capacity model's simulation of the mode (:mod:`fastdcyk.capacity`); None: the
        model has none.
    simulated_readbacks : tuple of str, default ()
        The read-backs the simulation models (default: all of ``readbacks``).
    buffers : part, optional
        ``buffers(options, blockwise, slots, kept) -> Held``: the d x d arrays
        (:mod:`fastdcyk.hrr.buffers`) a numpy parse holds during the parse and at its end,
        and when it applies operator chains (a
        :class:`fastdcyk.engine.backends.numpy.accounting.Held`), which
        the memory check sums (:func:`fastdcyk.engine.memory.work_buffers` gives the
        arguments). None: the dense results only.
    cost : part, optional
        ``cost(structure, n, d, options, pair) -> seconds``: the cost model of one numpy
        parse of an n-word sentence (``pair``: the seconds of one FFT pair at d;
        :mod:`fastdcyk.engine.cost`). None: no estimate.
    reader : part, optional
        ``reader(p_left, grammar, words, codebook, options) -> Statistics``: reads a given
        P_left with the mode's own read-backs (those in ``readbacks`` other than
        ``"matched"``, which every P_left can be decoded with); for :func:`fastdcyk.decode`.
    differentiable : bool, default True
        Whether the torch parser computes under autograd (for :class:`fastdcyk.nn.DCYK`).
    soft_preterminals : bool, default False
        Whether the torch parser takes preterminal scores for its unary step.
    writes_probabilities : bool, default False
        Whether the mode writes a PCFG's probabilities into the table (the weighted table:
        it needs a weighted grammar, and its beam applies).
    """

    name: str
    gate: str
    summary: str
    parsers: Mapping[str, Part]
    weights: str = "chart"
    readbacks: tuple[str, ...] = ("matched",)
    orders: tuple[str, ...] = ("sequential", "cell")
    certified_readbacks: tuple[str, ...] = ()
    simulation: Part | None = None
    simulated_readbacks: tuple[str, ...] = ()
    buffers: Part | None = None
    cost: Part | None = None
    reader: Part | None = None
    differentiable: bool = True
    soft_preterminals: bool = False
    writes_probabilities: bool = False

    def part(self, name: str) -> Any:
        """The part ``name`` ("simulation", "buffers", "cost", "reader"), its module imported
        on first use; None for an optional part the mode lacks (the parsers: :meth:`parser`)."""
        return load(getattr(self, name), PACKAGE)

    def backends(self) -> list[str]:
        """The registered backends that parse with the mode: those its :attr:`parsers` name,
        then those whose record brings a parser of it
        (:attr:`fastdcyk.registry.backends.Backend.parsers`)."""
        own = [b for b in self.parsers if b in backends.BACKENDS]
        return own + [
            b.name
            for b in backends.BACKENDS.values()
            if self.name in b.parsers and b.name not in own
        ]

    def parser(self, backend: str) -> type:
        """The parser class of ``backend`` (a registered backend's name), imported on first
        use: the one this record names, else the one the backend's record brings.

        Raises
        ------
        ValueError
            For a backend that has no parser of the mode: the message names those that do.
        """
        if backend in self.parsers:
            return load(self.parsers[backend], PACKAGE)
        record = backends.BACKENDS.get(backend)
        if record is not None and self.name in record.parsers:
            return record.parser(self.name)
        have = self.backends()
        where = f"the {' and '.join(have)} backend{'s' if len(have) > 1 else ''}"
        raise ValueError(
            f"{self.describe()} is built in {where} only, not {backend!r}: use backend={have[0]!r}"
        )

    def describe(self) -> str:
        """The options that select the mode, as a user writes them."""
        table = f", weights={self.weights!r}" if self.weights != "chart" else ""
        return f"gate={self.gate!r}{table} ({self.summary})"

    @property
    def chooses_readback(self) -> bool:
        """Whether the mode has a choice of read-back (the ``readback`` option matters)."""
        return len(self.readbacks) > 1

    @property
    def modelled_readbacks(self) -> tuple[str, ...]:
        """The read-backs the capacity model simulates (none without a simulation)."""
        if self.simulation is None:
            return ()
        return self.simulated_readbacks or self.readbacks


#: The registered modes by name, in the order the documentation lists them.
MODES: dict[str, Mode] = {}


def register(mode: Mode) -> Mode:
    """Add ``mode`` to :data:`MODES` (its name and its (gate, weights) unused so far).

    Raises
    ------
    ValueError
        When a mode of that name, or of that gate and weights, is registered already.
    """
    if not isinstance(mode, Mode):
        raise TypeError(f"register takes a Mode, got {type(mode).__name__}")
    for other in MODES.values():
        if other.name == mode.name or (other.gate, other.weights) == (mode.gate, mode.weights):
            raise ValueError(
                f"a mode {other.name!r} ({other.describe()}) is registered already: "
                "give the new one another name, gate or weights"
            )
    MODES[mode.name] = mode
    return mode


def unregister(name: str) -> Mode:
    """Remove the mode ``name`` from :data:`MODES` and return it."""
    return parts.take(MODES, name, "mode")


def registered(mode: Mode) -> AbstractContextManager[Mode]:
    """``with registered(mode):`` the mode is registered inside the block only."""
    return parts.registered(mode, register, unregister)


def gates() -> tuple[str, ...]:
    """The gates of the registered modes, in registry order."""
    return tuple(dict.fromkeys(m.gate for m in MODES.values()))


def select(gate: str, weights: str = "chart") -> Mode:
    """The mode of ``gate`` with ``weights``.

    Raises
    ------
    ValueError
        When no mode has that gate, or the gate has no mode with those weights; the
        message names the gates and the weights of each.
    """
    for mode in MODES.values():
        if mode.gate == gate and mode.weights == weights:
            return mode
    have = ", ".join(
        f"{g} ({', '.join(repr(m.weights) for m in MODES.values() if m.gate == g)})"
        for g in gates()
    )
    if gate not in gates():
        raise ValueError(f"unknown gate {gate!r}: choose one of {gates()}")
    able = [m.gate for m in MODES.values() if m.weights == weights]
    need = f"needs gate {' or '.join(repr(g) for g in able)}" if able else "has no mode"
    raise ValueError(f"weights={weights!r} {need}; the gates and their weights: {have}")


def own_readback(gate: str, readback: str | None) -> str | None:
    """``readback`` if the mode of ``gate`` (with weights "chart") has it, else None (its
    default): for a setting that applies to some of several variants (an experiment grid's
    read-back applies to the variants whose gate has it)."""
    return readback if readback in select(gate).readbacks else None


def reader_of(readback: str) -> Mode | None:
    """The mode that reads a given P_left with ``readback`` (its :attr:`Mode.reader`): the
    mode whose own read-back it is; None for ``"matched"``, which the decoders of any P_left
    read (:func:`fastdcyk.engine.core.decode.decode_statistics`)."""
    for mode in MODES.values():
        if mode.reader is not None and readback in mode.readbacks and readback != "matched":
            return mode
    return None


# -- the built-in modes ---------------------------------------------------------------------

register(
    Mode(
        name="entrywise",
        gate="entrywise",
        summary="the entrywise gate: the paper's P_A = sigma(M), entry by entry",
        parsers={
            "numpy": ".entrywise.numpy_parser:NumpyEntrywiseParser",
            "torch": ".entrywise.torch_parser:TorchEntrywiseParser",
        },
        simulation=".entrywise.simulation:EntrywiseSimulation",
        buffers=".entrywise:work_buffers",
        cost=".entrywise:seconds",
    )
)
register(
    Mode(
        name="trace",
        gate="trace",
        summary="the trace gate: P_A = sigma(tr(M) / d) I",
        parsers={
            "numpy": ".trace.numpy_parser:NumpyTraceParser",
            "torch": ".trace.torch_parser:TorchTraceParser",
        },
        orders=("sequential", "cell", "width"),
        simulation=".trace.simulation:TraceSimulation",
        buffers=".trace:work_buffers",
        cost=".trace:seconds",
    )
)
register(
    Mode(
        name="tanh",
        gate="tanh",
        summary="the trace gate with tanh, for learning: P_A = tanh(beta tr(M) / d) I",
        parsers={"torch": ".tanh.torch_parser:TorchTanhParser"},
        orders=("sequential", "cell", "width"),
        buffers=".trace:work_buffers",
        cost=".trace:seconds",
    )
)
register(
    Mode(
        name="cleanup",
        gate="cleanup",
        summary="the clean-up gate: the grammar's rules over each cell's read-back",
        parsers={
            "numpy": ".cleanup.numpy_parser:NumpyCleanupParser",
            "torch": ".cleanup.torch_parser:TorchCleanupParser",
        },
        readbacks=("cancel", "lstsq", "matched"),
        orders=("sequential", "cell", "width"),
        certified_readbacks=("cancel", "lstsq"),
        simulation=".cleanup.simulation:CleanupSimulation",
        buffers=".cleanup:work_buffers",
        cost=".cleanup:seconds",
        reader=".cleanup.numpy_parser:readback_statistics",
        soft_preterminals=True,
    )
)
register(
    Mode(
        name="weighted",
        gate="cleanup",
        weights="table",
        summary="the clean-up gate writing a PCFG's Viterbi scores into the table",
        parsers={"numpy": ".weighted.numpy_parser:NumpyWeightedParser"},
        readbacks=("cancel", "lstsq"),
        certified_readbacks=("cancel", "lstsq"),
        buffers=".cleanup:work_buffers",
        cost=".cleanup:seconds",
        differentiable=False,
        writes_probabilities=True,
    )
)

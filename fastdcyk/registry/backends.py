"""D-CYK's backends: one registry of where the arithmetic runs, and what each backend has.

A *backend* runs the parsers of the detection modes over its own arrays: ``"numpy"`` (FFTs
and Numba kernels into reused buffers, one sentence at a time, with a certificate per cell)
and ``"torch"`` (PyTorch, batched, on a CPU or a GPU, differentiable). Each is one folder of
:mod:`fastdcyk.engine.backends`: the base class of its parsers, and its *driver*, which parses
a prepared plan's sentences (:class:`fastdcyk.engine.core.plan.Plan`) with the parser each mode
names for it and returns one :class:`~fastdcyk.engine.core.result.DCYKResult` per sentence.

This module is the table of :class:`Backend` records. Whatever depends on the backend asks
its record: the options (its name is a choice of ``backend=``), the plan (the device it
computes on), the front doors (its driver; whether its parse gives a certificate, so that
``d="auto"`` can choose d by it; whether it parses sentences in batches), the layer (whether
it computes under autograd), :func:`fastdcyk.clear_caches` (what it keeps per codebook) and
the experiment grid. Nothing else compares a backend's name.

The parts are named ``"module:attribute"`` (relative to :data:`PACKAGE` when they start with
a dot) and imported on first use: this module imports nothing of fastdcyk but the
registry's loader, and the torch backend's parts load PyTorch only when used.
:func:`register` adds a backend; its record may bring its own parsers of the modes
(:attr:`Backend.parsers`), so that a backend is added in one file and one record
(docs/architecture.md, "Adding a backend"; a test adds one).

Examples
--------
>>> from fastdcyk.registry import backends
>>> list(backends.BACKENDS)
['numpy', 'torch']
>>> backends.get("numpy").certificate, backends.get("torch").autograd
(True, True)
>>> backends.get("jax")
Traceback (most recent call last):
...
ValueError: unknown backend 'jax': choose one of 'numpy', 'torch'
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from fastdcyk.registry import parts
from fastdcyk.registry.parts import Part, load

__all__ = [
    "BACKENDS",
    "DEFAULT",
    "PACKAGE",
    "Backend",
    "for_device",
    "get",
    "names",
    "register",
    "registered",
    "unregister",
]

#: Where the built-in backends' parts are: their names start with a dot, relative to it.
PACKAGE = "fastdcyk.engine.backends"


@dataclass(frozen=True)
class Backend:
    """What one backend is, and where its parts are.

    Attributes
    ----------
    name : str
        The backend's name (``backend=``; the key of :data:`BACKENDS`).
    summary : str
        One line: where it computes (errors and documentation quote it).
    driver : part
        ``parse(plan, backend, *, device, decode, dense, record, on_progress) ->
        list[DCYKResult]``: parses every sentence of a prepared
        :class:`~fastdcyk.engine.core.plan.Plan` with the parser its options' mode names for
        this backend (``backend`` is this record), in the plan's order. ``dense=False``
        leaves P_left and P_right out of the results (None; the experiment grid scores
        the charts only). ``on_progress`` is called with the number of detections made.
    device : part, optional
        ``check_device(device) -> device``: where the backend computes, checked without
        allocating (None given: its default). None: the backend takes no device, and one
        given is refused.
    release : part, optional
        ``release(codebook=None)``: forget what the backend keeps per codebook between
        parses (:func:`fastdcyk.clear_caches`; called only once its module is loaded).
    batch_size : part, optional
        ``batch_size(d, dtype, device) -> int``: the sentences the driver parses together
        by default. None: one at a time (then :func:`fastdcyk.dcyk_batch` hands it every
        sentence at once, and gains nothing from sorting them by length).
    spill : part, optional
        ``spill(device) -> int``: when a batch runs out of the device's memory, move what
        earlier results keep on it to the host (the bytes moved; 0: nothing to move).
    memory : part
        ``check(d, dtype, fft, options, n, *, sentences, device, held)``: raise MemoryError,
        before anything of size d is allocated, when ``sentences`` sentences of at most
        ``n`` words do not fit where the backend computes (``held``: bytes of work buffers
        a given codebook holds already). The one memory check of every front door
        (:func:`fastdcyk.engine.memory.check_memory`).
    certificate : bool, default False
        Whether its parses give a certificate per cell with the modes' certified
        read-backs (:attr:`fastdcyk.registry.modes.Mode.certified_readbacks`;
        ``DCYKResult.sure``), so that ``d="auto"`` can choose d by it.
    autograd : bool, default False
        Whether its parse is differentiable in the symbol vectors and per-rule weights
        (:class:`fastdcyk.nn.DCYK` runs on it).
    parsers : mapping of str to part, default {}
        Per mode name, a parser this backend brings for a mode whose record does not name
        one for it (a backend added after the modes). A mode's own parsers come first.
    requires : str, optional
        The package the backend needs (its import name, which pip installs by that name);
        the ImportError of its absence says how to install it.
    """

    name: str
    summary: str
    driver: Part
    device: Part | None = None
    release: Part | None = None
    batch_size: Part | None = None
    spill: Part | None = None
    memory: Part | None = None
    certificate: bool = False
    autograd: bool = False
    parsers: Mapping[str, Part] = field(default_factory=dict)
    requires: str | None = None

    def part(self, name: str) -> Any:
        """The part ``name`` ("driver", "device", "release", "batch_size", "spill", "memory"),
        its module imported on first use; None for an optional part the backend lacks.

        Raises
        ------
        ImportError
            When the package the backend needs (:attr:`requires`) is missing: the message
            says how to install it.
        """
        try:
            return load(getattr(self, name), PACKAGE)
        except ImportError as exc:
            if self.requires is None or exc.name != self.requires:
                raise
            raise ImportError(
                f"the {self.name} backend of fastdcyk needs {self.requires}: "
                f"pip install {self.requires}"
            ) from exc

    def parser(self, mode: str) -> type:
        """The parser this record brings for the mode named ``mode`` (see :attr:`parsers`)."""
        return load(self.parsers[mode], PACKAGE)

    @property
    def takes_device(self) -> bool:
        """Whether the backend computes on a device given to it (``device=``)."""
        return self.device is not None

    @property
    def batched(self) -> bool:
        """Whether the driver parses several sentences together (it has a batch size)."""
        return self.batch_size is not None

    def check_device(self, device: Any) -> Any:
        """``device`` checked by the backend (None: its default; see :attr:`device`).

        Raises
        ------
        ValueError
            A device given to a backend that takes none, naming those that take one; the
            backend's own refusal of a device it cannot compute on.
        ImportError
            When the package the backend needs is missing.
        """
        if self.device is None:
            if device is not None:
                able = [b.name for b in BACKENDS.values() if b.takes_device]
                need = " or ".join(f"backend={b!r}" for b in able) or "a backend that takes one"
                raise ValueError(f"device={device!r} needs {need}")
            return None
        return self.part("device")(device)

    def parse(self, plan: Any, **options: Any) -> list[Any]:
        """The driver's parse of ``plan`` (see :attr:`driver`)."""
        return self.part("driver")(plan, self, **options)

    def release_caches(self, codebook: Any = None) -> None:
        """What the backend keeps per codebook (every codebook's when None) forgotten;
        nothing is imported for it (a backend whose module is not loaded keeps nothing)."""
        ref = self.release
        if ref is None:
            return
        if isinstance(ref, str):
            module = ref.partition(":")[0]
            module = PACKAGE + module if module.startswith(".") else module
            if module not in sys.modules:
                return
        self.part("release")(codebook)

    def describe(self) -> str:
        """The backend as a user selects it."""
        return f"backend={self.name!r} ({self.summary})"


#: The registered backends by name, the default first.
BACKENDS: dict[str, Backend] = {}

#: The backend of :func:`fastdcyk.dcyk` when none is given.
DEFAULT = "numpy"


def register(backend: Backend) -> Backend:
    """Add ``backend`` to :data:`BACKENDS` (its name unused so far).

    Raises
    ------
    ValueError
        When a backend of that name is registered already.
    """
    if not isinstance(backend, Backend):
        raise TypeError(f"register takes a Backend, got {type(backend).__name__}")
    if backend.name in BACKENDS:
        raise ValueError(
            f"a backend {backend.name!r} is registered already: give the new one another name"
        )
    BACKENDS[backend.name] = backend
    return backend


def unregister(name: str) -> Backend:
    """Remove the backend ``name`` from :data:`BACKENDS` and return it."""
    return parts.take(BACKENDS, name, "backend")


def registered(backend: Backend) -> AbstractContextManager[Backend]:
    """``with registered(backend):`` the backend is registered inside the block only."""
    return parts.registered(backend, register, unregister)


def names() -> tuple[str, ...]:
    """The registered backends' names, the default first."""
    return tuple(BACKENDS)


def for_device(device: Any = None) -> str:
    """The backend that parses fastest where it runs: the default (numpy, one sentence at a
    time, which outruns the torch backend's batches on a CPU: docs/performance.md, "Many
    sentences on a CPU") when no device is given; else the first registered backend that
    computes on a device (torch: on a GPU its batches are many times faster)."""
    if device is None:
        return DEFAULT
    takes = [b.name for b in BACKENDS.values() if b.takes_device]
    return takes[0] if takes else DEFAULT


def get(name: Any) -> Backend:
    """The record of the backend ``name``.

    Raises
    ------
    ValueError
        For a name no backend has: the message names those registered.
    """
    record = BACKENDS.get(name) if isinstance(name, str) else None
    if record is None:
        have = ", ".join(repr(b) for b in BACKENDS)
        raise ValueError(f"unknown backend {name!r}: choose one of {have}")
    return record


# -- the built-in backends ------------------------------------------------------------------

register(
    Backend(
        name="numpy",
        summary="numpy, FFTs and Numba kernels, one sentence at a time, with a certificate",
        driver=".numpy.driver:parse",
        release=".numpy.spectral:release_kept",
        memory="fastdcyk.engine.memory:check_parse_memory",
        certificate=True,
    )
)
register(
    Backend(
        name="torch",
        summary="PyTorch, batched, on a CPU or a GPU, differentiable",
        driver=".torch.driver:parse",
        device=".torch.device:check_device",
        release=".torch.driver:release_caches",
        batch_size=".torch.device:default_batch_size",
        spill=".torch.later:spill_deferred",
        memory=".torch.device:check_memory",
        autograd=True,
        requires="torch",
    )
)

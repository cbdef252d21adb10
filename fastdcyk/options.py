"""D-CYK's options in one place: the variants, gates, decoders, orders and encodings, their
defaults, and the checks of every value a user can pass (d, seeds, beta, threshold, prune,
dtype, executor).

The engine (:func:`fastdcyk.dcyk`), the decoder, the capacity model, the experiment grid and
the command line all call these, so a value is accepted, defaulted and refused the same way
wherever it is given. The module imports nothing from the rest of the package.

Examples
--------
>>> from fastdcyk import options
>>> options.resolve("trace").gate
'trace'
>>> options.resolve("paper", order="cell").order
'cell'
>>> options.check_choice("gate", "diagonal", options.GATES)
Traceback (most recent call last):
...
ValueError: unknown gate 'diagonal': choose one of ('entrywise', 'trace', 'cleanup')
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "BACKENDS",
    "CODEBOOKS",
    "DECODERS",
    "DEFAULT_BETA",
    "DEFAULT_VARIANT",
    "DEFAULT_THRESHOLD",
    "DEFAULT_CANDIDATE_LEVEL",
    "DTYPES",
    "ENCODINGS",
    "EXECUTORS",
    "GATES",
    "SCALAR_GATES",
    "ORDERS",
    "LEAST_SQUARES",
    "READBACKS",
    "VARIANTS",
    "WEIGHTS",
    "DCYKOptions",
    "check_backend",
    "check_beta",
    "check_beam",
    "check_beta_threshold",
    "check_candidate_level",
    "check_choice",
    "check_dim",
    "check_dtype",
    "check_int",
    "check_prune",
    "check_threshold",
    "default_readback",
    "resolve",
]

#: The variants and what each chooses: ``"paper"`` is the faithful algorithm, ``"trace"``
#: the improved one (docs/method.md, sections 2 and 3), ``"cleanup"`` the trace variant's
#: codebook with a detection whose noise does not grow with the grammar (clean-up memory,
#: docs/method.md, section 6) and a read-back that separates the symbols of a cell (least
#: squares over the cell's candidates, section 7): the one for real grammars.
VARIANTS: dict[str, dict[str, Any]] = {
    "paper": {
        "gate": "entrywise",
        "decoder": "entry",
        "unary_mask": False,
        "unitary": False,
        "order": "sequential",
        "encoding": "paper",
    },
    "trace": {
        "gate": "trace",
        "decoder": "trace",
        "unary_mask": False,
        "unitary": True,
        "order": "cell",
        "encoding": "roles",
    },
    "cleanup": {
        "gate": "cleanup",
        "decoder": "trace",
        "unary_mask": False,
        "unitary": True,
        "order": "cell",
        "encoding": "paper",
    },
}
#: The variant of every entry point when none is given (:func:`fastdcyk.dcyk`,
#: :func:`fastdcyk.dcyk_batch`, :class:`fastdcyk.nn.DCYK`, the capacity model, ``fastdcyk
#: parse`` and ``fastdcyk capacity``): the one that parses real grammars. ``"paper"``
#: reproduces the paper; ``fastdcyk experiment`` (the paper's grid) runs its two variants.
DEFAULT_VARIANT = "cleanup"
#: ``"entrywise"``: P_A = sigma(M) (the paper); ``"trace"``: P_A = sigma(tr(M) / d) I;
#: ``"cleanup"``: every completed cell is read once into a gated score per symbol (the trace
#: decoder's readout), and P_A = sigma(t_A) I with t_A the grammar's rules applied to the
#: children's scores (docs/method.md, section 6). P_right is neither read nor written.
GATES = ("entrywise", "trace", "cleanup")
#: The gates whose parse keeps P_left as 2-D spectra (every update a multiple of I).
SCALAR_GATES = ("trace", "cleanup")
#: ``"entry"``: entry (0, 0) of the readout (the paper); ``"trace"``: its trace over d.
DECODERS = ("entry", "trace")
#: How the clean-up gate reads a completed cell (docs/method.md, section 7): ``"lstsq"``
#: solves for the amplitudes of the cell's candidates (the nonterminals its detections
#: proposed) by least squares, every other nonterminal reads 0; ``"matched"`` reads every
#: nonterminal with its own matched filter, the decoder's readout; ``"cancel"`` is
#: ``"lstsq"`` reading each cell from the table less what was read before it (every read
#: cell's items, with the amplitudes read, subtracted from a second copy of the table:
#: successive interference cancellation, docs/method.md, section 7). The other gates read
#: with their decoder (``"matched"``).
READBACKS = ("lstsq", "cancel", "matched")
#: The read-backs that solve for the candidates' amplitudes by least squares.
LEAST_SQUARES = ("lstsq", "cancel")
#: The detection t_A above which a nonterminal is a candidate of its cell under the
#: least-squares read-back (written, and solved for): a quarter of one derivation whose
#: children both read clean (docs/method.md, section 7).
DEFAULT_CANDIDATE_LEVEL = 0.25
#: What a PCFG's probabilities do (docs/method.md, section 10): ``"chart"`` ranks the trees
#: of the decoded chart (nothing of them is written into the table); ``"table"`` writes each
#: item with an amplitude that carries its Viterbi score and reads the scores back (the
#: clean-up gate with the least-squares read-back, numpy backend).
WEIGHTS = ("chart", "table")
#: With ``weights="table"``: how far below its cell's best Viterbi score (in nats) an item
#: is still written; the amplitudes 1/8 to 1 span it.
DEFAULT_BEAM = 10.0
#: ``"sequential"``: the paper's order (each update applied before the next detection of the
#: same cell); ``"cell"``: every detection of a cell reads the table as it was before the cell.
ORDERS = ("sequential", "cell")
#: ``"paper"``: [X]+ [i]+ [j]+ in P_right and R_b^A = sum [B]+ [C]-, as in the paper;
#: ``"roles"``: the right child under its own vector X', [X']+ [i]+ [j]+ and [B]+ [C']-.
ENCODINGS = ("paper", "roles")
#: ``"numpy"``: the engine's parsers (:mod:`fastdcyk.engine`); ``"torch"``: the same
#: algorithm in PyTorch, batched and differentiable (:mod:`fastdcyk.engine.torch_backend`).
BACKENDS = ("numpy", "torch")
#: Where the tasks of an experiment grid run.
EXECUTORS = ("serial", "process", "dask")
#: The codebooks of an experiment grid: ``"grammar"`` (:meth:`Codebook.for_grammar` for the
#: unitary variants, as :func:`fastdcyk.dcyk` builds by default) or ``"plain"``.
CODEBOOKS = ("grammar", "plain")
#: The dtypes of the accumulators.
DTYPES = ("float32", "float64")
#: sigma's slope in sigma(x) = 1 / (1 + exp(-(x - 0.5) beta)); the paper gives none. Chosen
#: by measurement: see docs/method.md.
DEFAULT_BETA = 50.0
#: The paper's decoder threshold: sigma(x) > 0.99, i.e. x > 0.5 + 4.6 / beta.
DEFAULT_THRESHOLD = 0.99


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


def check_backend(backend: Any, device: Any = None) -> str:
    """``backend`` when it is one of :data:`BACKENDS` and ``device`` (where to compute) is
    None unless the backend is ``"torch"``."""
    check_choice("backend", backend, BACKENDS)
    if device is not None and backend != "torch":
        raise ValueError(f"device={device!r} needs backend='torch'")
    return backend


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


def check_beta(beta: Any) -> float:
    """Sigma's slope: a finite number > 0."""
    ok = isinstance(beta, int | float | np.integer | np.floating) and not isinstance(beta, bool)
    if not (ok and math.isfinite(beta) and beta > 0):
        raise ValueError(f"beta must be a finite number > 0, got {beta!r}")
    return float(beta)


def check_threshold(threshold: Any) -> float:
    """The decoder's threshold on sigma: strictly between 0 and 1."""
    ok = isinstance(threshold, int | float | np.integer | np.floating)
    if not (ok and not isinstance(threshold, bool) and 0.0 < threshold < 1.0):
        raise ValueError(f"threshold must lie strictly between 0 and 1, got {threshold!r}")
    return float(threshold)


def check_beta_threshold(beta: Any, threshold: Any) -> tuple[float, float]:
    """Both, defaulted where None (:data:`DEFAULT_BETA`, :data:`DEFAULT_THRESHOLD`)."""
    beta = DEFAULT_BETA if beta is None else beta
    threshold = DEFAULT_THRESHOLD if threshold is None else threshold
    return check_beta(beta), check_threshold(threshold)


def check_dtype(dtype: Any) -> np.dtype:
    """float32 or float64 (None: float32)."""
    try:
        dt = np.dtype("float32" if dtype is None else dtype)
    except TypeError:
        dt = None
    if dt is None or dt.name not in DTYPES:
        raise ValueError(f"dtype must be 'float32' or 'float64', got {dtype!r}")
    return dt


def check_prune(prune: Any, dtype: Any) -> float:
    """The pruning bound: a finite number >= 0; None is ``dtype``'s machine epsilon."""
    prune = float(np.finfo(dtype).eps) if prune is None else prune
    ok = isinstance(prune, int | float | np.integer | np.floating) and not isinstance(prune, bool)
    if not (ok and math.isfinite(prune) and prune >= 0):
        raise ValueError(f"prune must be a finite number >= 0, got {prune!r}")
    return float(prune)


@dataclass(frozen=True)
class DCYKOptions:
    """The resolved options of one parse (see :func:`fastdcyk.dcyk` and :func:`resolve`)."""

    variant: str
    gate: str
    decoder: str
    unary_mask: bool
    beta: float
    threshold: float
    prune: float
    order: str = "sequential"
    encoding: str = "paper"
    readback: str | None = None
    candidate_level: float = DEFAULT_CANDIDATE_LEVEL
    weights: str = "chart"
    beam: float = DEFAULT_BEAM

    def __post_init__(self) -> None:
        if self.readback is None:  # as resolve gives it
            object.__setattr__(self, "readback", default_readback(self.gate, self.weights))


def default_readback(gate: str, weights: str) -> str:
    """The read-back a parse gets when none is given.

    Parameters
    ----------
    gate : str
        One of :data:`GATES`.
    weights : str
        One of :data:`WEIGHTS`.

    Returns
    -------
    str
        ``"matched"`` for the gates other than the clean-up gate (their decoder);
        ``"cancel"`` for the weighted table (its scores are read, and read errors add up
        the table); ``"lstsq"`` otherwise.
    """
    if gate != "cleanup":
        return "matched"
    return "cancel" if weights == "table" else "lstsq"


def check_candidate_level(level: Any) -> float:
    """The least-squares read-back's candidate level: a finite number >= 0."""
    ok = isinstance(level, int | float | np.integer | np.floating) and not isinstance(level, bool)
    if not (ok and math.isfinite(level) and level >= 0):
        raise ValueError(f"candidate_level must be a finite number >= 0, got {level!r}")
    return float(level)


def check_beam(beam: Any) -> float:
    """The weighted table's beam: a finite number > 0 (nats)."""
    ok = isinstance(beam, int | float | np.integer | np.floating) and not isinstance(beam, bool)
    if not (ok and math.isfinite(beam) and beam > 0):
        raise ValueError(f"beam must be a finite number > 0 (nats), got {beam!r}")
    return float(beam)


def resolve(
    variant: str,
    *,
    gate: str | None = None,
    decoder: str | None = None,
    unary_mask: bool | None = None,
    beta: float | None = None,
    threshold: float | None = None,
    prune: float | None = None,
    order: str | None = None,
    encoding: str | None = None,
    readback: str | None = None,
    candidate_level: float | None = None,
    weights: str | None = None,
    beam: float | None = None,
    dtype: Any = "float32",
) -> DCYKOptions:
    """The options of a parse: the variant's preset (:data:`VARIANTS`) where None, each
    checked.

    Parameters
    ----------
    variant : {"paper", "trace", "cleanup"}
    gate, decoder, unary_mask, order, encoding
        Override the variant's choice.
    readback : {"lstsq", "cancel", "matched"}, optional
        How the clean-up gate reads a completed cell (:data:`READBACKS`); default
        (:func:`default_readback`) ``"cancel"`` with ``weights="table"``, ``"lstsq"``
        otherwise with the clean-up gate, ``"matched"`` with the others (which accept
        nothing else).
    candidate_level : float, optional
        Default :data:`DEFAULT_CANDIDATE_LEVEL` (used by the least-squares read-backs only).
    weights : {"chart", "table"}, optional
        What a PCFG's probabilities do (:data:`WEIGHTS`, default ``"chart"``);
        ``"table"`` needs the clean-up gate and a least-squares read-back.
    beam : float, optional
        Default :data:`DEFAULT_BEAM` (used by ``weights="table"`` only).
    beta, threshold
        Default :data:`DEFAULT_BETA` and :data:`DEFAULT_THRESHOLD`.
    prune : float, optional
        Default: ``dtype``'s machine epsilon.
    dtype : {"float32", "float64"}
        The accumulators' dtype (sets prune's default).

    Returns
    -------
    DCYKOptions

    Raises
    ------
    ValueError
        For an unknown choice or a value out of range; the message names what is allowed.
    """
    preset = VARIANTS[check_choice("variant", variant, VARIANTS)]
    chosen = {}
    for name, value, allowed in (
        ("gate", gate, GATES),
        ("decoder", decoder, DECODERS),
        ("order", order, ORDERS),
        ("encoding", encoding, ENCODINGS),
    ):
        chosen[name] = check_choice(name, preset[name] if value is None else value, allowed)
    chosen["weights"] = check_choice("weights", "chart" if weights is None else weights, WEIGHTS)
    if readback is None:
        readback = default_readback(chosen["gate"], chosen["weights"])
    chosen["readback"] = check_choice("readback", readback, READBACKS)
    if chosen["readback"] in LEAST_SQUARES:
        if chosen["gate"] != "cleanup":
            raise ValueError(
                f"readback={readback!r} reads the candidates of the clean-up gate; gate "
                f"{chosen['gate']!r} reads with its decoder: leave readback out, or use "
                "gate='cleanup' (variant='cleanup')"
            )
        if decoder is not None and decoder != "trace":
            raise ValueError(
                f"decoder={decoder!r} does not apply to readback={readback!r}, which reads "
                "the chart itself: use readback='matched' to decode with the entry decoder"
            )
        chosen["decoder"] = "trace"  # its readouts are the trace decoder's
    level = DEFAULT_CANDIDATE_LEVEL if candidate_level is None else candidate_level
    chosen["candidate_level"] = check_candidate_level(level)
    if chosen["weights"] == "table" and chosen["readback"] not in LEAST_SQUARES:
        raise ValueError(
            "weights='table' writes Viterbi scores as amplitudes and reads them back by "
            "least squares: it needs variant='cleanup' with readback='cancel' (the default) "
            "or 'lstsq'"
        )
    chosen["beam"] = check_beam(DEFAULT_BEAM if beam is None else beam)
    beta, threshold = check_beta_threshold(beta, threshold)
    return DCYKOptions(
        variant=variant,
        unary_mask=preset["unary_mask"] if unary_mask is None else bool(unary_mask),
        beta=beta,
        threshold=threshold,
        prune=check_prune(prune, check_dtype(dtype)),
        **chosen,
    )

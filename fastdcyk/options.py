"""D-CYK's options, declared once: the variants, each option with its documentation and its
check, and :func:`resolve`, which turns the options a user gives into a parse's.

The fields of :class:`DCYKOptions` are the declarations: each carries its numpydoc type and
documentation, and, for the command line, its choices or its check. The keyword options of
:func:`fastdcyk.dcyk`, :func:`fastdcyk.dcyk_batch`, :class:`fastdcyk.nn.DCYK` and
:func:`fastdcyk.capacity.predict` (their signatures, their checks, their parameter
documentation: :func:`takes_options`) and the command line's options
(:mod:`fastdcyk.cli.common`) are derived from them, so an option is accepted, defaulted,
refused and documented the same way wherever it is given.

Here are the declarations: the constants, :func:`declaration`, :class:`DCYKOptions`,
:data:`NAMES`, the checks of each option's value (:func:`check_beta`, ...) and
:func:`resolve`. The checks that are no option's (:func:`~fastdcyk.checks.check_int`,
:func:`~fastdcyk.checks.check_choice`, ...) are :mod:`fastdcyk.checks`'s; the machinery that
gives a function the option keywords is :mod:`fastdcyk.signatures`'s, which
:func:`takes_options` and :func:`documented` apply to these declarations.

Which gates, read-backs and weights exist and combine is not declared here but in the
registry of detection modes (:mod:`fastdcyk.registry.modes`), which :func:`resolve` consults,
and the backends are the records of :mod:`fastdcyk.registry.backends`: the registries import
nothing of the package, and this module nothing of it but them, the checks and the
signature machinery.

Examples
--------
>>> from fastdcyk import options
>>> options.resolve("trace").gate
'trace'
>>> options.resolve("paper", order="cell").order
'cell'
>>> options.resolve("trace", readback="lstsq")
Traceback (most recent call last):
...
ValueError: readback='lstsq' is not a read-back of gate='trace' (...), which has 'matched' only: ...
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from fastdcyk.checks import check_choice, check_dtype, check_flag
from fastdcyk.registry import backends, modes
from fastdcyk.registry.backends import Backend
from fastdcyk.registry.modes import Mode
from fastdcyk.signatures import Keywords

__all__ = [
    "CODEBOOKS",
    "DECODERS",
    "AUTO_BEAM",
    "DEFAULT_BEAM",
    "DEFAULT_BETA",
    "DEFAULT_CANDIDATE_LEVEL",
    "DEFAULT_THRESHOLD",
    "DEFAULT_VARIANT",
    "ENCODINGS",
    "EXECUTORS",
    "NAMES",
    "ORDERS",
    "READBACKS",
    "VARIANTS",
    "WEIGHTS",
    "KEYWORDS",
    "DCYKOptions",
    "check_backend",
    "check_beam",
    "check_beta",
    "check_beta_threshold",
    "check_candidate_level",
    "check_prune",
    "check_threshold",
    "choices",
    "declaration",
    "documented",
    "resolve",
    "takes_options",
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
        "order": "width",
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
#: ``"entry"``: entry (0, 0) of the readout (the paper); ``"trace"``: its trace over d.
DECODERS = ("entry", "trace")
#: Every read-back a mode may have (docs/method.md, section 7): ``"matched"`` reads every
#: nonterminal with its own matched filter, the decoder's readout (``decoder``), and is the
#: only read-back of the entrywise and trace gates; the clean-up gate's ``"lstsq"`` solves
#: for the amplitudes of the cell's candidates (the nonterminals its detections proposed) by
#: least squares, every other nonterminal reading 0, and ``"cancel"`` (its default) is
#: ``"lstsq"`` reading each cell from the table less what was read before it (successive
#: interference cancellation). A read-back other than ``"matched"`` reads the chart
#: itself: the decoder does not apply. Which mode has which: :mod:`fastdcyk.registry.modes`.
READBACKS = ("lstsq", "cancel", "matched")
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
#: is still written; the amplitudes 1/8 to 1 span it. The first beam ``beam="auto"`` tries
#: (:mod:`fastdcyk.engine.beam`).
DEFAULT_BEAM = 10.0
#: The value of ``beam`` that chooses the beam (the default): :data:`DEFAULT_BEAM`, doubled
#: while the parse shows that the beam cut what mattered (:mod:`fastdcyk.engine.beam`).
AUTO_BEAM = "auto"
#: ``"sequential"``: the paper's order (each update applied before the next detection of the
#: same cell); ``"cell"``: every detection of a cell reads the table as it was before the cell;
#: ``"width"``: every cell of a span width reads the table as it was before the width.
ORDERS = ("sequential", "cell", "width")
#: ``"paper"``: [X]+ [i]+ [j]+ in P_right and R_b^A = sum [B]+ [C]-, as in the paper;
#: ``"roles"``: the right child under its own vector X', [X']+ [i]+ [j]+ and [B]+ [C']-.
ENCODINGS = ("paper", "roles")
#: Where the tasks of an experiment grid run.
EXECUTORS = ("serial", "process", "dask")
#: The codebooks of an experiment grid: ``"grammar"`` (:meth:`Codebook.for_grammar` for the
#: unitary variants, as :func:`fastdcyk.dcyk` builds by default) or ``"plain"``.
CODEBOOKS = ("grammar", "plain")
#: sigma's slope in sigma(x) = 1 / (1 + exp(-(x - 0.5) beta)); the paper gives none. Chosen
#: by measurement: see docs/method.md.
DEFAULT_BETA = 50.0
#: The paper's decoder threshold: sigma(x) > 0.99, i.e. x > 0.5 + 4.6 / beta.
DEFAULT_THRESHOLD = 0.99


def check_backend(backend: Any, device: Any = None) -> Backend:
    """The record of ``backend`` (:mod:`fastdcyk.registry.backends`: ``"numpy"``,
    ``"torch"`` or one registered), with a ``device`` (where to compute) only for a backend
    that takes one; the device itself is checked by the backend when a parse is prepared
    (:meth:`~fastdcyk.registry.backends.Backend.check_device`)."""
    record = backends.get(check_choice("backend", backend, backends.names()))
    if device is not None and not record.takes_device:
        record.check_device(device)  # refused, naming the backends that take one
    return record


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


def check_prune(prune: Any, dtype: Any) -> float:
    """The pruning bound: a finite number >= 0; None is ``dtype``'s machine epsilon."""
    prune = float(np.finfo(dtype).eps) if prune is None else prune
    ok = isinstance(prune, int | float | np.integer | np.floating) and not isinstance(prune, bool)
    if not (ok and math.isfinite(prune) and prune >= 0):
        raise ValueError(f"prune must be a finite number >= 0, got {prune!r}")
    return float(prune)


def check_candidate_level(level: Any) -> float:
    """The least-squares read-back's candidate level: a finite number in [0, 1) (an item
    with one derivation whose children read clean, or a word's own item, is detected at
    about 1: a level of 1 or more would make no such item a candidate)."""
    ok = isinstance(level, int | float | np.integer | np.floating) and not isinstance(level, bool)
    if not (ok and math.isfinite(level) and level >= 0):
        raise ValueError(f"candidate_level must be a finite number >= 0, got {level!r}")
    if level >= 1:
        raise ValueError(
            f"candidate_level must be below 1, got {level!r}: an item with one derivation "
            "whose children read clean, and every word's own item, is detected at about 1, "
            "so no such item would be a candidate and the cells would read empty (the "
            f"default is {DEFAULT_CANDIDATE_LEVEL:g})"
        )
    return float(level)


def check_beam(beam: Any) -> float | str:
    """The weighted table's beam: ``"auto"`` or a finite number > 0 (nats)."""
    if isinstance(beam, str) and beam == AUTO_BEAM:
        return AUTO_BEAM
    ok = isinstance(beam, int | float | np.integer | np.floating) and not isinstance(beam, bool)
    if not (ok and math.isfinite(beam) and beam > 0):
        raise ValueError(f"beam must be 'auto' or a finite number > 0 (nats), got {beam!r}")
    return float(beam)


def _gates() -> tuple[str, ...]:
    return modes.gates()


def _weights() -> tuple[str, ...]:
    found = (m.weights for m in modes.MODES.values())
    return tuple(dict.fromkeys((*WEIGHTS, *found)))


def _readbacks() -> tuple[str, ...]:
    found = (r for m in modes.MODES.values() for r in m.readbacks)
    return tuple(dict.fromkeys((*READBACKS, *found)))


# -- the declarations -------------------------------------------------------------------------


def declaration(
    kind: str,
    doc: str,
    *,
    choices: Any = None,
    check: Callable[[Any], Any] | None = None,
    cli: str | None = None,
    expects: str | None = None,
    **default: Any,
) -> Any:
    """A field of :class:`DCYKOptions` that declares an option.

    Parameters
    ----------
    kind : str
        Its numpydoc type, as the keyword documentation shows it.
    doc : str
        Its documentation (the keyword's, where None is the variant's or the default's
        value).
    choices : tuple or callable, optional
        The values allowed (a callable: asked each time, for the registry's gates).
    check : callable, optional
        A value's check (a number's range), raising ValueError.
    cli : str, optional
        What the command line's help says of it (its first sentence otherwise).
    expects : str, optional
        For a number: what it must be, as the command line says when the text is no number.
    **default
        ``default=`` of the field, where it has one.
    """
    meta = {"kind": kind, "doc": " ".join(doc.split()), "choices": choices, "check": check}
    meta |= {"cli": cli, "expects": expects}
    return field(metadata=meta, **default)


@dataclass(frozen=True)
class DCYKOptions:
    """The options of one parse, resolved (:func:`resolve`); every option is declared here.

    Each field carries its documentation and its check (:func:`declaration`): the keyword
    options of :func:`fastdcyk.dcyk`, :func:`fastdcyk.dcyk_batch`,
    :class:`fastdcyk.nn.DCYK`, :func:`fastdcyk.capacity.predict` and the command line are
    derived from them (:func:`takes_options`, :func:`documented`). ``DCYKOptions`` is
    also how a set of options travels as one object (``dcyk(..., options=opts)``;
    ``dataclasses.replace(opts, beta=20)`` changes one).

    Examples
    --------
    >>> opts = resolve("trace", beta=20)
    >>> opts.gate, opts.beta, opts.readback, opts.mode.name
    ('trace', 20.0, 'matched', 'trace')
    """

    variant: str = declaration(
        '{"cleanup", "trace", "paper"}',
        """Default ``"cleanup"`` (:data:`fastdcyk.options.DEFAULT_VARIANT`): the trace
        variant's codebook with the clean-up detection and the least-squares read-back, the
        variant that parses real grammars (thousands of rules, cells of hundreds of symbols;
        docs/method.md, sections 6 and 7; P_left only). ``"paper"`` reproduces the paper:
        its faithful algorithm (entrywise gate, entry (0, 0) decoder), with the corrections
        of docs/method.md, section 2; slow on large grammars (a few FFT passes per
        nonterminal and cell). ``"trace"``: the paper's algorithm improved (trace gate and
        trace decoder, docs/method.md, section 3). Each variant is a preset of the options
        below (:data:`fastdcyk.options.VARIANTS`); an option given overrides it.""",
        choices=tuple(VARIANTS),
        cli=f"'{DEFAULT_VARIANT}' (the default: the one for real grammars), 'trace' (the "
        "paper's algorithm improved) or 'paper' (the paper's algorithm, reproduced: slow on "
        "large grammars)",
    )
    gate: str = declaration(
        '{"entrywise", "trace", "tanh", "cleanup"}',
        """The detection mode (:mod:`fastdcyk.registry.modes`): ``"entrywise"`` (the paper:
        P_A = sigma(M), masked to the diagonal in the binary step), ``"trace"``
        (P_A = sigma(tr(M) / d) I), ``"tanh"`` (P_A = tanh(beta tr(M) / d) I, torch backend,
        for learning: no parser, docs/method.md, section 4.7) or ``"cleanup"`` (the
        grammar's rules over the children's read-back scores, docs/method.md, section 6),
        or the gate of a mode added with
        :func:`fastdcyk.registry.modes.register`. Default: the variant's.""",
        choices=_gates,
        cli="override the variant's gate",
    )
    decoder: str = declaration(
        '{"entry", "trace"}',
        """How the finished table is decoded with ``readback="matched"``: ``"entry"``
        (entry (0, 0) of each readout, the paper's Algorithm 4) or ``"trace"`` (its trace
        over d, which sees far less noise). Default: the variant's.""",
        choices=DECODERS,
        cli="override the variant's decoder",
    )
    unary_mask: bool = declaration(
        "bool",
        """Mask the unary P_A to its diagonal, as the binary step masks its own
        (the entrywise gate). Default: the variant's (False).""",
        check=lambda v: check_flag("unary_mask", v),
        cli="mask the unary P_A to its diagonal (default: the variant's choice, off)",
    )
    beta: float = declaration(
        "float",
        """Slope of sigma(x) = 1 / (1 + exp(-(x - 0.5) beta)); default
        :data:`fastdcyk.options.DEFAULT_BETA`.""",
        check=check_beta,
        cli=f"sigmoid slope (default {DEFAULT_BETA:g})",
        expects="a finite number > 0",
    )
    threshold: float = declaration(
        "float",
        """The decoder's threshold on sigma (default 0.99, the paper's).""",
        check=check_threshold,
        cli=f"decoder threshold on sigma (default {DEFAULT_THRESHOLD})",
        expects="a number in (0, 1)",
    )
    prune: float = declaration(
        "float",
        """Skip an update whose P_A has no entry above this in magnitude (default: the
        dtype's machine epsilon: such an update is below the accumulators' resolution).""",
        check=lambda v: check_prune(v, "float32"),
        cli="skip an update whose P_A has no entry above this (default: the dtype's epsilon)",
        expects="a finite number >= 0",
    )
    order: str = declaration(
        '{"sequential", "cell", "width"}',
        """``"sequential"``: the paper's order, each update applied before the next
        detection of the same cell (a later nonterminal reads an earlier one's update:
        crosstalk, since in CNF no symbol of a cell depends on another of the same cell).
        ``"cell"``: every detection of a cell reads the table as it was before the cell,
        so the cell's detections share one pass and its updates are applied together (far
        cheaper on large grammars). ``"width"`` (the trace and clean-up gates): every cell
        of a span width reads the table as it was before the width (the clean-up gate's
        cells are then read back together; the torch backend's trace gate runs the whole
        width as one step: docs/method.md, section 4.2). Default: the variant's (paper:
        sequential, trace: width, cleanup: cell).""",
        choices=ORDERS,
        cli="order of the updates in a cell: 'sequential' (the paper's: each update applied "
        "before the next detection), 'cell' (every detection of a cell reads the table as "
        "it was before the cell; much cheaper) or 'width' (the trace and clean-up gates: every "
        "cell of a span width reads the table as it was before the width); default: the variant's ("
        + ", ".join(f"{v} {p['order']}" for v, p in VARIANTS.items())
        + ")",
        default="sequential",
    )
    encoding: str = declaration(
        '{"paper", "roles"}',
        """``"paper"``: P_right holds [X]+ [i]+ [j]+ and R_b^A = sum over A -> B C of
        [B]+ [C]-, as in the paper; a rule A -> B B then reduces to the identity (~I) and A
        is proposed over any split whose halves share a nonterminal. ``"roles"``: every
        nonterminal X also gets an independent right-child vector X' (the codebook's
        namespace ``"right"``): P_right holds [X']+ [i]+ [j]+ and R_b^A = sum [B]+ [C']-
        (docs/method.md, section 3). Default: the variant's (trace: ``"roles"``, the others:
        ``"paper"``).""",
        choices=ENCODINGS,
        cli="'paper': the paper's encoding; 'roles': right children under their own "
        "vectors, so that rules A -> B B stay distinct (default: the variant's)",
        default="paper",
    )
    readback: str | None = declaration(
        '{"lstsq", "cancel", "matched"}',
        """How a completed cell is read, both for its parents and for the chart
        (docs/method.md, section 7; which gate has which: :mod:`fastdcyk.registry.modes`).
        ``"lstsq"``: the cell's candidates (the nonterminals whose detection t_A exceeds
        ``candidate_level``, the only updates written) are read together by least squares
        over their vectors, so that the symbols of a cell no longer blur each other; every
        other nonterminal reads 0. ``"cancel"`` (the clean-up gate's default): the same read
        of a second copy of the table from which every read is subtracted (the words first,
        then each cell's candidates with their amplitudes as read), so that the items of the
        cells read before it no longer leak into a cell's read (successive interference
        cancellation): real grammars read exactly at about half the d of ``"lstsq"``, for
        one more spectrum of (d/2 + 1) x d complex numbers (the bytes of a d x d matrix)
        during the parse. Both least-squares read-backs give the parse a certificate
        (``DCYKResult.sure``). ``"matched"``: every nonterminal is read with its own
        matched filter; the final chart is then the decoder's (``decoder``). The entrywise
        and trace gates read with their decoder and have ``"matched"`` only.""",
        choices=_readbacks,
        cli="how the cleanup variant reads a finished cell: 'cancel' (its default: its "
        "candidates solved for by least squares, each cell read from the table less what "
        "was read before it), 'lstsq' (the same from the whole table) or 'matched' (one "
        "matched filter per nonterminal); docs/method.md, section 7",
        default=None,
    )
    candidate_level: float = declaration(
        "float",
        """The detection t_A above which a nonterminal is a candidate of its cell under
        the least-squares read-backs (default 0.25,
        :data:`fastdcyk.options.DEFAULT_CANDIDATE_LEVEL`).""",
        check=check_candidate_level,
        cli="the detection above which a nonterminal is a candidate of its cell under the "
        f"least-squares read-backs (default {DEFAULT_CANDIDATE_LEVEL:g})",
        expects="a finite number in [0, 1)",
        default=DEFAULT_CANDIDATE_LEVEL,
    )
    weights: str = declaration(
        '{"chart", "table"}',
        """What a PCFG's probabilities do (docs/method.md, section 10). ``"chart"`` (the
        default): they rank the trees of the decoded chart (:meth:`DCYKResult.tree`,
        :meth:`DCYKResult.best_parse`), nothing of them is written. ``"table"``: each item
        is written with an amplitude that carries its Viterbi score relative to its cell's
        best (the cells' best scores kept outside the table), the scores are read back by
        least squares and the parents' scores computed from them; the result's
        :attr:`~DCYKResult.table_scores` and :meth:`~DCYKResult.table_parse` give the
        scores and the most probable tree as read. Needs a weighted grammar, the clean-up
        gate with a least-squares read-back (``"cancel"`` unless told otherwise) and the
        numpy backend: ``backend="torch"``, :func:`fastdcyk.dcyk_batch` on the torch
        backend and :class:`fastdcyk.nn.DCYK` refuse it. Its scores are read during the
        parse, with the cells' scales kept outside the table: :func:`fastdcyk.decode` of
        the result gives its chart, a bare P_left of it decodes as a chart of gates (the
        items written with amplitudes below the decision boundary, about 0.59, then read
        as absent).""",
        choices=_weights,
        cli="'chart' (the default): a PCFG's probabilities rank the decoded chart's trees; "
        "'table': each item is written with an amplitude carrying its Viterbi score, read "
        "back from the table (docs/method.md, section 10; the numpy backend only)",
        default="chart",
    )
    beam: float | str = declaration(
        'float or "auto"',
        """With ``weights="table"``: how far (nats) below its cell's best an item is still
        written; amplitudes 1/8 to 1 span it, so a wider beam keeps more items and reads
        each score less precisely. ``"auto"`` (the default): 10 nats
        (:data:`fastdcyk.options.DEFAULT_BEAM`), doubled up to 160 while the parse shows
        that the beam cut what mattered (the start symbol missing, or the best tree near
        the beam's edge; :mod:`fastdcyk.engine.beam`); ``result.beam`` says which beam.""",
        check=check_beam,
        cli=f"with --weights table: how far (nats) below its cell's best an item is still "
        f"written, or 'auto' (the default): {DEFAULT_BEAM:g}, doubled while the parse shows "
        "that the beam cut what mattered",
        expects="'auto' or a finite number > 0 (nats)",
        default=AUTO_BEAM,
    )

    def __post_init__(self) -> None:
        if self.readback is None:  # as resolve gives it
            object.__setattr__(self, "readback", self.mode.readbacks[0])

    @property
    def mode(self) -> Mode:
        """The detection mode the options select (their ``gate`` and ``weights``): the
        :class:`~fastdcyk.registry.modes.Mode` record that says which parser each backend
        has, its read-backs, buffers, cost model and what it supports."""
        return modes.select(self.gate, self.weights)


#: The options, in declaration order: the fields of :class:`DCYKOptions`.
NAMES: tuple[str, ...] = tuple(f.name for f in fields(DCYKOptions))


def _declared(name: str) -> Mapping[str, Any]:
    return DCYKOptions.__dataclass_fields__[name].metadata


def choices(name: str) -> tuple[Any, ...] | None:
    """The values an option allows (None: a number or a flag, see its check)."""
    allowed = _declared(name)["choices"]
    return allowed() if callable(allowed) else allowed


#: The signature machinery (:class:`fastdcyk.signatures.Keywords`) over these declarations.
KEYWORDS = Keywords(DCYKOptions)
#: Give a function the option keywords (:meth:`fastdcyk.signatures.Keywords.takes_options`):
#: ``@takes_options(exclude=..., refused=..., notes=...)`` on a function with ``**options``.
takes_options = KEYWORDS.takes_options
#: A docstring with its line ``{options}`` documented
#: (:meth:`fastdcyk.signatures.Keywords.documented`).
documented = KEYWORDS.documented


def resolve(variant: str | None = None, *, dtype: Any = "float32", **options: Any) -> DCYKOptions:
    """The options of a parse: the variant's preset (:data:`VARIANTS`) where None, each
    checked, their combination checked against the registered modes.

    Parameters
    ----------
    variant : {"cleanup", "trace", "paper"}, optional
        Default :data:`DEFAULT_VARIANT`.
    dtype : {"float32", "float64"}
        The accumulators' dtype (sets prune's default).
    {options}

    Returns
    -------
    DCYKOptions

    Raises
    ------
    ValueError
        For an unknown choice or a value out of range, or options that no registered mode
        combines; the message names what is allowed.
    """
    variant = DEFAULT_VARIANT if variant is None else variant
    preset = VARIANTS[check_choice("variant", variant, VARIANTS)]
    given = {name: options.get(name) for name in NAMES if name != "variant"}
    chosen: dict[str, Any] = {}
    for name in ("gate", "decoder", "order", "encoding"):
        value = preset[name] if given[name] is None else given[name]
        chosen[name] = check_choice(name, value, choices(name))
    weights = "chart" if given["weights"] is None else given["weights"]
    chosen["weights"] = check_choice("weights", weights, choices("weights"))
    mode = modes.select(chosen["gate"], chosen["weights"])
    if chosen["order"] not in mode.orders:
        has = ", ".join(repr(o) for o in mode.orders)
        raise ValueError(
            f"order={chosen['order']!r} is not an order of {mode.describe()}, which has "
            f"{has}: leave order out for the variant's own"
        )
    readback = mode.readbacks[0] if given["readback"] is None else given["readback"]
    chosen["readback"] = check_choice("readback", readback, choices("readback"))
    if readback not in mode.readbacks:
        able = [m for m in modes.MODES.values() if readback in m.readbacks]
        same_gate = [m for m in able if m.gate == mode.gate]
        has = " or ".join(repr(r) for r in mode.readbacks)
        if same_gate:  # the gate has it with other weights
            elsewhere = (
                f"use weights={same_gate[0].weights!r}, with which gate {mode.gate!r} has it"
            )
        elif able:
            gates = " or ".join(repr(g) for g in dict.fromkeys(m.gate for m in able))
            elsewhere = f"use a gate that has it: {gates}"
        else:
            elsewhere = "no mode has it"
        raise ValueError(
            f"readback={readback!r} is not a read-back of {mode.describe()}, which has "
            f"{has} only: leave readback out, or {elsewhere}"
        )
    if readback != "matched":  # the read-back reads the chart itself
        if given["decoder"] not in (None, "trace"):
            raise ValueError(
                f"decoder={given['decoder']!r} does not apply to readback={readback!r}, which "
                "reads the chart itself: use readback='matched' to decode with the entry "
                "decoder"
            )
        chosen["decoder"] = "trace"  # its readouts are the trace decoder's
    level = given["candidate_level"]
    chosen["candidate_level"] = check_candidate_level(
        DEFAULT_CANDIDATE_LEVEL if level is None else level
    )
    chosen["beam"] = check_beam(AUTO_BEAM if given["beam"] is None else given["beam"])
    if isinstance(chosen["beam"], float) and not mode.writes_probabilities:
        raise ValueError(
            f"beam={given['beam']!r} applies to weights='table' only (the table's items within "
            "the beam of their cell's best); add weights='table', or leave beam out"
        )
    mask = preset["unary_mask"] if given["unary_mask"] is None else given["unary_mask"]
    beta, threshold = check_beta_threshold(given["beta"], given["threshold"])
    return DCYKOptions(
        variant=variant,
        unary_mask=check_flag("unary_mask", mask),
        beta=beta,
        threshold=threshold,
        prune=check_prune(given["prune"], check_dtype(dtype)),
        **chosen,
    )

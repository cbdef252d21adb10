"""A capacity model: the fidelity D-CYK will reach, predicted without any d x d work.

:func:`predict` runs symbolic CYK over modelled readouts (the simulation of the options' detection
mode, :mod:`fastdcyk.registry.modes`, on :mod:`fastdcyk.engine.backends.simulation.parser`: the
exact part of each readout from the codebook's own symbol spectra, the rest as noise of the variance
the algebra gives), with the variant's gate, order and decoder, and scores the simulated charts
against symbolic CYK; :func:`required_dim` searches the smallest d that reaches a target;
:func:`estimate_memory` is the model's own memory.

See docs/method.md, section 5, for the derivation and docs/results.md for the validation
against measurement.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fastdcyk.cfg.cyk import UnknownWordError, cyk
from fastdcyk.cfg.generate import generate
from fastdcyk.cfg.grammar import Grammar, as_grammar
from fastdcyk.cfg.metrics import Scores, cell_scores
from fastdcyk.checks import check_dim, check_int
from fastdcyk.engine.backends.simulation.parser import Simulation
from fastdcyk.engine.core.rules import rule_structure
from fastdcyk.engine.prepare import default_codebook
from fastdcyk.engine.progress import check_progress, progress_bar
from fastdcyk.hrr import memory as system_memory
from fastdcyk.options import DEFAULT_VARIANT, VARIANTS, DCYKOptions, resolve, takes_options

__all__ = [
    "DIM_GRID",
    "MAX_CELLS",
    "Prediction",
    "estimate_memory",
    "estimate_seconds",
    "predict",
    "required_dim",
    "sentences_drawn",
]

#: Dimensions required_dim tries: 64 * 2 ** (k / 4), rounded to a multiple of 16, to 16384.
DIM_GRID = tuple(sorted({int(round(64 * 2 ** (k / 4) / 16)) * 16 for k in range(0, 33)}))


#: Sentences drawn for a length: :func:`predict` simulates fewer than asked when they would
#: pass this many cells over all its codebook draws (100,000: a hundred sentences of 44 words,
#: or one of 446), at least one sentence per codebook draw.
MAX_CELLS = 100_000


def _cells(n: int) -> int:
    return n * (n + 1) // 2


def sentences_drawn(length: int, sentences: int, samples: int, max_cells: int | None) -> int:
    """How many sentences of ``length`` words :func:`predict` simulates per codebook draw
    when asked for ``sentences`` over ``samples`` draws (:data:`MAX_CELLS`)."""
    if max_cells is None:
        return sentences
    return max(1, min(sentences, max_cells // (samples * _cells(length))))


def _drawn(length: int, sentences: int, samples: int, max_cells: Any) -> int:
    """:func:`sentences_drawn`, ``max_cells`` checked."""
    if max_cells is not None:
        max_cells = check_int("max_cells", max_cells, 1)
    return sentences_drawn(length, sentences, samples, max_cells)


@dataclass(frozen=True)
class Prediction:
    """The predicted fidelity of D-CYK for one grammar, sentence sample and d.

    Attributes
    ----------
    d : int
    precision, recall, f1 : float
        Micro-averaged over every (i, j, A) triple of every sentence and sample.
    p_exact : float
        Fraction of (sentence, codebook) pairs whose whole table is reproduced.
    sentences : int
        Sentences simulated (per sample): for a length, fewer than asked when they would
        pass ``max_cells`` cells (:data:`MAX_CELLS`).
    samples : int
        Codebook draws.
    scores : Scores
        The summed counts behind precision and recall.
    """

    d: int
    precision: float
    recall: float
    f1: float
    p_exact: float
    sentences: int
    samples: int
    scores: Scores

    def __repr__(self) -> str:
        return (
            f"Prediction(d={self.d}, precision={self.precision:.4f}, recall={self.recall:.4f}, "
            f"f1={self.f1:.4f}, p_exact={self.p_exact:.3f}, sentences={self.sentences}, "
            f"samples={self.samples})"
        )


#: The options :func:`predict` does not take, and why (the simulations do not model them).
NOT_MODELLED = {
    "decoder": "the simulations decode as their gate does (the entrywise gate with the entry "
    "decoder, the others with the trace decoder)",
    "unary_mask": "the entrywise gate's simulation models the unary P_A unmasked",
    "prune": "the simulations prune at the dtype's epsilon",
    "weights": "the capacity model has no simulation of the weighted table",
    "beam": "the capacity model has no simulation of the weighted table",
}
#: What :func:`predict` says of the options whose declaration says more than it models.
_NOTES = {
    "readback": """How the clean-up gate reads a completed cell (docs/method.md, section 7):
    the model simulates all three read-backs, ``"cancel"`` with each item leaking, once
    read, with its read's error. The entrywise and trace gates read with ``"matched"``
    only.""",
}


def _simulation(opt: DCYKOptions) -> Any:
    """The simulation of ``opt``'s mode, if it models its read-back (the registry's facts:
    :mod:`fastdcyk.registry.modes`)."""
    mode = opt.mode
    if mode.simulation is None:
        raise ValueError(
            f"the capacity model has no simulation of {mode.describe()}: measure it with "
            "fastdcyk.dcyk"
        )
    if opt.readback not in mode.modelled_readbacks:
        have = " and ".join(repr(r) for r in mode.modelled_readbacks)
        raise ValueError(
            f"the capacity model has no model of readback={opt.readback!r} with "
            f"{mode.describe()}; it simulates {have}: measure it with fastdcyk.dcyk, or "
            f"model readback={mode.modelled_readbacks[0]!r} (the cancelling read-back's "
            "noise is at most the plain least-squares one's)"
        )
    return mode.part("simulation")


def _grammar(grammar: Any) -> Grammar:
    grammar = as_grammar(grammar)
    if not grammar.is_cnf:
        raise ValueError(
            "the capacity model needs a grammar in Chomsky normal form: use "
            "grammar.to_cnf(), or read it with cnf='convert'"
        )
    return grammar


def _is_length(sentences_or_length: Any) -> bool:
    return isinstance(sentences_or_length, int | np.integer) and not isinstance(
        sentences_or_length, bool
    )


def _detections_per_cell(grammar: Grammar) -> tuple[int, int]:
    """The detections of a unary cell and of a binary one (the nonterminals with a rule
    A -> a, those with a rule A -> B C): the units of the progress bar."""
    st = rule_structure(grammar)
    return len(st.unary), len(st.binary)


def _detections(n: int, per_cell: tuple[int, int]) -> int:
    return n * per_cell[0] + (_cells(n) - n) * per_cell[1]


def _sentences(grammar: Grammar, sentences_or_length: Any, n_sentences: int, seed: int):
    if _is_length(sentences_or_length):
        length = int(sentences_or_length)
        if length < 1:
            raise ValueError(f"a sentence length must be >= 1, got {length}")
        sents = generate(grammar, n_sentences, min_len=length, max_len=length, seed=seed)
        if not sents:
            raise ValueError(f"the grammar derives no sentence of length {length}")
        return sents
    if isinstance(sentences_or_length, str | bytes) or not isinstance(
        sentences_or_length, Iterable
    ):
        raise TypeError(
            "sentences_or_length must be a sentence length (an int) or a list of sentences "
            f"(each a str or a sequence of words), got {sentences_or_length!r}; "
            'for one sentence pass ["the words"]'
        )
    sents = [tuple(s.split()) if isinstance(s, str) else tuple(s) for s in sentences_or_length]
    if not sents:
        raise ValueError("no sentences given")
    return sents


@takes_options(exclude=("variant",), refused=NOT_MODELLED, notes=_NOTES)
def estimate_memory(
    grammar: Grammar | str,
    length: int,
    d: int,
    variant: str = DEFAULT_VARIANT,
    **options: Any,
) -> int:
    """Peak bytes the capacity model needs for sentences of ``length`` words at ``d``.

    The model's arrays grow with the sentence length n: every simulation keeps a weight per (cell,
    nonterminal) and the spectra of the span sums, and each mode's its own (:meth:`Simulation.memory
    <fastdcyk.engine.backends.simulation.parser.Simulation.memory>`): the trace model draws, for
    each cell, a value for every (i1, k1, k2, j2) of spans, (n + 1)^4 of them, and gathers the
    rules' pairs over (n + 1)^2 spans; the paper variant's model keeps a length-d mask per (cell,
    nonterminal); the clean-up model with the matched read-back a nonterminal x nonterminal matrix
    of overlaps, with the least-squares read-back (``readback``, the cleanup variant's default) the
    symbol vectors in float64. Its time grows likewise: about (n + 1)^6 for the trace model.

    Parameters
    ----------
    grammar : Grammar or str
    length : int
        The sentences' length n.
    d : int
    variant : {"cleanup", "trace", "paper"}, default "cleanup"
    {options}

    Examples
    --------
    >>> estimate_memory("G0", 7, 1024) < 2**27
    True
    """
    grammar = _grammar(grammar)
    n = check_int("length", length, 1)
    d = check_dim(d)
    return _model_memory(grammar, n, d, resolve(variant, **options))


def _model_memory(grammar: Grammar, n: int, d: int, opt: DCYKOptions) -> int:
    return int(_simulation(opt).memory(grammar, n, d, opt))


def _check_memory(grammar: Grammar, length: int, d: int, opt: DCYKOptions) -> None:
    """MemoryError, before anything is computed, when the model's memory
    (:func:`estimate_memory`) exceeds what the system has available; the message names the
    longest sentences that fit."""
    need = _model_memory(grammar, length, d, opt)
    avail = system_memory.available_memory()
    if avail is None or need <= avail:
        return
    fits = length - 1
    while fits >= 1 and _model_memory(grammar, fits, d, opt) > 0.9 * avail:
        fits -= 1
    hint = f"sentences of at most {fits} words fit" if fits >= 1 else "free some memory"
    need_text, have = system_memory.format_bytes(need), system_memory.format_bytes(avail)
    raise MemoryError(
        f"the capacity model ({opt.variant}) for sentences of {length} words at d = {d} "
        f"needs about {need_text}, but only {have} of memory is available: {hint}. (Its "
        "memory grows as (n + 1)^4 and its time as (n + 1)^6 with the sentence length n for "
        "the trace variant.)"
    )


#: How many times :func:`estimate_seconds` times the model on each of its probe sentences.
PROBE_REPEATS = 2


def _fit(
    terms: Callable[[int], tuple[float, float]], probes: list[tuple[int, float]]
) -> Callable[[int], float]:
    """Seconds for a sentence of n words, ``w1 t1(n) + w2 t2(n)`` with ``terms(n) = (t1, t2)``
    and non-negative weights through the probes' (n, seconds)."""
    rows = np.array([terms(n) for n, _ in probes], float)
    times = np.array([t for _, t in probes], float)
    w = np.array([times[-1] / rows[-1, 0], 0.0])  # one probe: the first term alone
    if len(probes) == 2 and abs(np.linalg.det(rows)) > 0:
        w = np.linalg.solve(rows, times)
        if w[0] < 0:  # the time grows faster than the second term: it alone
            w = np.array([0.0, times[-1] / rows[-1, 1]])
        elif w[1] < 0:  # slower than the first: it alone
            w = np.array([times[-1] / rows[-1, 0], 0.0])
    return lambda n: float(np.dot(w, terms(n)))


@takes_options(exclude=("variant",), refused=NOT_MODELLED, notes=_NOTES)
def estimate_seconds(
    grammar: Grammar | str,
    sentences_or_length: int | Sequence[str | Sequence[str]],
    d: int,
    *,
    variant: str = DEFAULT_VARIANT,
    samples: int = 3,
    sentences: int = 100,
    seed: int = 0,
    max_cells: int | None = MAX_CELLS,
    **options: Any,
) -> float:
    """Seconds :func:`predict` with the same arguments will take on this machine.

    The model is timed on two short sentences of the grammar (with the first codebook, at this d: 12
    and 48 words for the clean-up model, 5 and 10 for the trace model, fewer when the sentences
    asked for are shorter) and scaled by what its time grows with (its cells and the splits of a
    cell for the clean-up model: a cell costs a read and a solve, a split the rules of its
    children's candidates; :meth:`Simulation.cost_terms
    <fastdcyk.engine.backends.simulation.parser.Simulation.cost_terms>`), as is symbolic CYK's time
    for the gold charts. An order of magnitude, not a bound: it costs a few tenths of a second, and
    it assumes that longer sentences fill their cells as the short ones do.

    Parameters
    ----------
    grammar, sentences_or_length, d, variant, samples, sentences, seed, max_cells
        As for :func:`predict`.
    {options}

    Returns
    -------
    float

    Examples
    --------
    >>> estimate_seconds("G0", 20, 64, samples=1, sentences=10) < 60
    True
    """
    grammar = _grammar(grammar)
    d = check_dim(d)
    samples, sentences = check_int("samples", samples, 1), check_int("sentences", sentences, 1)
    opt = resolve(variant, dtype="float64", **options)
    simulation = _simulation(opt)
    if _is_length(sentences_or_length):
        n = check_int("length", sentences_or_length, 1)
        lengths = [n] * _drawn(n, sentences, samples, max_cells)
    else:
        lengths = [len(s) for s in _sentences(grammar, sentences_or_length, sentences, seed)]
    _check_memory(grammar, max(lengths), d, opt)
    t0 = time.perf_counter()
    unitary = VARIANTS[opt.variant]["unitary"]
    cb = default_codebook(grammar, int(d), seed, "float64", unitary=unitary, threads=1)
    sim = simulation(grammar, cb, opt)
    setup = time.perf_counter() - t0
    rng = np.random.default_rng(seed)
    top = max(lengths)
    sim_probes, gold_probes = [], []
    for size in sorted({min(top, p) for p in simulation.probe_lengths}):
        try:  # a probe of lengths the grammar does not derive times nothing
            drawn = generate(grammar, 3, min_len=max(1, size // 2), max_len=size, seed=seed)
        except ValueError:
            continue
        if not drawn:
            continue
        s = max(drawn, key=len)
        if not gold_probes:  # the first run of a simulation compiles and caches: untimed
            sim.run(s[:2] if len(s) > 2 else s, rng)
        gold, run = np.inf, np.inf
        for _ in range(PROBE_REPEATS):  # the quickest of a few: a busy core only slows
            t1 = time.perf_counter()
            cyk(grammar, s)
            t2 = time.perf_counter()
            sim.run(s, rng)
            t3 = time.perf_counter()
            gold, run = min(gold, t2 - t1), min(run, t3 - t2)
        gold_probes.append((len(s), gold))
        sim_probes.append((len(s), run))
    if not sim_probes:
        return samples * setup
    run, gold = _fit(simulation.cost_terms, sim_probes), _fit(Simulation.cost_terms, gold_probes)
    return float(samples * setup + sum(gold(n) + samples * run(n) for n in lengths))


@takes_options(exclude=("variant",), refused=NOT_MODELLED, notes=_NOTES)
def predict(
    grammar: Grammar | str,
    sentences_or_length: int | Sequence[str | Sequence[str]],
    d: int,
    *,
    variant: str = DEFAULT_VARIANT,
    samples: int = 3,
    sentences: int = 100,
    seed: int = 0,
    max_cells: int | None = MAX_CELLS,
    progress: bool | float | None = None,
    **options: Any,
) -> Prediction:
    """Predict D-CYK's cell precision, recall, F1 and exact-table rate, without parsing.

    Parameters
    ----------
    grammar : Grammar or str
        A CNF grammar, or a built-in name / file path for :meth:`Grammar.load`.
    sentences_or_length : int or list of sentences
        The sentences (str or sequences of words), or a length: then ``sentences``
        sentences of that length are drawn from the grammar (seed ``seed``).
    d : int
        The dimension.
    variant : {"cleanup", "trace", "paper"}, default "cleanup"
        As for :func:`fastdcyk.dcyk` (:data:`fastdcyk.options.DEFAULT_VARIANT`).
    {options}
    samples : int, default 3
        Codebook draws (seeds ``seed``, ``seed + 1``, ...): the same codebooks that
        ``dcyk(..., seed=s)`` would build.
    sentences : int, default 100
        Sentences drawn when a length is given.
    seed : int, default 0
    max_cells : int or None, default :data:`MAX_CELLS`
        When a length is given: draw fewer sentences than ``sentences`` where ``samples``
        times that many would pass this many cells (at least one per codebook). A long
        sentence holds many cells, and every one of them is scored: at 200 words, three
        sentences per codebook score as many cells as 1,300 of 10 words. None simulates
        every sentence asked for. A list of sentences is always simulated whole.
    progress : bool, float or None, default None
        Show a progress bar over the simulated detections (None: once the prediction has run
        2 seconds, on a terminal only; a number: only once the
        prediction has run that many seconds).

    Returns
    -------
    Prediction

    Raises
    ------
    MemoryError
        Before anything is computed, when the model's arrays for the longest sentence
        (:func:`estimate_memory`) do not fit in the memory available.

    Examples
    --------
    >>> import fastdcyk
    >>> p = fastdcyk.capacity.predict("G2", 5, 1024, samples=1, sentences=20)
    >>> p.f1 > 0.9
    True
    """
    grammar = _grammar(grammar)
    d = check_dim(d)
    samples, sentences = check_int("samples", samples, 1), check_int("sentences", sentences, 1)
    opt = resolve(variant, dtype="float64", **options)
    simulation = _simulation(opt)
    if _is_length(sentences_or_length) and sentences_or_length >= 1:  # else: _sentences says
        sentences = _drawn(int(sentences_or_length), sentences, samples, max_cells)
    sents = _sentences(grammar, sentences_or_length, sentences, seed)
    _check_memory(grammar, max(len(s) for s in sents), d, opt)
    # each gold chart when its sentence is first simulated (a 500-word one takes seconds):
    # the progress bar starts at once instead of after every chart is filled
    golds: list[dict | None] = [None] * len(sents)
    known = grammar.terminal_set
    for s in sents:  # an unknown word is an error before any work, as it was
        for i, w in enumerate(Grammar.normalize_words(s)):
            if w not in known:
                raise UnknownWordError(w, i, grammar.terminal_like(w))
    total, exact = Scores(0, 0, 0), 0
    unitary = VARIANTS[opt.variant]["unitary"]
    delay = check_progress(progress)
    per_cell = _detections_per_cell(grammar)
    work = samples * sum(_detections(len(s), per_cell) for s in sents)
    bar = progress_bar(delay, work, f"capacity d={d}", "detection")
    on_progress = None if bar is None else bar.update
    try:
        for k in range(samples):
            cb = default_codebook(grammar, int(d), seed + k, "float64", unitary=unitary, threads=1)
            sim = simulation(grammar, cb, opt)
            rng = np.random.default_rng(np.random.SeedSequence(seed + k, spawn_key=(0xCA9,)))
            for i, s in enumerate(sents):
                gold = golds[i]
                if gold is None:
                    gold = golds[i] = cyk(grammar, s, strict=True)
                chart = sim.run(s, rng, on_progress)
                total = total + cell_scores(gold, chart)
                exact += chart == gold
    finally:
        if bar is not None:
            bar.close()
    return Prediction(
        int(d),
        total.precision,
        total.recall,
        total.f1,
        exact / (len(sents) * samples),
        len(sents),
        samples,
        total,
    )


def required_dim(
    grammar: Grammar | str,
    length: int,
    target_f1: float = 0.99,
    *,
    predictions: dict[int, Prediction] | None = None,
    max_dim: int | None = None,
    **kwargs: Any,
) -> int | None:
    """The smallest d of :data:`DIM_GRID` (64 * 2^(k/4), up to 16384) predicted to reach
    ``target_f1``.

    The search doubles d from 256 until the target is reached, then bisects on the grid
    below, so that the expensive large d are only tried when needed. It assumes that F1
    grows with d, which holds on average over codebooks but not for each: with few
    ``samples`` one codebook's symbol vectors can make a larger d predict (and measure)
    lower, so use several samples (``samples=5``) for a decision.

    Parameters
    ----------
    grammar : Grammar or str
    length : int
        Sentence length.
    target_f1 : float, default 0.99
    predictions : dict, optional
        Predictions already made with the same arguments, by d; filled with the new ones.
    max_dim : int, optional
        The largest d to try (the largest of the grid not above it); default the grid's
        top, 16384. The cost of a prediction grows with d: on a grammar of thousands of
        rules a variant that needs more than the dimensions at hand can take minutes per
        dimension above 4096.
    **kwargs :
        Passed to :func:`predict` (variant, encoding, samples, sentences, seed, ...).

    Returns
    -------
    int or None
        None when no d of the grid up to ``max_dim`` is predicted to reach the target.
    """
    number = isinstance(target_f1, int | float) and not isinstance(target_f1, bool)
    if not (number and 0.0 < target_f1 <= 1.0):
        raise ValueError(f"target_f1 must be a number in (0, 1], got {target_f1!r}")
    check_int("length", length, 1)
    if max_dim is not None:
        check_int("max_dim", max_dim, DIM_GRID[0])
    grammar = _grammar(grammar)
    made = {} if predictions is None else predictions
    grid = [d for d in DIM_GRID if max_dim is None or d <= max_dim]

    def ok(k: int) -> bool:
        d = grid[k]
        if d not in made:
            made[d] = predict(grammar, length, d, **kwargs)
        return made[d].f1 >= target_f1

    lo = 0
    hi = min(DIM_GRID.index(256), len(grid) - 1)
    while not ok(hi):  # F1 grows with d: double until the target is reached
        if hi == len(grid) - 1:
            return None
        lo = hi + 1
        hi = min(hi + 4, len(grid) - 1)
    while lo < hi:  # then bisect on the grid
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    return grid[lo]

"""A capacity model: the fidelity D-CYK will reach, predicted without any d x d work.

:func:`predict` runs symbolic CYK over modelled readouts (the simulation of the options'
detection mode, :mod:`fastdcyk.engine.modes`, on :mod:`fastdcyk.engine.simulation`: the exact
part of each readout from the codebook's own symbol spectra, the rest as noise of the
variance the algebra gives), with the variant's gate, order and decoder, and scores the
simulated charts against symbolic CYK; :func:`required_dim` searches the smallest d that
reaches a target; :func:`estimate_memory` is the model's own memory.

See docs/method.md, section 5, for the derivation and docs/results.md for the validation
against measurement.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fastdcyk.cfg.cyk import UnknownWordError, cyk
from fastdcyk.cfg.generate import generate
from fastdcyk.cfg.grammar import Grammar, as_grammar
from fastdcyk.cfg.metrics import Scores, cell_scores
from fastdcyk.engine import modes
from fastdcyk.engine.plan import default_codebook
from fastdcyk.engine.progress import check_progress, progress_bar
from fastdcyk.hrr import memory as system_memory
from fastdcyk.options import (
    DEFAULT_VARIANT,
    VARIANTS,
    DCYKOptions,
    check_dim,
    check_int,
    resolve,
    takes_options,
)

__all__ = ["DIM_GRID", "Prediction", "estimate_memory", "predict", "required_dim"]

#: Dimensions required_dim tries: 64 * 2 ** (k / 4), rounded to a multiple of 16, to 16384.
DIM_GRID = tuple(sorted({int(round(64 * 2 ** (k / 4) / 16)) * 16 for k in range(0, 33)}))


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
        Sentences simulated (per sample).
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
    :mod:`fastdcyk.engine.modes`)."""
    mode = modes.select(opt.gate, opt.weights)
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


def _sentences(grammar: Grammar, sentences_or_length: Any, n_sentences: int, seed: int):
    if isinstance(sentences_or_length, int | np.integer) and not isinstance(
        sentences_or_length, bool
    ):
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

    The model's arrays grow with the sentence length n: every simulation keeps a weight per
    (cell, nonterminal) and the spectra of the span sums, and each mode's its own
    (:meth:`Simulation.memory <fastdcyk.engine.simulation.Simulation.memory>`): the trace
    model draws, for each cell, a value for every (i1, k1, k2, j2) of spans, (n + 1)^4 of
    them, and gathers the rules' pairs over (n + 1)^2 spans; the paper variant's model keeps
    a length-d mask per (cell, nonterminal); the clean-up model with the matched read-back a
    nonterminal x nonterminal matrix of overlaps, with the least-squares read-back
    (``readback``, the cleanup variant's default) the symbol vectors in float64. Its time
    grows likewise: about (n + 1)^6 for the trace model.

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
    progress : bool, float or None, default None
        Show a progress bar over the simulated sentences (None: once the prediction has run
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
    sents = _sentences(grammar, sentences_or_length, sentences, seed)
    _check_memory(grammar, max(len(s) for s in sents), d, opt)
    # each gold chart when its sentence is first simulated (a 500-word one takes seconds):
    # the progress bar starts at once instead of after every chart is filled
    golds: list[dict | None] = [None] * len(sents)
    known = frozenset(grammar.terminals)
    for s in sents:  # an unknown word is an error before any work, as it was
        for i, w in enumerate(Grammar.normalize_words(s)):
            if w not in known:
                raise UnknownWordError(w, i)
    total, exact = Scores(0, 0, 0), 0
    unitary = VARIANTS[opt.variant]["unitary"]
    delay = check_progress(progress)
    bar = progress_bar(delay, samples * len(sents), f"capacity d={d}", "sentence")
    try:
        for k in range(samples):
            cb = default_codebook(grammar, int(d), seed + k, "float64", unitary=unitary, threads=1)
            sim = simulation(grammar, cb, opt)
            rng = np.random.default_rng(np.random.SeedSequence(seed + k, spawn_key=(0xCA9,)))
            for i, s in enumerate(sents):
                gold = golds[i]
                if gold is None:
                    gold = golds[i] = cyk(grammar, s, strict=True)
                chart = sim.run(s, rng)
                total = total + cell_scores(gold, chart)
                exact += chart == gold
                if bar is not None:
                    bar.update(1)
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

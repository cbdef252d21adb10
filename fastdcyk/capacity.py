"""A capacity model: the fidelity D-CYK will reach, predicted without any d x d work.

:func:`predict` runs symbolic CYK over modelled readouts (:mod:`fastdcyk.engine.simulate`:
the exact part of each readout from the codebook's own symbol spectra, the rest as noise of
the variance the algebra gives), with the variant's gate, order and decoder, and scores the
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

from fastdcyk.cfg.cyk import cyk
from fastdcyk.cfg.generate import generate
from fastdcyk.cfg.grammar import Grammar
from fastdcyk.cfg.metrics import Scores, cell_scores
from fastdcyk.engine.plan import default_codebook
from fastdcyk.engine.progress import check_progress, progress_bar
from fastdcyk.engine.simulate import CleanSim, MaskSim, TraceSim
from fastdcyk.hrr import memory as _memory
from fastdcyk.options import (
    DEFAULT_VARIANT,
    VARIANTS,
    DCYKOptions,
    check_dim,
    check_int,
    resolve,
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


def _modelled(opt: DCYKOptions) -> DCYKOptions:
    """``opt``, if the model simulates its read-back (it has no model of ``"cancel"``)."""
    if opt.readback == "cancel":
        raise ValueError(
            "the capacity model simulates readback='lstsq' and 'matched'; readback='cancel' "
            "has no model (its reads are limited by the errors of the reads before them): "
            "measure it with fastdcyk.dcyk, or model readback='lstsq', its upper bound on "
            "the noise"
        )
    return opt


def _grammar(grammar: Any) -> Grammar:
    if isinstance(grammar, str):
        grammar = Grammar.load(grammar)
    if not isinstance(grammar, Grammar):
        raise TypeError(
            f"grammar must be a fastdcyk.Grammar, a built-in name or a file, got "
            f"{type(grammar).__name__}"
        )
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


def estimate_memory(
    grammar: Grammar | str,
    length: int,
    d: int,
    variant: str = DEFAULT_VARIANT,
    readback: str | None = None,
) -> int:
    """Peak bytes the capacity model needs for sentences of ``length`` words at ``d``.

    The model's arrays grow with the sentence length n: every variant keeps a weight per
    (cell, nonterminal) and the spectra of the span sums; the trace model draws, for each
    cell, a value for every (i1, k1, k2, j2) of spans, (n + 1)^4 of them, and gathers the
    rules' pairs over (n + 1)^2 spans; the paper variant's model keeps a length-d mask per
    (cell, nonterminal); the clean-up model with the matched read-back a nonterminal x
    nonterminal matrix of overlaps, with the least-squares read-back (``readback``, the
    cleanup variant's default) the symbol vectors in float64. Its time grows likewise:
    about (n + 1)^6 for the trace model.

    Examples
    --------
    >>> estimate_memory("G0", 7, 1024) < 2**27
    True
    """
    grammar = _grammar(grammar)
    n1 = check_int("length", length, 1) + 1
    d = check_dim(d)
    opt = _modelled(resolve(variant, readback=readback))
    gate = opt.gate
    nn, rules = len(grammar.nonterminals), len(grammar.binary_rules)
    h = d // 2 + 1
    need = 3 * nn * h * 16 + 8 * n1 * n1 * nn * 4 + 2 * n1 * n1 * h * 16  # spectra, weights
    if gate == "trace":
        need += 4 * 8 * n1**4 + 2 * 8 * n1 * n1 * rules  # span values, gathered rule pairs
    elif gate == "entrywise":
        need += 8 * n1 * n1 * nn * d  # masks
    elif opt.readback == "matched":
        need += 8 * nn * nn  # overlaps of the written symbols
    else:
        need += 8 * (nn + len(grammar.terminals)) * d  # the vectors, float64
    return int(need)


def _check_memory(
    grammar: Grammar, length: int, d: int, variant: str, readback: str | None = None
) -> None:
    """MemoryError, before anything is computed, when :func:`estimate_memory` exceeds what
    the system has available; the message names the longest sentences that fit."""
    need = estimate_memory(grammar, length, d, variant, readback)
    avail = _memory.available_memory()
    if avail is None or need <= avail:
        return
    fits = length - 1
    while fits >= 1 and estimate_memory(grammar, fits, d, variant, readback) > 0.9 * avail:
        fits -= 1
    hint = f"sentences of at most {fits} words fit" if fits >= 1 else "free some memory"
    raise MemoryError(
        f"the capacity model ({variant}) for sentences of {length} words at d = {d} needs "
        f"about {_memory.format_bytes(need)}, but only {_memory.format_bytes(avail)} of "
        f"memory is available: {hint}. (Its memory grows as (n + 1)^4 and its time as "
        "(n + 1)^6 with the sentence length n for the trace variant.)"
    )


def predict(
    grammar: Grammar | str,
    sentences_or_length: int | Sequence[str | Sequence[str]],
    d: int,
    *,
    variant: str = DEFAULT_VARIANT,
    encoding: str | None = None,
    order: str | None = None,
    beta: float | None = None,
    threshold: float | None = None,
    readback: str | None = None,
    candidate_level: float | None = None,
    samples: int = 3,
    sentences: int = 100,
    seed: int = 0,
    progress: bool | float | None = None,
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
    encoding, order, beta, threshold, readback, candidate_level :
        As in :func:`fastdcyk.dcyk` (the variant's defaults where None).
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
    opt = _modelled(
        resolve(
            variant,
            order=order,
            encoding=encoding,
            beta=beta,
            threshold=threshold,
            readback=readback,
            candidate_level=candidate_level,
        )
    )
    gate, order, encoding, beta, threshold = (
        opt.gate,
        opt.order,
        opt.encoding,
        opt.beta,
        opt.threshold,
    )
    sents = _sentences(grammar, sentences_or_length, sentences, seed)
    _check_memory(grammar, max(len(s) for s in sents), d, variant, opt.readback)
    golds = [cyk(grammar, s, strict=True) for s in sents]
    total, exact = Scores(0, 0, 0), 0
    unitary = VARIANTS[variant]["unitary"]
    delay = check_progress(progress)
    bar = progress_bar(delay, samples * len(sents), f"capacity d={d}", "sentence")
    try:
        for k in range(samples):
            cb = default_codebook(grammar, int(d), seed + k, "float64", unitary=unitary, threads=1)
            args = (grammar, cb, encoding, order, float(beta), float(threshold))
            if gate == "cleanup":
                sim = CleanSim(*args, readback=opt.readback, level=opt.candidate_level)
            else:
                sim = {"trace": TraceSim, "entrywise": MaskSim}[gate](*args)
            rng = np.random.default_rng(np.random.SeedSequence(seed + k, spawn_key=(0xCA9,)))
            for s, gold in zip(sents, golds, strict=True):
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

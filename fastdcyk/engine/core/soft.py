"""Soft terminals for :func:`fastdcyk.dcyk`: a position of a sentence given as weights over
the grammar's terminals (docs/method.md, section 11).

A sentence given to :func:`fastdcyk.dcyk` or :func:`fastdcyk.dcyk_batch` may hold, at any
position, a mapping ``{terminal: weight}`` instead of a word: the unary step then writes the
mixture sum_a p_a [a]- instead of one terminal's [a]-. Such a position becomes a
:class:`SoftWord`: a ``str`` (its most weighted terminal, which the result's ``words`` show)
that carries the weights. A one-hot mapping ``{a: 1.0}`` parses exactly as the word ``a``.

Examples
--------
>>> import fastdcyk as fd
>>> r = fd.dcyk("example", ["a", {"a": 0.9, "b": 0.1}, "b"], d=256)
>>> r.words
('a', SoftWord('a', {'a': 0.9, 'b': 0.1}), 'b')
>>> r.words[1] == "a"
True
>>> r.words[1].weights
(('a', 0.9), ('b', 0.1))
>>> print(r.tree())
(S (D a) (S (D a) (E b)))
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from fastdcyk.cfg.grammar import Rule, Symbol

__all__ = [
    "SUM_SLACK",
    "SoftWord",
    "has_soft",
    "lexical_of",
    "lexical_scores",
    "soft_word",
    "terminal_weights",
]


class SoftWord(str):
    """A position given as weights over terminals: the str of its most weighted terminal
    (the first of the grammar's order among equals), with the weights.

    Attributes
    ----------
    weights : tuple of (str, float)
        The terminals with a nonzero weight, in the grammar's order.
    """

    weights: tuple[tuple[str, float], ...]

    def __new__(cls, top: str, weights: tuple[tuple[str, float], ...]) -> SoftWord:
        self = super().__new__(cls, top)
        self.weights = weights
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (SoftWord, (str(self), self.weights))

    def __repr__(self) -> str:
        return f"SoftWord({str(self)!r}, {dict(self.weights)!r})"


#: How far above 1 a position's weights may sum: a softmax's rounding in any precision, and
#: the finite differences of a gradient check, stay within it; weights that are not a
#: distribution (multi-hot rows, scores, logits) go far beyond it.
SUM_SLACK = 1e-3


def soft_word(weights: Mapping[Any, Any], terminals: Sequence[str], pos: int) -> SoftWord:
    """A mapping ``{terminal: weight}`` checked against the grammar's ``terminals`` (Unicode
    NFC, as the caller normalised them) and made a :class:`SoftWord`."""
    order = {t: k for k, t in enumerate(terminals)}
    kept: list[tuple[int, str, float]] = []
    for t, w in weights.items():
        if t not in order:
            raise ValueError(f"position {pos}: {t!r} is not a terminal of the grammar")
        if isinstance(w, bool) or not isinstance(w, int | float | np.floating | np.integer):
            raise TypeError(f"position {pos}: the weight of {t!r} is {w!r}, not a number")
        w = float(w)
        if not math.isfinite(w) or not 0 <= w <= 1:
            raise ValueError(
                f"position {pos}: the weight of {t!r} is {w}; weights are probabilities in "
                "[0, 1] (a distribution over the terminals: divide them by their sum)"
            )
        if w > 0:
            kept.append((order[t], t, w))
    if not kept:
        raise ValueError(f"position {pos}: no terminal has a positive weight")
    total = math.fsum(w for *_, w in kept)
    if total > 1 + SUM_SLACK:
        raise ValueError(
            f"position {pos}: the weights sum to {total:g}; they are a distribution over the "
            "terminals, which may sum to less than 1 (the rest on terminals left out) but "
            "not to more: divide them by their sum"
        )
    kept.sort()
    top = max(kept, key=lambda x: (x[2], -x[0]))[1]
    return SoftWord(top, tuple((t, w) for _, t, w in kept))


def has_soft(words: Sequence[str]) -> bool:
    """Whether a sentence has a soft position (a :class:`SoftWord`)."""
    return any(isinstance(w, SoftWord) for w in words)


def terminal_weights(
    words: Sequence[str], terminals: Sequence[str], *, one_hot: bool = False
) -> np.ndarray | None:
    """(n, T) float64 weights of a sentence over ``terminals``: one-hot rows for words, a
    :class:`SoftWord`'s weights for it; None when the sentence has no soft position, unless
    ``one_hot``."""
    if not one_hot and not has_soft(words):
        return None
    order = {t: k for k, t in enumerate(terminals)}
    out = np.zeros((len(words), len(terminals)))
    for i, w in enumerate(words):
        for t, p in w.weights if isinstance(w, SoftWord) else ((w, 1.0),):
            out[i, order[t]] = p
    return out


def lexical_scores(grammar: Any, weights: np.ndarray) -> list[dict[str, float]]:
    """Per position, the lexical log scores of (n, T) weights over ``grammar.terminals``:
    ``{A: log sum_a p_a P(A -> a)}`` over the preterminals with a positive sum (P = 1 for an
    unweighted grammar's rules), which a one-hot row makes the word's own rules."""
    pre = grammar.preterminals
    row = {a: k for k, a in enumerate(pre)}
    col = {t: k for k, t in enumerate(grammar.terminals)}
    table = np.zeros((len(col), len(pre)))  # P(A -> a), terminals by preterminals
    for a, t in grammar.unary_rules:
        p = math.exp(grammar.log_prob(Rule(a, (Symbol(t, True),)))) if grammar.is_weighted else 1
        table[col[t], row[a]] += p
    mass = np.asarray(weights, dtype=np.float64) @ table
    return [{a: math.log(m) for a, m in zip(pre, r, strict=True) if m > 0} for r in mass]


def lexical_of(grammar: Any, words: Sequence[str]) -> list[dict[str, float] | None] | None:
    """The lexical scores of a sentence's soft positions for the trees
    (:class:`~fastdcyk.cfg.forest.Forest`, :func:`~fastdcyk.cfg.viterbi.viterbi`), by
    :func:`lexical_scores`; None for the words, and None when there is no soft position."""
    if not has_soft(words):
        return None
    scores = lexical_scores(grammar, terminal_weights(words, grammar.terminals, one_hot=True))
    return [s if isinstance(w, SoftWord) else None for w, s in zip(words, scores, strict=True)]

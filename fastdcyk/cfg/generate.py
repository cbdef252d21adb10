"""Random sentences from a CNF grammar, with exact control of their lengths.

Sampling is two-stage: a length is drawn uniformly among the lengths in ``[min_len, max_len]``
that the start symbol can derive, then a derivation of exactly that length is drawn
uniformly among all derivations (parse trees) of that length. A table of derivation counts,
``count[A][L]`` = number of parse trees rooted in A with L leaves, makes both stages exact:
expansion is top-down and only ever picks a rule and split point with a non-zero count, so
it always terminates, even on recursive grammars, and never backtracks.

Because trees, not strings, are uniform, an ambiguous sentence is drawn in proportion to
its number of parses. Draws are independent, so a list of sentences may contain repeats.
"""

from __future__ import annotations

import functools
import os
import random

import numpy as np

from fastdcyk.cfg.grammar import Grammar, GrammarError, as_grammar

__all__ = ["clear_cache", "generate"]

# Lengths checked when explaining an unreachable range.
_EXPLAIN_LIMIT = 30


@functools.lru_cache(maxsize=8)
def _derivation_counts(grammar: Grammar, max_len: int) -> dict[str, list[int]]:
    """``counts[A][L]``: the number of parse trees rooted in A whose yield has length L.

    Kept for the last few grammars and lengths (a large grammar's table costs seconds, and
    the capacity model and the studies draw from the same grammar again and again); the
    caller must not change it."""
    counts = {a: [0] * (max_len + 1) for a in grammar.nonterminals}
    for a, words in grammar.unary_by_lhs.items():
        if max_len >= 1:
            counts[a][1] = len(words)
    for length in range(2, max_len + 1):
        for a, pairs in grammar.binary_by_lhs.items():
            total = 0
            for b, c in pairs:
                left, right = counts[b], counts[c]
                total += sum(left[k] * right[length - k] for k in range(1, length))
            counts[a][length] = total
    return counts


def clear_cache() -> None:
    """Forget the derivation counts kept for the last few grammars."""
    _derivation_counts.cache_clear()


def _pick_split(
    pairs: tuple[tuple[str, str], ...], counts: dict[str, list[int]], length: int, pick: int
) -> tuple[str, str, int]:
    """The rule ``A -> B C`` and split k holding the ``pick``-th tree of length ``length``."""
    for b, c in pairs:
        left, right = counts[b], counts[c]
        for k in range(1, length):
            weight = left[k] * right[length - k]
            if pick < weight:
                return b, c, k
            pick -= weight
    raise AssertionError("pick exceeds the number of derivations")


def _ranges(lengths: list[int]) -> str:
    """'2, 4-7, 9' for [2, 4, 5, 6, 7, 9]."""
    parts: list[str] = []
    for length in lengths:
        if parts and length == int(parts[-1].split("-")[-1]) + 1:
            parts[-1] = f"{parts[-1].split('-')[0]}-{length}"
        else:
            parts.append(str(length))
    return ", ".join(parts)


def generate(
    grammar: Grammar | str | os.PathLike[str],
    n: int,
    min_len: int = 1,
    max_len: int = 7,
    seed: int | None = 0,
) -> list[tuple[str, ...]]:
    """Draw ``n`` random sentences of the grammar with lengths in ``[min_len, max_len]``.

    Each sentence's length is uniform among the lengths of the range that the grammar can
    derive; given its length, its parse tree is uniform among all parse trees of that length
    (so ambiguous sentences are drawn more often). Sentences may repeat.

    Parameters
    ----------
    grammar : Grammar or str or path
        A grammar in Chomsky normal form, or a built-in name / file path for
        :meth:`Grammar.load`.
    n : int
        How many sentences (0 gives an empty list).
    min_len, max_len : int
        Bounds on the number of words, inclusive; ``1 <= min_len <= max_len``.
    seed : int or None
        Seed of the :class:`random.Random` used; the same seed gives the same list. None
        draws fresh entropy.

    Returns
    -------
    list of tuple of str
        The sentences, each a tuple of words.

    Raises
    ------
    ValueError
        For a bad argument, or when the grammar derives no sentence with a length in the
        range (the message says which lengths it can derive).
    GrammarError
        When the grammar is not in CNF.
    TypeError
        When ``grammar`` is not a grammar.

    Examples
    --------
    >>> generate(Grammar.builtin("example"), 3, min_len=2, max_len=4, seed=1)
    [('a', 'b'), ('a', 'a', 'b'), ('a', 'a', 'b')]
    """
    for name, value in (("n", n), ("min_len", min_len), ("max_len", max_len)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{name} must be an int, got {value!r}")
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if min_len < 1:
        raise ValueError(
            f"min_len must be >= 1 (CNF grammars derive no empty string), got {min_len}"
        )
    if min_len > max_len:
        raise ValueError(f"min_len ({min_len}) must not exceed max_len ({max_len})")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int | np.integer)):
        raise ValueError(f"seed must be an int or None, got {seed!r}")
    grammar = as_grammar(grammar)  # or a built-in name or a file, as dcyk takes
    if not grammar.is_cnf:
        raise GrammarError(
            "generate needs a grammar in Chomsky normal form; convert it with Grammar.to_cnf()"
        )

    counts = _derivation_counts(grammar, max_len)
    start = grammar.start
    lengths = [k for k in range(min_len, max_len + 1) if counts[start][k]]
    if not lengths:
        limit = max(max_len, _EXPLAIN_LIMIT)
        wider = _derivation_counts(grammar, limit)[start]
        derivable = [k for k in range(1, limit + 1) if wider[k]]
        can = (
            f"it derives sentences of lengths {_ranges(derivable)}"
            if derivable
            else "it derives no sentence"
        )
        raise ValueError(
            f"the grammar derives no sentence with a length in [{min_len}, {max_len}]: "
            f"{can} (lengths up to {limit} checked)"
        )

    rng = random.Random(None if seed is None else int(seed))
    unary, binary = grammar.unary_by_lhs, grammar.binary_by_lhs
    sentences: list[tuple[str, ...]] = []
    for _ in range(n):
        words: list[str] = []
        # An explicit stack of (nonterminal, length) keeps deep recursive trees off the
        # Python call stack; the left child is pushed last so words come out in order.
        stack = [(start, rng.choice(lengths))]
        while stack:
            a, length = stack.pop()
            if length == 1:
                words.append(rng.choice(unary[a]))
                continue
            b, c, k = _pick_split(binary[a], counts, length, rng.randrange(counts[a][length]))
            stack.append((c, length - k))
            stack.append((b, k))
        sentences.append(tuple(words))
    return sentences

"""The training data of :func:`fastdcyk.learn_grammar`, checked before any training.

Every fault is refused here, with what was wrong and what to do, so that nothing is
computed on data that cannot train: strings that are not sentences, labels that are not
booleans or not one per string, brackets that cross or exceed their sentence, an empty
training set, no string in the language.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Data", "check_data", "crossing_spans", "split"]

#: A bracket: the span (i, j) of words i..j-1 (0-based fenceposts, as the chart's cells).
Span = tuple[int, int]


@dataclass(frozen=True)
class Data:
    """Checked training data: sentences as tuples of words, one label and one tuple of
    brackets (possibly empty) each."""

    strings: tuple[tuple[str, ...], ...]
    labels: tuple[bool, ...]
    brackets: tuple[tuple[Span, ...], ...]

    @property
    def words(self) -> tuple[str, ...]:
        """The words seen, in order of first appearance."""
        return tuple(dict.fromkeys(w for s in self.strings for w in s))

    def take(self, rows: Sequence[int]) -> Data:
        return Data(
            tuple(self.strings[k] for k in rows),
            tuple(self.labels[k] for k in rows),
            tuple(self.brackets[k] for k in rows),
        )

    def __len__(self) -> int:
        return len(self.strings)


def _sentence(k: int, s: Any) -> tuple[str, ...]:
    if isinstance(s, str):
        words = tuple(s.split())
    elif isinstance(s, Iterable) and not isinstance(s, bytes | dict):
        words = tuple(s)
        bad = next((w for w in words if not isinstance(w, str) or not w or w != w.strip()), None)
        if bad is not None:
            raise ValueError(
                f"strings[{k}] holds {bad!r}: a sentence is a str of words or a sequence of "
                "non-empty words without spaces"
            )
    else:
        raise TypeError(
            f"strings[{k}] is {type(s).__name__}: a sentence is a str of words or a sequence of str"
        )
    if not words:
        raise ValueError(f"strings[{k}] is empty: every sentence needs at least one word")
    return words


def _label(k: int, y: Any) -> bool:
    if isinstance(y, bool | np.bool_):
        return bool(y)
    raise TypeError(
        f"labels[{k}] is {y!r} ({type(y).__name__}): labels are booleans, True for a string "
        "in the language and False for one outside it"
    )


def _brackets(k: int, spans: Any, n: int) -> tuple[Span, ...]:
    if spans is None:
        return ()
    if isinstance(spans, str | bytes) or not isinstance(spans, Iterable):
        raise TypeError(
            f"brackets[{k}] is {type(spans).__name__}: give a sequence of spans (i, j), the "
            "words i..j-1 of the sentence (0-based), or None"
        )
    out: list[Span] = []
    for span in spans:
        try:
            i, j = span
            ok = all(isinstance(x, int | np.integer) and not isinstance(x, bool) for x in (i, j))
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise TypeError(
                f"brackets[{k}] holds {span!r}: a bracket is a pair of ints (i, j), the words "
                "i..j-1 of the sentence (0-based)"
            )
        i, j = int(i), int(j)
        if not 0 <= i < j <= n:
            raise ValueError(
                f"brackets[{k}] holds ({i}, {j}), outside the sentence of {n} words: a "
                f"bracket (i, j) needs 0 <= i < j <= {n}"
            )
        out.append((i, j))
    for a, (i, j) in enumerate(out):
        for p, q in out[a + 1 :]:
            if i < p < j < q or p < i < q < j:
                raise ValueError(
                    f"brackets[{k}] holds ({i}, {j}) and ({p}, {q}), which cross: the "
                    "brackets of one sentence nest or are disjoint (those of one tree)"
                )
    return tuple(dict.fromkeys(out))


def check_data(strings: Any, labels: Any = None, brackets: Any = None) -> Data:
    """The data checked and normalised (see :func:`fastdcyk.learn_grammar`).

    Raises
    ------
    TypeError, ValueError
        For anything :func:`fastdcyk.learn_grammar` refuses, with what to do.
    """
    if isinstance(strings, str | bytes) or not isinstance(strings, Iterable):
        raise TypeError(
            f"strings must be a sequence of sentences (each a str of words or a sequence of "
            f"str), got {type(strings).__name__}"
        )
    sentences = tuple(_sentence(k, s) for k, s in enumerate(strings))
    if not sentences:
        raise ValueError("no training strings: give at least one sentence in the language")
    if labels is None:
        ys = (True,) * len(sentences)
    else:
        if isinstance(labels, str | bytes) or not isinstance(labels, Iterable):
            raise TypeError(
                f"labels must be a sequence of booleans (one per string) or None, got "
                f"{type(labels).__name__}"
            )
        ys = tuple(_label(k, y) for k, y in enumerate(labels))
        if len(ys) != len(sentences):
            raise ValueError(
                f"{len(ys)} labels for {len(sentences)} strings: give one label per string"
            )
    if not any(ys):
        raise ValueError(
            "no string is labelled True: a grammar is learned from strings in its language "
            "(with, optionally, strings outside it labelled False)"
        )
    if brackets is None:
        spans: tuple[tuple[Span, ...], ...] = ((),) * len(sentences)
    else:
        if isinstance(brackets, str | bytes) or not isinstance(brackets, Iterable):
            raise TypeError(
                f"brackets must be a sequence (one entry per string: its spans, or None), "
                f"got {type(brackets).__name__}"
            )
        given = list(brackets)
        if len(given) != len(sentences):
            raise ValueError(
                f"{len(given)} bracket entries for {len(sentences)} strings: give one per "
                "string (None or () where a string has none)"
            )
        pairs = enumerate(zip(given, sentences, strict=True))
        spans = tuple(_brackets(k, b, len(s)) for k, (b, s) in pairs)
        for k, (b, y) in enumerate(zip(spans, ys, strict=True)):
            if b and not y:
                raise ValueError(
                    f"brackets[{k}] are given for a string labelled False: brackets are the "
                    "phrases of a parse, which only strings in the language have"
                )
    return Data(sentences, ys, spans)


def split(data: Data, held_out: float, seed: int) -> tuple[Data, Data]:
    """Training and held-out parts, each label's strings split in the ratio ``held_out``
    (at least one held-out string of each label present, where there are two or more)."""
    rng = random.Random(seed)
    train: list[int] = []
    held: list[int] = []
    for label in (True, False):
        rows = [k for k, y in enumerate(data.labels) if y is label]
        rng.shuffle(rows)
        k = round(held_out * len(rows)) if held_out > 0 else 0
        if held_out > 0 and len(rows) >= 2:
            k = min(max(k, 1), len(rows) - 1)
        held += rows[:k]
        train += rows[k:]
    return data.take(sorted(train)), data.take(sorted(held))


def crossing_spans(n: int, brackets: Sequence[Span]) -> list[Span]:
    """The spans (i, j) of two or more words of a sentence of n words that cross one of its
    brackets: no constituent of a tree with those brackets covers them."""
    out = []
    for i in range(n):
        for j in range(i + 2, n + 1):
            if any(i < p < j < q or p < i < q < j for p, q in brackets):
                out.append((i, j))
    return out

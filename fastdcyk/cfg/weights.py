"""The weights of a probabilistic grammar: probabilities or log weights given to
:class:`~fastdcyk.cfg.grammar.Grammar`, checked and brought to one form.

``log_weights`` turns ``probs=`` or ``log_probs=`` (a sequence aligned with the rules, or a
mapping by rule) into the rules' log weights and the probabilities as given; ``check_sums``
warns where a left side's probabilities do not add up to 1.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from numbers import Real
from typing import Any

import numpy as np

from fastdcyk.cfg.symbols import GrammarError, GrammarWarning, Rule, escape_name, nfc_rule

__all__ = ["check_chart", "check_lexical", "check_sums", "log_weights"]


def log_weights(
    rules: list[Rule],
    probs: Iterable[float] | Mapping[Rule, float] | None,
    log_probs: Iterable[float] | Mapping[Rule, float] | None,
) -> tuple[tuple[float, ...] | None, tuple[float, ...] | None]:
    """The rules' log weights from ``probs`` or ``log_probs`` (aligned with ``rules``), and
    the probabilities as given (None unless ``probs``)."""
    if probs is not None and log_probs is not None:
        raise ValueError("give probs or log_probs, not both")
    given = probs if probs is not None else log_probs
    if given is None:
        return None, None
    what = "probs" if probs is not None else "log_probs"
    if isinstance(given, str | bytes):
        raise GrammarError(
            f"{what} is a string ({given!r}): give one number per rule (a list aligned with "
            "the rules, or a mapping from rule to number)"
        )
    if not isinstance(given, Iterable | Mapping):
        raise GrammarError(
            f"{what} is {given!r} ({type(given).__name__}): give one number per rule (a "
            "list aligned with the rules, or a mapping from rule to number)"
        )
    if isinstance(given, Mapping):
        by_rule = {}
        for r, v in given.items():
            if not isinstance(r, Rule):
                raise GrammarError(
                    f"{what} has the key {r!r}, not a Rule: key it by the grammar's rules "
                    "(Rule objects, as Grammar.rules holds them)"
                )
            by_rule[nfc_rule(r)] = v
        missing = [r for r in rules if r not in by_rule]
        if missing:
            raise GrammarError(f"{what} gives no value for rule '{missing[0]}'")
        extra = [r for r in by_rule if r not in set(rules)]
        if extra:
            raise GrammarError(
                f"{what} gives a value for '{extra[0]}', which is not a rule of the grammar"
                + (f" ({len(extra) - 1} more such)" if len(extra) > 1 else "")
            )
        values = [by_rule[r] for r in rules]
    else:
        values = list(given)
        if len(values) != len(rules):
            raise GrammarError(f"{what} has {len(values)} values for {len(rules)} rules")
    out, linear = [], []
    for rule, value in zip(rules, values, strict=True):
        if isinstance(value, bool | np.bool_):  # True is not a probability of 1
            raise GrammarError(f"the weight of rule '{rule}' is {value!r}, not a number")
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise GrammarError(f"the weight of rule '{rule}' is {value!r}, not a number") from None
        if probs is not None:
            if not 0.0 < value <= 1.0:
                raise GrammarError(
                    f"the probability of rule '{rule}' is {value!r}, outside (0, 1]: a rule "
                    "of probability 0 is left out"
                )
            linear.append(value)
            value = math.log(value)
        elif not math.isfinite(value):
            raise GrammarError(f"the log weight of rule '{rule}' is {value!r}, not finite")
        out.append(value)
    return tuple(out), (tuple(linear) if probs is not None else None)


def check_sums(grammar: Any) -> None:
    """A warning naming the left sides whose rule probabilities do not add up to 1."""
    totals: dict[str, float] = {}
    for rule, logp in zip(grammar.rules, grammar.log_probs or (), strict=True):
        totals[rule.lhs] = totals.get(rule.lhs, 0.0) + math.exp(logp)
    off = [(lhs, total) for lhs, total in totals.items() if abs(total - 1.0) > 1e-6]
    if off:
        shown = ", ".join(f"{escape_name(a)} ({t:.6g})" for a, t in off[:3])
        more = f" and {len(off) - 3} more" if len(off) > 3 else ""
        warnings.warn(
            f"the probabilities of the rules of {shown}{more} do not add up to 1: the grammar "
            "is not a proper PCFG (its most probable trees are defined, its sentence "
            "probabilities are not probabilities)",
            GrammarWarning,
            stacklevel=4,
        )


def check_lexical(
    grammar: Any, lexical: Sequence[Mapping[str, float] | None] | None, n: int
) -> list[Mapping[str, float] | None] | None:
    """``lexical`` checked against a sentence of ``n`` words: one entry per position, None
    or a mapping from nonterminals with a rule A -> a (preterminals) to finite or -inf
    log scores."""
    if lexical is None:
        return None
    if isinstance(lexical, Mapping) or not isinstance(lexical, Sequence):
        raise TypeError("lexical must be a sequence with one mapping (or None) per word")
    lexical = list(lexical)
    if len(lexical) != n:
        raise ValueError(f"lexical has {len(lexical)} entries for a sentence of {n} words")
    pre = set(grammar.preterminals)
    for i, entry in enumerate(lexical):
        if entry is None:
            continue
        if not isinstance(entry, Mapping):
            raise TypeError(f"lexical[{i}] must be a mapping {{preterminal: log score}}")
        for a, v in entry.items():
            if a not in pre:
                raise ValueError(
                    f"lexical[{i}] names {a!r}, which is not a preterminal of the grammar "
                    "(a nonterminal with a rule A -> 'word')"
                )
            if isinstance(v, bool | np.bool_) or not isinstance(v, Real):
                raise TypeError(
                    f"lexical[{i}][{a!r}] is {v!r}, not a number: log scores are finite or -inf"
                )
            if math.isnan(v) or v == math.inf:
                raise ValueError(f"lexical[{i}][{a!r}] is {v}: log scores are finite or -inf")
    return lexical


def check_chart(name: str, chart: Any, n: int | None = None) -> None:
    """Refuse what is not a chart ``{(i, j): nonterminals}`` (None passes: no chart),
    naming ``name``: a mapping whose keys are spans, pairs of ints 0 <= i < j (j <= ``n``,
    the sentence's length, when given), and whose cells are collections of nonterminals
    (not one str, which would be read letter by letter)."""
    if chart is None:
        return
    if not isinstance(chart, Mapping):
        raise TypeError(
            f"{name} must be a chart, a mapping {{(i, j): nonterminals}} (as cyk and dcyk "
            f"return), got {type(chart).__name__}"
        )
    for key, cell in chart.items():
        if not (isinstance(key, tuple) and len(key) == 2 and all(_is_int(k) for k in key)):
            raise TypeError(f"{name} has the key {key!r}: a chart's keys are spans (i, j)")
        if not 0 <= key[0] < key[1]:
            raise ValueError(
                f"{name} has the key {key!r}, which is no span: a span (i, j) covers words i "
                "to j - 1, 0 <= i < j"
            )
        if n is not None and key[1] > n:
            raise ValueError(
                f"{name} has the span {key!r}, beyond the sentence's {n} words: the chart of "
                "another sentence?"
            )
        if isinstance(cell, str) or not isinstance(cell, Iterable):
            raise TypeError(
                f"{name}[{key}] is {cell!r}: a cell is a set of nonterminals (one: {{{cell!r}}})"
            )


def _is_int(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)

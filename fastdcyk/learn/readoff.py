"""A grammar read off an inventory's weights, and the threshold that reads it.

The rules whose weight passes a threshold are kept, less those that derive no string
(unproductive) and those the start symbol does not reach; the threshold is the one whose
grammar is the most accurate on held-out strings, judged by symbolic CYK.
"""

from __future__ import annotations

from collections.abc import Sequence

from fastdcyk.cfg.cyk import recognizes
from fastdcyk.cfg.grammar import Grammar
from fastdcyk.cfg.symbols import Rule

__all__ = ["accuracy", "candidate_cuts", "choose_cut", "prune", "read_off", "useful"]

#: At most this many thresholds are tried (those just below the largest weights, and 1/2).
MAX_CUTS = 64
#: :func:`prune` tries to drop the rules of grammars of at most this many rules.
MAX_PRUNE = 64


def useful(rules: Sequence[Rule], start: str) -> list[Rule]:
    """``rules`` less those that derive no string and those ``start`` does not reach."""
    productive = {r.lhs for r in rules if r.is_unary}
    binary = [r for r in rules if r.is_binary]
    while True:
        more = {r.lhs for r in binary if all(s.name in productive for s in r.rhs)}
        if more <= productive:
            break
        productive |= more
    kept = [r for r in rules if r.is_unary or all(s.name in productive for s in r.rhs)]
    if start not in productive:
        return []
    reach, todo = {start}, [start]
    while todo:
        a = todo.pop()
        for r in kept:
            if r.lhs == a and r.is_binary:
                for s in r.rhs:
                    if s.name not in reach:
                        reach.add(s.name)
                        todo.append(s.name)
    return [r for r in kept if r.lhs in reach]


def read_off(rules: Sequence[Rule], weights: Sequence[float], cut: float, start: str):
    """The grammar of the rules whose weight exceeds ``cut``, less its useless rules; None
    when the start symbol derives nothing."""
    kept = useful([r for r, w in zip(rules, weights, strict=True) if w > cut], start)
    if not kept:
        return None
    kept.sort(key=lambda r: r.lhs != start)  # the start symbol's rules first
    return Grammar(kept, start=start)


def accuracy(grammar: Grammar | None, strings, labels) -> float:
    """The fraction of ``strings`` whose membership in the grammar's language is their
    label (symbolic CYK; None accepts nothing)."""
    if not len(strings):
        return float("nan")
    right = 0
    for w, y in zip(strings, labels, strict=True):
        got = grammar is not None and recognizes(grammar, w)
        right += got == y
    return right / len(strings)


def candidate_cuts(weights: Sequence[float]) -> list[float]:
    """The thresholds tried: just below each of the :data:`MAX_CUTS` largest distinct
    weights (each admits one more rule), and 1/2."""
    distinct = sorted(set(weights), reverse=True)[:MAX_CUTS]
    return sorted({0.5, *(w * (1 - 1e-9) for w in distinct if w > 0)})


def choose_cut(rules, weights, start: str, strings, labels) -> tuple[float, Grammar | None, float]:
    """The threshold whose grammar is the most accurate on ``strings`` (ties: the highest
    threshold, the smallest grammar), that grammar and its accuracy."""
    best: tuple[float, float, Grammar | None] | None = None
    for cut in candidate_cuts(weights):
        g = read_off(rules, weights, cut, start)
        acc = accuracy(g, strings, labels)
        if best is None or acc > best[0] or (acc == best[0] and cut > best[1]):
            best = (acc, cut, g)
    assert best is not None
    acc, cut, g = best
    return cut, g, acc


def prune(grammar: Grammar | None, weights: dict[str, float], strings, labels) -> Grammar | None:
    """The grammar less every rule whose removal loses no accuracy on ``strings``: the
    rules tried one at a time, the least weighted first (a rule the threshold kept may
    still be one the data never needed). Grammars of more than :data:`MAX_PRUNE` rules
    are returned as they are."""
    if grammar is None or len(grammar) > MAX_PRUNE or not len(strings):
        return grammar
    best = accuracy(grammar, strings, labels)
    rules = sorted(grammar.rules, key=lambda r: weights.get(str(r), 0.0))
    for rule in rules:
        if rule not in grammar.rules:  # dropped as useless with an earlier one
            continue
        kept = useful([r for r in grammar.rules if r != rule], grammar.start)
        if not kept:
            continue
        kept.sort(key=lambda r: r.lhs != grammar.start)
        smaller = Grammar(kept, start=grammar.start)
        acc = accuracy(smaller, strings, labels)
        if acc >= best:
            grammar, best = smaller, acc
    return grammar

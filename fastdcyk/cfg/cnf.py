"""The conversion of a context-free grammar to Chomsky normal form (CNF), over its rules.

:func:`cnf_rules` does the textbook steps (lift terminals out of long rules, binarise,
remove epsilon rules, then unit rules, then useless symbols) and returns the new rules with
what :class:`~fastdcyk.cfg.grammar.CnfOrigin` records of them; :meth:`Grammar.to_cnf
<fastdcyk.cfg.grammar.Grammar.to_cnf>` makes the grammar. ``_fresh_namer`` gives the
names of the symbols the conversion introduces, ``_useful_rules`` drops the useless ones.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple

import numpy as np

from fastdcyk.cfg.symbols import NAME_RE, GrammarError, Rule, Symbol

__all__ = ["CnfRules", "cnf_rules"]


class CnfRules(NamedTuple):
    """The rules of a grammar in CNF, and how they map back to the rules they came from.

    Attributes
    ----------
    rules : list of Rule
        The CNF rules, in order (possibly with duplicates, which a grammar drops); the first
        one's left side is the start symbol.
    helpers : frozenset of str
        The symbols the conversion introduced (see :class:`~fastdcyk.cfg.grammar.CnfOrigin`).
    nullable : dict of str to Rule
        For each symbol that derives the empty string, the rule of the binarised grammar
        that derives it (see :class:`~fastdcyk.cfg.grammar.CnfOrigin`).
    steps : dict of Rule to tuple of (Rule, tuple of int)
        For each rule in ``rules`` (and each one dropped as useless), the rules of the
        binarised grammar it stands for (see :class:`~fastdcyk.cfg.grammar.CnfOrigin`).
    probs : dict of Rule to float or None
        For a probabilistic grammar, each CNF rule's probability (None otherwise): the
        given rule's for a rule kept or binarised (1 for the new rules of a binarised rule
        and for ``T_a -> 'a'``), and for a rule that replaces unit chains the sum over the
        chains of the product of their probabilities (so every sentence keeps its
        probability).
    merged : int
        How many CNF rules stand for more than one derivation of the given grammar (unit
        chains that end in the same rule): their probability is the sum over those
        derivations, and a tree shows one of them.
    """

    rules: list[Rule]
    helpers: frozenset[str]
    nullable: dict[str, Rule]
    steps: dict[Rule, tuple[tuple[Rule, tuple[int, ...]], ...]]
    probs: dict[Rule, float] | None = None
    merged: int = 0


def cnf_rules(
    given: Iterable[Rule],
    start: str,
    nonterminals: Iterable[str],
    probs: Mapping[Rule, float] | None = None,
) -> CnfRules:
    """Convert the rules of a grammar to Chomsky normal form.

    The steps are those of :meth:`Grammar.to_cnf <fastdcyk.cfg.grammar.Grammar.to_cnf>`,
    which makes a grammar of the result.

    Parameters
    ----------
    given : iterable of Rule
        The rules of the grammar, in order, without duplicates.
    start : str
        Its start symbol, the left side of the first rule returned.
    nonterminals : iterable of str
        Its nonterminals: the fresh names avoid them.
    probs : mapping of Rule to float, optional
        For a probabilistic grammar, each rule's probability.

    Returns
    -------
    CnfRules

    Raises
    ------
    GrammarError
        When the grammar generates no non-empty string (no CNF grammar can exist); for a
        probabilistic grammar, when it has epsilon rules (their probabilities are not kept)
        or unit cycles of probability 1 or more.
    """
    fresh = _fresh_namer(nonterminals)
    weight: dict[Rule, float] | None = None if probs is None else {}

    # Lift terminals out of rules with two or more symbols; the new T_a -> 'a' rules go
    # last so that the first rule keeps the start symbol on its left side.
    lifted: dict[str, str] = {}
    rules: list[Rule] = []
    for rule in given:
        if len(rule.rhs) < 2:
            rules.append(rule)
            if weight is not None:
                weight[rule] = probs[rule]  # type: ignore[index]
            continue
        rhs = []
        for sym in rule.rhs:
            if sym.terminal:
                if sym.name not in lifted:
                    valid = NAME_RE.fullmatch(f"T_{sym.name}") is not None
                    lifted[sym.name] = fresh(f"T_{sym.name}" if valid else "T", not valid)
                sym = Symbol(lifted[sym.name], False)
            rhs.append(sym)
        rules.append(Rule(rule.lhs, tuple(rhs)))
        if weight is not None:
            weight[rules[-1]] = probs[rule]  # type: ignore[index]
    rules.extend(Rule(name, (Symbol(word, True),)) for word, name in lifted.items())
    if weight is not None:
        for word, name in lifted.items():
            weight[Rule(name, (Symbol(word, True),))] = 1.0

    # Binarise: A -> X1 X2 ... Xk becomes A -> X1 N, N -> X2 ... Xk, and so on; N is
    # shared by all rules with the same tail X2 ... Xk.
    tails: dict[tuple[Symbol, ...], str] = {}
    binarised: list[Rule] = []
    for rule in rules:
        lhs, rhs = rule
        base = lhs
        p = 1.0 if weight is None else weight[rule]
        while len(rhs) > 2:
            tail = rhs[1:]
            known = tail in tails
            if not known:
                tails[tail] = fresh(base, True)
            binarised.append(Rule(lhs, (rhs[0], Symbol(tails[tail], False))))
            if weight is not None:
                weight[binarised[-1]], p = p, 1.0  # the new rules of a tail: probability 1
            if known:
                break
            lhs, rhs = tails[tail], tail
        else:
            binarised.append(Rule(lhs, rhs))
            if weight is not None:
                weight[binarised[-1]] = p

    # Remove epsilon rules: every rule gets its variants with nullable symbols dropped.
    # Each nullable symbol keeps the first rule found to derive the empty string from
    # symbols already known nullable (so its empty tree is finite), and each new rule
    # the binarised rule and the positions of its right side that it keeps.
    nullable: dict[str, Rule] = {}
    changed = True
    while changed:
        changed = False
        for rule in binarised:
            lhs, rhs = rule
            if lhs not in nullable and all(not s.terminal and s.name in nullable for s in rhs):
                nullable[lhs] = rule
                changed = True
    if weight is not None and nullable:
        raise GrammarError(
            f"the probabilistic grammar derives the empty string from {len(nullable)} "
            f"symbol(s) ({', '.join(sorted(nullable)[:3])}): to_cnf does not keep the "
            "probabilities of epsilon rules; remove them from the grammar first (a treebank "
            "grammar has none once its empty elements are stripped)"
        )
    no_epsilon: list[Rule] = []
    kept_of: dict[Rule, tuple[Rule, tuple[int, ...]]] = {}
    for rule in binarised:
        variants: list[tuple[int, ...]] = [()]
        for pos, sym in enumerate(rule.rhs):
            keep = [v + (pos,) for v in variants]
            variants = keep + variants if not sym.terminal and sym.name in nullable else keep
        for v in variants:
            if v:
                new = Rule(rule.lhs, tuple(rule.rhs[p] for p in v))
                no_epsilon.append(new)
                kept_of.setdefault(new, (rule, v))

    # Remove unit rules: A gets the non-unit rules of every B with A =>* B by unit rules.
    def is_unit(rule: Rule) -> bool:
        return len(rule.rhs) == 1 and not rule.rhs[0].terminal

    units: dict[str, list[str]] = {}
    for rule in no_epsilon:
        if is_unit(rule):
            units.setdefault(rule.lhs, []).append(rule.rhs[0].name)
    proper: dict[str, list[Rule]] = {}
    for rule in no_epsilon:
        if not is_unit(rule):
            proper.setdefault(rule.lhs, []).append(rule)
    # A gets B's rules for every B it reaches by unit rules; each new rule remembers the
    # unit rules of one shortest path from A to B, then B's rule.
    no_unit: list[Rule] = []
    steps: dict[Rule, tuple[tuple[Rule, tuple[int, ...]], ...]] = {}
    closure = None if weight is None else _unit_closure(no_epsilon, weight, is_unit)
    new_weight: dict[Rule, float] = {}
    sources: dict[Rule, int] = {}
    for lhs in dict.fromkeys(r.lhs for r in no_epsilon):
        path: dict[str, tuple[Rule, ...]] = {lhs: ()}
        todo = [lhs]
        while todo:
            here = todo.pop(0)
            for nxt in units.get(here, ()):
                if nxt not in path:
                    path[nxt] = path[here] + (Rule(here, (Symbol(nxt, False),)),)
                    todo.append(nxt)
        for name, chain in path.items():
            if closure is not None:
                c = closure(lhs, name)
                along = float(np.prod([weight[u] for u in chain]))  # type: ignore[index]
                several = abs(c - along) > 1e-12 * c  # more than one unit path
            for r in proper.get(name, ()):
                new = Rule(lhs, r.rhs)
                no_unit.append(new)
                steps.setdefault(new, tuple(kept_of[u] for u in chain) + (kept_of[r],))
                if closure is not None:
                    new_weight[new] = new_weight.get(new, 0.0) + c * weight[r]  # type: ignore[index]
                    sources[new] = sources.get(new, 0) + (2 if several else 1)

    kept = _useful_rules(no_unit, start)
    if not kept:
        raise GrammarError(
            f"the grammar generates no non-empty string from {start}, "
            "so it has no Chomsky normal form"
        )
    helpers = frozenset(lifted.values()) | frozenset(tails.values())
    if weight is None:
        return CnfRules(kept, helpers, nullable, steps)
    unique = list(dict.fromkeys(kept))
    merged = sum(sources[r] > 1 for r in unique)
    return CnfRules(kept, helpers, nullable, steps, {r: new_weight[r] for r in unique}, merged)


def _unit_closure(
    rules: list[Rule], weight: dict[Rule, float], is_unit: Callable[[Rule], bool]
) -> Callable[[str, str], float]:
    """For a probabilistic grammar, ``closure(A, B)``: the total probability of the unit
    chains from A to B (1 for A = B), the sum of the series I + U + U^2 + ... = (I - U)^-1
    over the matrix U of the unit rules' probabilities."""
    units = [r for r in rules if is_unit(r)]
    names = list(dict.fromkeys([r.lhs for r in units] + [r.rhs[0].name for r in units]))
    index = {name: k for k, name in enumerate(names)}
    u = np.zeros((len(names), len(names)))
    for r in units:
        u[index[r.lhs], index[r.rhs[0].name]] += weight[r]
    if names:
        radius = float(np.max(np.abs(np.linalg.eigvals(u))))
        if radius >= 1.0 - 1e-12:
            raise GrammarError(
                "the unit rules of the probabilistic grammar form cycles of total "
                f"probability {radius:.6g} >= 1 (a chain A -> B -> ... -> A that never "
                "ends): no distribution over trees to keep"
            )
        closure = np.linalg.inv(np.eye(len(names)) - u)
    else:
        closure = np.zeros((0, 0))

    def lookup(a: str, b: str) -> float:
        if a in index and b in index:
            return float(closure[index[a], index[b]])
        return 1.0 if a == b else 0.0

    return lookup


def _fresh_namer(taken: Iterable[str]) -> Callable[[str, bool], str]:
    """A function giving names not in ``taken`` nor given before: ``base`` if free (unless
    ``numbered``), else the first free one of ``base_1``, ``base_2``, ..."""
    used = set(taken)

    def fresh(base: str, numbered: bool) -> str:
        numbers = (f"{base}_{k}" for k in itertools.count(1))
        name = next(
            n for n in itertools.chain(() if numbered else (base,), numbers) if n not in used
        )
        used.add(name)
        return name

    return fresh


def _useful_rules(rules: list[Rule], start: str) -> list[Rule]:
    """The rules left after dropping non-productive, then unreachable, nonterminals."""
    productive: set[str] = set()
    changed = True
    while changed:
        changed = False
        for lhs, rhs in rules:
            if lhs not in productive and all(s.terminal or s.name in productive for s in rhs):
                productive.add(lhs)
                changed = True
    rules = [r for r in rules if all(s.terminal or s.name in productive for s in r.rhs)]
    rules = [r for r in rules if r.lhs in productive]
    reachable, todo = {start}, [start]
    by_lhs: dict[str, list[Rule]] = {}
    for rule in rules:
        by_lhs.setdefault(rule.lhs, []).append(rule)
    while todo:
        for rule in by_lhs.get(todo.pop(), ()):
            for sym in rule.rhs:
                if not sym.terminal and sym.name not in reachable:
                    reachable.add(sym.name)
                    todo.append(sym.name)
    return [r for r in rules if r.lhs in reachable]

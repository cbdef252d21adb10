"""The conversion of a context-free grammar to Chomsky normal form (CNF), over its rules.

:func:`cnf_rules` does the textbook steps (lift terminals out of long rules, binarise,
remove epsilon rules, then unit rules, then useless symbols) and returns the new rules with
what :class:`~fastdcyk.cfg.grammar.CnfOrigin` records of them; :meth:`Grammar.to_cnf
<fastdcyk.cfg.grammar.Grammar.to_cnf>` makes the grammar. ``_fresh_namer`` gives the
names of the symbols the conversion introduces, ``_useful_rules`` drops the useless ones.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from typing import NamedTuple

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
    """

    rules: list[Rule]
    helpers: frozenset[str]
    nullable: dict[str, Rule]
    steps: dict[Rule, tuple[tuple[Rule, tuple[int, ...]], ...]]


def cnf_rules(given: Iterable[Rule], start: str, nonterminals: Iterable[str]) -> CnfRules:
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

    Returns
    -------
    CnfRules

    Raises
    ------
    GrammarError
        When the grammar generates no non-empty string (no CNF grammar can exist).
    """
    fresh = _fresh_namer(nonterminals)

    # Lift terminals out of rules with two or more symbols; the new T_a -> 'a' rules go
    # last so that the first rule keeps the start symbol on its left side.
    lifted: dict[str, str] = {}
    rules: list[Rule] = []
    for rule in given:
        if len(rule.rhs) < 2:
            rules.append(rule)
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
    rules.extend(Rule(name, (Symbol(word, True),)) for word, name in lifted.items())

    # Binarise: A -> X1 X2 ... Xk becomes A -> X1 N, N -> X2 ... Xk, and so on; N is
    # shared by all rules with the same tail X2 ... Xk.
    tails: dict[tuple[Symbol, ...], str] = {}
    binarised: list[Rule] = []
    for lhs, rhs in rules:
        base = lhs
        while len(rhs) > 2:
            tail = rhs[1:]
            known = tail in tails
            if not known:
                tails[tail] = fresh(base, True)
            binarised.append(Rule(lhs, (rhs[0], Symbol(tails[tail], False))))
            if known:
                break
            lhs, rhs = tails[tail], tail
        else:
            binarised.append(Rule(lhs, rhs))

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
            for r in proper.get(name, ()):
                new = Rule(lhs, r.rhs)
                no_unit.append(new)
                steps.setdefault(new, tuple(kept_of[u] for u in chain) + (kept_of[r],))

    kept = _useful_rules(no_unit, start)
    if not kept:
        raise GrammarError(
            f"the grammar generates no non-empty string from {start}, "
            "so it has no Chomsky normal form"
        )
    helpers = frozenset(lifted.values()) | frozenset(tails.values())
    return CnfRules(kept, helpers, nullable, steps)


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

"""Grammars to and from NLTK: ``nltk.CFG`` and ``nltk.PCFG`` as plain rules, and back.

:meth:`Grammar.from_nltk <fastdcyk.cfg.grammar.Grammar.from_nltk>` and
:meth:`Grammar.to_nltk <fastdcyk.cfg.grammar.Grammar.to_nltk>` use these; nltk is imported
only when they are called.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastdcyk.cfg.symbols import GrammarError, Rule, Symbol

__all__ = ["nltk_grammar", "nltk_rules"]


def nltk_rules(cfg: Any) -> tuple[list[Rule], str, list[float] | None]:
    """The rules, start symbol and (for an ``nltk.PCFG``) probabilities of an nltk grammar;
    the errors of :meth:`Grammar.from_nltk <fastdcyk.cfg.grammar.Grammar.from_nltk>` (no
    nltk, not an nltk grammar, a feature grammar)."""
    try:
        from nltk.grammar import Nonterminal
    except ImportError as err:
        raise ImportError(
            "Grammar.from_nltk needs nltk; install it with 'pip install nltk'"
        ) from err
    if not (hasattr(cfg, "productions") and hasattr(cfg, "start")):
        raise TypeError(f"expected an nltk.CFG, got {type(cfg).__name__}")
    if type(cfg).__name__ == "FeatureGrammar" or type(cfg.start()) is not Nonterminal:
        raise GrammarError(
            f"{type(cfg).__name__} is a feature grammar (its nonterminals carry feature "
            "structures): fastdcyk reads plain context-free grammars (nltk.CFG) only"
        )

    def symbol(item: Any) -> Symbol:
        if isinstance(item, Nonterminal):
            return Symbol(str(item.symbol()), False)
        return Symbol(str(item), True)

    productions = list(cfg.productions())
    rules = [Rule(str(p.lhs().symbol()), tuple(symbol(x) for x in p.rhs())) for p in productions]
    probs = None
    if productions and all(callable(getattr(p, "prob", None)) for p in productions):
        probs = [p.prob() for p in productions]
    return rules, str(cfg.start().symbol()), probs


def nltk_grammar(rules: Sequence[Rule], start: str, probs: Sequence[float] | None) -> Any:
    """An ``nltk.CFG`` of ``rules``, or an ``nltk.PCFG`` when ``probs`` is given.

    Raises
    ------
    ImportError
        When nltk is not installed.
    """
    try:
        from nltk.grammar import CFG, PCFG, Nonterminal, ProbabilisticProduction, Production
    except ImportError as err:
        raise ImportError("Grammar.to_nltk needs nltk; install it with 'pip install nltk'") from err

    def rhs(rule: Rule) -> list[Any]:
        return [s.name if s.terminal else Nonterminal(s.name) for s in rule.rhs]

    if probs is not None:
        return PCFG(
            Nonterminal(start),
            [
                ProbabilisticProduction(Nonterminal(r.lhs), rhs(r), prob=p)
                for r, p in zip(rules, probs, strict=True)
            ],
        )
    return CFG(Nonterminal(start), [Production(Nonterminal(r.lhs), rhs(r)) for r in rules])

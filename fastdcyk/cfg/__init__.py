"""The symbolic side: grammars, the CYK oracle, sentence generation, random grammars, scores.

Nothing here knows about vectors: :class:`Grammar` reads and converts context-free grammars,
:func:`cyk` is the oracle D-CYK is measured against, :func:`cell_scores` the measure,
:class:`Forest` the trees of a chart.
"""

from __future__ import annotations

from fastdcyk.cfg.cyk import cyk, recognizes
from fastdcyk.cfg.generate import generate
from fastdcyk.cfg.grammar import Grammar, GrammarError, GrammarWarning
from fastdcyk.cfg.metrics import Scores, cell_scores
from fastdcyk.cfg.random_grammar import random_grammar
from fastdcyk.cfg.trees import Forest, Tree, bracket_scores, is_parse, un_cnf

__all__ = [
    "Forest",
    "Grammar",
    "GrammarError",
    "GrammarWarning",
    "Scores",
    "Tree",
    "bracket_scores",
    "cell_scores",
    "cyk",
    "generate",
    "is_parse",
    "random_grammar",
    "recognizes",
    "un_cnf",
]

"""The symbolic side: grammars, the CYK oracle, sentence generation, random grammars, scores.

Nothing here knows about vectors: :class:`Grammar` reads and converts context-free grammars,
:func:`cyk` is the oracle D-CYK is measured against, :func:`cell_scores` the measure.
"""

from __future__ import annotations

from fastdcyk.cfg.cyk import cyk, recognizes
from fastdcyk.cfg.generate import generate
from fastdcyk.cfg.grammar import Grammar, GrammarError
from fastdcyk.cfg.metrics import Scores, cell_scores
from fastdcyk.cfg.random_grammar import random_grammar

__all__ = [
    "Grammar",
    "GrammarError",
    "Scores",
    "cell_scores",
    "cyk",
    "generate",
    "random_grammar",
    "recognizes",
]

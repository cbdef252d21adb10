"""The symbolic side: grammars, the CYK oracle, sentence generation, random grammars, scores.

Nothing here knows about vectors: :class:`Grammar` reads and converts context-free grammars
(probabilistic ones too), :func:`cyk` is the oracle D-CYK is measured against,
:func:`cell_scores` the measure, :class:`Forest` the trees of a chart, :func:`viterbi` and
:func:`inside` the oracle for weights, :func:`evalb` the treebank's bracket score, and
:class:`TreebankGrammar` a PCFG induced from trees.
"""

from __future__ import annotations

from fastdcyk.cfg.cyk import cyk, recognizes
from fastdcyk.cfg.forest import Forest, bracket_scores
from fastdcyk.cfg.generate import generate
from fastdcyk.cfg.grammar import Grammar, GrammarError, GrammarWarning
from fastdcyk.cfg.metrics import Scores, cell_scores, evalb
from fastdcyk.cfg.random_grammar import random_grammar
from fastdcyk.cfg.treebank import TreebankGrammar
from fastdcyk.cfg.trees import Tree, is_parse, un_cnf
from fastdcyk.cfg.viterbi import inside, viterbi

__all__ = [
    "Forest",
    "Grammar",
    "GrammarError",
    "GrammarWarning",
    "Scores",
    "Tree",
    "TreebankGrammar",
    "bracket_scores",
    "cell_scores",
    "cyk",
    "evalb",
    "generate",
    "inside",
    "is_parse",
    "random_grammar",
    "recognizes",
    "un_cnf",
    "viterbi",
]

"""fastdcyk: CYK parsing over distributed (holographic) representations.

D-CYK (Zanzotto, Satta, Cristini) encodes the CYK table in two d x d matrices and fills it
with matrix operations only. fastdcyk keeps every operator implicit (circulant spectra and
one fixed permutation), applies it to the dense accumulators by FFT, and decodes the table
back so that it can be scored against symbolic CYK.
"""

from __future__ import annotations

from typing import Any as _Any

from fastdcyk import capacity, options, threads
from fastdcyk.cfg.cyk import cyk, recognizes
from fastdcyk.cfg.forest import Forest, bracket_scores
from fastdcyk.cfg.generate import generate
from fastdcyk.cfg.grammar import Grammar, GrammarError, GrammarWarning
from fastdcyk.cfg.metrics import Scores, cell_scores, evalb
from fastdcyk.cfg.random_grammar import random_grammar
from fastdcyk.cfg.treebank import TreebankGrammar
from fastdcyk.cfg.trees import Tree, is_parse, un_cnf
from fastdcyk.cfg.viterbi import inside, viterbi
from fastdcyk.corpus import CorpusSummary, parse_corpus
from fastdcyk.engine import DCYKOptions, DCYKResult, dcyk, estimate_memory
from fastdcyk.engine.api import choose_dimension, clear_caches, decode
from fastdcyk.engine.auto import DimensionWarning
from fastdcyk.engine.batch import dcyk_batch
from fastdcyk.engine.core.decode import decode_statistics
from fastdcyk.hrr.codebook import Codebook
from fastdcyk.hrr.fft import available_ffts, get_fft
from fastdcyk.hrr.fft import renamed as _renamed
from fastdcyk.hrr.operators import Operator
from fastdcyk.learn import LearnedGrammar, learn_grammar

__version__ = "0.4.0"

__all__ = [
    "Codebook",
    "CorpusSummary",
    "DCYKOptions",
    "DCYKResult",
    "DimensionWarning",
    "Forest",
    "Grammar",
    "GrammarError",
    "GrammarWarning",
    "LearnedGrammar",
    "Operator",
    "Scores",
    "Tree",
    "TreebankGrammar",
    "__version__",
    "available_ffts",
    "bracket_scores",
    "capacity",
    "choose_dimension",
    "clear_caches",
    "options",
    "parse_corpus",
    "cell_scores",
    "cyk",
    "dcyk",
    "dcyk_batch",
    "decode",
    "decode_statistics",
    "estimate_memory",
    "evalb",
    "generate",
    "is_parse",
    "learn_grammar",
    "get_fft",
    "inside",
    "random_grammar",
    "recognizes",
    "threads",
    "un_cnf",
    "viterbi",
]


def __getattr__(name: str) -> _Any:
    raise _renamed(__name__, name)

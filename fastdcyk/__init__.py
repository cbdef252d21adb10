"""fastdcyk: CYK parsing over distributed (holographic) representations.

D-CYK (Zanzotto, Cristini, Satta) encodes the CYK table in two d x d matrices and fills it
with matrix operations only. fastdcyk keeps every operator implicit (circulant spectra and
one fixed permutation), applies it to the dense accumulators by FFT, and decodes the table
back so that it can be scored against symbolic CYK.
"""

from __future__ import annotations

from fastdcyk import capacity, options, threads
from fastdcyk.codebook import Codebook
from fastdcyk.cyk import cyk, recognizes
from fastdcyk.decode import decode, decode_statistics
from fastdcyk.engine import DCYKOptions, DCYKResult, dcyk, estimate_memory
from fastdcyk.fft import available_engines, get_engine
from fastdcyk.generate import generate
from fastdcyk.grammar import Grammar, GrammarError
from fastdcyk.metrics import Scores, cell_scores
from fastdcyk.operators import Operator
from fastdcyk.random_grammar import random_grammar

__version__ = "0.1.0"

__all__ = [
    "Codebook",
    "DCYKOptions",
    "DCYKResult",
    "Grammar",
    "GrammarError",
    "Operator",
    "Scores",
    "__version__",
    "available_engines",
    "capacity",
    "options",
    "cell_scores",
    "cyk",
    "dcyk",
    "decode",
    "decode_statistics",
    "estimate_memory",
    "generate",
    "get_engine",
    "random_grammar",
    "recognizes",
    "threads",
]

"""The holographic algebra: symbol vectors, implicit operators, FFT libraries and kernels.

:class:`Codebook` holds the symbol vectors and the permutation (its file:
:mod:`.codebook_file`; its Sidon sets: :mod:`.sidon`); :class:`Operator` composes circulants
and the permutation lazily and applies them by FFT (:mod:`.fft`) with Numba kernels
(:mod:`.kernels`, :mod:`.blocks`); :mod:`.buffers` declares every d x d array a parse
allocates and pools the reusable ones; :mod:`.memory` reads the memory available. Nothing
here knows about grammars or parsing.
"""

from __future__ import annotations

from typing import Any as _Any

from fastdcyk.hrr.codebook import Codebook
from fastdcyk.hrr.fft import available_ffts, get_fft
from fastdcyk.hrr.fft import renamed as _renamed
from fastdcyk.hrr.operators import Operator

__all__ = ["Codebook", "Operator", "available_ffts", "get_fft"]


def __getattr__(name: str) -> _Any:
    raise _renamed(__name__, name)

"""The trace gate (docs/method.md, section 3): P_A = sigma(tr(M) / d) I, so every update
is a multiple of an operator and the table is kept as 2-D half spectra; P_left and P_right
both written and read.

- :mod:`.numpy_parser`: the numpy backend's parser (on
  :class:`fastdcyk.engine.backends.numpy.spectral.NumpySpectralParser`, docs/method.md,
  section 4.4);
- :mod:`.torch_parser`: the torch backend's, batched and differentiable;
- :mod:`.simulation`: the capacity model's simulation;
- :func:`work_buffers` and :func:`seconds`: its d x d arrays and its cost model.
"""

from __future__ import annotations

from fastdcyk.engine.backends.numpy.accounting import Held, scalar_gate_seconds
from fastdcyk.engine.backends.numpy.spectral import spectral_buffers
from fastdcyk.engine.core.rules import RuleStructure
from fastdcyk.options import DCYKOptions

__all__ = ["seconds", "work_buffers"]


def work_buffers(opt: DCYKOptions, blockwise: bool, slots: int, kept: int) -> Held:
    """Both accumulators as 2-D half spectra
    (:func:`~fastdcyk.engine.backends.numpy.spectral.spectral_buffers`)."""
    return spectral_buffers(opt, slots, kept, right=True)


def seconds(st: RuleStructure, n: int, d: int, opt: DCYKOptions, pair: float) -> float:
    """The scalar gates' passes
    (:func:`~fastdcyk.engine.backends.numpy.accounting.scalar_gate_seconds`) and,
    in every cell, the readouts of the nonterminals it detects and of every nonterminal
    for the decoder."""
    cells, nn = n * (n + 1) // 2, len(st.nonterminals)
    reads = n * (len(st.unary) + nn) + (cells - n) * (len(st.binary) + nn)
    return scalar_gate_seconds(n, d, pair, reads)

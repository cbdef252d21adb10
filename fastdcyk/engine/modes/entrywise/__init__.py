"""The entrywise gate (the paper's, docs/method.md, section 2): P_A = sigma(M) entry by
entry, masked to the diagonal in the binary step, and the accumulators P_left and P_right
both written and read.

- :mod:`.numpy_parser`: the numpy backend's parser (the accumulators as row spectra,
  docs/method.md, section 4.3);
- :mod:`.torch_parser`: the torch backend's, batched and differentiable;
- :mod:`.simulation`: the capacity model's simulation (masks over the d entries);
- :func:`work_buffers` and :func:`seconds`: its d x d arrays and its cost model.
"""

from __future__ import annotations

from fastdcyk.engine.backends.numpy.accounting import Held
from fastdcyk.engine.core.rules import RuleStructure
from fastdcyk.hrr import buffers
from fastdcyk.options import DCYKOptions

__all__ = ["PAIRS_PER_DETECTION", "seconds", "work_buffers"]

#: FFT pairs per detection (measured: a 6-word G0 sentence, paper variant, d = 1024: 78
#: detections in 1.78 s, pairs of 5.8 ms).
PAIRS_PER_DETECTION = 4.0


def work_buffers(opt: DCYKOptions, blockwise: bool, slots: int, kept: int) -> Held:
    """Both accumulators as half spectra beside two real work buffers and a spectrum
    buffer, plus one spectrum for the shared product of a unary cell (``order="cell"``) or
    of the trace decoder; a library that applies operator chains block by block needs no
    d x d buffer inside the chains, the others one real one. At the end both dense results
    exist while the work buffers are held."""
    held = [buffers.Y, buffers.W, buffers.SPECTRUM]
    if opt.order == "cell" or opt.decoder == "trace":
        held.append(buffers.YHAT)
    if not blockwise:
        held.append(buffers.APPLY_REAL)
    during = [buffers.FL, buffers.FR, *held]
    return Held(during, [*held, buffers.P_LEFT, buffers.P_RIGHT], chains="during")


def seconds(st: RuleStructure, n: int, d: int, opt: DCYKOptions, pair: float) -> float:
    """Every detection costs a few FFT pairs (its readout, its full or diagonal P_A and the
    updates of both accumulators; in the paper's order the cell is read again after each
    update): :data:`PAIRS_PER_DETECTION`, measured on G0 and G4 at d = 1024. The cost grows
    with the nonterminals times the cells."""
    cells = n * (n + 1) // 2
    detections = n * len(st.unary) + (cells - n) * len(st.binary)
    return PAIRS_PER_DETECTION * detections * pair

"""The clean-up gate (docs/method.md, sections 6 and 7): every completed cell read once into
clean scores, a detection the grammar's rules over its children's scores, and the
read-backs of a cell: least squares over its candidates (``"lstsq"``), the same from the
table less what was read before it (``"cancel"``), or the matched filter (``"matched"``).
P_left only, kept as 2-D half spectra.

- :mod:`.numpy_parser`: the numpy backend's parser, and the read-back of a given P_left
  (:func:`~.numpy_parser.readback_statistics`, for :func:`fastdcyk.decode`);
- :mod:`.torch_parser`: the torch backend's, batched and differentiable (soft preterminal
  inputs too);
- :mod:`.simulation`: the capacity model's simulation (of ``"lstsq"`` and ``"matched"``);
- :func:`work_buffers` and :func:`seconds`: its d x d arrays and its cost model.
"""

from __future__ import annotations

from fastdcyk.engine.backends.numpy.accounting import Held, index_pairs, scalar_gate_seconds
from fastdcyk.engine.backends.numpy.spectral import spectral_buffers
from fastdcyk.engine.core.rules import RuleStructure
from fastdcyk.hrr import buffers
from fastdcyk.options import DCYKOptions

__all__ = ["CANCEL_PASSES", "seconds", "work_buffers"]

#: A cancelling parse's cost in passes of the plain least-squares parse, where the table's
#: passes dominate (few candidates): 1.33 measured (G4, 12 words, d = 2048, one thread:
#: 0.96 s against 0.72 s; docs/performance.md), the two more writes per cell sharing the
#: index matrices and the read with the others.
CANCEL_PASSES = 1.4


def work_buffers(opt: DCYKOptions, blockwise: bool, slots: int, kept: int) -> Held:
    """P_left as a 2-D half spectrum
    (:func:`~fastdcyk.engine.backends.numpy.spectral.spectral_buffers`) and, cancelling, a
    second one during the parse: the table less what was read."""
    held = spectral_buffers(opt, slots, kept, right=False)
    if opt.readback == "cancel":
        held.during.append(buffers.ZR)
    return held


def seconds(st: RuleStructure, n: int, d: int, opt: DCYKOptions, pair: float) -> float:
    """The scalar gates' passes
    (:func:`~fastdcyk.engine.backends.numpy.accounting.scalar_gate_seconds`) and the readouts:
    of every nonterminal in every cell twice with the matched read-back, of the words'
    terminals only with the least-squares ones (the candidates are few). Cancelling
    writes each cell twice and subtracts its read, and reads the words before the cells
    (their index matrices again, where not all are kept): :data:`CANCEL_PASSES` times the
    passes. The model counts no candidates: where the plain read-back's leakage makes many
    false ones (real grammars at small d), cancelling is faster than it predicts, and
    faster than ``"lstsq"`` (docs/performance.md)."""
    cancel = opt.readback == "cancel"
    if opt.readback == "matched":
        reads = 2 * (n * (n + 1) // 2) * len(st.nonterminals)
    else:
        reads = n * len(st.terminals)
    held = index_pairs(n, d)[1]  # cancelling reads the words' index matrices again unless held
    passes, extra = (CANCEL_PASSES, 0 if held else n) if cancel else (1, 0)
    return scalar_gate_seconds(n, d, pair, reads, passes=passes, extra_pairs=extra)

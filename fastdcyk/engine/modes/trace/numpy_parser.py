"""The trace gate in the numpy backend (docs/method.md, section 4.4): both accumulators as
2-D half spectra (:class:`~fastdcyk.engine.backends.numpy.spectral.NumpySpectralParser`),
every cell in O(d^2) without an FFT."""

from __future__ import annotations

from typing import Any

import numpy as np

from fastdcyk.engine.backends.numpy.spectral import NumpySpectralParser
from fastdcyk.engine.core import schedule
from fastdcyk.engine.core.arrays import sigmoid
from fastdcyk.engine.core.decode import Statistics
from fastdcyk.engine.core.schedule import Detections, Step

__all__ = ["NumpyTraceParser"]


class NumpyTraceParser(NumpySpectralParser):
    """A parse with the trace gate: P_A = sigma(tr(M) / d) I, every detection a readout of
    the 2-D spectra (:meth:`~NumpySpectralParser.cell_readout` in a unary cell,
    :meth:`~NumpySpectralParser.pair_readout` in a binary one) against the rule spectra, every
    update one operator, C_S^T with S^ = sum_A g_A A^, on both accumulators."""

    def update(self, i: int, j: int, gates: np.ndarray, rows: np.ndarray) -> None:
        """sum_A g_A [i]- [j]- [A]- into P_left and sum_A g_A [A']+ [i]+ [j]+ into P_right."""
        tables = self.tables
        self.write_left(
            self.left_spectrum, gates @ tables.spectra[rows].astype(np.complex128), i, j
        )
        self.write_right(gates @ tables.right_spectra[rows].astype(np.complex128), i, j)

    def read(self, i: int, j: int, step: Step) -> None:
        unary = step == schedule.UNARY
        self._readout_q = self.cell_readout(i, j) if unary else self.pair_readout(i, j)

    def detect(self, i: int, j: int, step: Step, ks: slice) -> Detections:
        tables = self.tables
        spectra = tables.unary_spectra if step == schedule.UNARY else tables.binary_spectra
        readouts = self.trace(spectra[ks], self._readout_q)
        gates = sigmoid(readouts, self.opt.beta)
        return Detections(readouts[None], gates[None], gates[None], gates)

    def write(self, i: int, j: int, step: Step, ks: slice, det: Detections, keep: Any) -> None:
        keep = keep[0]
        self.update(i, j, det.values[keep], self.rows(step)[ks][keep])

    def statistics(self) -> Statistics | None:
        """The trace decoder's statistic of every triple, tr([A]+ [j]+ [i]+ P_left) / d,
        from the spectra; None with the entry decoder (it reads the dense P_left)."""
        return self.decoder_statistics() if self.opt.decoder == "trace" else None

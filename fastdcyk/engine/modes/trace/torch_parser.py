"""The trace gate in the torch backend (docs/method.md, section 4.4): the numpy backend's
:class:`~fastdcyk.engine.modes.trace.numpy_parser.TraceParser` in PyTorch, batched over
sentences and differentiable, on :class:`~fastdcyk.engine.torch_spectral.SpectralParser`."""

from __future__ import annotations

from typing import Any

from fastdcyk.engine import schedule
from fastdcyk.engine.schedule import Detections, Step
from fastdcyk.engine.torch_spectral import SpectralParser

__all__ = ["TraceParser"]


class TraceParser(SpectralParser):
    """The trace gate's parser, batched: each detection a readout of the 2-D spectra
    against the rule spectra, each update one operator on both accumulators."""

    def read(self, i: int, j: int, step: Step) -> None:
        """q of the cell's readouts (B, h) and, for a unary cell, G_j (.) i^ (its update's
        matrix, shared with the detection)."""
        if step == schedule.UNARY:
            # q of tr(R_u Phi [j]+ [i]+ P_left): sum_g ZT G_j i^; the update of (i, j) adds
            # conj(G_j (.) i^) to ZT
            self._outer_ji = self.index_outer(j, i)
            self._readout_q = self.row_dots(self.left_spectrum, self._outer_ji)
        else:
            self._outer_ji = None
            self._readout_q = self.pair_readout(i, j)

    def detect(self, i: int, j: int, step: Step, ks: slice) -> Detections:
        spectra_w = self.unary_w if step == schedule.UNARY else self.binary_w
        tvals = (self._readout_q @ spectra_w[ks].T).real
        gates = self.sigmoid(tvals)
        return Detections(tvals, gates, gates, gates)

    def write(self, i: int, j: int, step: Step, ks: slice, det: Detections, keep: Any) -> None:
        rows = self.unary_rows if step == schedule.UNARY else self.binary_rows
        self.update(i, j, det.values * keep, rows[ks], self._outer_ji, keep)

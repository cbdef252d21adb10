"""The trace gate in the torch backend (docs/method.md, section 4.4): the numpy backend's
:class:`~fastdcyk.engine.modes.trace.numpy_parser.NumpyTraceParser` in PyTorch, batched over
sentences and differentiable, on
:class:`~fastdcyk.engine.backends.torch.spectral.TorchSpectralParser`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from fastdcyk.engine.backends.torch.spectral import TorchSpectralParser
from fastdcyk.engine.core import schedule
from fastdcyk.engine.core.schedule import Detections, Ledger, Step

__all__ = ["TorchTraceParser"]


class TorchTraceParser(TorchSpectralParser):
    """The trace gate's parser, batched: each detection a readout of the 2-D spectra
    against the rule spectra, each update one operator on both accumulators. Nothing is
    read back from the device during the parse (:attr:`defers_checks`). In the
    ``"width"`` order a whole span width is one step (:meth:`run_width`)."""

    defers_checks = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._by_step: dict[Step, torch.Tensor] = {}

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
        gates = self.gate(tvals)
        return Detections(tvals, gates, gates, gates)

    def gate(self, tvals: torch.Tensor) -> torch.Tensor:
        """What a detection writes, given its readouts: sigma with the options' beta (the
        tanh gate's parser, :mod:`fastdcyk.engine.modes.tanh`, writes tanh)."""
        return self.sigmoid(tvals)

    def write(self, i: int, j: int, step: Step, ks: slice, det: Detections, keep: Any) -> None:
        rows = self.unary_rows if step == schedule.UNARY else self.binary_rows
        self.update(i, j, det.values * keep, rows[ks], self._outer_ji, keep)

    # -- the "width" order: a span width in one step ---------------------------------------

    def run_width(
        self,
        spans: Sequence[tuple[int, int]],
        step: Step,
        ledger: Ledger,
        on_progress: Callable[[int], None] | None,
    ) -> bool:
        """Every cell (i, j) of one span width from the table as the narrower widths left
        it, batched over the cells as over the sentences (the schedule's ``run_width``).

        - binary: q[b, f, c] = sum_g (ZT PR)[b, f, g] conj(j_c^[g]) i_c^[g], one product of
          the batch's (ZT (.) PR) with the (d, C) matrix of the cells' index spectra (the
          "cell" order makes one pass over ZT (.) PR a cell);
        - unary: q[b, f, c] = sum_g ZT[b, f, g] (G_j (.) i^)_c[f, g], one batched product;
        - the detections of every cell and nonterminal in one product with the rule
          spectra, the ledger's decisions for the width at once
          (:meth:`~fastdcyk.engine.core.schedule.Ledger.decide_cells`), and the updates of the
          cells in batched products (:meth:`add_outers`), a few cells at a time.
        """
        rows = self.unary_rows if step == schedule.UNARY else self.binary_rows
        count = len(rows)
        if not count:
            return False
        spectra_w = self.unary_w if step == schedule.UNARY else self.binary_w
        cells = list(spans)
        i_idx, j_idx = self._span_indices(cells)
        size = self.cells_at_once(len(cells))
        parts = [cells[c : c + size] for c in range(0, len(cells), size)]
        outers: list[torch.Tensor] | None = None  # the unary step's G_j (.) i^, kept if one part
        if step == schedule.UNARY:
            qs = []
            for part in parts:
                m = self.index_outers(part)  # (h, C', d)
                qs.append(torch.bmm(self.left_spectrum.transpose(0, 1), m.transpose(1, 2)))
                if len(parts) == 1:
                    outers = [m]
            q = torch.cat(qs, 2).permute(1, 2, 0)  # (h, B, C) -> (B, C, h)
        else:
            dg = (torch.conj(self.full_index[j_idx]) * self.full_index[i_idx]).T  # (d, C)
            if self._batch_work is None:
                lr = self.left_spectrum * self.right_spectrum
            else:
                lr = torch.mul(self.left_spectrum, self.right_spectrum, out=self._batch_work)
            q = (lr @ dg).transpose(1, 2)  # (B, C, h)
        tvals = (q @ spectra_w.T).real  # (B, C, k)
        gates = self.gate(tvals)
        active = self.ends_active()[:, j_idx]  # (B, C): the sentences that have each cell
        det = Detections(tvals, gates, gates, gates)
        keep, any_kept = ledger.decide_cells(cells, self.rows(step), det, active)
        if on_progress is not None:
            on_progress(len(cells) * count)
        if not any_kept:
            return True
        g = (gates * keep).to(self.cdtype)  # (B, C, k)
        both = g @ self._step_spectra(step)  # (B, C, 2h): S^ and S'^ of each cell
        lefts = torch.conj(both[..., : self.half]).permute(2, 0, 1)  # (h, B, C)
        rights = both[..., self.half :].permute(2, 0, 1)
        c0 = 0
        for p, part in enumerate(parts):
            sl = slice(c0, c0 + len(part))
            c0 += len(part)
            m = outers[p] if outers is not None else self.index_outers(part)
            m = torch.conj(m) if self.grad else m.conj_physical_()  # conj(G_j (.) i^)
            self.add_outers("left_spectrum", lefts[:, :, sl], m)
            del m
            m = self.index_outers([(j, i) for i, j in part])  # G_i (.) j^
            self.add_outers("right_spectrum", rights[:, :, sl], m)
        return True

    def _step_spectra(self, step: Step) -> torch.Tensor:
        """(k, 2h): the left and the right spectra of the step's nonterminals side by side
        (gathered once a parse: the updates' two products one)."""
        got = self._by_step.get(step)
        if got is None:
            rows = self.unary_rows if step == schedule.UNARY else self.binary_rows
            got = torch.cat((self.spectra[rows], self.right_spectra[rows]), -1)
            self._by_step[step] = got
        return got

    @staticmethod
    def _span_indices(cells: Sequence[tuple[int, int]]) -> tuple[Any, Any]:
        """The cells' starts and ends as slices where they run on by one (a span width's
        cells, as the schedule gives them: indexing with a slice copies no index from the
        host, which on a device would wait for it), else as lists."""
        (i0, j0), (i1, j1) = cells[0], cells[-1]
        if i1 - i0 + 1 == len(cells) and j1 - i1 == j0 - i0:
            return slice(i0, i1 + 1), slice(j0, j1 + 1)
        return [i for i, _ in cells], [j for _, j in cells]

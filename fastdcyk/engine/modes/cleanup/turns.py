"""Cells read and subtracted in turn, the tables swept once for a group of them: the torch
backend's cancelling read-back (docs/method.md, section 4.6, "Reads in turn, in one sweep").

Cancelling, cell by cell, the residual table R gains a cell's write L_c conj(X_c), is read,
q_c = R X_c (the row dots of :meth:`SpectralParser.row_dots
<fastdcyk.engine.torch_spectral.SpectralParser.row_dots>`), and loses the read's subtraction
S_c conj(X_c), where X_c = G_j (.) i^ is the index matrix of cell c = (i, j) and L_c, S_c are
(batch, d // 2 + 1) left spectra. The reads being linear,

    q_c = R_0 X_c + sum_{c' <= c} L_c' K_c'c - sum_{c' < c} S_c' K_c'c,
    K_c'c[f] = sum_g conj(X_c'[f, g]) X_c[f, g],

with R_0 the residual table before the group's first cell. So a group of cells whose index
matrices are known ahead (a column of the cell order, a span width, the words) costs one
product that reads every cell from R_0, one that gives K, and, once the last cell is read,
one that writes every L_c - S_c into the residual: a few sweeps of the (batch, d // 2 + 1, d)
residual table per group instead of four sweeps of two tables per cell. Between them each
cell's detection, read and solve work on (batch, d // 2 + 1) vectors, in the group's order,
so that a detection may depend on the reads of the cells before it. No read sees P_left
while cancelling: the parser writes the L_c into it only when the parse's P_left is asked
for (``CleanupParser.defer_writes``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from fastdcyk.engine.torch_spectral import SpectralParser

__all__ = ["Turns"]


class Turns:
    """A group of cells read in turn from the residual table (the module's docstring).

    Parameters
    ----------
    parser : SpectralParser
        The clean-up parser whose ``residual`` table the group reads (from its index
        matrices and full index spectra); kept by no attribute, so that a parse stopped by
        an error mid-group leaves no reference cycle holding its tensors.
    spans : list of (int, int)
        The cells (i, j), in the order they are read.
    """

    def __init__(self, parser: SpectralParser, spans: list[tuple[int, int]]) -> None:
        self.spans = spans
        self.position = {span: c for c, span in enumerate(spans)}
        self.grad = parser.grad
        self._zero_shape = (parser.batch, parser.half)
        self._zero_kind = {"dtype": parser.cdtype, "device": parser.device}
        x = parser.index_outers(spans)  # (h, C, d)
        self.xc = torch.conj(x)  # a conjugate view of x
        self.k = self.xc @ x.transpose(1, 2)  # (h, C, C): K[f, c', c]
        # (h, B, C): every cell's read from R_0, less (as each cell is read) what the cells
        # before it left in the residual
        self.q = parser.residual.transpose(0, 1) @ x.transpose(1, 2)
        self.writes: list[torch.Tensor | None] = [None] * len(spans)
        self.nets: list[torch.Tensor] = []  # L_c - S_c of the cells read, (B, h)

    def write(self, c: int, left: torch.Tensor) -> None:
        """Cell c writes ``left`` (B, h) (added to what it wrote already), before its read."""
        if c < len(self.nets):
            raise RuntimeError(f"cell {self.spans[c]} written after its read")
        before = self.writes[c]
        self.writes[c] = left if before is None else before + left

    def read(self, c: int) -> torch.Tensor:
        """Cell c's readout q_c, (B, h): R X_c as cell c - 1 left the residual, with cell
        c's own write."""
        if c != len(self.nets):
            raise RuntimeError(f"cell {self.spans[c]} read out of turn")
        q = self.q[:, :, c]
        if self.writes[c] is not None:
            q = q + self.writes[c].T * self.k[:, c, c, None]
        return q.T

    def subtract(self, c: int, sub: torch.Tensor | None) -> bool:
        """Cell c's read takes ``sub`` (B, h) from the residual (None: nothing). Returns
        whether it was the group's last cell (then :meth:`flush` the group)."""
        left = self.writes[c]
        if sub is None:
            net = self._zero() if left is None else left
        else:
            net = -sub if left is None else left - sub
        self.nets.append(net)
        if len(self.nets) == len(self.spans):
            return True
        # the later cells' reads see what this one left: net_c K_c,c' for c' > c
        later = net.T[:, :, None] * self.k[:, c, None, c + 1 :]  # (h, B, C - c - 1)
        if self.grad:  # out of place: the earlier reads' slices are kept for backward
            self.q = torch.cat((self.q[:, :, : c + 1], self.q[:, :, c + 1 :] + later), 2)
        else:
            self.q[:, :, c + 1 :] += later
        return False

    def _zero(self) -> torch.Tensor:
        """A (B, h) left spectrum of nothing."""
        return torch.zeros(self._zero_shape, **self._zero_kind)

    def flush(self, parser: Any) -> None:
        """Every cell's write less its read into ``parser``'s residual table (one batched
        product, :meth:`SpectralParser.add_outers`), and the writes handed to
        ``parser.defer_writes`` for P_left, which no read sees while cancelling."""
        nets = torch.stack(self.nets, 2).transpose(0, 1)  # (h, B, C)
        parser.add_outers("residual", nets, self.xc)
        writes = zip(self.spans, self.writes, strict=True)
        parser.defer_writes([(s, w) for s, w in writes if w is not None])
        self.xc = self.k = self.q = None  # type: ignore[assignment]

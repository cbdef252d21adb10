"""Cells read and subtracted in turn, the tables swept once for a group of them: the torch
backend's cancelling read-back (docs/method.md, section 4.6, "Reads in turn, in one sweep").

Cancelling, cell by cell, the residual table R gains a cell's write L_c conj(X_c), is read, q_c = R
X_c (the row dots of :meth:`TorchSpectralParser.row_dots
<fastdcyk.engine.backends.torch.spectral.TorchSpectralParser.row_dots>`), and loses the read's
subtraction S_c conj(X_c), where X_c = G_j (.) i^ is the index matrix of cell c = (i, j) and L_c,
S_c are (batch, d // 2 + 1) left spectra. The reads being linear,

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
for (``TorchCleanupParser.defer_writes``).

With R_0 = 0 the whole parse is one group whose reads need K alone, given to the group
with the reads of the words' writes (``grams``): no residual table at all
(docs/method.md, section 4.6, "The whole parse from the Gram matrices").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from fastdcyk.engine.backends.torch.spectral import TorchSpectralParser

__all__ = ["BLOCK", "Turns", "gram_matrices"]

#: Without autograd, how many cells' nets enter the later reads of a group together (one
#: batched product; a read between takes those since the last block in one small product).
BLOCK = 16


def gram_matrices(x: torch.Tensor, full: int = 0) -> torch.Tensor:
    """K[f, c', c] = sum_g conj(x[f, c', g]) x[f, c, g] of index matrices ``x`` (h, C, d),
    (h, C, C): where :class:`Turns` reads it (c' <= c, by blocks of :data:`BLOCK` rows)
    and in the first ``full`` rows whole (the words' rows, whose reads start the whole
    parse's); 0 elsewhere."""
    xc = torch.conj(x)
    k = x.new_zeros((x.shape[0], x.shape[1], x.shape[1]))
    k[:, :full] = xc[:, :full] @ x.transpose(1, 2)
    for r in range(full, x.shape[1], BLOCK):
        k[:, r : r + BLOCK, r:] = xc[:, r : r + BLOCK] @ x[:, r:].transpose(1, 2)
    return k


class Turns:
    """A group of cells read in turn from the residual table, or from the Gram matrices of
    their index matrices alone (``grams``; the module's docstring).

    Parameters
    ----------
    parser : TorchSpectralParser
        The clean-up parser whose ``residual`` table the group reads (from its index
        matrices and full index spectra); kept by no attribute, so that a parse stopped by
        an error mid-group leaves no reference cycle holding its tensors.
    spans : list of (int, int)
        The cells (i, j), in the order they are read (a span twice where a word and its
        unary cell are both read: :attr:`position` gives the later).
    grams : (Tensor, Tensor), optional
        K, (h, C, C) (at least where c' <= c), and the reads from R_0, (h, B, C): then no
        residual table is read nor written (:meth:`flush` only hands the writes on).
    """

    def __init__(
        self,
        parser: TorchSpectralParser,
        spans: list[tuple[int, int]],
        grams: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> None:
        self.spans = spans
        self.position = {span: c for c, span in enumerate(spans)}  # a span's last place
        self.grad = parser.grad
        self._zero_shape = (parser.batch, parser.half)
        self._zero_kind = {"dtype": parser.cdtype, "device": parser.device}
        self.xc: torch.Tensor | None = None
        if grams is not None:  # K and the reads from R_0 given: no residual table
            self.k, self.q = grams
        else:
            x = parser.index_outers(spans)  # (h, C, d)
            self.xc = torch.conj(x)  # a conjugate view of x
            self.k = gram_matrices(x)  # (h, C, C): K[f, c', c], c' <= c
            # (h, B, C): every cell's read from R_0, less (as each cell is read) what the
            # cells before it left in the residual
            self.q = parser.residual.transpose(0, 1) @ x.transpose(1, 2)
        self.writes: list[torch.Tensor | None] = [None] * len(spans)
        self.nets: list[torch.Tensor] = []  # L_c - S_c of the cells read, (B, h)
        # without autograd the nets of the last cells read, not yet in the later reads of
        # q (they enter it BLOCK at a time, in one product): (h, B, BLOCK)
        self._block = None if self.grad else self.q.new_empty((*self.q.shape[:2], BLOCK))
        self._since = 0  # the first of them

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
        if self._block is not None and c > self._since:  # the nets since the last block
            block = self._block[:, :, : c - self._since]
            q = q + (block @ self.k[:, self._since : c, c, None]).squeeze(-1)
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
        if self.grad:  # out of place: the earlier reads' slices are kept for backward
            later = net.T[:, :, None] * self.k[:, c, None, c + 1 :]  # (h, B, C - c - 1)
            self.q = torch.cat((self.q[:, :, : c + 1], self.q[:, :, c + 1 :] + later), 2)
            return False
        self._block[:, :, c - self._since] = net.T
        if c + 1 - self._since == BLOCK:  # into every later read at once
            since, self._since = self._since, c + 1
            self.q[:, :, c + 1 :].baddbmm_(self._block, self.k[:, since : c + 1, c + 1 :])
        return False

    def _zero(self) -> torch.Tensor:
        """A (B, h) left spectrum of nothing."""
        return torch.zeros(self._zero_shape, **self._zero_kind)

    def flush(self, parser: Any) -> None:
        """Every cell's write less its read into ``parser``'s residual table (one batched
        product, :meth:`TorchSpectralParser.add_outers`), and the writes handed to
        ``parser.defer_writes`` for P_left, which no read sees while cancelling."""
        if self.xc is not None:
            nets = torch.stack(self.nets, 2).transpose(0, 1)  # (h, B, C)
            parser.add_outers("residual", nets, self.xc)
        writes = zip(self.spans, self.writes, strict=True)
        parser.defer_writes([(s, w) for s, w in writes if w is not None])
        self.xc = self.k = self.q = None  # type: ignore[assignment]

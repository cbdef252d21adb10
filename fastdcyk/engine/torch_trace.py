"""The torch backend's trace-gate parser (docs/method.md, section 4.4): both accumulators as
2-D half spectra, batched over sentences; the numpy engine's
:class:`~fastdcyk.engine.numpy_backend.TraceParser` in PyTorch."""

from __future__ import annotations

from typing import Any

import torch

from fastdcyk.engine import schedule as S
from fastdcyk.engine.schedule import Detections, Step
from fastdcyk.engine.torch_common import TorchParser, free_bytes
from fastdcyk.hrr.buffers import g_cache_slots

__all__ = ["TraceParser"]


class TraceParser(TorchParser):
    """The trace-gate parser of docs/method.md, section 4.4, batched.

    ``zt`` and ``pr`` are (B, d // 2 + 1, d): rows f <= d/2 of (Phi P_left)~^T and of
    (P_right Phi^T)~ per sentence, as in the numpy engine. With g_A the gates of a cell,
    S^ = sum_A g_A A^ (S'^ with the right-child spectra):

    - update: ZT[f, g] += conj(S^[f] G_j[f, g] i^[g]), PR[f, g] += S'^[f] G_i[f, g] j^[g];
    - binary detection: sum_f R^[f] q[f], q[f] = sum_g ZT[f, g] PR[f, g] conj(j^[g]) i^[g];
    - unary detection and trace decoder: q[f] = sum_g ZT[f, g] G_j[f, g] i^[g].

    Without autograd the element-wise products go through two work buffers, and the unary
    detection of (i - 1, i) and its update share the matrix G_i (.) (i-1)^.

    The G_k = rows f <= d/2 of (Phi C_k Phi)~ cost one real and one complex FFT of a d x d
    matrix each, and more in gathers and fresh allocations here than in the numpy engine's
    kernel; they are shared by the whole batch and kept in a cache of up to a quarter of the
    memory the device has free when the parse starts (at least
    :data:`fastdcyk.hrr.buffers.G_CACHE_BYTES`, at most one per span index: all of them
    under autograd). At d = 6000 a G_k is 144 MB: the numpy engine's 256 MB held two, and
    nearly every cell computed one again (docs/performance.md). Without autograd the cache
    may be the caller's (``g_cache``), so that later parses with the same index vectors and
    permutation reuse it.
    """

    def __init__(self, *args: Any, g_cache: dict | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        shape = (self.B, self.h, self.d)
        self.zt = torch.zeros(shape, dtype=self.cdtype, device=self.dev)
        self.pr = torch.zeros(shape, dtype=self.cdtype, device=self.dev)
        self.full = torch.fft.fft(self.vec.index)  # (n + 1, d)
        d = self.d
        # W = Phi C_k Phi, W[r, c] = v_k[(perm[r] - inv[c]) mod d], is read from the strided
        # (symmetric) view R[a, t] = v_k[(a + t + 1) mod d]: W^T = R[d - 1 - inv][:, perm]
        self._rows = (d - 1) - self.idx(-1)
        self._g: dict[int, torch.Tensor] = {} if g_cache is None or self.grad else g_cache
        real = "float64" if self.rdtype == torch.float64 else "float32"
        self._slots = g_cache_slots(d, real, self.n, budget=free_bytes(self.dev) // 4)
        w = self.w.to(self.cdtype)
        self.spectra_w = self.spectra * w / d
        if len(self.st.unary):
            self.unary_w = self.unary_spectra * w / d
        if len(self.st.binary):
            self.binary_w = self.binary_spectra * w / d
        # work buffers (without autograd): a (h, d) matrix and a (B, h, d) one
        self._buf = (
            None if self.grad else torch.empty(shape[1:], dtype=self.cdtype, device=self.dev)
        )
        self._bbuf = None if self.grad else torch.empty(shape, dtype=self.cdtype, device=self.dev)

    def gmat(self, k: int) -> torch.Tensor:
        """G_k, from the cache or computed (under autograd every G_k is kept)."""
        g = self._g.pop(k, None)
        if g is None:
            if not self.grad:
                while len(self._g) >= self._slots:
                    self._g.pop(next(iter(self._g)))  # the least recently used
            v = self.vec.index[k]
            r = torch.cat((v, v))[1:].unfold(0, self.d, 1)
            wt = r.index_select(0, self._rows).index_select(1, self.idx(1))  # W^T
            # rfft(W, axis 0) = rfft(W^T, axis 1)^T, then the inverse FFT along the other axis
            g = torch.fft.ifft(torch.fft.rfft(wt, dim=1), dim=0).T.contiguous()
        self._g[k] = g  # last: the most recently used
        return g

    def _outer(self, j: int, i: int) -> torch.Tensor:
        """G_j (.) i^ (a column scaling), in the work buffer without autograd."""
        if self._buf is None:
            return self.gmat(j) * self.full[i]
        return torch.mul(self.gmat(j), self.full[i], out=self._buf)

    def _conj(self, m: torch.Tensor) -> torch.Tensor:
        """conj(m), in place when ``m`` is the work buffer."""
        return m.conj_physical_() if m is self._buf else torch.conj(m)

    def _madd(
        self, name: str, left: torch.Tensor, m: torch.Tensor, only: list[int] | None = None
    ) -> None:
        """acc += left[b, f] * m[f, g], in place unless autograd needs the old value.

        ``only``: the sentences b to update (the others' ``left`` is 0), or None for all.
        """
        acc = getattr(self, name)
        if self.grad:
            setattr(self, name, torch.addcmul(acc, left[:, :, None], m[None]))
        elif only is None:
            acc.addcmul_(left[:, :, None], m[None])
        else:  # a batch whose updates were mostly pruned: skip the others' passes
            for b in only:
                acc[b].addcmul_(left[b][:, None], m)

    def _rowdot(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """sum_g a[..., f, g] b[..., f, g] (through the batch work buffer)."""
        if self._bbuf is None:
            return (a * b).sum(-1)
        return torch.mul(a, b, out=self._bbuf).sum(-1)

    def initialise(self) -> None:
        """P_left = sum_i [i-1]- [i]- [a_i]- (P_right stays 0); with soft terminals
        [a_i]- is the mixture sum_a p_a [a]-, and with preterminal scores nothing is
        written (the unary step takes the scores)."""
        if self.pre is not None:
            return
        tspec = torch.fft.rfft(self.vec.terminal)
        for i in range(1, self.n + 1):
            s = torch.conj(self.word_rows(tspec, i - 1)) * self.active(i)[:, None]
            self._madd("zt", s, self._conj(self._outer(i, i - 1)))

    def update(
        self,
        i: int,
        j: int,
        gates: torch.Tensor,
        rows: torch.Tensor,
        outer_ji: torch.Tensor | None = None,
        keep: torch.Tensor | None = None,
    ) -> None:
        """sum_A g_A [i]- [j]- [A]- into P_left, sum_A g_A [A']+ [i]+ [j]+ into P_right.

        ``outer_ji``: G_j (.) i^ when the caller has it already (it may be conjugated in
        place). ``keep`` (B, k): the updates kept (the others' gates are 0), so that only
        the sentences with one are updated.
        """
        only = None
        if keep is not None and not self.grad and self.B > 1:
            kept = keep.any(1)
            if not bool(kept.all()):
                only = kept.nonzero().flatten().tolist()
        g = gates.to(self.cdtype)
        m = self._outer(j, i) if outer_ji is None else outer_ji
        self._madd("zt", torch.conj(g @ self.spectra[rows]), self._conj(m), only)
        self._madd("pr", g @ self.right_spectra[rows], self._outer(i, j), only)

    def _q_binary(self, i: int, j: int) -> torch.Tensor:
        """q of tr([j]- [i]+ P_left C P_right) (B, h): the binary detection."""
        dg = torch.conj(self.full[j]) * self.full[i]
        if self._bbuf is None:
            return (self.zt * self.pr) @ dg
        torch.mul(self.zt, self.pr, out=self._bbuf)
        return self._bbuf.mul_(dg).sum(-1)

    def read(self, i: int, j: int, step: Step) -> None:
        """q of the cell's readouts (B, h) and, for a unary cell, G_j (.) i^ (its update's
        matrix, shared with the detection)."""
        if step == S.UNARY:
            # q of tr(R_u Phi [j]+ [i]+ P_left): sum_g ZT G_j i^; the update of (i, j) adds
            # conj(G_j (.) i^) to ZT
            self._outer_ji = self._outer(j, i)
            self._qv = self._rowdot(self.zt, self._outer_ji)
        else:
            self._outer_ji = None
            self._qv = self._q_binary(i, j)

    def detect(self, i: int, j: int, step: Step, ks: slice) -> Detections:
        spectra_w = self.unary_w if step == S.UNARY else self.binary_w
        tvals = (self._qv @ spectra_w[ks].T).real
        gates = self.sigmoid(tvals)
        return Detections(tvals, gates, gates, gates)

    def write(self, i: int, j: int, step: Step, ks: slice, det: Detections, keep: Any) -> None:
        rows = self.unary_rows if step == S.UNARY else self.binary_rows
        self.update(i, j, det.values * keep, rows[ks], self._outer_ji, keep)

    def statistics(self) -> torch.Tensor:
        """The decoder statistics of every cell, (B, n, n + 1, N)."""
        if self.opt.decoder == "entry":
            # column 0 of Z = Phi P_left: (1/d) Re fft(sum_f w_f conj(ZT[f, :]))
            zsum = (torch.conj(self.zt) * self.w[None, :, None]).sum(1)
            col = torch.fft.fft(zsum).real / self.d
            return self.entry_statistics(col)
        nn = len(self.st.nonterminals)
        out = torch.zeros((self.B, self.n, self.n + 1, nn), dtype=self.rdtype, device=self.dev)
        full_t = self.full.T  # (d, n + 1)
        for j in range(1, self.n + 1):
            q = (self.zt * self.gmat(j)) @ full_t[:, :j]  # (B, h, j): q of (i, j), i < j
            out[:, :j, j, :] = (q.transpose(1, 2) @ self.spectra_w.T).real
        return out

    def dense(self) -> tuple[torch.Tensor, torch.Tensor]:
        """P_left and P_right, (B, d, d) each (P_right a transposed view).

        Z^T = irfft(fft(conj ZT, axis 1), axis 0), so Z = irfft of the transpose along the
        last axis; P_left = Phi^T Z. Likewise Phi P_right^T from PR, and
        P_right^T = Phi^T (Phi P_right^T).
        """
        d, inv = self.d, self.idx(-1)
        z = torch.fft.fft(torch.conj(self.zt), dim=-1).transpose(-1, -2)
        z = torch.fft.irfft(z, n=d, dim=-1)
        w = torch.fft.irfft(torch.fft.fft(self.pr, dim=-1).transpose(-1, -2), n=d, dim=-1)
        return z[:, inv], w[:, inv].transpose(-1, -2)

"""The entrywise gate in the torch backend (docs/method.md, section 4.3, the paper's
variant): the accumulators as row spectra, P_A a dense matrix or a diagonal; the numpy
backend's :class:`~fastdcyk.engine.modes.entrywise.numpy_parser.NumpyEntrywiseParser` in
PyTorch, batched and differentiable."""

from __future__ import annotations

from typing import Any

import torch

from fastdcyk.engine.backends.torch.parser import TorchParser
from fastdcyk.engine.core import schedule
from fastdcyk.engine.core.schedule import Detections, Step

__all__ = ["TorchEntrywiseParser"]


class TorchEntrywiseParser(TorchParser):
    """The entrywise-gate parser of docs/method.md, section 4.3, batched.

    The accumulators are kept as ``left_spectrum = rfft((Phi P_left)^T, axis=-1)`` and
    ``right_spectrum = rfft(P_right^T, axis=-1)``, (B, d, d // 2 + 1) each (FL and FR), and
    every d x d work matrix
    is the transpose of the one in the paper's algebra (operators applied from the right,
    FFTs along the last axis).
    """

    def __init__(self, *args: Any, g_cache: dict | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # no index matrices: g_cache is not used
        shape = (self.batch, self.d, self.half)
        self.left_spectrum = torch.zeros(shape, dtype=self.cdtype, device=self.device)
        self.right_spectrum = torch.zeros(shape, dtype=self.cdtype, device=self.device)
        self._permuted_circulant_index: dict[tuple[int, int], torch.Tensor] = {}
        self._wrap_index: torch.Tensor | None = None  # (k + m) mod d
        self._last_w_spectrum: dict[tuple[int, int], torch.Tensor] = {}  # the last cell's rfft(W^T)
        if len(self.structure.binary):
            self.binary_w = self.binary_spectra * self.parseval.to(self.cdtype) / self.d

    # -- operators applied from the right -----------------------------------------------------

    def times_phi(self, x: torch.Tensor, k: int) -> torch.Tensor:
        """x Phi^k (a gather: several times faster than indexing along the last axis)."""
        return torch.gather(x, -1, self.permutation_index(-k).expand(x.shape))

    def times_circulant(self, x: torch.Tensor, spec: torch.Tensor) -> torch.Tensor:
        """x C(spec): each row's spectrum times conj(spec)."""
        return torch.fft.irfft(torch.fft.rfft(x) * torch.conj(spec), n=self.d)

    def permuted_circulant_index(self, a: int, b: int) -> torch.Tensor:
        """``ix`` with (Phi^a C(v) Phi^b)[r, c] = v[ix[r, c]] (cached)."""
        ix = self._permuted_circulant_index.get((a, b))
        if ix is None:
            ix = (self.permutation_index(a)[:, None] - self.permutation_index(-b)[None, :]) % self.d
            self._permuted_circulant_index[(a, b)] = ix
        return ix

    def permuted_circulant(self, v: torch.Tensor, a: int, b: int) -> torch.Tensor:
        """Phi^a C(v) Phi^b as a dense matrix ((..., d) vectors give (..., d, d))."""
        ix = self.permuted_circulant_index(a, b)
        shape = (*v.shape[:-1], self.d, self.d)
        return torch.gather(v[..., None, :].expand(shape), -1, ix.expand(shape))

    def _add(self, name: str, value: torch.Tensor) -> None:
        acc = getattr(self, name)
        if self.grad:
            setattr(self, name, acc + value)
        else:
            acc += value

    # -- updates ----------------------------------------------------------------------------

    def initialise(self) -> None:
        """P_left = sum_i [i-1]- [i]- [a_i]-: (Phi [i-1]- [i]- [a]-)^T = ([a]+ [i]+) C_{i-1}."""
        s = self.index_half
        for i in range(1, self.n + 1):
            v = self.word_rows(self.vec.terminal, i - 1)  # (B, d)
            w = self.times_phi(
                self.times_circulant(self.permuted_circulant(v, 0, 1), s[i]), 1
            )  # C_a Phi C_i Phi
            inc = torch.fft.rfft(w) * torch.conj(s[i - 1])
            self._add("left_spectrum", inc * self.active(i)[:, None, None])

    def update_full(self, i: int, j: int, row: int, pat: torch.Tensor, keep: torch.Tensor):
        """P_left += [i]- [j]- [A]- P_A and P_right += [A']+ [i]+ [j]+ P_A, P_A^T = ``pat``.

        (Phi [i]- [j]- [A]- P_A)^T = P_A^T C_A Phi C_j Phi C_i and
        ([A']+ [i]+ [j]+ P_A)^T = P_A^T Phi^T C_j^T Phi^T C_i^T Phi^T C_A'^T.
        """
        s = self.index_half
        k = keep.to(self.rdtype)[:, None, None]
        x = self.times_phi(self.times_circulant(pat, self.spectra[row]), 1)
        x = self.times_phi(self.times_circulant(x, s[j]), 1)
        self._add("left_spectrum", torch.fft.rfft(x) * torch.conj(s[i]) * k)
        y = self.times_phi(self.times_circulant(self.times_phi(pat, -1), torch.conj(s[j])), -1)
        y = self.times_phi(self.times_circulant(y, torch.conj(s[i])), -1)
        self._add("right_spectrum", torch.fft.rfft(y) * self.right_spectra[row] * k)

    def update_diag(self, i: int, j: int, rows: torch.Tensor, p: torch.Tensor) -> None:
        """The updates of P_A = diag(p[:, k]) for the nonterminals ``rows``, at once.

        In the transposed layout the P_left part is (sum_A diag(p_A) C_A Phi) C_j Phi C_i:
        row r of the sum is sum_A p_A[r] v_A laid out as a circulant's row (one product and
        one gather). The P_right part is rfft(W^T) (.) (P^T A'^), W = Phi [i]+ [j]+.
        """
        s = self.index_half
        pt = p.transpose(-1, -2)  # (B, d, k)
        b = pt @ self.vec.nonterminal[rows]  # (B, d, d): row r = sum_A p_A[r] v_A
        ix = self.permuted_circulant_index(0, 1)
        x = torch.gather(b, -1, ix.expand(b.shape))  # sum_A diag(p_A) C_A Phi
        x = self.times_phi(self.times_circulant(x, s[j]), 1)
        self._add("left_spectrum", torch.fft.rfft(x) * torch.conj(s[i]))
        sw = self._last_w_spectrum.get((i, j))
        if sw is None:  # the cell's updates share it
            inner = self.times_phi(
                self.times_circulant(self.permuted_circulant(self.vec.index[i], 1, 1), s[j]), 1
            )
            sw = torch.fft.rfft(inner.T)  # rows of W^T, W = Phi C_i Phi C_j Phi
            self._last_w_spectrum = {(i, j): sw}
        self._add("right_spectrum", sw[None] * (pt.to(self.cdtype) @ self.right_spectra[rows]))

    # -- Algorithm 2 --------------------------------------------------------------------------

    def unary_spectrum(self, i: int) -> torch.Tensor:
        """rfft(Yt Phi^T) with Y = [i]+ [i-1]+ P_left: Mt_A = irfft(it * spec(R_u^A))."""
        s = self.index_half
        t1 = torch.fft.irfft(self.left_spectrum * s[i - 1], n=self.d)  # (C_{i-1} Phi P_left)^T
        yt = self.times_circulant(self.times_phi(t1, -1), torch.conj(s[i]))  # Yt = t1 Phi^T C_i^T
        return torch.fft.rfft(self.times_phi(yt, -1))

    def pair_products(self, i: int, j: int) -> torch.Tensor:
        """H[r, f] = FR[r, f] conj(Yhat[f, r]), Y = [j]- [i]+ P_left: diag(Y R P_right)
        = Re(H coef_R)."""
        s = self.index_half
        yt = self.times_phi(
            torch.fft.irfft(self.left_spectrum * (torch.conj(s[j]) * s[i]), n=self.d), 1
        )
        yhat = torch.fft.rfft(yt.transpose(-1, -2))  # rows of Y, (B, d, h)
        return self.right_spectrum * torch.conj(yhat)

    def group(self, step: Step) -> int | None:
        # a unary detection's P_A is a d x d matrix per sentence: one at a time
        return 1 if step == schedule.UNARY else None

    def read(self, i: int, j: int, step: Step) -> None:
        if step == schedule.UNARY:
            self._unary_spectrum = self.unary_spectrum(j)  # one spectrum of Yt Phi^T serves every A
        else:
            self._pair = self.pair_products(i, j)

    def detect(self, i: int, j: int, step: Step, ks: slice) -> Detections:
        if step == schedule.UNARY:
            mt = torch.fft.irfft(self._unary_spectrum * self.unary_spectra[ks.start], n=self.d)
            diag = torch.diagonal(mt, dim1=-2, dim2=-1)  # (B, d)
            arg = diag.mean(-1, keepdim=True)
            if self.opt.unary_mask:
                p = self.sigmoid(diag)[:, None, :]  # (B, 1, d)
                return Detections(arg, p.mean(-1), p.abs().amax(-1), p)
            pat = self.sigmoid(mt)  # P_A^T
            means = torch.diagonal(pat, dim1=-2, dim2=-1).mean(-1, keepdim=True)
            return Detections(arg, means, pat.abs().amax((-2, -1))[:, None], pat)
        if self.opt.order == "cell":
            diags = (self._pair @ self.binary_w[ks].T).real.transpose(-1, -2)  # (B, k, d)
        else:
            diags = (self._pair @ self.binary_w[ks.start]).real[:, None, :]  # (B, 1, d)
        p = self.sigmoid(diags)
        return Detections(diags.mean(-1), p.mean(-1), p.amax(-1), p)

    def write(self, i: int, j: int, step: Step, ks: slice, det: Detections, keep: Any) -> None:
        if step == schedule.BINARY:
            self.update_diag(i, j, self.binary_rows[ks], det.values * keep[..., None])
        elif self.opt.unary_mask:
            self.update_diag(i, j, self.unary_rows[ks], det.values * keep[..., None])
        else:
            self.update_full(i, j, int(self.structure.unary[ks.start]), det.values, keep[:, 0])

    # -- decoding and the dense accumulators --------------------------------------------------

    def statistics(self) -> torch.Tensor:
        """The decoder statistics of every cell, (B, n, n + 1, N)."""
        d = self.d
        if self.opt.decoder == "entry":
            return self.entry_statistics(torch.fft.irfft(self.left_spectrum[:, 0, :], n=d))
        # tr(C_A Phi W), W = C_j Phi C_i Phi P_left: with Xt = Wt Phi^T (the transpose of
        # Phi W), tr(C_A Phi W) = sum_m v_A[-m] sums[m], sums[m] = sum_k Xt[k, (k + m) mod d]
        s = self.index_half
        nn = len(self.structure.nonterminals)
        out = torch.zeros(
            (self.batch, self.n, self.n + 1, nn), dtype=self.rdtype, device=self.device
        )
        ct = torch.fft.irfft(torch.conj(self.spectra), n=d).T / d  # c_A[m] = v_A[-m]
        for i in range(self.n):
            zt = self.times_phi(
                torch.fft.irfft(self.left_spectrum * s[i], n=d), -1
            )  # (Phi C_i Phi P_left)^T
            zhat = torch.fft.rfft(zt)
            for j in range(i + 1, self.n + 1):
                xt = self.times_phi(torch.fft.irfft(zhat * s[j], n=d), -1)
                out[:, i, j, :] = self._wrapped_diagonal_sums(xt) @ ct
        return out

    def _wrapped_diagonal_sums(self, xt: torch.Tensor) -> torch.Tensor:
        """sums[..., m] = sum_k xt[..., k, (k + m) mod d].

        A strided view of [xt, xt] is faster forward; a gather has the faster backward.
        """
        d = self.d
        if self.grad:
            if self._wrap_index is None:
                self._wrap_index = (
                    self.permutation_index(0)[:, None] + self.permutation_index(0)[None, :]
                ) % d
            ix = self._wrap_index
            return torch.gather(xt, -1, ix.expand(xt.shape)).sum(-2)
        xc = torch.cat((xt, xt), dim=-1)
        return xc.as_strided((self.batch, d, d), (2 * d * d, 1, 2 * d + 1)).sum(-1)

    def dense(self) -> tuple[torch.Tensor, torch.Tensor]:
        d = self.d
        p_left = self.times_phi(torch.fft.irfft(self.left_spectrum, n=d), 1).transpose(-1, -2)
        return p_left, torch.fft.irfft(self.right_spectrum, n=d).transpose(-1, -2)

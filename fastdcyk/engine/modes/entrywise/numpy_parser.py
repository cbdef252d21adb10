"""The entrywise gate in the numpy backend (docs/method.md, section 4.3; the paper's
variant): the accumulators as row spectra, P_A a dense matrix (unary) or a diagonal
(binary), every operator applied by FFT."""

from __future__ import annotations

from typing import Any

import numpy as np

from fastdcyk.cfg.grammar import Grammar
from fastdcyk.engine.backends.numpy.parser import NumpyParser, mixture
from fastdcyk.engine.core import schedule
from fastdcyk.engine.core.arrays import sigmoid
from fastdcyk.engine.core.decode import Statistics, statistics_from_spectrum
from fastdcyk.engine.core.schedule import Detections, Step
from fastdcyk.hrr import buffers, kernels
from fastdcyk.hrr.codebook import Codebook
from fastdcyk.hrr.operators import Operator
from fastdcyk.options import DCYKOptions

__all__ = ["NumpyEntrywiseParser", "row_block"]


class NumpyEntrywiseParser(NumpyParser):
    """The entrywise gate's parse: the accumulators (kept as row spectra), the rule tables,
    the work buffers.

    Three choices make the parse cheap; none changes what is computed.

    1. Spectra. Every operator D-CYK applies to P_left from the left ends in ``C Phi``
       ([i]+, [j]- [i]+, the decoder's [A]+ [j]+ [i]+), and P_right is only read through
       diag(Y R P_right). So the accumulators are kept as spectra: each use of P_left starts
       from its spectrum (no gather, no forward FFT), each update ends by adding a spectrum
       (no inverse FFT, no gather, no add pass), and diag(Y R P_right) is a Parseval sum over
       spectra (no FFT). P_left and P_right are formed once, at the end.
    2. Transposes. FFTs along the contiguous axis cost about 40% less than along axis 0, so
       the parser works with P_left^T and P_right^T and applies every operator's transpose
       from the right: ``(Op X)^T = X^T Op^T``. It keeps

           left_spectrum = FL = rfft(P_left^T Phi^T, axis=1) = rfft((Phi P_left)^T, axis=1),
           right_spectrum = FR = rfft(P_right^T, axis=1),

       and every d x d work matrix below is the transpose of the one in the paper's algebra
       (a trailing ``t`` in the comments).
    3. Cells (``order="cell"``). The detections of a cell share everything but their rule
       operator, so the cell's shared matrix is computed once and every nonterminal is read
       from it with a matrix product over the rule tables (:mod:`fastdcyk.engine.core.rules`);
       the updates of a cell differ only in their nonterminal's circulant, so they are
       summed first and the shared chain is applied once (docs/method.md, section 4).
    """

    def __init__(self, grammar: Grammar, words: tuple[str, ...], cb: Codebook, opt: DCYKOptions):
        super().__init__(grammar, words, cb, opt)
        self.left_spectrum = buffers.FL.new(cb)
        self.right_spectrum = buffers.FR.new(cb)
        self.y = buffers.Y.get(cb)
        self.work = buffers.W.get(cb)
        self._ident = cb.permutation_index(0)
        self._yt_hat: np.ndarray | None = None

    def group(self, step: Step) -> int | None:
        # a unary detection's P_A is a d x d matrix: one at a time
        return 1 if step == schedule.UNARY else None

    def spec(self, kind: str, s: Any) -> np.ndarray:
        return self.cb.spectrum(kind, s)

    def _circ_phi(self, spec: np.ndarray) -> Operator:
        """The operator C Phi of a spectrum (e.g. [A]+ for A's spectrum)."""
        return Operator(self.cb, (np.asarray(spec).astype(self.cb.cdtype), 1))

    # -- the accumulators as spectra -----------------------------------------------------------

    def left_product_t(self, spec: np.ndarray, out: np.ndarray, power: int) -> np.ndarray:
        """out = (Phi^power C(spec) Phi P_left)^T = irfft(FL * spec, axis=1) Phi^-power."""
        cb = self.cb
        s = buffers.SPECTRUM.get(cb, self.left_spectrum.shape)
        kernels.spec_mul_into_axis1(self.left_spectrum, spec, s)
        if power == 0:
            return cb.fft.irfft(s, self.d, 1, out=out)
        tmp = self.work if out is not self.work else self.y
        cb.fft.irfft(s, self.d, 1, out=tmp)
        return kernels.gather_cols(tmp, cb.permutation_index(power), out)

    def accumulate_t(self, acc: np.ndarray, spec: np.ndarray, xt: np.ndarray) -> None:
        """Add C(spec) x to an accumulator: acc += rfft(x^T, axis=1) * spec."""
        s = buffers.SPECTRUM.get(self.cb, acc.shape)
        self.cb.fft.rfft(xt, 1, out=s)
        kernels.spec_madd_axis1(acc, s, spec)

    def initialise(self) -> None:
        """P_left = sum_i [i-1]- [i]- [a_i]- (P_right stays 0)."""
        for i, word in enumerate(self.words, start=1):
            # Phi [i-1]- [i]- [a]- = C_{i-1}^T ([i]- [a]-); its transpose is ([i]- [a]-)^T C_{i-1}
            # (a soft word: the sum over its terminals, each scaled by its weight)
            for a, p in mixture(word):
                inner = self.cb.minus("index", i) @ self.cb.minus("terminal", a)
                inner.T.diag_times(np.full(self.d, p, self.cb.dtype), out=self.work)
                self.accumulate_t(self.left_spectrum, np.conj(self.spec("index", i - 1)), self.work)

    def update(
        self,
        i: int,
        j: int,
        kind: str,
        value: np.ndarray,
        work: np.ndarray,
        spec: np.ndarray,
        right: np.ndarray,
    ) -> None:
        """P_left += [i]- [j]- [A]- P_A and P_right += [A']+ [i]+ [j]+ P_A for one A.

        ``spec`` and ``right`` are the spectra of A's circulant in P_left and in P_right
        (the same but with ``encoding="roles"``). ``kind`` says what P_A is: "diag"
        (diag(value)) or "full" (``value`` is P_A^T, a d x d matrix other than ``work``).
        ``work`` is a free d x d buffer.
        """
        cb = self.cb
        # Phi [i]- [j]- [A]- = C_i^T ([j]- [A]-) and [A]+ [i]+ [j]+ = C_A (Phi [i]+ [j]+);
        # (inner P_A)^T = P_A^T inner^T.
        parts = (
            (
                self.left_spectrum,
                np.conj(self.spec("index", i)),
                cb.minus("index", j) @ self._circ_phi(spec).T,
            ),
            (self.right_spectrum, right, cb.phi() @ cb.plus("index", i) @ cb.plus("index", j)),
        )
        for acc, acc_spec, inner in parts:
            if kind == "diag":
                inner.T.diag_times(value, out=work)
            else:
                inner.T.apply(value, side="right", out=work)
            self.accumulate_t(acc, acc_spec, work)

    def update_cell(self, i: int, j: int, kept: np.ndarray, p: np.ndarray) -> None:
        """Every diagonal-gated update of a cell at once: P_A = diag(p[k]) for row kept[k].

        In the transposed layout the P_left part is (sum_A diag(p_A) C_A) Phi C_j Phi: row
        r of the sum is sum_A p_A[r] v_A laid out as a circulant's row (one matrix product,
        then :func:`~fastdcyk.hrr.kernels.rows_circulant`), and the chain C_j Phi is applied
        once. The P_right part is rfft(W^T) (.) G with G[r, f] = sum_A p_A[r] spec_A[f] and
        W = Phi [i]+ [j]+: one more matrix product.
        """
        cb, d, t = self.cb, self.d, self.tables
        vectors = t.vectors[kept]
        step = row_block(d, len(kept))
        shift = cb.permutation_index(-1)
        for r0 in range(0, d, step):
            r1 = min(d, r0 + step)
            b = (p[:, r0:r1].T @ vectors).astype(cb.dtype, copy=False)
            kernels.rows_circulant(b, self._ident[r0:r1], shift, self.work[r0:r1])
        (cb.circulant(spectrum=self.spec("index", j)) @ cb.phi()).apply(
            self.work, side="right", out=self.work
        )
        self.accumulate_t(self.left_spectrum, np.conj(self.spec("index", i)), self.work)
        inner = cb.phi() @ cb.plus("index", i) @ cb.plus("index", j)
        inner.T.diag_times(np.ones(d, cb.dtype), out=self.work)
        s = buffers.SPECTRUM.get(cb, self.right_spectrum.shape)
        cb.fft.rfft(self.work, 1, out=s)
        spectra = t.right_spectra[kept]
        for r0 in range(0, d, step):
            r1 = min(d, r0 + step)
            self.right_spectrum[r0:r1] += s[r0:r1] * (p[:, r0:r1].T @ spectra).astype(
                cb.cdtype, copy=False
            )

    # -- the shared passes -----------------------------------------------------------------

    def read(self, i: int, j: int, step: Step) -> None:
        """Unary cell (j - 1, j): self.y = Yt, Y = [j]+ [j-1]+ P_left, and in the cell order
        the spectrum of Yt Phi^T (one forward FFT serves every A). Binary cell (i, j):
        Yt with Y = [j]- [i]+ P_left, and the rows of Y's spectra."""
        cb, d = self.cb, self.d
        if step == schedule.UNARY:
            self.left_product_t(self.spec("index", i), self.work, 0)
            cb.plus("index", j).T.apply(self.work, side="right", out=self.y)
            if self.opt.order == "cell":
                kernels.gather_cols(self.y, cb.perm, self.work)  # Yt Phi^T
                cb.fft.rfft(self.work, 1, out=buffers.YHAT.get(cb))
            return
        check = np.conj(self.spec("index", j)) * self.spec("index", i)
        self.left_product_t(check, self.y, -1)  # Yt
        yt_hat = buffers.SPECTRUM.get(cb, (d // 2 + 1, d))
        cb.fft.rfft(self.y, 0, out=yt_hat)  # rows of Y, for Parseval
        self._yt_hat = yt_hat

    # -- Algorithm 2 -------------------------------------------------------------------------

    def _unary_m(self, k: int) -> None:
        """self.work = Mt = (R_u^A Y)^T for the k-th unary nonterminal."""
        cb, t = self.cb, self.tables
        if self.opt.order == "cell":
            # Mt_A = (Yt Phi^T) C_A^T: the cell's spectrum times A's, one inverse FFT
            s = buffers.SPECTRUM.get(cb, self.left_spectrum.shape)
            kernels.spec_mul_into_axis1(
                buffers.YHAT.get(cb), t.unary_spectra[k].astype(cb.cdtype), s
            )
            cb.fft.irfft(s, self.d, 1, out=self.work)
        else:
            self._circ_phi(t.unary_spectra[k]).T.apply(self.y, side="right", out=self.work)

    def detect(self, i: int, j: int, step: Step, ks: slice) -> Detections:
        if step == schedule.UNARY:
            return self._detect_unary(ks.start)
        return self._detect_binary(ks)

    def _detect_unary(self, k: int) -> Detections:
        """P_A from Mt (in self.work): sigma of its diagonal (masked) or of all of it."""
        opt = self.opt
        self._unary_m(k)
        if opt.unary_mask:
            m = np.diagonal(self.work).astype(np.float64)
            p = sigmoid(m, opt.beta).astype(self.cb.dtype)
            return Detections(
                readouts=np.array([[m.mean()]]),
                means=np.array([[np.mean(p)]]),
                peaks=np.array([[np.max(np.abs(p))]]),
                values=("diag", p),
                check=m,
            )
        total = self.work.sum(dtype=np.float64)
        readout = np.diagonal(self.work).mean(dtype=np.float64)
        kernels.sigmoid_numpy(self.work, opt.beta, 0.5)  # P_A^T = sigma(Mt)
        return Detections(
            readouts=np.array([[readout]]),
            means=np.array([[np.mean(np.diagonal(self.work))]]),
            peaks=np.array([[np.max(np.abs(self.work))]]),
            values=("full", self.work),
            check=total,
        )

    # -- Algorithm 3 -------------------------------------------------------------------------

    def _detect_binary(self, ks: slice) -> Detections:
        """diag(Y R_A P_right) for the nonterminals ``ks``, gated entry by entry.

        One at a time: diag[r] = (1/d) sum_f w_f Re(Yhat[r, f] conj(V_R[f]) conj(FR[r, f])),
        Yhat[r, f] = rfft(Yt, axis=0)[f, r]: no FFT, no d x d product. The whole cell:
        Re sum_f H[r, f] coef_A[f] with H[r, f] = FR[r, f] conj(Yhat[f, r]) and
        coef_A = w (.) spec(R_A) / d, one complex matrix product per block of rows.
        """
        opt, cb, d, t = self.opt, self.cb, self.d, self.tables
        yt_hat = self._yt_hat
        if opt.order == "cell":
            spectra = t.binary_spectra[ks]
            coefs = (spectra * (self.parseval / d)).astype(cb.cdtype)
            diags = np.empty((len(spectra), d), np.float64)
            step = row_block(d, len(spectra))
            for r0 in range(0, d, step):
                r1 = min(d, r0 + step)
                h_blk = self.right_spectrum[r0:r1] * np.conj(yt_hat[:, r0:r1].T)
                diags[:, r0:r1] = (coefs @ h_blk.T).real
        else:
            diags = np.empty((1, d), np.float64)
            coef = (self.parseval * t.binary_spectra[ks.start] / d).astype(cb.cdtype)
            kernels.spectral_diag(self.right_spectrum, coef, yt_hat, diags[0])
        gates = sigmoid(diags, opt.beta).astype(cb.dtype)
        return Detections(
            readouts=diags.mean(axis=1)[None],
            means=np.mean(gates, axis=1)[None],
            peaks=np.max(np.abs(gates), axis=1)[None],
            values=gates,
            check=diags,
        )

    def write(self, i: int, j: int, step: Step, ks: slice, det: Detections, keep: Any) -> None:
        t = self.tables
        if step == schedule.UNARY:
            row = t.unary[ks.start]
            kind, value = det.values
            self.update(i, j, kind, value, self.y, t.spectra[row], t.right_spectra[row])
            return
        keep = keep[0]
        if self.opt.order == "cell":
            self.update_cell(i, j, t.binary[ks][keep], det.values[keep])
            return
        row = t.binary[ks.start]
        self.update(i, j, "diag", det.values[0], self.work, t.spectra[row], t.right_spectra[row])

    # -- the dense accumulators --------------------------------------------------------------

    def statistics(self) -> Statistics:
        """The decoder's statistics, read from the left spectrum (no forward FFT)."""
        n = len(self.words)
        spectrum = self.left_spectrum
        return statistics_from_spectrum(
            spectrum, self.grammar, n, self.cb, decoder=self.opt.decoder
        )

    def dense(self, deferred: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """P_left = (irfft(FL, axis=1) Phi)^T and P_right = irfft(FR, axis=1)^T, new arrays
        (never deferred).

        The spectra are consumed (an inverse FFT may overwrite its input) and released.
        """
        cb, d = self.cb, self.d
        fl, self.left_spectrum = self.left_spectrum, None
        cb.fft.irfft(fl, d, 1, out=self.y)
        del fl  # its memory goes back before the dense matrices are allocated
        kernels.gather_cols(self.y, cb.permutation_index(-1), self.work)
        p_left = buffers.P_LEFT.new(cb, zero=False)
        p_left[...] = self.work.T
        fr, self.right_spectrum = self.right_spectrum, None
        cb.fft.irfft(fr, d, 1, out=self.work)
        del fr
        p_right = buffers.P_RIGHT.new(cb, zero=False)
        p_right[...] = self.work.T
        return p_left, p_right


def row_block(d: int, k: int) -> int:
    """Rows per block for products with k rule rows: about 2 MiB of temporaries."""
    return max(8, min(d, (1 << 21) // (16 * max(d // 2 + 1, k))))

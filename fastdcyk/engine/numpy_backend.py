"""The numpy engine: D-CYK's arithmetic over FFTs and Numba kernels, into reused buffers.

Its parsers implement :class:`fastdcyk.engine.schedule.CellParser`, whose schedule (cells,
orders, counts, pruning, log, checks, progress) is :func:`fastdcyk.engine.schedule.run`:

- :class:`EntrywiseParser`, the entrywise gate (the paper's): the accumulators as row
  spectra, every operator applied by FFT (docs/method.md, section 4.3);
- :class:`TraceParser`, the trace gate: the accumulators as 2-D half spectra, every cell in
  O(d^2) without an FFT (docs/method.md, section 4.4);
- the clean-up gate's :class:`~fastdcyk.engine.numpy_cleanup.CleanupParser` (its own
  module), which registers itself in :data:`PARSERS`.

:func:`parse_numpy` runs one parse of a prepared plan (:mod:`fastdcyk.engine.plan`).
"""

from __future__ import annotations

import time
import weakref
from collections import OrderedDict
from typing import Any

import numpy as np

from fastdcyk.cfg.grammar import Grammar
from fastdcyk.engine import schedule as S
from fastdcyk.engine.decode import (
    Statistics,
    chart_from_statistics,
    decode_statistics,
    sigmoid,
    statistics_from_spectrum,
)
from fastdcyk.engine.result import DCYKResult
from fastdcyk.engine.rules import parseval_weights, rule_tables
from fastdcyk.engine.schedule import Detections, Step
from fastdcyk.engine.soft import SoftWord
from fastdcyk.hrr import buffers as B
from fastdcyk.hrr import kernels as K
from fastdcyk.hrr.buffers import g_cache_slots, g_kept_slots
from fastdcyk.hrr.codebook import Codebook
from fastdcyk.hrr.operators import Operator
from fastdcyk.options import SCALAR_GATES, DCYKOptions

__all__ = [
    "PARSERS",
    "EntrywiseParser",
    "NumpyOps",
    "TraceParser",
    "kept_spectra",
    "parse_numpy",
    "release_kept",
    "trim_kept",
]

NumpyOps = S.NumpyOps
_OPS = NumpyOps()


def mixture(word: str) -> tuple[tuple[str, float], ...]:
    """A word's terminals and weights: its own with weight 1, a soft word's."""
    return word.weights if isinstance(word, SoftWord) else ((word, 1.0),)


class _NumpyParser(S.CellParser):
    """What both numpy parsers share: the rule tables, the Parseval weights, the rows."""

    def __init__(self, grammar: Grammar, words: tuple[str, ...], cb: Codebook, opt: DCYKOptions):
        self.g, self.words, self.cb, self.opt = grammar, words, cb, opt
        self.d = cb.d
        self.t = rule_tables(cb, grammar, opt.encoding)
        self._weights = parseval_weights(cb.d)

    def rows(self, step: Step) -> np.ndarray:
        return self.t.unary if step == S.UNARY else self.t.binary

    def table_scores(self) -> dict[tuple[int, int, str], float] | None:
        """The Viterbi scores read from a weighted table (``weights="table"``); None for
        the parsers that write none."""
        return None


class EntrywiseParser(_NumpyParser):
    """One parse: the accumulators (kept as spectra), the rule tables, the work buffers.

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

           FL = rfft(P_left^T Phi^T, axis=1) = rfft((Phi P_left)^T, axis=1),
           FR = rfft(P_right^T, axis=1),

       and every d x d work matrix below is the transpose of the one in the paper's algebra
       (a trailing ``t`` in the comments).
    3. Cells (``order="cell"``). The detections of a cell share everything but their rule
       operator, so the cell's shared matrix is computed once and every nonterminal is read
       from it with a matrix product over the rule tables (:mod:`fastdcyk.engine.rules`);
       the updates of a cell differ only in their nonterminal's circulant, so they are
       summed first and the shared chain is applied once (docs/method.md, section 4).
    """

    def __init__(self, grammar: Grammar, words: tuple[str, ...], cb: Codebook, opt: DCYKOptions):
        super().__init__(grammar, words, cb, opt)
        self.fl = B.FL.new(cb)
        self.fr = B.FR.new(cb)
        self.y = B.Y.get(cb)
        self.w = B.W.get(cb)
        self._ident = cb.permutation_index(0)
        self._yt_hat: np.ndarray | None = None

    def group(self, step: Step) -> int | None:
        # a unary detection's P_A is a d x d matrix: one at a time
        return 1 if step == S.UNARY else None

    def spec(self, kind: str, s: Any) -> np.ndarray:
        return self.cb.spectrum(kind, s)

    def _circ_phi(self, spec: np.ndarray) -> Operator:
        """The operator C Phi of a spectrum (e.g. [A]+ for A's spectrum)."""
        return Operator(self.cb, (np.asarray(spec).astype(self.cb.cdtype), 1))

    # -- the accumulators as spectra -----------------------------------------------------------

    def left_product_t(self, spec: np.ndarray, out: np.ndarray, power: int) -> np.ndarray:
        """out = (Phi^power C(spec) Phi P_left)^T = irfft(FL * spec, axis=1) Phi^-power."""
        cb = self.cb
        s = cb.spectrum_buffer(self.fl.shape)
        K.spec_mul_into_axis1(self.fl, spec, s)
        if power == 0:
            return cb.engine.irfft(s, self.d, 1, out=out)
        tmp = self.w if out is not self.w else self.y
        cb.engine.irfft(s, self.d, 1, out=tmp)
        return K.gather_cols(tmp, cb.permutation_index(power), out)

    def accumulate_t(self, acc: np.ndarray, spec: np.ndarray, xt: np.ndarray) -> None:
        """Add C(spec) x to an accumulator: acc += rfft(x^T, axis=1) * spec."""
        s = self.cb.spectrum_buffer(acc.shape)
        self.cb.engine.rfft(xt, 1, out=s)
        K.spec_madd_axis1(acc, s, spec)

    def initialise(self) -> None:
        """P_left = sum_i [i-1]- [i]- [a_i]- (P_right stays 0)."""
        for i, word in enumerate(self.words, start=1):
            # Phi [i-1]- [i]- [a]- = C_{i-1}^T ([i]- [a]-); its transpose is ([i]- [a]-)^T C_{i-1}
            # (a soft word: the sum over its terminals, each scaled by its weight)
            for a, p in mixture(word):
                inner = self.cb.minus("index", i) @ self.cb.minus("terminal", a)
                inner.T.diag_times(np.full(self.d, p, self.cb.dtype), out=self.w)
                self.accumulate_t(self.fl, np.conj(self.spec("index", i - 1)), self.w)

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
                self.fl,
                np.conj(self.spec("index", i)),
                cb.minus("index", j) @ self._circ_phi(spec).T,
            ),
            (self.fr, right, cb.phi() @ cb.plus("index", i) @ cb.plus("index", j)),
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
        cb, d, t = self.cb, self.d, self.t
        vectors = t.vectors[kept]
        step = row_block(d, len(kept))
        shift = cb.permutation_index(-1)
        for r0 in range(0, d, step):
            r1 = min(d, r0 + step)
            b = (p[:, r0:r1].T @ vectors).astype(cb.dtype, copy=False)
            K.rows_circulant(b, self._ident[r0:r1], shift, self.w[r0:r1])
        (cb.circulant(spectrum=self.spec("index", j)) @ cb.phi()).apply(
            self.w, side="right", out=self.w
        )
        self.accumulate_t(self.fl, np.conj(self.spec("index", i)), self.w)
        inner = cb.phi() @ cb.plus("index", i) @ cb.plus("index", j)
        inner.T.diag_times(np.ones(d, cb.dtype), out=self.w)
        s = cb.spectrum_buffer(self.fr.shape)
        cb.engine.rfft(self.w, 1, out=s)
        spectra = t.right_spectra[kept]
        for r0 in range(0, d, step):
            r1 = min(d, r0 + step)
            self.fr[r0:r1] += s[r0:r1] * (p[:, r0:r1].T @ spectra).astype(cb.cdtype, copy=False)

    # -- the shared passes -----------------------------------------------------------------

    def read(self, i: int, j: int, step: Step) -> None:
        """Unary cell (j - 1, j): self.y = Yt, Y = [j]+ [j-1]+ P_left, and in the cell order
        the spectrum of Yt Phi^T (one forward FFT serves every A). Binary cell (i, j):
        Yt with Y = [j]- [i]+ P_left, and the rows of Y's spectra."""
        cb, d = self.cb, self.d
        if step == S.UNARY:
            self.left_product_t(self.spec("index", i), self.w, 0)
            cb.plus("index", j).T.apply(self.w, side="right", out=self.y)
            if self.opt.order == "cell":
                K.gather_cols(self.y, cb.perm, self.w)  # Yt Phi^T
                cb.engine.rfft(self.w, 1, out=B.YHAT.get(cb))
            return
        check = np.conj(self.spec("index", j)) * self.spec("index", i)
        self.left_product_t(check, self.y, -1)  # Yt
        yt_hat = cb.spectrum_buffer((d // 2 + 1, d))
        cb.engine.rfft(self.y, 0, out=yt_hat)  # rows of Y, for Parseval
        self._yt_hat = yt_hat

    # -- Algorithm 2 -------------------------------------------------------------------------

    def _unary_m(self, k: int) -> None:
        """self.w = Mt = (R_u^A Y)^T for the k-th unary nonterminal."""
        cb, t = self.cb, self.t
        if self.opt.order == "cell":
            # Mt_A = (Yt Phi^T) C_A^T: the cell's spectrum times A's, one inverse FFT
            s = cb.spectrum_buffer(self.fl.shape)
            K.spec_mul_into_axis1(B.YHAT.get(cb), t.unary_spectra[k].astype(cb.cdtype), s)
            cb.engine.irfft(s, self.d, 1, out=self.w)
        else:
            self._circ_phi(t.unary_spectra[k]).T.apply(self.y, side="right", out=self.w)

    def detect(self, i: int, j: int, step: Step, ks: slice) -> Detections:
        if step == S.UNARY:
            return self._detect_unary(ks.start)
        return self._detect_binary(ks)

    def _detect_unary(self, k: int) -> Detections:
        """P_A from Mt (in self.w): sigma of its diagonal (masked) or of all of it."""
        opt = self.opt
        self._unary_m(k)
        if opt.unary_mask:
            m = np.diagonal(self.w).astype(np.float64)
            p = sigmoid(m, opt.beta).astype(self.cb.dtype)
            return Detections(
                readouts=np.array([[m.mean()]]),
                means=np.array([[np.mean(p)]]),
                peaks=np.array([[np.max(np.abs(p))]]),
                values=("diag", p),
                check=m,
            )
        total = self.w.sum(dtype=np.float64)
        readout = np.diagonal(self.w).mean(dtype=np.float64)
        K.sigmoid_numpy(self.w, opt.beta, 0.5)  # P_A^T = sigma(Mt)
        return Detections(
            readouts=np.array([[readout]]),
            means=np.array([[np.mean(np.diagonal(self.w))]]),
            peaks=np.array([[np.max(np.abs(self.w))]]),
            values=("full", self.w),
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
        opt, cb, d, t = self.opt, self.cb, self.d, self.t
        yt_hat = self._yt_hat
        if opt.order == "cell":
            spectra = t.binary_spectra[ks]
            coefs = (spectra * (self._weights / d)).astype(cb.cdtype)
            diags = np.empty((len(spectra), d), np.float64)
            step = row_block(d, len(spectra))
            for r0 in range(0, d, step):
                r1 = min(d, r0 + step)
                h_blk = self.fr[r0:r1] * np.conj(yt_hat[:, r0:r1].T)
                diags[:, r0:r1] = (coefs @ h_blk.T).real
        else:
            diags = np.empty((1, d), np.float64)
            coef = (self._weights * t.binary_spectra[ks.start] / d).astype(cb.cdtype)
            K.spectral_diag(self.fr, coef, yt_hat, diags[0])
        gates = sigmoid(diags, opt.beta).astype(cb.dtype)
        return Detections(
            readouts=diags.mean(axis=1)[None],
            means=np.mean(gates, axis=1)[None],
            peaks=np.max(np.abs(gates), axis=1)[None],
            values=gates,
            check=diags,
        )

    def write(self, i: int, j: int, step: Step, ks: slice, det: Detections, keep: Any) -> None:
        t = self.t
        if step == S.UNARY:
            row = t.unary[ks.start]
            kind, value = det.values
            self.update(i, j, kind, value, self.y, t.spectra[row], t.right_spectra[row])
            return
        keep = keep[0]
        if self.opt.order == "cell":
            self.update_cell(i, j, t.binary[ks][keep], det.values[keep])
            return
        row = t.binary[ks.start]
        self.update(i, j, "diag", det.values[0], self.w, t.spectra[row], t.right_spectra[row])

    # -- the dense accumulators --------------------------------------------------------------

    def dense(self) -> tuple[np.ndarray, np.ndarray]:
        """P_left = (irfft(FL, axis=1) Phi)^T and P_right = irfft(FR, axis=1)^T, new arrays.

        The spectra are consumed (an inverse FFT may overwrite its input) and released.
        """
        cb, d = self.cb, self.d
        fl, self.fl = self.fl, None
        cb.engine.irfft(fl, d, 1, out=self.y)
        del fl  # its memory goes back before the dense matrices are allocated
        K.gather_cols(self.y, cb.permutation_index(-1), self.w)
        p_left = B.P_LEFT.new(cb, zero=False)
        p_left[...] = self.w.T
        fr, self.fr = self.fr, None
        cb.engine.irfft(fr, d, 1, out=self.w)
        del fr
        p_right = B.P_RIGHT.new(cb, zero=False)
        p_right[...] = self.w.T
        return p_left, p_right


class TraceParser(_NumpyParser):
    """A parse with the trace gate: both accumulators as 2-D spectra, every cell in O(d^2).

    With the trace gate every P_A is a scalar times I, so every update is an operator, and
    in the 2-D spectral domain (M~ = F M F^-1, F the DFT matrix, so that F C_v F^-1 =
    diag(fft(v))) an operator Phi^a C Phi^b is diagonal up to the fixed matrix
    G_k = (Phi C_k Phi)~ of a span index k. The parser keeps

        ZT = rows f <= d/2 of (Phi P_left)~^T,    PR = rows f <= d/2 of (P_right Phi^T)~,

    (complex, (d // 2 + 1, d) each: the same memory as the half spectra of the other
    parser), and then, with hats for full spectra of vectors (docs/method.md, section 4):

    - an update of cell (i, j) with summed spectrum S adds diag(conj S) conj(G_j)
      diag(conj i) to ZT and diag(S) G_i diag(j) to PR (element-wise, no FFT);
    - the binary detection tr([j]- [i]+ P_left R P_right) is sum_f R[f] q[f] with
      q[f] = sum_g conj(j[g]) i[g] ZT[f, g] PR[f, g];
    - the unary detection tr(R_u Phi [i]+ [i-1]+ P_left) and the trace decoder's
      tr([A]+ [j]+ [i]+ P_left) are sum_f R[f] q[f] with q[f] = sum_g G_j[f, g] i[g] ZT[f, g].

    Each G_k costs one forward real FFT and one complex FFT of a d x d matrix; they are
    kept in a cache of at most :data:`~fastdcyk.hrr.buffers.G_CACHE_BYTES` (at least two).
    """

    def __init__(self, grammar: Grammar, words: tuple[str, ...], cb: Codebook, opt: DCYKOptions):
        super().__init__(grammar, words, cb, opt)
        d = cb.d
        h = d // 2 + 1
        self.zt = B.ZT.new(cb)
        self.pr = B.PR.new(cb)
        self.w = B.W.get(cb)
        self._q = np.empty(h, np.complex128)
        self._full, self._g = kept_spectra(cb)
        self._slots = g_cache_slots(d, cb.dtype, len(words))

    def full(self, kind: str, sym: Any) -> np.ndarray:
        """fft of a symbol's vector, all d frequencies, in the codebook's complex dtype."""
        key = (kind, sym)
        f = self._full.get(key)
        if f is None:
            v = self.cb.vector(kind, sym).astype(np.float64)
            f = np.fft.fft(v).astype(self.cb.cdtype)
            self._full[key] = f
        return f

    def gmat(self, k: int) -> np.ndarray:
        """G_k = rows f <= d/2 of (Phi C_k Phi)~, from the cache or computed."""
        g = self._g.get(k)
        if g is not None:
            self._g.move_to_end(k)
            return g
        cb, d = self.cb, self.d
        while len(self._g) >= self._slots:
            self._g.popitem(last=False)
        # (Phi C_k Phi)[r, c] = v_k[(perm[r] - inv[c]) mod d]
        v = cb.vector("index", k)
        K.circulant_times_diag(v, np.ones(d, cb.dtype), cb.perm, cb.permutation_index(-1), self.w)
        g = cb.engine.rfft(self.w, 0)
        cb.engine.cfft(g, 1, forward=False)
        self._g[k] = g
        return g

    def _trace(self, spectra: np.ndarray, q: np.ndarray) -> np.ndarray:
        """(1/d) sum over all d frequencies of R[f] q[f], for every row R of ``spectra``."""
        return (spectra @ (self._weights * q)).real / self.d

    def _q_lift(self, j: int, i: int) -> np.ndarray:
        """q of tr(C Phi C_j Phi C_i Phi P_left): the unary detection and the decoder."""
        return K.row_dots(self.gmat(j), self.zt, self.full("index", i), self._q)

    def _q_binary(self, i: int, j: int) -> np.ndarray:
        """q of tr([j]- [i]+ P_left C P_right): the binary detection."""
        dg = np.conj(self.full("index", j)) * self.full("index", i)
        return K.row_dots(self.zt, self.pr, dg, self._q)

    def update(self, i: int, j: int, gates: np.ndarray, rows: np.ndarray) -> None:
        """sum_A g_A [i]- [j]- [A]- into P_left and sum_A g_A [A']+ [i]+ [j]+ into P_right.

        Both are one operator: C_S^T with S^ = sum_A g_A A^ (and A'^ for P_right).
        """
        cdt = self.cb.cdtype
        self.add_left(self.zt, gates @ self.t.spectra[rows].astype(np.complex128), i, j)
        right = (gates @ self.t.right_spectra[rows].astype(np.complex128)).astype(cdt)
        K.outer_madd(self.pr, right, self.gmat(i), self.full("index", j), False)

    def add_left(self, z: np.ndarray, spectrum: np.ndarray, i: int, j: int) -> None:
        """z += sum_X s_X [i]- [j]- [X]- for ``spectrum`` = sum_X s_X X^: a sum of symbols
        written into cell (i, j) of a table kept as P_left is (ZT, or the clean-up parser's
        residual table), in the codebook's complex dtype."""
        left = np.conj(spectrum).astype(self.cb.cdtype, copy=False)
        K.outer_madd(z, left, self.gmat(j), np.conj(self.full("index", i)), True)

    def initialise(self) -> None:
        """P_left = sum_i [i-1]- [i]- [a_i]- (P_right stays 0)."""
        for i, word in enumerate(self.words, start=1):
            self.add_left(self.zt, self.terminal_spectrum(word), i - 1, i)

    def terminal_spectrum(self, word: str) -> np.ndarray:
        """A word's terminal spectrum; a soft word's mixture of its terminals' spectra."""
        if not isinstance(word, SoftWord):
            return self.cb.spectrum("terminal", word)
        mixed = sum(
            p * self.cb.spectrum("terminal", a).astype(np.complex128) for a, p in word.weights
        )
        return np.asarray(mixed).astype(self.cb.cdtype)

    def read(self, i: int, j: int, step: Step) -> None:
        self._qv = self._q_lift(j, i) if step == S.UNARY else self._q_binary(i, j)

    def detect(self, i: int, j: int, step: Step, ks: slice) -> Detections:
        t = self.t
        spectra = t.unary_spectra if step == S.UNARY else t.binary_spectra
        tvals = self._trace(spectra[ks], self._qv)
        gates = sigmoid(tvals, self.opt.beta)
        return Detections(tvals[None], gates[None], gates[None], gates)

    def write(self, i: int, j: int, step: Step, ks: slice, det: Detections, keep: Any) -> None:
        keep = keep[0]
        self.update(i, j, det.values[keep], self.rows(step)[ks][keep])

    def statistics(self) -> Statistics:
        """The trace decoder's statistic of every triple: tr([A]+ [j]+ [i]+ P_left) / d."""
        n, t = len(self.words), self.t
        out = np.zeros((n, n + 1, len(t.nonterminals)))
        for j in range(1, n + 1):
            for i in range(j):
                out[i, j] = self._trace(t.spectra, self._q_lift(j, i))
        return Statistics(out, t.nonterminals)

    def _dense_left(self) -> np.ndarray:
        """P_left as a new d x d array; its spectrum is released, and the G cache trimmed to
        what the codebook keeps for its next parse."""
        cb, d = self.cb, self.d
        trim_kept(cb, self._slots)  # what the next parse with this codebook reuses
        # rfft(Z, axis=1)^T = fft(conj(ZT), axis=1); Z^T = irfft of it along axis 0;
        # P_left^T = Z^T Phi.
        zt, self.zt = self.zt, None
        np.conjugate(zt, out=zt)
        cb.engine.cfft(zt, 1, forward=True)
        cb.engine.irfft(zt, d, 0, out=self.w)
        del zt
        y = B.Y.get(cb)
        K.gather_cols(self.w, cb.permutation_index(-1), y)
        p_left = B.P_LEFT.new(cb, zero=False)
        p_left[...] = y.T
        return p_left

    def dense(self) -> tuple[np.ndarray, np.ndarray]:
        """P_left and P_right as new d x d arrays; the spectra and G cache are released."""
        cb, d = self.cb, self.d
        p_left = self._dense_left()
        # rfft(P', axis=0) = fft(PR, axis=1); P_right = P' Phi.
        pr, self.pr = self.pr, None
        cb.engine.cfft(pr, 1, forward=True)
        cb.engine.irfft(pr, d, 0, out=self.w)
        del pr
        p_right = K.gather_cols(self.w, cb.permutation_index(-1), B.P_RIGHT.new(cb, zero=False))
        return p_left, p_right


#: Per codebook, what the trace-gate parsers compute from its index vectors and permutation
#: alone: the full spectra of its vectors and the G_k matrices (those of the last parse,
#: within :data:`~fastdcyk.hrr.buffers.G_KEEP_BYTES`), kept for its next parse.
_KEPT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def kept_spectra(cb: Codebook) -> tuple[dict, OrderedDict]:
    """The codebook's kept full spectra and G_k matrices (the caller holds its lock)."""
    kept = _KEPT.get(cb)
    if kept is None:
        kept = ({}, OrderedDict())
        _KEPT[cb] = kept
    return kept


def trim_kept(cb: Codebook, slots: int) -> None:
    """Drop the G_k matrices of ``cb`` beyond what is kept between parses
    (:func:`~fastdcyk.hrr.buffers.g_kept_slots` of a parse's ``slots``), oldest first."""
    g = kept_spectra(cb)[1]
    keep = g_kept_slots(cb.d, cb.dtype, slots)
    while len(g) > keep:
        g.popitem(last=False)


def release_kept(cb: Codebook | None = None) -> None:
    """Drop what :func:`kept_spectra` keeps for ``cb`` (for every codebook when None)."""
    if cb is None:
        _KEPT.clear()
    else:
        _KEPT.pop(cb, None)


#: The parser of each gate (the clean-up gate's registers itself from
#: :mod:`fastdcyk.engine.numpy_cleanup`, which :mod:`fastdcyk.engine` imports).
PARSERS: dict[str, type] = {"entrywise": EntrywiseParser, "trace": TraceParser}


def row_block(d: int, k: int) -> int:
    """Rows per block for products with k rule rows: about 2 MiB of temporaries."""
    return max(8, min(d, (1 << 21) // (16 * max(d // 2 + 1, k))))


def _finite(value: np.ndarray, where: str) -> None:
    if not np.all(np.isfinite(value)):
        raise S.non_finite(where)


def parse_numpy(
    grammar: Grammar,
    ws: tuple[str, ...],
    cb: Codebook,
    opt: DCYKOptions,
    *,
    decode: bool,
    record: bool,
    on_progress: Any = None,
) -> DCYKResult:
    """The numpy engine's parse of checked words, options and codebook
    (:func:`fastdcyk.engine.plan.prepare`); ``on_progress`` is called with the number of
    detections made, after each group of them."""
    with cb.lock:  # the parse uses the codebook's work buffers throughout
        spectral = opt.gate in SCALAR_GATES
        parser = PARSERS["weighted" if opt.weights == "table" else opt.gate](grammar, ws, cb, opt)
        try:
            return _parse(parser, grammar, ws, cb, opt, decode, record, on_progress)
        finally:  # also after an error: the index matrices kept stay within their budget
            if spectral:
                trim_kept(cb, parser._slots)


def _parse(
    parser: Any,
    grammar: Grammar,
    ws: tuple[str, ...],
    cb: Codebook,
    opt: DCYKOptions,
    decode: bool,
    record: bool,
    on_progress: Any,
) -> DCYKResult:
    """:func:`parse_numpy`'s work, the codebook's lock held."""
    spectral = opt.gate in SCALAR_GATES
    n = len(ws)
    ledger = S.Ledger(_OPS, parser.t.nonterminals, [n], opt.prune, record=record)
    timings: dict[str, float] = {}
    S.run(parser, n, opt.order, ledger, on_progress=on_progress, timings=timings)
    t2 = time.perf_counter()
    stats = chart = None
    if decode and spectral and opt.decoder == "trace":
        stats = parser.statistics()
    elif decode and not spectral:
        stats = statistics_from_spectrum(parser.fl, grammar, n, cb, decoder=opt.decoder)
    t3 = time.perf_counter()
    p_left, p_right = parser.dense()
    t4 = time.perf_counter()
    if decode and stats is None:
        stats = decode_statistics(p_left, grammar, n, cb, decoder=opt.decoder)
    if decode:
        chart = chart_from_statistics(stats, n, beta=opt.beta, threshold=opt.threshold)
    timings["decode"] = time.perf_counter() - t4 + t3 - t2
    _finite(p_left, "P_left after the parse")
    _finite(p_right, "P_right after the parse")
    logs = ledger.log_lists()
    return DCYKResult(
        words=ws,
        grammar=grammar,
        codebook=cb,
        options=opt,
        p_left=p_left,
        p_right=p_right,
        statistics=stats,
        chart=chart,
        counts=ledger.count_dicts()[0],
        log=None if logs is None else logs[0],
        timings=timings,
        table_scores=parser.table_scores(),
    )

"""The torch backend's clean-up parser (docs/method.md, sections 6 and 7): the clean-up
detection and the least-squares read-back, the systems of a batch solved together
(differentiable); the numpy engine's :class:`~fastdcyk.engine.numpy_cleanup.CleanupParser`
in PyTorch."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from fastdcyk.engine import schedule as S
from fastdcyk.engine.readback import RIDGE
from fastdcyk.engine.rules import rules_of
from fastdcyk.engine.schedule import Detections, Step
from fastdcyk.engine.torch_trace import TraceParser
from fastdcyk.options import LEAST_SQUARES

__all__ = ["SOFT_LEVEL", "CleanupParser", "ridge_solve"]

#: Cancelling with soft terminals: the weight above which a part of a word's mixture is solved
#: for and subtracted with the word (an encoder's softmax gives every terminal some weight;
#: a part below it leaks less into a read than the reads' own errors at the usual d).
SOFT_LEVEL = 1e-3


class CleanupParser(TraceParser):
    """The clean-up gate (docs/method.md, section 6), batched and differentiable: the trace
    parser's ``zt`` for P_left, no P_right; every completed cell read once into clean scores
    c = sigma(a), and a detection t_A = the grammar's rules over the children's scores
    (weighted by the per-rule weights when given), as in
    :class:`fastdcyk.engine.numpy_cleanup.CleanupParser`.

    The read-back (docs/method.md, section 7): with ``"lstsq"`` only the candidates are
    written (t_A above the candidate level) and a cell's amplitudes a solve the ridge
    system of their Gram matrix (:mod:`fastdcyk.engine.readback`), batched over sentences
    whose candidate sets differ (padded with identity rows); the solve is part of the
    autograd graph, and the amplitudes are the decoder statistics. With ``"cancel"`` the
    same reads are made from a second table ``zr``, from which every read is subtracted (the
    words first, then each cell's candidates with their amplitudes as read), as
    :class:`fastdcyk.engine.numpy_cleanup.CleanupParser` does; under autograd its updates
    are kept for the backward pass as the accumulator's are. With
    ``"matched"`` a is the trace decoder's readout of every nonterminal.
    """

    def __init__(self, *args: Any, g_cache: dict | None = None, **kwargs: Any) -> None:
        super().__init__(*args, g_cache=g_cache, **kwargs)
        self.pr = None  # never read nor written
        st, dev = self.st, self.dev
        self.scores: dict[tuple[int, int], torch.Tensor] = {}
        tspec = torch.fft.rfft(self.vec.terminal)  # (T, h)
        self.terminal_w = tspec * self.w.to(self.cdtype) / self.d
        ix = lambda a: torch.as_tensor(a, device=dev)  # noqa: E731
        self._u_row, self._u_term = ix(st.unary_rule_row), ix(st.unary_rule_terminal)
        self._b_row, self._b_left = ix(st.binary_rule_row), ix(st.binary_rule_left)
        self._b_right = ix(st.binary_rule_right)
        self.lstsq = self.opt.readback in LEAST_SQUARES
        self.cancel = self.opt.readback == "cancel"
        self.zr: torch.Tensor | None = None  # the residual table (cancelling)
        self._word_clean: dict[int, torch.Tensor] = {}
        if self.lstsq:
            nn, nt = len(st.nonterminals), len(st.terminals)
            # the regressors of a read: nonterminals, then terminals (unary cells), whose
            # amplitudes land in a scratch column past them when padding
            self._reg_vectors = torch.cat((self.vec.nonterminal, self.vec.terminal))
            self._reg_spectra = torch.cat((self.spectra_w, self.terminal_w))
            # what a read amplitude of each regressor stands for in the table (cancelling)
            self._reg_written = torch.cat((self.spectra, tspec.to(self.cdtype)))
            self._lexicon = torch.zeros(nt, dtype=torch.bool, device=dev)
            self._lexicon[self._u_term] = True
            self._nn, self._nt = nn, nt
            self.stats: dict[tuple[int, int], torch.Tensor] = {}
            self._cands: dict[tuple[int, int], torch.Tensor] = {}
            self._terms = torch.zeros((self.B, nt), dtype=torch.bool, device=dev)
            # each read cell's clean scores less sigma(0) (0 but for its candidates) and the
            # candidates of any sentence, for the rule layer over the candidates' rules
            self._base = float(torch.sigmoid(torch.tensor(-0.5 * self.opt.beta, dtype=self.rdtype)))
            self._delta: dict[tuple[int, int], tuple[torch.Tensor, np.ndarray]] = {}
            bw = self._bw
            ones = torch.ones(len(st.binary_rule_row), dtype=self.rdtype, device=dev)
            weights = ones if bw is None else bw.to(self.rdtype)
            zero = torch.zeros(len(st.binary), dtype=self.rdtype, device=dev)
            self._rule_weight_sums = zero.index_add(0, self._b_row, weights)

    def _weights(self) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        return self._uw, self._bw

    def _readout(self, i: int, j: int, spectra_w: torch.Tensor) -> torch.Tensor:
        """tr([X]+ [j]+ [i]+ P_left) / d for every row X of ``spectra_w``, (B, rows)."""
        q = self._rowdot(self.zt, self._outer(j, i))
        return (q @ spectra_w.T).real

    def initialise(self) -> None:
        """The words into P_left (:meth:`TraceParser.initialise`); when cancelling, the
        residual table made, and every word read from it and subtracted before the first
        cell (the terminals read, and those written for it: a soft word's mixture)."""
        super().initialise()
        if not self.cancel:
            return
        self.zr = self.zt.clone()
        if self.pre is not None:  # nothing was written: the unary step takes the scores
            return
        nt, dev = self._nt, self.dev
        for k in range(1, self.n + 1):
            q = self._rowdot(self.zr, self._outer(k, k - 1))
            clean = self.sigmoid((q @ self.terminal_w.T).real)
            self._word_clean[k] = clean
            if self.soft is None:
                written = torch.zeros((self.B, nt), dtype=torch.bool, device=dev)
                written[torch.arange(self.B, device=dev), self.words[:, k - 1]] = True
            else:  # a mixture's parts that leak more than the reads' own noise
                written = self.soft[:, k - 1] > SOFT_LEVEL
            terms = ((clean > self.opt.candidate_level) | written) & self._lexicon
            terms &= self.active(k)[:, None]
            nonterminals = torch.zeros((self.B, self._nn), dtype=torch.bool, device=dev)
            self._subtract(k - 1, k, self._solve(torch.cat((nonterminals, terms), 1), q))

    def _subtract(self, i: int, j: int, a: torch.Tensor) -> None:
        """Take sum_X a_X [i]- [j]- [X]- from the residual table (``a`` (B, N + T): the
        amplitudes of nonterminals, then terminals; only the columns some sentence read)."""
        cols = (a != 0).any(0).nonzero().flatten()
        if not len(cols):
            return
        left = torch.conj(a[:, cols].to(self.cdtype) @ self._reg_written[cols])
        self._madd("zr", -left, self._conj(self._outer(j, i)))

    def read(self, i: int, j: int, step: Step) -> None:
        uw, bw = self._weights()
        if step == S.UNARY and self.pre is not None:  # the unary step's t_A given
            self._t = self.pre[:, i].to(self.rdtype)
            return
        if step == S.UNARY:
            if self.cancel:  # read before the first cell
                clean = self._word_clean[j]
            else:
                clean = self.sigmoid(self._readout(i, j, self.terminal_w))
            if self.lstsq:  # the terminals read in the cell (by any of its reads)
                read = (clean > self.opt.candidate_level) & self._lexicon
                self._terms |= read & self.active(j)[:, None]
            c = clean[:, self._u_term]
            if uw is not None:
                c = c * uw.to(self.rdtype)
            zero = torch.zeros((self.B, len(self.st.unary)), dtype=self.rdtype, device=self.dev)
            self._t = zero.index_add(1, self._u_row, c)
            return
        if self.lstsq:
            self._t = self._candidate_rules(i, j, bw)
            return
        t = torch.zeros((self.B, len(self.st.binary)), dtype=self.rdtype, device=self.dev)
        for k in range(i + 1, j):
            pairs = self.scores[(i, k)][:, self._b_left] * self.scores[(k, j)][:, self._b_right]
            if bw is not None:
                pairs = pairs * bw.to(self.rdtype)
            t = t.index_add(1, self._b_row, pairs)
        self._t = t

    def _candidate_rules(self, i: int, j: int, bw: torch.Tensor | None) -> torch.Tensor:
        """The rule layer over the candidates' rules
        (:func:`fastdcyk.engine.rules.candidate_rule_layer`), batched: a non-candidate
        scores sigma(0) exactly and carries no gradient, so the rules between two of them
        add the same constant; only the rules with a candidate child (of any sentence of
        the batch) are gathered. Equal, values and gradients, to the sum over every rule."""
        st, base = self.st, self._base
        t = (self._rule_weight_sums * ((j - i - 1) * base * base)).expand(self.B, -1)
        dev = self.dev
        for k in range(i + 1, j):
            left, left_any = self._delta[(i, k)]
            right, right_any = self._delta[(k, j)]
            for grouped, anyone, own in (
                (st.rules_by_left, left_any, True),
                (st.rules_by_right, right_any, False),
            ):
                rules = rules_of(grouped, np.flatnonzero(anyone))
                if not len(rules):
                    continue
                r = torch.as_tensor(rules, device=dev)
                c = right[:, self._b_right[r]]
                vals = left[:, self._b_left[r]] * (base + c) if own else base * c
                if bw is not None:
                    vals = vals * bw.to(self.rdtype)[r]
                t = t.index_add(1, self._b_row[r], vals)
        return t

    def detect(self, i: int, j: int, step: Step, ks: slice) -> Detections:
        t = self._t[:, ks]
        # given preterminal scores are the unary step's gates themselves: a second sigmoid
        # would flatten their gradient wherever an encoder is confident
        gates = t if step == S.UNARY and self.pre is not None else self.sigmoid(t)
        if not self.lstsq:
            return Detections(t, gates, gates, gates)
        level, prune = self.opt.candidate_level, self.opt.prune
        cand = (t > level) & (gates > prune) & self.active(j)[:, None]
        rows = (self.unary_rows if step == S.UNARY else self.binary_rows)[ks]
        mask = self._cands.get((i, j))
        if mask is None:
            mask = torch.zeros((self.B, self._nn), dtype=torch.bool, device=self.dev)
        self._cands[(i, j)] = mask.index_copy(1, rows, mask[:, rows] | cand)
        return Detections(t, gates, gates * cand, gates)  # only the candidates are written

    def write(self, i: int, j: int, step: Step, ks: slice, det: Detections, keep: Any) -> None:
        rows = (self.unary_rows if step == S.UNARY else self.binary_rows)[ks]
        values = det.values
        kept = keep.any(0)
        if not bool(kept.all()):  # only the nonterminals some sentence writes
            cols = kept.nonzero().flatten()
            rows, values, keep = rows[cols], values[:, cols], keep[:, cols]
        g = (values * keep).to(self.cdtype)
        left, m = torch.conj(g @ self.spectra[rows]), self._conj(self._outer(j, i))
        self._madd("zt", left, m)
        if self.zr is not None:  # the residual table holds what is written, until it is read
            self._madd("zr", left, m)

    def end(self, i: int, j: int, step: Step) -> None:
        q = self._rowdot(self.zt if self.zr is None else self.zr, self._outer(j, i))
        if not self.lstsq:
            self.scores[(i, j)] = self.sigmoid((q @ self.spectra_w.T).real)
            return
        cands = self._cands.pop((i, j), None)
        if cands is None:
            cands = torch.zeros((self.B, self._nn), dtype=torch.bool, device=self.dev)
        if step == S.UNARY:
            cands = torch.cat((cands, self._terms), dim=1)
            self._terms = torch.zeros_like(self._terms)
        full = self._solve(cands, q)
        if self.zr is not None:  # what was read leaves the residual table
            self._subtract(i, j, full)
        a = full[:, : self._nn]
        self.stats[(i, j)] = a
        self.scores[(i, j)] = scores = self.sigmoid(a)
        anyone = cands[:, : self._nn].any(0).cpu().numpy()
        self._delta[(i, j)] = (scores - self._base, anyone)

    def _solve(self, cands: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        """The least-squares amplitudes of every regressor, (B, N + T): the candidates'
        (``cands``, (B, N or N + T), the terminals read in a unary cell after the
        nonterminals) solved for together, the others 0."""
        width, dev = cands.shape[1], self.dev
        full_width = self._nn + self._nt
        counts = cands.sum(1)
        k = int(counts.max()) if self.B else 0
        if k == 0:
            return torch.zeros((self.B, full_width), dtype=self.rdtype, device=dev)
        b, r = cands.nonzero(as_tuple=True)  # ordered by sentence, then row
        offsets = torch.cumsum(counts, 0) - counts
        pos = torch.arange(len(b), device=dev) - offsets[b]
        idx = torch.full((self.B, k), width, dtype=torch.int64, device=dev)  # padding: scratch
        idx[b, pos] = r
        valid = idx < width
        safe = torch.where(valid, idx, 0)
        vecs = self._reg_vectors[safe] * valid[..., None]  # (B, k, d)
        gram = vecs @ vecs.transpose(1, 2)
        spec = self._reg_spectra[safe]  # (B, k, h)
        x = (spec @ q[:, :, None]).real.squeeze(-1) * valid
        eye = torch.eye(k, dtype=self.rdtype, device=dev)
        diag = torch.diagonal(gram, dim1=1, dim2=2)
        scale = diag.sum(1) / counts.clamp(min=1)  # the mean diagonal: 1 where not positive
        scale = torch.where(scale > 0, scale, torch.ones_like(scale))
        ridge = RIDGE * scale[:, None, None] * eye + (~valid)[:, :, None] * eye
        a = ridge_solve(gram + ridge, x, RIDGE * scale)
        full = torch.zeros((self.B, full_width + 1), dtype=self.rdtype, device=dev)
        return full.scatter(1, torch.where(valid, idx, full_width), a * valid)[:, :full_width]

    def statistics(self) -> torch.Tensor:
        if not self.lstsq:
            return super().statistics()
        nn = len(self.st.nonterminals)
        out = torch.zeros((self.B, self.n, self.n + 1, nn), dtype=self.rdtype, device=self.dev)
        for (i, j), a in self.stats.items():
            out[:, i, j] = a
        return out

    def dense(self) -> tuple[torch.Tensor, torch.Tensor]:
        self.zr = None  # the residual table is not part of the result
        d, inv = self.d, self.idx(-1)
        z = torch.fft.fft(torch.conj(self.zt), dim=-1).transpose(-1, -2)
        z = torch.fft.irfft(z, n=d, dim=-1)
        return z[:, inv], torch.zeros_like(z)


def ridge_solve(m: torch.Tensor, x: torch.Tensor, floor: torch.Tensor) -> torch.Tensor:
    """m a = x for a batch of symmetric positive definite m (B, k, k) and x (B, k): by
    Cholesky; a system whose factorisation rounding defeats goes through its eigenvalues,
    floored at its own ``floor`` (B,), as :func:`fastdcyk.engine.readback.solve` does."""
    chol, info = torch.linalg.cholesky_ex(m)
    bad = info != 0
    if not bool(bad.any()):
        return torch.cholesky_solve(x[..., None], chol).squeeze(-1)
    good, bad = (~bad).nonzero().flatten(), bad.nonzero().flatten()
    out = torch.zeros_like(x)
    if len(good):
        solved = torch.cholesky_solve(x[good][..., None], chol[good]).squeeze(-1)
        out = out.index_copy(0, good, solved)
    w, u = torch.linalg.eigh(m[bad])
    w = torch.maximum(w, floor[bad][:, None])
    solved = (u @ ((u.transpose(1, 2) @ x[bad][..., None]) / w[..., None])).squeeze(-1)
    return out.index_copy(0, bad, solved)


# -- the entrywise gate: accumulators as row spectra -----------------------------------------

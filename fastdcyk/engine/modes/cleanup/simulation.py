"""The capacity model's simulation of the clean-up gate (:mod:`fastdcyk.capacity`; the
shared part :mod:`fastdcyk.engine.backends.simulation.parser`), without any d x d work.

The clean-up variant (the default) reads every completed cell once into clean scores and
gates each detection with the grammar's rules over its children's scores: its readouts
are the matched filter's (the exact part from the spectra, the span part as noise) or,
with the least-squares read-back, the solve of the candidates' Gram system with the exact
readouts plus noise of the covariance the candidates share. With the cancelling read-back
(``readback="cancel"``) every item, once read, leaks into the reads after it with the error
of its read instead of its amplitude.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.linalg

from fastdcyk.cfg.grammar import Grammar
from fastdcyk.engine.backends.simulation.parser import Simulation
from fastdcyk.engine.core import schedule
from fastdcyk.engine.core.arrays import NUMPY, sigmoid
from fastdcyk.engine.core.readback import (
    bounded_read,
    bounded_solve,
    candidates,
    read_cell,
    ridge_matrix,
)
from fastdcyk.engine.core.rules import lexical_layer, rule_layer, rule_structure
from fastdcyk.engine.core.schedule import Detections, Step
from fastdcyk.engine.core.splits import CandidateChart
from fastdcyk.hrr.codebook import Codebook
from fastdcyk.options import DCYKOptions

__all__ = ["CleanupSimulation"]


#: The clean-up model leaves out of the exact readouts the terms whose gate is below this
#: (their share of any readout is below it too: an overlap is at most 1); the noise model
#: counts them.
_EXACT_MIN = 1e-6


class CleanupSimulation(Simulation):
    """The clean-up gate (docs/method.md, section 6): every completed cell read once into
    clean scores sigma(a); a detection is the grammar's rules over the children's scores,
    gated; P_left only.

    With the matched read-back a_X is the trace decoder's readout (its exact part from the
    codebook's spectra, its span part the decoder's modelled noise). With the least-squares
    read-back (docs/method.md, section 7) only the candidates are written, and their
    amplitudes solve G_C a = x_C, with x_C the exact readouts plus the modelled noise,
    drawn with the covariance the readouts of the candidates share (their Gram matrix
    times the per-symbol variance): a = g + G_C^-1 e, as in the engine. With the cancelling
    read-back (docs/method.md, section 7) the words are read first, each with the other
    words as its leakage, and every read is subtracted: in the noise model an item weighs
    its read's error squared, (g - a)^2 (a word (1 - a)^2), from the moment it is read.

    A cell's exact readouts are sums over the terms written into it of their overlaps with
    every symbol: one column of overlaps per symbol that is ever written (computed once per
    codebook), so a cell costs O(N x its terms), N the nonterminals, not a pass over every
    spectrum; the noise model keeps running sums of the squared gates.
    """

    rule_spectra = False  # the rules act on scores

    def __init__(self, grammar: Grammar, cb: Codebook, opt: DCYKOptions) -> None:
        super().__init__(grammar, cb, opt)
        self.lstsq, self.level = opt.readback != "matched", opt.candidate_level
        self.cancel = opt.readback == "cancel"

    @classmethod
    def own_memory(cls, grammar: Grammar, n: int, d: int, opt: DCYKOptions) -> int:
        """With the matched read-back a nonterminal x nonterminal matrix of overlaps, with
        the least-squares read-back the symbol vectors in float64."""
        nn = len(grammar.nonterminals)
        if opt.readback == "matched":
            return 8 * nn * nn
        return 8 * (nn + len(grammar.terminals)) * d

    def run(
        self,
        words: tuple[str, ...],
        rng: np.random.Generator,
        on_progress: Callable[[int], None] | None = None,
    ) -> dict:
        """The decoded chart of one sentence, simulated."""
        d, n, t = self.d, len(words), self.tables
        self.words, self.rng = words, rng
        nn = len(t.nonterminals)
        if not hasattr(self, "st"):
            st = self.st = rule_structure(self.grammar)
            self.term_rows = st.lexicon_rows
            lexicon = [st.terminals[k] for k in st.lexicon]
            self.term_spectra = self.cb.spectra("terminal", lexicon).astype(np.complex128)
            self.term_index = {t: r for r, t in enumerate(lexicon)}
            if self.lstsq:  # the symbol vectors, for the read-back's Gram matrices
                self.vec64 = self.tables.vectors.astype(np.float64)
                self.term_vec64 = self.cb.vectors("terminal", lexicon).astype(np.float64)
            self.cols: dict[tuple[str, int], np.ndarray] = {}
            self.gram: np.ndarray | None = None
        self.gates = np.zeros((n + 1, n + 1, nn))
        self.sq_total = 0.0  # the running sum of gates ** 2
        self.term = np.zeros((n + 1, n + 1))
        self.exact = np.zeros((n + 1, n + 1, nn))
        self.scores = np.zeros((n + 1, n + 1, nn))
        self.stats = np.zeros((n + 1, n + 1, nn))
        self.terms: dict[tuple[int, int], list] = {}
        self.cands: dict[tuple[int, int], list] = {}
        self.term_read: dict[tuple[int, int], tuple[np.ndarray, float]] = {}
        self.base = float(sigmoid(0.0, self.beta))
        self.read_cells = CandidateChart(self.st, n, self.base)
        for i in range(1, n + 1):
            self.term[i - 1, i] = 1.0
        # cancelling: an item's weight in the noise model, its gate squared until it is
        # read, its read's error squared after
        self.leak = np.zeros((n + 1, n + 1, nn)) if self.cancel else None
        self.word_var = np.zeros(n + 1)
        self.term_total = float(n)  # the words' weights, summed (they stay once read)
        if self.cancel:  # the words are read (and subtracted) before any cell
            for k in range(1, n + 1):
                # word k's read sees the words after it and the errors of those before
                self.word_var[k] = (self.term_total - 1.0) / d**2
                error = self.rng.normal(0.0, np.sqrt(self.word_var[k]))
                self.term_total += error**2 - self.term[k - 1, k]
                self.term[k - 1, k] = error**2
        # near[a, b]: the variance a near match across span indices a != b adds
        shifted = self.shifted_indices(n)
        self.near = np.where(shifted[:, None] & shifted[None, :], 2.0 / d**2, 1.0 / d)
        np.fill_diagonal(self.near, 0.0)
        ledger = schedule.Ledger(NUMPY, t.nonterminals, [n], self.prune)
        schedule.run(self, n, self.order, ledger, on_progress=on_progress)
        return self.decode(n)

    def initialise(self) -> None:
        pass

    def begin(self, i: int, j: int, step: Step) -> None:
        pass

    def _column(self, kind: str, k: int) -> np.ndarray:
        """Overlaps tr-readout / d of every nonterminal (``kind`` "n") or terminal ("t")
        with the term of nonterminal or terminal row k: mean(table, conj(spectrum k))."""
        col = self.cols.get((kind, k))
        if col is None:
            src = self.left if kind[-1] == "n" else self.term_spectra
            table = self.left if kind[0] == "n" else self.term_spectra
            col = self.mean(table, np.conj(src[k]))
            self.cols[(kind, k)] = col
        return col

    def _variance(self, i: int, j: int, rows: Any = slice(None)) -> np.ndarray:
        """The variance of the span part of the readouts of nonterminals ``rows`` at cell
        (i, j). A term of the same symbol in a cell that shares one span slot with (i, j)
        ((i, j') or (i', j)) is a near match: it reads the overlap of the two other index
        vectors, N(0, 1/d) unless both are shifted (2/d^2, section 3); every other term adds
        1/d^2, its gate squared weighing each."""
        if self.leak is not None:
            near = self.near[j] @ self.leak[i][:, rows] + self.near[i] @ self.leak[:, j][:, rows]
            return near + self._other(i, j)
        near = self.near[j] @ (self.gates[i][:, rows] ** 2)
        near += self.near[i] @ (self.gates[:, j][:, rows] ** 2)
        return near + self._other(i, j)

    def _other(self, i: int, j: int) -> float:
        """The variance the terms of other cells add to any readout at (i, j), near matches
        aside: 1/d^2 times their squared gates (the words' weigh 1)."""
        own = self.gates[i, j] ** 2 if self.leak is None else self.leak[i, j]
        total = self.sq_total - float(own.sum()) + self.term_total
        return (total - self.term[i, j]) / self.d**2

    def _noise(self, i: int, j: int, size: int, var: Any) -> np.ndarray:
        return self.rng.normal(0.0, 1.0, size) * np.sqrt(var)

    def read(self, i: int, j: int, step: Step) -> None:
        st = self.st
        if step == schedule.UNARY:
            word = self.words[i]
            x = self._column("tt", self.term_index[word])  # the cell holds the word only
            # a word elsewhere shares no span slot with (i, j): no near match; cancelling,
            # the words were read before any cell
            var = self.word_var[j] if self.cancel else self._other(i, j)
            c = sigmoid(x + self._noise(i, j, len(x), var), self.beta)
            self.tvals = lexical_layer(st, c, self.term_rows)
            # until the cell's read-back (in the "width" order, after the width's reads)
            self.term_read[(i, j)] = (np.flatnonzero(c > self.level), var)
        elif self.lstsq:  # every non-candidate scores sigma(0): the candidates' rules only
            self.tvals = self.read_cells.layer(i, j)
        else:
            self.tvals = rule_layer(st, lambda a, b: self.scores[a, b], i, j)

    def detect(self, i: int, j: int, step: Step, ks: slice) -> Detections:
        t = self.tvals[ks]
        g = self.gate(t)
        if self.lstsq:  # only the candidates are written
            cand = candidates(t, g, self.level, self.prune)
            self.cands.setdefault((i, j), []).append(self.rows(step)[ks][cand])
            g = np.where(cand, g, 0.0)
        return Detections(t[None], g[None], g[None], g)

    def write(self, i: int, j: int, step: Step, ks: slice, det: Detections, keep: Any) -> None:
        rows, g = self.rows(step)[ks], det.values
        on = g > 0.0  # gate() zeroes the pruned ones
        rows, g = rows[on], g[on]
        self.gates[i, j, rows] = g
        self.sq_total += float(g @ g)
        if self.leak is not None:
            self.leak[i, j, rows] = g * g
        # the exact part of a term of gate below EXACT_MIN is below EXACT_MIN in every readout
        big = g >= _EXACT_MIN
        self.terms.setdefault((i, j), []).append((rows[big], g[big]))

    def _overlaps(self, rows: np.ndarray) -> np.ndarray:
        """The overlaps of the nonterminals ``rows`` with every nonterminal,
        (len(rows), N): rows of a matrix filled as symbols are first written (the missing
        ones with one matrix product)."""
        if self.gram is None:
            nn = len(self.tables.nonterminals)
            self.gram, self.known = np.empty((nn, nn)), np.zeros(nn, bool)
        missing = np.unique(rows[~self.known[rows]])
        if len(missing):
            block = (self.parseval * np.conj(self.left[missing])) @ self.left.T
            self.gram[missing] = block.real / self.d
            self.known[missing] = True
        return self.gram[rows]

    def end(self, i: int, j: int, step: Step) -> None:
        if self.lstsq:
            self._end_lstsq(i, j, step)
            return
        x = np.zeros(len(self.tables.nonterminals))
        if j == i + 1:
            x += self._column("nt", self.term_index[self.words[i]])
        for rows, g in self.terms.get((i, j), ()):
            if len(rows) > len(
                self.parseval
            ):  # many terms (a small d): through their summed spectrum
                x += self.mean(self.left, g @ np.conj(self.left[rows]))
            elif len(rows):
                x += g @ self._overlaps(rows)
        self.exact[i, j] = x
        self.scores[i, j] = sigmoid(x + self._noise(i, j, len(x), self._variance(i, j)), self.beta)

    def _end_lstsq(self, i: int, j: int, step: Step) -> None:
        """The least-squares read-back of cell (i, j) over its candidates (and, in a unary
        cell, the terminals read there), the written items' overlaps exact: inner products
        of the symbol vectors (equal, by Parseval, to the trace readouts' symbol part)."""
        rows = np.concatenate(self.cands.pop((i, j), [np.zeros(0, np.intp)]))
        k = len(rows)
        var = self._variance(i, j, rows)
        vecs = self.vec64[rows]
        term_read, unary_var = self.term_read.pop((i, j), (np.zeros(0, np.intp), 0.0))
        if step == schedule.UNARY and len(term_read):
            vecs = np.concatenate([vecs, self.term_vec64[term_read]])
            var = np.concatenate([var, np.full(len(term_read), unary_var)])
        if not len(vecs):
            self.scores[i, j] = sigmoid(self.stats[i, j], self.beta)
            self.read_cells.add(i, j, rows, np.zeros(0))
            return
        g = vecs @ vecs.T
        written = g[:, :k] @ self.gates[i, j, rows]  # the cell's items: its candidates ...
        if step == schedule.UNARY:  # ... and the word (cancelling: what its read left)
            word = self.term_vec64[self.term_index[self.words[i]]]
            written += (np.sqrt(self.term[i, j]) if self.cancel else 1.0) * (vecs @ word)
        z = self.rng.normal(0.0, 1.0, len(written))
        a = _solve_with_noise(g, written, np.sqrt(var), z, self.d)[:k]
        self.stats[i, j, rows] = a
        if self.leak is not None:  # read: the items leak with their reads' errors
            error2 = (self.gates[i, j, rows] - a) ** 2
            self.sq_total += float(error2.sum() - self.leak[i, j, rows].sum())
            self.leak[i, j, rows] = error2
        self.scores[i, j] = sigmoid(self.stats[i, j], self.beta)
        self.read_cells.add(i, j, rows, sigmoid(a, self.beta) - self.base)

    def decode(self, n: int) -> dict:
        """The final chart: the read-back's amplitudes (least squares), or the trace
        decoder over the finished simulated chart, with its modelled noise (matched)."""
        names = self.tables.nonterminals
        chart = {}
        for i in range(n):
            for j in range(i + 1, n + 1):
                if self.lstsq:
                    stats = self.stats[i, j]
                else:
                    var = self._variance(i, j)
                    stats = self.exact[i, j] + self._noise(i, j, len(names), var)
                chart[(i, j)] = frozenset(names[k] for k in np.flatnonzero(stats > self.bound))
        return chart


def _solve_with_noise(g: np.ndarray, x: np.ndarray, scale: np.ndarray, z: np.ndarray, d: int):
    """:func:`~fastdcyk.engine.core.readback.read_cell` of ``x`` plus noise ``scale * (L z)``,
    with L L^T the regularised Gram matrix (standard normal draws z given the covariance of
    the readouts of vectors of Gram matrix g): one Cholesky factor serves both the noise
    and the ridge solve, or the bounded read where :func:`bounded_read` has it."""
    m = ridge_matrix(g)
    try:
        chol = np.linalg.cholesky(m)
    except np.linalg.LinAlgError:  # rounding: through the eigenvalues, as solve does
        w, u = np.linalg.eigh(g)
        e = scale * (u @ (np.sqrt(np.maximum(w, 0.0)) * (u.T @ z)))
        return read_cell(g, x + e, d)
    if bounded_read(len(x), d):
        return bounded_solve(g, x + scale * (chol @ z))
    return scipy.linalg.cho_solve((chol, True), x + scale * (chol @ z))

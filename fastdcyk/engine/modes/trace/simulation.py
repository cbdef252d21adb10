"""The capacity model's simulation of the trace gate (:mod:`fastdcyk.capacity`; the shared
part: :mod:`fastdcyk.engine.backends.simulation.parser`), without any d x d work.

A readout of the trace variant splits into two parts:

- pairs whose span indices cancel: what is left is a circulant made of symbol vectors only,
  and its trace is an exact function of the symbols' spectra (1 for a true match, the
  spectral mean of a product of random phases otherwise). The model computes this part
  *exactly*, with the codebook's own symbol spectra, in O(d) per (cell, split): it is the
  engine's arithmetic with the span algebra idealised;
- pairs whose span indices do not cancel: modelled as noise. Pairs whose symbols match a
  rule read a value fixed by their four span indices, shared by all such pairs of the same
  two cells, so drawn once per pair of cells: with shifted span indices (the trace preset)
  and zero-mean symbol vectors, -1/d times a sign for a pair that differs only in the outer
  span group and (Poisson(1) - 1)/d times a sign across a permutation (a trace of a product
  of shifts and permutations counts fixed points); with random span indices, N(0, 1/d) for
  one span mismatch. Other pairs add independent noise of variance 1/d^2.

The model runs symbolic CYK over these readouts: every gate sigma(readout), every update
written with its gate value into the simulated chart (so that errors cascade exactly as in
the engine, with the variant's order), then the trace decoder and its threshold. One
codebook draw per sample; the model (:func:`fastdcyk.capacity.predict`) averages over
samples and sentences.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from fastdcyk.cfg.grammar import Grammar
from fastdcyk.engine.backends.simulation.parser import Simulation
from fastdcyk.engine.core import schedule
from fastdcyk.engine.core.arrays import NUMPY
from fastdcyk.engine.core.schedule import Detections, Step
from fastdcyk.options import DCYKOptions

__all__ = ["TraceSimulation"]


class TraceSimulation(Simulation):
    """The trace gate's simulation (the module's notes)."""

    probe_lengths = (5, 10)

    @staticmethod
    def cost_terms(n: int) -> tuple[float, float]:
        """Its cells, and the span values it draws: (n + 1)^4 per cell."""
        cells = n * (n + 1) / 2
        return cells, cells * (n + 1) ** 4

    @classmethod
    def own_memory(cls, grammar: Grammar, n: int, d: int, opt: DCYKOptions) -> int:
        """The span values drawn per cell, (n + 1)^4 of them, and the rules' pairs gathered
        over (n + 1)^2 spans."""
        n1 = n + 1
        return 4 * 8 * n1**4 + 2 * 8 * n1 * n1 * len(grammar.binary_rules)

    def run(
        self,
        words: tuple[str, ...],
        rng: np.random.Generator,
        on_progress: Callable[[int], None] | None = None,
    ) -> dict:
        """The decoded chart of one sentence, simulated."""
        d, n, t = self.d, len(words), self.tables
        # indices beyond the Sidon set that fits in d are random: then model them all so
        self.shifted = bool(self.shifted_indices(n).all())
        self.words, self.rng = words, rng
        nn = len(t.nonterminals)
        h = d // 2 + 1
        self.gates = np.zeros((n + 1, n + 1, nn))  # gate weights written into the chart
        # sums of conj(spec) of P_left's terms, and of right spectra of P_right's, per cell
        self.left_sums = np.zeros((n + 1, n + 1, h), np.complex128)
        self.right_sums = np.zeros((n + 1, n + 1, h), np.complex128)
        self.term = np.zeros((n + 1, n + 1))  # terminal terms of P_left (weight 1)
        ledger = schedule.Ledger(NUMPY, t.nonterminals, [n], self.prune)
        schedule.run(self, n, self.order, ledger, on_progress=on_progress)
        return self.decode(n)

    def initialise(self) -> None:
        for i, a in enumerate(self.words, 1):
            self.left_sums[i - 1, i] = np.conj(self.cb.spectrum("terminal", a))
            self.term[i - 1, i] = 1.0

    def begin(self, i: int, j: int, step: Step) -> None:
        # the unary readout's pairs with other span indices: one mismatch (0 when shifted,
        # 1/d when random) only, left to the binary and decoder noise. The span noise of a
        # binary cell is drawn once: in the sequential order a detection reads the updates
        # of the cell written before it again (its exact part), its noise stays.
        if step == schedule.UNARY:
            self.noise = 0.0
        else:
            self.noise = self._noise_binary(self.gates, self.term, i, j, self.rng, self.shifted)

    def read(self, i: int, j: int, step: Step) -> None:
        if step == schedule.UNARY:
            self.q = self.left_sums[i, j]
        else:
            self.q = np.einsum(
                "kf,kf->f", self.left_sums[i, i + 1 : j], self.right_sums[i + 1 : j, j]
            )

    def detect(self, i: int, j: int, step: Step, ks: slice) -> Detections:
        spectra = self.unary_spectra if step == schedule.UNARY else self.binary_spectra
        x = self.mean(spectra[ks], self.q)
        if step == schedule.BINARY:
            x = x + self.noise[ks]
        g = self.gate(x)
        return Detections(x[None], g[None], g[None], g)

    def write(self, i: int, j: int, step: Step, ks: slice, det: Detections, keep: Any) -> None:
        """Write the gated updates (those pruned have gate 0) into the simulated chart."""
        rows, g = self.rows(step)[ks], det.values
        self.gates[i, j, rows] = g
        keep = g != 0.0
        rows, g = rows[keep], g[keep]
        if len(rows) * 4 < len(self.left):  # few updates: gather their spectra
            self.left_sums[i, j] += np.conj(g @ self.left[rows])
            self.right_sums[i, j] += g @ self.right[rows]
        elif len(rows):  # many (a large grammar's noisy detections): no gathered copy
            w = np.zeros(len(self.left))
            w[rows] = g
            self.left_sums[i, j] += np.conj(w @ self.left)
            self.right_sums[i, j] += w @ self.right

    def decode(self, n: int) -> dict:
        """The trace decoder over the simulated chart, with its modelled noise."""
        t, gates, rng = self.tables, self.gates, self.rng
        stats = np.zeros((n + 1, n + 1, len(t.nonterminals)))
        for i in range(n):
            for j in range(i + 1, n + 1):
                # tr([A]+ ...) / d: the real part of mean(conj(A) conj(lsum)) = mean(A lsum)
                stats[i, j] = self.mean(self.left, self.left_sums[i, j])
                stats[i, j] += self._noise_decoder(gates, self.term, i, j, rng, self.shifted)
        names = t.nonterminals
        return {
            (i, j): frozenset(names[k] for k in np.flatnonzero(stats[i, j] > self.bound))
            for i in range(n)
            for j in range(i + 1, n + 1)
        }

    # -- the modelled (span) part of each readout -----------------------------------------

    def _noise_binary(self, gates, term, i, j, rng, shifted: bool) -> np.ndarray:
        """The span part of the trace readouts of cell (i, j), drawn.

        A pair (P_left (i1, k1, B), P_right (k2, j2, C)) whose symbols match a rule of A
        but whose spans do not leaves a trace that depends on its four span indices only:
        every such pair of the same two cells, for every A of the cell, reads the same
        value, so they add coherently. With zero-mean symbol vectors (the symbol part is
        I - J/d) the value is, with k1 = k2, a circulant's mean diagonal less its constant
        part: N(0, 1/d) with random span indices, and -1/d times a sign with shifted ones
        (a shift has trace 0, its constant direction 1); with k1 != k2 a count of fixed
        points of a permutation over d less 1, Poisson(1) - 1, with a random sign (the
        constant part is removed, not just its sign randomised, when ``zero_mean`` is off
        the count itself). Pairs whose symbols match no rule of A read independent values
        of variance 1/d^2.
        """
        d, n1 = self.d, gates.shape[0]
        ra, rb, rc = self.rule_a, self.rule_b, self.rule_c
        shape = (n1, n1, n1, n1)  # (i1, k1, k2, j2)
        zm = 1.0 if self.cb.zero_mean else 0.0
        v = (rng.poisson(1.0, shape) - zm) * rng.choice((-1.0, 1.0), shape) / d
        k = np.arange(n1)
        if shifted:
            v[:, k, k, :] = -zm * rng.choice((-1.0, 1.0), (n1, n1, n1)) / d
        else:
            v[:, k, k, :] = rng.normal(0.0, 1.0 / math.sqrt(d), (n1, n1, n1))
        v[i, k, k, j] = 0.0  # the true matches: the exact part
        # sum over (i1, k1, k2, j2) of gates[i1, k1, B] v[i1, k1, k2, j2] gates[k2, j2, C], for
        # the pairs (B, C) of the rules only: one matrix product, then a column-wise dot
        # product per rule (the whole |N| x |N| matrix of pairs costs |N|^2, 16M entries
        # per cell on a grammar of 4,000 nonterminals, where it has 10,000 rules)
        g2 = gates.reshape(n1 * n1, -1)
        vg = v.reshape(n1 * n1, n1 * n1) @ g2
        coh = np.einsum("pr,pr->r", g2[:, rb], vg[:, rc])
        coherent = np.bincount(ra, coh, len(self.tables.binary))
        # every other pair adds g_L g_R times a value of variance 1/d^2 per rule of A: its
        # variance weighs g_L^2 g_R^2, and the pairs whose spans cancel are the exact part
        sq = gates * gates
        cell = sq.sum(axis=2)  # summed squared gates of each cell
        left = cell.sum() + term.sum()  # the words' terms weigh 1
        cancel = (cell[i, i + 1 : j] + term[i, i + 1 : j]) @ cell[i + 1 : j, j]
        other = max(left * cell.sum() - cancel, 0.0) * self.n_rules
        return coherent + rng.normal(0.0, 1.0, len(other)) * np.sqrt(other / d**2)

    def _noise_decoder(self, gates, term, i, j, rng, shifted: bool) -> np.ndarray:
        nn = gates.shape[2]
        # each term adds its gate times a value, so its variance weighs the gate squared;
        # the cell's own terms (the words' included) are the exact part
        sq = gates * gates
        total = sq.sum() - sq[i, j].sum() + term.sum() - term[i, j]
        same = sq.sum(axis=(0, 1)) - sq[i, j]  # the same symbol in another cell
        if shifted:
            var = 2.0 * same / self.d**2 + total / self.d**2
        else:
            var = same / self.d + total / self.d**2
        return rng.normal(0.0, 1.0, nn) * np.sqrt(var)

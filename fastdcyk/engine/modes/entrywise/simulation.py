"""The capacity model's simulation of the entrywise gate and entry decoder (the paper
variant; :mod:`fastdcyk.capacity`, the shared part
:mod:`fastdcyk.engine.backends.simulation.parser`), without any d x d work.

The paper variant (entrywise gate, entry decoder, Gaussian vectors) is modelled by the
trace model's exact part with per-entry noise: its readouts are single matrix entries, to
which every superposed pair adds a few times 1/d of variance (docs/method.md, section 3,
"Why the trace sees less noise"; the factor, measured on single readouts, is
``_KAPPA_*``), and its gate writes a diagonal mask; the model carries the mask's mean.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from fastdcyk.cfg.grammar import Grammar
from fastdcyk.engine.backends.simulation.parser import Simulation
from fastdcyk.engine.core import schedule
from fastdcyk.engine.core.arrays import NUMPY, sigmoid
from fastdcyk.engine.core.schedule import Detections, Step
from fastdcyk.options import DCYKOptions

__all__ = ["EntrywiseSimulation"]

#: Variance, times d, that one superposed term (of unit weight, w = ||P_A||_F^2 / d) adds to
#: one entry of a readout of the paper variant. Gaussian circulants are only nearly
#: orthogonal (C C^T = I + E), and each pair of factors that cancels leaves its E: a term
#: whose span indices differ from the readout's passes through a product of nearly
#: orthogonal matrices and adds about 1 (_KAPPA_TERM); a term at the readout's own span
#: (the word, and the unary junk of the cell's earlier updates) cancels its two index pairs
#: and adds about 3 (_KAPPA_SPAN); the word's own term, whose symbol cancels too, more on
#: the diagonal (_KAPPA_SELF). Measured on single readouts (dense products, docs/method.md,
#: section 5; G0, d = 256, 3-word sentences, codebook seeds 0..5, unary readouts, entries
#: off the diagonal): 0.99 (other spans), 3.03 (the cell's junk), 3.58 (the word at the
#: span); the word's own term 6.3 on the diagonal (3- and 6-word sentences). For one pair
#: of the binary readout 5.8 to 11 (d = 512, seeds 0 and 1), 8 taken.
_KAPPA_TERM, _KAPPA_SPAN, _KAPPA_SELF, _KAPPA_PAIR = 1.0, 3.0, 6.3, 8.0


class EntrywiseSimulation(Simulation):
    """The entrywise gate and entry decoder (the paper variant), as masks over the d entries.

    With the entrywise gate a binary update carries a diagonal P_A = diag(m), m in
    [0, 1]^d; a unary one carries sigma of the whole matrix M (the paper's Algorithm 2), whose
    off-diagonal entries are noise and switch on wherever that noise passes 0.5. In a
    pair's readout the left term's mask is averaged (Y P_B Y^T, Y nearly orthogonal, has
    diagonal ~ mean(m_B)) and the right term's multiplies entry by entry; the pair's
    symbols leave a circulant whose diagonal, the overlap computed exactly from the spectra
    as in the trace model, scales it. So entry k of a binary readout is
    sum over pairs of overlap * mean(m_L) * m_R[k], plus noise: every superposed pair adds
    kappa w_L w_R / d of variance to every entry, with w = ||P_A||_F^2 / d the term's
    weight (the unary junk included) and kappa the measured constant of the readout
    (``_KAPPA_*``), and pairs with one span mismatch (random span indices) add a constant
    diagonal, alike on every entry. A unary readout reads the terms at its own span (the
    word and the cell's earlier updates, junk included, whose span indices cancel) with a
    larger kappa than the terms elsewhere, so that the junk feeds back within the cell as
    measured. The entry decoder reads entry 0 of the masks in the cell, with kappa w / d of
    variance per term of P_left (more for the term that cancels).
    """

    @classmethod
    def own_memory(cls, grammar: Grammar, n: int, d: int, opt: DCYKOptions) -> int:
        """A length-d mask per (cell, nonterminal)."""
        return 8 * (n + 1) ** 2 * len(grammar.nonterminals) * d

    def group(self, step: Step) -> int | None:
        return 1  # every detection draws its own noise, in the engine's order

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
        h = d // 2 + 1
        self.masks = np.zeros((n + 1, n + 1, nn, d))
        self.means = np.zeros((n + 1, n + 1, nn))  # mean(m): the weight of a true derivation
        self.weight = np.zeros((n + 1, n + 1, nn))  # ||P_A||_F^2 / d: the weight of its noise
        self.left_sums = np.zeros((n + 1, n + 1, h), np.complex128)  # sum of mean(m) conj(spec)
        self.words_w = float(n)  # the words' terms of P_left weigh 1
        ledger = schedule.Ledger(NUMPY, t.nonterminals, [n], self.prune)
        schedule.run(self, n, self.order, ledger, on_progress=on_progress)
        return self.decode(n)

    def initialise(self) -> None:
        for i, a in enumerate(self.words, 1):
            self.left_sums[i - 1, i] = np.conj(self.cb.spectrum("terminal", a))

    def begin(self, i: int, j: int, step: Step) -> None:
        if step == schedule.BINARY:
            weight = self.weight
            self.totals = (self.words_w + weight.sum(), weight.sum())
            # near matches (a constant diagonal: every entry shifts alike)
            single = self._single_mismatches(self.means, i, j)
            self.common = self.rng.normal(0.0, 1.0, len(self.tables.binary)) * np.sqrt(
                single / self.d
            )

    def read(self, i: int, j: int, step: Step) -> None:
        pass  # each detection reads the simulated chart as it is

    def detect(self, i: int, j: int, step: Step, ks: slice) -> Detections:
        d, t, k, rng, weight = self.d, self.tables, ks.start, self.rng, self.weight
        if step == schedule.UNARY:
            r = t.unary[k]
            x = self.mean(self.unary_spectra[k : k + 1], self.left_sums[i, j])[0]
            # terms at the readout's own span (the word, and in the sequential order the
            # cell's updates before this one) cancel their span indices and read with
            # _KAPPA_SPAN; terms elsewhere with _KAPPA_TERM
            span = 1.0 + (weight[i, j].sum() if self.order == "sequential" else 0.0)
            other = self.words_w - 1.0 + weight.sum() - weight[i, j].sum()
            own = 1.0 if (t.nonterminals[r], self.words[j - 1]) in self.unary_pairs else 0.0
            var = (_KAPPA_TERM * other + _KAPPA_SPAN * span) * self.n_unary[k]
            sd = math.sqrt((var + (_KAPPA_SELF - _KAPPA_SPAN) * own) / d)
            m = sigmoid(x + rng.normal(0.0, sd, d), self.beta)
            # off-diagonal entries of sigma(M): noise, on above 0.5 (the word's own term
            # off the diagonal reads like any term at the span)
            sd = math.sqrt(var / d)
            junk = (d - 1) * float(np.mean(sigmoid(rng.normal(0.0, sd, 4096), self.beta)))
            weight[i, j, r] = junk  # what a pruned update leaves
        else:
            sig = np.zeros(d)
            for s in range(i + 1, j):
                on = np.nonzero(self.means[s, j])[0]
                if not len(on):
                    continue
                # overlap of every right term C2 with (sum of left terms) R_A
                ov = self.mean(self.right[on], self.left_sums[i, s] * self.binary_spectra[k])
                sig += (ov[:, None] * self.masks[s, j, on]).sum(axis=0)
            total_l, total_r = self.totals
            sd = math.sqrt(_KAPPA_PAIR * total_l * total_r * self.n_rules[k] / d)
            m = sigmoid(sig + self.common[k] + rng.normal(0.0, sd, d), self.beta)
            junk = 0.0
        peak = np.array([[m.max()]])
        return Detections(np.array([[m.mean()]]), peak, peak, (m, junk), check=m)

    def write(self, i: int, j: int, step: Step, ks: slice, det: Detections, keep: Any) -> None:
        r = self.rows(step)[ks.start]
        m, junk = det.values
        self.masks[i, j, r] = m
        self.means[i, j, r] = float(m.mean())
        self.left_sums[i, j] += self.means[i, j, r] * np.conj(self.left[r])
        self.weight[i, j, r] = float(np.mean(m * m)) + junk

    def decode(self, n: int) -> dict:
        """The entry decoder over the simulated masks, with its modelled noise."""
        d, t, rng = self.d, self.tables, self.rng
        nn = len(t.nonterminals)
        chart = {}
        total = self.words_w + self.weight.sum()
        left = self.left
        for i in range(n):
            for j in range(i + 1, n + 1):
                on = np.nonzero(self.means[i, j])[0]
                # every term of P_left, and more for the cell's own term of A (it cancels)
                var = _KAPPA_TERM * total + (_KAPPA_SELF - _KAPPA_TERM) * self.weight[i, j]
                stat = rng.normal(0.0, 1.0, nn) * np.sqrt(var / d)
                if len(on):
                    # overlap of A with every X written in the cell, times m_X[0]
                    ov = np.stack([self.mean(left, np.conj(left[x])) for x in on], axis=1)
                    stat += (ov * self.masks[i, j, on, 0]).sum(axis=1)
                chart[(i, j)] = frozenset(
                    a for k, a in enumerate(t.nonterminals) if stat[k] > self.bound
                )
        return chart

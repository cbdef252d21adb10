"""The capacity model's simulations of D-CYK's read-backs, without any d x d work
(used by :mod:`fastdcyk.capacity`).

D-CYK's readouts are sums over pairs of superposed terms (docs/method.md, section 3). A
readout of the trace variant splits into two parts:

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
samples and sentences. :class:`TraceSim` is this simulation.

The paper variant (entrywise gate, entry decoder, Gaussian vectors) is modelled by the same
simulation with per-entry noise: its readouts are single matrix entries, to which every
superposed pair adds a few times 1/d of variance (section 3, "Why the trace sees less
noise"; the factor, measured on single readouts, is ``_KAPPA_*``), and its gate writes a
diagonal mask; the model carries the mask's mean (:class:`MaskSim`).

The clean-up variant (the default) reads every completed cell once into clean scores and
gates each detection with the grammar's rules over its children's scores
(:class:`CleanSim`): its readouts are the matched filter's (the exact part from the
spectra, the span part as noise) or, with the least-squares read-back, the solve of the
candidates' Gram system with the exact readouts plus noise of the covariance the
candidates share. The successive-cancelling read-back (``readback="cancel"``) has no model.

See docs/method.md, section 5, for the derivation and docs/results.md for the validation
against measurement.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import scipy.linalg

from fastdcyk.cfg.grammar import Grammar
from fastdcyk.engine import schedule as S
from fastdcyk.engine.decode import decision_boundary, sigmoid
from fastdcyk.engine.readback import candidates, ridge_matrix, solve
from fastdcyk.engine.rules import (
    candidate_rule_layer,
    lexical_layer,
    parseval_weights,
    rule_layer,
    rule_structure,
    rule_tables,
)
from fastdcyk.engine.schedule import Detections, Step
from fastdcyk.hrr.codebook import Codebook, sidon_offsets

__all__ = ["CleanSim", "MaskSim", "TraceSim"]

_OPS = S.NumpyOps()


class TraceSim:
    """The trace variant's simulation (and the base of the others): one codebook draw, its
    rule and terminal spectra, and the simulation of a sentence."""

    def __init__(
        self,
        grammar: Grammar,
        cb: Codebook,
        encoding: str,
        order: str,
        beta: float,
        threshold: float,
    ):
        self.cb, self.d, self.grammar = cb, cb.d, grammar
        # the clean-up gate reads no rule spectra
        self.t = rule_tables(cb, grammar, encoding, rules=type(self) is not CleanSim)
        self.order = order
        self.beta = beta
        self.bound = decision_boundary(beta, threshold)
        self.prune = float(np.finfo(cb.dtype).eps)
        self.w = parseval_weights(cb.d)
        self.ub = self.t.unary_spectra
        self.bb = self.t.binary_spectra
        st = rule_structure(grammar)
        # the rules A -> B C as arrays: A's position in t.binary, the rows of B and C
        self.rule_a, self.rule_b, self.rule_c = (
            st.binary_rule_row.astype(np.intp),
            st.binary_rule_left.astype(np.intp),
            st.binary_rule_right.astype(np.intp),
        )
        self.n_rules = np.bincount(self.rule_a, minlength=len(self.t.binary)).astype(float)
        self.unary_pairs = set(grammar.unary_rules)
        unary = st.unary_rule_row.astype(np.intp)
        self.n_unary = np.bincount(unary, minlength=len(self.t.unary)).astype(float)

    @functools.cached_property
    def left(self) -> np.ndarray:
        """The nonterminals' spectra, complex128 (made on first use: the least-squares
        model needs none)."""
        return self.t.spectra.astype(np.complex128)

    @functools.cached_property
    def right(self) -> np.ndarray:
        return self.t.right_spectra.astype(np.complex128)

    def mean(self, spectra: np.ndarray, q: np.ndarray) -> np.ndarray:
        """(1/d) sum over all d frequencies of R[f] q[f] (real), for every row R."""
        # element-wise for small tables (a threaded BLAS call costs more in start-up, and
        # under load, than the arithmetic), a matrix-vector product for a large grammar's
        if len(spectra) <= 64:
            return (spectra * (self.w * q)).sum(axis=-1).real / self.d
        return (spectra @ (self.w * q)).real / self.d

    def gate(self, x: np.ndarray) -> np.ndarray:
        g = sigmoid(x, self.beta)
        return np.where(g > self.prune, g, 0.0)

    # -- the schedule's protocol (fastdcyk.engine.schedule.CellParser) -----------------------

    def rows(self, step: Step) -> np.ndarray:
        return self.t.unary if step == S.UNARY else self.t.binary

    def group(self, step: Step) -> int | None:
        return None

    def run(self, words: tuple[str, ...], rng: np.random.Generator) -> dict:
        """The decoded chart of one sentence, simulated."""
        d, n, t = self.d, len(words), self.t
        # indices beyond the Sidon set that fits in d are random: then model them all so
        self.shifted = self.cb.index_vectors == "shifted" and len(sidon_offsets(d, n + 1)) == n + 1
        self.words, self.rng = words, rng
        nn = len(t.nonterminals)
        h = d // 2 + 1
        self.gl = np.zeros((n + 1, n + 1, nn))  # gate weights written into the chart
        # sums of conj(spec) of P_left's terms, and of right spectra of P_right's, per cell
        self.lsum = np.zeros((n + 1, n + 1, h), np.complex128)
        self.rsum = np.zeros((n + 1, n + 1, h), np.complex128)
        self.term = np.zeros((n + 1, n + 1))  # terminal terms of P_left (weight 1)
        S.run(self, n, self.order, S.Ledger(_OPS, t.nonterminals, [n], self.prune))
        return self.decode(n)

    def initialise(self) -> None:
        for i, a in enumerate(self.words, 1):
            self.lsum[i - 1, i] = np.conj(self.cb.spectrum("terminal", a))
            self.term[i - 1, i] = 1.0

    def end(self, i: int, j: int, step: Step) -> None:
        pass

    def begin(self, i: int, j: int, step: Step) -> None:
        # the unary readout's pairs with other span indices: one mismatch (0 when shifted,
        # 1/d when random) only, left to the binary and decoder noise. The span noise of a
        # binary cell is drawn once: in the sequential order a detection reads the updates
        # of the cell written before it again (its exact part), its noise stays.
        if step == S.UNARY:
            self.noise = 0.0
        else:
            self.noise = self._noise_binary(self.gl, self.term, i, j, self.rng, self.shifted)

    def read(self, i: int, j: int, step: Step) -> None:
        if step == S.UNARY:
            self.q = self.lsum[i, j]
        else:
            self.q = np.einsum("kf,kf->f", self.lsum[i, i + 1 : j], self.rsum[i + 1 : j, j])

    def detect(self, i: int, j: int, step: Step, ks: slice) -> Detections:
        spectra = self.ub if step == S.UNARY else self.bb
        x = self.mean(spectra[ks], self.q)
        if step == S.BINARY:
            x = x + self.noise[ks]
        g = self.gate(x)
        return Detections(x[None], g[None], g[None], g)

    def write(self, i: int, j: int, step: Step, ks: slice, det: Detections, keep: Any) -> None:
        """Write the gated updates (those pruned have gate 0) into the simulated chart."""
        rows, g = self.rows(step)[ks], det.values
        self.gl[i, j, rows] = g
        keep = g != 0.0
        rows, g = rows[keep], g[keep]
        if len(rows) * 4 < len(self.left):  # few updates: gather their spectra
            self.lsum[i, j] += np.conj(g @ self.left[rows])
            self.rsum[i, j] += g @ self.right[rows]
        elif len(rows):  # many (a large grammar's noisy detections): no gathered copy
            w = np.zeros(len(self.left))
            w[rows] = g
            self.lsum[i, j] += np.conj(w @ self.left)
            self.rsum[i, j] += w @ self.right

    def decode(self, n: int) -> dict:
        """The trace decoder over the simulated chart, with its modelled noise."""
        t, gl, rng = self.t, self.gl, self.rng
        stats = np.zeros((n + 1, n + 1, len(t.nonterminals)))
        for i in range(n):
            for j in range(i + 1, n + 1):
                # tr([A]+ ...) / d: the real part of mean(conj(A) conj(lsum)) = mean(A lsum)
                stats[i, j] = self.mean(self.left, self.lsum[i, j])
                stats[i, j] += self._noise_decoder(gl, self.term, i, j, rng, self.shifted)
        names = t.nonterminals
        return {
            (i, j): frozenset(names[k] for k in np.flatnonzero(stats[i, j] > self.bound))
            for i in range(n)
            for j in range(i + 1, n + 1)
        }

    # -- the modelled (span) part of each readout -----------------------------------------

    def _single_mismatches(self, gl, i, j) -> np.ndarray:
        """Pairs behind the binary readouts of cell (i, j) that differ in the outer span group.

        ``gl[s, e, X]`` weighs the term (s, e, X) of both accumulators. Returns, for every
        nonterminal with binary rules, the summed weights of pairs (P_left (i1, k, B),
        P_right (k, j2, C)) with a rule A -> B C that differ from a true match in the outer
        span group only (i1 != i or j2 != j).
        """
        nb = len(self.t.binary)
        ra, rb, rc = self.rule_a, self.rule_b, self.rule_c
        wl_end = gl.sum(axis=0)  # (k, B): P_left's terms ending at k
        wr_start = gl.sum(axis=1)  # (k, C): P_right's terms starting at k
        ks = slice(i + 1, j)
        exact = np.bincount(ra, (gl[i, ks][:, rb] * gl[ks, j][:, rc]).sum(axis=0), nb)
        same_k = np.bincount(ra, (wl_end[:, rb] * wr_start[:, rc]).sum(axis=0), nb)
        return np.maximum(same_k - exact, 0.0)

    def _noise_binary(self, gl, term, i, j, rng, shifted: bool) -> np.ndarray:
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
        d, n1 = self.d, gl.shape[0]
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
        # sum over (i1, k1, k2, j2) of gl[i1, k1, B] v[i1, k1, k2, j2] gl[k2, j2, C], for
        # the pairs (B, C) of the rules only: one matrix product, then a column-wise dot
        # product per rule (the whole |N| x |N| matrix of pairs costs |N|^2, 16M entries
        # per cell on a grammar of 4,000 nonterminals, where it has 10,000 rules)
        g2 = gl.reshape(n1 * n1, -1)
        vg = v.reshape(n1 * n1, n1 * n1) @ g2
        coh = np.einsum("pr,pr->r", g2[:, rb], vg[:, rc])
        coherent = np.bincount(ra, coh, len(self.t.binary))
        # every other pair adds g_L g_R times a value of variance 1/d^2 per rule of A: its
        # variance weighs g_L^2 g_R^2, and the pairs whose spans cancel are the exact part
        sq = gl * gl
        cell = sq.sum(axis=2)  # summed squared gates of each cell
        left = cell.sum() + term.sum()  # the words' terms weigh 1
        cancel = (cell[i, i + 1 : j] + term[i, i + 1 : j]) @ cell[i + 1 : j, j]
        other = max(left * cell.sum() - cancel, 0.0) * self.n_rules
        return coherent + rng.normal(0.0, 1.0, len(other)) * np.sqrt(other / d**2)

    def _noise_decoder(self, gl, term, i, j, rng, shifted: bool) -> np.ndarray:
        nn = gl.shape[2]
        # each term adds its gate times a value, so its variance weighs the gate squared;
        # the cell's own terms (the words' included) are the exact part
        sq = gl * gl
        total = sq.sum() - sq[i, j].sum() + term.sum() - term[i, j]
        same = sq.sum(axis=(0, 1)) - sq[i, j]  # the same symbol in another cell
        if shifted:
            var = 2.0 * same / self.d**2 + total / self.d**2
        else:
            var = same / self.d + total / self.d**2
        return rng.normal(0.0, 1.0, nn) * np.sqrt(var)


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


class MaskSim(TraceSim):
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

    def group(self, step: Step) -> int | None:
        return 1  # every detection draws its own noise, in the engine's order

    def run(self, words: tuple[str, ...], rng: np.random.Generator) -> dict:
        """The decoded chart of one sentence, simulated."""
        d, n, t = self.d, len(words), self.t
        self.words, self.rng = words, rng
        nn = len(t.nonterminals)
        h = d // 2 + 1
        self.masks = np.zeros((n + 1, n + 1, nn, d))
        self.means = np.zeros((n + 1, n + 1, nn))  # mean(m): the weight of a true derivation
        self.weight = np.zeros((n + 1, n + 1, nn))  # ||P_A||_F^2 / d: the weight of its noise
        self.lsum = np.zeros((n + 1, n + 1, h), np.complex128)  # sum of mean(m) conj(spec)
        self.words_w = float(n)  # the words' terms of P_left weigh 1
        S.run(self, n, self.order, S.Ledger(_OPS, t.nonterminals, [n], self.prune))
        return self.decode(n)

    def initialise(self) -> None:
        for i, a in enumerate(self.words, 1):
            self.lsum[i - 1, i] = np.conj(self.cb.spectrum("terminal", a))

    def begin(self, i: int, j: int, step: Step) -> None:
        if step == S.BINARY:
            weight = self.weight
            self.totals = (self.words_w + weight.sum(), weight.sum())
            # near matches (a constant diagonal: every entry shifts alike)
            single = self._single_mismatches(self.means, i, j)
            self.common = self.rng.normal(0.0, 1.0, len(self.t.binary)) * np.sqrt(single / self.d)

    def read(self, i: int, j: int, step: Step) -> None:
        pass  # each detection reads the simulated chart as it is

    def detect(self, i: int, j: int, step: Step, ks: slice) -> Detections:
        d, t, k, rng, weight = self.d, self.t, ks.start, self.rng, self.weight
        if step == S.UNARY:
            r = t.unary[k]
            x = self.mean(self.ub[k : k + 1], self.lsum[i, j])[0]
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
                ov = self.mean(self.right[on], self.lsum[i, s] * self.bb[k])
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
        self.lsum[i, j] += self.means[i, j, r] * np.conj(self.left[r])
        self.weight[i, j, r] = float(np.mean(m * m)) + junk

    def decode(self, n: int) -> dict:
        """The entry decoder over the simulated masks, with its modelled noise."""
        d, t, rng = self.d, self.t, self.rng
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


#: The clean-up model leaves out of the exact readouts the terms whose gate is below this
#: (their share of any readout is below it too: an overlap is at most 1); the noise model
#: counts them.
_EXACT_MIN = 1e-6


class CleanSim(TraceSim):
    """The clean-up gate (docs/method.md, section 6): every completed cell read once into
    clean scores sigma(a); a detection is the grammar's rules over the children's scores,
    gated; P_left only.

    With the matched read-back a_X is the trace decoder's readout (its exact part from the
    codebook's spectra, its span part the decoder's modelled noise). With the least-squares
    read-back (docs/method.md, section 7) only the candidates are written, and their
    amplitudes solve G_C a = x_C, with x_C the exact readouts plus the modelled noise,
    drawn with the covariance the readouts of the candidates share (their Gram matrix
    times the per-symbol variance): a = g + G_C^-1 e, as in the engine.

    A cell's exact readouts are sums over the terms written into it of their overlaps with
    every symbol: one column of overlaps per symbol that is ever written (computed once per
    codebook), so a cell costs O(N x its terms), N the nonterminals, not a pass over every
    spectrum; the noise model keeps running sums of the squared gates.
    """

    def __init__(self, *args: Any, readback: str = "matched", level: float = 0.25) -> None:
        super().__init__(*args)
        self.lstsq, self.level = readback == "lstsq", level

    def run(self, words: tuple[str, ...], rng: np.random.Generator) -> dict:
        """The decoded chart of one sentence, simulated."""
        d, n, t = self.d, len(words), self.t
        self.words, self.rng = words, rng
        nn = len(t.nonterminals)
        if not hasattr(self, "st"):
            st = self.st = rule_structure(self.grammar)
            used = np.unique(st.unary_rule_terminal)
            self.term_rows = np.full(len(st.terminals), -1, np.intp)
            self.term_rows[used] = np.arange(len(used))
            lexicon = [st.terminals[k] for k in used]
            self.term_spectra = self.cb.spectra("terminal", lexicon).astype(np.complex128)
            self.term_index = {t: r for r, t in enumerate(lexicon)}
            if self.lstsq:  # the symbol vectors, for the read-back's Gram matrices
                self.vec64 = self.t.vectors.astype(np.float64)
                self.term_vec64 = self.cb.vectors("terminal", lexicon).astype(np.float64)
            self.cols: dict[tuple[str, int], np.ndarray] = {}
            self.gram: np.ndarray | None = None
        self.gl = np.zeros((n + 1, n + 1, nn))
        self.sq_total = 0.0  # the running sum of gl ** 2
        self.term = np.zeros((n + 1, n + 1))
        self.exact = np.zeros((n + 1, n + 1, nn))
        self.scores = np.zeros((n + 1, n + 1, nn))
        self.stats = np.zeros((n + 1, n + 1, nn))
        self.terms: dict[tuple[int, int], list] = {}
        self.cands: dict[tuple[int, int], list] = {}
        self.read_cells: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
        self.base = float(sigmoid(0.0, self.beta))
        for i in range(1, n + 1):
            self.term[i - 1, i] = 1.0
        # near[a, b]: the variance a near match across span indices a != b adds
        shifted = np.zeros(n + 1, bool)
        if self.cb.index_vectors == "shifted":
            shifted[: len(sidon_offsets(d, n + 1))] = True
        self.near = np.where(shifted[:, None] & shifted[None, :], 2.0 / d**2, 1.0 / d)
        np.fill_diagonal(self.near, 0.0)
        S.run(self, n, self.order, S.Ledger(_OPS, t.nonterminals, [n], self.prune))
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
        near = self.near[j] @ (self.gl[i][:, rows] ** 2)
        near += self.near[i] @ (self.gl[:, j][:, rows] ** 2)
        return near + self._other(i, j)

    def _other(self, i: int, j: int) -> float:
        """The variance the terms of other cells add to any readout at (i, j), near matches
        aside: 1/d^2 times their squared gates (the words' weigh 1)."""
        total = self.sq_total - float((self.gl[i, j] ** 2).sum()) + self.term.sum()
        return (total - self.term[i, j]) / self.d**2

    def _noise(self, i: int, j: int, size: int, var: Any) -> np.ndarray:
        return self.rng.normal(0.0, 1.0, size) * np.sqrt(var)

    def read(self, i: int, j: int, step: Step) -> None:
        st = self.st
        if step == S.UNARY:
            word = self.words[i]
            x = self._column("tt", self.term_index[word])  # the cell holds the word only
            # a word elsewhere shares no span slot with (i, j): no near match
            self.unary_var = self._other(i, j)
            c = sigmoid(x + self._noise(i, j, len(x), self.unary_var), self.beta)
            self.tvals = lexical_layer(st, c, self.term_rows)
            self.term_read = np.flatnonzero(c > self.level)
        elif self.lstsq:  # every non-candidate scores sigma(0): the candidates' rules only
            self.tvals = candidate_rule_layer(st, self.read_cells, i, j, self.base)
        else:
            self.tvals = rule_layer(st, self.scores, i, j)

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
        self.gl[i, j, rows] = g
        self.sq_total += float(g @ g)
        # the exact part of a term of gate below EXACT_MIN is below EXACT_MIN in every readout
        big = g >= _EXACT_MIN
        self.terms.setdefault((i, j), []).append((rows[big], g[big]))

    def _overlaps(self, rows: np.ndarray) -> np.ndarray:
        """The overlaps of the nonterminals ``rows`` with every nonterminal,
        (len(rows), N): rows of a matrix filled as symbols are first written (the missing
        ones with one matrix product)."""
        if self.gram is None:
            nn = len(self.t.nonterminals)
            self.gram, self.known = np.empty((nn, nn)), np.zeros(nn, bool)
        missing = np.unique(rows[~self.known[rows]])
        if len(missing):
            block = (self.w * np.conj(self.left[missing])) @ self.left.T
            self.gram[missing] = block.real / self.d
            self.known[missing] = True
        return self.gram[rows]

    def end(self, i: int, j: int, step: Step) -> None:
        if self.lstsq:
            self._end_lstsq(i, j, step)
            return
        x = np.zeros(len(self.t.nonterminals))
        if j == i + 1:
            x += self._column("nt", self.term_index[self.words[i]])
        for rows, g in self.terms.get((i, j), ()):
            if len(rows) > len(self.w):  # many terms (a small d): through their summed spectrum
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
        if step == S.UNARY and len(self.term_read):
            vecs = np.concatenate([vecs, self.term_vec64[self.term_read]])
            var = np.concatenate([var, np.full(len(self.term_read), self.unary_var)])
        if not len(vecs):
            self.scores[i, j] = sigmoid(self.stats[i, j], self.beta)
            self.read_cells[(i, j)] = (rows, np.zeros(0))
            return
        g = vecs @ vecs.T
        written = g[:, :k] @ self.gl[i, j, rows]  # the cell's items: its candidates ...
        if step == S.UNARY:  # ... and the word
            written += vecs @ self.term_vec64[self.term_index[self.words[i]]]
        z = self.rng.normal(0.0, 1.0, len(written))
        a = _solve_with_noise(g, written, np.sqrt(var), z)[:k]
        self.stats[i, j, rows] = a
        self.scores[i, j] = sigmoid(self.stats[i, j], self.beta)
        self.read_cells[(i, j)] = (rows, sigmoid(a, self.beta) - self.base)

    def decode(self, n: int) -> dict:
        """The final chart: the read-back's amplitudes (least squares), or the trace
        decoder over the finished simulated chart, with its modelled noise (matched)."""
        names = self.t.nonterminals
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


def _solve_with_noise(g: np.ndarray, x: np.ndarray, scale: np.ndarray, z: np.ndarray):
    """:func:`~fastdcyk.engine.readback.solve` of ``x`` plus noise ``scale * (L z)``, with
    L L^T the regularised Gram matrix (standard normal draws z given the covariance of the
    readouts of vectors of Gram matrix g): one Cholesky factor serves both."""
    m = ridge_matrix(g)
    try:
        chol = np.linalg.cholesky(m)
    except np.linalg.LinAlgError:  # rounding: through the eigenvalues, as solve does
        w, u = np.linalg.eigh(g)
        e = scale * (u @ (np.sqrt(np.maximum(w, 0.0)) * (u.T @ z)))
        return solve(g, x + e)
    return scipy.linalg.cho_solve((chol, True), x + scale * (chol @ z))

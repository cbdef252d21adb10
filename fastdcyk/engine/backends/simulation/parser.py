"""What the capacity model's simulations of the detection modes share (:mod:`fastdcyk.capacity`;
each mode's simulation is in its folder, :mod:`fastdcyk.registry.modes`).

D-CYK's readouts are sums over pairs of superposed terms (docs/method.md, section 3): pairs
whose span indices cancel leave a circulant of symbol vectors only, whose trace the
simulations compute exactly from the codebook's own symbol spectra; the other pairs are
modelled as noise of the variance the algebra gives. A simulation runs the schedule
(:func:`fastdcyk.engine.core.schedule.run`) over these readouts as a parser runs it over the
accumulators, with no d x d work: :class:`Simulation` holds one codebook draw's rule and
symbol spectra and what the readouts' models share. See docs/method.md, section 5, for the
derivation and docs/results.md for the validation against measurement.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from fastdcyk.cfg.grammar import Grammar
from fastdcyk.engine.core import schedule
from fastdcyk.engine.core.arrays import sigmoid
from fastdcyk.engine.core.decode import decision_boundary
from fastdcyk.engine.core.rules import parseval_weights, rule_structure, rule_tables
from fastdcyk.engine.core.schedule import Step
from fastdcyk.hrr.codebook import Codebook
from fastdcyk.hrr.sidon import sidon_offsets
from fastdcyk.options import DCYKOptions

__all__ = ["Simulation"]


class Simulation:
    """A simulation of one mode for one codebook draw: its rule and symbol spectra, and
    the schedule's protocol (:class:`~fastdcyk.engine.core.schedule.CellParser`) over modelled
    readouts. A mode's simulation implements :meth:`run` (the decoded chart of one
    sentence) and the protocol's steps.

    Parameters
    ----------
    grammar : Grammar
    cb : Codebook
        The codebook ``dcyk(..., seed=s)`` would build (float64).
    opt : DCYKOptions
        The options simulated (gate, order, encoding, beta, threshold, read-back).
    """

    #: Whether the simulation reads the rule spectra (a mode that applies the rules to
    #: scores needs only the nonterminals').
    rule_spectra = True

    def __init__(self, grammar: Grammar, cb: Codebook, opt: DCYKOptions) -> None:
        self.cb, self.d, self.grammar, self.opt = cb, cb.d, grammar, opt
        self.tables = rule_tables(cb, grammar, opt.encoding, rules=self.rule_spectra)
        self.order = opt.order
        self.beta = opt.beta
        self.bound = decision_boundary(opt.beta, opt.threshold)
        self.prune = float(np.finfo(cb.dtype).eps)
        self.parseval = parseval_weights(cb.d)
        self.unary_spectra = self.tables.unary_spectra
        self.binary_spectra = self.tables.binary_spectra
        st = rule_structure(grammar)
        # the rules A -> B C as arrays: A's position in t.binary, the rows of B and C
        self.rule_a, self.rule_b, self.rule_c = (
            st.binary_rule_row.astype(np.intp),
            st.binary_rule_left.astype(np.intp),
            st.binary_rule_right.astype(np.intp),
        )
        self.n_rules = np.bincount(self.rule_a, minlength=len(self.tables.binary)).astype(float)
        self.unary_pairs = set(grammar.unary_rules)
        unary = st.unary_rule_row.astype(np.intp)
        self.n_unary = np.bincount(unary, minlength=len(self.tables.unary)).astype(float)

    @functools.cached_property
    def left(self) -> np.ndarray:
        """The nonterminals' spectra, complex128 (made on first use: the least-squares
        model needs none)."""
        return self.tables.spectra.astype(np.complex128)

    @functools.cached_property
    def right(self) -> np.ndarray:
        return self.tables.right_spectra.astype(np.complex128)

    def mean(self, spectra: np.ndarray, q: np.ndarray) -> np.ndarray:
        """(1/d) sum over all d frequencies of R[f] q[f] (real), for every row R."""
        # element-wise for small tables (a threaded BLAS call costs more in start-up, and
        # under load, than the arithmetic), a matrix-vector product for a large grammar's
        if len(spectra) <= 64:
            return (spectra * (self.parseval * q)).sum(axis=-1).real / self.d
        return (spectra @ (self.parseval * q)).real / self.d

    def gate(self, x: np.ndarray) -> np.ndarray:
        g = sigmoid(x, self.beta)
        return np.where(g > self.prune, g, 0.0)

    # -- the schedule's protocol (fastdcyk.engine.core.schedule.CellParser) -----------------------

    def rows(self, step: Step) -> np.ndarray:
        return self.tables.unary if step == schedule.UNARY else self.tables.binary

    def group(self, step: Step) -> int | None:
        return None

    def begin(self, i: int, j: int, step: Step) -> None:
        pass

    def end(self, i: int, j: int, step: Step) -> None:
        pass

    def run(
        self,
        words: tuple[str, ...],
        rng: np.random.Generator,
        on_progress: Callable[[int], None] | None = None,
    ) -> dict:
        """The decoded chart of one sentence, simulated: ``{(i, j): frozenset}``."""
        raise NotImplementedError

    def shifted_indices(self, n: int) -> np.ndarray:
        """Which span indices 0..n of the codebook are shifted (:mod:`fastdcyk.hrr.sidon`:
        distinct shifted indices are exactly orthogonal; those beyond the Sidon set that
        fits in d are random), as a (n + 1,) mask."""
        shifted = np.zeros(n + 1, bool)
        if self.cb.index_vectors == "shifted":
            shifted[: len(sidon_offsets(self.d, n + 1))] = True
        return shifted

    #: The sentence lengths the capacity model's estimate of its time runs this model on
    #: (:func:`fastdcyk.capacity.estimate_seconds`).
    probe_lengths: tuple[int, ...] = (12, 48)

    @staticmethod
    def cost_terms(n: int) -> tuple[float, float]:
        """What the time of a sentence of n words grows with, as two terms whose weights
        the capacity model's estimate fits on :attr:`probe_lengths`: its cells (a read and a
        solve each) and its splits (the rules over a cell's children), n^2 / 2 and n^3 / 6."""
        return n * (n + 1) / 2, (n - 1) * n * (n + 1) / 6

    @classmethod
    def memory(cls, grammar: Grammar, n: int, d: int, opt: DCYKOptions) -> int:
        """Bytes the simulation of sentences of n words at d holds: what every simulation
        keeps (the symbols' spectra, a weight per (cell, nonterminal), the spectra of the
        span sums) and :meth:`own_memory`."""
        n1, nn, h = n + 1, len(grammar.nonterminals), d // 2 + 1
        shared = 3 * nn * h * 16 + 8 * n1 * n1 * nn * 4 + 2 * n1 * n1 * h * 16
        return int(shared + cls.own_memory(grammar, n, d, opt))

    @classmethod
    def own_memory(cls, grammar: Grammar, n: int, d: int, opt: DCYKOptions) -> int:
        """Bytes of the simulation's own arrays beyond the shared ones (:meth:`memory`)."""
        return 0

    def _single_mismatches(self, gates, i, j) -> np.ndarray:
        """Pairs behind the binary readouts of cell (i, j) that differ in the outer span group.

        ``gates[s, e, X]`` weighs the term (s, e, X) of both accumulators. Returns, for every
        nonterminal with binary rules, the summed weights of pairs (P_left (i1, k, B),
        P_right (k, j2, C)) with a rule A -> B C that differ from a true match in the outer
        span group only (i1 != i or j2 != j).
        """
        nb = len(self.tables.binary)
        ra, rb, rc = self.rule_a, self.rule_b, self.rule_c
        wl_end = gates.sum(axis=0)  # (k, B): P_left's terms ending at k
        wr_start = gates.sum(axis=1)  # (k, C): P_right's terms starting at k
        ks = slice(i + 1, j)
        exact = np.bincount(ra, (gates[i, ks][:, rb] * gates[ks, j][:, rc]).sum(axis=0), nb)
        same_k = np.bincount(ra, (wl_end[:, rb] * wr_start[:, rc]).sum(axis=0), nb)
        return np.maximum(same_k - exact, 0.0)

"""The numpy backend's weighted table (docs/method.md, section 10, "Through the table"): a
PCFG's Viterbi scores written into P_left as amplitudes and read back by least squares.

:class:`NumpyWeightedParser` is the clean-up parser with one change of what a detection writes:
instead of a gate near 1, each item (i, j, A) is written with an amplitude that carries its
Viterbi score v(i, j, A) (the log probability of its best subtree) relative to the cell's
best, M(i, j) = max_A v(i, j, A), kept outside the table as one number per cell:

    w = 1 - (1 - f) (M - v) / beam,        items with M - v > beam not written,

so that the written amplitudes lie in [f, 1], f = :data:`FLOOR` = 1/8. A completed cell is
read by least squares over its candidates (:mod:`fastdcyk.engine.core.readback`), which gives
amplitudes a; the decoder's statistic is a / f (1 to 8 for a written item, so that the
clean-up variant's decision boundary, about 0.59, falls between absent items and the
smallest written amplitude), an item is present when a / f is above that boundary, and its
score as read is v^ = M - beam (1 - a) / (1 - f). The parents' scores are computed from those
read scores only (max over splits and rules of log P(A -> B C) + v^(B) + v^(C); a unary
cell's from the terminal read in it), so every score a parent uses went through P_left.
The most probable tree is then read top down from the read scores
(:func:`fastdcyk.cfg.viterbi.tree_from_scores`).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from fastdcyk.cfg.grammar import Grammar
from fastdcyk.cfg.symbols import Rule, Symbol
from fastdcyk.engine.core import schedule
from fastdcyk.engine.core.decode import decision_boundary
from fastdcyk.engine.core.rules import RuleStructure, rule_structure, rules_of
from fastdcyk.engine.core.schedule import Detections, Step
from fastdcyk.engine.modes.cleanup.numpy_parser import NumpyCleanupParser
from fastdcyk.options import DEFAULT_BEAM

__all__ = ["NumpyWeightedParser", "amplitude", "score_of"]


@lru_cache(maxsize=8)
def _log_probs(grammar: Grammar) -> tuple[np.ndarray, np.ndarray]:
    """log P of every rule A -> a and A -> B C, in :func:`rule_structure`'s order."""
    st = rule_structure(grammar)
    names, terms = st.nonterminals, st.terminals
    unary = np.array(
        [
            grammar.log_prob(Rule(names[st.unary[r]], (Symbol(terms[a], True),)))
            for r, a in zip(st.unary_rule_row, st.unary_rule_terminal, strict=True)
        ],
        dtype=np.float64,
    )
    binary = np.array(
        [
            grammar.log_prob(
                Rule(names[st.binary[r]], (Symbol(names[b], False), Symbol(names[c], False)))
            )
            for r, b, c in zip(
                st.binary_rule_row, st.binary_rule_left, st.binary_rule_right, strict=True
            )
        ],
        dtype=np.float64,
    )
    return unary, binary


#: The smallest amplitude written (an item at the beam's edge). A score read with amplitude
#: error e is off by beam e / (1 - FLOOR) nats, and an item is present when its amplitude
#: exceeds about 0.59 FLOOR: at 1/8 an edge item is lost when its read errs by more than
#: 0.05 (0.6 nats at the default beam), and scores are read 1.75 times as precisely as with
#: the amplitudes 1/2 to 1 (docs/results.md, study (g), where no false item was read at
#: any d).
FLOOR = 0.125


#: Steps of iterative refinement of each cell's least-squares read
#: (:func:`fastdcyk.engine.core.readback.solve`): the ridge shrinks an amplitude by about 0.1%,
#: 0.011 nats at the default beam, and the parents' scores add up what their children's
#: reads lost; one step leaves about 1e-6 of it.
REFINE = 1


def amplitude(v: np.ndarray, best: float, beam: float) -> np.ndarray:
    """The amplitude written for Viterbi scores ``v`` in a cell whose best is ``best``:
    ``1 - (1 - FLOOR) (best - v) / beam``, 0 below the beam."""
    gap = best - v
    return np.where(gap <= beam, 1.0 - (1.0 - FLOOR) * gap / beam, 0.0)


def score_of(a: np.ndarray, best: float, beam: float) -> np.ndarray:
    """The Viterbi score an amplitude read back stands for (the inverse of :func:`amplitude`)."""
    return best - beam * (1.0 - a) / (1.0 - FLOOR)


class NumpyWeightedParser(NumpyCleanupParser):
    """The clean-up parser writing a PCFG's Viterbi scores as amplitudes (module docstring).

    Its decoder statistics are a / :data:`FLOOR` (a the least-squares amplitudes): present
    items read 1 to 8, absent ones near 0, so the clean-up variant's decoder boundary
    applies.
    :attr:`read_scores` holds every present item's score as read, :attr:`best` the cells'
    scales M(i, j).
    """

    complete_words = False  # a word's cell holds its rules' items within the beam

    #: its reads are scores, not clean scores: no compiled column (:meth:`run_column`)
    fills_columns = False

    def __init__(self, grammar, words, cb, opt, p_left=None) -> None:
        if p_left is not None:
            raise ValueError("a weighted table is read as it is parsed: no given P_left")
        super().__init__(grammar, words, cb, opt)
        # beam="auto" parses with fixed beams (fastdcyk.engine.beam); its first when alone
        self.beam = DEFAULT_BEAM if isinstance(opt.beam, str) else float(opt.beam)
        #: items with a finite Viterbi score left unwritten for being beyond the beam
        self.beam_cut = 0
        self.unary_logp, self.binary_logp = _log_probs(grammar)
        #: (i, j) -> (rows, scores as read) of the cell's present items
        self.read_scores: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
        #: (i, j) -> the cell's best Viterbi score M(i, j), kept outside the table
        self.best: dict[tuple[int, int], float] = {}
        self._cell: tuple[int, int] | None = None
        self._present = decision_boundary(opt.beta, opt.threshold) * FLOOR
        if self._certify is not None:  # an item is present when its amplitude is above this
            self._certify.boundary = self._present
        # the amplitudes are read as scores: the ridge's shrinkage refined away
        self.refine = REFINE

    def read(self, i: int, j: int, step: Step) -> None:
        """The cell's Viterbi scores from what was read before it, and their amplitudes;
        computed once per cell (in the sequential order the schedule asks again after each
        write, and the answer does not change)."""
        if self._cell == (i, j):
            return
        self._cell = (i, j)
        st: RuleStructure = self.structure
        if step == schedule.UNARY:
            c = self.word_scores(i, j)
            read = np.flatnonzero(c > self.opt.candidate_level)
            self._terminals_read[(i, j)] = read
            present = np.zeros(len(c), bool)
            present[read] = True
            on = present[self._lexicon_rows[st.unary_rule_terminal]]
            v = np.full(len(st.unary), -np.inf)
            np.maximum.at(v, st.unary_rule_row[on], self.unary_logp[on])
        else:
            v = np.full(len(st.binary), -np.inf)
            nn = len(st.nonterminals)
            left_v, right_v = np.full(nn, -np.inf), np.full(nn, -np.inf)
            for k in range(i + 1, j):
                lr, lv = self.read_scores.get((i, k), (np.zeros(0, np.intp), np.zeros(0)))
                rr, rv = self.read_scores.get((k, j), (np.zeros(0, np.intp), np.zeros(0)))
                if not len(lr) or not len(rr):
                    continue
                left_v[lr], right_v[rr] = lv, rv
                rules = rules_of(st.rules_by_left, lr)
                s = (
                    self.binary_logp[rules]
                    + left_v[st.binary_rule_left[rules]]
                    + right_v[st.binary_rule_right[rules]]
                )
                ok = np.isfinite(s)
                np.maximum.at(v, st.binary_rule_row[rules[ok]], s[ok])
                left_v[lr], right_v[rr] = -np.inf, -np.inf
        top = float(v.max()) if len(v) and np.isfinite(v).any() else -math.inf
        self.best[(i, j)] = top
        if math.isfinite(top):
            self.beam_cut += int(np.count_nonzero(top - v[np.isfinite(v)] > self.beam))
        self._detection = amplitude(v, top, self.beam) if math.isfinite(top) else np.zeros(len(v))

    def detect(self, i: int, j: int, step: Step, ks: slice) -> Detections:
        w = self._detection[ks]
        cand = w > 0
        self._candidates.setdefault((i, j), []).append(self.rows(step)[ks][cand])
        return Detections(w[None], w[None], w[None], w)

    def end(self, i: int, j: int, step: Step) -> None:
        """Read the completed cell by least squares over its written items (and, in a
        unary cell, the word's terminal): the amplitudes, the present items and their
        scores as read."""
        rows, a = self.solve_cell(i, j, step, self.readout(i, j))
        self.stats[i, j, rows] = a / FLOOR
        on = a > self._present
        best = self.best[(i, j)]
        self.read_scores[(i, j)] = (rows[on], score_of(a[on], best, self.beam))

    def extra_counts(self) -> dict[str, int]:
        """``{"beam_cut": items left unwritten for being beyond the beam}``."""
        return {"beam_cut": self.beam_cut}

    def table_scores(self) -> dict[tuple[int, int, str], float]:
        """``{(i, j, A): score as read}`` of every present item (``DCYKResult.table_scores``)."""
        names = self.tables.nonterminals
        return {
            (i, j, names[r]): float(v)
            for (i, j), (rows, values) in self.read_scores.items()
            for r, v in zip(rows, values, strict=True)
        }

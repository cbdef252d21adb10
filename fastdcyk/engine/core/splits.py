"""The candidates' rule layer over every split of a cell in one compiled pass.

The least-squares read-backs score every nonterminal of a read cell sigma(0) but its
candidates (docs/method.md, section 7), so a binary cell's detection is a constant plus the
terms of the rules with a candidate child (:func:`fastdcyk.engine.core.rules.candidate_rule_layer`,
which the torch backend uses and which states what this module computes). Visited split by
split from Python, a cell of width w costs w - 1 rounds of small array calls: at small d and
for long sentences (the capacity model at hundreds of words) that, not the arithmetic, is
the parse. :class:`CandidateChart` keeps every read cell's candidates and their clean scores
in flat arrays, and its :meth:`~CandidateChart.layer` runs one Numba kernel over every split
of a cell.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from fastdcyk.engine.core.rules import RuleStructure

__all__ = ["CandidateChart"]


@njit(cache=True, nogil=True)
def _layer(
    t,
    i,
    j,
    start,
    count,
    rows,
    deltas,
    lorder,
    lptr,
    rorder,
    rptr,
    rule_row,
    rule_right,
    w,
    base,
    dense,
):  # pragma: no cover - compiled
    for k in range(i + 1, j):
        ls, ln = start[i, k], count[i, k]
        rs, rn = start[k, j], count[k, j]
        for q in range(rs, rs + rn):  # the right cell's candidates, dense
            dense[rows[q]] = deltas[q]
        for p in range(ls, ls + ln):  # rules whose left child is a candidate
            b, db = rows[p], deltas[p]
            for x in range(lptr[b], lptr[b + 1]):
                r = lorder[x]
                t[rule_row[r]] += w[r] * db * (base + dense[rule_right[r]])
        for q in range(rs, rs + rn):  # rules whose right child is one (its base part)
            c, dc = rows[q], deltas[q]
            for x in range(rptr[c], rptr[c + 1]):
                r = rorder[x]
                t[rule_row[r]] += w[r] * base * dc
            dense[c] = 0.0


class CandidateChart:
    """The read cells of one sentence: each one's candidates and their clean scores less
    sigma(0), in flat float64 arrays that grow as cells are read.

    Parameters
    ----------
    structure : RuleStructure
        The grammar's rules.
    n : int
        The sentence's length.
    base : float
        sigma(0): the clean score of every nonterminal that is no candidate.
    rule_weights : ndarray, optional
        Per binary rule (grammar order), a factor on its product (default 1).
    """

    def __init__(
        self,
        structure: RuleStructure,
        n: int,
        base: float,
        rule_weights: np.ndarray | None = None,
    ) -> None:
        st = self.structure = structure
        self.base = float(base)
        self.start = np.zeros((n + 1, n + 1), np.int64)
        self.count = np.zeros((n + 1, n + 1), np.int64)
        size = max(16, 4 * (n + 1) * (n + 2) // 2)
        self.rows = np.zeros(size, np.int64)
        self.deltas = np.zeros(size, np.float64)
        self.size = 0
        self.dense = np.zeros(len(st.nonterminals), np.float64)
        if rule_weights is None:
            self.weights = np.ones(st.n_binary_rules, np.float64)
            self.sums = st.binary_rule_counts.astype(np.float64)
        else:
            self.weights = np.ascontiguousarray(rule_weights, np.float64)
            self.sums = np.zeros(len(st.binary), np.float64)
            np.add.at(self.sums, st.binary_rule_row, self.weights)
        self._lorder, self._lptr = (a.astype(np.int64) for a in st.rules_by_left)
        self._rorder, self._rptr = (a.astype(np.int64) for a in st.rules_by_right)
        self._row = st.binary_rule_row.astype(np.int64)
        self._right = st.binary_rule_right.astype(np.int64)

    def reserve(self, extra: int) -> None:
        """Room for ``extra`` more candidates in the flat arrays (a compiled caller adds
        them itself)."""
        end = self.size + extra
        if end > len(self.rows):
            grow = max(end, 2 * len(self.rows))
            self.rows = np.concatenate([self.rows, np.zeros(grow - len(self.rows), np.int64)])
            self.deltas = np.concatenate([self.deltas, np.zeros(grow - len(self.deltas))])

    def kernel_arrays(self) -> tuple:
        """What :meth:`layer`'s kernel reads, for a compiled caller that adds cells itself
        (:mod:`fastdcyk.engine.modes.cleanup.columns`; :meth:`reserve` first, which may
        replace the flat arrays): the cells' starts and counts, the flat rows and deltas,
        the dense scratch, the rules by left and by right child, each rule's parent row and
        right child, the rules' weights, their sums per parent, sigma(0)."""
        return (
            self.start,
            self.count,
            self.rows,
            self.deltas,
            self.dense,
            self._lorder,
            self._lptr,
            self._rorder,
            self._rptr,
            self._row,
            self._right,
            self.weights,
            self.sums,
            self.base,
        )

    def add(self, i: int, j: int, rows: np.ndarray, deltas: np.ndarray) -> None:
        """Record cell (i, j) as read: its candidates ``rows`` with clean scores less
        sigma(0) ``deltas``."""
        k = len(rows)
        end = self.size + k
        self.reserve(k)
        self.rows[self.size : end] = rows
        self.deltas[self.size : end] = deltas
        self.start[i, j], self.count[i, j] = self.size, k
        self.size = end

    def layer(self, i: int, j: int) -> np.ndarray:
        """The clean-score rule layer of binary cell (i, j), float64, one entry per
        nonterminal of ``structure.binary``: the sum over its splits of the rules' products
        of their children's clean scores (equal, to rounding, to
        :func:`~fastdcyk.engine.core.rules.candidate_rule_layer`)."""
        t = self.sums * ((j - i - 1) * self.base * self.base)
        start, count, rows, deltas, dense, *rules, weights, _, base = self.kernel_arrays()
        _layer(t, i, j, start, count, rows, deltas, *rules, weights, base, dense)
        return t

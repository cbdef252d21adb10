"""A grammar's rule operators for one codebook, as arrays: one row per nonterminal.

D-CYK's rule operators are single circulants (docs/method.md, section 2): R_u^A = sum over
A -> a of [a]+ is ``C Phi`` with the summed terminal spectra, and R_b^A = sum over A -> B C of
[B]+ [C]- is ``C`` with spectrum ``sum spec(B) conj(spec(C))`` (Phi Phi^T cancels). With
``encoding="roles"`` the right child is written into P_right and read by R_b under its own
vector C' (``[B]+ [C']-``), so that a rule A -> B B no longer reduces to the identity. Stacking
them as matrices lets the engine read every nonterminal of a cell with one matrix product
instead of one pass per nonterminal, and builds them once per (codebook, grammar) with a few
vectorised operations, not one Operator per rule.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from fastdcyk.engine.core.arrays import NUMPY, ArrayNamespace

if TYPE_CHECKING:  # pragma: no cover
    from fastdcyk.cfg.grammar import Grammar
    from fastdcyk.hrr.codebook import Codebook

__all__ = [
    "CellCandidates",
    "RuleStructure",
    "RuleTables",
    "candidate_rule_layer",
    "cell_splits",
    "lexical_layer",
    "parseval_weights",
    "cell_candidates",
    "rule_layer",
    "rule_structure",
    "rules_of",
    "rule_tables",
]

#: Tables of the last few grammars parsed with each codebook.
_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_PER_CODEBOOK = 8


@dataclass(frozen=True, eq=False)
class RuleTables:
    """The rule spectra of one grammar in one codebook.

    Attributes
    ----------
    nonterminals : tuple of str
        The grammar's nonterminals, in grammar order; rows of the arrays below follow it.
    vectors : ndarray, (N, d), codebook dtype
        The nonterminals' vectors v_A.
    spectra : ndarray, (N, d // 2 + 1), codebook complex dtype
        Their spectra: the circulant of [A]- written into P_left and read by the decoder.
    right_spectra : ndarray, (N, d // 2 + 1), codebook complex dtype
        The circulant of [A]+ written into P_right: ``spectra`` itself with the paper's
        encoding, the right-child role vectors A' with ``encoding="roles"``.
    unary : ndarray of int, (U,)
        Rows (into ``nonterminals``) of the nonterminals with a rule A -> a, in grammar order.
    unary_spectra : ndarray, (U, d // 2 + 1), complex128
        Spectrum of the circulant of R_u^A = C Phi: the sum of its terminals' spectra.
    binary : ndarray of int, (B,)
        Rows of the nonterminals with a rule A -> B C.
    binary_spectra : ndarray, (B, d // 2 + 1), complex128
        Spectrum of R_b^A: the sum over its rules of spec(B) conj(right_spec(C)).
    """

    nonterminals: tuple[str, ...]
    vectors: np.ndarray
    spectra: np.ndarray
    right_spectra: np.ndarray
    unary: np.ndarray
    unary_spectra: np.ndarray
    binary: np.ndarray
    binary_spectra: np.ndarray

    @property
    def unary_names(self) -> list[str]:
        return [self.nonterminals[k] for k in self.unary]

    @property
    def binary_names(self) -> list[str]:
        return [self.nonterminals[k] for k in self.binary]


@dataclass(frozen=True, eq=False)
class RuleStructure:
    """A CNF grammar's rules as index arrays, in the row order of the engine's rule tables.

    One structure per grammar serves every backend: the numpy backend's
    :class:`RuleTables` sum the symbol spectra of a codebook over these rules
    (docs/method.md, section 4.1), the torch backend forms the same sums from its symbol
    vectors (so that gradients flow to the vectors and to per-rule weights), and the
    capacity model counts rules with them.

    Attributes
    ----------
    nonterminals : tuple of str
        In grammar order (rows of the nonterminal vectors and of the statistics).
    terminals : tuple of str
        In grammar order (rows of the terminal vectors).
    unary : ndarray of int, (U,)
        Rows of the nonterminals with a rule A -> a, in grammar order.
    unary_rule_row, unary_rule_terminal : ndarray of int, (number of rules A -> a,)
        Per rule A -> a (grammar order): the position of A in ``unary``, and a's row.
    binary : ndarray of int, (Bn,)
        Rows of the nonterminals with a rule A -> B C.
    binary_rule_row, binary_rule_left, binary_rule_right : ndarray of int
        Per rule A -> B C (grammar order): the position of A in ``binary``, B's and C's rows.
    """

    nonterminals: tuple[str, ...]
    terminals: tuple[str, ...]
    unary: np.ndarray
    unary_rule_row: np.ndarray
    unary_rule_terminal: np.ndarray
    binary: np.ndarray
    binary_rule_row: np.ndarray
    binary_rule_left: np.ndarray
    binary_rule_right: np.ndarray

    @property
    def n_unary_rules(self) -> int:
        return len(self.unary_rule_row)

    @property
    def n_binary_rules(self) -> int:
        return len(self.binary_rule_row)

    @functools.cached_property
    def rules_by_left(self) -> tuple[np.ndarray, np.ndarray]:
        """The binary rules grouped by left child: (order, ptr), rules ``order[ptr[B]:
        ptr[B + 1]]`` have left child B."""
        return _group(self.binary_rule_left, len(self.nonterminals))

    @functools.cached_property
    def rules_by_right(self) -> tuple[np.ndarray, np.ndarray]:
        """The binary rules grouped by right child, as :attr:`rules_by_left`."""
        return _group(self.binary_rule_right, len(self.nonterminals))

    @functools.cached_property
    def rules_by_parent(self) -> tuple[np.ndarray, np.ndarray]:
        """The binary rules grouped by parent (its row in ``nonterminals``), as
        :attr:`rules_by_left`."""
        return _group(self.binary[self.binary_rule_row], len(self.nonterminals))

    @functools.cached_property
    def lexicon(self) -> np.ndarray:
        """The rows (into ``terminals``) of the terminals of the rules A -> a, ascending:
        the grammar's lexicon, whose clean scores the clean-up gate reads in a unary cell."""
        used = np.unique(self.unary_rule_terminal)
        used.setflags(write=False)
        return used

    @functools.cached_property
    def lexicon_rows(self) -> np.ndarray:
        """Each terminal's position in :attr:`lexicon` (-1 for a terminal of no rule A -> a)."""
        rows = np.full(len(self.terminals), -1, np.intp)
        rows[self.lexicon] = np.arange(len(self.lexicon))
        rows.setflags(write=False)
        return rows

    @functools.cached_property
    def binary_rule_counts(self) -> np.ndarray:
        """How many rules A -> B C each nonterminal of ``binary`` has (float64)."""
        return np.bincount(self.binary_rule_row, minlength=len(self.binary)).astype(np.float64)

    def terminal_ids(self, words: Sequence[str]) -> list[int]:
        """Rows of the words (terminals of the grammar, in Unicode NFC)."""
        pos = {t: k for k, t in enumerate(self.terminals)}
        return [pos[w] for w in words]


@functools.lru_cache(maxsize=8)
def rule_structure(grammar: Grammar) -> RuleStructure:
    """The :class:`RuleStructure` of a CNF grammar (the last few are kept).

    Parameters
    ----------
    grammar : Grammar

    Returns
    -------
    RuleStructure
    """
    nts = tuple(grammar.nonterminals)
    index = grammar.nonterminal_index
    terms = tuple(grammar.terminals)
    tpos = {t: k for k, t in enumerate(terms)}
    unary = sorted({index[a] for a, _ in grammar.unary_rules})
    urow = {a: r for r, a in enumerate(unary)}
    binary = sorted({index[a] for a, _, _ in grammar.binary_rules})
    brow = {a: r for r, a in enumerate(binary)}
    rules_b = grammar.binary_rules

    def arr(values: Any) -> np.ndarray:
        a = np.array(list(values), dtype=np.int64)
        a.setflags(write=False)  # shared by every parse of the grammar
        return a

    return RuleStructure(
        nonterminals=nts,
        terminals=terms,
        unary=arr(unary),
        unary_rule_row=arr(urow[index[a]] for a, _ in grammar.unary_rules),
        unary_rule_terminal=arr(tpos[t] for _, t in grammar.unary_rules),
        binary=arr(binary),
        binary_rule_row=arr(brow[index[a]] for a, _, _ in rules_b),
        binary_rule_left=arr(index[b] for _, b, _ in rules_b),
        binary_rule_right=arr(index[c] for _, _, c in rules_b),
    )


def _build(cb: Codebook, grammar: Grammar, encoding: str, rules: bool) -> RuleTables:
    st = rule_structure(grammar)
    nts = st.nonterminals
    spectra = cb.spectra("nonterminal", nts)
    right_spectra = cb.spectra("right", nts) if encoding == "roles" else spectra
    vectors = cb.vectors("nonterminal", nts)
    h = cb.d // 2 + 1

    unary_spectra = np.zeros((len(st.unary) if rules else 0, h), np.complex128)
    if st.n_unary_rules and rules:
        used = np.unique(st.unary_rule_terminal)
        tspec = np.zeros((len(st.terminals), h), np.complex128)
        tspec[used] = cb.spectra("terminal", [st.terminals[t] for t in used])
        np.add.at(unary_spectra, st.unary_rule_row, tspec[st.unary_rule_terminal])

    binary_spectra = np.zeros((len(st.binary) if rules else 0, h), np.complex128)
    if st.n_binary_rules and rules:
        s128 = spectra.astype(np.complex128)
        r128 = right_spectra.astype(np.complex128)
        rows, left, right = st.binary_rule_row, st.binary_rule_left, st.binary_rule_right
        step = max(1, (1 << 22) // h)  # rules per chunk: bounded temporaries for huge grammars
        for k in range(0, len(rows), step):
            prod = s128[left[k : k + step]] * np.conj(r128[right[k : k + step]])
            np.add.at(binary_spectra, rows[k : k + step], prod)

    for a in (spectra, right_spectra, vectors, unary_spectra, binary_spectra):
        a.setflags(write=False)
    return RuleTables(
        nonterminals=nts,
        vectors=vectors,
        spectra=spectra,
        right_spectra=right_spectra,
        unary=st.unary.astype(np.intp),
        unary_spectra=unary_spectra,
        binary=st.binary.astype(np.intp),
        binary_spectra=binary_spectra,
    )


def lexical_layer(
    st: RuleStructure,
    scores: Any,
    columns: np.ndarray | None = None,
    *,
    rule_weights: Any = None,
    xp: ArrayNamespace = NUMPY,
) -> Any:
    """The clean-up gate's unary detections: t_A = sum over rules A -> a of the word's clean
    score for a (times the rule's weight, when given; docs/method.md, section 6), for the
    nonterminals ``st.unary``.

    ``scores`` (..., C): clean scores of terminals, column ``columns[k]`` for terminal k of
    ``st.terminals`` (``columns`` None: one column per terminal, in that order).
    """
    cols = st.unary_rule_terminal if columns is None else columns[st.unary_rule_terminal]
    c = xp.take(scores, cols)
    if rule_weights is not None:
        c = c * rule_weights
    return xp.index_add(xp.zeros((*c.shape[:-1], len(st.unary)), c), st.unary_rule_row, c)


def rule_layer(
    st: RuleStructure,
    cell: Callable[[int, int], Any],
    i: int,
    j: int,
    *,
    rule_weights: Any = None,
    xp: ArrayNamespace = NUMPY,
) -> Any:
    """The clean-up gate's binary detections of cell (i, j): t_A = sum over splits k and
    rules A -> B C of c(i, k, B) c(k, j, C) (times the rule's weight, when given), for the
    nonterminals ``st.binary``; ``cell(i, k)`` gives the clean scores (..., N) of a cell."""
    t = None
    for k in range(i + 1, j):
        left, right = cell(i, k), cell(k, j)
        pairs = xp.take(left, st.binary_rule_left) * xp.take(right, st.binary_rule_right)
        if rule_weights is not None:
            pairs = pairs * rule_weights
        if t is None:
            t = xp.zeros((*pairs.shape[:-1], len(st.binary)), pairs)
        t = xp.index_add(t, st.binary_rule_row, pairs)
    return t


@dataclass(frozen=True, eq=False)
class CellCandidates:
    """A cell read by the least-squares read-back, as :func:`candidate_rule_layer` takes it
    (:func:`cell_candidates` makes one): its candidates, their scores, and their rules, found
    once for every split the cell is a child of.

    Attributes
    ----------
    rows : ndarray of int
        The candidates' rows (for a batch, those of any of its sentences).
    deltas : array, (..., len(rows) + 1)
        Their clean scores less the base, and a 0 past the last (what a child that is no
        candidate reads).
    left_rules, right_rules : ndarray of int
        The binary rules whose left (right) child is a candidate, candidate by candidate.
    left_at, right_at : ndarray of int
        The position in ``rows`` of each such rule's candidate child.
    left_rule_rows, right_rule_rows : ndarray of int
        Their parents' positions in ``structure.binary``.
    left_partners : ndarray of int
        The right child of each rule of ``left_rules``.
    positions : ndarray of int
        ``arange(len(rows))``.
    """

    rows: np.ndarray
    deltas: Any
    left_rules: np.ndarray
    left_at: np.ndarray
    left_rule_rows: np.ndarray
    left_partners: np.ndarray
    right_rules: np.ndarray
    right_at: np.ndarray
    right_rule_rows: np.ndarray
    positions: np.ndarray


def cell_candidates(
    st: RuleStructure, rows: np.ndarray, deltas: Any, xp: ArrayNamespace = NUMPY
) -> CellCandidates:
    """The :class:`CellCandidates` of a cell whose candidates ``rows`` read ``deltas`` (their
    clean scores less the base, (..., len(rows)))."""
    rows = np.asarray(rows)
    left_rules, left_at = rules_of(st.rules_by_left, rows, positions=True)
    right_rules, right_at = rules_of(st.rules_by_right, rows, positions=True)
    return CellCandidates(
        rows=rows,
        deltas=xp.pad_zero(deltas),
        left_rules=left_rules,
        left_at=left_at,
        left_rule_rows=st.binary_rule_row[left_rules],
        left_partners=st.binary_rule_right[left_rules],
        right_rules=right_rules,
        right_at=right_at,
        right_rule_rows=st.binary_rule_row[right_rules],
        positions=np.arange(len(rows)),
    )


def candidate_rule_layer(
    st: RuleStructure,
    splits: Iterable[tuple[CellCandidates, CellCandidates]],
    base: float,
    scratch: np.ndarray,
    *,
    rule_sums: Any = None,
    rule_weights: Any = None,
    xp: ArrayNamespace = NUMPY,
) -> Any:
    """:func:`rule_layer` where every clean score is ``base`` but those of each cell's
    candidates, without a pass over every rule.

    ``splits`` gives, for each split k of cell (i, j), the read cells (i, k) and (k, j)
    (:class:`CellCandidates`). With s = base + delta, a rule's product is base^2 + base delta_B +
    base delta_C + delta_B delta_C: the first term is the same for every rule, and the
    others are non-zero only for the rules whose left or right child is a candidate (those
    each read cell found once, through :attr:`RuleStructure.rules_by_left` and
    :attr:`~RuleStructure.rules_by_right`). The least-squares read-back scores every
    non-candidate sigma(0) exactly (its amplitude is 0), so this is :func:`rule_layer` to
    rounding, at a cost that follows the candidates' rules instead of the grammar's.

    ``scratch``: an int array of -1, one entry per nonterminal, lent by the caller for the
    positions of candidates (left as it was found). ``rule_sums``: per nonterminal of
    ``st.binary``, the sum of its rules' weights (default their counts).
    """
    splits = list(splits)
    sums = st.binary_rule_counts if rule_sums is None else rule_sums
    t = sums * (len(splits) * base * base)
    # every split's read cells side by side (each with its zero past the last candidate),
    # and the rules' positions there: three gathers for the whole cell, not three a split
    parts, offset = [], 0
    at_left, beside_left, at_right = [], [], []
    parents_left, rules_left, parents_right, rules_right = [], [], [], []
    for left, right in splits:
        lo, ro = offset, offset + len(left.rows) + 1
        offset = ro + len(right.rows) + 1
        parts += [left.deltas, right.deltas]
        # a rule by its left child whose right child is no candidate reads delta 0: the
        # zero past the right cell's last candidate
        scratch[right.rows] = right.positions
        beside = scratch[left.left_partners]
        scratch[right.rows] = -1
        beside[beside < 0] = len(right.rows)
        at_left.append(lo + left.left_at)
        beside_left.append(ro + beside)
        at_right.append(ro + right.right_at)
        parents_left.append(left.left_rule_rows)
        rules_left.append(left.left_rules)
        parents_right.append(right.right_rule_rows)
        rules_right.append(right.right_rules)
    if not parts:
        return t
    by_left_at, by_right_at = np.concatenate(at_left), np.concatenate(at_right)
    if not len(by_left_at) + len(by_right_at):
        return t
    deltas = xp.concat(parts)
    by_left = xp.take(deltas, by_left_at) * (base + xp.take(deltas, np.concatenate(beside_left)))
    values = xp.concat((by_left, base * xp.take(deltas, by_right_at)))
    if rule_weights is not None:
        values = values * xp.take(rule_weights, np.concatenate(rules_left + rules_right))
    return xp.index_add(t, np.concatenate(parents_left + parents_right), values)


def cell_splits(
    cells: Mapping[tuple[int, int], CellCandidates], i: int, j: int
) -> list[tuple[CellCandidates, CellCandidates]]:
    """The splits of cell (i, j) for :func:`candidate_rule_layer`: the pairs of read
    ``cells`` (i, k) and (k, j)."""
    return [(cells[(i, k)], cells[(k, j)]) for k in range(i + 1, j)]


def _group(child: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(child, kind="stable")
    ptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(child, minlength=n), out=ptr[1:])
    order.setflags(write=False)
    ptr.setflags(write=False)
    return order, ptr


def rules_of(
    grouped: tuple[np.ndarray, np.ndarray], symbols: np.ndarray, *, positions: bool = False
) -> Any:
    """The rules (indices) of the groups of ``symbols`` (:func:`_group`), group by group;
    with ``positions``, also the position in ``symbols`` of each rule's symbol."""
    order, ptr = grouped
    starts, counts = ptr[symbols], ptr[symbols + 1] - ptr[symbols]
    total = int(counts.sum())
    if total == 0:
        none = np.zeros(0, np.int64)
        return (none, none) if positions else none
    offsets = np.repeat(starts - np.cumsum(counts) + counts, counts)
    rules = order[offsets + np.arange(total)]
    if positions:
        return rules, np.repeat(np.arange(len(symbols)), counts)
    return rules


def parseval_weights(d: int) -> np.ndarray:
    """w_f with sum_k a_k b_k = (1/d) sum_f w_f Re(A_f conj(B_f)) over the rfft half-spectrum."""
    w = np.full(d // 2 + 1, 2.0)
    w[0] = 1.0
    if d % 2 == 0:
        w[-1] = 1.0
    return w


def rule_tables(
    cb: Codebook, grammar: Grammar, encoding: str = "paper", *, rules: bool = True
) -> RuleTables:
    """The :class:`RuleTables` of ``grammar`` in ``cb`` for an encoding, cached per codebook.

    ``rules=False`` leaves the rule spectra out (empty): the clean-up gate applies the rules
    to clean scores and needs only the nonterminals' spectra.

    The caller holds the codebook's lock (a parse or a decoding does).
    """
    per = _CACHE.get(cb)
    if per is None:
        per = {}
        _CACHE[cb] = per
    tables = per.get((grammar, encoding, rules))
    if tables is None:
        tables = _build(cb, grammar, encoding, rules)
        if len(per) >= _PER_CODEBOOK:
            per.pop(next(iter(per)))
        per[grammar, encoding, rules] = tables
    return tables

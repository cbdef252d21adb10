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

import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from fastdcyk.codebook import Codebook
    from fastdcyk.grammar import Grammar

__all__ = ["RuleTables", "rule_tables"]

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


def _grouped_sum(rows: np.ndarray, values: np.ndarray, n_groups: int) -> np.ndarray:
    out = np.zeros((n_groups, values.shape[1]), dtype=values.dtype)
    np.add.at(out, rows, values)
    return out


def _build(cb: Codebook, grammar: Grammar, encoding: str) -> RuleTables:
    nts = tuple(grammar.nonterminals)
    index = grammar.nonterminal_index
    spectra = np.stack([cb.spectrum("nonterminal", a) for a in nts])
    if encoding == "roles":
        right_spectra = np.stack([cb.spectrum("right", a) for a in nts])
    else:
        right_spectra = spectra
    vectors = np.stack([cb.vector("nonterminal", a) for a in nts])
    h = cb.d // 2 + 1

    unary_lhs = sorted({index[a] for a, _ in grammar.unary_rules})
    if unary_lhs:
        terms = list(dict.fromkeys(t for _, t in grammar.unary_rules))
        tpos = {t: k for k, t in enumerate(terms)}
        tspec = np.stack([cb.spectrum("terminal", t) for t in terms]).astype(np.complex128)
        row_of = {a: r for r, a in enumerate(unary_lhs)}
        rows = np.array([row_of[index[a]] for a, _ in grammar.unary_rules], dtype=np.intp)
        cols = np.array([tpos[t] for _, t in grammar.unary_rules], dtype=np.intp)
        unary_spectra = _grouped_sum(rows, tspec[cols], len(unary_lhs))
    else:
        unary_spectra = np.zeros((0, h), np.complex128)

    binary_lhs = sorted({index[a] for a, _, _ in grammar.binary_rules})
    if binary_lhs:
        s128 = spectra.astype(np.complex128)
        r128 = right_spectra.astype(np.complex128)
        row_of = {a: r for r, a in enumerate(binary_lhs)}
        rules = grammar.binary_rules
        rows = np.array([row_of[index[a]] for a, _, _ in rules], dtype=np.intp)
        left = np.array([index[b] for _, b, _ in rules], dtype=np.intp)
        right = np.array([index[c] for _, _, c in rules], dtype=np.intp)
        binary_spectra = np.zeros((len(binary_lhs), h), np.complex128)
        step = max(1, (1 << 22) // h)  # rules per chunk: bounded temporaries for huge grammars
        for k in range(0, len(rules), step):
            prod = s128[left[k : k + step]] * np.conj(r128[right[k : k + step]])
            np.add.at(binary_spectra, rows[k : k + step], prod)
    else:
        binary_spectra = np.zeros((0, h), np.complex128)

    for a in (spectra, right_spectra, vectors, unary_spectra, binary_spectra):
        a.setflags(write=False)
    return RuleTables(
        nonterminals=nts,
        vectors=vectors,
        spectra=spectra,
        right_spectra=right_spectra,
        unary=np.array(unary_lhs, dtype=np.intp),
        unary_spectra=unary_spectra,
        binary=np.array(binary_lhs, dtype=np.intp),
        binary_spectra=binary_spectra,
    )


def rule_tables(cb: Codebook, grammar: Grammar, encoding: str = "paper") -> RuleTables:
    """The :class:`RuleTables` of ``grammar`` in ``cb`` for an encoding, cached per codebook.

    The caller holds the codebook's lock (a parse or a decoding does).
    """
    per = _CACHE.get(cb)
    if per is None:
        per = {}
        _CACHE[cb] = per
    tables = per.get((grammar, encoding))
    if tables is None:
        tables = _build(cb, grammar, encoding)
        if len(per) >= _PER_CODEBOOK:
            per.pop(next(iter(per)))
        per[grammar, encoding] = tables
    return tables

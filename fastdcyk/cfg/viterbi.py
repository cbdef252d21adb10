"""Symbolic Viterbi and inside CKY over a weighted grammar: the oracle for weights.

For a probabilistic grammar in CNF (:attr:`Grammar.is_weighted
<fastdcyk.cfg.grammar.Grammar.is_weighted>`), :func:`viterbi` finds the most probable tree of
a sentence and :func:`inside` its probability (the sum over its trees), as :func:`~fastdcyk.
cfg.cyk.cyk` is the oracle for charts. Both can be restricted to a chart (a D-CYK parse's
decoded chart: the most probable tree among the trees that chart admits).

Each cell is a float64 vector of log scores over the nonterminals; a cell is filled from its
splits with one gather per child over the binary rules (sorted by left side) and a
segmented maximum (or log-sum-exp) per left side, so the work is numpy's, not Python's:
about ``n^3 / 6`` vector operations of the length of the rule list.

Examples
--------
>>> from fastdcyk.cfg.grammar import Grammar
>>> g = Grammar.from_string(
...     "S -> S S [0.4] | 'a' [0.6]"
... )
>>> best = viterbi(g, "a a a")  # two trees, each of probability 0.4^2 * 0.6^3
>>> print(best.tree)
(S (S a) (S (S a) (S a)))
>>> round(best.log_prob, 4), round(inside(g, "a a a"), 4)
(-3.3651, -2.6719)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from fastdcyk.cfg.cyk import UnknownWordError, _words
from fastdcyk.cfg.grammar import Grammar, GrammarError, Rule, Symbol, as_grammar
from fastdcyk.cfg.trees import Tree, un_cnf
from fastdcyk.cfg.weights import check_chart, check_lexical
from fastdcyk.options import check_beam

__all__ = ["ViterbiParse", "inside", "item_scores", "tree_from_scores", "viterbi"]


class ViterbiParse(NamedTuple):
    """The most probable tree of a sentence and its log probability.

    Attributes
    ----------
    tree : Tree or None
        The tree (in the grammar the user wrote when the grammar came from ``to_cnf``,
        unless ``cnf=True``); None when the sentence has no tree.
    log_prob : float
        The natural log of its probability (the sum of its rules' log probabilities);
        ``-inf`` when there is no tree.
    """

    tree: Tree | None
    log_prob: float


class _Tables:
    """A weighted CNF grammar's rules as arrays (binary rules sorted by left side)."""

    def __init__(self, grammar: Grammar) -> None:
        index = grammar.nonterminal_index
        rows = [
            (index[a], index[b], index[c], grammar.log_prob(_binary(a, b, c)), k)
            for k, (a, b, c) in enumerate(grammar.binary_rules)
        ]
        rows.sort(key=lambda r: (r[0], r[4]))  # by left side, then the grammar's order
        self.n = len(grammar.nonterminals)
        self.lhs = np.array([r[0] for r in rows], dtype=np.int64)
        self.left = np.array([r[1] for r in rows], dtype=np.int64)
        self.right = np.array([r[2] for r in rows], dtype=np.int64)
        self.log_prob = np.array([r[3] for r in rows], dtype=np.float64)
        starts = np.flatnonzero(np.r_[True, self.lhs[1:] != self.lhs[:-1]]) if rows else []
        self.starts = np.asarray(starts, dtype=np.int64)
        self.heads = self.lhs[self.starts]
        self.ends = np.r_[self.starts[1:], len(rows)].astype(np.int64)
        lexicon: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        by_word: dict[str, list[tuple[int, float]]] = {}
        for a, word in grammar.unary_rules:
            by_word.setdefault(word, []).append(
                (index[a], grammar.log_prob(Rule(a, (Symbol(word, True),))))
            )
        for word, pairs in by_word.items():
            lexicon[word] = (
                np.array([p[0] for p in pairs], dtype=np.int64),
                np.array([p[1] for p in pairs], dtype=np.float64),
            )
        self.lexicon = lexicon


def _binary(a: str, b: str, c: str) -> Rule:
    return Rule(a, (Symbol(b, False), Symbol(c, False)))


@lru_cache(maxsize=8)
def _cached_tables(grammar: Grammar) -> _Tables:
    return _Tables(grammar)


def _tables(grammar: Grammar) -> _Tables:
    if not isinstance(grammar, Grammar):
        raise TypeError(f"grammar must be a fastdcyk.Grammar, got {type(grammar).__name__}")
    if not grammar.is_cnf:
        raise GrammarError(
            "Viterbi CKY needs a grammar in Chomsky normal form; convert it with "
            "Grammar.to_cnf() (a PCFG stays a PCFG)"
        )
    if not grammar.is_weighted:
        raise GrammarError(
            "the grammar has no probabilities: read a PCFG (rules written 'A -> B C [0.5]'), "
            "pass probs= to Grammar, or induce one from trees (fastdcyk.cfg.treebank)"
        )
    return _cached_tables(grammar)


def _mask(
    grammar: Grammar, chart: Mapping[tuple[int, int], Iterable[str]] | None, i: int, j: int
) -> np.ndarray | None:
    if chart is None:
        return None
    keep = np.zeros(len(grammar.nonterminals), dtype=bool)
    index = grammar.nonterminal_index
    keep[[index[a] for a in chart.get((i, j), ()) if a in index]] = True
    return keep


def _fill(
    grammar: Grammar,
    words: Sequence[str] | str,
    chart: Mapping[tuple[int, int], Iterable[str]] | None,
    mode: str,
    strict: bool,
    lexical: Sequence[Mapping[str, float] | None] | None = None,
    given: Mapping[tuple[int, int], np.ndarray] | None = None,
    beam: float | None = None,
):
    """The log-score table (and, for Viterbi, the back pointers) of a sentence. With
    ``given`` (per cell, a score per nonterminal, -inf for none), each derivable item's
    score is the given one instead of the computed one: the parents' choices follow it.
    With ``beam``, each cell's items more than ``beam`` below its best are dropped before
    its parents are computed."""
    grammar = as_grammar(grammar)  # or a built-in name or file
    t = _tables(grammar)
    tokens = Grammar.normalize_words(_words(words))
    n = len(tokens)
    check_chart("chart", chart, n)
    lexical = check_lexical(grammar, lexical, n)
    index = grammar.nonterminal_index
    score: dict[tuple[int, int], np.ndarray] = {}
    back: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
    for i, word in enumerate(tokens):
        cell = np.full(t.n, -np.inf)
        if lexical is not None and lexical[i] is not None:
            for a, v in lexical[i].items():
                cell[index[a]] = float(v)
        else:
            entry = t.lexicon.get(word)
            if entry is None and strict:
                raise UnknownWordError(word, i, grammar.terminal_like(word))
            if entry is not None:
                cell[entry[0]] = entry[1]
        keep = _mask(grammar, chart, i, i + 1)
        if keep is not None:
            cell[~keep] = -np.inf
        if given is not None:
            cell = _given(cell, given, i, i + 1)
        score[(i, i + 1)] = _pruned(cell, beam)
    n_rules = len(t.lhs)
    with np.errstate(invalid="ignore"):
        for span in range(2, n + 1):
            for i in range(n - span + 1):
                j = i + span
                best = np.full(n_rules, -np.inf)
                split = np.zeros(n_rules, dtype=np.int32)
                for k in range(i + 1, j):
                    s = score[(i, k)][t.left] + score[(k, j)][t.right]
                    if mode == "viterbi":
                        better = s > best
                        best[better] = s[better]
                        split[better] = k
                    else:
                        np.logaddexp(best, s, out=best)
                best += t.log_prob
                cell = np.full(t.n, -np.inf)
                if n_rules:
                    if mode == "viterbi":
                        heads = np.maximum.reduceat(best, t.starts)
                    else:
                        heads = np.logaddexp.reduceat(best, t.starts)
                    cell[t.heads] = heads
                keep = _mask(grammar, chart, i, j)
                if keep is not None:
                    cell[~keep] = -np.inf
                if given is not None:
                    cell = _given(cell, given, i, j)
                score[(i, j)] = _pruned(cell, beam)
                if mode == "viterbi" and n_rules:
                    back[(i, j)] = (best, split)
    return t, tokens, score, back


def _pruned(cell: np.ndarray, beam: float | None) -> np.ndarray:
    """``cell`` without its items more than ``beam`` below its best (in place)."""
    if beam is not None and len(cell) and np.isfinite(cell.max()):
        cell[cell < cell.max() - beam] = -np.inf
    return cell


def item_scores(
    grammar: Grammar, words: Sequence[str] | str, *, beam: float | None = None
) -> dict[tuple[int, int, str], float]:
    """Symbolic Viterbi's score of every item (i, j, A) that derives its words: the log
    probability of its best subtree.

    With ``beam``, each cell's items more than ``beam`` nats below its best are dropped
    before its parents are computed, as the weighted table (``weights="table"``,
    docs/method.md, section 10) prunes them: the scores that table computes, exactly (its
    oracle; an item whose best derivation went through a dropped item keeps its next best).

    Parameters
    ----------
    grammar : Grammar
        A weighted grammar in CNF.
    words : str or sequence of str
        Terminals of the grammar (a word it has no rule for leaves its cell empty).
    beam : float, optional
        In nats; None keeps every item.

    Returns
    -------
    dict
        ``{(i, j, A): score}``, finite scores only.

    Examples
    --------
    >>> import fastdcyk as fd
    >>> g = fd.Grammar.from_string("S -> A A [1.0]\\nA -> 'a' [0.5] | A A [0.5]")
    >>> scores = item_scores(g, "a a")
    >>> round(scores[0, 2, "S"], 4) == round(fd.viterbi(g, "a a").log_prob, 4)
    True
    """
    if beam is not None:
        beam = check_beam(beam)
        if isinstance(beam, str):
            raise ValueError("beam must be a finite number > 0 (nats) here, got 'auto'")
    _, _, score, _ = _fill(grammar, words, None, "viterbi", False, beam=beam)
    names = grammar.nonterminals
    return {
        (i, j, names[a]): float(cell[a])
        for (i, j), cell in score.items()
        for a in np.flatnonzero(np.isfinite(cell))
    }


def _given(cell: np.ndarray, given: Mapping, i: int, j: int) -> np.ndarray:
    """The given scores of cell (i, j) where the computed cell has a derivation."""
    other = given.get((i, j))
    if other is None:
        return np.full_like(cell, -np.inf)
    return np.where(np.isfinite(cell), other, -np.inf)


def _build(t: _Tables, names, tokens, back: dict, start: int, n: int) -> Tree:
    """The tree of the best rule and split of every item from the start symbol over (0, n)."""

    def build(i: int, j: int, a: int) -> Tree:
        if j == i + 1:
            return Tree(names[a], [tokens[i]])
        best, split = back[(i, j)]
        segment = int(np.searchsorted(t.heads, a))
        lo, hi = int(t.starts[segment]), int(t.ends[segment])
        r = lo + int(np.argmax(best[lo:hi]))
        k = int(split[r])
        return Tree(names[a], [build(i, k, int(t.left[r])), build(k, j, int(t.right[r]))])

    return build(0, n, start)


def viterbi(
    grammar: Grammar,
    words: Sequence[str] | str,
    *,
    chart: Mapping[tuple[int, int], Iterable[str]] | None = None,
    cnf: bool = False,
    strict: bool = False,
    lexical: Sequence[Mapping[str, float] | None] | None = None,
) -> ViterbiParse:
    """The most probable tree of ``words`` under a weighted CNF grammar (Viterbi CKY).

    Parameters
    ----------
    grammar : Grammar
        Weighted and in CNF (``Grammar.to_cnf()`` keeps a PCFG a PCFG).
    words : sequence of str, or str
        The sentence; a str is split on whitespace.
    chart : mapping ``{(i, j): nonterminals}``, optional
        Only items of this chart may enter the tree (a D-CYK parse's decoded chart); items
        that do not derive their words never do. Default: every item.
    cnf : bool
        Return the tree of the CNF grammar instead of the grammar it was made from.
    strict : bool
        If True, a word no rule produces is an error (:class:`~fastdcyk.cfg.cyk.
        UnknownWordError`); otherwise the sentence simply has no tree.
    lexical : sequence of mapping, optional
        One entry per word: None (the grammar's rules A -> word) or ``{A: log score}``
        over preterminals (nonterminals with a rule A -> a), which replaces them at that
        position: a tagger's log probabilities, or ``{tag: 0.0}`` for a given tag. The
        word itself then need not be a terminal (it is the tree's leaf). A tree's
        log score is its binary rules' log probabilities plus these.

    Returns
    -------
    ViterbiParse
        ``(tree, log_prob)``; ``(None, -inf)`` when the sentence has no tree. Among trees
        of equal probability, the first split point wins, then the rule first in the
        grammar's order.

    Raises
    ------
    GrammarError
        When the grammar is not in CNF or has no probabilities.
    ValueError
        When ``words`` is empty.
    """
    t, tokens, score, back = _fill(grammar, words, chart, "viterbi", strict, lexical)
    n = len(tokens)
    start = grammar.nonterminal_index[grammar.start]
    top = float(score[(0, n)][start])
    if top == -math.inf:
        return ViterbiParse(None, -math.inf)
    names = grammar.nonterminals

    tree = _build(t, names, tokens, back, start, n)
    return ViterbiParse(tree if cnf else un_cnf(tree, grammar, lexical=lexical is not None), top)


def inside(
    grammar: Grammar,
    words: Sequence[str] | str,
    *,
    chart: Mapping[tuple[int, int], Iterable[str]] | None = None,
    strict: bool = False,
    lexical: Sequence[Mapping[str, float] | None] | None = None,
) -> float:
    """The log probability of ``words``: the log of the sum over its trees (inside CKY).

    Parameters
    ----------
    grammar : Grammar
        Weighted and in CNF.
    words : sequence of str, or str
        The sentence.
    chart : mapping ``{(i, j): nonterminals}``, optional
        Only trees whose items are in this chart count.
    strict : bool
        As :func:`viterbi`.
    lexical : sequence of mapping, optional
        As :func:`viterbi`.

    Returns
    -------
    float
        ``-inf`` when the sentence has no tree.

    Raises
    ------
    GrammarError
        When the grammar is not in CNF or has no probabilities.
    """
    _, tokens, score, _ = _fill(grammar, words, chart, "inside", strict, lexical)
    return float(score[(0, len(tokens))][grammar.nonterminal_index[grammar.start]])


def tree_from_scores(
    grammar: Grammar,
    words: tuple[str, ...],
    read_scores: dict[tuple[int, int, str], float],
    *,
    cnf: bool = False,
) -> ViterbiParse:
    """The most probable tree as given item scores rank it (a D-CYK weighted table's,
    ``DCYKResult.table_scores``): top down from the start symbol over (0, n), each item's
    split and rule the ones whose children's scores plus the rule's log probability are
    largest, among the items that have a score and derive their words through items that
    have one. Its log probability is the tree's own (the sum of its rules'), not the
    scores'.

    Parameters
    ----------
    grammar : Grammar
        The weighted CNF grammar of the parse.
    words : tuple of str
    read_scores : dict
        ``{(i, j, A): score}`` of the items that may enter the tree (the Viterbi score of
        each, the log probability of its best subtree, as far as known).
    cnf : bool
        Return the CNF tree instead of the tree of the grammar it was made from.

    Returns
    -------
    ViterbiParse
        ``(None, -inf)`` when no tree of the start symbol over the sentence is made of
        scored items.

    Raises
    ------
    TypeError
        When ``grammar`` is not a grammar, ``read_scores`` not a mapping or a score not
        a number.
    ValueError
        When ``read_scores`` names a nonterminal the grammar does not have.
    """
    _tables(grammar)  # a weighted CNF grammar
    if not isinstance(read_scores, Mapping):
        raise TypeError(
            f"read_scores must be a mapping {{(i, j, A): score}}, got {type(read_scores).__name__}"
        )
    tokens = Grammar.normalize_words(_words(words))
    if not tokens:
        raise ValueError("the sentence is empty")
    index, nn = grammar.nonterminal_index, len(grammar.nonterminals)
    given: dict[tuple[int, int], np.ndarray] = {}
    for (i, j, a), v in read_scores.items():
        if a not in index:
            raise ValueError(f"read_scores names {a!r}, which is not a nonterminal of the grammar")
        if isinstance(v, bool) or not isinstance(v, int | float | np.integer | np.floating):
            raise TypeError(f"read_scores[{(i, j, a)!r}] is {v!r}, not a number")
        if math.isfinite(v):  # an item scored -inf (or nan) has no derivation to offer
            given.setdefault((i, j), np.full(nn, -np.inf))[index[a]] = float(v)
    t, tokens, score, back = _fill(grammar, tokens, None, "viterbi", False, given=given)
    n, start = len(tokens), index[grammar.start]
    if not math.isfinite(score[(0, n)][start]):
        return ViterbiParse(None, -math.inf)
    tree = _build(t, grammar.nonterminals, tokens, back, start, n)
    # the tree's own log probability, not the scores'
    total = sum(grammar.log_prob(rule) for rule in tree.productions())
    return ViterbiParse(tree if cnf else un_cnf(tree, grammar), total)

"""The packed forest of a chart: its parse trees counted, enumerated, ranked.

A chart ``{(i, j): nonterminals}`` (symbolic CYK's or one decoded by D-CYK) admits the parse
trees built from its items with the grammar's rules. :class:`Forest` packs them: it counts
them, enumerates them lazily (the t-th tree is built from the counts, without building the
others), finds the best and the k best under a score per item, and the tree closest to a
given one. Only items that derive their words with the grammar's rules enter the forest,
so every tree of a forest is a parse of the sentence, whatever false items the chart holds.
Its trees are :class:`fastdcyk.cfg.trees.Tree` of the grammar the user wrote, or of its CNF
with ``cnf=True``; what "best" means and why: docs/method.md, section 9.

Examples
--------
>>> from fastdcyk.cfg.grammar import Grammar
>>> g = Grammar.builtin("example")
>>> forest = Forest(g, "a a b")
>>> forest.recognized, forest.count
(True, 1)
>>> print(forest.tree(0))
(S (D a) (S (D a) (E b)))
"""

from __future__ import annotations

import functools
import heapq
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from fastdcyk.cfg.grammar import Grammar, Rule, Symbol
from fastdcyk.cfg.metrics import Scores
from fastdcyk.cfg.trees import Edge, Item, Tree, check_tree, un_cnf
from fastdcyk.cfg.weights import check_chart, check_lexical

__all__ = ["Forest", "bracket_scores"]


def bracket_scores(tree: Tree | None, gold: Forest) -> Scores:
    """Labelled-bracket precision, recall and F1 of ``tree`` against the closest tree of ``gold``.

    Brackets are the ``(label, i, j)`` of every node of the CNF tree, preterminals included
    (a CNF tree over n words has 2n - 1 of them, none repeated); the closest tree is the one
    of ``gold`` that shares most brackets with ``tree`` (:meth:`Forest.closest`).

    Parameters
    ----------
    tree : Tree or None
        A tree of the forest's (CNF) grammar over its words; None (no tree) scores recall 0.
    gold : Forest
        Usually the symbolic forest, ``Forest(grammar, words)``.

    Returns
    -------
    Scores
        ``tp`` shared brackets, ``gold`` the closest tree's, ``predicted`` the tree's; they
        add up over sentences into micro scores. A sentence outside the language (an empty
        gold forest) has ``gold = 0``.

    Raises
    ------
    TypeError
        When ``tree`` is not a Tree (or None) or ``gold`` not a Forest.
    ValueError
        When the tree's words are not the forest's.
    """
    if not isinstance(gold, Forest):
        raise TypeError(f"gold must be a Forest, got {type(gold).__name__}")
    n_gold = 2 * len(gold.words) - 1 if gold.recognized else 0
    if tree is None:
        return Scores(tp=0, gold=n_gold, predicted=0)
    if not isinstance(tree, Tree):
        raise TypeError(f"tree must be a Tree or None, got {type(tree).__name__}")
    if tuple(tree.leaves()) != tuple(gold.words):
        raise ValueError(
            f"the tree is over other words ({' '.join(tree.leaves())!r}) than the forest "
            f"({' '.join(gold.words)!r}): score a tree against the forest of its own sentence"
        )
    if not gold.recognized:
        return Scores(tp=0, gold=0, predicted=len(tree.spans()))
    _, shared = gold.closest(tree)
    return Scores(tp=shared, gold=n_gold, predicted=len(tree.spans()))


class Forest:
    """The parse trees of a sentence that a chart admits, packed.

    Parameters
    ----------
    grammar : Grammar
        In CNF.
    words : str or sequence of str
        The sentence.
    chart : mapping ``{(i, j): nonterminals}``, optional
        Items allowed in the trees (a chart decoded by D-CYK). Default: every item the
        grammar derives (symbolic CYK's chart). Items of the chart that do not derive their
        words with the grammar's rules never enter a tree.
    scores : mapping ``{(i, j, A): float}``, or a function that returns one, optional
        A score per item; a tree's score is the sum over its nodes. Needed by
        :meth:`best`, :meth:`kbest` and :meth:`score`, unless the grammar is weighted:
        then a tree's score is its log probability (the sum of its rules' log
        probabilities), plus the item scores when given. A function (of no arguments) is
        called when a score is first needed, so that a forest asked for its trees in
        order only (:meth:`first`, :meth:`tree`) never computes them.
    lexical : sequence of mapping, optional
        One entry per word: None (the grammar's rules A -> word) or ``{A: log score}`` over
        preterminals, which replaces those rules at that position (a tagger's log
        probabilities; the word then need not be a terminal): the preterminals with a
        finite score are the position's items, and a tree's score adds theirs.

    Attributes
    ----------
    grammar : Grammar
    words : tuple of str
    recognized : bool
        Whether the start symbol derives the whole sentence within the chart.
    count : int
        The number of trees (CNF trees: of the grammar given). 0 when not recognized.

    Notes
    -----
    Enumeration order (:meth:`tree`, iteration) is fixed: at each item its edges by split
    point, then by the grammar's order of the left and right child; ``tree(t)`` is the t-th
    tree of that order, built in time linear in its size from the counts. Trees are returned
    in the grammar the user wrote when ``grammar`` was made by ``to_cnf`` (:func:`un_cnf`),
    unless ``cnf=True``; the count and the order are those of the CNF trees.

    Examples
    --------
    >>> g = Grammar.from_string("S -> S S | 'a'")
    >>> f = Forest(g, "a a a a")
    >>> f.count  # the Catalan number C_3
    5
    >>> for t in list(f)[:2]:
    ...     print(t)
    (S (S a) (S (S a) (S (S a) (S a))))
    (S (S a) (S (S (S a) (S a)) (S a)))
    """

    def __init__(
        self,
        grammar: Grammar,
        words: str | Sequence[str],
        chart: Mapping[tuple[int, int], Iterable[str]] | None = None,
        scores: Mapping[Item, float] | None = None,
        lexical: Sequence[Mapping[str, float] | None] | None = None,
    ) -> None:
        if not isinstance(grammar, Grammar):
            raise TypeError(f"grammar must be a fastdcyk.Grammar, got {type(grammar).__name__}")
        if not grammar.is_cnf:
            raise ValueError("a Forest needs a grammar in Chomsky normal form: grammar.to_cnf()")
        self.grammar = grammar
        self.words = Grammar.normalize_words(words)
        if not self.words:
            raise ValueError(
                "empty sentence: a CNF grammar derives no empty string, so a Forest needs at "
                "least one word (as cyk does)"
            )
        check_chart("chart", chart, len(self.words))
        deferred = callable(scores) and not isinstance(scores, Mapping)
        self._scores_from = scores if deferred else None
        self._scores = None if deferred else _checked_scores(scores)
        self._weights = grammar._log_prob_of if grammar.is_weighted else None
        n = len(self.words)
        self._lexical = check_lexical(grammar, lexical, n)
        order = grammar.nonterminal_index
        # edges[(i, j)][A]: the ways A derives words i..j-1 within the chart, cells in the
        # grammar's symbol order (so that enumeration does not depend on string hashing)
        edges: dict[tuple[int, int], dict[str, list[Edge]]] = {}
        for i, word in enumerate(self.words):
            allowed = _allowed(chart, i, i + 1)
            given = None if self._lexical is None else self._lexical[i]
            if given is None:
                own: Iterable[str] = grammar.lexicon.get(word, ())
            else:
                own = [a for a, v in given.items() if v > -math.inf]
            found = [a for a in own if allowed is None or a in allowed]
            edges[(i, i + 1)] = {a: [None] for a in sorted(found, key=order.__getitem__)}
        by_left = _by_left(grammar)
        for span in range(2, n + 1):
            for i in range(n - span + 1):
                j = i + span
                allowed = _allowed(chart, i, j)
                cell: dict[str, list[Edge]] = {}
                for k in range(i + 1, j):
                    left, right = edges[(i, k)], edges[(k, j)]
                    if not left or not right:
                        continue
                    for b in left:
                        row = by_left.get(b)
                        if row is None:
                            continue
                        if len(row) < len(right):  # the right children b has, in order
                            cs = sorted((c for c in row if c in right), key=order.__getitem__)
                        else:
                            cs = [c for c in right if c in row]
                        for c in cs:
                            for a in row[c]:
                                if allowed is None or a in allowed:
                                    cell.setdefault(a, []).append((k, b, c))
                edges[(i, j)] = {a: cell[a] for a in sorted(cell, key=order.__getitem__)}
        self._edges = edges
        self._root: Item = (0, n, grammar.start)
        self.recognized = n > 0 and grammar.start in edges[(0, n)]
        self._counts: dict[Item, int] | None = None
        self._best: dict[Item, float] | None = None
        self._kbest: dict[Item, tuple[list, list, set]] = {}

    # -- counting and enumerating -----------------------------------------------------------

    def _children(self, item: Item, edge: Edge) -> tuple[Item, Item]:
        k, b, c = edge  # type: ignore[misc]
        return (item[0], k, b), (k, item[1], c)

    def _count_table(self) -> dict[Item, int]:
        if self._counts is None:
            counts: dict[Item, int] = {}
            for (i, j), cell in sorted(self._edges.items(), key=lambda kv: kv[0][1] - kv[0][0]):
                for a, es in cell.items():
                    total = 0
                    for e in es:
                        if e is None:
                            total += 1
                        else:
                            k, b, c = e
                            total += counts[(i, k, b)] * counts[(k, j, c)]
                    counts[(i, j, a)] = total
            self._counts = counts
        return self._counts

    @property
    def count(self) -> int:
        """The number of trees (exact, however large)."""
        if not self.recognized:
            return 0
        return self._count_table()[self._root]

    def tree(self, index: int = 0, *, cnf: bool = False) -> Tree:
        """The tree at ``index`` of the forest's fixed order (0 <= index < count).

        Raises
        ------
        ValueError
            When the sentence is not recognized.
        IndexError
            When ``index`` is out of range.
        """
        self._need_trees()
        counts = self._count_table()
        if not isinstance(index, int) or isinstance(index, bool):
            raise TypeError(f"index must be an int, got {type(index).__name__}")
        total = counts[self._root]
        if index < 0:
            index += total
        if not 0 <= index < total:
            raise IndexError(f"tree index {index} out of range: the forest holds {total} trees")

        def build(item: Item, t: int) -> Tree:
            i, j, a = item
            for e in self._edges[(i, j)][a]:
                if e is None:
                    if t == 0:
                        return Tree(a, [self.words[i]])
                    t -= 1
                    continue
                left, right = self._children(item, e)
                size = counts[left] * counts[right]
                if t < size:
                    tl, tr = divmod(t, counts[right])
                    return Tree(a, [build(left, tl), build(right, tr)])
                t -= size
            raise AssertionError("tree index beyond the item's count")  # pragma: no cover

        return self._out(build(self._root, index), cnf)

    def __iter__(self) -> Iterator[Tree]:
        """Every tree, lazily, in the forest's order (in the user's grammar)."""
        for t in range(self.count):
            yield self.tree(t)

    def __len__(self) -> int:
        return self.count

    # -- scores ----------------------------------------------------------------------------

    def _score(self, item: Item) -> float:
        if self._scores_from is not None:  # the scores, computed on first need
            self._scores = _checked_scores(self._scores_from())
            self._scores_from = None
        if self._scores is None:
            if self._weights is not None:
                return 0.0
            raise ValueError(
                "this forest has no scores (the symbolic one): best and k-best trees are "
                "defined on a D-CYK parse's decoder statistics; use tree(index) or iterate"
            )
        try:
            return float(self._scores[item])
        except KeyError:
            raise ValueError(
                f"scores gives no score for the item {item} of the forest: give one for "
                "every item of the chart"
            ) from None

    def _best_table(self) -> dict[Item, float]:
        if self._best is None:
            best: dict[Item, float] = {}
            for (i, j), cell in sorted(self._edges.items(), key=lambda kv: kv[0][1] - kv[0][0]):
                for a, es in cell.items():
                    top = -float("inf")
                    for e in es:
                        w = self._edge_weight((i, j, a), e)
                        if e is None:
                            top = max(top, w)
                        else:
                            k, b, c = e
                            top = max(top, w + best[(i, k, b)] + best[(k, j, c)])
                    best[(i, j, a)] = self._score((i, j, a)) + top
            self._best = best
        return self._best

    def _derivation(self, item: Item, rank: int) -> tuple[float, int, int, int] | None:
        """The rank-th best derivation of ``item``: (score, edge, left rank, right rank)."""
        if item not in self._kbest:
            best = self._best_table()
            own = self._score(item)
            heap: list[tuple[float, int, int, int]] = []
            for n, e in enumerate(self._edges[(item[0], item[1])][item[2]]):
                w = own + self._edge_weight(item, e)
                if e is None:
                    heap.append((-w, n, 0, 0))
                else:
                    left, right = self._children(item, e)
                    heap.append((-(w + best[left] + best[right]), n, 0, 0))
            heapq.heapify(heap)
            self._kbest[item] = ([], heap, {(n, 0, 0) for _, n, _, _ in heap})
        found, heap, seen = self._kbest[item]
        es = self._edges[(item[0], item[1])][item[2]]
        while len(found) <= rank and heap:
            neg, n, ra, rb = heapq.heappop(heap)
            found.append((-neg, n, ra, rb))
            e = es[n]
            if e is None:
                continue
            left, right = self._children(item, e)
            for na, nb in ((ra + 1, rb), (ra, rb + 1)):
                if (n, na, nb) in seen:
                    continue
                dl, dr = self._derivation(left, na), self._derivation(right, nb)
                if dl is None or dr is None:
                    continue
                seen.add((n, na, nb))
                w = self._score(item) + self._edge_weight(item, e)
                heapq.heappush(heap, (-(w + dl[0] + dr[0]), n, na, nb))
        return found[rank] if rank < len(found) else None

    def _build_ranked(self, item: Item, rank: int) -> Tree:
        score, n, ra, rb = self._derivation(item, rank)  # type: ignore[misc]
        e = self._edges[(item[0], item[1])][item[2]][n]
        if e is None:
            return Tree(item[2], [self.words[item[0]]])
        left, right = self._children(item, e)
        return Tree(item[2], [self._build_ranked(left, ra), self._build_ranked(right, rb)])

    def first(self, k: int = 1, *, cnf: bool = False) -> list[Tree]:
        """The first ``k`` trees of the forest's fixed order (fewer when it holds fewer;
        none when the sentence is not recognized).

        The order depends on the chart and the grammar only (at each item its edges by split
        point, then by the grammar's order of the children), so equal charts give the same
        trees, whatever scores came with them: the trees of a grammar without weights that
        :meth:`fastdcyk.engine.DCYKResult.tree` gives (docs/method.md, section 9).

        Examples
        --------
        >>> f = Forest(Grammar.from_string("S -> S S | 'a'"), "a a a")
        >>> [str(t) for t in f.first(5)]
        ['(S (S a) (S (S a) (S a)))', '(S (S (S a) (S a)) (S a))']
        """
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ValueError(f"k must be a positive int, got {k!r}")
        if not self.recognized:
            return []

        def build(item: Item) -> Tree:  # the first tree: each item's first edge, no counts
            i, j, a = item
            e = self._edges[(i, j)][a][0]
            if e is None:
                return Tree(a, [self.words[i]])
            left, right = self._children(item, e)
            return Tree(a, [build(left), build(right)])

        first = self._out(build(self._root), cnf)
        if k == 1:  # the forest's trees need not be counted
            return [first]
        return [first] + [self.tree(t, cnf=cnf) for t in range(1, min(k, self.count))]

    def best(self, *, cnf: bool = False) -> Tree | None:
        """The tree of the largest score; None when the sentence is not recognized.

        Ties go to the first tree of the forest's order.
        """
        if not self.recognized:
            return None
        return self._out(self._build_ranked(self._root, 0), cnf)

    def kbest(self, k: int, *, cnf: bool = False) -> list[tuple[float, Tree]]:
        """The ``k`` trees of the largest scores, best first, with their scores.

        Fewer when the forest holds fewer; empty when the sentence is not recognized. Lazy
        (Huang and Chiang's k-best algorithm 3): an item's (r+1)-th derivation is found only
        when a tree above it asks for it.
        """
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ValueError(f"k must be a positive int, got {k!r}")
        if not self.recognized:
            return []
        out = []
        for rank in range(k):
            found = self._derivation(self._root, rank)
            if found is None:
                break
            out.append((found[0], self._out(self._build_ranked(self._root, rank), cnf)))
        return out

    def score(self, tree: Tree) -> float:
        """The score of a CNF tree of this forest (a tree from ``cnf=True``): the sum of its
        item scores, plus its rules' log probabilities when the grammar is weighted.

        Raises
        ------
        TypeError
            When ``tree`` is not a Tree.
        ValueError
            When the tree is not over the forest's words, or uses a rule the (CNF) grammar
            does not have.
        """
        self._check_tree(tree)
        if self._weights is not None:
            for rule in tree.productions():
                if rule not in self._weights:
                    raise ValueError(
                        f"the tree uses {rule}, which the grammar does not have: score a CNF "
                        "tree of the forest (tree(..., cnf=True))"
                    )
        total = sum(self._score((i, j, label)) for label, i, j in tree.spans())
        if self._weights is not None:
            total += sum(self._weights[rule] for rule in tree.productions())
        return total

    def _edge_weight(self, item: Item, edge: Edge) -> float:
        """The log probability of the rule of ``edge`` into ``item`` (0 when unweighted), or
        a given lexical score."""
        if edge is None and self._lexical is not None and self._lexical[item[0]] is not None:
            return float(self._lexical[item[0]][item[2]])
        if self._weights is None:
            return 0.0
        if edge is None:
            return self._weights[Rule(item[2], (Symbol(self.words[item[0]], True),))]
        _, b, c = edge
        return self._weights[Rule(item[2], (Symbol(b, False), Symbol(c, False)))]

    # -- the closest tree ----------------------------------------------------------------

    def closest(self, tree: Tree) -> tuple[Tree | None, int]:
        """The CNF tree of the forest sharing most labelled brackets with ``tree``.

        Returns
        -------
        (Tree or None, int)
            The tree (first of the forest's order among ties; None when the sentence is
            not recognized) and the number of brackets ``(label, i, j)`` it shares with
            ``tree``.

        Raises
        ------
        TypeError
            When ``tree`` is not a Tree.
        ValueError
            When the tree is not over the forest's words (and the forest has trees).
        """
        check_tree("tree", tree)
        if not self.recognized:
            return None, 0
        self._check_tree(tree)
        wanted = {(i, j, a) for a, i, j in tree.spans()}
        most: dict[Item, tuple[int, Edge]] = {}
        for (i, j), cell in sorted(self._edges.items(), key=lambda kv: kv[0][1] - kv[0][0]):
            for a, es in cell.items():
                top, arg = -1, None
                for e in es:
                    if e is None:
                        m = 0
                    else:
                        k, b, c = e
                        m = most[(i, k, b)][0] + most[(k, j, c)][0]
                    if m > top:
                        top, arg = m, e
                most[(i, j, a)] = (top + ((i, j, a) in wanted), arg)

        def build(item: Item) -> Tree:
            e = most[item][1]
            if e is None:
                return Tree(item[2], [self.words[item[0]]])
            left, right = self._children(item, e)
            return Tree(item[2], [build(left), build(right)])

        return build(self._root), most[self._root][0]

    # -- helpers -------------------------------------------------------------------------

    def _check_tree(self, tree: Any) -> None:
        check_tree("tree", tree)
        if tree.leaves() != self.words:
            raise ValueError(
                f"the tree is over other words ({' '.join(tree.leaves())!r}) than the forest "
                f"({' '.join(self.words)!r}): give a tree of the forest's sentence"
            )

    def _need_trees(self) -> None:
        if not self.recognized:
            raise ValueError(
                f"the sentence {' '.join(self.words)!r} is not recognized "
                f"({self.grammar.start} does not derive it within the chart): it has no tree"
            )

    def _out(self, tree: Tree, cnf: bool) -> Tree:
        return tree if cnf else un_cnf(tree, self.grammar, lexical=self._lexical is not None)

    def __repr__(self) -> str:
        return (
            f"<Forest {' '.join(self.words)!r}: {self.count} trees, recognized={self.recognized}>"
        )


def _allowed(chart: Mapping[tuple[int, int], Iterable[str]] | None, i: int, j: int) -> Any:
    if chart is None:
        return None
    cell = chart.get((i, j), ())
    return cell if isinstance(cell, set | frozenset) else frozenset(cell)


@functools.lru_cache(maxsize=8)
def _by_left(grammar: Grammar) -> dict[str, dict[str, frozenset[str]]]:
    """The grammar's binary rules by left child: ``{B: {C: heads}}``."""
    out: dict[str, dict[str, frozenset[str]]] = {}
    for (b, c), heads in grammar.binary_index.items():
        out.setdefault(b, {})[c] = heads
    return out


def _checked_scores(scores: Any) -> Mapping[Item, float] | None:
    """``scores`` when it maps items (i, j, A) to numbers that are finite or -inf."""
    if scores is None:
        return None
    if not isinstance(scores, Mapping):
        raise TypeError(
            f"scores must be a mapping {{(i, j, A): float}}, got {type(scores).__name__}"
        )
    for item, value in scores.items():
        if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
            raise TypeError(f"scores[{item!r}] is {value!r}, not a number")
        if math.isnan(value) or value == math.inf:
            raise ValueError(f"scores[{item!r}] is {value}: scores are finite or -inf")
    return scores

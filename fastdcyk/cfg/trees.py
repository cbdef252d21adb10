"""Parse trees: a light tree type, the packed forest of a chart, and the way back from CNF.

A chart ``{(i, j): nonterminals}`` (symbolic CYK's or one decoded by D-CYK) admits the parse
trees built from its items with the grammar's rules. :class:`Forest` packs them: it counts
them, enumerates them lazily (the t-th tree is built from the counts, without building the
others), finds the best and the k best under a score per item, and the tree closest to a
given one. Only items that derive their words with the grammar's rules enter the forest,
so every tree of a forest is a parse of the sentence, whatever false items the chart holds.

A grammar made by :meth:`Grammar.to_cnf <fastdcyk.cfg.grammar.Grammar.to_cnf>` remembers
where its rules came from; :func:`un_cnf` turns a tree of it into a tree of the grammar the
user wrote (lifted terminals and binarisation symbols spliced out, unit rules and empty
constituents put back), which is what the forest returns unless asked for ``cnf=True``.
What "best" means and why: docs/method.md, section 9.

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

import heapq
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import lru_cache
from typing import Any

from fastdcyk.cfg.grammar import Grammar, Rule, Symbol
from fastdcyk.cfg.metrics import Scores
from fastdcyk.cfg.weights import check_lexical

__all__ = ["Forest", "Tree", "bracket_scores", "is_parse", "un_cnf"]

Item = tuple[int, int, str]
# an edge into an item (i, j, A): the split k and the children's symbols; None for A -> word
Edge = tuple[int, str, str] | None

_BARE = re.compile(r"[^\s()\"']+")
_TOKEN = re.compile(r"""\s*(?:(\()|(\))|"((?:[^"\\]|\\.)*)"|([^\s()"']+))""")


def _leaf_text(word: str) -> str:
    if _BARE.fullmatch(word):
        return word
    return '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'


class Tree:
    """A parse tree: a label and its children, each a :class:`Tree` or a word (``str``).

    Immutable and hashable; two trees are equal when their labels and children are.

    Parameters
    ----------
    label : str
        The nonterminal.
    children : iterable of Tree or str
        Subtrees and words, in order; empty for a constituent that derives the empty
        string.

    Examples
    --------
    >>> t = Tree("S", [Tree("D", ["a"]), Tree("E", ["b"])])
    >>> print(t)
    (S (D a) (E b))
    >>> t.leaves(), t.spans()
    (('a', 'b'), (('S', 0, 2), ('D', 0, 1), ('E', 1, 2)))
    >>> Tree.fromstring("(S (D a) (E b))") == t
    True
    """

    __slots__ = ("label", "children", "_hash")

    label: str
    children: tuple[Tree | str, ...]

    def __init__(self, label: str, children: Iterable[Tree | str] = ()) -> None:
        if not isinstance(label, str) or not label:
            raise TypeError(f"a tree's label must be a non-empty str, got {label!r}")
        kids = tuple(children)
        for kid in kids:
            if not isinstance(kid, Tree | str):
                raise TypeError(
                    f"a tree's children are Trees and words (str), got {type(kid).__name__}"
                )
        object.__setattr__(self, "label", label)
        object.__setattr__(self, "children", kids)
        object.__setattr__(self, "_hash", None)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Tree objects are immutable")

    # -- reading ----------------------------------------------------------------------------

    def leaves(self) -> tuple[str, ...]:
        """The words, left to right."""
        out: list[str] = []
        stack: list[Tree | str] = [self]
        while stack:
            node = stack.pop()
            if isinstance(node, str):
                out.append(node)
            else:
                stack.extend(reversed(node.children))
        return tuple(out)

    def spans(self) -> tuple[tuple[str, int, int], ...]:
        """Every constituent as ``(label, i, j)``, words i..j-1, in preorder.

        Constituents of the empty string have ``i == j``.
        """
        out: list[tuple[str, int, int]] = []

        def walk(node: Tree, i: int) -> int:
            at = len(out)
            out.append((node.label, i, i))
            j = i
            for kid in node.children:
                j = j + 1 if isinstance(kid, str) else walk(kid, j)
            out[at] = (node.label, i, j)
            return j

        walk(self, 0)
        return tuple(out)

    def productions(self) -> tuple[Rule, ...]:
        """The rule used at every node, in preorder (``A -> ()`` for an empty constituent)."""
        out: list[Rule] = []
        stack: list[Tree] = [self]
        while stack:
            node = stack.pop()
            rhs = tuple(
                Symbol(k, True) if isinstance(k, str) else Symbol(k.label, False)
                for k in node.children
            )
            out.append(Rule(node.label, rhs))
            stack.extend(k for k in reversed(node.children) if isinstance(k, Tree))
        return tuple(out)

    @property
    def height(self) -> int:
        """1 for a node whose children are all words (or none), else 1 + the tallest child's."""
        kids = [k.height for k in self.children if isinstance(k, Tree)]
        return 1 + max(kids, default=0)

    # -- text ------------------------------------------------------------------------------

    def __str__(self) -> str:
        parts = [
            k if isinstance(k, Tree) else _leaf_text(k)
            for k in self.children  # type: ignore[misc]
        ]
        return "(" + " ".join([self.label, *map(str, parts)]) + ")"

    def __repr__(self) -> str:
        return f"Tree.fromstring({str(self)!r})"

    @classmethod
    def fromstring(cls, text: str) -> Tree:
        """Read the bracketed form that ``str(tree)`` writes (and NLTK's, for plain words).

        Words with spaces, brackets or quotes are written in double quotes, with ``\\"`` and
        ``\\\\`` inside.

        Raises
        ------
        ValueError
            When the text is not one bracketed tree.
        """
        if not isinstance(text, str):
            raise TypeError(f"Tree.fromstring reads a str, got {type(text).__name__}")
        stack: list[tuple[str | None, list[Tree | str]]] = []
        done: Tree | None = None
        pos = 0
        while pos < len(text.rstrip()):
            m = _TOKEN.match(text, pos)
            if m is None:
                raise ValueError(f"cannot read a tree at character {pos}: {text[pos : pos + 20]!r}")
            pos = m.end()
            if done is not None:
                raise ValueError(f"text after the tree at character {m.start()}")
            opening, closing, quoted, bare = m.groups()
            if opening:
                stack.append((None, []))
            elif closing:
                if not stack or stack[-1][0] is None:
                    raise ValueError(f"')' without a label or '(' at character {m.start()}")
                label, kids = stack.pop()
                node = cls(label, kids)  # type: ignore[arg-type]
                if stack:
                    stack[-1][1].append(node)
                else:
                    done = node
            else:
                if not stack:
                    raise ValueError("a tree starts with '('")
                word = bare if bare is not None else re.sub(r"\\(.)", r"\1", quoted)
                if stack[-1][0] is None:
                    if bare is None:
                        raise ValueError(f"a label cannot be quoted (character {m.start()})")
                    stack[-1] = (word, stack[-1][1])
                else:
                    stack[-1][1].append(word)
        if done is None:
            raise ValueError("the text holds no complete tree (unbalanced brackets?)")
        return done

    def pretty(self, *, ascii: bool = False) -> str:
        """A drawing for the terminal, one constituent per line.

        A node whose children are all words shows them on its own line.

        Parameters
        ----------
        ascii : bool, default False
            Draw the branches with ``|``, ``+`` and ``-`` instead of box characters.

        Examples
        --------
        >>> print(Tree.fromstring("(S (D a) (S (D a) (E b)))").pretty(ascii=True))
        S
        +-- D  a
        `-- S
            +-- D  a
            `-- E  b
        """
        tee, last, bar = ("+-- ", "`-- ", "|   ") if ascii else ("├── ", "└── ", "│   ")
        lines: list[str] = []

        def head(node: Tree | str) -> str:
            if isinstance(node, str):
                return _leaf_text(node)
            if node.children and all(isinstance(k, str) for k in node.children):
                return node.label + "  " + " ".join(_leaf_text(k) for k in node.children)  # type: ignore[arg-type]
            return node.label if node.children else node.label + "  ()"

        def walk(node: Tree | str, prefix: str) -> None:
            if isinstance(node, str) or all(isinstance(k, str) for k in node.children):
                return
            for n, kid in enumerate(node.children):
                end = n == len(node.children) - 1
                lines.append(prefix + (last if end else tee) + head(kid))
                walk(kid, prefix + ("    " if end else bar))

        lines.append(head(self))
        walk(self, "")
        return "\n".join(lines)

    # -- NLTK ------------------------------------------------------------------------------

    def to_nltk(self) -> Any:
        """The same tree as an ``nltk.Tree`` (needs NLTK: ``pip install nltk``)."""
        try:
            import nltk
        except ImportError:  # pragma: no cover - depends on the environment
            raise ImportError("Tree.to_nltk needs NLTK: pip install nltk") from None
        return nltk.Tree(
            self.label, [k.to_nltk() if isinstance(k, Tree) else k for k in self.children]
        )

    @classmethod
    def from_nltk(cls, tree: Any) -> Tree:
        """A :class:`Tree` from an ``nltk.Tree`` (labels as ``str``, leaves as words)."""
        label = tree.label()
        label = label.symbol() if hasattr(label, "symbol") else str(label)
        return cls(label, [cls.from_nltk(k) if hasattr(k, "label") else str(k) for k in tree])

    # -- protocol ----------------------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tree):
            return NotImplemented
        return self.label == other.label and self.children == other.children

    def __hash__(self) -> int:
        if self._hash is None:
            object.__setattr__(self, "_hash", hash((self.label, self.children)))
        return self._hash  # type: ignore[return-value]

    def __reduce__(self) -> tuple[Any, ...]:
        return (Tree, (self.label, self.children))


# -- back from CNF -------------------------------------------------------------------------


def un_cnf(tree: Tree, grammar: Grammar, *, lexical: bool = False) -> Tree:
    """A tree of ``grammar`` (made by ``to_cnf``) as a tree of the grammar it was made from.

    Every CNF rule is replaced by the rules it stands for (:attr:`Grammar.origin
    <fastdcyk.cfg.grammar.Grammar.origin>`): the unit rules of its unit path put back, the
    constituents that derive the empty string put back (as nodes without children), and the
    conversion's own symbols (lifted terminals ``T_a``, binarisation symbols) spliced out,
    their children taking their place. Where the conversion merged derivations (two unit
    paths, two ways to derive the empty string), one of them is returned: the first unit
    path of breadth-first search, the first rule found to derive the empty string.

    Parameters
    ----------
    tree : Tree
        A tree whose every node uses a rule of ``grammar``.
    grammar : Grammar
        In CNF; a grammar without :attr:`~fastdcyk.cfg.grammar.Grammar.origin` (not made by
        ``to_cnf``, or already in CNF when it was called) returns ``tree`` unchanged.
    lexical : bool, default False
        The tree's leaves need not be the grammar's words (a tree of lexical scores:
        ``viterbi(..., lexical=...)``): a preterminal A over a word without a rule A -> word
        is expanded as A's most probable rule A -> a (the first, unweighted) is, the word
        in place of a.

    Raises
    ------
    ValueError
        When a node of ``tree`` uses a rule that ``grammar`` does not have.

    Examples
    --------
    >>> g = Grammar.from_string("S -> 'a' S 'b' | 'a' 'b'", cnf="allow")
    >>> cnf = g.to_cnf()
    >>> t = Forest(cnf, "a a b b").tree(0, cnf=True)
    >>> print(t)
    (S (T_a a) (S_1 (S (T_a a) (T_b b)) (T_b b)))
    >>> print(un_cnf(t, cnf))
    (S a (S a b) b)
    """
    origin = grammar.origin
    if origin is None:
        return tree
    helpers, nullable, steps = origin.helpers, origin.nullable, origin.steps
    stand_in = _lexical_stand_ins(grammar) if lexical else {}

    def node(label: str, kids: list[Tree | str]) -> list[Tree | str]:
        return kids if label in helpers else [Tree(label, kids)]

    def empty(name: str) -> list[Tree | str]:
        rule = nullable[name]
        kids: list[Tree | str] = []
        for sym in rule.rhs:
            kids.extend(empty(sym.name))
        return node(name, kids)

    def expand(t: Tree | str) -> list[Tree | str]:
        if isinstance(t, str):
            return [t]
        rhs = tuple(
            Symbol(k, True) if isinstance(k, str) else Symbol(k.label, False) for k in t.children
        )
        chain = steps.get(Rule(t.label, rhs))
        if chain is None and len(rhs) == 1 and rhs[0].terminal and t.label in stand_in:
            chain = steps.get(stand_in[t.label])
        if chain is None:
            raise ValueError(f"the tree uses {Rule(t.label, rhs)}, which the grammar does not have")
        below = [expand(k) for k in t.children]
        # from the bottom up: the last step derives the CNF rule's right side, each unit step
        # above it wraps the constituent below; positions not kept derive the empty string
        inner: list[list[Tree | str]] = below
        for rule, kept in reversed(chain):
            kids: list[Tree | str] = []
            slot = iter(inner)
            for pos, sym in enumerate(rule.rhs):
                kids.extend(next(slot) if pos in kept else empty(sym.name))
            inner = [node(rule.lhs, kids)]
        return inner[0]

    out = expand(tree)
    if len(out) != 1 or not isinstance(out[0], Tree):  # only when the root is a helper symbol
        raise ValueError(f"{tree.label} is a symbol of the conversion, not a tree's root")
    return out[0]


def _lexical_stand_ins(grammar: Grammar) -> dict[str, Rule]:
    """Per preterminal A, the rule A -> a whose expansion a word without a rule A -> word
    takes: the most probable (the first in grammar order among equals, and in an unweighted
    grammar)."""
    out: dict[str, tuple[float, Rule]] = {}
    for a, word in grammar.unary_rules:
        rule = Rule(a, (Symbol(word, True),))
        p = grammar.log_prob(rule) if grammar.is_weighted else 0.0
        if a not in out or p > out[a][0]:
            out[a] = (p, rule)
    return {a: r for a, (_, r) in out.items()}


# -- checking trees -----------------------------------------------------------------------


@lru_cache(maxsize=16)
def _rule_set(grammar: Grammar) -> frozenset[Rule]:
    return frozenset(grammar.rules)


def is_parse(tree: Tree, grammar: Grammar, words: str | Sequence[str]) -> bool:
    """Whether ``tree`` is a parse of ``words`` under ``grammar``.

    That is: its root is the start symbol, its leaves are the words, and every node uses a
    rule of the grammar (a node without children: an empty rule ``A ->``).

    Examples
    --------
    >>> g = Grammar.builtin("example")
    >>> is_parse(Tree.fromstring("(S (D a) (E b))"), g, "a b")
    True
    >>> is_parse(Tree.fromstring("(S (E a) (D b))"), g, "a b")
    False
    """
    words = Grammar.normalize_words(words)
    if tree.label != grammar.start or tree.leaves() != words:
        return False
    rules = _rule_set(grammar)
    return all(rule in rules for rule in tree.productions())


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
    """
    n_gold = 2 * len(gold.words) - 1 if gold.recognized else 0
    if tree is None:
        return Scores(tp=0, gold=n_gold, predicted=0)
    if not gold.recognized:
        return Scores(tp=0, gold=0, predicted=len(tree.spans()))
    _, shared = gold.closest(tree)
    return Scores(tp=shared, gold=n_gold, predicted=len(tree.spans()))


# -- the forest ---------------------------------------------------------------------------


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
    scores : mapping ``{(i, j, A): float}``, optional
        A score per item; a tree's score is the sum over its nodes. Needed by
        :meth:`best`, :meth:`kbest` and :meth:`score`, unless the grammar is weighted:
        then a tree's score is its log probability (the sum of its rules' log
        probabilities), plus the item scores when given.
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
        self._scores = scores
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
        pairs = grammar.binary_index
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
                        for c in right:
                            heads = pairs.get((b, c))
                            if heads is None:
                                continue
                            for a in heads:
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
        if self._scores is None:
            if self._weights is not None:
                return 0.0
            raise ValueError(
                "this forest has no scores (the symbolic one): best and k-best trees are "
                "defined on a D-CYK parse's decoder statistics; use tree(index) or iterate"
            )
        return float(self._scores[item])

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
        item scores, plus its rules' log probabilities when the grammar is weighted."""
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
        """
        if not self.recognized:
            return None, 0
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

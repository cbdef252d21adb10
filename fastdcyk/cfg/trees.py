"""Parse trees: a light tree type, and the way back from CNF.

The packed forest of a chart, which gives these trees, is :class:`fastdcyk.cfg.forest.Forest`.

A grammar made by :meth:`Grammar.to_cnf <fastdcyk.cfg.grammar.Grammar.to_cnf>` remembers
where its rules came from; :func:`un_cnf` turns a tree of it into a tree of the grammar the
user wrote (lifted terminals and binarisation symbols spliced out, unit rules and empty
constituents put back), which is what the forest returns unless asked for ``cnf=True``
(docs/method.md, section 9).

Examples
--------
>>> t = Tree.fromstring("(S (D a) (S (D a) (E b)))")
>>> t.leaves(), t.spans()[:2]
(('a', 'a', 'b'), (('S', 0, 3), ('D', 0, 1)))
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

from fastdcyk.cfg.grammar import Grammar, Rule, Symbol, as_grammar

__all__ = ["Tree", "is_parse", "un_cnf"]

Item = tuple[int, int, str]
# an edge into an item (i, j, A): the split k and the children's symbols; None for A -> word
Edge = tuple[int, str, str] | None

# a token of the bracketed form: a bracket, a double-quoted word or label (brackets, quotes,
# backslashes and whitespace inside escaped by a backslash, so that a quoted token is never
# split by whitespace nor begun inside a bare one), or a bare token
# (anything up to whitespace or a bracket, as the Penn Treebank, evalb and NLTK read them)
_TOKEN = re.compile(r"""[()]|"((?:[^"\\()\s]|\\.)*)"(?=[\s()]|\Z)|[^\s()]+""", re.S)
_NEEDS_QUOTES = re.compile(r"[\s()]")
_UNESCAPE = re.compile(r"\\(.)", re.S)
_ESCAPE = re.compile(r'([\\"()\s])')


def _bare(text: str) -> bool:
    """Whether a token's text can stand unquoted: not empty, without whitespace or a
    bracket, not ending in a backslash (NLTK reads ``\\)`` as an escaped bracket), and
    not read as a quoted token (``""``, ``"(a)"``: a quoted text that could not be bare)."""
    if not text or _NEEDS_QUOTES.search(text) or text.endswith("\\"):
        return False
    m = _TOKEN.fullmatch(text)
    return m is None or m.group(1) is None or _bare(_UNESCAPE.sub(r"\1", m.group(1)))


def _token_text(text: str) -> str:
    """A word or label as the bracketed form writes it: bare (as the Penn Treebank writes
    ``'s``, ``n't``, ``''``, ``"``, ``-LRB-``), or in double quotes when it could not be
    read back bare (:func:`_bare`), each backslash, quote, bracket and whitespace character
    inside escaped by a backslash."""
    return text if _bare(text) else '"' + _ESCAPE.sub(r"\\\1", text) + '"'


def _token_read(match: re.Match) -> str:
    """The word or label of a token of :data:`_TOKEN`: a quoted one without its quotes
    where its text could not stand bare (else, as the Penn Treebank's ``"hi"``, as written)."""
    if match.group(1) is None:
        return match.group()
    text = _UNESCAPE.sub(r"\1", match.group(1))
    return match.group() if _bare(text) else text


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
        if isinstance(children, str) or not isinstance(children, Iterable):
            hint = f" (one word: [{children!r}])" if isinstance(children, str) else ""
            raise TypeError(
                f"children must be an iterable of Trees and words (str), got "
                f"{type(children).__name__}{hint}"
            )
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
        kids = (str(k) if isinstance(k, Tree) else _token_text(k) for k in self.children)
        return "(" + " ".join([_token_text(self.label), *kids]) + ")"

    def __repr__(self) -> str:
        return f"Tree.fromstring({str(self)!r})"

    @classmethod
    def fromstring(cls, text: str) -> Tree:
        """Read one bracketed tree: the form ``str(tree)`` writes, the Penn Treebank's
        (``.mrg`` files, evalb's input) and NLTK's.

        Words and labels are written bare, as the Penn Treebank writes them (``(VBZ 's)``,
        ``('' '')``, ``(-LRB- -LRB-)``, ``"``); one that could not be read back bare
        (empty, holding whitespace or a bracket, ending in a backslash, or itself a quoted
        token's text, as ``""``) is written in double quotes, a backslash before each
        backslash, quote, bracket and whitespace character inside. The treebank's outer
        bracket without a label, ``( (S ...) )``, is read as the tree it holds. Many trees:
        :func:`fastdcyk.cfg.treebank.read_trees`.

        Raises
        ------
        TypeError
            When ``text`` is not a str.
        ValueError
            When the text is not one bracketed tree (the character is named).

        Examples
        --------
        >>> t = Tree.fromstring("( (S (NP (PRP It)) (VP (VBZ 's) (RB n't))) )")
        >>> print(t)
        (S (NP (PRP It)) (VP (VBZ 's) (RB n't)))
        >>> t.leaves()
        ('It', "'s", "n't")
        >>> print(Tree("W", ["two words", "(", '"']))
        (W "two\\ words" "\\(" ")
        """
        if not isinstance(text, str):
            raise TypeError(f"Tree.fromstring reads a str, got {type(text).__name__}")
        trees = read_bracketed(text)
        if not trees:
            raise ValueError("the text holds no tree: give one in brackets, as '(S (D a) (E b))'")
        if len(trees) > 1:
            raise ValueError(
                f"text after the tree at character {trees[1][0]}: give one tree (text of "
                "several: fastdcyk.cfg.treebank.read_trees)"
            )
        return trees[0][1]

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
                return _token_text(node)
            if node.children and all(isinstance(k, str) for k in node.children):
                return node.label + "  " + " ".join(_token_text(k) for k in node.children)  # type: ignore[arg-type]
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
        """A :class:`Tree` from an ``nltk.Tree`` (labels as ``str``, leaves as words).

        Raises
        ------
        TypeError
            When ``tree`` is not an ``nltk.Tree``.
        """
        if isinstance(tree, Tree):
            raise TypeError("tree is already a fastdcyk Tree: use it as it is")
        if not (isinstance(tree, list) and callable(getattr(tree, "label", None))):
            hint = " (parse it first: Tree.fromstring)" if isinstance(tree, str) else ""
            raise TypeError(f"tree must be an nltk.Tree, got {type(tree).__name__}{hint}")
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


# -- the bracketed form --------------------------------------------------------------------


def read_bracketed(text: str, where: str = "") -> list[tuple[int, Tree]]:
    """The trees of bracketed text, in order, each with the character it starts at.

    The reader of :meth:`Tree.fromstring` and :func:`fastdcyk.cfg.treebank.read_trees`.
    Tokens are separated by whitespace and brackets, as the Penn Treebank, evalb and NLTK
    separate them; a token in double quotes (as ``str(tree)`` writes a word with
    whitespace or a bracket) is read without them, ``\\"`` and ``\\\\`` inside standing for
    a quote and a backslash. A bracket without a label around one tree (the Penn
    Treebank's outer ``( ... )``) is that tree.

    Parameters
    ----------
    text : str
    where : str, default ""
        Put before each error message (a file's name and a colon).

    Returns
    -------
    list of (int, Tree)

    Raises
    ------
    ValueError
        When the brackets do not balance, text stands outside them, or a bracket without
        a label holds anything but one tree; the character is named.
    """
    trees: list[tuple[int, Tree]] = []
    stack: list[tuple[int, list[Any]]] = []  # per open bracket: where, [label, *children]
    for m in _TOKEN.finditer(text):
        token = m.group()
        if token == "(":
            stack.append((m.start(), [None]))
        elif token == ")":
            if not stack:
                raise ValueError(f"{where}')' without '(' at character {m.start()}")
            start, items = stack.pop()
            node = _bracket_node(items, where, start)
            if stack:
                stack[-1][1].append(node)
            else:
                trees.append((start, node))
        elif not stack:
            raise ValueError(f"{where}text outside brackets at character {m.start()}")
        else:
            token = _token_read(m)
            items = stack[-1][1]
            if items[0] is None and len(items) == 1:  # the first token of a bracket
                items[0] = token
            else:
                items.append(token)
    if stack:
        raise ValueError(
            f"{where}{len(stack)} bracket(s) not closed (the first at character {stack[0][0]})"
        )
    return trees


def _bracket_node(items: list[Any], where: str, start: int) -> Tree:
    """The tree of one bracket, ``items`` its label (None: none) and children; a bracket
    without a label is the one tree it holds."""
    label, *kids = items
    if label is None:
        if len(kids) != 1 or not isinstance(kids[0], Tree):
            raise ValueError(
                f"{where}the bracket at character {start} has no label and holds "
                f"{len(kids)} item(s): a bracket without a label may only wrap one tree, as "
                "the Penn Treebank's outer '( ... )' does"
            )
        return kids[0]
    if not label:
        raise ValueError(f'{where}the bracket at character {start} has the empty label ""')
    return Tree(label, kids)


def check_tree(name: str, tree: Any) -> Tree:
    """``tree`` when it is a :class:`Tree`; else a TypeError naming ``name``."""
    if not isinstance(tree, Tree):
        hint = " (parse it first: Tree.fromstring)" if isinstance(tree, str) else ""
        if callable(getattr(tree, "label", None)) and isinstance(tree, list):
            hint = " (an nltk.Tree: Tree.from_nltk)"
        raise TypeError(f"{name} must be a Tree, got {type(tree).__name__}{hint}")
    return tree


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
    TypeError
        When ``tree`` is not a Tree or ``grammar`` not a grammar.
    ValueError
        When a node of ``tree`` uses a rule that ``grammar`` does not have.

    Examples
    --------
    >>> g = Grammar.from_string("S -> 'a' S 'b' | 'a' 'b'", cnf="allow")
    >>> cnf = g.to_cnf()
    >>> from fastdcyk.cfg.forest import Forest
    >>> t = Forest(cnf, "a a b b").tree(0, cnf=True)
    >>> print(t)
    (S (T_a a) (S_1 (S (T_a a) (T_b b)) (T_b b)))
    >>> print(un_cnf(t, cnf))
    (S a (S a b) b)
    """
    check_tree("tree", tree)
    grammar = as_grammar(grammar)
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

    Raises
    ------
    TypeError
        When ``tree`` is not a Tree, ``grammar`` not a grammar (or a built-in name or a
        file) or ``words`` not a sentence.
    """
    check_tree("tree", tree)
    grammar = as_grammar(grammar)
    words = Grammar.normalize_words(words)
    if tree.label != grammar.start or tree.leaves() != words:
        return False
    rules = _rule_set(grammar)
    return all(rule in rules for rule in tree.productions())

"""A probabilistic grammar induced from a treebank, and the way back to the treebank's trees.

:meth:`TreebankGrammar.from_trees` reads trees (``nltk.Tree``, :class:`~fastdcyk.cfg.trees.
Tree` or bracketed strings such as the Penn Treebank's ``.mrg`` files), prepares them as a
treebank parser does, counts their rules and makes a PCFG in CNF by relative frequency:

1. clean (:func:`clean`): empty elements (``-NONE-``) and the constituents left empty
   removed, function tags and indices stripped (``NP-SBJ-1`` is ``NP``), as evalb's
   preparation of gold trees does;
2. collapse unary chains of phrases into one label (``S+VP``; a chain down to a
   part-of-speech tag keeps its last step, which ``to_cnf`` folds in with its probability);
3. annotate each phrase with its parent's label (``NP^<S>``), when asked;
4. binarise to the right with horizontal Markovisation of order ``horizontal``
   (``NP -> DT JJ NN`` becomes ``NP -> DT NP|<JJ>``, ``NP|<JJ> -> JJ NN`` at order 1);
5. map rare words (seen ``rare`` times or fewer) to unknown-word classes made from their
   spelling (:func:`word_class`: capitalisation, digits, dashes, suffixes), so that the
   grammar has lexical rules for words it has never seen.

:meth:`TreebankGrammar.words` maps a sentence's unknown words to their classes,
:meth:`TreebankGrammar.to_treebank` turns a tree of the grammar back into the treebank's
labels and words, and :meth:`TreebankGrammar.parse` is the symbolic Viterbi parser.

Examples
--------
>>> bank = [
...     "(S (NP (DT the) (NN dog)) (VP (VBZ barks)))",
...     "(S (NP (DT the) (NN cat)) (VP (VBZ sees) (NP (DT the) (NN dog))))",
... ]
>>> tb = TreebankGrammar.from_trees(bank, rare=0)
>>> parse = tb.parse("the cat barks")
>>> print(parse.tree)
(ROOT (S (NP (DT the) (NN cat)) (VP (VBZ barks))))
>>> round(parse.log_prob, 4)
-2.4849
"""

from __future__ import annotations

import codecs
import os
import re
import warnings
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from fastdcyk.cfg.grammar import Grammar, GrammarWarning, Rule, Symbol
from fastdcyk.cfg.trees import Tree, read_bracketed
from fastdcyk.cfg.viterbi import ViterbiParse, viterbi
from fastdcyk.checks import check_int

__all__ = ["TreebankGrammar", "clean", "read_trees", "unknown_to_classes", "word_class"]

ROOT = "ROOT"
EMPTY = "-NONE-"
_INDEX = re.compile(r"[-=]\d+$")
_SUFFIXES = ("ing", "ed", "ion", "er", "est", "ly", "ity", "y", "al", "s")


# -- reading ------------------------------------------------------------------------------


def read_trees(
    source: str | os.PathLike[str] | Iterable[Any], *, encoding: str = "utf-8"
) -> list[Tree]:
    """Trees from bracketed text, files, or tree objects.

    Parameters
    ----------
    source : str, path-like or iterable
        Bracketed text holding one or more trees, read as :meth:`Tree.fromstring
        <fastdcyk.cfg.trees.Tree.fromstring>` reads one (the Penn Treebank's ``( (S ...) )``
        wrapper without a label is removed); the path of a file (or a folder: its ``.mrg``
        files, in name order; a str without ``(`` is a path); or an iterable of trees
        (``nltk.Tree``, :class:`Tree`), bracketed strings and paths.
    encoding : str, default "utf-8"
        The files' text encoding (``"latin-1"`` for an older treebank).

    Returns
    -------
    list of Tree

    Raises
    ------
    ValueError
        When the text is not balanced brackets, a file is not UTF-8, a folder holds no
        ``.mrg`` file, or ``encoding`` is not a codec's name.
    TypeError
        When ``source`` is none of these.
    OSError
        When a file cannot be read.
    """
    try:
        codecs.lookup(encoding)
    except (LookupError, TypeError):
        raise ValueError(
            f"unknown encoding {encoding!r}: give a Python codec name such as 'utf-8' or 'latin-1'"
        ) from None
    if isinstance(source, os.PathLike) or (isinstance(source, str) and "(" not in source):
        path = os.fspath(source)
        if os.path.isdir(path):
            names = sorted(n for n in os.listdir(path) if n.endswith(".mrg"))
            if not names:
                raise ValueError(f"the folder {path!r} holds no .mrg files")
            return [t for n in names for t in read_trees(os.path.join(path, n), encoding=encoding)]
        with open(path, "rb") as handle:
            data = handle.read()
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError as exc:
            raise ValueError(
                f"{path}: not {encoding} (byte {exc.start}: "
                f"{data[exc.start : exc.start + 1]!r}); give its encoding "
                "(read_trees(..., encoding='latin-1'))"
            ) from None
        return _read_text(text, path)
    if isinstance(source, str):
        return _read_text(source, None)
    if isinstance(source, bytes) or not isinstance(source, Iterable):
        raise TypeError(
            f"cannot read trees from {type(source).__name__}: give bracketed text, a path, "
            "or an iterable of trees"
        )
    out: list[Tree] = []
    for item in source:
        if isinstance(item, Tree):
            out.append(item)
        elif isinstance(item, str | os.PathLike):
            out.extend(read_trees(item, encoding=encoding))
        elif hasattr(item, "label") and callable(item.label):  # an nltk.Tree
            out.append(Tree.from_nltk(item))
        else:
            raise TypeError(f"cannot read a tree from {type(item).__name__}")
    return out


def _read_text(text: str, source: str | None) -> list[Tree]:
    return [tree for _, tree in read_bracketed(text, f"{source}: " if source else "")]


# -- preparing trees ----------------------------------------------------------------------


def strip_label(label: str) -> str:
    """A treebank label without function tags and indices (``NP-SBJ-1`` is ``NP``); labels
    that start with ``-`` (``-NONE-``, ``-LRB-``) are kept whole."""
    if label.startswith("-"):
        return label
    label = _INDEX.sub("", label)
    return re.split(r"[-=]", label, maxsplit=1)[0] or label


def clean(tree: Tree) -> Tree | None:
    """A treebank tree as evalb reads gold trees: empty elements (``-NONE-``) and the
    constituents left empty removed, function tags and indices stripped.

    Returns
    -------
    Tree or None
        None when nothing is left (a tree of empty elements only).
    """

    def walk(node: Tree | str) -> Tree | str | None:
        if isinstance(node, str):
            return node
        if node.label == EMPTY:
            return None
        kids = [k for k in (walk(c) for c in node.children) if k is not None]
        if not kids:
            return None
        return Tree(strip_label(node.label), kids)

    out = walk(tree)
    return out if isinstance(out, Tree) else None


def _is_preterminal(node: Tree) -> bool:
    return len(node.children) == 1 and isinstance(node.children[0], str)


#: The characters the prepared labels use (``X+Y`` chains, ``X^<P>`` parents, ``X|<Y-Z>``
#: intermediates) and the escape character: a treebank label holding one is escaped on the
#: way in (``%`` and the character's hex code) and restored by :meth:`TreebankGrammar.to_treebank`.
_RESERVED = "%+|<>^"


def _escape(label: str) -> str:
    if not any(c in label for c in _RESERVED):
        return label
    return "".join(f"%{ord(c):02X}" if c in _RESERVED else c for c in label)


def _unescape(label: str) -> str:
    if "%" not in label:
        return label
    return re.sub(r"%([0-9A-F]{2})", lambda m: chr(int(m.group(1), 16)), label)


def check_shape(tree: Tree, index: int) -> None:
    """Refuse a tree that is not a treebank tree: every word under a part-of-speech tag of
    its own (a tag over one word, a phrase over tags and phrases only).

    Raises
    ------
    ValueError
        Naming the tree (its position among those given), the node and its words.
    """
    stack = [tree]
    while stack:
        node = stack.pop()
        words = [k for k in node.children if isinstance(k, str)]
        if words and len(node.children) > 1:
            what = "beside a phrase" if len(words) < len(node.children) else "under one tag"
            raise ValueError(
                f"tree {index}: {node.label} holds the word(s) {words!r} {what}; every word "
                f"needs a part-of-speech tag of its own, as in ({node.label} (TAG word) ...)"
            )
        stack.extend(k for k in node.children if isinstance(k, Tree))


def _prepare(tree: Tree, horizontal: int, parent: bool) -> Tree:
    """Escape the reserved characters of labels, collapse unary chains of phrases, annotate
    parents, binarise (steps 2 to 4)."""

    def escape(node: Tree) -> Tree:
        kids = [escape(k) if isinstance(k, Tree) else k for k in node.children]
        return Tree(_escape(node.label), kids)

    tree = escape(tree)

    def collapse(node: Tree) -> Tree:
        if _is_preterminal(node):
            return node
        label, kids = node.label, list(node.children)
        while len(kids) == 1 and isinstance(kids[0], Tree) and not _is_preterminal(kids[0]):
            label, kids = f"{label}+{kids[0].label}", list(kids[0].children)
        return Tree(label, [collapse(k) if isinstance(k, Tree) else k for k in kids])

    def annotate(node: Tree, above: str | None) -> Tree:
        if _is_preterminal(node):
            return node
        label = node.label if above is None else f"{node.label}^<{above}>"
        base = node.label.split("+")[-1]  # the children's parent: the chain's last label
        return Tree(label, [annotate(k, base) if isinstance(k, Tree) else k for k in node.children])

    def binarise(node: Tree) -> Tree:
        if _is_preterminal(node):
            return node
        kids = [binarise(k) if isinstance(k, Tree) else k for k in node.children]
        return Tree(node.label, _binary_children(node.label, kids, horizontal))

    out = collapse(tree)
    if parent:
        out = annotate(out, None)
    return binarise(out)


def _base(label: str) -> str:
    """A label without its parent annotation (``NP^<S>`` is ``NP``)."""
    return label.split("^")[0]


def _binary_children(base: str, kids: list[Tree | str], horizontal: int) -> list[Tree | str]:
    """The children of a node binarised to the right: the first child, then an
    intermediate ``base|<...>`` (the next ``horizontal`` labels) over the rest."""
    if len(kids) <= 2:
        return kids
    rest = kids[1:]
    context = "-".join(_base(k.label) for k in rest[:horizontal] if isinstance(k, Tree))
    label = f"{base}|<{context}>"
    return [kids[0], Tree(label, _binary_children(base, rest, horizontal))]


def _unprepare(tree: Tree) -> Tree:
    """Undo :func:`_prepare`: splice out ``X|<...>`` nodes, expand ``X+Y`` chains, drop
    parent annotations."""

    def walk(node: Tree | str) -> list[Tree | str]:
        if isinstance(node, str):
            return [node]
        kids: list[Tree | str] = [x for k in node.children for x in walk(k)]
        if "|<" in node.label:
            return kids
        chain = [_unescape(_base(part)) for part in node.label.split("+")]
        out: list[Tree | str] = kids
        for label in reversed(chain):
            out = [Tree(label, out)]
        return out

    (out,) = walk(tree)
    assert isinstance(out, Tree)
    return out


# -- unknown words ------------------------------------------------------------------------


def word_class(word: str, *, first: bool = False) -> str:
    """The unknown-word class of ``word``, from its spelling.

    ``UNK`` followed by: ``-CAPS`` (all capitals), ``-INITC`` (an initial capital not at
    the sentence's start), ``-CAP1`` (an initial capital at its start) or ``-LC``
    (lower case); ``-NUM`` when it has a digit; ``-DASH`` when it has a dash; and the first
    of the suffixes ``-ing -ed -ion -er -est -ly -ity -y -al -s`` it ends with (words of
    more than three letters).

    Parameters
    ----------
    word : str
    first : bool
        Whether the word starts the sentence (its capital then says less).

    Examples
    --------
    >>> word_class("Frobnicated"), word_class("frobnicating"), word_class("1,234")
    ('UNK-INITC-ed', 'UNK-LC-ing', 'UNK-NUM')
    """
    if not isinstance(word, str):
        raise TypeError(f"word must be a str, got {type(word).__name__}")
    parts = ["UNK"]
    letters = [c for c in word if c.isalpha()]
    if letters:
        if all(c.isupper() for c in letters):
            parts.append("CAPS")
        elif word[0].isupper():
            parts.append("CAP1" if first else "INITC")
        else:
            parts.append("LC")
    if any(c.isdigit() for c in word):
        parts.append("NUM")
    if "-" in word:
        parts.append("DASH")
    lower = word.lower()
    if len(lower) > 3:
        parts.extend(next((s for s in _SUFFIXES if lower.endswith(s)), "").split()[:1])
    return "-".join(parts)


def _fallbacks(word_class_name: str) -> list[str]:
    """The classes to try for an unknown word, most specific first."""
    parts = word_class_name.split("-")
    return ["-".join(parts[:k]) for k in range(len(parts), 0, -1)]


def unknown_to_classes(grammar: Grammar, words: Sequence[Any]) -> tuple[Any, ...]:
    """The sentence with each word the grammar lacks replaced by its unknown-word class.

    The class is the most specific of :func:`word_class`'s classes (then ``"UNK"``) that is
    a terminal of the grammar, as a grammar induced by :meth:`TreebankGrammar.from_trees`
    has them. Words the grammar has, and soft words (mappings), are kept.

    Parameters
    ----------
    grammar : Grammar
    words : sequence
        The sentence's words (str), or soft words (mappings ``{terminal: weight}``).

    Returns
    -------
    tuple

    Raises
    ------
    ValueError
        For a word the grammar lacks when it has no class for it either: the word and its
        position are named.
    """
    terminals = grammar.terminal_set
    out = []
    for pos, word in enumerate(words):
        if not isinstance(word, str) or word in terminals:
            out.append(word)
            continue
        tries = list(dict.fromkeys([*_fallbacks(word_class(word, first=pos == 0)), "UNK"]))
        found = next((c for c in tries if c in terminals), None)
        if found is None:
            raise ValueError(
                f"word {word!r} at position {pos} is not a terminal of the grammar, and the "
                f"grammar has no unknown-word class for it (tried {', '.join(tries)}): add "
                "the word to the grammar, or rules for a class such as 'UNK'"
            )
        out.append(found)
    return tuple(out)


# -- the grammar --------------------------------------------------------------------------


def _count_rules(
    tree: Tree, known: frozenset[str], rules: Counter[Rule], classes: Counter[str]
) -> None:
    """Add the rules of a prepared tree to ``rules`` (its words not in ``known`` as their
    unknown-word classes, counted in ``classes``)."""
    position = 0
    stack = [tree]
    while stack:  # preorder: the words come left to right
        node = stack.pop()
        kids = node.children
        if _is_preterminal(node):
            word = kids[0]
            assert isinstance(word, str)
            if word not in known:
                word = word_class(word, first=position == 0)
                classes[word] += 1
            position += 1
            rules[Rule(node.label, (Symbol(word, True),))] += 1
            continue
        rules[
            Rule(node.label, tuple(Symbol(k.label, False) for k in kids if isinstance(k, Tree)))
        ] += 1
        stack.extend(k for k in reversed(kids) if isinstance(k, Tree))


@dataclass(frozen=True)
class TreebankGrammar:
    """A PCFG induced from trees, with what it needs to read sentences and write trees.

    Make one with :meth:`from_trees`.

    Attributes
    ----------
    grammar : Grammar
        The PCFG in CNF (its :attr:`~fastdcyk.cfg.grammar.Grammar.origin` is the binarised
        grammar of the prepared trees, which :meth:`to_treebank` goes back through). Its
        conversion folds the remaining unit rules (``ROOT -> S``, ``NP -> NN``) into the
        rules below them; where two chains end in the same rule (``ROOT -> S -> NP VP`` and
        ``ROOT -> SINV -> NP VP``) the CNF rule has their summed probability and a tree
        shows the first chain (:meth:`Grammar.to_cnf
        <fastdcyk.cfg.grammar.Grammar.to_cnf>`).
    horizontal : int
        The order of horizontal Markovisation.
    parent : bool
        Whether phrases were annotated with their parent's label.
    rare : int
        Words seen this many times or fewer became unknown-word classes.
    known : frozenset of str
        The words of the training trees that the grammar keeps as words.
    trees : int
        How many training trees the counts came from.
    """

    grammar: Grammar
    horizontal: int
    parent: bool
    rare: int
    known: frozenset[str]
    trees: int
    _classes: tuple[str, ...] = field(default=(), repr=False)

    @classmethod
    def from_trees(
        cls,
        trees: str | os.PathLike[str] | Iterable[Any],
        *,
        horizontal: int = 1,
        parent: bool = False,
        rare: int = 1,
    ) -> TreebankGrammar:
        """Induce a PCFG from trees by relative frequency.

        Parameters
        ----------
        trees : str, path-like or iterable
            What :func:`read_trees` reads: bracketed text, a ``.mrg`` file or folder, or
            trees (``nltk.Tree``, :class:`Tree`, bracketed strings).
        horizontal : int, default 1
            The order of horizontal Markovisation (how many siblings an intermediate
            symbol of a binarised rule remembers); larger is more precise and sparser.
        parent : bool, default False
            Annotate every phrase with its parent's label (vertical Markovisation of
            order 2).
        rare : int, default 1
            Words seen at most this many times are replaced by their unknown-word class
            (:func:`word_class`), which gives the grammar its rules for unseen words; 0
            keeps every word (and the grammar then refuses unseen words).

        Returns
        -------
        TreebankGrammar

        Raises
        ------
        ValueError
            When no tree is left after cleaning, or a setting is out of range.
        """
        if not isinstance(parent, bool):
            raise ValueError(f"parent must be True or False, got {parent!r}")
        horizontal = check_int("horizontal", horizontal, 1)
        rare = check_int("rare", rare, 0)
        cleaned = [c for c in (clean(t) for t in read_trees(trees)) if c is not None]
        for k, tree in enumerate(cleaned):
            check_shape(tree, k)
        if not cleaned:
            raise ValueError("no trees to learn from (none left after removing empty elements)")
        counts = Counter(w for t in cleaned for w in t.leaves())
        known = frozenset(w for w, c in counts.items() if c > rare)
        rules: Counter[Rule] = Counter()
        classes: Counter[str] = Counter()
        for tree in cleaned:
            prepared = _prepare(tree, horizontal, parent)
            rules[Rule(ROOT, (Symbol(prepared.label, False),))] += 1
            _count_rules(prepared, known, rules, classes)
        totals: Counter[str] = Counter()
        for rule, c in rules.items():
            totals[rule.lhs] += c
        ordered = sorted(rules, key=lambda r: (r.lhs != ROOT, r.lhs, [s.name for s in r.rhs]))
        probs = [rules[r] / totals[r.lhs] for r in ordered]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", GrammarWarning)  # merged unit chains: expected
            general = Grammar(ordered, start=ROOT, cnf="allow", probs=probs)
            grammar = general.to_cnf()
        by_use = tuple(c for c, _ in classes.most_common())
        return cls(grammar, horizontal, parent, rare, known, len(cleaned), by_use)

    # -- sentences ---------------------------------------------------------------------------

    def words(self, sentence: str | Sequence[str]) -> tuple[str, ...]:
        """The sentence as the grammar's terminals: each unknown word replaced by its
        unknown-word class (the most specific one the grammar has).

        Parameters
        ----------
        sentence : str or sequence of str
            A str is split at whitespace.

        Returns
        -------
        tuple of str
        """
        tokens = Grammar.normalize_words(sentence)
        lexicon = self.grammar.lexicon
        out = []
        for pos, word in enumerate(tokens):
            if word in self.known and word in lexicon:
                out.append(word)
                continue
            found = next(
                (c for c in _fallbacks(word_class(word, first=pos == 0)) if c in lexicon), None
            )
            if found is None:
                found = next((c for c in self._classes if c in lexicon), word)
            out.append(found)
        return tuple(out)

    def unknown(self, sentence: str | Sequence[str]) -> tuple[int, ...]:
        """The positions of the words the training trees did not keep as words."""
        tokens = Grammar.normalize_words(sentence)
        return tuple(k for k, w in enumerate(tokens) if w not in self.known)

    def preterminals_of(self, tree: Any) -> tuple[str, ...]:
        """The grammar's preterminal over each word of a treebank tree: the tags a tagger
        for this grammar should give (:attr:`Grammar.preterminals
        <fastdcyk.cfg.grammar.Grammar.preterminals>`).

        The tree is cleaned and prepared as the training trees were; a unary chain over a
        word (``NP -> NNP -> 'John'``, folded into ``NP -> 'John'`` by the conversion to
        CNF) gives its top label.

        Parameters
        ----------
        tree : Tree, nltk.Tree or str
            A treebank tree (bracketed text is read).

        Returns
        -------
        tuple of str
            One label per word of the cleaned tree; a label the grammar has no lexical rule
            for (a chain never seen in training) is returned as it is.

        Raises
        ------
        ValueError
            When nothing is left of the tree after cleaning.
        """
        (read,) = read_trees([tree])
        cleaned = clean(read)
        if cleaned is None:
            raise ValueError("the tree has no words left after removing empty elements")
        prepared = _prepare(cleaned, self.horizontal, self.parent)
        out: list[str] = []

        def walk(node: Tree, top: str) -> None:
            if _is_preterminal(node):
                out.append(top)
            elif len(node.children) == 1:
                walk(node.children[0], top)  # type: ignore[arg-type]
            else:
                for k in node.children:
                    walk(k, k.label)  # type: ignore[union-attr,arg-type]

        walk(prepared, ROOT)
        return tuple(out)

    def to_treebank(
        self, tree: Tree | None, words: str | Sequence[str] | None = None
    ) -> Tree | None:
        """A tree of the grammar (in the grammar before CNF, as :func:`viterbi` and
        ``DCYKResult.tree()`` return it) with the treebank's labels, and ``words`` (the
        sentence as given) in place of the unknown-word classes.

        Parameters
        ----------
        tree : Tree or None
            None is returned as is.
        words : str or sequence of str, optional
            The original words.

        Returns
        -------
        Tree or None

        Raises
        ------
        TypeError
            When ``tree`` is not a Tree.
        ValueError
            When ``words`` has not as many words as the tree has leaves.
        """
        if tree is None:
            return None
        if not isinstance(tree, Tree):
            raise TypeError(f"tree must be a Tree or None, got {type(tree).__name__}")
        out = _unprepare(tree)
        if words is not None:
            given = Grammar.normalize_words(words)
            leaves = len(tree.leaves())
            if len(given) != leaves:
                raise ValueError(
                    f"words has {len(given)} words for a tree of {leaves}: give the sentence "
                    "the tree was parsed from"
                )
            tokens = iter(given)

            def put(node: Tree | str) -> Tree | str:
                if isinstance(node, str):
                    return next(tokens)
                return Tree(node.label, [put(k) for k in node.children])

            out = put(out)  # type: ignore[assignment]
        return out

    def parse(self, sentence: str | Sequence[str]) -> ViterbiParse:
        """The most probable tree of a sentence (symbolic Viterbi CKY), in the treebank's
        labels and the sentence's words, and its log probability."""
        best = viterbi(self.grammar, self.words(sentence))
        return ViterbiParse(self.to_treebank(best.tree, sentence), best.log_prob)

    def __repr__(self) -> str:
        g = self.grammar
        return (
            f"<TreebankGrammar from {self.trees} trees: {len(g.nonterminals)} nonterminals, "
            f"{len(g.binary_rules)} binary and {len(g.unary_rules)} lexical rules, "
            f"{len(self.known)} words, horizontal={self.horizontal}, parent={self.parent}>"
        )

"""Scores: cell precision, recall and F1 of a decoded chart against the symbolic CYK chart,
and evalb's labelled brackets of a tree against a gold tree."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from fastdcyk.cfg.weights import check_chart

__all__ = ["EVALB_DELETE", "Scores", "cell_scores", "chart_triples", "evalb", "labelled_brackets"]

# evalb's COLLINS.prm: the labels of the words (and the root labels) left out of the scores
EVALB_DELETE = frozenset({"TOP", "ROOT", "-NONE-", ",", ":", "``", "''", "."})
# ... and the labels it counts as one
EVALB_EQUAL = {"PRT": "ADVP"}

Chart = Mapping[tuple[int, int], Iterable[str]]


def chart_triples(chart: Chart) -> set[tuple[int, int, str]]:
    """The set of (i, j, A) triples of a chart ``{(i, j): nonterminals}``."""
    return {(i, j, a) for (i, j), cell in chart.items() for a in cell}


@dataclass(frozen=True)
class Scores:
    """Counts of (i, j, A) triples and the scores derived from them.

    Adding two Scores adds their counts: summing over sentences gives micro-averaged
    precision, recall and F1.

    Attributes
    ----------
    tp : int
        Triples in both charts.
    gold : int
        Triples in the gold (symbolic CYK) chart.
    predicted : int
        Triples in the decoded chart.
    """

    tp: int
    gold: int
    predicted: int

    @property
    def precision(self) -> float:
        """tp / predicted; 1.0 when nothing was predicted and nothing was to be found."""
        if self.predicted == 0:
            return 1.0 if self.gold == 0 else 0.0
        return self.tp / self.predicted

    @property
    def recall(self) -> float:
        """tp / gold; 1.0 when the gold chart is empty and nothing was predicted."""
        if self.gold == 0:
            return 1.0 if self.predicted == 0 else 0.0
        return self.tp / self.gold

    @property
    def f1(self) -> float:
        """Harmonic mean of precision and recall (0.0 when both are 0)."""
        p, r = self.precision, self.recall
        return 0.0 if p + r == 0 else 2 * p * r / (p + r)

    def __add__(self, other: Scores) -> Scores:
        if not isinstance(other, Scores):
            return NotImplemented
        return Scores(self.tp + other.tp, self.gold + other.gold, self.predicted + other.predicted)

    def __radd__(self, other: object) -> Scores:
        if other == 0:
            return self  # so that sum() works
        return NotImplemented

    def as_dict(self) -> dict[str, float]:
        return {
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "tp": self.tp,
            "gold": self.gold,
            "predicted": self.predicted,
        }

    def __str__(self) -> str:
        return (
            f"P={self.precision:.3f} R={self.recall:.3f} F1={self.f1:.3f} "
            f"(tp={self.tp}, gold={self.gold}, predicted={self.predicted})"
        )


def cell_scores(gold: Chart, predicted: Chart) -> Scores:
    """Precision, recall and F1 of ``predicted`` against ``gold`` over (i, j, A) triples.

    Parameters
    ----------
    gold, predicted : mapping ``{(i, j): iterable of nonterminals}``
        Charts as returned by :func:`fastdcyk.cfg.cyk` and :func:`fastdcyk.dcyk`.

    Returns
    -------
    Scores
        With ``precision``, ``recall``, ``f1`` and the counts ``tp``, ``gold``, ``predicted``.

    Examples
    --------
    >>> cell_scores({(0, 1): {"D"}}, {(0, 1): {"D", "E"}}).precision
    0.5

    Raises
    ------
    TypeError
        When a chart is not a mapping ``{(i, j): nonterminals}``.
    ValueError
        When the charts are of sentences of different lengths.
    """
    _check_chart("gold", gold)
    _check_chart("predicted", predicted)
    n_gold, n_pred = _complete_length(gold), _complete_length(predicted)
    if n_gold is not None and n_pred is not None and n_gold != n_pred:
        raise ValueError(
            f"the charts are of sentences of different lengths ({n_gold} and {n_pred} "
            "words): score a parse against the chart of its own sentence"
        )
    g = chart_triples(gold)
    p = chart_triples(predicted)
    return Scores(tp=len(g & p), gold=len(g), predicted=len(p))


def _check_chart(name: str, chart: Any) -> None:
    if chart is None:
        raise TypeError(f"{name} must be a chart, a mapping {{(i, j): nonterminals}}, got None")
    check_chart(name, chart)


def _complete_length(chart: Chart) -> int | None:
    """n when ``chart`` holds every cell (i, j), 0 <= i < j <= n, of an n-word sentence (as
    cyk's and dcyk's charts do), else None."""
    if not chart:
        return None
    n = max(j for _, j in chart)
    return n if len(chart) == n * (n + 1) // 2 else None


def _label_of(node: Any) -> str:
    return node.label() if callable(getattr(node, "label", None)) else node.label


def _kids_of(node: Any) -> list[Any]:
    return list(node) if callable(getattr(node, "label", None)) else list(node.children)


def _check_tree(name: str, tree: Any) -> None:
    """Refuse what is not a tree (a fastdcyk Tree or an nltk.Tree), naming ``name``."""
    is_nltk = callable(getattr(tree, "label", None)) and isinstance(tree, list)
    if not (is_nltk or (hasattr(tree, "label") and hasattr(tree, "children"))):
        hint = " (parse it first: Tree.fromstring)" if isinstance(tree, str) else ""
        raise TypeError(f"{name} must be a Tree or an nltk.Tree, got {type(tree).__name__}{hint}")


def check_same_words(gold: Any, test: Any) -> None:
    """Refuse to score trees over different sentences, as evalb does ("Length unmatch",
    "Words unmatch"): their words must be the same, position by position.

    Raises
    ------
    ValueError
        Naming the lengths, or the first position where the words differ; and the empty
        elements (``-NONE-``) of a tree that holds them, which a treebank's tree does until
        :func:`fastdcyk.cfg.treebank.clean` removes them.
    """
    want, got = tuple(gold.leaves()), tuple(test.leaves())  # Tree's and nltk.Tree's
    if len(want) != len(got):
        raise ValueError(
            f"the trees are over sentences of different lengths (gold {len(want)} words, "
            f"test {len(got)}; evalb's 'Length unmatch'): " + _same_sentence_hint(gold, test)
        )
    for k, (a, b) in enumerate(zip(want, got, strict=True)):
        if a != b:
            raise ValueError(
                f"the trees' words differ at position {k} (gold {a!r}, test {b!r}; evalb's "
                "'Words unmatch'): " + _same_sentence_hint(gold, test)
            )


def _empty_elements(tree: Any) -> int:
    """How many words of ``tree`` are empty elements (under ``-NONE-``)."""
    count, stack = 0, [tree]
    while stack:
        node = stack.pop()
        kids = _kids_of(node)
        if _label_of(node) == "-NONE-":
            count += sum(isinstance(k, str) for k in kids)
        stack.extend(k for k in kids if not isinstance(k, str))
    return count


def _same_sentence_hint(gold: Any, test: Any) -> str:
    """What to do about trees over different words: remove the empty elements a tree
    holds, else score each tree against the gold tree of its own sentence."""
    counts = {"gold": _empty_elements(gold), "test": _empty_elements(test)}
    held = [f"the {name} tree holds {n}" for name, n in counts.items() if n]
    if not held:
        return "score a tree against the gold tree of the same sentence"
    return (
        f"{' and '.join(held)} empty element(s) (-NONE- leaves, no words of the sentence): "
        "remove them first with fastdcyk.cfg.treebank.clean(tree)"
    )


def labelled_brackets(
    tree: Any,
    *,
    delete: Iterable[str] = EVALB_DELETE,
    equal: Mapping[str, str] = EVALB_EQUAL,
) -> Counter[tuple[str, int, int]]:
    """The labelled brackets ``(label, i, j)`` of a tree, counted as evalb counts them.

    Words whose part-of-speech tag is in ``delete`` (punctuation, empty elements) are
    removed and the positions counted without them; every phrase (not the part-of-speech
    tags) with at least one word left gives a bracket, except those labelled in
    ``delete`` (the root); labels in ``equal`` are renamed (``PRT`` counts as ``ADVP``).

    Parameters
    ----------
    tree : Tree or nltk.Tree
        Anything with ``label`` and ``children`` (or an ``nltk.Tree``); words are str.
    delete : iterable of str
        Default: evalb's COLLINS.prm (``TOP ROOT -NONE- , : `` '' .``).
    equal : mapping of str to str
        Default ``{"PRT": "ADVP"}``, as COLLINS.prm.

    Returns
    -------
    collections.Counter
        A multiset: a unary chain of equal labels over one span counts twice.

    Examples
    --------
    >>> from fastdcyk.cfg.trees import Tree
    >>> t = Tree.fromstring("(ROOT (S (NP (DT the) (NN dog)) (VP (VBZ barks)) (. .)))")
    >>> sorted(labelled_brackets(t))
    [('NP', 0, 2), ('S', 0, 3), ('VP', 2, 3)]
    """
    _check_tree("tree", tree)
    if isinstance(delete, str) or not isinstance(delete, Iterable):
        hint = f" (one label: [{delete!r}])" if isinstance(delete, str) else ""
        raise TypeError(f"delete must be an iterable of labels, got {type(delete).__name__}{hint}")
    if not isinstance(equal, Mapping):
        raise TypeError(f"equal must be a mapping of label to label, got {type(equal).__name__}")
    deleted = frozenset(delete)
    out: Counter[tuple[str, int, int]] = Counter()

    def walk(node: Any, i: int) -> int:
        kids = _kids_of(node)
        label = _label_of(node)
        if len(kids) == 1 and isinstance(kids[0], str):  # a part-of-speech tag
            return i if label in deleted else i + 1
        j = i
        for kid in kids:
            j = j if isinstance(kid, str) else walk(kid, j)
        if j > i and label not in deleted:
            out[(equal.get(label, label), i, j)] += 1
        return j

    walk(tree, 0)
    return out


def evalb(gold: Any, test: Any | None, **options: Any) -> Scores:
    """Labelled bracket counts of ``test`` against ``gold``, as evalb counts them.

    Parameters
    ----------
    gold : Tree or nltk.Tree
    test : Tree, nltk.Tree or None
        None (no parse) scores its brackets as missed.
    **options
        ``delete`` and ``equal``, as :func:`labelled_brackets`.

    Returns
    -------
    Scores
        ``tp`` matched brackets (multiset intersection), ``gold`` and ``predicted`` the
        brackets of each tree; they add up over sentences (evalb's bracketing P/R/F1).

    Raises
    ------
    TypeError
        When ``gold`` or ``test`` is not a tree (a string: parse it first).
    ValueError
        When the two trees are over different words, or different numbers of words
        (evalb stops there too: "Words unmatch", "Length unmatch"); the message names the
        empty elements (``-NONE-``) a tree still holds, which
        :func:`fastdcyk.cfg.treebank.clean` removes.

    Examples
    --------
    >>> from fastdcyk.cfg.trees import Tree
    >>> gold = Tree.fromstring("(S (NP (DT the) (NN dog)) (VP (VBZ barks) (ADVP (RB loud))))")
    >>> test = Tree.fromstring("(S (NP (DT the) (NN dog)) (VP (VBZ barks)) (ADVP (RB loud)))")
    >>> s = evalb(gold, test)
    >>> s.tp, s.gold, s.predicted
    (3, 4, 4)
    """
    _check_tree("gold", gold)
    want = labelled_brackets(gold, **options)
    if test is None:
        return Scores(tp=0, gold=sum(want.values()), predicted=0)
    _check_tree("test", test)
    check_same_words(gold, test)
    got = labelled_brackets(test, **options)
    return Scores(
        tp=sum((want & got).values()), gold=sum(want.values()), predicted=sum(got.values())
    )

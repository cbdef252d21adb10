"""The readers under random and mutated input: a grammar or trees, or a clear error, never
anything else; and what loads survives its round trip."""

from __future__ import annotations

import warnings

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fastdcyk as fd
from fastdcyk.cfg.grammar import GrammarError, GrammarWarning
from fastdcyk.cfg.treebank import (
    TreebankGrammar,
    _prepare,
    _unprepare,
    check_shape,
    clean,
    read_trees,
)

PCFG = """S -> NP VP [1.0]
NP -> NP PP [0.2] | 'john' [0.3] | 'mary' [0.2] | Det N [0.3]
PP -> P NP [1.0]
VP -> V NP [0.6] | VP PP [0.4]
V -> 'saw' [1.0]
P -> 'with' [1.0]
Det -> 'the' [0.5] | 'a' [0.5]
N -> 'man' [0.5] | 'telescope' [0.5]
"""
TREES = (
    "( (S (NP-SBJ (DT the) (NN dog)) (VP (VBZ barks) (PP-LOC (IN near) (NP (DT the) "
    "(NN+X cat)))) (. .)) )\n( (S (NP (PRP it)) (VP (VBD slept)) (-NONE- *T*-1)) )\n"
)
# the characters the formats give a meaning to, and some that they do not
SIGNIFICANT = list("()[]|'\"->.0123456789 \n\t#%+<^") + ["->", "[0.5]", "'x'", "é", "\\"]
LIMITS = settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)


def _mutations(text: str):
    """A strategy: ``text`` with up to six edits (a character deleted, replaced or inserted
    at a random place)."""
    edit = st.tuples(
        st.sampled_from(("delete", "replace", "insert")),
        st.integers(min_value=0, max_value=len(text)),
        st.sampled_from(SIGNIFICANT),
    )

    def apply(edits):
        out = text
        for kind, at, piece in edits:
            at = min(at, len(out))
            if kind == "delete":
                out = out[:at] + out[at + 1 :]
            elif kind == "replace":
                out = out[:at] + piece + out[at + 1 :]
            else:
                out = out[:at] + piece + out[at:]
        return out

    return st.lists(edit, min_size=1, max_size=6).map(apply)


@LIMITS
@given(_mutations(PCFG))
def test_a_mutated_pcfg_text_loads_or_is_refused_clearly(text):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GrammarWarning)
        try:
            g = fd.Grammar.from_string(text, cnf="allow")
        except GrammarError as exc:  # a ValueError that names the line where it can
            assert str(exc)
            return
        try:
            written = g.to_string()
        except ValueError as exc:  # weights that are no probabilities: said, not written
            assert "not all <= 0" in str(exc)
            return
        assert fd.Grammar.from_string(written, cnf="allow") == g


@LIMITS
@given(_mutations(TREES))
def test_mutated_bracketed_trees_load_or_are_refused_clearly(text):
    try:
        trees = read_trees(text)
    except ValueError as exc:
        assert str(exc)
        return
    for k, tree in enumerate(trees):
        assert fd.Tree.fromstring(str(tree)) == tree  # the bracketed form reads back
        cleaned = clean(tree)
        if cleaned is None:
            continue
        try:
            check_shape(cleaned, k)
        except ValueError as exc:
            assert f"tree {k}:" in str(exc)
            continue
        for parent in (False, True):  # the transforms undo exactly, any label
            assert _unprepare(_prepare(cleaned, 1, parent)) == cleaned
    try:
        tb = TreebankGrammar.from_trees(trees, rare=0)
    except (ValueError, GrammarError) as exc:
        assert str(exc)
        return
    assert tb.grammar.is_cnf


_labels = st.text(alphabet="ABNPVS+|<>^%-$", min_size=1, max_size=5).filter(
    lambda s: not s.startswith("-") or s in ("-LRB-",)
)


@LIMITS
@given(st.lists(_labels, min_size=3, max_size=3))
def test_any_label_comes_back_through_a_parse(labels):
    a, b, c = labels
    tree = fd.Tree(a, [fd.Tree(b, ["x"]), fd.Tree(c, [fd.Tree("T", ["y"]), fd.Tree("U", ["z"])])])
    cleaned = clean(tree)
    if cleaned is None or cleaned.label in (b,):  # labels stripped to collide: not this test
        return
    tb = TreebankGrammar.from_trees([cleaned], rare=0)
    assert tb.parse("x y z").tree == fd.Tree("ROOT", [cleaned])

"""The recipes of docs/interop.md: nengo-spa's algebra is fastdcyk's (run when installed).

nengo-spa multiplies semantic pointers by circular convolution and inverts them
approximately by the involution; fastdcyk's operators are C_s (the circulant of s) and the
permutation Phi: [s]+ = C_s Phi and [s]- = Phi^T C_s^T. These tests check that
correspondence, and the round trips of a codebook's vectors through a Vocabulary.
"""

from __future__ import annotations

import numpy as np
import pytest

import fastdcyk as fd

spa = pytest.importorskip("nengo_spa")

D = 64
RTOL = 1e-10  # float64 throughout: FFT rounding only


def _vocabulary(keys: str, d: int = D, seed: int = 0):
    vocab = spa.Vocabulary(d, pointer_gen=np.random.RandomState(seed))
    vocab.populate(keys)
    return vocab


def test_convolution_and_involution_are_our_circulant_and_its_transpose():
    vocab = _vocabulary("A; B")
    a, b = vocab["A"], vocab["B"]
    cb = fd.Codebook(D, dtype="float64")
    c = cb.circulant(vector=a.v)
    y = b.v[:, None]
    np.testing.assert_allclose((c @ y)[:, 0], (a * b).v, rtol=RTOL, atol=1e-13)
    np.testing.assert_allclose((c.T @ y)[:, 0], (~a * b).v, rtol=RTOL, atol=1e-13)


def test_plus_and_minus_are_binding_around_the_permutation():
    vocab = _vocabulary("NP; VP")
    perm = np.random.default_rng(1).permutation(D)
    cb = fd.Codebook.from_vectors(
        nonterminals={k: vocab[k].v for k in vocab.keys()}, permutation=perm, dtype="float64"
    )
    x = np.random.default_rng(2).standard_normal(D)
    # [s]+ x = s (*) Phi x, with (Phi x)[k] = x[perm[k]]
    plus = (cb.plus("nonterminal", "NP") @ x[:, None])[:, 0]
    expected = (vocab["NP"] * spa.SemanticPointer(x[perm])).v
    np.testing.assert_allclose(plus, expected, rtol=RTOL, atol=1e-13)
    # [s]- y = Phi^T (~s (*) y)
    minus = (cb.minus("nonterminal", "VP") @ x[:, None])[:, 0]
    back = np.empty(D)
    back[perm] = (~vocab["VP"] * spa.SemanticPointer(x)).v
    np.testing.assert_allclose(minus, back, rtol=RTOL, atol=1e-13)


def test_a_vocabulary_parses_as_a_codebook_and_a_codebook_round_trips():
    """The recipe of docs/interop.md: a Vocabulary of unitary pointers (nengo-spa's own
    generator) as the trace variant's codebook, and a codebook's vectors back into one."""
    g = fd.Grammar.builtin("G0")
    d = 1024
    unitary = spa.vector_generation.UnitaryVectors(
        d, spa.algebras.HrrAlgebra(), rng=np.random.RandomState(3)
    )
    vocab = spa.Vocabulary(d, pointer_gen=unitary)
    # nengo-spa keys are capitalised identifiers: the recipe prefixes what is not one
    for prefix, names in (("", g.nonterminals), ("R_", g.nonterminals),
                          ("T_", g.terminals), ("I_", range(8))):  # fmt: skip
        vocab.populate("; ".join(f"{prefix}{x}" for x in names))
    cb = fd.Codebook.from_vectors(
        nonterminals={a: vocab[a].v for a in g.nonterminals},
        right={a: vocab[f"R_{a}"].v for a in g.nonterminals},  # the roles encoding's X'
        terminals={w: vocab[f"T_{w}"].v for w in g.terminals},
        indices=[vocab[f"I_{k}"].v for k in range(8)],
        permutation=np.random.default_rng(0).permutation(d),
        dtype="float64",
    )
    total = fd.Scores(0, 0, 0)
    for words in fd.generate(g, 20, min_len=3, max_len=7, seed=0):
        total = total + fd.cell_scores(
            fd.cyk(g, words), fd.dcyk(g, words, cb, variant="trace").chart
        )
    assert total.f1 >= 0.99  # the trace variant's fidelity target at d = 1024 (docs/results.md)
    np.testing.assert_array_equal(cb.vector("terminal", "fish"), vocab["T_fish"].v)
    # and back: a Vocabulary of the codebook's vectors holds the same numbers
    again = spa.Vocabulary(d)
    for a in g.nonterminals:
        again.add(a, cb.vector("nonterminal", a))
        np.testing.assert_array_equal(again[a].v, vocab[a].v)

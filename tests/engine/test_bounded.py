"""The bounded read of a cell of more regressors than dimensions (docs/method.md, section 7,
"Beyond d: the bounded read"): :func:`~fastdcyk.engine.core.readback.bounded_solve` and the
parses that use it."""

from __future__ import annotations

import numpy as np
import pytest

import fastdcyk as fd
from fastdcyk.engine.core.certificate import bounded_read_errors, decision_bound
from fastdcyk.engine.core.readback import (
    RIDGE,
    bounded_read,
    bounded_solve,
    gram,
    read_cell,
    solve,
)


def _cell(rng: np.random.Generator, k: int, d: int, items: int) -> tuple[np.ndarray, np.ndarray]:
    """k random unit-norm vectors in d dimensions, and a 0/1 vector with ``items`` ones."""
    v = rng.standard_normal((k, d))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    truth = np.zeros(k)
    truth[rng.choice(k, items, replace=False)] = 1.0
    return v, truth


def test_a_vertex_of_the_box_is_read_beyond_d():
    """96 candidates in 64 dimensions, 60 of them items: no linear read separates them
    (the ridge solve's decisions are wrong), the bounded read finds every decision, its
    amplitudes within the ridge's bias (about 1e-3 / the fit's restoring force)."""
    rng = np.random.default_rng(0)
    v, truth = _cell(rng, 96, 64, 60)
    g = gram(v)
    x = g @ truth
    a = bounded_solve(g, x)
    assert np.array_equal(a > 0.5, truth > 0.5)
    assert np.max(np.abs(a - truth)) < 0.05
    assert not np.array_equal(solve(g, x) > 0.5, truth > 0.5)


def test_inside_the_box_it_is_the_ridge_solve():
    """Amplitudes strictly inside [0, 1] and fewer regressors than dimensions: the bounds
    are not active, and the bounded read is the ridge solve (to rounding)."""
    rng = np.random.default_rng(1)
    v = rng.standard_normal((20, 64)) / 8
    g = gram(v)
    x = g @ rng.uniform(0.2, 0.8, 20)
    np.testing.assert_allclose(bounded_solve(g, x), solve(g, x), rtol=0, atol=1e-9)


@pytest.mark.parametrize("seed", [2, 3])
def test_the_bounded_read_meets_the_optimality_conditions(seed):
    """A noisy read of 80 regressors in 48 dimensions: the result is in the box and a fixed
    point of the projected gradient step of a^T (G + ridge I) a / 2 - a.x (what defines
    the minimum of a convex function over a box)."""
    rng = np.random.default_rng(seed)
    v, truth = _cell(rng, 80, 48, 50)
    g = gram(v)
    x = g @ truth + 0.05 * rng.standard_normal(80)
    a = bounded_solve(g, x)
    assert np.all((a >= 0.0) & (a <= 1.0))
    gr = g + RIDGE * np.trace(g) / len(x) * np.eye(len(x))
    step = 1.0 / np.linalg.eigvalsh(gr)[-1]
    np.testing.assert_allclose(np.clip(a - step * (gr @ a - x), 0, 1), a, atol=1e-7)


def test_bounds_of_each_amplitude():
    """Per-amplitude bounds (the decode's sweeps solve for a correction da with a + da in
    [0, 1]): respected, and the same point as the box [0, 1] shifted."""
    rng = np.random.default_rng(4)
    v, truth = _cell(rng, 70, 48, 40)
    g = gram(v)
    start = np.clip(truth + 0.1 * rng.standard_normal(70), 0, 1)
    da = bounded_solve(g, g @ (truth - start), -start, 1.0 - start)
    assert np.all(start + da >= -1e-12) and np.all(start + da <= 1 + 1e-12)
    assert np.array_equal(start + da > 0.5, truth > 0.5)


def test_read_cell_chooses_by_the_dimension():
    """Up to BOUNDED_FROM d regressors: the ridge solve (amplitudes may leave [0, 1]);
    beyond: bounded."""
    rng = np.random.default_rng(5)
    v = rng.standard_normal((27, 32)) / 6
    g = gram(v)
    x = g @ np.full(27, 1.5)  # amplitudes above the box: only the ridge solve reads them
    assert not bounded_read(27, 30) and bounded_read(27, 29)
    assert np.allclose(read_cell(g, x, 30), solve(g, x))
    assert np.max(read_cell(g, x, 29)) <= 1.0
    assert read_cell(np.zeros((0, 0)), np.zeros(0), 4).shape == (0,)


def _noisy_read(k: int, items: int, seed: int, d: int = 64, noise: float = 0.01):
    """A bounded read of k regressors in d dimensions, ``items`` of them present, with
    isotropic noise: whether its decisions are right, and its certificate's bound."""
    rng = np.random.default_rng(seed)
    v, truth = _cell(rng, k, d, items)
    r = v.T @ truth + noise * rng.standard_normal(d)
    g, x = gram(v), v @ r
    a = bounded_solve(g, x)
    t, se = bounded_read_errors(g, x, a, float(r @ r), d)
    return np.array_equal(a > 0.592, truth > 0.5), decision_bound(t, se, 0.592)[1]


def test_the_certificate_of_a_bounded_read():
    """96 regressors in 64 dimensions, read right: a negligible bound. 200 of them (beyond
    2d, where the box has other fits), read wrong: the cell is flagged (its inner
    amplitudes outnumber d, so every decision has an infinite error)."""
    right, bound = _noisy_read(96, 60, 0)
    assert right and bound < 1e-12
    right, bound = _noisy_read(200, 100, 0)
    assert not right and bound >= 1.0


# -- parses ------------------------------------------------------------------------------------


def _wide_grammar(preterminals: int) -> fd.Grammar:
    """A word with ``preterminals`` nonterminals over it: S -> P_k B for each, P_k -> 'a',
    B -> 'b'; the cell of 'a' holds them all, the sentence's cell holds S."""
    rules = [f"S -> P{k} B" for k in range(preterminals)]
    rules += [f"P{k} -> 'a'" for k in range(preterminals)] + ["B -> 'b'"]
    return fd.Grammar.from_string("\n".join(rules))


def test_a_cell_of_more_symbols_than_d_parses_exactly():
    """45 preterminals of one word at d = 32: the parse's chart is symbolic CYK's (the
    least-squares read of the same cell, capped at d regressors, is not)."""
    g = _wide_grammar(45)
    words = ["a", "b"]
    r = fd.dcyk(g, words, d=32, variant="cleanup")
    assert len(r.chart[(0, 1)]) == 45 > 32
    assert r.chart == fd.cyk(g, words)


def test_commandtalk_cells_beyond_d(commandtalk, big_cells):
    """CommandTalk at d = 256: the sentence whose one-word cell ("that") holds more than 256 symbols
    parses exactly, in the cell and the width order, and the certificate is sure of it."""
    g, s = commandtalk, big_cells.sentences[0]
    gold = fd.cyk(g, s.split())
    assert max(len(c) for c in gold.values()) > 256
    cb = fd.Codebook.for_grammar(g, 256, 0)
    for order in ("cell", "width"):
        r = fd.dcyk(g, s, cb, variant="cleanup", order=order)
        assert r.chart == gold and r.sure


def test_torch_equals_numpy_and_gradcheck_beyond_d(torch_one_thread):
    """The torch backend reads a cell of more than d symbols as numpy does (float64, 1e-8),
    and the gradient through the bounded read is its own (gradcheck: the symbol vectors
    and the rule weights; amplitudes held at a bound have none)."""
    torch = torch_one_thread
    from fastdcyk.engine.backends.torch import driver as torch_backend
    from fastdcyk.options import resolve

    g = _wide_grammar(45)
    cb = fd.Codebook.for_grammar(g, 32, 0, dtype="float64")
    words = ["a", "b"]
    ref = fd.dcyk(g, words, cb, variant="cleanup")
    got = fd.dcyk(g, words, cb, variant="cleanup", backend="torch")
    np.testing.assert_allclose(got.statistics.array, ref.statistics.array, atol=1e-8, rtol=0)
    assert got.chart == ref.chart == fd.cyk(g, words)

    st = torch_backend.rule_structure(g)
    opt = resolve("cleanup", dtype=np.float64)
    base = torch_backend.symbol_vectors(cb, st, 2, encoding="roles")
    sents = [st.terminal_ids(words)]

    def statistics(nonterminal, right, terminal, unary_weights, binary_weights):
        vec = torch_backend.SymbolVectors(terminal, nonterminal, right, base.index, base.perm)
        kw = {"unary_weights": unary_weights, "binary_weights": binary_weights}
        return torch_backend.parse_tensors(vec, st, sents, opt, **kw).statistics

    inputs = (
        base.nonterminal.clone().requires_grad_(),
        base.right.clone().requires_grad_(),
        base.terminal.clone().requires_grad_(),
        torch.linspace(0.9, 1.1, st.n_unary_rules, dtype=torch.float64).requires_grad_(),
        torch.linspace(0.9, 1.1, st.n_binary_rules, dtype=torch.float64).requires_grad_(),
    )
    assert torch.autograd.gradcheck(statistics, inputs, fast_mode=True, atol=1e-6, rtol=1e-4)

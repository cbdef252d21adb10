"""The torch backend (fastdcyk.engine.backends.torch.driver) against the numpy backend, its
gradients and batches."""

from __future__ import annotations

import itertools
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import fastdcyk as fd
from fastdcyk.engine import default_codebook
from fastdcyk.engine.batch import dcyk_batch
from fastdcyk.engine.core.plan import Plan
from fastdcyk.hrr import buffers as _buffers
from fastdcyk.hrr import memory as _memory
from fastdcyk.options import resolve
from fastdcyk.registry import backends

torch = pytest.importorskip("torch")
from fastdcyk.engine.backends.torch import driver as torch_backend  # noqa: E402 - needs torch
from fastdcyk.engine.backends.torch import later as torch_later  # noqa: E402
from fastdcyk.engine.backends.torch import parser as torch_common  # noqa: E402


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """One intra-op thread while these tests run: their tensors are tiny, and on a busy
    machine torch's thread pool waiting for cores costs far more than it saves."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


#: A grammar with rules A -> B B (docs/method.md, section 3: the paper's encoding collapses).
SAME_CHILD = """
S -> S S | A B
A -> A A | 'a'
B -> B B | 'b'
"""
#: (grammar, sentence, d). The entrywise gate in the paper's order amplifies rounding (each
#: gate up to beta / 4 = 12.5 times, docs/method.md, section 4): on "fish swim fish near
#: fish" the two backends differ by up to 2e-8 relative at d = 48 (8e-9 at d = 40), on the
#: 4-word sentence below by at most 8e-10 at d = 40, 48 and 64.
CASES = {
    "G0": (fd.Grammar.builtin("G0"), "fish swim near fish", 40),
    "same-child": (fd.Grammar.from_string(SAME_CHILD), "a a b b", 33),
}
OPTIONS = list(
    itertools.product(
        ("paper", "trace"),  # variant: the codebook (Gaussian or unitary and shifted)
        ("entrywise", "trace"),  # gate
        ("entry", "trace"),  # decoder
        (False, True),  # unary_mask
        ("paper", "roles"),  # encoding
        ("sequential", "cell"),  # order
    )
)


def _options_id(o: tuple) -> str:
    return "-".join("mask" if v is True else "nomask" if v is False else v for v in o)


def _codebook(grammar, d, variant, dtype="float64"):
    return default_codebook(grammar, d, 3, dtype, unitary=variant == "trace")


def _assert_same(a: fd.DCYKResult, b: fd.DCYKResult, rtol: float) -> None:
    for x, y in ((a.p_left, b.p_left), (a.p_right, b.p_right)):
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_allclose(y, x, rtol=rtol, atol=rtol * max(np.abs(x).max(), 1e-300))
    assert a.statistics.keys() == b.statistics.keys()
    scale = max(abs(v) for v in a.statistics.values())
    for key, value in a.statistics.items():
        assert b.statistics[key] == pytest.approx(value, rel=rtol, abs=rtol * scale), key
    assert a.chart == b.chart
    assert a.counts == b.counts


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("options", OPTIONS, ids=_options_id)
def test_float64_matches_numpy_engine(case, options):
    grammar, sentence, d = CASES[case]
    variant, gate, decoder, unary_mask, encoding, order = options
    cb = _codebook(grammar, d, variant)
    kw = dict(
        variant=variant,
        gate=gate,
        decoder=decoder,
        unary_mask=unary_mask,
        encoding=encoding,
        order=order,
    )
    ref = fd.dcyk(grammar, sentence, cb, **kw)
    got = fd.dcyk(grammar, sentence, cb, backend="torch", **kw)
    assert got.options == ref.options and got.words == ref.words
    assert set(got.timings) == {"unary", "binary", "decode"}
    _assert_same(ref, got, 1e-8)
    # decode() and friends work on the result unchanged
    assert fd.decode(got, threshold=0.9) == fd.decode(ref, threshold=0.9)


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize(
    ("readback", "decoder", "order"),
    [
        ("lstsq", None, "cell"),
        ("lstsq", None, "sequential"),
        ("cancel", None, "cell"),
        ("cancel", None, "sequential"),
        ("matched", "trace", "cell"),
        ("matched", "trace", "sequential"),
        ("matched", "entry", "cell"),
        ("lstsq", None, "width"),
        ("cancel", None, "width"),
        ("matched", "trace", "width"),
    ],
)
def test_cleanup_float64_matches_numpy_engine(case, readback, decoder, order):
    grammar, sentence, d = CASES[case]
    cb = _codebook(grammar, d, "trace")
    kw = dict(variant="cleanup", readback=readback, decoder=decoder, order=order)
    ref = fd.dcyk(grammar, sentence, cb, **kw)
    got = fd.dcyk(grammar, sentence, cb, backend="torch", **kw)
    _assert_same(ref, got, 1e-8)
    assert not got.p_right.any()  # the clean-up gate never writes P_right


@pytest.mark.parametrize("variant", ["paper", "trace", "cleanup"])
def test_float32_matches_numpy_engine(variant):
    g, s, _ = CASES["G0"]
    cb = _codebook(g, 64, variant, "float32")
    # beta = 2: each gate amplifies a difference by at most beta / 4 < 1 (test_dcyk.py), so
    # the two float32 computations must agree to a small multiple of float32's epsilon
    ref = fd.dcyk(g, s, cb, variant=variant, beta=2.0)
    got = fd.dcyk(g, s, cb, variant=variant, beta=2.0, backend="torch")
    eps = float(np.finfo(np.float32).eps)
    for x, y in ((ref.p_left, got.p_left), (ref.p_right, got.p_right)):
        assert y.dtype == np.float32
        assert np.abs(x - y).max() <= 1000 * eps * np.abs(x).max()
    for key, value in ref.statistics.items():
        assert got.statistics[key] == pytest.approx(value, abs=1000 * eps)
    assert got.counts == ref.counts


def test_float32_default_variant_exact_on_running_example():
    g = fd.Grammar.builtin("example")
    r = fd.dcyk(g, "a a b", d=256, variant="trace", backend="torch")
    assert r.p_left.dtype == np.float32
    assert r.chart == fd.cyk(g, "a a b")


def test_small_g_cache_changes_nothing(monkeypatch):
    g, s, _ = CASES["G0"]
    cb = _codebook(g, 32, "trace")
    ref = fd.dcyk(g, s, cb, variant="trace", order="sequential", backend="torch")
    monkeypatch.setattr(_buffers, "G_CACHE_BYTES", 0)  # two slots: G_k computed again
    monkeypatch.setattr(_memory, "available_memory", lambda: 0)
    torch_backend.release_caches(cb)
    kw = {"variant": "trace", "order": "sequential", "check_memory": False}
    got = fd.dcyk(g, s, cb, backend="torch", **kw)
    _assert_same(ref, got, 1e-12)


def test_g_cache_is_sized_from_the_free_memory(monkeypatch):
    """At d = 6000 a G_k is 144 MB: the 256 MB of the numpy backend hold two, the torch
    backend keeps one per span index when a quarter of the free memory holds them."""
    size = _buffers.g_matrix(0).nbytes(6000, "float32")
    assert _buffers.g_cache_slots(6000, "float32", 10) == 2
    assert _buffers.g_cache_slots(6000, "float32", 10, budget=11 * size) == 11
    assert _buffers.g_cache_slots(6000, "float32", 10, budget=5 * size) == 5
    assert _buffers.g_cache_slots(6000, "float32", 10, budget=0) == 2  # at least the default
    monkeypatch.setattr(_memory, "available_memory", lambda: 44 * size)
    assert torch_common.free_bytes(torch.device("cpu")) // 4 == 11 * size
    monkeypatch.setattr(_memory, "available_memory", lambda: None)  # unknown: the default
    assert torch_common.free_bytes(torch.device("cpu")) == 0


def test_record_log_matches_numpy():
    g, s, _ = CASES["G0"]
    cb = _codebook(g, 32, "paper")
    for kw in ({"variant": "paper"}, {"variant": "trace", "order": "sequential"}):
        ref = fd.dcyk(g, s, cb, record=True, **kw)
        got = fd.dcyk(g, s, cb, record=True, backend="torch", **kw)
        assert len(got.log) == len(ref.log)
        for a, b in zip(ref.log, got.log, strict=True):
            assert {k: a[k] for k in ("step", "i", "j", "A", "applied")} == {
                k: b[k] for k in ("step", "i", "j", "A", "applied")
            }
            assert b["p_diag_mean"] == pytest.approx(a["p_diag_mean"], rel=1e-6, abs=1e-9)
            assert b["p_max"] == pytest.approx(a["p_max"], rel=1e-6, abs=1e-9)


# -- batches ----------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["paper", "trace", "cleanup"])
def test_batch_equals_single_sentences(variant):
    g = fd.Grammar.builtin("G0")
    sents = ["fish swim", "fish swim fish near fish", "fish", "fish swim fish"]
    cb = _codebook(g, 32, variant)
    batch = dcyk_batch(g, sents, cb, variant=variant, batch_size=3, backend="torch")
    for s, r in zip(sents, batch, strict=True):
        one = fd.dcyk(g, s, cb, variant=variant, backend="torch")
        assert r.words == one.words
        _assert_same(one, r, 1e-10)
    by_numpy = dcyk_batch(g, sents, cb, variant=variant, backend="numpy")
    for a, b in zip(by_numpy, batch, strict=True):
        _assert_same(a, b, 1e-8)


@pytest.mark.parametrize("readback", ["cancel", "lstsq"])
def test_a_batch_of_mixed_lengths_in_width_order_equals_its_sentences(readback):
    """In the "width" order the batch's shorter sentences sit out the widths they do not
    have (the ledger's active mask), and every sentence parses as it does alone, on
    either backend."""
    g = fd.Grammar.builtin("G4")
    sents = fd.generate(g, 5, min_len=2, max_len=9, seed=5)
    assert len({len(s) for s in sents}) > 2
    cb = _codebook(g, 64, "cleanup")
    kw = dict(variant="cleanup", readback=readback, order="width")
    batch = dcyk_batch(g, sents, cb, batch_size=5, **kw, backend="torch")
    for s, r in zip(sents, batch, strict=True):
        _assert_same(fd.dcyk(g, s, cb, **kw), r, 1e-8)


@pytest.mark.parametrize("order", ["cell", "width"])
@pytest.mark.parametrize("reads", ["grams", "table", 1, 2])
def test_cancelling_groups_of_any_size_read_as_cell_by_cell(monkeypatch, order, reads):
    """Cancelling, the torch parser reads its cells in turn in groups
    (fastdcyk.engine.modes.cleanup.turns): the whole parse as one group read from the
    Gram matrices of the reads' index matrices ("grams", no residual table), or a
    column's (a width's) cells from one sweep of the residual table, whole or cut into
    groups of one or two cells (as when the index matrices do not fit the memory). Each
    gives the numpy backend's cell-by-cell parse; the sentences (up to 9 words, 54 reads)
    span several of the blocks in which the reads' nets enter the later reads."""
    from fastdcyk.engine.modes.cleanup import torch_parser, turns

    monkeypatch.setattr(torch_parser.TorchCleanupParser, "_reads_whole", lambda p: reads == "grams")
    if reads not in ("grams", "table"):
        monkeypatch.setattr(torch_parser.TorchCleanupParser, "_chunk", lambda self: reads)
    g = fd.Grammar.builtin("G4")
    size = torch_parser.TURN_BATCH  # the smallest batch read in groups
    sents = fd.generate(g, size, min_len=3, max_len=9, seed=11)
    assert max(map(len, sents)) * (max(map(len, sents)) + 3) // 2 > 2 * turns.BLOCK
    cb = _codebook(g, 64, "cleanup")
    torch_backend.release_caches(cb)
    kw = dict(variant="cleanup", readback="cancel", order=order)
    batch = dcyk_batch(g, sents, cb, batch_size=size, backend="torch", **kw)
    again = dcyk_batch(g, sents, cb, batch_size=size, backend="torch", **kw)
    for s, a, b in zip(sents, batch, again, strict=True):
        ref = fd.dcyk(g, s, cb, **kw)
        _assert_same(ref, a, 1e-8)
        _assert_same(a, b, 0.0)  # the second from the codebook's kept Gram matrices
    kept = torch_backend._G_CACHES[cb][("cpu", torch.float64)].get("grams")
    assert (kept is not None) == (reads == "grams")


@pytest.mark.parametrize("given", ["soft", "preterminals"])
def test_cancelling_from_the_gram_matrices_with_soft_inputs(monkeypatch, given):
    """Soft terminals (a mixture written and read for each word) and preterminal scores
    (nothing written before the first cell) read from the Gram matrices give what the
    residual table's sweeps give."""
    from fastdcyk.engine.modes.cleanup import torch_parser

    g = fd.Grammar.builtin("G4")
    sents = fd.generate(g, torch_parser.TURN_BATCH, min_len=3, max_len=7, seed=4)
    cb = _codebook(g, 64, "cleanup")
    opt = resolve("cleanup", readback="cancel", dtype=np.float64)
    st = torch_backend.rule_structure(g)
    n = max(map(len, sents))
    vec = torch_backend.symbol_vectors(cb, st, n, encoding=opt.encoding)
    ids = [st.terminal_ids(s) for s in sents]
    gen = torch.Generator().manual_seed(0)
    kw = {}
    if given == "soft":
        x = torch.rand((len(sents), n, len(st.terminals)), generator=gen, dtype=torch.float64)
        for b, s in enumerate(ids):
            x[b, range(len(s)), s] += 4.0
        kw["terminal_weights"] = x / x.sum(-1, keepdim=True)
    else:
        x = torch.rand((len(sents), n, len(st.unary)), generator=gen)
        kw["preterminal_scores"] = x.to(torch.float64)
    got = {}
    for whole in (True, False):
        monkeypatch.setattr(torch_parser.TorchCleanupParser, "_reads_whole", lambda p, w=whole: w)
        with torch.no_grad():
            got[whole] = torch_backend.parse_tensors(vec, st, ids, opt, dense=True, **kw)
    a, b = got[True], got[False]
    scale = float(b.statistics.abs().max())
    assert scale > 0
    assert float((a.statistics - b.statistics).abs().max()) <= 1e-10 * scale
    assert float((a.p_left - b.p_left).abs().max()) <= 1e-10 * float(b.p_left.abs().max())


def test_the_gram_matrices_are_read_where_they_cost_less():
    """The whole parse is read from the Gram matrices where computing them costs no more
    than the residual table's sweeps (short sentences, or a large batch), or where the
    codebook keeps them for the same length and order; never past the group's memory."""
    from fastdcyk.engine.modes.cleanup import torch_parser

    g = fd.Grammar.builtin("G4")
    cb = _codebook(g, 64, "cleanup")
    opt = resolve("cleanup", readback="cancel", dtype=np.float64)
    st = torch_backend.rule_structure(g)

    def parser(n, batch):
        vec = torch_backend.symbol_vectors(cb, st, n, encoding=opt.encoding)
        words = torch.zeros((batch, n), dtype=torch.int64)
        args = (vec, st, opt, words, [n] * batch, None, None, False, None, None)
        return torch_parser.TorchCleanupParser(*args, g_cache=cache)

    cache = {}
    # 10 words: 55 cells and 10 words' reads; K's entries 10 * 65 + 55^2 / 2 = 2162
    assert parser(10, 32)._whole  # against 2 * 32 * 65 = 4160
    assert not parser(10, 8)._whole  # against 2 * 8 * 65 = 1040
    assert not parser(20, 32)._whole
    p = parser(20, 32)
    p._whole = True
    p.initialise()  # made, and kept for the next parse of 20 words in the cell order
    assert parser(20, 32)._whole and parser(20, 8)._whole
    assert not parser(19, 32)._whole
    small = parser(10, 32)
    small._turn_budget = 1024  # bytes
    assert not small._reads_whole()


@pytest.mark.parametrize("learn_index", [False, True])
@pytest.mark.parametrize("chunk", [None, 1, 2])
def test_cancelling_groups_under_autograd_give_the_same_values(monkeypatch, learn_index, chunk):
    """Under autograd the groups read in turn take their out-of-place paths (the later
    reads' corrections, the residual's and P_left's updates; in place for the residual
    when the index vectors are fixed): the statistics and P_left are still the numpy
    backend's, for whole groups and groups of one or two cells."""
    from fastdcyk.engine.modes.cleanup import torch_parser

    if chunk is not None:
        monkeypatch.setattr(torch_parser.TorchCleanupParser, "_chunk", lambda self: chunk)
    g = fd.Grammar.builtin("G4")
    sents = fd.generate(g, torch_parser.TURN_BATCH, min_len=4, max_len=8, seed=13)
    cb = _codebook(g, 48, "cleanup")
    opt = resolve("cleanup", readback="cancel", dtype=np.float64)
    st = torch_backend.rule_structure(g)
    vec = torch_backend.symbol_vectors(cb, st, max(map(len, sents)), encoding=opt.encoding)
    vec.nonterminal.requires_grad_(True)
    vec.index.requires_grad_(learn_index)
    ids = [st.terminal_ids(s) for s in sents]
    res = torch_backend.parse_tensors(vec, st, ids, opt, dense=True)
    assert res.p_right is None  # the clean-up gate never writes P_right
    (res.statistics.sum() + res.p_left.sum()).backward()  # the graph is whole
    assert vec.nonterminal.grad is not None
    for b, s in enumerate(sents):
        ref = fd.dcyk(g, s, cb, variant="cleanup", readback="cancel")
        n = len(s)
        got = res.statistics[b, :n, : n + 1].detach().numpy()
        scale = np.abs(ref.statistics.array).max()
        np.testing.assert_allclose(got, ref.statistics.array, atol=1e-10 * scale)
        left = res.p_left[b].detach().numpy()
        np.testing.assert_allclose(left, ref.p_left, atol=1e-10 * np.abs(ref.p_left).max())


def test_cancelling_without_dense_keeps_no_writes_for_p_left(monkeypatch):
    """With ``dense=False`` (the experiment grid, the layer) the cancelling parser keeps no
    cell's write for P_left, which no read sees: the same statistics as with it."""
    from fastdcyk.engine.modes.cleanup import torch_parser

    kept = []
    defer = torch_parser.TorchCleanupParser.defer_writes

    def spy(self, writes):
        defer(self, writes)
        kept.append((self.wants_dense, len(self._unwritten)))

    monkeypatch.setattr(torch_parser.TorchCleanupParser, "defer_writes", spy)
    g = fd.Grammar.builtin("G2")
    sents = [
        tuple(s) for s in fd.generate(g, torch_parser.TURN_BATCH, min_len=3, max_len=6, seed=2)
    ]
    cb = _codebook(g, 48, "cleanup")
    opt = resolve("cleanup", readback="cancel", dtype=np.float64)
    plan = Plan(g, sents, opt, cb)
    torch_record = backends.get("torch")
    with_p = torch_backend.parse(plan, torch_record)
    without = torch_backend.parse(plan, torch_record, dense=False)
    for a, b in zip(with_p, without, strict=True):
        assert b.p_left is None and b.p_right is None
        assert a.chart == b.chart and a.statistics == b.statistics
        p_right = a.p_right  # made when asked for, on the CPU
        assert not p_right.any() and p_right.flags.owndata
    assert {dense for dense, _ in kept} == {True, False}
    assert all(count == 0 for dense, count in kept if not dense)
    assert any(count > 0 for dense, count in kept if dense)


def test_parse_core_masks_and_shapes():
    g = fd.Grammar.builtin("G0")
    st = torch_backend.rule_structure(g)
    cb = _codebook(g, 32, "trace")
    opt = resolve("trace", dtype=np.float64)
    vec = torch_backend.symbol_vectors(cb, st, 4, encoding=opt.encoding)
    sents = [st.terminal_ids(["fish", "swim"]), st.terminal_ids("fish swim fish near".split())]
    res = torch_backend.parse_tensors(vec, st, sents, opt, dense=True)
    n_nt = len(g.nonterminals)
    assert res.statistics.shape == res.readouts.shape == (2, 4, 5, n_nt)
    assert res.mask[0].sum() == 3 and res.mask[1].sum() == 10
    assert not res.statistics[0][~res.mask[0]].any()
    assert res.p_left.shape == (2, 32, 32) and res.lengths == [2, 4]
    lean = torch_backend.parse_tensors(vec, st, sents, opt, readouts=False)  # not gathered
    assert lean.readouts is None
    torch.testing.assert_close(lean.statistics, res.statistics)
    one = torch_backend.parse_tensors(vec, st, sents[:1], opt, dense=True)
    torch.testing.assert_close(one.statistics[0, :2, :3], res.statistics[0, :2, :3])
    torch.testing.assert_close(one.p_left[0], res.p_left[0])


# -- gradients ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gate", "decoder", "order", "encoding"),
    [
        ("trace", "trace", "cell", "roles"),
        ("trace", "trace", "width", "roles"),
        ("trace", "entry", "width", "paper"),
        ("trace", "entry", "sequential", "paper"),
        ("entrywise", "entry", "sequential", "paper"),
        ("entrywise", "trace", "cell", "roles"),
        ("cleanup", "trace", "cell", "paper"),
        ("cleanup", "entry", "sequential", "roles"),
        ("cleanup", "lstsq", "cell", "paper"),
        ("cleanup", "lstsq", "sequential", "roles"),
        ("cleanup", "cancel", "cell", "paper"),
        ("cleanup", "cancel", "width", "paper"),
        ("cleanup", "lstsq", "width", "roles"),
    ],
)
def test_gradcheck_readouts(gate, decoder, order, encoding):
    """The decoder statistics and the gates' readouts, differentiated with respect to every
    symbol vector and the rule weights (prune=0: no update is cut; beta = 2: smooth). With
    the least-squares read-backs ("lstsq", "cancel" in the decoder's place) through their
    solves (and, cancelling, the subtractions of what was read); the candidate level 0
    makes every detection a candidate, so that no small change of the vectors changes the
    candidate sets (a piecewise choice, as pruning is)."""
    least_squares = decoder in ("lstsq", "cancel")
    readback = {"readback": decoder, "candidate_level": 0.0} if least_squares else {}
    opt = resolve(
        "paper",
        gate=gate,
        decoder=None if readback else decoder,
        beta=2.0,
        prune=0.0,
        order=order,
        encoding=encoding,
        dtype=np.float64,
        **(readback or {"readback": "matched"}),
    )
    assert _gradcheck_example(opt)


def test_gradcheck_cancelling_with_fixed_indices():
    """With the index vectors fixed (the layer's default) the cancelling parser updates its
    residual table in place under autograd (no operation keeps its values for the backward
    pass): the gradients with respect to the other vectors and the rule weights stay right."""
    opt = resolve(
        "cleanup", readback="cancel", candidate_level=0.0, beta=2.0, prune=0.0, dtype=np.float64
    )
    assert _gradcheck_example(opt, learn_index=False)


@pytest.mark.parametrize("order", ["cell", "width"])
@pytest.mark.parametrize("learn_index", [False, True])
def test_gradcheck_cancelling_in_groups(order, learn_index):
    """The cells read in groups (fastdcyk.engine.modes.cleanup.turns: under autograd at
    every batch size, here the example's two sentences) differentiate right: through the
    reads from one sweep, their corrections and the residual's updates, with the index
    vectors learnt or fixed, in either order."""
    opt = resolve(
        "cleanup",
        readback="cancel",
        candidate_level=0.0,
        beta=2.0,
        prune=0.0,
        order=order,
        dtype=np.float64,
    )
    assert _gradcheck_example(opt, learn_index=learn_index)


def _gradcheck_example(opt, learn_index: bool = True) -> bool:
    """gradcheck of the example grammar's statistics and readouts (d = 16, float64, two
    sentences) with respect to the symbol vectors (the index vectors too unless
    ``learn_index`` is False) and the rule weights."""
    g = fd.Grammar.builtin("example")
    st = torch_backend.rule_structure(g)
    cb = fd.Codebook(16, seed=1, dtype="float64")
    base = torch_backend.symbol_vectors(cb, st, 3, encoding="roles")
    sents = [st.terminal_ids("a a b".split()), st.terminal_ids(["a", "b"])]

    def readouts(nonterminal, right, terminal, unary_weights, binary_weights, *index):
        vec = torch_backend.SymbolVectors(
            terminal, nonterminal, right, index[0] if index else base.index, base.perm
        )
        kw = {"unary_weights": unary_weights, "binary_weights": binary_weights}
        res = torch_backend.parse_tensors(vec, st, sents, opt, **kw)
        return res.statistics, res.readouts

    inputs = (
        base.nonterminal.clone().requires_grad_(),
        base.right.clone().requires_grad_(),
        base.terminal.clone().requires_grad_(),
        torch.linspace(0.8, 1.2, st.n_unary_rules, dtype=torch.float64).requires_grad_(),
        torch.linspace(0.5, 1.5, st.n_binary_rules, dtype=torch.float64).requires_grad_(),
    )
    if learn_index:
        inputs += (base.index.clone().requires_grad_(),)
    return torch.autograd.gradcheck(readouts, inputs, fast_mode=True, atol=1e-6, rtol=1e-4)


def test_rule_weights_of_one_change_nothing():
    g, s, _ = CASES["G0"]
    st = torch_backend.rule_structure(g)
    cb = _codebook(g, 32, "trace")
    opt = resolve("trace", dtype=np.float64)
    vec = torch_backend.symbol_vectors(cb, st, 5, encoding="roles")
    ids = [st.terminal_ids(s.split())]
    plain = torch_backend.parse_tensors(vec, st, ids, opt)
    ones = torch_backend.parse_tensors(
        vec,
        st,
        ids,
        opt,
        unary_weights=torch.ones(st.n_unary_rules, dtype=torch.float64),
        binary_weights=torch.ones(st.n_binary_rules, dtype=torch.float64),
    )
    torch.testing.assert_close(plain.statistics, ones.statistics)


# -- devices and errors -----------------------------------------------------------------------


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("variant", ["paper", "trace", "cleanup"])
def test_cuda_matches_numpy_engine(variant):
    g, s, _ = CASES["G0"]
    cb = _codebook(g, 64, variant)
    ref = fd.dcyk(g, s, cb, variant=variant)
    got = fd.dcyk(g, s, cb, variant=variant, backend="torch", device="cuda")
    _assert_same(ref, got, 1e-8)
    batch = dcyk_batch(g, [s, "fish swim"], cb, variant=variant, device="cuda")
    _assert_same(ref, batch[0], 1e-8)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("variant", ["trace", "cleanup"])
@pytest.mark.parametrize("moved", [False, True])
def test_cuda_results_keep_their_tables_on_the_device_till_asked(monkeypatch, variant, moved):
    """On a GPU a batch's P_left and P_right are made when first asked for, from tables
    kept on the device (or, past the budget, moved to the host): the same matrices as
    the numpy engine's either way."""
    g, s, _ = CASES["G0"]
    cb = _codebook(g, 64, variant)
    ref = [fd.dcyk(g, w, cb, variant=variant) for w in (s, "fish swim")]
    if moved:
        monkeypatch.setattr(torch_later, "deferral_budget", lambda device: 0)
    monkeypatch.setattr(torch_later, "_ON_DEVICE", [])  # this test's batches alone
    batch = dcyk_batch(g, [s, "fish swim"], cb, variant=variant, device="cuda")
    (held,) = [ref() for ref in torch_later._ON_DEVICE]
    assert held is not None and (held.device is None) == moved
    assert (held.device_bytes() == 0) == moved
    for a, b in zip(ref, batch, strict=True):
        _assert_same(a, b, 1e-8)
    assert held.device is None and held.device_bytes() == 0  # made: nothing left there


def test_errors():
    g = fd.Grammar.builtin("example")
    with pytest.raises(ValueError, match=r"unknown backend 'jax'.*'numpy', 'torch'"):
        fd.dcyk(g, "a b", d=16, backend="jax")
    with pytest.raises(ValueError, match="needs backend='torch'"):
        fd.dcyk(g, "a b", d=16, backend="numpy", device="cpu")
    on_device = fd.dcyk(g, "a b", d=16, device="cpu")  # a device: the torch backend
    assert on_device.certificate is None  # the torch backend's parse gives none
    assert fd.dcyk(g, "a b", d=16).certificate is not None  # the numpy backend's does
    with pytest.raises(ValueError, match="unknown backend"):
        dcyk_batch(g, ["a b"], d=16, backend="jax")
    with pytest.raises(ValueError, match="needs backend='torch'"):
        dcyk_batch(g, ["a b"], d=16, backend="numpy", device="cpu")
    with pytest.raises(ValueError, match="batch_size"):
        dcyk_batch(g, ["a b"], d=16, batch_size=0, backend="torch")
    with pytest.raises(ValueError, match="not a terminal"):
        dcyk_batch(g, ["a b", "a c"], d=16, backend="torch")
    assert dcyk_batch(g, [], d=16) == []


def test_without_torch_installed():
    script = textwrap.dedent(
        """
        import sys
        sys.modules["torch"] = None  # as if PyTorch were not installed
        import fastdcyk as fd
        fd.dcyk("example", "a b", d=16)  # the numpy backend needs no torch
        try:
            fd.dcyk("example", "a b", d=16, backend="torch")
        except ImportError as e:
            print(e)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "pip install torch" in out.stdout


def test_the_driver_without_dense_matrices_gives_the_same_charts():
    g, s, _ = CASES["G0"]
    cb = _codebook(g, 32, "paper")
    opt = resolve("paper", dtype=cb.dtype)
    plan = Plan(g, [tuple(s.split()), ("fish", "swim")], opt, cb)
    dense = torch_backend.parse(plan, backends.get("torch"))
    lean = torch_backend.parse(plan, backends.get("torch"), dense=False)
    for a, b in zip(dense, lean, strict=True):
        assert b.p_left is None and b.p_right is None
        assert a.chart == b.chart and a.statistics == b.statistics


def test_dcyk_batch_halves_its_batches_when_the_device_is_full(monkeypatch):
    from fastdcyk.engine import batch as _batch

    g = fd.Grammar.builtin("G0")
    sents = ["fish swim", "fish swim fish", "fish near fish swim", "fish swim near fish swim"]
    cb = _codebook(g, 32, "trace")
    expected = [
        r.chart for r in dcyk_batch(g, sents, cb, variant="trace", batch_size=4, backend="torch")
    ]
    parse, sizes = _batch.parse_plan, []

    def small_device(plan, *args, **kwargs):
        sizes.append(len(plan.sentences))
        if len(plan.sentences) > 1:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (a test)")
        return parse(plan, *args, **kwargs)

    monkeypatch.setattr(_batch, "parse_plan", small_device)
    got = dcyk_batch(g, sents, cb, variant="trace", batch_size=4, backend="torch")
    assert [r.chart for r in got] == expected  # the same results, in the caller's order
    assert sizes == [4, 2, 1, 1, 1, 1]

    def full_device(*args, **kwargs):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory (a test)")

    monkeypatch.setattr(_batch, "parse_plan", full_device)
    with pytest.raises(MemoryError, match=r"ran out of memory parsing one sentence of \d+ words"):
        dcyk_batch(g, sents, cb, variant="trace", batch_size=4, backend="torch")


@pytest.mark.parametrize("order", ["cell", "width"])
def test_the_trace_gate_reads_nothing_back_per_cell_on_a_device(monkeypatch, order):
    """On a device the trace gate's cells read no flag back (the ledger's
    ``defer_checks``): the same charts, statistics and counts as with a check per cell,
    and a non-finite detection still names its cell. (Forced here on the CPU.)"""
    from fastdcyk.engine.core import schedule
    from fastdcyk.engine.modes.trace import torch_parser as trace_parser

    g = fd.Grammar.builtin("G0")
    sents = ["fish swim", "fish swim near fish", "fish near fish swim near fish"]
    cb = _codebook(g, 64, "trace")
    kw = dict(variant="trace", order=order, batch_size=3)
    expected = dcyk_batch(g, sents, cb, **kw, backend="torch")
    deferred = []

    class Deferring(schedule.Ledger):
        def __init__(self, *args, **kwargs):
            kwargs["defer_checks"] = True
            super().__init__(*args, **kwargs)
            deferred.append(self)

    monkeypatch.setattr(schedule, "Ledger", Deferring)
    got = dcyk_batch(g, sents, cb, **kw, backend="torch")
    assert len(deferred) == 1 and deferred[0].pending == []
    for a, b in zip(expected, got, strict=True):
        assert a.chart == b.chart and a.counts == b.counts
        assert a.statistics.array.tobytes() == b.statistics.array.tobytes()
    initialise = trace_parser.TorchTraceParser.initialise

    def overflowed(self):  # every binary detection of the first rule row reads NaN
        self.binary_w = self.binary_w.clone()
        self.binary_w[0, 0] = float("nan")
        initialise(self)

    monkeypatch.setattr(trace_parser.TorchTraceParser, "initialise", overflowed)
    with pytest.raises(FloatingPointError, match=r"detections in cell \(0, 2\)"):
        dcyk_batch(g, sents, cb, **kw, backend="torch")  # the first binary cell, in either order


def test_dcyk_batch_moves_earlier_tables_to_the_host_before_halving(monkeypatch):
    """Out of memory on a device: the tables that earlier results keep there are moved
    to the host and the batch tried again at its size, as long as a move frees some;
    then it is halved."""
    from fastdcyk.engine import batch as _batch

    moved, sizes = [], []

    def spill(device, keep=0):
        moved.append((str(device), keep))
        return 1024 if len(moved) == 1 else 0  # the first move frees some, the next none

    monkeypatch.setattr(torch_later, "spill_deferred", spill)

    def parse(chunk):
        sizes.append(len(chunk))
        if len(sizes) <= 2:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (a test)")
        return chunk

    record = backends.get("torch")
    got = list(_batch.in_batches([1, 2, 3, 4], 4, parse, record, "meta", lambda k: "too large"))
    assert moved == [("meta", 0), ("meta", 0)]
    assert sizes == [4, 4, 2, 2]  # again at 4 after the move, then halved
    assert [chunk for chunk, _, _ in got] == [[1, 2], [3, 4]]


@pytest.fixture
def on_device(monkeypatch):
    """The deferred batches of a test alone (an empty registry), each registered as on a
    device although its tables are on the CPU (what a move runs is what a device runs);
    yields the list of the batches made."""
    monkeypatch.setattr(torch_later, "_ON_DEVICE", [])
    made = []
    init = torch_later.LaterDense.__init__

    def as_on_a_device(self, parser, codebook):
        init(self, parser, codebook)
        self.device = torch.device("cpu")
        made.append(self)

    monkeypatch.setattr(torch_later.LaterDense, "__init__", as_on_a_device)
    return made


def _dense_of(results):
    return [(np.array(r.p_left), np.array(r.p_right)) for r in results]


@pytest.mark.parametrize("variant", ["trace", "cleanup"])
def test_deferred_tables_moved_to_the_host_make_the_same_matrices(monkeypatch, on_device, variant):
    """A batch whose tables would stay on a device past :func:`deferral_budget` is moved
    to the host (:func:`spill_deferred`, oldest first) and makes the same P_left and
    P_right there; the clean-up gate writes its deferred updates before the move."""
    g = fd.Grammar.builtin("G0")
    sents = ["fish swim", "fish swim near fish"]
    cb = _codebook(g, 32, variant)
    expected = _dense_of(dcyk_batch(g, sents, cb, variant=variant, batch_size=1, backend="torch"))
    on_device.clear()  # (the batches above, made)
    made = on_device
    got = dcyk_batch(g, sents, cb, variant=variant, batch_size=1, backend="torch")
    held = [b.device_bytes() for b in made]
    assert len(made) == 2 and all(h > 0 for h in held)
    monkeypatch.setattr(torch_later, "deferral_budget", lambda device: held[0])
    torch_later.hold_on_device(made[0], torch.device("cpu"))  # within the budget
    assert made[0].device is not None
    torch_later.hold_on_device(made[1], torch.device("cpu"))  # over it: the oldest moves
    assert made[0].device is None and made[1].device is not None
    assert torch_later.spill_deferred("cuda") == 0  # another device's: none
    assert torch_later.spill_deferred() == held[1]
    assert [b.device_bytes() for b in made] == [0, 0]
    for (left, right), r in zip(expected, got, strict=True):
        np.testing.assert_array_equal(np.array(r.p_left), left)
        np.testing.assert_array_equal(np.array(r.p_right), right)


def test_a_deferred_batch_keeps_its_tables_alone_and_counts_what_it_keeps(on_device):
    """The trace gate's deferred batch keeps the two tables and lets the parse go (its
    rule tables, vectors and per-cell readouts); the cancelling clean-up gate's keeps its
    parser till its deferred writes are made, and counts them with the tables."""
    import gc
    import weakref

    from fastdcyk.engine.backends.torch.spectral import HeldTables
    from fastdcyk.engine.modes.cleanup import torch_parser as cleanup_parser

    g = fd.Grammar.builtin("G4")
    sents = ["fish swim fish near fish", "fish swim", "fish near fish swim", "fish fish swim"]
    parsers = []
    init = torch_backend.TorchParser.__init__

    def tracked(self, *args, **kwargs):
        init(self, *args, **kwargs)
        parsers.append(weakref.ref(self))

    for variant in ("trace", "cleanup"):
        cb = _codebook(g, 32, variant)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(torch_backend.TorchParser, "__init__", tracked)
            # the cells read in turn, whose writes into P_left wait till it is asked for
            mp.setattr(cleanup_parser.TorchCleanupParser, "_reads_whole", lambda self: False)
            got = dcyk_batch(g, sents, cb, variant=variant, batch_size=4, backend="torch")
        batch = on_device[-1]
        gc.collect()
        parser = parsers[-1]()
        table = 2 * 4 * (32 // 2 + 1) * 32 * 16  # B x h x d complex128, left and right
        if variant == "trace":
            assert isinstance(batch._source, HeldTables) and parser is None
            assert batch.device_bytes() == table
        else:  # P_right never written: the left table and the writes still to make
            assert batch._source is parser and parser.tables_pending
            unwritten = sum(left.numel() * 16 for _, left in parser._unwritten)
            assert unwritten > 0 and batch.device_bytes() == table // 2 + unwritten
            assert parser.ledger.readouts is None  # not kept for the result
        assert np.array(got[0].p_left).shape == (32, 32) and batch.device_bytes() == 0
        del parser


@pytest.mark.parametrize("variant", ["trace", "cleanup"])
def test_a_device_out_of_memory_while_making_or_moving_loses_nothing(
    monkeypatch, on_device, variant
):
    """Out of device memory while a batch's matrices are made: made on the host instead;
    while the clean-up gate writes its deferred updates before a move: the move is not
    made and the tables stay; either way the results' matrices are the ones they would
    have been."""
    from fastdcyk.engine.backends.torch.spectral import HeldTables
    from fastdcyk.engine.modes.cleanup import torch_parser as cleanup_parser

    g = fd.Grammar.builtin("G0")
    sents = ["fish swim near fish", "fish swim", "fish near fish swim", "fish swim fish"]
    cb = _codebook(g, 32, variant)
    # the clean-up gate's cells read in turn: its writes into P_left wait till asked for
    monkeypatch.setattr(cleanup_parser.TorchCleanupParser, "_reads_whole", lambda self: False)
    expected = _dense_of(dcyk_batch(g, sents, cb, variant=variant, batch_size=4, backend="torch"))
    on_device.clear()  # (the batch above, made)
    got = dcyk_batch(g, sents, cb, variant=variant, batch_size=4, backend="torch")
    (batch,) = on_device
    if variant == "cleanup":
        write = cleanup_parser.TorchCleanupParser.add_outers

        def full(self, *args, **kwargs):
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (a test)")

        monkeypatch.setattr(cleanup_parser.TorchCleanupParser, "add_outers", full)
        before = batch.device_bytes()
        assert batch.spill() == 0 and batch.device is not None  # not moved
        assert batch.device_bytes() == before  # the writes still there to make
        monkeypatch.setattr(cleanup_parser.TorchCleanupParser, "add_outers", write)
    dense, tries = HeldTables.dense, []

    def full_once(self):
        tries.append(self.device)
        if len(tries) == 1:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (a test)")
        return dense(self)

    monkeypatch.setattr(HeldTables, "dense", full_once)
    for (left, right), r in zip(expected, got, strict=True):
        np.testing.assert_array_equal(np.array(r.p_left), left)
        np.testing.assert_array_equal(np.array(r.p_right), right)
    assert len(tries) == 2 and batch.device is None


def test_a_parse_leaves_no_reference_cycle_holding_its_tensors():
    """The parser must be freed when its output is: a cycle (parser -> ledger -> bound method
    -> parser) kept every tensor of a parse under autograd, its whole graph, alive until the
    cyclic collector ran: in a training loop, gigabytes."""
    import gc

    from fastdcyk.nn import DCYK

    g = fd.Grammar.builtin("G4")
    layer = DCYK(g, 32, dtype=torch.float64, max_length=4)
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        out = layer(["fish swim", "fish swim near fish"])
        out.loss().backward()
        del out
        gc.collect()
        leaked = [o for o in gc.garbage if isinstance(o, torch_backend.TorchParser)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert leaked == []


def test_the_gpu_rows_script_runs_on_the_cpu(tmp_path):
    """benchmarks/gpu_rows.py (docs/performance.md's GPU rows) on the CPU at d = 256."""
    import json
    import runpy
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_rows.py"
    main = runpy.run_path(str(script))["main"]
    out = tmp_path / "rows.json"
    rows = main(
        ["--device", "cpu", "--dims", "256", "--count", "2", "--many", "3", "--json", str(out)]
    )
    assert [(r["d"], r["sentences"]) for r in rows] == [(256, 2), (256, 3)]
    assert all(r["exact_charts"] == r["sentences"] and r["seconds"] > 0 for r in rows)
    assert json.loads(out.read_text())["rows"] == rows


def test_the_batch_parts_script_runs_on_the_cpu(tmp_path):
    """benchmarks/gpu_batch_parts.py (docs/performance.md's GPU section) on the CPU."""
    import json
    import runpy
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_batch_parts.py"
    main = runpy.run_path(str(script))["main"]
    out = tmp_path / "parts.json"
    rows = main(["--device", "cpu", "--dims", "64", "--lengths", "3", "--batch", "2",
                 "--json", str(out), "--profile"])  # fmt: skip
    (row,) = rows
    assert (row["d"], row["words"], row["batch"]) == (64, 3, 2)
    keys = ("full", "charts_only", "core", "core_decode", "core_dense")
    assert all(row[k] > 0 for k in keys)
    assert json.loads(out.read_text())["rows"] == rows
    assert "Name" in out.with_suffix(".profile.txt").read_text()


@pytest.mark.parametrize("deferred", [True, False])
def test_non_finite_p_is_reported(monkeypatch, deferred):
    """An infinite value in P_left after the parse (the schedule's checks of the cells'
    detections passed) is an error that says what to do, whether the dense matrices are
    made by the parse or (on the CPU) when first asked for: then the tables they will be
    made from are checked by the parse."""
    from fastdcyk.engine.modes.trace import torch_parser as trace_parser

    g, s, _ = CASES["G0"]
    cb = _codebook(g, 64, "trace", "float32")
    if deferred:
        statistics = trace_parser.TorchTraceParser.statistics

        def overflowed(self):  # after the cells' checks, before the tables are checked
            self.left_spectrum[0, 0, 0] = float("inf")
            return statistics(self)

        monkeypatch.setattr(trace_parser.TorchTraceParser, "statistics", overflowed)
    else:
        monkeypatch.setattr(trace_parser.TorchTraceParser, "defers_dense", False)
        parse = torch_backend.parse_tensors

        def overflowed(*args, **kwargs):
            res = parse(*args, **kwargs)
            res.p_left[0, 0, 0] = float("inf")
            return res

        monkeypatch.setattr(torch_backend, "parse_tensors", overflowed)
    with pytest.raises(FloatingPointError, match=r"\(P_left after the parse\).*float64"):
        fd.dcyk(g, s, cb, variant="trace", backend="torch")


DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("variant", ["trace", "paper", "cleanup"])
def test_each_result_owns_its_matrices_in_c_order(device, variant):
    """P_left and P_right of each result: C-ordered arrays of the codebook's dtype with the
    numpy backend's values, sharing no memory with another result's (the trace parser's
    P_right and the dense parser's matrices are transposed views on the device)."""
    g, s, _ = CASES["G0"]
    cb = _codebook(g, 64, variant)  # float64: the paper variant's gates amplify rounding
    first, second = dcyk_batch(g, [s, "fish swim"], cb, variant=variant, device=device)
    ref = fd.dcyk(g, s, cb, variant=variant)
    for r in (first, second):
        for m in (r.p_left, r.p_right):
            assert m.dtype == np.float64 and m.flags.c_contiguous
    for a, b in ((first.p_left, second.p_left), (first.p_right, second.p_right)):
        assert not np.shares_memory(a, b)
    _assert_same(ref, first, 1e-8)


def test_threads_sharing_one_codebook_parse_on_both_backends():
    """The torch backend takes no codebook lock (its tensors are its own; what it keeps in
    the codebook's cache, the G_k and the Gram matrices of the reads, is put and replaced
    whole): threads parsing with one codebook on both backends at once each get what a
    parse alone gets, the cached Gram matrices of one length read by several threads."""
    import threading

    g = fd.Grammar.builtin("G4")
    cb = _codebook(g, 64, "cleanup")
    sents = fd.generate(g, 40, min_len=6, max_len=6, seed=4)[:8]
    kw = {"variant": "cleanup", "readback": "cancel"}

    def torch_batch():
        return dcyk_batch(g, sents, cb, backend="torch", **kw)

    def numpy_one():
        return [fd.dcyk(g, s, cb, progress=False, **kw) for s in sents[:3]]

    torch_backend.release_caches(cb)
    want = {"torch": torch_batch(), "numpy": numpy_one()}
    assert want["torch"][0].chart == fd.cyk(g, sents[0])
    got: list = []
    start = threading.Barrier(4)

    def worker(name, job):
        start.wait()
        for _ in range(3):
            got.append((name, job()))

    jobs = [("torch", torch_batch)] * 2 + [("numpy", numpy_one)] * 2
    threads = [threading.Thread(target=worker, args=job) for job in jobs]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(got) == 12  # no thread raised
    for name, results in got:
        for a, b in zip(want[name], results, strict=True):
            _assert_same(a, b, 1e-12)


def test_the_cells_index_matrices_are_the_same_stacked_or_one_by_one():
    """index_outers stacks the cached G_j of several cells and scales them in one
    operation (two launches on a device, not one a cell): the same numbers as a product
    per cell, for starts that run on by one (a span width's) and for others, in float64."""
    from fastdcyk.engine.modes.trace import torch_parser

    g = fd.Grammar.builtin("G2")
    cb = _codebook(g, 32, "trace")
    opt = resolve("trace", dtype=np.float64)
    st = torch_backend.rule_structure(g)
    n = 6
    vec = torch_backend.symbol_vectors(cb, st, n, encoding=opt.encoding)
    words = torch.zeros((2, n), dtype=torch.int64)
    args = (vec, st, opt, words, [n, n], None, None, False, None, None)
    p = torch_parser.TorchTraceParser(*args, g_cache={})
    for spans in ([(0, 3), (1, 4), (2, 5)], [(4, 5), (0, 2), (3, 6), (0, 6)]):
        cold = p.index_outers(spans).clone()  # one product a cell, each G_j computed
        assert all(j in p._index_matrices for _, j in spans)
        warm = p.index_outers(spans)  # stacked from the cache
        each = torch.stack([p.index_matrix(j) * p.full_index[i] for i, j in spans], 1)
        assert warm.shape == each.shape == (p.half, len(spans), p.d)
        assert torch.equal(warm, each) and torch.equal(cold, each)

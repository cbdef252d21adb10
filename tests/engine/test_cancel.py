"""The cancelling read-back (``readback="cancel"``, docs/method.md, section 7): every read
subtracted from a second copy of the table, so that a cell's read sees the other cells only
through the errors of their reads; and the refined solve that the weighted table reads
scores with."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import fastdcyk as fd
from fastdcyk.cfg.treebank import TreebankGrammar, clean, read_trees
from fastdcyk.cfg.viterbi import item_scores
from fastdcyk.engine.core.readback import RIDGE, gram, solve
from fastdcyk.engine.memory import estimate_memory, work_buffers
from fastdcyk.engine.modes.cleanup import numpy_parser as cleanup_parser
from fastdcyk.engine.modes.weighted.numpy_parser import FLOOR
from fastdcyk.hrr import buffers

DATA = Path(__file__).parent.parent / "data"
PP = "john saw the man with a telescope".split()
BEAM = fd.options.DEFAULT_BEAM


@pytest.fixture(scope="module")
def cases() -> list[tuple[fd.Grammar, tuple[str, ...]]]:
    """The PP grammar's ambiguous sentence and the first three of the mini treebank."""
    bank = TreebankGrammar.from_trees(DATA / "mini_treebank.mrg")
    trees = list(map(clean, read_trees(DATA / "mini_treebank.mrg")))[:3]
    return [(fd.Grammar.load(DATA / "pp.pcfg"), tuple(PP))] + [
        (bank.grammar, bank.words(t.leaves())) for t in trees
    ]


# -- the refined solve -------------------------------------------------------------------------


def test_refinement_removes_the_ridges_shrinkage():
    """Each step of iterative refinement multiplies the error of every eigen-component by
    lambda g / (mu + lambda g) (mu its eigenvalue, g the mean diagonal): the bound holds
    step by step, down to float64 rounding."""
    rng = np.random.default_rng(0)
    d, k = 256, 40
    v = rng.normal(0, 1 / np.sqrt(d), (k, d))
    amp = rng.uniform(0, 1, k)
    g = gram(v)
    x = v @ (amp @ v)
    exact = np.linalg.solve(g, x)
    factor = RIDGE * np.trace(g) / k
    factor /= np.linalg.eigvalsh(g)[0] + factor
    rounding = 1e3 * np.linalg.cond(g) * np.finfo(float).eps
    errors = [np.linalg.norm(solve(g, x, refine=r) - exact) for r in range(3)]
    assert errors[0] > 100 * rounding  # the ridge's shrinkage is there to remove
    for r in (1, 2):
        assert errors[r] <= errors[r - 1] * factor + rounding


def test_refinement_stays_defined_on_a_singular_gram():
    """More candidates than d: each step fits the readouts at least as well, and the
    amplitudes stay within refine + 1 times the first solve's (the null space of G gets
    nothing: the readouts have no component there)."""
    rng = np.random.default_rng(1)
    v = rng.normal(0, 1 / 4, (40, 16))  # more candidates than d = 16
    g, x = gram(v), v @ v[:3].sum(0)
    first = solve(g, x)
    for refine in (1, 2):
        a = solve(g, x, refine=refine)
        assert a.shape == (40,) and np.all(np.isfinite(a))
        assert np.linalg.norm(g @ a - x) <= np.linalg.norm(g @ first - x)
        assert np.linalg.norm(a) <= (refine + 1) * np.linalg.norm(first)


# -- the weighted table ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cancelling_reads_the_scores_to_second_order(cases, dtype):
    """The plain least-squares read errs by the leakage of the other cells, amplitude
    noise of standard deviation about sqrt(N) / d (N items in the table); cancelling
    leaves the leakage of the reads' own errors, about N / d^2. A score is off by
    beam / (1 - FLOOR) times its amplitude's error: the largest error stays within four
    such deviations, and far below the plain read's."""
    per_nat = BEAM / (1 - FLOOR)
    for g, words in cases:
        exact = item_scores(g, words, beam=BEAM)
        n_items = len(exact) + len(words)
        for d in (256, 1024):
            err = {}
            for readback in ("lstsq", "cancel"):
                r = fd.dcyk(g, words, d=d, dtype=dtype, weights="table", readback=readback)
                assert set(r.table_scores) == set(exact)
                err[readback] = max(abs(r.table_scores[k] - exact[k]) for k in exact)
            assert err["cancel"] < 4 * per_nat * n_items / d**2, (words, d)
            assert err["cancel"] < err["lstsq"] / 100, (words, d)


def test_cancelling_is_the_weighted_tables_default(cases):
    g, words = cases[0]
    r = fd.dcyk(g, words, d=256, weights="table")
    assert r.options.readback == "cancel" and "readback='cancel'" in repr(r)
    assert fd.dcyk(g, words, d=256).options.readback == "cancel"  # the chart route's too
    plain = fd.dcyk(g, words, d=256, weights="table", readback="lstsq")
    assert plain.options.readback == "lstsq"
    assert r.table_parse().tree == fd.viterbi(g, words).tree


# -- the chart route and the decoder -----------------------------------------------------------


def test_more_candidates_than_d_read_with_cancelling(commandtalk, big_cells):
    """CommandTalk at d = 128 (cells of up to 373 symbols): the plain read's leakage makes
    false candidates (precision 0.67 measured); cancelling the reads before a cell's keeps
    precision 1 and raises recall (0.53 to 0.76)."""
    cb = fd.Codebook.for_grammar(commandtalk, 128, 0)
    scores = {rb: big_cells.scores(cb, rb) for rb in ("lstsq", "cancel")}
    assert scores["cancel"].precision == 1.0 > scores["lstsq"].precision
    assert scores["cancel"].recall > scores["lstsq"].recall


def test_decode_cancels_on_a_given_p_left():
    """A P_left made elsewhere (the symbolic chart written with the codebook's operators,
    every item with amplitude 1) decodes to its chart with readback='cancel'; its reads
    are closer to the written amplitudes than the plain read's: the bottom-up pass cancels
    the cells below a cell, the sweeps after it those above (a block Gauss-Seidel on the
    whole table, whose error falls geometrically: 0.056 with the plain read, under 1e-5
    after two sweeps, measured); the words are subtracted from the decoder's own copy only:
    the P_left given is unchanged."""
    g = fd.Grammar.builtin("G1")
    words = "fish swim fish near fish".split()
    cb = fd.Codebook.for_grammar(g, 256, 0)
    gold = fd.cyk(g, words)
    eye = np.eye(cb.d, dtype=cb.dtype)
    p_left = np.zeros((cb.d, cb.d), cb.dtype)
    for i, w in enumerate(words, start=1):
        p_left += cb.minus("index", i - 1) @ cb.minus("index", i) @ cb.minus("terminal", w) @ eye
    for (i, j), cell in gold.items():
        for a in cell:
            op = cb.minus("index", i) @ cb.minus("index", j) @ cb.minus("nonterminal", a)
            p_left += op @ eye
    before = p_left.copy()
    error = {}
    for readback in ("lstsq", "cancel"):
        with cb.lock:
            opt = fd.options.resolve("cleanup", readback=readback)
            stats = cleanup_parser.readback_statistics(p_left, g, tuple(words), cb, opt)
        names = stats.nonterminals
        error[readback] = max(
            abs(stats.array[i, j, names.index(a)] - 1.0) for (i, j), c in gold.items() for a in c
        )
        chart = fd.decode(p_left, g, codebook=cb, words=words, readback=readback)
        assert chart == gold
    assert error["cancel"] < error["lstsq"] / 100
    assert np.array_equal(p_left, before)
    r = fd.dcyk(g, words, cb, variant="cleanup", readback="cancel")
    # a new candidate level makes decode read the table again, with the result's read-back
    assert r.chart == gold and fd.decode(r, candidate_level=0.3) == gold


def test_soft_words_leave_the_residual_table():
    """Every terminal of a soft word's mixture is solved for and subtracted, the weak ones
    too: what is left in the residual table is the ridge's shrinkage (about RIDGE of the
    table), as with plain words."""
    g = fd.Grammar.builtin("G1")
    left = {}

    def spy(self, *args, **kwargs):
        left[len(left)] = np.linalg.norm(self.residual) / np.linalg.norm(self.left_spectrum)
        return original(self, *args, **kwargs)

    original = cleanup_parser.NumpyCleanupParser.dense
    words = ["fish", {"swim": 0.6, "fish": 0.4}, "fish"]
    try:
        cleanup_parser.NumpyCleanupParser.dense = spy
        fd.dcyk(g, words, d=512, variant="cleanup", readback="cancel")
        fd.dcyk(g, ["fish", "swim", "fish"], d=512, variant="cleanup", readback="cancel")
    finally:
        cleanup_parser.NumpyCleanupParser.dense = original
    assert left[1] < 10 * RIDGE  # plain words
    assert left[0] < 10 * RIDGE  # a mixture's 0.4 part subtracted too


# -- what it costs, and where it is not built --------------------------------------------------


def test_the_residual_table_is_one_spectrum_more_during_the_parse():
    """It is freed before the dense results are formed: the end's arrays are the same, so
    the peak grows by it only where the parse's arrays outweigh the end's (at d = 4096,
    not at 1024, where the G_k cache is smaller than at the end)."""
    plain = work_buffers(fd.options.resolve("cleanup", readback="lstsq"), False, 4)
    cancel = work_buffers(fd.options.resolve("cleanup", readback="cancel"), False, 4)
    assert cancel.during == [*plain.during, buffers.ZR] and cancel.end == plain.end
    for d, extra in ((1024, 0), (4096, buffers.ZR.nbytes(4096, "float32"))):
        plain = estimate_memory(d, variant="cleanup", readback="lstsq", n=20)
        cancel = estimate_memory(d, variant="cleanup", readback="cancel", n=20)
        assert cancel - plain == extra
        assert estimate_memory(d, variant="cleanup", weights="table", n=20) == cancel


def test_the_layer_cancels_too(cases):
    """nn.DCYK with readback='cancel' (the torch backend's cancelling parser): its charts
    are the numpy backend's with the layer's own codebook, and a loss back-propagates to
    finite gradients (the subtractions are part of the graph)."""
    torch = pytest.importorskip("torch")
    from fastdcyk.nn import DCYK

    g, words = cases[0]
    layer = DCYK(g, 256, dtype=torch.float64, readback="cancel")
    out = layer([list(words)])
    out.loss().backward()
    grads = [p.grad for p in layer.parameters() if p.grad is not None]
    assert grads and all(bool(torch.isfinite(x).all()) for x in grads)
    ref = fd.dcyk(g, words, layer.codebook(), variant="cleanup", readback="cancel")
    assert out.charts[0] == ref.chart == fd.cyk(g, words)


def test_the_torch_backend_cancels_soft_words_in_mixed_batches():
    """A batch of sentences of different lengths, one with a soft word: each sentence's
    statistics and P_left are the numpy backend's, parsed alone, to float64 rounding (the
    cells a shorter sentence does not have subtract nothing from its residual table)."""
    pytest.importorskip("torch")
    g = fd.Grammar.builtin("G1")
    cb = fd.Codebook.for_grammar(g, 256, 0, dtype="float64")
    sentences = [
        ["fish", {"swim": 0.6, "fish": 0.4}, "fish", "near", "fish"],
        ["fish", "swim"],
        ["fish", "swim", "fish"],
    ]
    kw = dict(variant="cleanup", readback="cancel")
    batch = fd.dcyk_batch(g, sentences, cb, backend="torch", **kw)
    for words, got in zip(sentences, batch, strict=True):
        ref = fd.dcyk(g, words, cb, **kw)
        scale = np.abs(ref.p_left).max()
        assert np.abs(got.p_left - ref.p_left).max() <= 1e-12 * scale
        assert max(abs(got.statistics[k] - v) for k, v in ref.statistics.items()) <= 1e-12
        assert got.chart == ref.chart


def test_where_cancelling_is_not_built(cases):
    g, words = cases[0]
    with pytest.raises(ValueError, match="not a read-back of gate='trace'"):
        fd.dcyk(g, words, d=256, variant="trace", readback="cancel")


@pytest.mark.parametrize("d", [256, 512])
def test_decode_of_a_parses_p_left_gives_its_chart(commandtalk, big_cells, d):
    """What decode reproduces of a cancelling parse (docs/method.md, section 7): the parse
    reads each cell before any cell above it is written, decode reads the finished table
    (the cells above leak into the bottom-up pass), then sweeps it and finds the cells'
    candidates again from the swept reads. On the study's grammar and lengths (CommandTalk,
    cells of over a hundred symbols, one of 373 read beyond d at d = 256), every chart the
    parse's certificate calls sure comes back from its P_left alone, and is CYK's; all
    eight are sure at both d."""
    more = fd.generate(commandtalk, 4, min_len=5, max_len=20, seed=1)
    sents = [s.split() for s in big_cells.sentences] + more
    cb = fd.Codebook.for_grammar(commandtalk, d, 0)
    sure = 0
    for words in sents:
        r = fd.dcyk(commandtalk, words, cb)
        assert r.options.readback == "cancel"
        if not r.sure:
            continue
        sure += 1
        chart = fd.decode(r.p_left, commandtalk, codebook=cb, words=words, readback="cancel")
        assert chart == r.chart == fd.cyk(commandtalk, words), (d, words)
    assert sure == len(sents)

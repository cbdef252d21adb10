"""The least-squares read-back (docs/method.md, section 7): its solve, what it does with a
misread child and with more candidates than d, a real grammar's large cells, and the
decoder of a given P_left."""

from __future__ import annotations

import numpy as np
import pytest

import fastdcyk as fd
from fastdcyk.engine.core.arrays import sigmoid
from fastdcyk.engine.core.readback import RIDGE, gram, solve
from fastdcyk.engine.modes.cleanup import numpy_parser as cleanup_parser

# -- the solve ---------------------------------------------------------------------------------


def test_solve_recovers_amplitudes_of_well_separated_vectors():
    rng = np.random.default_rng(0)
    d, k = 256, 40
    v = rng.normal(0, 1 / np.sqrt(d), (k, d))
    amp = rng.uniform(0, 1, k)
    got = solve(gram(v), v @ (amp @ v), ridge=0.0)
    # exact up to float64 rounding amplified by the Gram's condition number
    cond = np.linalg.cond(gram(v))
    np.testing.assert_allclose(got, amp, atol=1e3 * cond * np.finfo(float).eps)
    # with the ridge the amplitudes move by about ridge / (smallest eigenvalue)
    lam = np.linalg.eigvalsh(gram(v))[0]
    scale = np.trace(gram(v)) / k
    biased = solve(gram(v), v @ (amp @ v))
    assert np.abs(biased - amp).max() <= 2 * RIDGE * scale / lam


@pytest.mark.parametrize("ridge", [RIDGE, 0.0])
def test_solve_is_defined_for_singular_and_oversized_candidate_sets(ridge):
    """More candidates than d (rank-deficient Gram), repeated vectors, or no ridge at all:
    finite amplitudes, never a LinAlgError."""
    rng = np.random.default_rng(1)
    d = 16
    v = rng.normal(0, 1 / np.sqrt(d), (40, d))
    v[5] = v[4]  # a repeated vector: exactly singular
    x = v @ v[:3].sum(0)
    a = solve(gram(v), x, ridge=ridge)
    assert a.shape == (40,) and np.all(np.isfinite(a))
    assert solve(np.zeros((0, 0)), np.zeros(0)).shape == (0,)
    assert np.all(np.isfinite(solve(np.zeros((3, 3)), np.ones(3), ridge=ridge)))


# -- a real grammar's cells --------------------------------------------------------------------


def test_cells_of_hundreds_of_symbols_read_by_least_squares(commandtalk, big_cells):
    """CommandTalk at d = 256: cells of 122 to 373 symbols. The matched filter drowns in
    false triples (F1 0.017 measured), least squares keeps precision 1 (F1 0.964)."""
    g = commandtalk
    sizes = [max(len(c) for c in fd.cyk(g, s.split()).values()) for s in big_cells.sentences]
    assert min(sizes) >= 100
    cb = fd.Codebook.for_grammar(g, 256, 0)
    scores = {rb: big_cells.scores(cb, rb) for rb in ("lstsq", "matched")}
    assert scores["lstsq"].precision == 1.0 and scores["lstsq"].f1 > 0.9
    assert scores["matched"].f1 < 0.1


def test_more_candidates_than_d_gives_a_defined_result(commandtalk, big_cells):
    """d = 128 and a cell of 373 symbols: the candidates cannot be separated; the parse
    still ends with finite statistics and a chart (a recall that falls, not an error)."""
    g, s = commandtalk, big_cells.sentences[0]
    r = fd.dcyk(g, s, d=128, variant="cleanup")
    values = np.fromiter(r.statistics.values(), float)
    assert np.all(np.isfinite(values)) and np.all(np.isfinite(r.p_left))
    got = fd.cell_scores(fd.cyk(g, s.split()), r.chart)
    assert 0.0 < got.recall < 1.0


def test_torch_batch_equals_numpy_on_large_cells(commandtalk, big_cells, torch_one_thread):
    """Sentences of different lengths whose cells hold different candidate sets, batched
    (padded systems) in float64: the numpy backend's numbers to 1e-8."""
    g = commandtalk
    cb = fd.Codebook.for_grammar(g, 128, 2, dtype="float64")
    sents = [big_cells.sentences[1], big_cells.sentences[3]]
    batch = fd.dcyk_batch(g, sents, cb, variant="cleanup", backend="torch")
    for s, got in zip(sents, batch, strict=True):
        ref = fd.dcyk(g, s, cb, variant="cleanup")
        np.testing.assert_allclose(got.p_left, ref.p_left, rtol=1e-8, atol=1e-8)
        for key, value in ref.statistics.items():
            assert got.statistics[key] == pytest.approx(value, rel=1e-8, abs=1e-8)
        assert got.chart == ref.chart


# -- a misread child ------------------------------------------------------------------------


def _cyk_with(g: fd.Grammar, words: list[str], extra: tuple[int, int, str]) -> dict:
    """Symbolic CYK in which cell (i, k) holds one more symbol: what a misread child
    proposes above it."""
    n = len(words)
    chart = {(i, j): set() for i in range(n) for j in range(i + 1, n + 1)}
    for i, w in enumerate(words):
        chart[(i, i + 1)] = {a for a, t in g.unary_rules if t == w}
        if extra[:2] == (i, i + 1):
            chart[(i, i + 1)].add(extra[2])
    for span in range(2, n + 1):
        for i in range(n - span + 1):
            j = i + span
            for k in range(i + 1, j):
                for a, b, c in g.binary_rules:
                    if b in chart[(i, k)] and c in chart[(k, j)]:
                        chart[(i, j)].add(a)
            if extra[:2] == (i, j):
                chart[(i, j)].add(extra[2])
    return {key: frozenset(v) for key, v in chart.items()}


def test_a_misread_child_proposes_false_candidates_that_read_as_written(monkeypatch):
    """Force the read-back of cell (0, 1) to report a symbol that is not there (a misread).
    Its parents then get the candidates the grammar proposes over it: they are written and
    read back as written, so the chart is exactly symbolic CYK over the misread chart (the
    error propagates upward, and nothing else changes)."""
    g = fd.Grammar.builtin("G0")
    words = "fish swim fish near fish".split()
    false = (0, 1, "P")  # 'fish' is no preposition
    row = g.nonterminals.index(false[2])
    end = cleanup_parser.NumpyCleanupParser.end

    def misread(self, i, j, step):
        end(self, i, j, step)
        if (i, j) == false[:2]:
            self.stats[i, j, row] = 1.0
            self.scores[i, j, row] = sigmoid(1.0, self.opt.beta)

    monkeypatch.setattr(cleanup_parser.NumpyCleanupParser, "end", misread)
    monkeypatch.setattr(cleanup_parser, "COLUMNS", False)  # the cells one by one, through end
    r = fd.dcyk(g, words, d=512, variant="cleanup")
    expected = _cyk_with(g, words, false)
    assert r.chart == expected
    assert expected != fd.cyk(g, words)  # the misread did propagate upward


# -- decoding a given P_left -----------------------------------------------------------------


def test_decode_reads_a_given_p_left_bottom_up():
    """A P_left made elsewhere (here: the symbolic chart written with the codebook's
    operators, no detection) decodes to its chart with the words and the grammar."""
    g = fd.Grammar.builtin("G1")
    words = "fish swim fish near fish".split()
    cb = fd.Codebook.for_grammar(g, 512, 0)
    gold = fd.cyk(g, words)
    eye = np.eye(cb.d, dtype=cb.dtype)
    p_left = np.zeros((cb.d, cb.d), cb.dtype)
    for (i, j), cell in gold.items():
        for a in cell:
            op = cb.minus("index", i) @ cb.minus("index", j) @ cb.minus("nonterminal", a)
            p_left += op @ eye
    chart = fd.decode(p_left, g, codebook=cb, words=words, readback="lstsq")
    assert chart == gold
    # the matched filter of the same table, for comparison, needs no words
    assert fd.decode(p_left, g, len(words), cb, decoder="trace").keys() == gold.keys()


def test_decode_of_a_result_rereads_with_its_own_read_back():
    g = fd.Grammar.builtin("G0")
    r = fd.dcyk(g, "fish swim fish near fish", d=256, variant="cleanup")
    assert fd.decode(r) == r.chart
    again = fd.decode(r.p_left, g, codebook=r.codebook, words=r.words, readback="lstsq")
    assert again == r.chart
    with pytest.raises(ValueError, match="words="):
        fd.decode(r.p_left, g, 5, r.codebook, readback="lstsq")


def test_decoding_writes_nothing_into_the_table_it_reads():
    """An empty table reads empty: the decoder neither writes the words nor anything else."""
    g = fd.Grammar.builtin("G0")
    cb = fd.Codebook.for_grammar(g, 256, 0)
    empty = np.zeros((256, 256), cb.dtype)
    chart = fd.decode(empty, g, codebook=cb, words="fish swim", readback="lstsq")
    assert chart == {(0, 1): frozenset(), (1, 2): frozenset(), (0, 2): frozenset()}
    with cb.lock:
        stats = cleanup_parser.readback_statistics(
            empty, g, ("fish", "swim"), cb, fd.options.resolve("cleanup")
        )
    assert not stats.array.any()


def test_the_compiled_small_solve_is_the_batched_solve():
    """solve() of up to SMALL_SOLVE candidates goes through a compiled Cholesky: the same
    amplitudes as ridge_solve (float64 rounding, relative 1e-12), refinement included, and
    a matrix whose factorisation fails still solves (through the eigenvalues)."""
    from fastdcyk.engine.core.readback import SMALL_SOLVE, ridge_solve, solve

    rng = np.random.default_rng(4)
    for k in (1, 3, 17, SMALL_SOLVE, SMALL_SOLVE + 1):
        v = rng.standard_normal((k, 64)) / 8
        g, x = v @ v.T, rng.standard_normal(k)
        for refine in (0, 2):
            want = ridge_solve(g[None], x[None], refine=refine)[0]
            got = solve(g, x, refine=refine)
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())
    bad = np.array([[1.0, 2.0], [2.0, 1.0]])  # indefinite: no Cholesky factor
    want = ridge_solve(bad[None], np.ones((1, 2)))[0]
    np.testing.assert_allclose(solve(bad, np.ones(2)), want, rtol=1e-12)

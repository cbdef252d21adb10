"""The D-CYK engine against an independent dense implementation, and its accuracy."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

import fastdcyk as fd
from fastdcyk.engine.core.readback import RIDGE

# -- an independent, straightforward dense implementation (materialised operators) ----------


class DenseDCYK:
    """docs/method.md, sections 1-3, with explicit d x d matrices and plain matmul.

    ``order="sequential"`` applies each update before the next detection (the paper's
    Algorithms 2 and 3); ``order="cell"`` computes every P_A of a cell from the table as it
    was before the cell, then applies the cell's updates; ``order="width"`` computes every
    P_A of every cell of a span width from the table as it was before the width, then
    applies the cells' updates and reads each back in turn (with ``readback="lstsq"``,
    whose reads subtract nothing, all the width's updates first, then its reads).
    ``readback="cancel"`` keeps a second table, the residual: it receives every update, and
    every read (the words first, then each completed cell) is subtracted from it and read
    from it (docs/method.md, section 7).
    """

    def __init__(self, cb: fd.Codebook) -> None:
        self.cb = cb
        self.d = cb.d
        self.perm = np.eye(cb.d)[cb.perm]  # (Phi x)[k] = x[perm[k]]

    def circ(self, kind, sym):
        return scipy.linalg.circulant(self.cb.vector(kind, sym).astype(np.float64))

    def plus(self, kind, sym):
        return self.circ(kind, sym) @ self.perm

    def minus(self, kind, sym):
        return self.perm.T @ self.circ(kind, sym).T

    def sig(self, x, beta):
        with np.errstate(over="ignore"):
            return 1.0 / (1.0 + np.exp(-(x - 0.5) * beta))

    def run_like(self, res):
        """The reference with the grammar, sentence and options of an engine result."""
        o = res.options
        return self.run(
            res.grammar,
            res.words,
            gate=o.gate,
            decoder=o.decoder,
            unary_mask=o.unary_mask,
            beta=o.beta,
            threshold=o.threshold,
            order=o.order,
            encoding=o.encoding,
            readback=o.readback,
            level=o.candidate_level,
            prune=o.prune,
        )

    def run(
        self,
        g,
        words,
        *,
        gate,
        decoder,
        unary_mask,
        beta,
        threshold,
        order="sequential",
        encoding="paper",
        readback="matched",
        level=0.25,
        prune=0.0,
    ):
        d, n = self.d, len(words)
        lstsq = gate == "cleanup" and readback in ("lstsq", "cancel")
        cancel = lstsq and readback == "cancel"
        eye = np.eye(d)
        P, M = self.plus, self.minus
        pl = sum(
            M("index", i - 1) @ M("index", i) @ M("terminal", a) for i, a in enumerate(words, 1)
        )
        pr = np.zeros((d, d))
        ru, rb = {}, {}
        for a, t in g.unary_rules:
            ru[a] = ru.get(a, 0) + P("terminal", t)
        right = "right" if encoding == "roles" else "nonterminal"  # the right child's vector
        for a, b, c in g.binary_rules:
            rb[a] = rb.get(a, 0) + P("nonterminal", b) @ M(right, c)

        def item(i, j, kind, a):
            return M("index", i) @ M("index", j) @ M(kind, a)

        def update(i, j, a, pa):
            nonlocal pl, pr, res
            pl = pl + item(i, j, "nonterminal", a) @ pa
            if cancel:
                res = res + item(i, j, "nonterminal", a) @ pa
            if gate != "cleanup":  # the clean-up gate never writes P_right
                pr = pr + P(right, a) @ P("index", i) @ P("index", j) @ pa

        def readout(i, j, kind, x, table=None):
            """The trace decoder's readout tr([x]+ [j]+ [i]+ P_left) / d (of ``table``)."""
            table = pl if table is None else table
            return np.trace(P(kind, x) @ P("index", j) @ P("index", i) @ table) / d

        def least_squares(i, j, regressors):
            """The ridge solve over ``regressors`` (kind, symbol) of cell (i, j), read from
            the residual table when cancelling (and what it reads subtracted from it)."""
            nonlocal res
            table = res if cancel else pl
            x = np.array([readout(i, j, kind, s, table) for kind, s in regressors])
            gram = np.array(
                [[np.trace(P(k1, s1) @ M(k2, s2)) / d for k2, s2 in regressors]
                 for k1, s1 in regressors]
            )  # fmt: skip
            ridge = RIDGE * np.trace(gram) / len(x)
            amp = np.linalg.solve(gram + ridge * np.eye(len(x)), x)
            if cancel:
                pairs = zip(amp, regressors, strict=True)
                res = res - sum(v * item(i, j, k, s) for v, (k, s) in pairs)
            return amp

        clean = {}  # (i, j, X): sigma of the read-back of a completed cell
        stats = {}  # (i, j, X): the least-squares read-back's amplitudes
        read_terms = {}  # (i - 1, i): the terminals read in a unary cell (clean > level)
        lexicon = sorted({w for _, w in g.unary_rules}, key=list(g.terminals).index)
        res = pl.copy()  # cancelling: the table less what was read
        word_scores = {}  # cancelling: each word's terminals as first read
        if cancel:  # every word read, solved for and subtracted before any cell is read
            for i, w in enumerate(words, 1):
                scores = {t: self.sig(readout(i - 1, i, "terminal", t, res), beta) for t in lexicon}
                solved = [t for t in lexicon if scores[t] > level or t == w]
                least_squares(i - 1, i, [("terminal", t) for t in solved])
                word_scores[i] = scores

        def candidate(t, gate_matrix):
            # least squares: only a candidate (t above the level) is written
            keep = not lstsq or (t > level and gate_matrix[0, 0] > prune)
            return gate_matrix if keep else None

        def unary_gate(i, a):
            if gate == "cleanup":
                scores = word_scores.get(i) or {
                    w: self.sig(readout(i - 1, i, "terminal", w), beta) for w in lexicon
                }
                read_terms.setdefault((i - 1, i), set()).update(
                    w for w, c in scores.items() if c > level
                )
                t = sum(scores[w] for b, w in g.unary_rules if b == a)
                return candidate(t, self.sig(t, beta) * eye)
            m = ru[a] @ P("index", i) @ P("index", i - 1) @ pl
            if gate == "trace":
                return self.sig(np.trace(m) / d, beta) * eye
            if unary_mask:
                return np.diag(self.sig(np.diag(m), beta))
            return self.sig(m, beta)

        def binary_gate(i, j, a):
            if gate == "cleanup":
                t = sum(
                    clean[(i, k, b)] * clean[(k, j, c)]
                    for x, b, c in g.binary_rules
                    if x == a
                    for k in range(i + 1, j)
                )
                return candidate(t, self.sig(t, beta) * eye)
            m = M("index", j) @ P("index", i) @ pl @ rb[a] @ pr
            if gate == "trace":
                return self.sig(np.trace(m) / d, beta) * eye
            return np.diag(self.sig(np.diag(m), beta))

        def lstsq_read(i, j, written):
            """The cell's candidates and read terminals, solved for together."""
            regressors = [("nonterminal", a) for a in written]
            regressors += [("terminal", w) for w in lexicon if w in read_terms.get((i, j), ())]
            amp = least_squares(i, j, regressors) if regressors else []
            for x_name in g.nonterminals:
                stats[(i, j, x_name)] = 0.0
            for a, value in zip(written, amp, strict=False):
                stats[(i, j, a)] = value

        def detect(names, gate_of):
            """Every P_A of a cell from the table as it is now (the cell and width orders)."""
            return [(a, gate_of(a)) for a in names]

        def cell(i, j, names, gate_of, gates=None):
            finish(i, j, write(i, j, names, gate_of, gates))

        def write(i, j, names, gate_of, gates=None):
            """The cell's updates; the nonterminals written."""
            written = []
            if order == "sequential":
                for a in names:
                    pa = gate_of(a)
                    if pa is not None:
                        update(i, j, a, pa)
                        written.append(a)
            else:
                if gates is None:  # all read the table before the cell
                    gates = detect(names, gate_of)
                for a, pa in gates:
                    if pa is not None:
                        update(i, j, a, pa)
                        written.append(a)
            return written

        def finish(i, j, written):
            """The completed cell read (the clean-up gate)."""
            if lstsq:  # the cell is complete: read it once, by least squares
                lstsq_read(i, j, written)
                for x in g.nonterminals:
                    clean[(i, j, x)] = self.sig(stats[(i, j, x)], beta)
            elif gate == "cleanup":  # the cell is complete: read it once
                for x in g.nonterminals:
                    clean[(i, j, x)] = self.sig(readout(i, j, "nonterminal", x), beta)

        unary_names = [a for a in g.nonterminals if a in ru]
        binary_names = [a for a in g.nonterminals if a in rb]

        def gate_of_cell(i, j):
            if j == i + 1:
                return unary_names, lambda a: unary_gate(j, a)
            return binary_names, lambda a: binary_gate(i, j, a)

        if order == "width":  # every cell of a width detected before any of them writes
            for w in range(1, n + 1):
                spans = [(i, i + w) for i in range(n - w + 1)]
                detected = [detect(*gate_of_cell(i, j)) for i, j in spans]
                if lstsq and not cancel:  # reads that subtract nothing: the width writes first
                    writes = [
                        write(i, j, *gate_of_cell(i, j), gates)
                        for (i, j), gates in zip(spans, detected, strict=True)
                    ]
                    for (i, j), written in zip(spans, writes, strict=True):
                        finish(i, j, written)
                    continue
                for (i, j), gates in zip(spans, detected, strict=True):
                    cell(i, j, *gate_of_cell(i, j), gates=gates)
        else:
            for i in range(1, n + 1):
                cell(i - 1, i, *gate_of_cell(i - 1, i))
            for j in range(2, n + 1):
                for i in range(j - 2, -1, -1):
                    cell(i, j, *gate_of_cell(i, j))
        for i in range(n):
            for j in range(i + 1, n + 1):
                for a in g.nonterminals:
                    if lstsq:  # the chart is the read-back's
                        continue
                    x = P("nonterminal", a) @ P("index", j) @ P("index", i) @ pl
                    stats[(i, j, a)] = x[0, 0] if decoder == "entry" else np.trace(x) / d
        bound = 0.5 + np.log(threshold / (1 - threshold)) / beta
        chart = {
            (i, j): frozenset(a for a in g.nonterminals if stats[(i, j, a)] > bound)
            for i in range(n)
            for j in range(i + 1, n + 1)
        }
        return pl, pr, stats, chart


CASES = [
    ("example", "a a b"),
    ("example", "a b"),
    ("G0", "fish swim fish near fish"),
    ("G1", "fish swim fish"),
]
SETTINGS = [
    dict(variant="paper"),
    dict(variant="trace"),
    dict(variant="paper", unary_mask=True),
    dict(variant="paper", gate="trace"),
    dict(variant="trace", decoder="entry"),
    dict(variant="paper", order="cell"),
    dict(variant="paper", order="cell", unary_mask=True),
    dict(variant="trace", order="sequential"),
    dict(variant="trace", order="cell"),
    dict(variant="trace", encoding="roles"),
    dict(variant="paper", encoding="roles"),
    dict(variant="paper", order="cell", encoding="roles"),
    dict(variant="cleanup"),
    dict(variant="cleanup", order="sequential"),
    dict(variant="cleanup", candidate_level=0.0),
    dict(variant="cleanup", readback="cancel"),
    dict(variant="cleanup", readback="cancel", order="sequential"),
    dict(variant="cleanup", readback="matched"),
    dict(variant="cleanup", readback="matched", order="sequential"),
    dict(variant="cleanup", readback="matched", decoder="entry"),
    dict(variant="cleanup", readback="cancel", order="width"),
    dict(variant="cleanup", readback="lstsq", order="width"),
]


@pytest.mark.parametrize(("grammar", "sentence"), CASES)
@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: "-".join(map(str, s.values())))
@pytest.mark.parametrize("d", [61, 96])
def test_engine_matches_dense_reference(grammar, sentence, settings, d):
    g = fd.Grammar.builtin(grammar)
    cb = fd.Codebook(d, seed=5, dtype="float64")
    # prune=0 applies every update, as the reference does; beta 10 keeps the gates smooth, so
    # P_A carries real values (not only 0s and 1s) and differences would show.
    res = fd.dcyk(g, sentence, cb, beta=10.0, threshold=0.9, prune=0.0, **settings)
    ref_pl, ref_pr, ref_stats, ref_chart = DenseDCYK(cb).run_like(res)
    scale_l = np.abs(ref_pl).max()
    scale_r = max(np.abs(ref_pr).max(), 1e-300)
    # float64 throughout: 1e-6 leaves room for the FFTs' rounding amplified by the gates
    # (beta / 4 each) along a short sentence
    assert np.abs(res.p_left - ref_pl).max() <= 1e-6 * scale_l
    assert np.abs(res.p_right - ref_pr).max() <= 1e-6 * scale_r
    for key, value in ref_stats.items():
        assert res.statistics[key] == pytest.approx(value, rel=1e-6, abs=1e-9 * scale_l)
    assert res.chart == ref_chart
    if res.options.readback != "matched":  # the candidates are read, the others read 0
        written = {(i, j, a) for (i, j, a), v in ref_stats.items() if v != 0.0}
        assert written and len(written) < len(ref_stats)


def test_float32_agrees_with_float64():
    g = fd.Grammar.builtin("G0")
    s = "fish swim fish near fish"
    # At beta = 50 an entry near the gate's midpoint can flip between 0 and 1 on a rounding
    # difference; at beta = 2 each gate amplifies a difference by at most beta / 4 < 1, so
    # float32 must agree with float64 to a small multiple of float32's epsilon.
    r32 = fd.dcyk(g, s, d=128, dtype="float32", beta=2.0)
    r64 = fd.dcyk(g, s, d=128, dtype="float64", beta=2.0)
    assert r32.p_left.dtype == np.float32 and r64.p_left.dtype == np.float64
    for a32, a64 in ((r32.p_left, r64.p_left), (r32.p_right, r64.p_right)):
        scale = np.abs(a64).max()
        assert np.abs(a32 - a64).max() <= 1000 * np.finfo(np.float32).eps * scale


# -- accuracy on the running example and on G0 -------------------------------------------


@pytest.fixture(scope="module")
def g0_sentences():
    g = fd.Grammar.builtin("G0")
    return g, fd.generate(g, 20, min_len=2, max_len=7, seed=11)


def test_trace_variant_exact_on_running_example():
    g = fd.Grammar.builtin("example")
    r = fd.dcyk(g, "a a b", d=1024, variant="trace")
    assert r.chart == fd.cyk(g, "a a b")


@pytest.mark.slow
def test_trace_variant_exact_on_g0_at_1024(g0_sentences):
    g, sents = g0_sentences
    # the codebook dcyk(..., variant="trace") builds by default
    from fastdcyk.engine import VARIANTS, default_codebook

    assert VARIANTS["trace"]["unitary"] is True
    cb = default_codebook(g, 1024, 0, unitary=True)
    wrong = []
    for s in sents:
        r = fd.dcyk(g, s, cb, variant="trace")
        if r.chart != fd.cyk(g, s):
            wrong.append(" ".join(s))
    assert not wrong, f"trace variant missed the CYK table on: {wrong}"


@pytest.mark.slow
def test_paper_variant_f1_grows_with_d(g0_sentences):
    g, sents = g0_sentences
    mean_f1 = {}
    for d in (128, 512, 1024):
        cb = fd.Codebook(d, seed=0)
        charts = [fd.dcyk(g, s, cb, variant="paper").chart for s in sents]
        f1 = [fd.cell_scores(fd.cyk(g, s), c).f1 for s, c in zip(sents, charts, strict=True)]
        mean_f1[d] = float(np.mean(f1))
    assert mean_f1[128] < mean_f1[512] < mean_f1[1024], mean_f1


# -- decoding ------------------------------------------------------------------------------


def test_decode_reuses_statistics_and_matches_standalone():
    g = fd.Grammar.builtin("G0")
    s = "fish swim fish"
    r = fd.dcyk(g, s, d=256, variant="trace")
    for thr in (0.5, 0.9, 0.99):
        via_result = fd.decode(r, threshold=thr)
        standalone = fd.decode(r.p_left, g, 3, r.codebook, decoder="trace", threshold=thr)
        assert via_result == standalone == r.chart_at(threshold=thr)
    assert fd.decode(r) == r.chart
    # a lower threshold never removes a triple
    low, high = fd.cell_scores(r.chart, fd.decode(r, threshold=0.5)), r.chart
    assert low.tp == sum(len(c) for c in high.values())


def test_decode_entry_decoder_on_trace_parse_differs_only_by_rule():
    g = fd.Grammar.builtin("example")
    r = fd.dcyk(g, "a a b", d=512, variant="trace")
    entry = fd.decode(r, decoder="entry")
    assert set(entry) == set(r.chart)


def test_result_fields():
    g = fd.Grammar.builtin("example")
    r = fd.dcyk(g, ["a", "b"], d=64, seed=3)  # the default variant
    assert r.p_left.shape == r.p_right.shape == (64, 64)
    assert r.p_left.dtype == np.float32
    assert set(r.chart) == {(0, 1), (0, 2), (1, 2)}
    assert r.counts["detections"] > 0
    assert set(r.timings) == {"unary", "binary", "decode"}
    assert "variant='cleanup'" in repr(r) and r.options.readback == "cancel"


def test_pruning_skips_only_negligible_updates():
    g = fd.Grammar.builtin("G0")
    s = "fish swim fish near fish swim fish"  # long enough for gates below float64's eps
    full = fd.dcyk(g, s, d=128, dtype="float64", variant="trace", prune=0.0)
    pruned = fd.dcyk(g, s, d=128, dtype="float64", variant="trace")
    assert pruned.counts["pruned"] > 0 and full.counts["pruned"] == 0
    scale = np.abs(full.p_left).max()
    assert np.abs(full.p_left - pruned.p_left).max() <= 1e-12 * scale
    assert full.chart == pruned.chart


# -- bad input -----------------------------------------------------------------------------


@pytest.fixture
def example():
    return fd.Grammar.builtin("example")


def test_unknown_word_is_named(example):
    with pytest.raises(ValueError, match=r"'c' at position 1 \(0-based\) is not a terminal"):
        fd.dcyk(example, "a c b", d=16)


def test_empty_sentence(example):
    with pytest.raises(ValueError, match="empty sentence"):
        fd.dcyk(example, "", d=16)
    with pytest.raises(ValueError, match="empty sentence"):
        fd.dcyk(example, [], d=16)


@pytest.mark.parametrize("d", [1, 0, -3, 2.5])
def test_bad_dimension(example, d):
    with pytest.raises(ValueError, match="d must be an integer >= 2"):
        fd.dcyk(example, "a b", d=d)


def test_codebook_disagreements(example):
    cb = fd.Codebook(32, dtype="float32")
    with pytest.raises(ValueError, match="disagrees with the codebook's dimension 32"):
        fd.dcyk(example, "a b", cb, d=64)
    with pytest.raises(ValueError, match="disagrees with the codebook's dtype float32"):
        fd.dcyk(example, "a b", cb, dtype="float64")
    # matching values are accepted
    assert fd.dcyk(example, "a b", cb, d=32, dtype="float32").chart is not None


def test_codebook_from_vectors_missing_symbol(example):
    d = 16
    rng = np.random.default_rng(0)
    cb = fd.Codebook.from_vectors(
        terminals={"a": rng.standard_normal(d), "b": rng.standard_normal(d)},
        nonterminals={"S": rng.standard_normal(d), "D": rng.standard_normal(d)},
        indices=[rng.standard_normal(d) for _ in range(3)],
        permutation=rng.permutation(d),
    )
    with pytest.raises(KeyError, match="nonterminal 'E'"):
        fd.dcyk(example, "a b", cb)


def test_non_finite_values_are_reported(example):
    d = 16
    rng = np.random.default_rng(0)
    big = {k: 1e15 * rng.standard_normal(d) for k in ("S", "D", "E")}
    cb = fd.Codebook.from_vectors(
        terminals={"a": 1e15 * rng.standard_normal(d), "b": 1e15 * rng.standard_normal(d)},
        nonterminals=big,
        indices=[1e15 * rng.standard_normal(d) for _ in range(4)],
        permutation=rng.permutation(d),
    )
    with pytest.raises(FloatingPointError, match="non-finite values"):
        fd.dcyk(example, "a a b", cb)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"variant": "fast"}, "unknown variant"),
        ({"gate": "max"}, "unknown gate"),
        ({"decoder": "argmax"}, "unknown decoder"),
        ({"beta": 0}, "beta must be"),
        ({"beta": float("nan")}, "beta must be"),
        ({"threshold": 1.0}, "threshold must lie"),
        ({"prune": -1}, "prune must be"),
        ({"order": "fast"}, "unknown order"),
        ({"encoding": "x"}, "unknown encoding"),
        ({"progress": "yes"}, "progress must be True, False or a delay"),
        ({"progress": -1}, "progress must be"),
        ({"progress": float("nan")}, "progress must be"),
        ({"record": "yes"}, "record must be True or False"),
    ],
)
def test_bad_options(example, kwargs, message):
    with pytest.raises(ValueError, match=message):
        fd.dcyk(example, "a b", d=16, **kwargs)


def test_memory_estimate_and_refusal(example, monkeypatch):
    real, cplx = 6000**2 * 4, 3001 * 6000 * 8  # a d x d float32 array, a half spectrum
    # entrywise gate (paper variant): during the parse the two accumulators kept as half
    # spectra, a spectrum buffer and two real work buffers, and inside operator chains one
    # more real one (numpy backend) or a few blocks per thread (scipy FFT); at the end
    # the two dense results beside the work buffers, which is less
    est = fd.estimate_memory(6000, "float32", fft="numpy")
    assert est == 3 * cplx + 3 * real
    assert fd.estimate_memory(6000, "float64", fft="numpy") == 2 * est
    blocked = fd.estimate_memory(6000, "float32", fft="scipy", threads=2)
    blocks = blocked - (3 * cplx + 2 * real)
    assert 0 < blocks < real / 20  # a few blocks per thread, far below a d x d array
    # blocks of 16 columns (left) and 8 rows (right): two real blocks and a spectrum each
    assert blocks == 2 * (16 + 8) * (2 * 6000 + 2 * 3001) * 4
    # cell order keeps one more spectrum (the shared product of a unary cell)
    cell = fd.estimate_memory(6000, "float32", fft="numpy", order="cell")
    assert cell == est + cplx
    # trace gate: the 2-D spectra of both accumulators, one real buffer and at d = 6000
    # the minimum of two index matrices G_k (256 MiB hold only one)
    trace = fd.estimate_memory(6000, "float32", fft="scipy", variant="trace")
    assert trace == 4 * cplx + real
    # at d = 1024 all n + 1 index matrices of a 7-word sentence fit in the G cache, and are
    # kept for the next parse: the end is the peak, with P_right's spectrum, three d x d
    # arrays (a work buffer and the two results) and a fourth (the gather's)
    small = fd.estimate_memory(1024, "float32", variant="trace", n=7)
    assert small == (1 + 8) * 513 * 1024 * 8 + 4 * 1024**2 * 4
    import fastdcyk.hrr.memory as memory

    monkeypatch.setattr(memory, "available_memory", lambda: 10**6)
    with pytest.raises(MemoryError, match=r"d = 1000 in float64 needs about .* GiB") as err:
        fd.dcyk(example, "a b", d=1000, dtype="float64")
    assert "float32" in str(err.value)
    monkeypatch.setattr(memory, "available_memory", lambda: None)
    assert fd.dcyk(example, "a b", d=16).chart is not None


def test_non_cnf_grammar_rejected():
    g = fd.Grammar.from_string("S -> A B C\nA -> 'a'\nB -> 'b'\nC -> 'c'", cnf="allow")
    with pytest.raises(ValueError, match="Chomsky normal form"):
        fd.dcyk(g, "a b c", d=16)


def test_record_logs_every_detection():
    g = fd.Grammar.builtin("example")
    r = fd.dcyk(g, "a a b", d=256, variant="trace", record=True)
    assert len(r.log) == r.counts["detections"]
    assert sum(not e["applied"] for e in r.log) == r.counts["pruned"]
    # unary cells come first, then binary cells with j ascending and i descending
    steps = [(e["step"], e["i"], e["j"], e["A"]) for e in r.log]
    assert steps[:2] == [("unary", 0, 1, "D"), ("unary", 0, 1, "E")]
    assert [(s, i, j) for s, i, j, _ in steps[6:]] == [
        ("binary", 0, 2),
        ("binary", 1, 3),
        ("binary", 0, 3),
    ]
    gold = fd.cyk(g, "a a b")
    for e in r.log:  # at d = 256 the trace gate opens exactly on the CYK table's triples
        assert (e["p_diag_mean"] > 0.5) == (e["A"] in gold[(e["i"], e["j"])])
    assert fd.dcyk(g, "a a b", d=64).log is None


# -- a grammar of hundreds of nonterminals -------------------------------------------------


@pytest.mark.parametrize("variant", ["paper", "trace"])
@pytest.mark.parametrize("order", ["sequential", "cell"])
@pytest.mark.parametrize("encoding", ["paper", "roles"])
def test_hundreds_of_nonterminals_match_dense_reference(variant, order, encoding):
    # The batched cell (one matrix product over the rule tables for every nonterminal, one
    # summed update) against the reference, which detects and updates nonterminal by
    # nonterminal: the same numbers to rounding, on a grammar of 300 nonterminals with
    # rules A -> B B and ambiguous words. beta = 2: in sequential order every gate of a cell
    # reads the updates before it, and over hundreds of nonterminals a rounding difference
    # grows by up to beta / 4 per gate (at beta = 10 two correct implementations end up
    # 20% apart); at beta = 2 it cannot grow.
    g = fd.random_grammar(300, 60, 900, ambiguity=2.0, same_child=0.1, seed=4)
    words = fd.generate(g, 1, min_len=4, max_len=4, seed=1)[0]
    cb = fd.Codebook(40, seed=2, dtype="float64")
    res = fd.dcyk(
        g, words, cb, variant=variant, order=order, encoding=encoding, beta=2.0, prune=0.0
    )
    ref_pl, ref_pr, ref_stats, ref_chart = DenseDCYK(cb).run_like(res)
    assert res.counts["detections"] == len(words) * len({a for a, _ in g.unary_rules}) + len(
        words
    ) * (len(words) - 1) // 2 * len({a for a, _, _ in g.binary_rules})
    # 1e-5 as for the small cases above: the sequential paper variant sums hundreds of full
    # d x d updates per position, each through a sigmoid, and lands some 1e-6 apart
    assert np.abs(res.p_left - ref_pl).max() <= 1e-5 * np.abs(ref_pl).max()
    assert np.abs(res.p_right - ref_pr).max() <= 1e-5 * np.abs(ref_pr).max()
    got = np.array([res.statistics[k] for k in ref_stats])
    want = np.array(list(ref_stats.values()))
    assert np.abs(got - want).max() <= 1e-5 * np.abs(ref_pl).max()
    assert res.chart == ref_chart


# -- the paper's order computes what the engine computed before orders existed -------------

#: (sum, sum of |.|) of P_left and P_right, P_left[3, 7] and P_right[5, 2], computed by the
#: engine of commit 3b1b792 (the last before ``order``, which always ran the paper's order)
#: at d = 96, float64, codebook seed 5 (unitary vectors for the trace variant), beta = 10,
#: prune = 0.
BEFORE_ORDERS = {
    ("paper", "G0"): (-535.3120331134373, 10695.059861463287, -466.84998286911673,
                      9528.862176291095, 1.2434104254847922, 0.8797969443881077),
    ("paper", "G2"): (-9311.942757838635, 19528.725499979195, -9150.248864170266,
                      17540.339204762822, -0.6284528164514873, 2.0825492200534343),
    ("trace", "G0"): (856.0084441413929, 4456.295584799791, 760.0084441413927,
                      4066.211971745275, 0.375708500032948, 0.16486276758025073),
    ("trace", "G2"): (1340.705232303586, 6004.514544523689, 1340.705232303586,
                      5789.961340050172, -0.024639342852772583, 1.9074769819614454),
}  # fmt: skip
SENTENCES = {"G0": "fish swim fish near fish", "G2": "fish swim fish near fish swim"}


@pytest.mark.parametrize(("variant", "grammar"), list(BEFORE_ORDERS))
def test_sequential_order_is_the_engine_before_orders(variant, grammar):
    g = fd.Grammar.builtin(grammar)
    # the codebook and encoding of that engine: random span indices, vectors with their
    # constant coefficient, the paper's encoding
    unitary = variant == "trace"
    cb = fd.Codebook(96, seed=5, dtype="float64", unitary=unitary, index_vectors="random",
                     zero_mean=False)  # fmt: skip
    r = fd.dcyk(g, SENTENCES[grammar], cb, variant=variant, beta=10.0, prune=0.0,
                order="sequential", encoding="paper")  # fmt: skip
    pl, pr = r.p_left, r.p_right
    got = (pl.sum(), np.abs(pl).sum(), pr.sum(), np.abs(pr).sum(), pl[3, 7], pr[5, 2])
    scale = np.abs(pl).max() + np.abs(pr).max()
    # float64 rounding of a different order of operations (the trace variant now runs in
    # the 2-D spectral domain); the paper variant agrees bit for bit
    np.testing.assert_allclose(got, BEFORE_ORDERS[variant, grammar], rtol=1e-9, atol=1e-9 * scale)


# -- rules A -> B B: the roles encoding -----------------------------------------------------

SS_GRAMMAR = "S -> S S | A B\nA -> 'a'\nB -> 'b'"
SS_SENTENCES = ["a a", "a b a b", "a a b b", "b b a a", "a b b a b", "a b a b a b", "a a a b"]


@pytest.mark.parametrize("d", [256, 512])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_roles_encoding_proposes_no_split_cyk_rejects(d, seed):
    # With the paper's encoding R_b^S of S -> S S is C_S C_S^T = I (unitary vectors): S is
    # proposed over any split whose halves share a nonterminal ("a a": A and A). With the
    # right child under its own vector, [S]+ [S']- is a random circulant and only true
    # derivations cancel.
    g = fd.Grammar.from_string(SS_GRAMMAR)
    # random symbol vectors, and the grammar's symbols shifted (the trace default)
    for cb in (fd.Codebook(d, seed=seed, unitary=True), fd.Codebook.for_grammar(g, d, seed)):
        for s in SS_SENTENCES:
            gold = fd.cyk(g, s)
            chart = fd.dcyk(g, s, cb, variant="trace", encoding="roles").chart
            spurious = {k: chart[k] - gold[k] for k in gold if chart[k] - gold[k]}
            assert not spurious, f"{s!r}: {spurious}"
            assert chart == gold


def test_paper_encoding_collapses_on_rules_a_to_b_b():
    # the failure the roles encoding removes, so that the test above can fail
    g = fd.Grammar.from_string(SS_GRAMMAR)
    chart = fd.dcyk(g, "a a", d=512, variant="trace", encoding="paper").chart
    assert fd.cyk(g, "a a")[(0, 2)] == frozenset()
    assert "S" in chart[(0, 2)]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"variant": "foo"}, "unknown variant"),
        ({"gate": "foo"}, "unknown gate"),
        ({"order": "foo"}, "unknown order"),
        ({"decoder": "foo"}, "unknown decoder"),
        ({"n": 0}, "n must be an integer >= 1"),
        ({"n": -3}, "n must be an integer >= 1"),
    ],
)
def test_estimate_memory_checks_its_options(kwargs, message):
    with pytest.raises(ValueError, match=message):
        fd.estimate_memory(6000, **kwargs)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((0,), "d must be an integer >= 2, got 0"),  # a ZeroDivisionError before
        ((-64,), "d must be an integer >= 2"),
        ((64.5,), "d must be an integer >= 2"),  # a float of bytes before
        ((64, "int8"), "dtype must be 'float32' or 'float64'"),  # accepted before
    ],
)
def test_estimate_memory_checks_d_and_dtype_as_a_parse_does(args, message):
    with pytest.raises(ValueError, match=message):
        fd.estimate_memory(*args)


def test_trace_default_codebook_shifts_the_grammars_symbols():
    g = fd.Grammar.builtin("G1")
    words = "fish swim near fish"
    own = fd.dcyk(g, words, d=64, seed=2, variant="trace", dtype="float64")
    cb = fd.Codebook.for_grammar(g, 64, 2, dtype="float64")
    given = fd.dcyk(g, words, cb, variant="trace")
    np.testing.assert_array_equal(own.p_left, given.p_left)
    np.testing.assert_array_equal(own.p_right, given.p_right)
    plain = fd.dcyk(g, words, fd.Codebook(64, 2, "float64", unitary=True), variant="trace")
    assert not np.array_equal(own.p_left, plain.p_left)
    # the paper variant keeps Gaussian vectors of its own
    paper = fd.dcyk(g, words, d=64, seed=2, variant="paper", dtype="float64")
    ref = fd.dcyk(g, words, fd.Codebook(64, 2, "float64"), variant="paper")
    np.testing.assert_array_equal(paper.p_left, ref.p_left)


def test_decode_honours_a_grammar_length_or_codebook_other_than_the_results():
    """Given to decode() with a result, they replace the result's own: its P_left is decoded
    again (the kept statistics hold the result's grammar, length and codebook only)."""
    g = fd.Grammar.builtin("G0")
    r = fd.dcyk(g, "fish swim fish", d=256, variant="trace")
    assert any("VP" in cell for cell in r.chart.values())

    def again(grammar, n, codebook):
        return fd.decode(r.p_left, grammar, n, codebook, decoder="trace")

    # a grammar without VP: no cell may hold it
    other = fd.Grammar.from_string("S -> NP NP\nNP -> NP NP\nNP -> 'fish' | 'swim'")
    chart = fd.decode(r, grammar=other)
    assert chart == again(other, 3, r.codebook)
    assert not any("VP" in cell for cell in chart.values())
    # a shorter length: only the cells of the first two words
    assert fd.decode(r, n=2) == again(g, 2, r.codebook)
    assert set(fd.decode(r, n=2)) == {(0, 1), (0, 2), (1, 2)}
    # another codebook of the same d: the P_left is noise to it
    cb = fd.Codebook(256, seed=7, unitary=True)
    chart = fd.decode(r, codebook=cb, threshold=0.5)
    assert chart == again(g, 3, cb) != r.chart_at(threshold=0.5)
    with pytest.raises(ValueError, match="the codebook has d = 64"):
        fd.decode(r, codebook=fd.Codebook(64, seed=7, unitary=True))
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        fd.decode(r, n=0)
    # the result's own values (or the same grammar, equal but not the same object) reuse
    # the kept statistics
    same = fd.Grammar.from_string(g.to_string())
    assert fd.decode(r, grammar=same, n=3, codebook=r.codebook, decoder="trace") == r.chart


def test_words_are_compared_with_terminals_in_unicode_nfc():
    import unicodedata

    g = fd.Grammar.from_string("S -> A A\nA -> 'caf\u00e9'")
    decomposed = unicodedata.normalize("NFD", "caf\u00e9")
    assert decomposed != "caf\u00e9"
    r = fd.dcyk(g, [decomposed, decomposed], d=64, variant="trace")
    assert r.words == ("caf\u00e9", "caf\u00e9") and "S" in r.chart[(0, 2)]
    with pytest.raises(ValueError, match="compared in Unicode NFC"):
        fd.dcyk(g, ["caf\u00e8", decomposed], d=64)


@pytest.mark.parametrize("library", ["numpy", "scipy"])
@pytest.mark.parametrize(
    "options",
    [
        {"variant": "paper"},
        {"variant": "paper", "order": "cell"},
        {"variant": "paper", "decoder": "trace"},
        {"variant": "trace"},
        {"variant": "trace", "decoder": "entry"},
    ],
)
def test_the_work_buffers_a_parse_leaves_are_the_ones_the_estimate_counts(library, options):
    """Every d x d work buffer the codebook holds after a parse is declared for those options
    (fastdcyk.hrr.buffers), with the size the memory estimate gives it."""
    from fastdcyk.engine.memory import work_buffers
    from fastdcyk.hrr import blocks, buffers
    from fastdcyk.hrr.buffers import g_cache_slots

    d = 64
    g = fd.Grammar.builtin("G0")
    cb = fd.Codebook(d, seed=1, unitary=options["variant"] == "trace", fft=library, threads=1)
    r = fd.dcyk(g, "fish swim fish", cb, **options)
    opt = r.options
    held_by_mode = work_buffers(opt, cb.fft.blockwise, g_cache_slots(d, cb.dtype, 3))
    declared = {b.name: b for b in held_by_mode.during + held_by_mode.end}
    block_names = {name for t in range(cb.fft.threads) for name in blocks.block_names(t)}
    held = {name: buf for (name, _), buf in cb.workspace.arrays.items()}
    assert held, "the parse used no work buffer"
    for name, buf in held.items():
        chains = held_by_mode.chains is not None  # operator chains ran
        if name in block_names and cb.fft.blockwise and chains:
            continue
        assert name in declared, f"{name} is allocated but not declared for {options}"
        assert isinstance(declared[name], buffers.Buffer)
        assert buf.nbytes <= declared[name].nbytes(d, cb.dtype)
    in_blocks = sum(buf.nbytes for name, buf in held.items() if name in block_names)
    assert in_blocks <= blocks.block_bytes(d, cb.dtype, cb.fft.threads)


# -- a real-size grammar: the clean-up detection ----------------------------------------------


@pytest.fixture(scope="module")
def large_grammar():
    """1,200 nonterminals, 3,000 binary rules, every terminal of two nonterminals."""
    g = fd.random_grammar(1200, 300, 3000, ambiguity=2, seed=0)
    assert len(g.nonterminals) == 1200
    return g, fd.generate(g, 6, min_len=3, max_len=8, seed=1)


def test_cleanup_parses_a_grammar_of_1200_nonterminals_at_small_d(large_grammar):
    """At d = 256 the clean-up detection decodes every table exactly, in both backends'
    dtype float64 and the default float32; the trace variant's detection, whose noise grows
    with the rules, proposes thousands of false triples on the same sentences."""
    g, sents = large_grammar
    for dtype in ("float32", "float64"):
        cb = fd.Codebook.for_grammar(g, 256, 0, dtype=dtype)
        for w in sents:
            r = fd.dcyk(g, w, cb, variant="cleanup")
            assert r.chart == fd.cyk(g, w), (dtype, w)
            assert not r.p_right.any()
    cb = fd.Codebook.for_grammar(g, 256, 0)
    trace = fd.cell_scores(fd.cyk(g, sents[0]), fd.dcyk(g, sents[0], cb, variant="trace").chart)
    assert trace.predicted > 100 * trace.gold


def test_cleanup_counts_and_log(large_grammar):
    """Every nonterminal with rules of the step is detected in every cell; the log names them."""
    g, sents = large_grammar
    w = sents[1]
    r = fd.dcyk(g, w, d=128, variant="cleanup", record=True)
    n = len(w)
    st = fd.engine.core.rules.rule_structure(g)
    cells = n * (n - 1) // 2
    assert r.counts["detections"] == n * len(st.unary) + cells * len(st.binary)
    assert r.counts["detections"] == r.counts["updates"] + r.counts["pruned"] == len(r.log)


def test_sentences_given_the_wrong_way_get_a_message_that_says_how():
    g = fd.Grammar.builtin("G0")
    with pytest.raises(TypeError, match="the sentence is bytes: decode it"):
        fd.dcyk(g, b"fish swim", d=32)  # said "word 0 is 102"
    with pytest.raises(ValueError, match="holds spaces: give the sentence one word per"):
        fd.dcyk(g, ["fish swim"], d=32)  # a whole sentence as one word (one CLI argument)


def test_a_codebook_of_vectors_too_few_indices_for_the_sentence_says_so():
    """A codebook built from vectors holds the span indices it was given (a layer's, its
    max_length + 1): a longer sentence is refused before any work, naming the lengths."""
    g = fd.Grammar.builtin("G0")
    rng = np.random.default_rng(0)
    d = 64
    cb = fd.Codebook.from_vectors(
        nonterminals={a: rng.standard_normal(d) for a in g.nonterminals},
        terminals={w: rng.standard_normal(d) for w in g.terminals},
        indices=[rng.standard_normal(d) for _ in range(4)],  # 0 to 3: three words at most
        permutation=rng.permutation(d),
    )
    fd.dcyk(g, "fish swim fish", cb, variant="paper")
    with pytest.raises(ValueError, match=r"a sentence of 4 words needs the span indices 0 to 4"):
        fd.dcyk(g, "fish swim fish fish", cb, variant="paper")


def test_what_a_codebook_fixes_cannot_be_asked_otherwise():
    """A codebook's seed, vectors and FFT library are chosen already: a seed, unitary or
    fft that disagrees is refused (each was silently ignored), one that agrees is fine."""
    g = fd.Grammar.builtin("G0")
    cb = fd.Codebook.for_grammar(g, 64, 0)
    assert cb.seed == 0 and cb.unitary and cb.fft.name == "scipy"
    for agrees in ({"seed": 0}, {"unitary": True}, {"fft": "scipy"}, {"fft": "auto"}):
        fd.dcyk(g, "fish swim", cb, **agrees)
    for bad, message in (
        ({"seed": 3}, "seed=3 disagrees with the codebook's seed 0"),
        ({"unitary": False}, "unitary=False disagrees with the codebook"),
        ({"fft": "numpy"}, "fft='numpy' disagrees with the codebook's FFT library 'scipy'"),
    ):
        with pytest.raises(ValueError, match=message):
            fd.dcyk(g, "fish swim", cb, **bad)
        with pytest.raises(ValueError, match=message):
            fd.dcyk_batch(g, ["fish swim"], cb, backend="numpy", **bad)

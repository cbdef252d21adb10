"""The clean-up parser's binary cells of one column in one compiled call.

In the cell order a binary cell (i, j) reads only cells that end before j or that start
after i and end at j: the cells of column j (i = j - 2 down to 0) are a chain that needs
one index matrix, G_j (docs/method.md, section 4.4). At small d a cell's arithmetic (a read
and a write or three of a (d/2 + 1) x d spectrum) is a few microseconds, and the Python
around it (the rule layer, the candidates, the ledger's counts and checks, the Gram matrix,
the solve, the certificate, the chart's bookkeeping: a few dozen numpy calls) ten to
twenty times that. :func:`column` runs all of it for a whole column in one Numba call, so
that a parse of n words makes n calls instead of n(n + 1)/2 rounds of them
(docs/performance.md, "A parse in n steps").

It computes what :class:`~fastdcyk.engine.modes.cleanup.numpy_parser.NumpyCleanupParser` does
cell by cell with ``readback="lstsq"`` or ``"cancel"``, to rounding (the sums of the readouts
in another order; tests/engine/test_columns.py compares the two): the detection of every
binary nonterminal (:class:`~fastdcyk.engine.core.splits.CandidateChart`'s rule layer), the
candidates written into P_left (and the residual table), the cell's readout, the Gram
matrix and the ridge solve (:func:`~fastdcyk.engine.core.readback.solve`), the certificate's
margin and bound (:class:`~fastdcyk.engine.core.certificate.CertificateBuilder`), the read's
subtraction when cancelling, and the chart's scores. A cell it cannot finish (more than
:data:`~fastdcyk.engine.core.readback.SMALL_SOLVE` candidates, whose Gram matrix numpy's BLAS
forms faster; a Cholesky factorisation that rounding defeats; a non-finite readout) it
leaves written but unread and returns: the caller ends it the Python way and calls again
for the rest of the column.
"""

from __future__ import annotations

import math
import types

import numpy as np
from numba import njit

from fastdcyk.engine.core.certificate import NEGLIGIBLE
from fastdcyk.engine.core.readback import RIDGE, _small_solve
from fastdcyk.engine.core.splits import _layer
from fastdcyk.hrr.kernels import ROW_BLOCK, outer_madd, row_dots

__all__ = [
    "DONE",
    "NON_FINITE_DETECTION",
    "NON_FINITE_READ",
    "UNREAD",
    "column",
    "read_word",
    "word",
]

#: What :func:`column` returns first: every cell done, or the cell where it stopped and why.
DONE, UNREAD, NON_FINITE_DETECTION, NON_FINITE_READ = 0, 1, 2, 3

_row_dots = row_dots.serial  # a readout alone: the sweeps' blocks, as row_dots sums
_outer_madd = outer_madd.serial

_SQRT2 = math.sqrt(2.0)


@njit(cache=True, nogil=True)
def _expit(z):  # pragma: no cover - compiled
    """1 / (1 + exp(-z)) without overflow."""
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


@njit(cache=True, nogil=True, fastmath={"reassoc"})
def _lexicon_scores(lex_spectra, parseval, q, d, beta, scores_c):  # pragma: no cover - compiled
    """The clean score of every terminal of the lexicon in a unary cell whose readout is q:
    sigma(tr([a]+ [j]+ [i]+ P_left) / d), the numpy parser's ``word_scores`` (its sums
    reassociated, in complex128)."""
    wq = parseval * q
    for c in range(lex_spectra.shape[0]):
        acc = 0j
        row = lex_spectra[c]
        for f in range(row.shape[0]):
            acc += row[f] * wq[f]
        scores_c[c] = _expit((acc.real / d - 0.5) * beta)


@njit(cache=True, nogil=True)
def _read_spectrum(a, spectra, rows, k, lex_spectra, terms, m, lv_t):  # pragma: no cover - compiled
    """lv_t = conj(-sum_X a_X X^) over a read's items (the k nonterminals ``rows[:k]``,
    then the m terminals ``terms[:m]``): its subtraction from the residual table, ready for
    the next write into the cell's column. Summed in complex128 row by row of the spectra
    (contiguous), then rounded to lv_t's precision."""
    s = np.zeros(lv_t.shape[0], np.complex128)
    for c in range(k):
        row, ac = spectra[rows[c]], a[c]
        for f in range(s.shape[0]):
            s[f] -= ac * row[f]
    for c in range(m):
        row, ac = lex_spectra[terms[c]], a[k + c]
        for f in range(s.shape[0]):
            s[f] -= ac * row[f]
    for f in range(s.shape[0]):
        lv_t[f] = np.conj(s[f])


@njit(cache=True, nogil=True)
def _bound(a, se, k, boundary):  # pragma: no cover - compiled
    """The smallest z = abs(a - boundary) / se and the sum of Phi(-z) over the first k
    amplitudes, with standard errors ``se[:k]``
    (:func:`~fastdcyk.engine.core.certificate.decision_bound`)."""
    margin, bound = np.inf, 0.0
    for c in range(k):
        z = abs(a[c] - boundary) / se[c]
        if math.isnan(z):  # 0 / 0: a read on the boundary with no error
            z = 0.0
        margin = min(margin, z)
        bound += 0.5 * math.erfc(z / _SQRT2)
    return margin, bound


@njit(cache=True, nogil=True)
def _inverse_diagonal(low, k, items, diag):  # pragma: no cover - compiled
    """diag[c] = ((L L^T)^-1)_cc for c < k, L = ``low`` (items x items, lower), column by
    column of L^-1 (L y = e_c, y in ``diag[items:]``)."""
    for c in range(k):
        diag[c] = 0.0
        for r in range(c, items):
            acc = 1.0 if r == c else 0.0
            for m in range(c, r):
                acc -= low[r, m] * diag[items + m]
            diag[items + r] = acc / low[r, r]
            diag[c] += diag[items + r] * diag[items + r]


@njit(cache=True, nogil=True, fastmath={"reassoc"})
def _items(
    spectra, vectors, rows, k, lex_spectra, lex_vectors, terms, m, q, parseval, x, basis, gram
):  # pragma: no cover - compiled
    """x and the Gram matrix of a cell's items: the k nonterminals ``rows[:k]`` of the
    tables, then the m terminals ``terms[:m]`` of the lexicon's; False where one is not
    finite."""
    h, d = spectra.shape[1], vectors.shape[1]
    for c in range(k + m):
        acc = 0j
        if c < k:
            for f in range(h):
                acc += spectra[rows[c], f] * (parseval[f] * q[f])
            for e in range(d):
                basis[c, e] = vectors[rows[c], e]
        else:
            for f in range(h):
                acc += lex_spectra[terms[c - k], f] * (parseval[f] * q[f])
            for e in range(d):
                basis[c, e] = lex_vectors[terms[c - k], e]
        x[c] = acc.real / d
    finite = True
    for r in range(k + m):
        finite = finite and math.isfinite(x[r])
        for c in range(r + 1):
            acc2 = 0.0
            for e in range(d):
                acc2 += basis[r, e] * basis[c, e]
            gram[r, c] = acc2
            gram[c, r] = acc2
            finite = finite and math.isfinite(acc2)
    return finite


@njit(cache=True, nogil=True)
def _certify(
    q, parseval, gram, x, a, k, items, d, low, diag, boundary
):  # pragma: no cover - compiled
    """A read's margin and bound (:meth:`~fastdcyk.engine.core.certificate.CertificateBuilder.add`):
    ``items`` regressors, the first k of them decisions; ``low`` the solve's factor."""
    norm2 = 0.0
    for f in range(q.shape[0]):
        norm2 += parseval[f] * (q[f].real ** 2 + q[f].imag ** 2)
    norm2 /= d
    ok = math.isfinite(norm2)
    ax, aga, trace = 0.0, 0.0, 0.0
    for r in range(items):
        ok = ok and math.isfinite(a[r])
        ax += a[r] * x[r]
        trace += gram[r, r]
        for c in range(items):
            aga += a[r] * gram[r, c] * a[c]
    if not ok:
        return 0.0, float(k)
    s2 = np.inf if items >= d else max(norm2 - 2.0 * ax + aga, 0.0) / (d - items)
    scale = max(trace / items, 1e-300)
    coarse = math.sqrt(s2 / (RIDGE * scale))
    for c in range(k):
        diag[c] = coarse
    margin, bound = _bound(a, diag, k, boundary)
    if bound > NEGLIGIBLE:  # the exact standard errors: s sqrt((G + ridge I)^-1_XX)
        if math.isfinite(s2):
            _inverse_diagonal(low, k, items, diag)
            for c in range(k):
                diag[c] = math.sqrt(s2 * diag[c])
        margin, bound = _bound(a, diag, k, boundary)
    return margin, bound


#: The readouts' partial sums: blocks of this many columns summed in the table's precision,
#: the blocks' sums in complex128, as :func:`~fastdcyk.hrr.kernels.row_dots` sums. A block
#: of constant length is what the compiler vectorises; each term widened to complex128 and
#: summed one by one ran the sweep 1.4 times slower (docs/performance.md, "The sweep in the
#: table's precision").
BLOCK = ROW_BLOCK

_ELEMENT = {"cache": True, "nogil": True, "fastmath": {"reassoc"}}


# The elements of a sweep, at column c of a row f of the tables: gr = G_j[f], lr and rr the
# rows of P_left and of the table the reads see, idx the spectrum of the cell's start index
# (its readout's term is x rr[c] with x = G_j[f, c] idx[c]); lw: the row's share of the
# cell's write (the conj of its summed spectrum), which lands on conj(x) (a cell writes
# where it reads); lt, ci_t: the previous cell's pending subtraction and the conj spectrum
# of that cell's start index.


@njit(**_ELEMENT)
def _write_read(c, gr, lr, rr, lw, lt, ci_t, idx):  # pragma: no cover - compiled
    """Not cancelling: the cell's write into P_left, then its readout's term."""
    x = gr[c] * idx[c]
    val = lr[c] + lw * np.conj(x)
    lr[c] = val
    return x * val


@njit(**_ELEMENT)
def _take_read(c, gr, lr, rr, lw, lt, ci_t, idx):  # pragma: no cover - compiled
    """Cancelling, nothing to write: the previous read's subtraction, the readout's term."""
    val = rr[c] + lt * np.conj(gr[c]) * ci_t[c]
    rr[c] = val
    return gr[c] * idx[c] * val


@njit(**_ELEMENT)
def _write_take_read(c, gr, lr, rr, lw, lt, ci_t, idx):  # pragma: no cover - compiled
    """Cancelling: the write into both tables with the previous read's subtraction."""
    x = gr[c] * idx[c]
    w = lw * np.conj(x)
    lr[c] += w
    val = rr[c] + w + lt * np.conj(gr[c]) * ci_t[c]
    rr[c] = val
    return x * val


@njit(**_ELEMENT)
def _write_both_read(c, gr, lr, rr, lw, lt, ci_t, idx):  # pragma: no cover - compiled
    """Cancelling, no subtraction pending: the write into both tables."""
    x = gr[c] * idx[c]
    w = lw * np.conj(x)
    lr[c] += w
    val = rr[c] + w
    rr[c] = val
    return x * val


def _sweep(left, table, g, lv_w, lv_t, ci_t, q, idx):  # pragma: no cover - compiled
    """The body of :func:`_sweeper`'s sweeps (``element`` is each one's own global)."""
    h, d = table.shape[0], table.shape[1]
    zero = np.zeros(1, table.dtype)[0]
    full = d // BLOCK
    for f in range(h):
        gr, lr, rr, lw, lt = g[f], left[f], table[f], lv_w[f], lv_t[f]
        acc = 0j
        for b in range(full):
            s = zero
            for c in range(b * BLOCK, b * BLOCK + BLOCK):
                s += element(c, gr, lr, rr, lw, lt, ci_t, idx)  # noqa: F821
            acc += s
        s = zero
        for c in range(full * BLOCK, d):
            s += element(c, gr, lr, rr, lw, lt, ci_t, idx)  # noqa: F821
        q[f] = acc + s


def _sweeper(element):
    """A compiled sweep over the tables' rows with ``element``:
    ``sweep(left, table, g, lv_w, lv_t, ci_t, q, idx)`` sets q[f] to the sum over columns c
    of ``element``'s terms on row f (which may update the tables in place), in the tables'
    precision by blocks of :data:`BLOCK`, the blocks' sums in complex128.

    Each sweep is :func:`_sweep`'s code with ``element`` among its globals, under its own
    name: Numba names its cache files by it, and keys them by the code and any closure
    (a closure over the element would hash differently in every process and miss the cache
    each time); a function passed as an argument would make the callers uncacheable. LLVM
    inlines the element (Numba's own ``inline="always"`` kept it from vectorising: 3.6
    times slower)."""
    name = "_sweep" + element.__name__
    sweep = types.FunctionType(_sweep.__code__, {**globals(), "element": element}, name)
    sweep.__qualname__ = name
    return njit(cache=True, nogil=True, fastmath={"reassoc"})(sweep)


_sweep_write_read = _sweeper(_write_read)
_sweep_take_read = _sweeper(_take_read)
_sweep_write_take_read = _sweeper(_write_take_read)
_sweep_write_both_read = _sweeper(_write_both_read)


@njit(cache=True, nogil=True)
def _pass(
    left, residual, cancel, g, write, lv_w, lv_t, ci_t, take, q, idx
):  # pragma: no cover - compiled
    """One pass over the tables for a cell: its write if any (``write``; ``lv_w`` the conj
    of the summed spectrum) into P_left and, cancelling, the residual table, with the
    previous cell's pending subtraction (``take``: ``lv_t``, ``ci_t``) in the same sweep;
    then the cell's readout q from the table the reads see (``idx`` its start index's
    spectrum). ``write_left`` and ``cell_readout`` of
    :mod:`fastdcyk.engine.backends.numpy.spectral` fused, so that G_j and the tables are read once;
    the arithmetic in the tables' precision, the readout's sums by blocks
    (:func:`_sweeper`)."""
    table = residual if cancel else left
    if not cancel and write:
        _sweep_write_read(left, table, g, lv_w, lv_t, ci_t, q, idx)
    elif write and take:
        _sweep_write_take_read(left, table, g, lv_w, lv_t, ci_t, q, idx)
    elif write:
        _sweep_write_both_read(left, table, g, lv_w, lv_t, ci_t, q, idx)
    elif cancel and take:
        _sweep_take_read(left, table, g, lv_w, lv_t, ci_t, q, idx)
    else:  # nothing to write: the readout alone
        _row_dots(g, table, idx, q)


@njit(cache=True, nogil=True)
def _finish(
    i,
    j,
    k,
    m,
    spectra,
    vectors,
    lex_spectra,
    lex_vectors,
    terms,
    chart,
    size,
    params,
    out,
    cancel,
    scratch,
):  # pragma: no cover - compiled
    """Read cell (i, j), written, its readout in ``q``: its k candidates (cand[:k]) and m
    terminals (``terms[:m]``) by least squares, its certificate, its place in the chart,
    and, cancelling, the subtraction of what was read made ready in ``lv_t`` (the conj of
    -sum_X a_X X^), for the next pass. Returns the status, the chart's new fill, and
    whether a subtraction is pending."""
    cand, q, x, gram, low, a, diag, basis, lv_t = (
        scratch[1], scratch[3], scratch[4], scratch[5], scratch[6], scratch[7], scratch[8],
        scratch[9], scratch[10],
    )  # fmt: skip
    start, count, rows, deltas = chart[0], chart[1], chart[2], chart[3]
    base = chart[13]
    parseval, beta, boundary = params[0], params[1], params[4]
    stats, scores, cert = out[0], out[1], out[2]
    d = vectors.shape[1]
    items = k + m
    if items > x.shape[0]:
        return UNREAD, size, False
    if not _items(
        spectra, vectors, cand, k, lex_spectra, lex_vectors, terms, m, q, parseval, x, basis, gram
    ):
        return NON_FINITE_READ, size, False
    if items and not _small_solve(
        gram[:items, :items], x[:items], RIDGE, 0, low[:items, :items], a[:items]
    ):
        return UNREAD, size, False
    if k:
        margin, bound = _certify(q, parseval, gram, x, a, k, items, d, low, diag, boundary)
        cert[0][i, j], cert[1][i, j] = margin, bound
    pending = cancel and items > 0
    if pending:  # what was read leaves the residual table (in the next pass)
        _read_spectrum(a, spectra, cand, k, lex_spectra, terms, m, lv_t)
    absent = _expit(-0.5 * beta)  # the score of an amplitude of 0: every non-candidate's
    for r in range(stats.shape[2]):
        stats[i, j, r] = 0.0
        scores[i, j, r] = absent
    for c in range(k):
        stats[i, j, cand[c]] = a[c]
        scores[i, j, cand[c]] = _expit((a[c] - 0.5) * beta)
    start[i, j], count[i, j] = size, k
    for c in range(k):
        rows[size + c] = cand[c]
        deltas[size + c] = _expit((a[c] - 0.5) * beta) - base
    return DONE, size + k, pending


@njit(cache=True, nogil=True)
def _detect(
    nb, node_rows, beta, level, prune, spectra, counts, scratch
):  # pragma: no cover - compiled
    """The candidates of a cell from its detections ``t[:nb]`` (their rows into cand[:k])
    and the conj of their summed gated spectrum into ``lv`` (the write's); the ledger's
    counts. Returns k and whether every detection was finite."""
    t, cand, lv = scratch[0], scratch[1], scratch[2]
    k = 0
    finite = True
    for r in range(nb):
        tr = t[r]
        if not math.isfinite(tr):
            finite = False
        if tr > level:  # the gate only where it can matter: most detections are below
            gate = _expit((tr - 0.5) * beta)
            if gate > prune:
                cand[k] = node_rows[r]
                t[k] = gate
                k += 1
    counts[0] += nb
    counts[1] += k
    counts[2] += nb - k
    s = np.zeros(lv.shape[0], np.complex128)  # summed row by row (contiguous)
    for c in range(k):
        row, tc = spectra[cand[c]], t[c]
        for f in range(s.shape[0]):
            s[f] += tc * row[f]
    for f in range(s.shape[0]):
        lv[f] = np.conj(s[f])
    return k, finite


@njit(cache=True, nogil=True)
def column(
    j,
    i_start,
    cancel,
    g_j,
    tables,
    lexicon,
    binary_rows,
    chart,
    size,
    params,
    out,
    scratch,
):  # pragma: no cover - compiled
    """The binary cells (i, j) of column j for i = ``i_start`` down to 0, in the cell order
    (module notes).

    ``tables`` are (P_left's spectrum, the residual table (P_left's when not cancelling), the index
    vectors' full spectra and their conjugates, the nonterminals' spectra and vectors), ``chart`` is
    :meth:`~fastdcyk.engine.core.splits.CandidateChart.kernel_arrays`, ``lexicon`` (spectra,
    vectors, rows) of the grammar's lexicon (unused here: a binary cell holds no terminal),
    ``params`` (Parseval weights, beta, candidate level, prune level, decision boundary), ``out``
    (the parser's statistics and clean scores, the certificate's (margins, bounds), the ledger's
    three counts), ``scratch`` the arrays of
    :meth:`~fastdcyk.engine.modes.cleanup.numpy_parser.NumpyCleanupParser.run_column`. Returns
    ``(status, i, k, size)``: :data:`DONE` (i = -1), or the cell where it stopped: :data:`UNREAD`
    (written, its k candidates' rows in ``cand[:k]`` of ``scratch``, to be read by the caller; every
    earlier read subtracted), :data:`NON_FINITE_DETECTION` or :data:`NON_FINITE_READ`; ``size`` the
    chart's new fill. The counts get the detections, updates and pruned updates.
    """
    t, lv, q, lv_t = scratch[0], scratch[2], scratch[3], scratch[10]
    left, residual, index_full, index_conj, spectra, vectors = tables
    beta, level, prune, counts = params[1], params[2], params[3], out[3]
    nb = binary_rows.shape[0]
    start, count, rows, deltas, dense = chart[0], chart[1], chart[2], chart[3], chart[4]
    lorder, lptr, rorder, rptr = chart[5], chart[6], chart[7], chart[8]
    rule_row, rule_right, weights, sums, base = (
        chart[9], chart[10], chart[11], chart[12], chart[13],
    )  # fmt: skip
    # np.int64(0), np.bool_(False): typed values, not literals (Numba compiles a callee
    # once more for each literal argument it sees, also while a loop's types settle)
    pending, ci_t = np.bool_(False), index_conj[0]
    for i in range(i_start, -1, -1):
        w = j - i - 1
        for r in range(nb):
            t[r] = sums[r] * (w * base * base)
        _layer(
            t, i, j, start, count, rows, deltas,
            lorder, lptr, rorder, rptr, rule_row, rule_right, weights, base, dense,
        )  # fmt: skip
        k, finite = _detect(nb, binary_rows, beta, level, prune, spectra, counts, scratch)
        if not finite:
            return NON_FINITE_DETECTION, i, k, size
        _pass(left, residual, cancel, g_j, k > 0, lv, lv_t, ci_t, pending, q, index_full[i])
        status, size, pending = _finish(
            i, j, k, np.int64(0), spectra, vectors, lexicon[0], lexicon[1], lexicon[2], chart, size,
            params, out, cancel, scratch,
        )  # fmt: skip
        ci_t = index_conj[i]
        if status != DONE:
            return status, i, k, size
    if pending:
        _outer_madd(residual, lv_t, g_j, ci_t, True)
    return DONE, -1, 0, size


@njit(cache=True, nogil=True)
def word(
    i,
    scores_c,
    read_given,
    cancel,
    g_j,
    tables,
    lexicon,
    unary,
    chart,
    size,
    params,
    out,
    scratch,
):  # pragma: no cover - compiled
    """Unary cell (i, i + 1): the word's clean scores over the lexicon (``scores_c``, read
    here from the table unless ``read_given``), the terminals read (those above the
    candidate level, into ``lexicon[2]``), the lexical rules' detections, the candidates'
    write and the cell's read over candidates and terminals. ``unary`` holds the unary
    nonterminals' rows and the lexical rules' parent positions and lexicon columns; the
    other arguments are :func:`column`'s. Returns as :func:`column`, with the terminals'
    count m in place of i."""
    t, lv, q, lv_t = scratch[0], scratch[2], scratch[3], scratch[10]
    left, residual, index_full, index_conj, spectra, vectors = tables
    unary_rows, unary_rule_row, unary_rule_column = unary
    parseval, beta, level, prune, counts = params[0], params[1], params[2], params[3], out[3]
    lex_spectra, lex_vectors, terms = lexicon
    if not read_given:
        table = residual if cancel else left
        _row_dots(g_j, table, index_full[i], q)
        _lexicon_scores(lex_spectra, parseval, q, vectors.shape[1], beta, scores_c)
    m = np.int64(0)
    for c in range(scores_c.shape[0]):
        if scores_c[c] > level:
            terms[m] = c
            m += 1
    nb = unary_rows.shape[0]
    for r in range(nb):
        t[r] = 0.0
    for u in range(unary_rule_row.shape[0]):
        t[unary_rule_row[u]] += scores_c[unary_rule_column[u]]
    k, finite = _detect(nb, unary_rows, beta, level, prune, spectra, counts, scratch)
    if not finite:
        return NON_FINITE_DETECTION, m, k, size
    _pass(
        left, residual, cancel, g_j, k > 0, lv, lv_t, index_conj[i], np.bool_(False), q,
        index_full[i],
    )  # fmt: skip
    status, size, pending = _finish(
        i, i + 1, k, m, spectra, vectors, lex_spectra, lex_vectors, terms, chart, size,
        params, out, cancel, scratch,
    )  # fmt: skip
    if pending:
        _outer_madd(residual, lv_t, g_j, index_conj[i], True)
    return status, m, k, size


@njit(cache=True, nogil=True)
def read_word(
    i,
    written,
    residual,
    g_j,
    index_full,
    index_conj,
    lexicon,
    parseval,
    beta,
    level,
    scores_c,
    scratch,
):  # pragma: no cover - compiled
    """Cancelling, before the first cell: word i + 1 read from the residual table (its clean
    scores over the lexicon into ``scores_c``), its terminals (those read above the
    candidate level, and those ``written`` for it) solved for by least squares and
    subtracted. Returns :data:`DONE`, :data:`NON_FINITE_READ`, or :data:`UNREAD` having
    changed nothing but ``scores_c`` (too many terminals, or a failed factorisation)."""
    q, x, gram, low, a, basis, lv_t = (
        scratch[3], scratch[4], scratch[5], scratch[6], scratch[7], scratch[9], scratch[10],
    )  # fmt: skip
    lex_spectra, lex_vectors, terms = lexicon
    _row_dots(g_j, residual, index_full[i], q)
    _lexicon_scores(lex_spectra, parseval, q, lex_vectors.shape[1], beta, scores_c)
    m = np.int64(0)
    for c in range(lex_spectra.shape[0]):
        if scores_c[c] > level or written[c]:
            terms[m] = c
            m += 1
    if m == 0:
        return DONE
    if m > x.shape[0]:
        return UNREAD
    if not _items(
        lex_spectra, lex_vectors, terms, np.int64(0), lex_spectra, lex_vectors, terms, m, q,
        parseval, x, basis, gram,
    ):  # fmt: skip
        return NON_FINITE_READ
    if not _small_solve(gram[:m, :m], x[:m], RIDGE, 0, low[:m, :m], a[:m]):
        return UNREAD
    _read_spectrum(a, lex_spectra, terms, np.int64(0), lex_spectra, terms, m, lv_t)
    _outer_madd(residual, lv_t, g_j, index_conj[i], True)
    return DONE

"""The D-CYK engine: the paper's unary and binary algorithms over two d x d accumulators.

The table P is kept as two dense matrices (docs/method.md, section 1),

.. math::

    P_{left} = \\sum_{(i,j,X)} [i]^- [j]^- [X]^- D_{ijX}, \\qquad
    P_{right} = \\sum_{(i,j,X)} [X]^+ [i]^+ [j]^+ D_{ijX},

and filled by the paper's Algorithms 2 (unary) and 3 (binary) with the two corrections of
docs/method.md, section 2 (binary rules encoded as [B]+ [C]-, span check [j]- [i]+). Every operator
is an implicit :class:`~fastdcyk.operators.Operator`; P_left and P_right are the only d x d
matrices that live through the parse, beside a few work buffers held by the codebook and
reused from one parse to the next.

Options (``variant="paper"`` is the faithful algorithm, ``variant="trace"`` the improved one):

- ``gate``: ``"entrywise"`` (the paper: P_A = sigma(M), masked to the diagonal in the binary
  step) or ``"trace"`` (P_A = sigma(tr(M) / d) I);
- ``decoder``: ``"entry"`` (entry (0, 0), the paper) or ``"trace"`` (tr / d);
- ``unary_mask``: mask the unary P_A to its diagonal as the binary step does;
- ``beta``, ``threshold``: sigma's slope and the decoder's threshold on sigma;
- ``prune``: an update whose P_A has no entry above ``prune`` in magnitude is skipped. Its
  default is the dtype's machine epsilon: such an update is below the accumulators'
  resolution and cannot change the result.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fastdcyk import _buffers as B
from fastdcyk import _kernels as K
from fastdcyk._blocks import block_bytes
from fastdcyk._buffers import g_cache_slots
from fastdcyk._rules import rule_tables
from fastdcyk.codebook import Codebook, _available_memory, _format_bytes
from fastdcyk.decode import (
    chart_from_statistics,
    decode_statistics,
    sigmoid,
    statistics_from_spectrum,
)
from fastdcyk.fft import get_engine
from fastdcyk.grammar import Grammar
from fastdcyk.operators import Operator
from fastdcyk.options import (
    DEFAULT_BETA,
    DEFAULT_THRESHOLD,
    ENCODINGS,
    GATES,
    ORDERS,
    VARIANTS,
    DCYKOptions,
    check_backend,
    check_dim,
    check_dtype,
    check_int,
    resolve,
)

__all__ = [
    "DEFAULT_BETA",
    "DEFAULT_THRESHOLD",
    "GATES",
    "ORDERS",
    "ENCODINGS",
    "VARIANTS",
    "DCYKOptions",
    "DCYKResult",
    "dcyk",
    "default_codebook",
    "estimate_memory",
]


@dataclass
class DCYKResult:
    """What :func:`dcyk` returns.

    Attributes
    ----------
    words : tuple of str
    grammar : Grammar
    codebook : Codebook
    options : DCYKOptions
    p_left, p_right : ndarray, (d, d)
        The accumulators, in the codebook's dtype.
    statistics : dict or None
        The decoder statistic of every (i, j, A) (None when ``decode=False``).
    chart : dict or None
        ``{(i, j): frozenset of nonterminals}`` for every 0 <= i < j <= n, as :func:`cyk`.
    counts : dict
        Detections, updates applied and updates pruned.
    timings : dict
        Seconds spent in the unary step, the binary step and the decoder.
    log : list of dict or None
        Every detection, when the parse ran with ``record=True``.
    """

    words: tuple[str, ...]
    grammar: Grammar
    codebook: Codebook
    options: DCYKOptions
    p_left: np.ndarray
    p_right: np.ndarray
    statistics: dict[tuple[int, int, str], float] | None
    chart: dict[tuple[int, int], frozenset[str]] | None
    counts: dict[str, int] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    log: list[dict[str, Any]] | None = None

    def chart_at(
        self, threshold: float | None = None, beta: float | None = None
    ) -> dict[tuple[int, int], frozenset[str]]:
        """The chart decoded at another threshold (and beta), from the kept statistics."""
        if self.statistics is None:
            raise ValueError("this parse was not decoded (decode=False): use fastdcyk.decode")
        return chart_from_statistics(
            self.statistics,
            len(self.words),
            beta=self.options.beta if beta is None else beta,
            threshold=self.options.threshold if threshold is None else threshold,
        )

    def __repr__(self) -> str:
        o = self.options
        return (
            f"DCYKResult({' '.join(self.words)!r}, d={self.codebook.d}, {self.codebook.dtype}, "
            f"variant={o.variant!r}, gate={o.gate!r}, decoder={o.decoder!r}, "
            f"order={o.order!r}, encoding={o.encoding!r}, beta={o.beta:g})"
        )


# -- memory ---------------------------------------------------------------------------------


def _work_buffers(
    gate: str, order: str, decoder: str, blockwise: bool, slots: int
) -> tuple[list[B.Buffer], list[B.Buffer]]:
    """The d x d arrays (:mod:`fastdcyk._buffers`) a parse holds: during it, and at its end.

    The entrywise-gate parser (:class:`_Parser`) keeps both accumulators as half spectra
    beside two real work buffers and a spectrum buffer, plus one spectrum for the shared
    product of a unary cell (``order="cell"``) or of the trace decoder; an engine that
    applies operator chains block by block (:mod:`fastdcyk._blocks`) needs no d x d buffer
    inside the chains, the others one real one. At the end both dense results exist while
    the work buffers are held. The trace-gate parser (:class:`_SpectralParser`) keeps both
    accumulators as 2-D half spectra, one real work buffer and ``slots`` G_k matrices; at
    its end one accumulator spectrum is still held while both dense results are formed.
    """
    if gate == "trace":
        during = [B.ZT, B.PR, B.W, *(B.g_matrix(k) for k in range(slots))]
        end = [B.PR, B.W, B.Y, B.P_LEFT, B.P_RIGHT]
        if decoder == "entry":  # decoding reads the dense P_left back as a spectrum
            end = [B.W, B.Y, B.P_LEFT, B.P_RIGHT, B.SHUFFLED, B.FL, B.SPECTRUM]
        return during, end
    held = [B.Y, B.W, B.SPECTRUM]
    if order == "cell" or decoder == "trace":
        held.append(B.YHAT)
    if not blockwise:
        held.append(B.APPLY_REAL)
    return [B.FL, B.FR, *held], [*held, B.P_LEFT, B.P_RIGHT]


def estimate_memory(
    d: int,
    dtype: Any = "float32",
    engine: Any = "auto",
    threads: int | None = None,
    *,
    variant: str = "paper",
    gate: str | None = None,
    order: str | None = None,
    decoder: str | None = None,
    n: int = 10,
) -> int:
    """Peak bytes of the d x d arrays one parse needs (accumulators, work buffers, results).

    Parameters
    ----------
    d : int
    dtype : {"float32", "float64"}
    engine, threads
        As for :class:`Codebook`: the FFT engine and its threads.
    variant, gate, order, decoder
        As for :func:`dcyk`: the options change which buffers a parse holds.
    n : int, default 10
        Sentence length (the trace gate keeps up to n + 1 index matrices, within
        :data:`G_CACHE_BYTES`).

    Returns
    -------
    int
        Bytes; the larger of the figure during the parse and at its end.
    """
    opt = resolve(variant, gate=gate, order=order, decoder=decoder)
    gate, order, decoder = opt.gate, opt.order, opt.decoder
    check_int("the sentence length n", n, 1)
    eng = get_engine(engine, threads)
    slots = g_cache_slots(d, dtype, n)
    during, end = _work_buffers(gate, order, decoder, eng.blockwise, slots)
    size = [sum(b.nbytes(d, dtype) for b in buffers) for buffers in (during, end)]
    if eng.blockwise and (gate != "trace" or decoder == "entry"):
        # the blocks of operator chains: in the parse, or in the decoder of a dense P_left
        size[1 if gate == "trace" else 0] += block_bytes(d, dtype, eng.threads)
    return max(size)


def _largest_fitting_d(
    memory: int, dtype: Any = "float32", engine: Any = "auto", *, upper: int = 1 << 40, **options
) -> int | None:
    """The largest d whose parse fits in ``memory`` bytes by :func:`estimate_memory`.

    Parameters
    ----------
    memory : int
        Bytes available.
    dtype, engine
        As for :func:`estimate_memory`.
    upper : int, optional
        Look no higher than this d.
    **options
        The other keywords of :func:`estimate_memory` (threads, variant, gate, order,
        decoder, n).

    Returns
    -------
    int or None
        None when not even d = 2 fits.
    """
    eng = get_engine(engine, options.pop("threads", None))
    if estimate_memory(2, dtype, eng, **options) > memory:
        return None
    lo, hi = 2, max(2, int(upper))
    if estimate_memory(hi, dtype, eng, **options) <= memory:
        return hi
    while hi - lo > 1:  # estimate(lo) fits, estimate(hi) does not
        mid = (lo + hi) // 2
        if estimate_memory(mid, dtype, eng, **options) <= memory:
            lo = mid
        else:
            hi = mid
    return lo


def _check_parse_memory(
    d: int, dtype: Any, engine: Any, opt: DCYKOptions, n: int, held: int = 0
) -> None:
    """Raise MemoryError, before anything of size d is allocated, when a parse cannot fit.

    ``held``: bytes of work buffers the codebook already holds (they are reused).
    """
    kw = {"gate": opt.gate, "order": opt.order, "decoder": opt.decoder, "n": n}
    need = estimate_memory(d, dtype, engine, **kw) - held
    avail = _available_memory()
    if avail is None or need <= avail:
        return
    dtype = np.dtype(dtype)
    # a tenth of the memory kept free for what the estimate leaves out; 3 significant digits
    fits = _largest_fitting_d(int(0.9 * avail) + held, dtype, engine, upper=d, **kw)
    hint = "use a smaller d"
    if fits is not None:
        step = 10 ** max(0, len(str(fits)) - 3)
        fits = max(2, fits - fits % step)
        hint += f" (at most about d = {fits} fits in the memory available now)"
    if dtype == np.float64:
        hint = "use dtype='float32' or " + hint[4:]
    raise MemoryError(
        f"D-CYK at d = {d} in {dtype} needs about {_format_bytes(need)}"
        f"{' more' if held else ''} for its accumulators and work buffers, but only "
        f"{_format_bytes(avail)} of memory is available: {hint}. (From Python, "
        "dcyk(..., check_memory=False) tries anyway.)"
    )


def _check_memory(cb: Codebook, opt: DCYKOptions, n: int) -> None:
    _check_parse_memory(cb.d, cb.dtype, cb.engine, opt, n, held=cb.buffer_bytes())


# -- input checks ---------------------------------------------------------------------------


def _words(grammar: Grammar, words: str | Sequence[str]) -> tuple[str, ...]:
    ws = tuple(words.split()) if isinstance(words, str) else tuple(words)
    if not ws:
        raise ValueError("empty sentence: D-CYK needs at least one word")
    for pos, w in enumerate(ws):
        if not isinstance(w, str):
            raise TypeError(f"word {pos} is {w!r}, not a str")
    ws = grammar.normalize_words(ws)  # terminals are kept in Unicode NFC
    known = set(grammar.terminals)
    for pos, w in enumerate(ws):
        if w not in known:
            some = ", ".join(repr(t) for t in list(grammar.terminals)[:12])
            nfc = "" if w.isascii() else " (words and terminals compared in Unicode NFC)"
            raise ValueError(
                f"word {w!r} at position {pos} is not a terminal of the grammar{nfc}; "
                f"its terminals are {some}{' ...' if len(known) > 12 else ''}"
            )
    return ws


def default_codebook(
    grammar: Grammar, d: int, seed: int = 0, dtype: Any = "float32", *, unitary: bool, **kwargs
) -> Codebook:
    """The codebook :func:`dcyk` builds when given none.

    Unitary: :meth:`Codebook.for_grammar` (the grammar's symbols shifted, span indices
    shifted, zero-mean symbol vectors); otherwise Gaussian vectors, as in the paper.
    ``kwargs`` go to :class:`Codebook` (``engine``, ``threads``).
    """
    if unitary:
        return Codebook.for_grammar(grammar, int(d), seed=seed, dtype=dtype, **kwargs)
    return Codebook(int(d), seed=seed, dtype=dtype, unitary=False, **kwargs)


def _resolve_codebook(
    codebook: Codebook | None,
    d: int | None,
    seed: int,
    dtype: Any,
    unitary: bool,
    engine: Any,
    grammar: Grammar,
    before_build: Any = None,
) -> Codebook:
    """The codebook of a parse: ``codebook`` checked against ``d`` and ``dtype``, or one
    built here (:func:`default_codebook`). ``before_build(d, dtype, engine)`` runs before
    a codebook is built (the memory check), with the FFT engine it will use."""
    if codebook is None:
        if d is None:
            d = 1024
        d = check_dim(d)
        dtype = check_dtype(dtype)
        engine = get_engine(engine)
        if before_build is not None:
            before_build(int(d), dtype, engine)
        return default_codebook(grammar, int(d), seed, dtype, unitary=unitary, engine=engine)
    if not isinstance(codebook, Codebook):
        raise TypeError(f"codebook must be a fastdcyk.Codebook, got {type(codebook).__name__}")
    if d is not None and d != codebook.d:
        raise ValueError(
            f"d = {d} disagrees with the codebook's dimension {codebook.d}: "
            "leave d out when passing a codebook"
        )
    if dtype is not None and np.dtype(dtype) != codebook.dtype:
        raise ValueError(
            f"dtype {np.dtype(dtype)} disagrees with the codebook's dtype {codebook.dtype}: "
            "leave dtype out when passing a codebook"
        )
    return codebook


# -- the parser -----------------------------------------------------------------------------


class _ParserBase:
    """What both parsers share: counts, the detection log, the finiteness check."""

    def __init__(self, grammar: Grammar, words: tuple[str, ...], cb: Codebook, opt: DCYKOptions):
        self.g, self.words, self.cb, self.opt = grammar, words, cb, opt
        self.d = cb.d
        self.t = rule_tables(cb, grammar, opt.encoding)
        self.counts = {"detections": 0, "updates": 0, "pruned": 0}
        self.log: list[dict[str, Any]] | None = None
        self._weights = _parseval_weights(cb.d)

    def _finite(self, value: Any, where: str) -> None:
        if not np.all(np.isfinite(value)):
            raise FloatingPointError(
                f"non-finite values appeared in D-CYK's accumulators ({where}): the codebook's "
                "vectors or beta are too large for this dtype; use float64, smaller vectors "
                "or a smaller beta"
            )

    def _record(self, i: int, j: int, a: str, diag_mean: float, peak: float, applied: bool):
        if self.log is not None:
            self.log.append(
                {
                    "step": "unary" if j == i + 1 else "binary",
                    "i": i,
                    "j": j,
                    "A": a,
                    "p_diag_mean": diag_mean,
                    "p_max": peak,
                    "applied": applied,
                }
            )

    def _kept(self, i: int, j: int, rows: np.ndarray, means, peaks) -> np.ndarray:
        """Which updates of a cell clear the prune level; logs and counts every one."""
        keep = np.asarray(peaks) > self.opt.prune
        if self.log is not None:
            for row, m, pk, k in zip(rows, means, peaks, keep, strict=True):
                self._record(i, j, self.t.nonterminals[row], float(m), float(pk), bool(k))
        n_kept = int(np.count_nonzero(keep))
        self.counts["updates"] += n_kept
        self.counts["pruned"] += len(rows) - n_kept
        return keep


class _Parser(_ParserBase):
    """One parse: the accumulators (kept as spectra), the rule tables, the work buffers.

    Three choices make the parse cheap; none changes what is computed.

    1. Spectra. Every operator D-CYK applies to P_left from the left ends in ``C Phi``
       ([i]+, [j]- [i]+, the decoder's [A]+ [j]+ [i]+), and P_right is only read through
       diag(Y R P_right). So the accumulators are kept as spectra: each use of P_left starts
       from its spectrum (no gather, no forward FFT), each update ends by adding a spectrum
       (no inverse FFT, no gather, no add pass), and diag(Y R P_right) is a Parseval sum over
       spectra (no FFT). P_left and P_right are formed once, at the end.
    2. Transposes. FFTs along the contiguous axis cost about 40% less than along axis 0, so
       the parser works with P_left^T and P_right^T and applies every operator's transpose
       from the right: ``(Op X)^T = X^T Op^T``. It keeps

           FL = rfft(P_left^T Phi^T, axis=1) = rfft((Phi P_left)^T, axis=1),
           FR = rfft(P_right^T, axis=1),

       and every d x d work matrix below is the transpose of the one in the paper's algebra
       (a trailing ``t`` in the comments).
    3. Cells (``order="cell"``). The detections of a cell share everything but their rule
       operator, so the cell's shared matrix is computed once and every nonterminal is read
       from it with a matrix product over the rule tables (:mod:`fastdcyk._rules`); the
       updates of a cell differ only in their nonterminal's circulant, so they are summed
       first and the shared chain is applied once (docs/method.md, section 4).
    """

    def __init__(self, grammar: Grammar, words: tuple[str, ...], cb: Codebook, opt: DCYKOptions):
        super().__init__(grammar, words, cb, opt)
        self.fl = B.FL.new(cb)
        self.fr = B.FR.new(cb)
        self.y = B.Y.get(cb)
        self.w = B.W.get(cb)
        # A product of P_left (or a spectrum of it) is stale once the accumulators have been
        # updated since it was computed.
        self.version = 0
        self._ident = cb.permutation_index(0)

    def spec(self, kind: str, s: Any) -> np.ndarray:
        return self.cb.spectrum(kind, s)

    def _circ_phi(self, spec: np.ndarray) -> Operator:
        """The operator C Phi of a spectrum (e.g. [A]+ for A's spectrum)."""
        return Operator(self.cb, (np.asarray(spec).astype(self.cb.cdtype), 1))

    # -- the accumulators as spectra -----------------------------------------------------------

    def left_product_t(self, spec: np.ndarray, out: np.ndarray, power: int) -> np.ndarray:
        """out = (Phi^power C(spec) Phi P_left)^T = irfft(FL * spec, axis=1) Phi^-power."""
        cb = self.cb
        s = cb.spectrum_buffer(self.fl.shape)
        K.spec_mul_into_axis1(self.fl, spec, s)
        if power == 0:
            return cb.engine.irfft(s, self.d, 1, out=out)
        tmp = self.w if out is not self.w else self.y
        cb.engine.irfft(s, self.d, 1, out=tmp)
        return K.gather_cols(tmp, cb.permutation_index(power), out)

    def accumulate_t(self, acc: np.ndarray, spec: np.ndarray, xt: np.ndarray) -> None:
        """Add C(spec) x to an accumulator: acc += rfft(x^T, axis=1) * spec."""
        s = self.cb.spectrum_buffer(acc.shape)
        self.cb.engine.rfft(xt, 1, out=s)
        K.spec_madd_axis1(acc, s, spec)

    def initialise(self) -> None:
        """P_left = sum_i [i-1]- [i]- [a_i]- (P_right stays 0)."""
        for i, a in enumerate(self.words, start=1):
            # Phi [i-1]- [i]- [a]- = C_{i-1}^T ([i]- [a]-); its transpose is ([i]- [a]-)^T C_{i-1}
            inner = self.cb.minus("index", i) @ self.cb.minus("terminal", a)
            inner.T.diag_times(np.ones(self.d, self.cb.dtype), out=self.w)
            self.accumulate_t(self.fl, np.conj(self.spec("index", i - 1)), self.w)
        self.version += 1

    def update(
        self,
        i: int,
        j: int,
        kind: str,
        value: np.ndarray,
        work: np.ndarray,
        spec: np.ndarray,
        right: np.ndarray,
    ) -> None:
        """P_left += [i]- [j]- [A]- P_A and P_right += [A']+ [i]+ [j]+ P_A for one A.

        ``spec`` and ``right`` are the spectra of A's circulant in P_left and in P_right
        (the same but with ``encoding="roles"``). ``kind`` says what P_A is: "diag"
        (diag(value)) or "full" (``value`` is P_A^T, a d x d matrix other than ``work``).
        ``work`` is a free d x d buffer.
        """
        cb = self.cb
        # Phi [i]- [j]- [A]- = C_i^T ([j]- [A]-) and [A]+ [i]+ [j]+ = C_A (Phi [i]+ [j]+);
        # (inner P_A)^T = P_A^T inner^T.
        parts = (
            (
                self.fl,
                np.conj(self.spec("index", i)),
                cb.minus("index", j) @ self._circ_phi(spec).T,
            ),
            (self.fr, right, cb.phi() @ cb.plus("index", i) @ cb.plus("index", j)),
        )
        for acc, acc_spec, inner in parts:
            if kind == "diag":
                inner.T.diag_times(value, out=work)
            else:
                inner.T.apply(value, side="right", out=work)
            self.accumulate_t(acc, acc_spec, work)
        self.version += 1

    def update_one(self, i: int, j: int, row: int, kind: str, value: np.ndarray, work: np.ndarray):
        """The update of one nonterminal (a row of the rule tables), unless pruned."""
        diagonal = value if kind == "diag" else np.diagonal(value)
        peak = float(np.max(np.abs(value)))
        if self._kept(i, j, [row], [np.mean(diagonal)], [peak])[0]:
            self.update(i, j, kind, value, work, self.t.spectra[row], self.t.right_spectra[row])

    def update_cell(self, i: int, j: int, rows: np.ndarray, gates: np.ndarray) -> None:
        """Every diagonal-gated update of a cell at once.

        ``gates`` is (len(rows), d): P_A = diag(gates[k]). In the transposed layout the
        P_left part is (sum_A diag(p_A) C_A) Phi C_j Phi: row r of the sum is
        sum_A p_A[r] v_A laid out as a circulant's row (one matrix product, then
        :func:`~fastdcyk._kernels.rows_circulant`), and the chain C_j Phi is applied once.
        The P_right part is rfft(W^T) (.) G with G[r, f] = sum_A p_A[r] spec_A[f] and
        W = Phi [i]+ [j]+: one more matrix product.
        """
        cb, d, t = self.cb, self.d, self.t
        peaks = np.max(np.abs(gates), axis=1)
        keep = self._kept(i, j, rows, np.mean(gates, axis=1), peaks)
        if not keep.any():
            return
        p = gates[keep]  # (k, d), codebook dtype
        kept = rows[keep]
        vectors = t.vectors[kept]
        step = _row_block(d, len(kept))
        shift = cb.permutation_index(-1)
        for r0 in range(0, d, step):
            r1 = min(d, r0 + step)
            b = (p[:, r0:r1].T @ vectors).astype(cb.dtype, copy=False)
            K.rows_circulant(b, self._ident[r0:r1], shift, self.w[r0:r1])
        (cb.circulant(spectrum=self.spec("index", j)) @ cb.phi()).apply(
            self.w, side="right", out=self.w
        )
        self.accumulate_t(self.fl, np.conj(self.spec("index", i)), self.w)
        inner = cb.phi() @ cb.plus("index", i) @ cb.plus("index", j)
        inner.T.diag_times(np.ones(d, cb.dtype), out=self.w)
        s = cb.spectrum_buffer(self.fr.shape)
        cb.engine.rfft(self.w, 1, out=s)
        spectra = t.right_spectra[kept]
        for r0 in range(0, d, step):
            r1 = min(d, r0 + step)
            self.fr[r0:r1] += s[r0:r1] * (p[:, r0:r1].T @ spectra).astype(cb.cdtype, copy=False)
        self.version += 1

    # -- Algorithm 2 -------------------------------------------------------------------------

    def unary_y(self, i: int) -> None:
        """self.y = Yt with Y = [i]+ [i-1]+ P_left = C_i Phi (C_{i-1} Phi P_left)."""
        self.left_product_t(self.spec("index", i - 1), self.w, 0)
        self.cb.plus("index", i).T.apply(self.w, side="right", out=self.y)

    def unary(self, on_cell: Any = None) -> None:
        for i in range(1, len(self.words) + 1):
            if len(self.t.unary):
                if self.opt.order == "cell":
                    self.unary_cell(i)
                else:
                    self.unary_sequential(i)
            if on_cell is not None:
                on_cell()

    def _unary_gate(self, i: int, row: int) -> None:
        """P_A from Mt = (R_u^A Y)^T in self.w, and its update (self.y is free)."""
        opt = self.opt
        where = f"unary detection of {self.t.nonterminals[row]} at position {i}"
        if opt.unary_mask:
            m = np.diagonal(self.w).astype(np.float64)
            self._finite(m, where)
            p = sigmoid(m, opt.beta).astype(self.cb.dtype)
            self.update_one(i - 1, i, row, "diag", p, self.y)
        else:
            self._finite(self.w.sum(dtype=np.float64), where)
            K.sigmoid_numpy(self.w, opt.beta, 0.5)  # P_A^T = sigma(Mt)
            self.update_one(i - 1, i, row, "full", self.w, self.y)

    def unary_sequential(self, i: int) -> None:
        """Cell (i - 1, i) in the paper's order: each A reads the updates of those before it."""
        t = self.t
        y_version = -1
        for k, row in enumerate(t.unary):
            self.counts["detections"] += 1
            if y_version != self.version:
                self.unary_y(i)
                y_version = self.version
            self._circ_phi(t.unary_spectra[k]).T.apply(self.y, side="right", out=self.w)
            self._unary_gate(i, row)

    def unary_cell(self, i: int) -> None:
        """Cell (i - 1, i), every detection reading the table as it was before the cell.

        Mt_A = (R_u^A Y)^T = (Yt Phi^T) C_A^T: one forward FFT of Yt Phi^T serves every A,
        then one inverse FFT each. No detection reads an update, so each update is applied
        as soon as its P_A is known.
        """
        cb, d, t = self.cb, self.d, self.t
        self.counts["detections"] += len(t.unary)
        self.unary_y(i)
        K.gather_cols(self.y, cb.perm, self.w)  # Yt Phi^T
        yhat = B.YHAT.get(cb)
        cb.engine.rfft(self.w, 1, out=yhat)
        s = cb.spectrum_buffer(self.fl.shape)
        for k, row in enumerate(t.unary):
            K.spec_mul_into_axis1(yhat, t.unary_spectra[k].astype(cb.cdtype), s)
            cb.engine.irfft(s, d, 1, out=self.w)  # Mt
            self._unary_gate(i, row)

    # -- Algorithm 3 -------------------------------------------------------------------------

    def binary_y(self, i: int, j: int) -> np.ndarray:
        """Yt with Y = [j]- [i]+ P_left (one circulant on FL), then the rows of Y's spectra."""
        cb, d = self.cb, self.d
        check = np.conj(self.spec("index", j)) * self.spec("index", i)
        self.left_product_t(check, self.y, -1)  # Yt
        yt_hat = cb.spectrum_buffer((d // 2 + 1, d))
        cb.engine.rfft(self.y, 0, out=yt_hat)  # rows of Y, for Parseval
        return yt_hat

    def binary(self, on_cell: Any = None) -> None:
        n = len(self.words)
        for j in range(2, n + 1):
            for i in range(j - 2, -1, -1):
                if len(self.t.binary):
                    if self.opt.order == "cell":
                        self.binary_cell(i, j)
                    else:
                        self.binary_sequential(i, j)
                if on_cell is not None:
                    on_cell()

    def binary_sequential(self, i: int, j: int) -> None:
        """Cell (i, j) in the paper's order: each A reads the updates of those before it."""
        opt, cb, d, t = self.opt, self.cb, self.d, self.t
        diag = np.empty(d, np.float64)
        y_version = -1
        for k, row in enumerate(t.binary):
            self.counts["detections"] += 1
            if y_version != self.version:
                yt_hat = self.binary_y(i, j)
                y_version = self.version
            # diag(Y R P_right)[r] = (1/d) sum_f w_f Re(Yhat[r, f] conj(V_R[f])
            # conj(FR[r, f])), Yhat[r, f] = rfft(Yt, axis=0)[f, r]: no FFT, no d x d product.
            coef = (self._weights * t.binary_spectra[k] / d).astype(cb.cdtype)
            K.spectral_diag(self.fr, coef, yt_hat, diag)
            self._finite(diag, f"binary detection of {t.nonterminals[row]} at ({i}, {j})")
            self.update_one(i, j, row, "diag", sigmoid(diag, opt.beta).astype(cb.dtype), self.w)

    def binary_cell(self, i: int, j: int) -> None:
        """Cell (i, j), every detection reading the table as it was before the cell.

        diag(Y R_A P_right)[r] = Re sum_f H[r, f] coef_A[f] for every A at once, with
        H[r, f] = FR[r, f] conj(Yhat[f, r]) and coef_A = w (.) spec(R_A) / d: one complex
        matrix product per block of rows (no d x d buffer).
        """
        opt, cb, d, t = self.opt, self.cb, self.d, self.t
        self.counts["detections"] += len(t.binary)
        yt_hat = self.binary_y(i, j)
        coefs = (t.binary_spectra * (self._weights / d)).astype(cb.cdtype)
        diags = np.empty((len(t.binary), d), np.float64)
        step = _row_block(d, len(t.binary))
        for r0 in range(0, d, step):
            r1 = min(d, r0 + step)
            h_blk = self.fr[r0:r1] * np.conj(yt_hat[:, r0:r1].T)
            diags[:, r0:r1] = (coefs @ h_blk.T).real
        self._finite(diags, f"binary detections at ({i}, {j})")
        self.update_cell(i, j, t.binary, sigmoid(diags, opt.beta).astype(cb.dtype))

    # -- the dense accumulators --------------------------------------------------------------

    def dense(self) -> tuple[np.ndarray, np.ndarray]:
        """P_left = (irfft(FL, axis=1) Phi)^T and P_right = irfft(FR, axis=1)^T, new arrays.

        The spectra are consumed (an inverse FFT may overwrite its input) and released.
        """
        cb, d = self.cb, self.d
        fl, self.fl = self.fl, None
        cb.engine.irfft(fl, d, 1, out=self.y)
        del fl  # its memory goes back before the dense matrices are allocated
        K.gather_cols(self.y, cb.permutation_index(-1), self.w)
        p_left = B.P_LEFT.new(cb, zero=False)
        p_left[...] = self.w.T
        fr, self.fr = self.fr, None
        cb.engine.irfft(fr, d, 1, out=self.w)
        del fr
        p_right = B.P_RIGHT.new(cb, zero=False)
        p_right[...] = self.w.T
        return p_left, p_right


class _SpectralParser(_ParserBase):
    """A parse with the trace gate: both accumulators as 2-D spectra, every cell in O(d^2).

    With the trace gate every P_A is a scalar times I, so every update is an operator, and
    in the 2-D spectral domain (M~ = F M F^-1, F the DFT matrix, so that F C_v F^-1 =
    diag(fft(v))) an operator Phi^a C Phi^b is diagonal up to the fixed matrix
    G_k = (Phi C_k Phi)~ of a span index k. The parser keeps

        ZT = rows f <= d/2 of (Phi P_left)~^T,    PR = rows f <= d/2 of (P_right Phi^T)~,

    (complex, (d // 2 + 1, d) each: the same memory as the half spectra of the other
    parser), and then, with hats for full spectra of vectors (docs/method.md, section 4):

    - an update of cell (i, j) with summed spectrum S adds diag(conj S) conj(G_j)
      diag(conj i) to ZT and diag(S) G_i diag(j) to PR (element-wise, no FFT);
    - the binary detection tr([j]- [i]+ P_left R P_right) is sum_f R[f] q[f] with
      q[f] = sum_g conj(j[g]) i[g] ZT[f, g] PR[f, g];
    - the unary detection tr(R_u Phi [i]+ [i-1]+ P_left) and the trace decoder's
      tr([A]+ [j]+ [i]+ P_left) are sum_f R[f] q[f] with q[f] = sum_g G_j[f, g] i[g] ZT[f, g].

    Each G_k costs one forward real FFT and one complex FFT of a d x d matrix; they are
    kept in a cache of at most :data:`G_CACHE_BYTES` (at least two).
    """

    def __init__(self, grammar: Grammar, words: tuple[str, ...], cb: Codebook, opt: DCYKOptions):
        super().__init__(grammar, words, cb, opt)
        d = cb.d
        h = d // 2 + 1
        self.zt = B.ZT.new(cb)
        self.pr = B.PR.new(cb)
        self.w = B.W.get(cb)
        self._q = np.empty(h, np.complex128)
        self._full: dict[tuple[str, Any], np.ndarray] = {}
        self._g: OrderedDict[int, np.ndarray] = OrderedDict()
        self._slots = g_cache_slots(d, cb.dtype, len(words))

    def full(self, kind: str, sym: Any) -> np.ndarray:
        """fft of a symbol's vector, all d frequencies, in the codebook's complex dtype."""
        key = (kind, sym)
        f = self._full.get(key)
        if f is None:
            v = self.cb.vector(kind, sym).astype(np.float64)
            f = np.fft.fft(v).astype(self.cb.cdtype)
            self._full[key] = f
        return f

    def gmat(self, k: int) -> np.ndarray:
        """G_k = rows f <= d/2 of (Phi C_k Phi)~, from the cache or computed."""
        g = self._g.get(k)
        if g is not None:
            self._g.move_to_end(k)
            return g
        cb, d = self.cb, self.d
        while len(self._g) >= self._slots:
            self._g.popitem(last=False)
        # (Phi C_k Phi)[r, c] = v_k[(perm[r] - inv[c]) mod d]
        v = cb.vector("index", k)
        K.circulant_times_diag(v, np.ones(d, cb.dtype), cb.perm, cb.permutation_index(-1), self.w)
        g = cb.engine.rfft(self.w, 0)
        cb.engine.cfft(g, 1, forward=False)
        self._g[k] = g
        return g

    def _trace(self, spectra: np.ndarray, q: np.ndarray) -> np.ndarray:
        """(1/d) sum over all d frequencies of R[f] q[f], for every row R of ``spectra``."""
        return (spectra @ (self._weights * q)).real / self.d

    def _q_lift(self, j: int, i: int) -> np.ndarray:
        """q of tr(C Phi C_j Phi C_i Phi P_left): the unary detection and the decoder."""
        return K.row_dots(self.gmat(j), self.zt, self.full("index", i), self._q)

    def _q_binary(self, i: int, j: int) -> np.ndarray:
        """q of tr([j]- [i]+ P_left C P_right): the binary detection."""
        dg = np.conj(self.full("index", j)) * self.full("index", i)
        return K.row_dots(self.zt, self.pr, dg, self._q)

    def update(self, i: int, j: int, gates: np.ndarray, rows: np.ndarray) -> None:
        """sum_A g_A [i]- [j]- [A]- into P_left and sum_A g_A [A']+ [i]+ [j]+ into P_right.

        Both are one operator: C_S^T with S^ = sum_A g_A A^ (and A'^ for P_right).
        """
        cdt = self.cb.cdtype
        left = (gates @ self.t.spectra[rows].astype(np.complex128)).astype(cdt)
        right = (gates @ self.t.right_spectra[rows].astype(np.complex128)).astype(cdt)
        K.outer_madd(self.zt, np.conj(left), self.gmat(j), np.conj(self.full("index", i)), True)
        K.outer_madd(self.pr, right, self.gmat(i), self.full("index", j), False)

    def initialise(self) -> None:
        """P_left = sum_i [i-1]- [i]- [a_i]- (P_right stays 0)."""
        for i, a in enumerate(self.words, start=1):
            s = np.conj(self.cb.spectrum("terminal", a))
            K.outer_madd(self.zt, s, self.gmat(i), np.conj(self.full("index", i - 1)), True)

    def _cell(self, i: int, j: int, rows: np.ndarray, spectra: np.ndarray, q_of) -> None:
        """Detect and update the nonterminals ``rows`` (rule spectra ``spectra``) in (i, j)."""
        opt = self.opt
        where = f"detections in cell ({i}, {j})"
        if opt.order == "cell":
            # Every gate from the table before the cell; the updates summed: sum_A g_A
            # [i]- [j]- [A]- is one update with spectrum sum_A g_A spec(A).
            self.counts["detections"] += len(rows)
            tvals = self._trace(spectra, q_of())
            self._finite(tvals, where)
            gates = sigmoid(tvals, opt.beta)
            keep = self._kept(i, j, rows, gates, gates)
            if keep.any():
                self.update(i, j, gates[keep], rows[keep])
            return
        q = None  # read again only after an update: a pruned one changes nothing
        for k in range(len(rows)):
            self.counts["detections"] += 1
            if q is None:
                q = q_of()
            tval = self._trace(spectra[k : k + 1], q)
            self._finite(tval, where)
            gate = sigmoid(tval, opt.beta)
            if self._kept(i, j, rows[k : k + 1], gate, gate)[0]:
                self.update(i, j, gate, rows[k : k + 1])
                q = None

    def unary(self, on_cell: Any = None) -> None:
        t = self.t
        for i in range(1, len(self.words) + 1):
            if len(t.unary):
                self._cell(i - 1, i, t.unary, t.unary_spectra, lambda i=i: self._q_lift(i, i - 1))
            if on_cell is not None:
                on_cell()

    def binary(self, on_cell: Any = None) -> None:
        t, n = self.t, len(self.words)
        for j in range(2, n + 1):
            for i in range(j - 2, -1, -1):
                if len(t.binary):
                    q_of = lambda i=i, j=j: self._q_binary(i, j)  # noqa: E731
                    self._cell(i, j, t.binary, t.binary_spectra, q_of)
                if on_cell is not None:
                    on_cell()

    def statistics(self) -> dict[tuple[int, int, str], float]:
        """The trace decoder's statistic of every triple: tr([A]+ [j]+ [i]+ P_left) / d."""
        n, t = len(self.words), self.t
        stats: dict[tuple[int, int, str], float] = {}
        for j in range(1, n + 1):
            for i in range(j):
                values = self._trace(t.spectra, self._q_lift(j, i))
                stats.update(zip([(i, j, a) for a in t.nonterminals], values.tolist(), strict=True))
        return stats

    def dense(self) -> tuple[np.ndarray, np.ndarray]:
        """P_left and P_right as new d x d arrays; the spectra and G cache are released."""
        cb, d = self.cb, self.d
        self._g.clear()
        # rfft(Z, axis=1)^T = fft(conj(ZT), axis=1); Z^T = irfft of it along axis 0;
        # P_left^T = Z^T Phi.
        zt, self.zt = self.zt, None
        np.conjugate(zt, out=zt)
        cb.engine.cfft(zt, 1, forward=True)
        cb.engine.irfft(zt, d, 0, out=self.w)
        del zt
        y = B.Y.get(cb)
        K.gather_cols(self.w, cb.permutation_index(-1), y)
        p_left = B.P_LEFT.new(cb, zero=False)
        p_left[...] = y.T
        # rfft(P', axis=0) = fft(PR, axis=1); P_right = P' Phi.
        pr, self.pr = self.pr, None
        cb.engine.cfft(pr, 1, forward=True)
        cb.engine.irfft(pr, d, 0, out=self.w)
        del pr
        p_right = K.gather_cols(self.w, cb.permutation_index(-1), B.P_RIGHT.new(cb, zero=False))
        return p_left, p_right


def _row_block(d: int, k: int) -> int:
    """Rows per block for products with k rule rows: about 2 MiB of temporaries."""
    return max(8, min(d, (1 << 21) // (16 * max(d // 2 + 1, k))))


def _parseval_weights(d: int) -> np.ndarray:
    """w_f with sum_k a_k b_k = (1/d) sum_f w_f Re(A_f conj(B_f)) over the rfft half-spectrum."""
    w = np.full(d // 2 + 1, 2.0)
    w[0] = 1.0
    if d % 2 == 0:
        w[-1] = 1.0
    return w


def _cnf_grammar(grammar: Grammar | str) -> Grammar:
    """``grammar`` (or the built-in or file it names), checked to be a CNF Grammar."""
    if isinstance(grammar, str):
        grammar = Grammar.load(grammar)
    if not isinstance(grammar, Grammar):
        raise TypeError(f"grammar must be a fastdcyk.Grammar, got {type(grammar).__name__}")
    if not grammar.is_cnf:
        raise ValueError("D-CYK needs a grammar in Chomsky normal form: use grammar.to_cnf()")
    return grammar


def _prepare(
    grammar: Grammar | str,
    sentences: Sequence[str | Sequence[str]],
    codebook: Codebook | None,
    *,
    d: int | None,
    seed: int,
    dtype: Any,
    unitary: bool | None,
    engine: Any,
    check_memory: bool,
    backend: str,
    device: Any,
    options: dict[str, Any],
) -> tuple[Grammar, list[tuple[str, ...]], DCYKOptions, Codebook]:
    """What :func:`dcyk` and :func:`fastdcyk.batch.dcyk_batch` check before parsing:
    (grammar, the sentences' words, the resolved options, the codebook). Everything is
    checked before the codebook is built (and the memory before anything of size d)."""
    check_backend(backend, device)
    if backend == "torch":
        from fastdcyk import _torch  # noqa: F401 - ImportError with the install hint
    grammar = _cnf_grammar(grammar)
    all_words = [_words(grammar, s) for s in sentences]
    variant = options["variant"]
    if variant in VARIANTS and unitary is None:
        unitary = VARIANTS[variant]["unitary"]
    opt_dtype = codebook.dtype if isinstance(codebook, Codebook) else check_dtype(dtype)
    opt = resolve(**options, dtype=opt_dtype)
    longest = max((len(ws) for ws in all_words), default=1)

    def before_build(d: int, dtype: np.dtype, engine: Any) -> None:
        # before the codebook draws anything of size d (its permutation, its vectors)
        if check_memory:
            _check_parse_memory(d, dtype, engine, opt, longest)

    cb = _resolve_codebook(codebook, d, seed, dtype, bool(unitary), engine, grammar, before_build)
    if check_memory and codebook is not None:
        _check_memory(cb, opt, longest)
    for ws in all_words:
        _check_symbols(cb, grammar, ws, opt.encoding)
    return grammar, all_words, opt, cb


def dcyk(
    grammar: Grammar | str,
    words: str | Sequence[str],
    codebook: Codebook | None = None,
    *,
    d: int | None = None,
    seed: int = 0,
    dtype: Any = None,
    variant: str = "paper",
    gate: str | None = None,
    decoder: str | None = None,
    unary_mask: bool | None = None,
    beta: float | None = None,
    threshold: float | None = None,
    prune: float | None = None,
    order: str | None = None,
    encoding: str | None = None,
    unitary: bool | None = None,
    engine: Any = "auto",
    decode: bool = True,
    check_memory: bool = True,
    progress: bool | float = False,
    record: bool = False,
    backend: str = "numpy",
    device: Any = None,
) -> DCYKResult:
    """Parse a sentence with D-CYK (the paper's Algorithms 2, 3 and 4).

    Parameters
    ----------
    grammar : Grammar or str
        A CNF grammar, or a built-in name / file path for :meth:`Grammar.load`.
    words : str or sequence of str
        The sentence (a str is split on whitespace).
    codebook : Codebook, optional
        Symbol vectors and permutation. Default: :func:`default_codebook` (for unitary
        vectors, ``Codebook.for_grammar(grammar, d, seed, dtype=dtype, engine=engine)``,
        otherwise ``Codebook(d, seed, dtype, engine=engine)``). Reuse one codebook across
        sentences: its work buffers are reused.
    d : int, optional
        Dimension (default 1024); must match the codebook's if both are given.
    seed : int, default 0
        Codebook seed (ignored when a codebook is given).
    dtype : {"float32", "float64"}, optional
        Default float32; must match the codebook's if both are given.
    variant : {"paper", "trace"}, default "paper"
        ``"paper"``: the faithful algorithm (entrywise gate, entry (0, 0) decoder), with the
        corrections of docs/method.md, section 2. ``"trace"``: the improved preset (trace gate
        and trace decoder, docs/method.md, section 3).
    gate, decoder, unary_mask : optional
        Override one ingredient of the preset: ``gate`` in {"entrywise", "trace"},
        ``decoder`` in {"entry", "trace"}, ``unary_mask`` (mask the unary P_A to its diagonal).
    beta : float, optional
        Slope of sigma(x) = 1 / (1 + exp(-(x - 0.5) beta)); default :data:`DEFAULT_BETA`.
    threshold : float, optional
        Decoder threshold on sigma (default 0.99, the paper's).
    prune : float, optional
        Skip an update whose P_A has no entry above this (default: the dtype's epsilon).
    order : {"sequential", "cell"}, optional
        ``"sequential"``: the paper's order, each update applied before the next detection
        of the same cell (a later nonterminal reads an earlier one's update: crosstalk, since
        in CNF no symbol of a cell depends on another of the same cell). ``"cell"``: every
        detection of a cell reads the table as it was before the cell, so the cell's
        detections share one pass and its updates are applied together (far cheaper on
        large grammars). Default: the variant's choice (paper: sequential, trace: cell).
    encoding : {"paper", "roles"}, optional
        ``"paper"``: P_right holds [X]+ [i]+ [j]+ and R_b^A = sum over A -> B C of
        [B]+ [C]-, as in the paper; a rule A -> B B then reduces to the identity (~I) and A
        is proposed over any split whose halves share a nonterminal. ``"roles"``: every
        nonterminal X also gets an independent right-child vector X' (the codebook's
        namespace ``"right"``): P_right holds [X']+ [i]+ [j]+ and R_b^A = sum [B]+ [C']-
        (docs/method.md, section 3). Default: the variant's choice (paper: ``"paper"``,
        trace: ``"roles"``).
    unitary : bool, optional
        Unitary zero-mean symbol vectors, with the grammar's symbols and the span indices
        shifted by Sidon sets (only when the codebook is built here; see :class:`Codebook`
        and :func:`default_codebook`). Default: the variant's choice (see :data:`VARIANTS`).
    engine : str, default "auto"
        FFT engine (only when the codebook is built here).
    decode : bool, default True
        Decode the chart (Algorithm 4) after parsing.
    check_memory : bool, default True
        Refuse with MemoryError, before allocating anything of size d (the codebook built
        here included), when the accumulators and work buffers would not fit in the memory
        available (the system's, bounded by the process's ``ulimit -v``).
    progress : bool or float, default False
        Show a progress bar over the chart's cells (tqdm.auto: a widget in notebooks). A
        number shows it only once the parse has run that many seconds.
    record : bool, default False
        Keep a log of every detection in ``result.log``: the step, the cell (i, j), the
        nonterminal, the mean of P_A's diagonal (how much of I the gate let through), P_A's
        largest entry and whether the update was applied or pruned.
    backend : {"numpy", "torch"}, default "numpy"
        ``"torch"``: the same algorithm, options and codebook in PyTorch
        (:mod:`fastdcyk._torch`; needs ``pip install 'fastdcyk[torch]'``). In float64 its
        accumulators equal the numpy engine's to rounding; the result is the same type.
    device : torch.device or str, optional
        Where the torch backend computes (default the CPU); only with ``backend="torch"``.

    Returns
    -------
    DCYKResult
        ``.p_left``, ``.p_right``, ``.chart``, ``.statistics``, ``.counts``, ``.timings``.

    Raises
    ------
    ValueError
        Unknown word (named, with its position), empty sentence, d < 2, a codebook whose d
        or dtype disagree with the arguments, unknown variant/gate/decoder, bad beta or
        threshold, unknown backend, a device without ``backend="torch"``.
    ImportError
        ``backend="torch"`` without PyTorch installed.
    MemoryError
        When the parse would not fit in memory: the message gives the memory needed and
        available, and the largest d that fits.
    FloatingPointError
        When non-finite values appear in the accumulators.

    Examples
    --------
    >>> import fastdcyk
    >>> g = fastdcyk.Grammar.builtin("example")
    >>> r = fastdcyk.dcyk(g, "a a b", d=512, variant="trace")
    >>> sorted(r.chart[(0, 3)])
    ['S']
    """
    delay = _check_progress(progress)
    if not isinstance(record, bool | np.bool_):
        raise ValueError(f"record must be True or False, got {record!r}")
    grammar, (ws,), opt, cb = _prepare(
        grammar,
        [words],
        codebook,
        d=d,
        seed=seed,
        dtype=dtype,
        unitary=unitary,
        engine=engine,
        check_memory=check_memory,
        backend=backend,
        device=device,
        options={
            "variant": variant,
            "gate": gate,
            "decoder": decoder,
            "unary_mask": unary_mask,
            "beta": beta,
            "threshold": threshold,
            "prune": prune,
            "order": order,
            "encoding": encoding,
        },
    )
    if backend == "torch":
        from fastdcyk import _torch

        bar = _progress_bar(delay, len(ws) * (len(ws) + 1) // 2, f"D-CYK d={cb.d} (torch)")
        try:
            on_cell = None if bar is None else (lambda: bar.update(1))
            kw = {"device": device, "decode": decode, "record": record, "on_cell": on_cell}
            return DCYKResult(**_torch.parse_sentences(grammar, [ws], cb, opt, **kw)[0])
        finally:
            if bar is not None:
                bar.close()

    return _parse_numpy(grammar, ws, cb, opt, decode=decode, record=record, delay=delay)


def _parse_numpy(
    grammar: Grammar,
    ws: tuple[str, ...],
    cb: Codebook,
    opt: DCYKOptions,
    *,
    decode: bool,
    record: bool,
    delay: float | None,
) -> DCYKResult:
    """The numpy engine's parse of words, options and codebook that :func:`_prepare` checked
    (``delay``: the progress bar's, None for none)."""
    with cb._lock:  # the parse uses the codebook's work buffers throughout
        spectral = opt.gate == "trace"
        parser = (_SpectralParser if spectral else _Parser)(grammar, ws, cb, opt)
        if record:
            parser.log = []
        timings: dict[str, float] = {}
        n = len(ws)
        bar = _progress_bar(delay, n * (n + 1) // 2, f"D-CYK d={cb.d}")
        on_cell = None if bar is None else (lambda: bar.update(1))
        try:
            t0 = time.perf_counter()
            parser.initialise()
            parser.unary(on_cell)
            t1 = time.perf_counter()
            timings["unary"] = t1 - t0
            parser.binary(on_cell)
        finally:
            if bar is not None:
                bar.close()
        t2 = time.perf_counter()
        timings["binary"] = t2 - t1
        stats = chart = None
        if decode and spectral and opt.decoder == "trace":
            stats = parser.statistics()
        elif decode and not spectral:
            stats = statistics_from_spectrum(parser.fl, grammar, n, cb, decoder=opt.decoder)
        t3 = time.perf_counter()
        p_left, p_right = parser.dense()
        t4 = time.perf_counter()
        if decode and stats is None:
            stats = decode_statistics(p_left, grammar, n, cb, decoder=opt.decoder)
        if decode:
            chart = chart_from_statistics(stats, n, beta=opt.beta, threshold=opt.threshold)
        timings["decode"] = time.perf_counter() - t4 + t3 - t2
        parser._finite(p_left, "P_left after the parse")
        parser._finite(p_right, "P_right after the parse")
    return DCYKResult(
        words=ws,
        grammar=grammar,
        codebook=cb,
        options=opt,
        p_left=p_left,
        p_right=p_right,
        statistics=stats,
        chart=chart,
        counts=dict(parser.counts),
        log=parser.log,
        timings=timings,
    )


def _check_progress(progress: Any) -> float | None:
    """The bar's delay in seconds (None: no bar); ValueError for anything else."""
    if progress is False or progress is None:
        return None
    if progress is True:
        return 0.0
    if (
        isinstance(progress, int | float | np.integer | np.floating)
        and math.isfinite(progress)
        and progress >= 0
    ):
        return float(progress)
    raise ValueError(f"progress must be True, False or a delay in seconds >= 0, got {progress!r}")


def _progress_bar(delay: float | None, total: int, desc: str) -> Any:
    if delay is None:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="cell", delay=delay, leave=False)


def _check_symbols(
    cb: Codebook, grammar: Grammar, words: tuple[str, ...], encoding: str = "paper"
) -> None:
    """Fail before any allocation when a codebook built from vectors lacks a symbol."""
    needed = [("index", k) for k in range(len(words) + 1)]
    needed += [("nonterminal", a) for a in grammar.nonterminals]
    if encoding == "roles":
        needed += [("right", a) for a in grammar.nonterminals]
    needed += [("terminal", t) for t in dict.fromkeys(words)]
    needed += [("terminal", t) for _, t in grammar.unary_rules]
    for kind, sym in needed:
        cb.vector(kind, sym)  # raises a KeyError naming the symbol

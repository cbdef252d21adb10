"""The D-CYK engine: the paper's unary and binary algorithms over two d x d accumulators.

The table P is kept as two dense matrices (SPEC.md section 2),

.. math::

    P_{left} = \\sum_{(i,j,X)} [i]^- [j]^- [X]^- D_{ijX}, \\qquad
    P_{right} = \\sum_{(i,j,X)} [X]^+ [i]^+ [j]^+ D_{ijX},

and filled by the paper's Algorithms 2 (unary) and 3 (binary) with the two corrections of
SPEC.md section 4 (binary rules encoded as [B]+ [C]-, span check [j]- [i]+). Every operator
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
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fastdcyk import _kernels as K
from fastdcyk._blocks import block_width
from fastdcyk.codebook import Codebook
from fastdcyk.decode import (
    DECODERS,
    _check_beta_threshold,
    chart_from_statistics,
    sigmoid,
    statistics_from_spectrum,
)
from fastdcyk.fft import get_engine
from fastdcyk.grammar import Grammar

__all__ = [
    "DEFAULT_BETA",
    "DEFAULT_THRESHOLD",
    "GATES",
    "VARIANTS",
    "DCYKOptions",
    "DCYKResult",
    "dcyk",
    "estimate_memory",
]

VARIANTS: dict[str, dict[str, Any]] = {
    "paper": {"gate": "entrywise", "decoder": "entry", "unary_mask": False, "unitary": False},
    "trace": {"gate": "trace", "decoder": "trace", "unary_mask": False, "unitary": True},
}
GATES = ("entrywise", "trace")
#: sigma's slope; the paper gives none. Chosen by measurement: see docs/method.md.
DEFAULT_BETA = 50.0
#: The paper's decoder threshold: sigma(x) > 0.99, i.e. x > 0.5 + 4.6 / beta.
DEFAULT_THRESHOLD = 0.99


@dataclass(frozen=True)
class DCYKOptions:
    """The resolved options of one parse (see :func:`dcyk`)."""

    variant: str
    gate: str
    decoder: str
    unary_mask: bool
    beta: float
    threshold: float
    prune: float


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
            f"variant={o.variant!r}, gate={o.gate!r}, decoder={o.decoder!r}, beta={o.beta:g})"
        )


# -- memory ---------------------------------------------------------------------------------


def _work_buffers(blockwise: bool) -> list[tuple[str, bool]]:
    """(name, complex?) of the d x d arrays a parse holds besides the dense results.

    An engine that applies operator chains block by block (:mod:`fastdcyk._blocks`) needs no
    d x d buffer inside the chains; the others need one real one ("apply-real").
    """
    names = [
        ("F_left", True),
        ("F_right", True),
        ("dcyk-Y", False),
        ("dcyk-W", False),
        ("spectrum", True),
    ]
    return names if blockwise else [*names, ("apply-real", False)]


def estimate_memory(
    d: int, dtype: Any = "float32", engine: Any = "auto", threads: int | None = None
) -> int:
    """Peak bytes of the work arrays one parse needs.

    During the parse: the two accumulators (kept as half spectra), two real d x d work
    buffers and one half spectrum, plus, inside operator chains, either a few cache-sized
    blocks per thread (the default scipy engine) or one more real d x d buffer (the numpy
    and pyfftw engines). At the end one dense accumulator is formed while the other's
    spectrum is still held. The figure is the same for every gate and decoder.

    Parameters
    ----------
    d : int
    dtype : {"float32", "float64"}
    engine, threads
        As for :class:`Codebook`: the FFT engine and its threads.
    """
    item = np.dtype(dtype).itemsize
    eng = get_engine(engine, threads)
    real = d * d * item
    cplx = (d // 2 + 1) * d * 2 * item
    during = sum(cplx if c else real for _, c in _work_buffers(eng.blockwise))
    if eng.blockwise:
        for axis in (0, 1):  # two real blocks and a spectrum block per thread and side
            w = block_width(d, d, item, axis)
            during += eng.threads * w * (2 * d + 2 * (d // 2 + 1)) * item
    return during + real


def _available_memory() -> int | None:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _check_memory(cb: Codebook) -> None:
    need = estimate_memory(cb.d, cb.dtype, cb.engine)
    need -= cb.buffer_bytes()  # work buffers already held are reused
    avail = _available_memory()
    if avail is not None and need > avail:
        hint = "use dtype='float32' or a smaller d" if cb.dtype == np.float64 else "use a smaller d"
        raise MemoryError(
            f"D-CYK at d = {cb.d} in {cb.dtype} needs about {need / 2**30:.2f} GiB more for its "
            f"accumulators and work buffers, but only {avail / 2**30:.2f} GiB is available: "
            f"{hint} (or pass check_memory=False to try anyway)"
        )


# -- input checks ---------------------------------------------------------------------------


def _words(grammar: Grammar, words: str | Sequence[str]) -> tuple[str, ...]:
    ws = tuple(words.split()) if isinstance(words, str) else tuple(words)
    if not ws:
        raise ValueError("empty sentence: D-CYK needs at least one word")
    known = set(grammar.terminals)
    for pos, w in enumerate(ws):
        if not isinstance(w, str):
            raise TypeError(f"word {pos} is {w!r}, not a str")
        if w not in known:
            some = ", ".join(repr(t) for t in list(grammar.terminals)[:12])
            raise ValueError(
                f"word {w!r} at position {pos} is not a terminal of the grammar; "
                f"its terminals are {some}{' ...' if len(known) > 12 else ''}"
            )
    return ws


def _resolve_codebook(
    codebook: Codebook | None,
    d: int | None,
    seed: int,
    dtype: Any,
    unitary: bool,
    engine: Any,
) -> Codebook:
    if codebook is None:
        if d is None:
            d = 1024
        if isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 2:
            raise ValueError(f"the dimension d must be an integer >= 2, got {d!r}")
        return Codebook(int(d), seed=seed, dtype=dtype or "float32", unitary=unitary, engine=engine)
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


def _resolve_options(variant, gate, decoder, unary_mask, beta, threshold, prune, dtype):
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}: choose one of {tuple(VARIANTS)}")
    preset = VARIANTS[variant]
    gate = preset["gate"] if gate is None else gate
    decoder = preset["decoder"] if decoder is None else decoder
    unary_mask = preset["unary_mask"] if unary_mask is None else bool(unary_mask)
    if gate not in GATES:
        raise ValueError(f"unknown gate {gate!r}: choose one of {GATES}")
    if decoder not in DECODERS:
        raise ValueError(f"unknown decoder {decoder!r}: choose one of {DECODERS}")
    beta = DEFAULT_BETA if beta is None else beta
    threshold = DEFAULT_THRESHOLD if threshold is None else threshold
    _check_beta_threshold(beta, threshold)
    prune = float(np.finfo(dtype).eps) if prune is None else float(prune)
    if not (prune >= 0 and math.isfinite(prune)):
        raise ValueError(f"prune must be a finite number >= 0, got {prune!r}")
    return DCYKOptions(variant, gate, decoder, unary_mask, float(beta), float(threshold), prune)


# -- the parser -----------------------------------------------------------------------------


class _Parser:
    """One parse: the accumulators (kept as spectra), the rule operators, the work buffers.

    Two choices make the parse cheap; neither changes what is computed.

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
    """

    def __init__(self, grammar: Grammar, words: tuple[str, ...], cb: Codebook, opt: DCYKOptions):
        self.g, self.words, self.cb, self.opt = grammar, words, cb, opt
        d, dt = cb.d, cb.dtype
        self.d = d
        self.fl = np.zeros((d, d // 2 + 1), cb.cdtype)
        self.fr = np.zeros((d, d // 2 + 1), cb.cdtype)
        self.y = cb.buffer("dcyk-Y", (d, d), dt)
        self.w = cb.buffer("dcyk-W", (d, d), dt)
        # R_u^A = sum_{A -> a} [a]+ (one circulant and Phi); R_b^A = sum [B]+ [C]- (one
        # circulant: Phi Phi^T cancels). Nonterminals without rules of a kind are skipped.
        unary: dict[str, list] = {}
        for a, t in grammar.unary_rules:
            unary.setdefault(a, []).append(cb.plus("terminal", t))
        binary: dict[str, list] = {}
        for a, b, c in grammar.binary_rules:
            binary.setdefault(a, []).append(cb.plus("nonterminal", b) @ cb.minus("nonterminal", c))
        self.r_unary = {a: sum(unary[a]) for a in grammar.nonterminals if a in unary}
        self.r_binary = {a: sum(binary[a]) for a in grammar.nonterminals if a in binary}
        # A product of P_left (or a spectrum of it) is stale once the accumulators have been
        # updated since it was computed.
        self.version = 0
        self.counts = {"detections": 0, "updates": 0, "pruned": 0}
        self.log: list[dict[str, Any]] | None = None
        self._ident = cb.permutation_index(0)
        self._weights = _parseval_weights(d)

    def spec(self, kind: str, s: Any) -> np.ndarray:
        return self.cb.spectrum(kind, s)

    def _finite(self, value: Any, where: str) -> None:
        if not np.all(np.isfinite(value)):
            raise FloatingPointError(
                f"non-finite values appeared in D-CYK's accumulators ({where}): the codebook's "
                "vectors or beta are too large for this dtype; use float64, smaller vectors "
                "or a smaller beta"
            )

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

    def update(self, i: int, j: int, a: str, kind: str, value: Any, work: np.ndarray) -> None:
        """P_left += [i]- [j]- [A]- P_A and P_right += [A]+ [i]+ [j]+ P_A.

        ``kind`` says what P_A is: "scalar" (value * I), "diag" (diag(value)) or "full"
        (``value`` is P_A^T, a d x d matrix other than ``work``). ``work`` is a free buffer.
        """
        peak = abs(value) if kind == "scalar" else float(np.max(np.abs(value)))
        applied = peak > self.opt.prune
        if self.log is not None:
            diagonal = value if kind != "full" else np.diagonal(value)
            self.log.append(
                {
                    "step": "unary" if j == i + 1 else "binary",
                    "i": i,
                    "j": j,
                    "A": a,
                    "p_diag_mean": float(np.mean(diagonal)),
                    "p_max": peak,
                    "applied": applied,
                }
            )
        if not applied:
            self.counts["pruned"] += 1
            return
        self.counts["updates"] += 1
        cb = self.cb
        # Phi [i]- [j]- [A]- = C_i^T ([j]- [A]-) and [A]+ [i]+ [j]+ = C_A (Phi [i]+ [j]+);
        # (inner P_A)^T = P_A^T inner^T.
        parts = (
            (
                self.fl,
                np.conj(self.spec("index", i)),
                cb.minus("index", j) @ cb.minus("nonterminal", a),
            ),
            (
                self.fr,
                self.spec("nonterminal", a),
                cb.phi() @ cb.plus("index", i) @ cb.plus("index", j),
            ),
        )
        for acc, spec, inner in parts:
            if kind == "scalar":
                inner.T.diag_times(np.full(self.d, value, cb.dtype), out=work)
            elif kind == "diag":
                inner.T.diag_times(value, out=work)
            else:
                inner.T.apply(value, side="right", out=work)
            self.accumulate_t(acc, spec, work)
        self.version += 1

    # -- Algorithm 2 -------------------------------------------------------------------------

    def unary(self) -> None:
        opt, cb, d = self.opt, self.cb, self.d
        sums = np.empty(d, np.float64)
        for i in range(1, len(self.words) + 1):
            lift_t = cb.plus("index", i).T  # Y = C_i Phi (C_{i-1} Phi P_left) = [i]+ [i-1]+ P_left
            y_version = sums_version = -1
            for a, r in self.r_unary.items():
                self.counts["detections"] += 1
                if y_version != self.version:
                    self.left_product_t(self.spec("index", i - 1), self.w, 0)
                    lift_t.apply(self.w, side="right", out=self.y)  # Yt
                    y_version = self.version
                if opt.gate == "trace":
                    # tr(C_R Phi Y) = tr(C_R^T Yt Phi^T): wrapped diagonal sums of Yt Phi^T,
                    # shared by every A at this position.
                    if sums_version != y_version:
                        K.wrapped_diag_sums(self.y, self._ident, cb.perm, sums)
                        sums_version = y_version
                    col = _first_column(np.conj(r.factors[0]), d)
                    t = r.scale * float(col @ sums) / d
                    self._finite(t, f"unary detection of {a} at position {i}")
                    self.update(i - 1, i, a, "scalar", sigmoid(t, opt.beta).item(), self.w)
                    continue
                r.T.apply(self.y, side="right", out=self.w)  # Mt = (R_u^A Y)^T
                where = f"unary detection of {a} at position {i}"
                if opt.unary_mask:
                    m = np.diagonal(self.w).astype(np.float64)
                    self._finite(m, where)
                    self.update(i - 1, i, a, "diag", sigmoid(m, opt.beta).astype(cb.dtype), self.y)
                else:
                    self._finite(self.w.sum(dtype=np.float64), where)
                    K.sigmoid_numpy(self.w, opt.beta, 0.5)  # P_A^T = sigma(Mt)
                    self.update(i - 1, i, a, "full", self.w, self.y)  # Yt is free once Mt is

    # -- Algorithm 3 -------------------------------------------------------------------------

    def binary(self, on_cell: Any = None) -> None:
        opt, cb, d = self.opt, self.cb, self.d
        n = len(self.words)
        diag = np.empty(d, np.float64)
        g = np.empty(d // 2 + 1, np.complex128)
        for j in range(2, n + 1):
            for i in range(j - 2, -1, -1):
                # Y = [j]- [i]+ P_left = Phi^T C_j^T C_i Phi P_left: one circulant on FL
                check = np.conj(self.spec("index", j)) * self.spec("index", i)
                y_version = g_version = -1
                for a, r in self.r_binary.items():
                    self.counts["detections"] += 1
                    yt_hat = cb.spectrum_buffer((d // 2 + 1, d))
                    if y_version != self.version:
                        self.left_product_t(check, self.y, -1)  # Yt
                        cb.engine.rfft(self.y, 0, out=yt_hat)  # rows of Y, for Parseval
                        y_version = self.version
                    spec = r.factors[0].astype(np.complex128) * r.scale
                    where = f"binary detection of {a} at ({i}, {j})"
                    if opt.gate == "entrywise":
                        # diag(Y R P_right)[r] = (1/d) sum_f w_f Re(Yhat[r, f] conj(V_R[f])
                        # conj(FR[r, f])), Yhat[r, f] = rfft(Yt, axis=0)[f, r]: no FFT, no
                        # d x d product.
                        coef = (self._weights * spec / d).astype(cb.cdtype)
                        K.spectral_diag(self.fr, coef, yt_hat, diag)
                        self._finite(diag, where)
                        p = sigmoid(diag, opt.beta).astype(cb.dtype)
                        self.update(i, j, a, "diag", p, self.w)
                        continue
                    # tr(Y R P_right) = (1/d) sum_f w_f Re(conj(V_R[f]) g[f]) with
                    # g[f] = sum_r Yhat[r, f] conj(FR[r, f]): O(d) per A once g is known.
                    if g_version != y_version:
                        K.conj_diag_of_product(yt_hat, self.fr, g)
                        g_version = y_version
                    t = float(np.sum(self._weights * (spec * g).real)) / d / d
                    self._finite(t, where)
                    self.update(i, j, a, "scalar", sigmoid(t, opt.beta).item(), self.w)
                if on_cell is not None:
                    on_cell()

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
        p_left = np.ascontiguousarray(self.w.T)
        fr, self.fr = self.fr, None
        cb.engine.irfft(fr, d, 1, out=self.w)
        del fr
        p_right = np.ascontiguousarray(self.w.T)
        return p_left, p_right


def _first_column(spec: np.ndarray, d: int) -> np.ndarray:
    return np.fft.irfft(spec.astype(np.complex128), n=d)


def _parseval_weights(d: int) -> np.ndarray:
    """w_f with sum_k a_k b_k = (1/d) sum_f w_f Re(A_f conj(B_f)) over the rfft half-spectrum."""
    w = np.full(d // 2 + 1, 2.0)
    w[0] = 1.0
    if d % 2 == 0:
        w[-1] = 1.0
    return w


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
    unitary: bool | None = None,
    engine: Any = "auto",
    decode: bool = True,
    check_memory: bool = True,
    progress: bool = False,
    record: bool = False,
) -> DCYKResult:
    """Parse a sentence with D-CYK (the paper's Algorithms 2, 3 and 4).

    Parameters
    ----------
    grammar : Grammar or str
        A CNF grammar, or a built-in name / file path for :meth:`Grammar.load`.
    words : str or sequence of str
        The sentence (a str is split on whitespace).
    codebook : Codebook, optional
        Symbol vectors and permutation. Default: ``Codebook(d, seed, dtype, unitary=unitary,
        engine=engine)``. Reuse one codebook across sentences: its work buffers are reused.
    d : int, optional
        Dimension (default 1024); must match the codebook's if both are given.
    seed : int, default 0
        Codebook seed (ignored when a codebook is given).
    dtype : {"float32", "float64"}, optional
        Default float32; must match the codebook's if both are given.
    variant : {"paper", "trace"}, default "paper"
        ``"paper"``: the faithful algorithm (entrywise gate, entry (0, 0) decoder), with the
        corrections of SPEC.md section 4. ``"trace"``: the improved preset (trace gate and
        trace decoder, SPEC.md section 5).
    gate, decoder, unary_mask : optional
        Override one ingredient of the preset: ``gate`` in {"entrywise", "trace"},
        ``decoder`` in {"entry", "trace"}, ``unary_mask`` (mask the unary P_A to its diagonal).
    beta : float, optional
        Slope of sigma(x) = 1 / (1 + exp(-(x - 0.5) beta)); default :data:`DEFAULT_BETA`.
    threshold : float, optional
        Decoder threshold on sigma (default 0.99, the paper's).
    prune : float, optional
        Skip an update whose P_A has no entry above this (default: the dtype's epsilon).
    unitary : bool, optional
        Unitary symbol vectors (only when the codebook is built here). Default: the
        variant's choice (see :data:`VARIANTS`).
    engine : str, default "auto"
        FFT engine (only when the codebook is built here).
    decode : bool, default True
        Decode the chart (Algorithm 4) after parsing.
    check_memory : bool, default True
        Refuse with MemoryError, before allocating, when the accumulators and work buffers
        would not fit in the available memory.
    progress : bool, default False
        Show a progress bar over the binary step's cells (needs tqdm).
    record : bool, default False
        Keep a log of every detection in ``result.log``: the step, the cell (i, j), the
        nonterminal, the mean of P_A's diagonal (how much of I the gate let through), P_A's
        largest entry and whether the update was applied or pruned.

    Returns
    -------
    DCYKResult
        ``.p_left``, ``.p_right``, ``.chart``, ``.statistics``, ``.counts``, ``.timings``.

    Raises
    ------
    ValueError
        Unknown word (named, with its position), empty sentence, d < 2, a codebook whose d
        or dtype disagree with the arguments, unknown variant/gate/decoder, bad beta or
        threshold.
    MemoryError
        When the parse would not fit in memory (with the figure and what to do).
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
    if isinstance(grammar, str):
        grammar = Grammar.load(grammar)
    if not isinstance(grammar, Grammar):
        raise TypeError(f"grammar must be a fastdcyk.Grammar, got {type(grammar).__name__}")
    if not grammar.is_cnf:
        raise ValueError("D-CYK needs a grammar in Chomsky normal form: use grammar.to_cnf()")
    ws = _words(grammar, words)
    if variant in VARIANTS and unitary is None:
        unitary = VARIANTS[variant]["unitary"]
    cb = _resolve_codebook(codebook, d, seed, dtype, bool(unitary), engine)
    opt = _resolve_options(variant, gate, decoder, unary_mask, beta, threshold, prune, cb.dtype)
    _check_symbols(cb, grammar, ws)
    if check_memory:
        _check_memory(cb)

    with cb._lock:  # the parse uses the codebook's work buffers throughout
        parser = _Parser(grammar, ws, cb, opt)
        if record:
            parser.log = []
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        parser.initialise()
        parser.unary()
        t1 = time.perf_counter()
        timings["unary"] = t1 - t0
        bar = None
        n = len(ws)
        if progress and n > 1:
            from tqdm.auto import tqdm

            bar = tqdm(total=n * (n - 1) // 2, desc=f"D-CYK binary, d={cb.d}", unit="cell")
        try:
            parser.binary(on_cell=None if bar is None else (lambda: bar.update(1)))
        finally:
            if bar is not None:
                bar.close()
        t2 = time.perf_counter()
        timings["binary"] = t2 - t1
        stats = chart = None
        if decode:
            stats = statistics_from_spectrum(parser.fl, grammar, n, cb, decoder=opt.decoder)
            chart = chart_from_statistics(stats, n, beta=opt.beta, threshold=opt.threshold)
        timings["decode"] = time.perf_counter() - t2
        p_left, p_right = parser.dense()
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


def _check_symbols(cb: Codebook, grammar: Grammar, words: tuple[str, ...]) -> None:
    """Fail before any allocation when a codebook built from vectors lacks a symbol."""
    needed = [("index", k) for k in range(len(words) + 1)]
    needed += [("nonterminal", a) for a in grammar.nonterminals]
    needed += [("terminal", t) for t in dict.fromkeys(words)]
    needed += [("terminal", t) for _, t in grammar.unary_rules]
    for kind, sym in needed:
        cb.vector(kind, sym)  # raises a KeyError naming the symbol

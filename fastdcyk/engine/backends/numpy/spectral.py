"""The numpy backend's table as 2-D half spectra: the arithmetic of the scalar gates.

With the trace and clean-up gates every P_A is a scalar times I, so every update is an
operator, and in the 2-D spectral domain (M~ = F M F^-1, F the DFT matrix, so that
F C_v F^-1 = diag(fft(v))) an operator Phi^a C Phi^b is diagonal up to the fixed matrix
G_k = (Phi C_k Phi)~ of a span index k (docs/method.md, section 4.4). A
:class:`NumpySpectralParser` keeps

    left_spectrum = rows f <= d/2 of (Phi P_left)~^T,
    right_spectrum = rows f <= d/2 of (P_right Phi^T)~,

complex, (d // 2 + 1, d) each (the memory of a d x d real matrix), and then, with hats for
full spectra of vectors:

- an update of cell (i, j) with summed spectrum S adds diag(conj S) conj(G_j) diag(conj i)
  to the left spectrum and diag(S) G_i diag(j) to the right one (element-wise, no FFT:
  :meth:`~NumpySpectralParser.write_left`, :meth:`~NumpySpectralParser.write_right`);
- the binary detection tr([j]- [i]+ P_left R P_right) is sum_f R[f] q[f] with
  q[f] = sum_g conj(j[g]) i[g] ZT[f, g] PR[f, g] (:meth:`~NumpySpectralParser.pair_readout`);
- the unary detection tr(R_u Phi [i]+ [i-1]+ P_left) and the trace decoder's
  tr([A]+ [j]+ [i]+ P_left) are sum_f R[f] q[f] with q[f] = sum_g G_j[f, g] i[g] ZT[f, g]
  (:meth:`~NumpySpectralParser.cell_readout`).

Each G_k costs one forward real FFT and one complex FFT of a d x d matrix; they are kept in
a cache of at most :data:`~fastdcyk.hrr.buffers.G_CACHE_BYTES` (at least two), and those of
the last parse, within :data:`~fastdcyk.hrr.buffers.G_KEEP_BYTES`, for the codebook's next
parse (:func:`kept_spectra`).
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from typing import Any

import numpy as np

from fastdcyk.cfg.grammar import Grammar
from fastdcyk.engine.backends.numpy.accounting import Held
from fastdcyk.engine.backends.numpy.parser import NumpyParser
from fastdcyk.engine.core.decode import Statistics
from fastdcyk.engine.core.deferred import DeferredArray
from fastdcyk.engine.core.soft import SoftWord
from fastdcyk.hrr import buffers, kernels
from fastdcyk.hrr.buffers import g_cache_slots, g_kept_slots
from fastdcyk.hrr.codebook import Codebook
from fastdcyk.options import DCYKOptions

__all__ = [
    "NumpySpectralParser",
    "kept_spectra",
    "left_spectrum_of",
    "release_kept",
    "spectral_buffers",
    "trim_kept",
]


class NumpySpectralParser(NumpyParser):
    """A numpy parser whose table is kept as 2-D half spectra (the module's notes).

    Parameters
    ----------
    grammar, words, cb, opt, rules
        As :class:`~fastdcyk.engine.backends.numpy.parser.NumpyParser`.
    right : bool, default True
        Keep P_right too (the clean-up gate neither reads nor writes it).
    left : ndarray, optional
        The left spectrum to start from (:func:`left_spectrum_of` a given P_left; default
        a new one of zeros).
    """

    def __init__(
        self,
        grammar: Grammar,
        words: tuple[str, ...],
        cb: Codebook,
        opt: DCYKOptions,
        *,
        rules: bool = True,
        right: bool = True,
        left: np.ndarray | None = None,
    ) -> None:
        super().__init__(grammar, words, cb, opt, rules=rules)
        d = cb.d
        self.work = buffers.W.get(cb)
        self.left_spectrum = buffers.ZT.new(cb) if left is None else left
        self.right_spectrum = buffers.PR.new(cb) if right else None
        self._readout = np.empty(d // 2 + 1, np.complex128)
        self._full, self._index_matrices = kept_spectra(cb)
        self.slots = g_cache_slots(d, cb.dtype, len(words))

    def full_spectrum(self, kind: str, sym: Any) -> np.ndarray:
        """fft of a symbol's vector, all d frequencies, in the codebook's complex dtype."""
        key = (kind, sym)
        f = self._full.get(key)
        if f is None:
            v = self.cb.vector(kind, sym).astype(np.float64)
            f = np.fft.fft(v).astype(self.cb.cdtype)
            self._full[key] = f
        return f

    def index_matrix(self, k: int) -> np.ndarray:
        """G_k = rows f <= d/2 of (Phi C_k Phi)~, from the cache or computed."""
        cache = self._index_matrices
        g = cache.get(k)
        if g is not None:
            cache.move_to_end(k)
            return g
        cb, d = self.cb, self.d
        while len(cache) >= self.slots:
            cache.popitem(last=False)
        # (Phi C_k Phi)[r, c] = v_k[(perm[r] - inv[c]) mod d]
        v = cb.vector("index", k)
        kernels.circulant_times_diag(
            v, np.ones(d, cb.dtype), cb.perm, cb.permutation_index(-1), self.work
        )
        g = cb.fft.rfft(self.work, 0)
        cb.fft.cfft(g, 1, forward=False)
        cache[k] = g
        return g

    def trace(self, spectra: np.ndarray, q: np.ndarray) -> np.ndarray:
        """(1/d) sum over all d frequencies of R[f] q[f], for every row R of ``spectra``."""
        return (spectra @ (self.parseval * q)).real / self.d

    def cell_readout(self, i: int, j: int, table: np.ndarray | None = None) -> np.ndarray:
        """q of tr(C Phi C_j Phi C_i Phi P_left) (the unary detection and the decoder of
        cell (i, j)) over ``table`` (default the left spectrum)."""
        table = self.left_spectrum if table is None else table
        return kernels.row_dots(
            self.index_matrix(j), table, self.full_spectrum("index", i), self._readout
        )

    def pair_readout(self, i: int, j: int) -> np.ndarray:
        """q of tr([j]- [i]+ P_left C P_right): the binary detection of cell (i, j)."""
        dg = np.conj(self.full_spectrum("index", j)) * self.full_spectrum("index", i)
        return kernels.row_dots(self.left_spectrum, self.right_spectrum, dg, self._readout)

    def write_left(self, table: np.ndarray, spectrum: np.ndarray, i: int, j: int) -> None:
        """table += sum_X s_X [i]- [j]- [X]- for ``spectrum`` = sum_X s_X X^: a sum of
        symbols written into cell (i, j) of a table kept as P_left is (the left spectrum,
        or the clean-up parser's residual table), in the codebook's complex dtype."""
        left = np.conj(spectrum).astype(self.cb.cdtype, copy=False)
        index = np.conj(self.full_spectrum("index", i))
        kernels.outer_madd(table, left, self.index_matrix(j), index, True)

    def write_right(self, spectrum: np.ndarray, i: int, j: int) -> None:
        """P_right += sum_X s_X [X']+ [i]+ [j]+ for ``spectrum`` = sum_X s_X X'^."""
        right = spectrum.astype(self.cb.cdtype)
        index = self.full_spectrum("index", j)
        kernels.outer_madd(self.right_spectrum, right, self.index_matrix(i), index, False)

    def initialise(self) -> None:
        """P_left = sum_i [i-1]- [i]- [a_i]- (P_right stays 0)."""
        for i, word in enumerate(self.words, start=1):
            self.write_left(self.left_spectrum, self.terminal_spectrum(word), i - 1, i)

    def terminal_spectrum(self, word: str) -> np.ndarray:
        """A word's terminal spectrum; a soft word's mixture of its terminals' spectra."""
        if not isinstance(word, SoftWord):
            return self.cb.spectrum("terminal", word)
        mixed = sum(
            p * self.cb.spectrum("terminal", a).astype(np.complex128) for a, p in word.weights
        )
        return np.asarray(mixed).astype(self.cb.cdtype)

    def decoder_statistics(self) -> Statistics:
        """The trace decoder's statistic of every triple, tr([A]+ [j]+ [i]+ P_left) / d,
        from the spectra."""
        n, tables = len(self.words), self.tables
        out = np.zeros((n, n + 1, len(tables.nonterminals)))
        for j in range(1, n + 1):
            for i in range(j):
                out[i, j] = self.trace(tables.spectra, self.cell_readout(i, j))
        return Statistics(out, tables.nonterminals)

    defers_dense = True

    def dense(self, deferred: bool = False) -> tuple[Any, Any]:
        """P_left and P_right as new d x d arrays (P_right zeros when the parser keeps none);
        the spectra and the G cache are released. With ``deferred``, P_left (and P_right
        where never written) as :class:`~fastdcyk.engine.core.deferred.DeferredArray`: made when
        the result's array is first asked for, from the spectrum the result keeps till then
        (the same memory as the array), under the codebook's lock."""
        cb, d = self.cb, self.d
        trim_kept(cb, self.slots)  # what the next parse with this codebook reuses
        zt, self.left_spectrum = self.left_spectrum, None
        p_left: Any = _deferred_left(zt, cb) if deferred else _dense_left(zt, cb)
        del zt  # (the deferred P_left keeps it; the dense one has overwritten it)
        if self.right_spectrum is None:
            if deferred:
                return p_left, DeferredArray(lambda: buffers.P_RIGHT.new(cb), (d, d), cb.dtype)
            return p_left, buffers.P_RIGHT.new(cb)
        # rfft(P', axis=0) = fft(PR, axis=1); P_right = P' Phi.
        pr, self.right_spectrum = self.right_spectrum, None
        cb.fft.cfft(pr, 1, forward=True)
        cb.fft.irfft(pr, d, 0, out=self.work)
        del pr
        p_right = buffers.P_RIGHT.new(cb, zero=False)
        return p_left, kernels.gather_cols(self.work, cb.permutation_index(-1), p_right)

    def close(self) -> None:
        trim_kept(self.cb, self.slots)


def _dense_left(zt: np.ndarray, cb: Codebook, begin: Any = None) -> np.ndarray:
    """P_left as a new d x d array from its left spectrum ``zt`` (overwritten; ``begin()``
    called just before it is first changed); the caller holds the codebook's lock (its work
    buffers)."""
    d = cb.d
    # the allocations first: one that fails leaves zt as it was (a deferred P_left is then
    # made again at its next access)
    p_left = buffers.P_LEFT.new(cb, zero=False)
    work = buffers.W.get(cb)
    y = buffers.Y.get(cb)
    # rfft(Z, axis=1)^T = fft(conj(ZT), axis=1); Z^T = irfft of it along axis 0;
    # P_left^T = Z^T Phi.
    if begin is not None:
        begin()
    np.conjugate(zt, out=zt)
    cb.fft.cfft(zt, 1, forward=True)
    cb.fft.irfft(zt, d, 0, out=work)
    del zt
    kernels.gather_cols(work, cb.permutation_index(-1), y)
    p_left[...] = y.T
    return p_left


def _deferred_left(zt: np.ndarray, cb: Codebook) -> DeferredArray:
    """P_left made from its kept spectrum ``zt`` when first asked for, under the codebook's
    lock (the parse has let it go by then). A make that fails before it changes ``zt`` (an
    allocation) can be tried again; one interrupted after refuses to give a wrong matrix."""
    begun: list[bool] = []

    def make() -> np.ndarray:
        with cb.lock:
            if begun:
                raise RuntimeError(
                    "P_left cannot be made: an earlier attempt was interrupted while it "
                    "transformed the table this result kept; parse the sentence again"
                )
            return _dense_left(zt, cb, lambda: begun.append(True))

    return DeferredArray(make, (cb.d, cb.d), cb.dtype)


def left_spectrum_of(p_left: np.ndarray, cb: Codebook) -> np.ndarray:
    """The left spectrum of a given P_left (a new array): the inverse of
    :func:`_dense_left`. The caller holds the codebook's lock."""
    # Z^T = P_left^T with its columns gathered by the permutation; then
    # ZT = conj(ifft(rfft(Z^T, axis 0), axis 1))
    y = buffers.Y.get(cb)
    kernels.gather_cols(np.ascontiguousarray(p_left.T), cb.perm, y)
    zt = buffers.ZT.new(cb, zero=False)
    cb.fft.rfft(y, 0, out=zt)
    cb.fft.cfft(zt, 1, forward=False)
    np.conjugate(zt, out=zt)
    return zt


def spectral_buffers(opt: DCYKOptions, slots: int, kept: int, *, right: bool) -> Held:
    """The d x d arrays of a :class:`NumpySpectralParser`'s parse: the left spectrum (and the
    right one, with ``right``), one real work buffer and ``slots`` G_k matrices during it;
    at its end one spectrum is still held while the dense results are formed, beside the
    ``kept`` G_k matrices the codebook keeps for its next parse. Decoding with the entry
    decoder reads the dense P_left back as a spectrum, through an operator chain."""
    pr = [buffers.PR] if right else []
    during = [buffers.ZT, *pr, buffers.W, *(buffers.g_matrix(k) for k in range(slots))]
    g_kept = [buffers.g_matrix(k) for k in range(kept)]
    if opt.decoder == "entry":
        end = [buffers.W, buffers.Y, buffers.P_LEFT, buffers.P_RIGHT, buffers.SHUFFLED]
        return Held(during, [*end, buffers.FL, buffers.SPECTRUM, *g_kept], chains="end")
    return Held(during, [*pr, buffers.W, buffers.Y, buffers.P_LEFT, buffers.P_RIGHT, *g_kept])


#: Per codebook, what the spectral parsers compute from its index vectors and permutation
#: alone: the full spectra of its vectors and the G_k matrices (those of the last parse,
#: within :data:`~fastdcyk.hrr.buffers.G_KEEP_BYTES`), kept for its next parse.
_KEPT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def kept_spectra(cb: Codebook) -> tuple[dict, OrderedDict]:
    """The codebook's kept full spectra and G_k matrices (the caller holds its lock)."""
    kept = _KEPT.get(cb)
    if kept is None:
        kept = ({}, OrderedDict())
        _KEPT[cb] = kept
    return kept


def trim_kept(cb: Codebook, slots: int) -> None:
    """Drop the G_k matrices of ``cb`` beyond what is kept between parses
    (:func:`~fastdcyk.hrr.buffers.g_kept_slots` of a parse's ``slots``), oldest first."""
    g = kept_spectra(cb)[1]
    keep = g_kept_slots(cb.d, cb.dtype, slots)
    while len(g) > keep:
        g.popitem(last=False)


#: Per codebook, the spectra of a grammar's lexicon as one complex128 table (the clean-up
#: parser reads every word against it), kept for the next parse when it is no larger than
#: :data:`LEXICON_KEEP_BYTES`: stacked and converted anew it cost an ATIS parse at d = 128
#: a seventh of its time.
_LEXICONS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
LEXICON_KEEP_BYTES = 16 * 2**20


def lexicon_spectra(cb: Codebook, structure: Any) -> np.ndarray:
    """The spectra of the terminals of ``structure``'s lexicon (a grammar's
    :class:`~fastdcyk.engine.core.rules.RuleStructure`; its rules A -> a), in its order: a
    read-only (len, d // 2 + 1) complex128 table, kept per codebook for the next parse of
    the same grammar."""
    kept = _LEXICONS.get(cb)
    if kept is not None and kept[0] is structure:
        return kept[1]
    terminals = [structure.terminals[k] for k in structure.lexicon]
    table = cb.spectra("terminal", terminals).astype(np.complex128)
    table.setflags(write=False)
    if table.nbytes <= LEXICON_KEEP_BYTES:
        _LEXICONS[cb] = (structure, table)
    return table


def release_kept(cb: Codebook | None = None) -> None:
    """Drop what :func:`kept_spectra` and :func:`lexicon_spectra` keep for ``cb`` (for every
    codebook when None)."""
    if cb is None:
        _KEPT.clear()
        _LEXICONS.clear()
    else:
        _KEPT.pop(cb, None)
        _LEXICONS.pop(cb, None)

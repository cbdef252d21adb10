"""The D-CYK engine in PyTorch: the same algorithm as :mod:`fastdcyk.engine`, batched and
differentiable.

This module mirrors the two numpy parsers of the engine (docs/method.md, section 4) with torch
tensors, for a batch of sentences at once (sentences of different lengths share every cell
(i, j) that exists in them; a cell beyond a sentence's length is masked out of its updates):

- :class:`_TraceParser` mirrors the trace-gate parser (section 4.4): both accumulators are kept
  as 2-D half spectra ``ZT`` and ``PR``, every cell costs a few element-wise passes and one
  product with a rule table, and the only FFTs are those of the index matrices
  G_k = (Phi C_k Phi)~ (shared by the batch, and kept per codebook across parses by
  :func:`parse_sentences`) and of the dense results;
- :class:`_DenseParser` mirrors the entrywise-gate parser (section 4.3, the paper's
  variant): the accumulators are kept as the row spectra ``FL = rfft((Phi P_left)^T)`` and
  ``FR = rfft(P_right^T)``, P_A = sigma(M) is a dense matrix (or a diagonal), circulants are
  applied with ``torch.fft`` and the permutation Phi with index gathers.

Every option of :func:`fastdcyk.dcyk` is supported (variant, gate, decoder, unary_mask,
encoding, order, beta, threshold, prune), and in float64 the numbers equal the numpy
engine's to rounding. The rule spectra are built here from the symbol vectors with
``torch.fft`` (docs/method.md, section 4.1), so that gradients reach the vectors (and the
optional per-rule weights): :func:`parse` is the differentiable core, and
:func:`parse_sentences` runs it on a :class:`~fastdcyk.hrr.codebook.Codebook` and returns the
fields of :class:`fastdcyk.engine.DCYKResult` (``dcyk(..., backend="torch")`` and
:func:`fastdcyk.engine.batch.dcyk_batch` call it). ``prune`` makes the computation piecewise:
an update whose gate is at most ``prune`` is skipped, as in the numpy engine (use
``prune=0`` for gradient checks).

PyTorch is imported here only: ``import fastdcyk`` works without it, and
``dcyk(..., backend="torch")`` tells how to install it (``pip install 'fastdcyk[torch]'``).
The paper: "CYK Parsing over Distributed Representations" (Zanzotto, Satta, Cristini, 2020).
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

try:
    import torch
except ImportError as exc:  # pragma: no cover - exercised only without torch
    raise ImportError(
        "the torch backend of fastdcyk needs PyTorch: pip install 'fastdcyk[torch]'"
    ) from exc

from fastdcyk.engine import schedule as S
from fastdcyk.engine.decode import Statistics, chart_from_statistics
from fastdcyk.engine.readback import RIDGE
from fastdcyk.engine.rules import RuleStructure, rule_structure, rules_of
from fastdcyk.engine.schedule import Detections, Step
from fastdcyk.engine.soft import has_soft, terminal_weights
from fastdcyk.hrr import memory as _memory
from fastdcyk.hrr.buffers import g_cache_slots
from fastdcyk.options import DCYKOptions

if TYPE_CHECKING:  # pragma: no cover
    from fastdcyk.cfg.grammar import Grammar
    from fastdcyk.hrr.codebook import Codebook

__all__ = [
    "RuleStructure",
    "SymbolVectors",
    "TorchParse",
    "check_device",
    "parse",
    "parse_sentences",
    "release_caches",
    "rule_structure",
    "symbol_vectors",
]

_COMPLEX = {torch.float32: torch.complex64, torch.float64: torch.complex128}


# -- the symbol vectors -----------------------------------------------------------------------


@dataclass
class SymbolVectors:
    """The symbol vectors and the permutation of a codebook, as torch tensors.

    Attributes
    ----------
    terminal : Tensor, (T, d)
        One row per terminal of the :class:`RuleStructure`.
    nonterminal : Tensor, (N, d)
        One row per nonterminal (the vectors of [A]+ and [A]-).
    right : Tensor, (N, d), or None
        The right-child role vectors A' (``encoding="roles"``); None with the paper's
        encoding, where P_right holds the nonterminal vectors themselves.
    index : Tensor, (n + 1, d)
        The span index vectors 0..n (n at least the longest sentence).
    perm : Tensor of int64, (d,)
        Phi as an index: ``(Phi x)[k] = x[perm[k]]``.
    """

    terminal: torch.Tensor
    nonterminal: torch.Tensor
    right: torch.Tensor | None
    index: torch.Tensor
    perm: torch.Tensor

    @property
    def d(self) -> int:
        return int(self.nonterminal.shape[-1])

    @property
    def dtype(self) -> torch.dtype:
        return self.nonterminal.dtype

    @property
    def device(self) -> torch.device:
        return self.nonterminal.device


def symbol_vectors(
    codebook: Codebook,
    structure: RuleStructure,
    n: int,
    *,
    encoding: str = "paper",
    device: Any = None,
    dtype: Any = None,
) -> SymbolVectors:
    """The vectors of ``codebook`` for a grammar's symbols and the span indices 0..n.

    Parameters
    ----------
    codebook : Codebook
        Its vectors and permutation are copied (the same numbers the numpy engine uses).
    structure : RuleStructure
    n : int
        The longest sentence length.
    encoding : {"paper", "roles"}
        ``"roles"`` also takes the right-child role vectors.
    device : torch.device or str, optional
    dtype : torch.dtype, optional
        Default: the codebook's dtype.

    Returns
    -------
    SymbolVectors
    """
    if dtype is None:
        dtype = torch.float64 if codebook.dtype == np.float64 else torch.float32

    def stack(kind: str, syms: Sequence[Any]) -> torch.Tensor:
        rows = [np.asarray(codebook.vector(kind, s)) for s in syms]
        return torch.as_tensor(np.stack(rows), dtype=dtype, device=device)

    nts = structure.nonterminals
    return SymbolVectors(
        terminal=stack("terminal", structure.terminals),
        nonterminal=stack("nonterminal", nts),
        right=stack("right", nts) if encoding == "roles" else None,
        index=stack("index", range(n + 1)),
        perm=torch.as_tensor(np.array(codebook.perm), dtype=torch.int64, device=device),
    )


@dataclass
class TorchParse:
    """What :func:`parse` returns for a batch of B sentences of at most n words.

    Attributes
    ----------
    statistics : Tensor, (B, n, n + 1, N), or None
        The decoder statistic of (i, j, A) at ``[b, i, j, A]`` (~1 for a triple in the
        table); 0 outside the chart of sentence b (see ``mask``). None without decoding.
    readouts : Tensor, (B, n, n + 1, N)
        The gate's argument of every detection: tr(M) / d for the trace gate, the mean of
        M's diagonal for the entrywise gate (M the detection matrix of docs/method.md,
        section 2); 0 where no detection ran.
    mask : Tensor of bool, (B, n, n + 1)
        The cells (i, j), 0 <= i < j <= n_b, of each sentence.
    lengths : list of int
    p_left, p_right : Tensor, (B, d, d), or None
        The accumulators (when asked for).
    counts : list of dict
        Per sentence: detections, updates (applied) and pruned, as the numpy engine counts.
    log : list of list of dict, or None
        Per sentence, every detection (``record=True``), as ``DCYKResult.log``.
    timings : dict
        Seconds spent in the unary step, the binary step and the decoder (whole batch).
    """

    statistics: torch.Tensor | None
    readouts: torch.Tensor
    mask: torch.Tensor
    lengths: list[int]
    p_left: torch.Tensor | None
    p_right: torch.Tensor | None
    counts: list[dict[str, int]]
    log: list[list[dict[str, Any]]] | None
    timings: dict[str, float]


# -- shared machinery ------------------------------------------------------------------------


def _parseval_weights(d: int, dtype: torch.dtype, device: Any) -> torch.Tensor:
    """w_f with sum_k a_k b_k = (1/d) sum_f w_f Re(A_f conj(B_f)) over the rfft half-spectrum."""
    w = torch.full((d // 2 + 1,), 2.0, dtype=dtype, device=device)
    w[0] = 1.0
    if d % 2 == 0:
        w[-1] = 1.0
    return w


class TorchOps(S.ArrayOps):
    """The schedule's bookkeeping on torch tensors (one device synchronisation per cell)."""

    def __init__(self, device: torch.device) -> None:
        self.device = device

    def int_counts(self, batch: int) -> torch.Tensor:
        return torch.zeros((3, batch), dtype=torch.int64, device=self.device)

    def as_int(self, mask: Any) -> torch.Tensor:
        return mask.to(torch.int64)

    def flags(self, keep: Any, check: Any) -> tuple[bool, bool]:
        any_kept, finite = torch.stack((keep.any(), torch.isfinite(check).all())).tolist()
        return bool(any_kept), bool(finite)

    def tolist(self, x: Any) -> list:
        if isinstance(x, torch.Tensor):
            return x.detach().cpu().tolist()
        return np.asarray(x).tolist()


class _Base:
    """Tables, masks, counts, readouts and the detection log of one batched parse."""

    def __init__(
        self,
        vec: SymbolVectors,
        st: RuleStructure,
        opt: DCYKOptions,
        words: torch.Tensor,
        lengths: list[int],
        unary_weights: torch.Tensor | None,
        binary_weights: torch.Tensor | None,
        record: bool,
        soft: torch.Tensor | None = None,
        pre: torch.Tensor | None = None,
    ) -> None:
        self.vec, self.st, self.opt = vec, st, opt
        # soft inputs: (B, n, T) terminal weights, or (B, n, U) preterminal scores
        self.soft, self.pre = soft, pre
        self.d = d = vec.d
        self.h = d // 2 + 1
        self.rdtype = vec.dtype
        if self.rdtype not in _COMPLEX:
            raise TypeError(f"the symbol vectors must be float32 or float64, not {self.rdtype}")
        self.cdtype = _COMPLEX[self.rdtype]
        self.dev = vec.device
        self.words = words  # (B, n) terminal rows, padded with 0
        self.lengths = lengths
        self.B, self.n = len(lengths), max(lengths)
        self.len_t = torch.as_tensor(lengths, device=self.dev)
        self.grad = torch.is_grad_enabled() and any(
            t is not None and t.requires_grad
            for t in (
                vec.terminal,
                vec.nonterminal,
                vec.right,
                vec.index,
                unary_weights,
                binary_weights,
                soft,
                pre,
            )
        )
        self.w = _parseval_weights(d, self.rdtype, self.dev)
        self._idx: dict[int, torch.Tensor] = {0: torch.arange(d, device=self.dev), 1: vec.perm}
        inv = torch.empty_like(vec.perm)
        inv[vec.perm] = torch.arange(d, device=self.dev)
        self._idx[-1] = inv
        self._tables(unary_weights, binary_weights)
        self.ledger = S.Ledger(
            TorchOps(self.dev),
            st.nonterminals,
            lengths,
            opt.prune,
            record=record,
            readouts=True,
            # not the bound method: the ledger would refer back to the parser, and that
            # cycle would keep every tensor of the parse (under autograd its whole graph,
            # gigabytes) alive until Python's cyclic collector happened to run
            active=lambda j, lengths=self.len_t: lengths >= j,
        )

    def _tables(self, uw: torch.Tensor | None, bw: torch.Tensor | None) -> None:
        """The rule spectra (docs/method.md, section 4.1) from the vectors, with torch.fft."""
        self._uw, self._bw = uw, bw
        st, vec, dev = self.st, self.vec, self.dev
        rfft = torch.fft.rfft
        self.spectra = rfft(vec.nonterminal)  # (N, h)
        self.right_spectra = self.spectra if vec.right is None else rfft(vec.right)
        self.index_half = rfft(vec.index)  # (n + 1, h)
        self.unary_rows = torch.as_tensor(st.unary, device=dev)
        self.binary_rows = torch.as_tensor(st.binary, device=dev)
        if len(st.unary):
            tspec = rfft(vec.terminal)
            terms = tspec[torch.as_tensor(st.unary_rule_terminal, device=dev)]
            if uw is not None:
                terms = terms * uw.to(self.rdtype)[:, None]
            rows = torch.as_tensor(st.unary_rule_row, device=dev)
            zero = torch.zeros((len(st.unary), self.h), dtype=self.cdtype, device=dev)
            self.unary_spectra = zero.index_add(0, rows, terms)
        if len(st.binary):
            left = self.spectra[torch.as_tensor(st.binary_rule_left, device=dev)]
            right = self.right_spectra[torch.as_tensor(st.binary_rule_right, device=dev)]
            prod = left * torch.conj(right)
            if bw is not None:
                prod = prod * bw.to(self.rdtype)[:, None]
            rows = torch.as_tensor(st.binary_rule_row, device=dev)
            zero = torch.zeros((len(st.binary), self.h), dtype=self.cdtype, device=dev)
            self.binary_spectra = zero.index_add(0, rows, prod)

    def word_rows(self, table: torch.Tensor, i: int) -> torch.Tensor:
        """The row of ``table`` (one per terminal) of each sentence's word i (0-based),
        (B, ...): with soft terminals, the rows mixed by the word's weights."""
        if self.soft is None:
            return table[self.words[:, i]]
        return self.soft[:, i].to(table.dtype) @ table

    def idx(self, k: int) -> torch.Tensor:
        """``idx`` with ``(Phi^k x)[r] = x[idx[r]]``."""
        got = self._idx.get(k)
        if got is None:
            base = self._idx[1 if k > 0 else -1]
            got = base[self.idx(k - (1 if k > 0 else -1))]
            self._idx[k] = got
        return got

    def active(self, j: int) -> torch.Tensor:
        """(B,) bool: the sentences that have the cells (i, j)."""
        return self.len_t >= j

    def sigmoid(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid((x - 0.5) * self.opt.beta)

    # -- readouts, counts and the log as the caller wants them -----------------------------

    def cell_mask(self) -> torch.Tensor:
        i = torch.arange(self.n, device=self.dev)[:, None]
        j = torch.arange(self.n + 1, device=self.dev)[None, :]
        return (i < j)[None] & (j[None] <= self.len_t[:, None, None])

    def readout_tensor(self) -> torch.Tensor:
        shape = (self.B, self.n, self.n + 1, len(self.st.nonterminals))
        out = torch.zeros(shape, dtype=self.rdtype, device=self.dev)
        for i, j, rows, vals in self.ledger.readouts:
            out[:, i, j, torch.as_tensor(rows, device=self.dev)] = vals.to(self.rdtype)
        return out * self.cell_mask()[..., None]

    # -- the schedule's protocol (fastdcyk.engine.schedule.CellParser) -----------------------

    def rows(self, step: Step) -> np.ndarray:
        return self.st.unary if step == S.UNARY else self.st.binary

    def group(self, step: Step) -> int | None:
        return None

    def begin(self, i: int, j: int, step: Step) -> None:
        pass

    def end(self, i: int, j: int, step: Step) -> None:
        pass

    def entry_statistics(self, col: torch.Tensor) -> torch.Tensor:
        """The entry decoder (Algorithm 4) of every cell from column 0 of Phi P_left.

        (C_A Phi C_j Phi C_i (Phi P_left))[0, 0] is row 0 of C_A Phi against
        C_j Phi C_i times the column: every A of a cell at once with one product.
        Returns (B, n, n + 1, N).
        """
        n, d = self.n, self.d
        s = self.index_half
        inner = torch.fft.irfft(torch.fft.rfft(col)[:, None, :] * s[None, :n], n=d)
        ph = torch.fft.rfft(inner[..., self.idx(1)])  # Phi (C_i col)
        u = torch.fft.irfft(ph[:, :, None, :] * s[None, None, :, :], n=d)  # (B, n, n+1, d)
        cols = torch.fft.irfft(torch.conj(self.spectra), n=d)  # first columns of C_A^T
        rows = cols[:, self.idx(-1)]  # row 0 of C_A Phi
        return u @ rows.T


# -- the trace gate: both accumulators as 2-D spectra ---------------------------------------


class _TraceParser(_Base):
    """The trace-gate parser of docs/method.md, section 4.4, batched.

    ``zt`` and ``pr`` are (B, d // 2 + 1, d): rows f <= d/2 of (Phi P_left)~^T and of
    (P_right Phi^T)~ per sentence, as in the numpy engine. With g_A the gates of a cell,
    S^ = sum_A g_A A^ (S'^ with the right-child spectra):

    - update: ZT[f, g] += conj(S^[f] G_j[f, g] i^[g]), PR[f, g] += S'^[f] G_i[f, g] j^[g];
    - binary detection: sum_f R^[f] q[f], q[f] = sum_g ZT[f, g] PR[f, g] conj(j^[g]) i^[g];
    - unary detection and trace decoder: q[f] = sum_g ZT[f, g] G_j[f, g] i^[g].

    Without autograd the element-wise products go through two work buffers, and the unary
    detection of (i - 1, i) and its update share the matrix G_i (.) (i-1)^.

    The G_k = rows f <= d/2 of (Phi C_k Phi)~ cost one real and one complex FFT of a d x d
    matrix each, and more in gathers and fresh allocations here than in the numpy engine's
    kernel; they are shared by the whole batch and kept in a cache of up to a quarter of the
    memory the device has free when the parse starts (at least
    :data:`fastdcyk.hrr.buffers.G_CACHE_BYTES`, at most one per span index: all of them
    under autograd). At d = 6000 a G_k is 144 MB: the numpy engine's 256 MB held two, and
    nearly every cell computed one again (docs/performance.md). Without autograd the cache
    may be the caller's (``g_cache``), so that later parses with the same index vectors and
    permutation reuse it.
    """

    def __init__(self, *args: Any, g_cache: dict | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        shape = (self.B, self.h, self.d)
        self.zt = torch.zeros(shape, dtype=self.cdtype, device=self.dev)
        self.pr = torch.zeros(shape, dtype=self.cdtype, device=self.dev)
        self.full = torch.fft.fft(self.vec.index)  # (n + 1, d)
        d = self.d
        # W = Phi C_k Phi, W[r, c] = v_k[(perm[r] - inv[c]) mod d], is read from the strided
        # (symmetric) view R[a, t] = v_k[(a + t + 1) mod d]: W^T = R[d - 1 - inv][:, perm]
        self._rows = (d - 1) - self.idx(-1)
        self._g: dict[int, torch.Tensor] = {} if g_cache is None or self.grad else g_cache
        real = "float64" if self.rdtype == torch.float64 else "float32"
        self._slots = g_cache_slots(d, real, self.n, budget=_free_bytes(self.dev) // 4)
        w = self.w.to(self.cdtype)
        self.spectra_w = self.spectra * w / d
        if len(self.st.unary):
            self.unary_w = self.unary_spectra * w / d
        if len(self.st.binary):
            self.binary_w = self.binary_spectra * w / d
        # work buffers (without autograd): a (h, d) matrix and a (B, h, d) one
        self._buf = (
            None if self.grad else torch.empty(shape[1:], dtype=self.cdtype, device=self.dev)
        )
        self._bbuf = None if self.grad else torch.empty(shape, dtype=self.cdtype, device=self.dev)

    def gmat(self, k: int) -> torch.Tensor:
        """G_k, from the cache or computed (under autograd every G_k is kept)."""
        g = self._g.pop(k, None)
        if g is None:
            if not self.grad:
                while len(self._g) >= self._slots:
                    self._g.pop(next(iter(self._g)))  # the least recently used
            v = self.vec.index[k]
            r = torch.cat((v, v))[1:].unfold(0, self.d, 1)
            wt = r.index_select(0, self._rows).index_select(1, self.idx(1))  # W^T
            # rfft(W, axis 0) = rfft(W^T, axis 1)^T, then the inverse FFT along the other axis
            g = torch.fft.ifft(torch.fft.rfft(wt, dim=1), dim=0).T.contiguous()
        self._g[k] = g  # last: the most recently used
        return g

    def _outer(self, j: int, i: int) -> torch.Tensor:
        """G_j (.) i^ (a column scaling), in the work buffer without autograd."""
        if self._buf is None:
            return self.gmat(j) * self.full[i]
        return torch.mul(self.gmat(j), self.full[i], out=self._buf)

    def _conj(self, m: torch.Tensor) -> torch.Tensor:
        """conj(m), in place when ``m`` is the work buffer."""
        return m.conj_physical_() if m is self._buf else torch.conj(m)

    def _madd(
        self, name: str, left: torch.Tensor, m: torch.Tensor, only: list[int] | None = None
    ) -> None:
        """acc += left[b, f] * m[f, g], in place unless autograd needs the old value.

        ``only``: the sentences b to update (the others' ``left`` is 0), or None for all.
        """
        acc = getattr(self, name)
        if self.grad:
            setattr(self, name, torch.addcmul(acc, left[:, :, None], m[None]))
        elif only is None:
            acc.addcmul_(left[:, :, None], m[None])
        else:  # a batch whose updates were mostly pruned: skip the others' passes
            for b in only:
                acc[b].addcmul_(left[b][:, None], m)

    def _rowdot(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """sum_g a[..., f, g] b[..., f, g] (through the batch work buffer)."""
        if self._bbuf is None:
            return (a * b).sum(-1)
        return torch.mul(a, b, out=self._bbuf).sum(-1)

    def initialise(self) -> None:
        """P_left = sum_i [i-1]- [i]- [a_i]- (P_right stays 0); with soft terminals
        [a_i]- is the mixture sum_a p_a [a]-, and with preterminal scores nothing is
        written (the unary step takes the scores)."""
        if self.pre is not None:
            return
        tspec = torch.fft.rfft(self.vec.terminal)
        for i in range(1, self.n + 1):
            s = torch.conj(self.word_rows(tspec, i - 1)) * self.active(i)[:, None]
            self._madd("zt", s, self._conj(self._outer(i, i - 1)))

    def update(
        self,
        i: int,
        j: int,
        gates: torch.Tensor,
        rows: torch.Tensor,
        outer_ji: torch.Tensor | None = None,
        keep: torch.Tensor | None = None,
    ) -> None:
        """sum_A g_A [i]- [j]- [A]- into P_left, sum_A g_A [A']+ [i]+ [j]+ into P_right.

        ``outer_ji``: G_j (.) i^ when the caller has it already (it may be conjugated in
        place). ``keep`` (B, k): the updates kept (the others' gates are 0), so that only
        the sentences with one are updated.
        """
        only = None
        if keep is not None and not self.grad and self.B > 1:
            kept = keep.any(1)
            if not bool(kept.all()):
                only = kept.nonzero().flatten().tolist()
        g = gates.to(self.cdtype)
        m = self._outer(j, i) if outer_ji is None else outer_ji
        self._madd("zt", torch.conj(g @ self.spectra[rows]), self._conj(m), only)
        self._madd("pr", g @ self.right_spectra[rows], self._outer(i, j), only)

    def _q_binary(self, i: int, j: int) -> torch.Tensor:
        """q of tr([j]- [i]+ P_left C P_right) (B, h): the binary detection."""
        dg = torch.conj(self.full[j]) * self.full[i]
        if self._bbuf is None:
            return (self.zt * self.pr) @ dg
        torch.mul(self.zt, self.pr, out=self._bbuf)
        return self._bbuf.mul_(dg).sum(-1)

    def read(self, i: int, j: int, step: Step) -> None:
        """q of the cell's readouts (B, h) and, for a unary cell, G_j (.) i^ (its update's
        matrix, shared with the detection)."""
        if step == S.UNARY:
            # q of tr(R_u Phi [j]+ [i]+ P_left): sum_g ZT G_j i^; the update of (i, j) adds
            # conj(G_j (.) i^) to ZT
            self._outer_ji = self._outer(j, i)
            self._qv = self._rowdot(self.zt, self._outer_ji)
        else:
            self._outer_ji = None
            self._qv = self._q_binary(i, j)

    def detect(self, i: int, j: int, step: Step, ks: slice) -> Detections:
        spectra_w = self.unary_w if step == S.UNARY else self.binary_w
        tvals = (self._qv @ spectra_w[ks].T).real
        gates = self.sigmoid(tvals)
        return Detections(tvals, gates, gates, gates)

    def write(self, i: int, j: int, step: Step, ks: slice, det: Detections, keep: Any) -> None:
        rows = self.unary_rows if step == S.UNARY else self.binary_rows
        self.update(i, j, det.values * keep, rows[ks], self._outer_ji, keep)

    def statistics(self) -> torch.Tensor:
        """The decoder statistics of every cell, (B, n, n + 1, N)."""
        if self.opt.decoder == "entry":
            # column 0 of Z = Phi P_left: (1/d) Re fft(sum_f w_f conj(ZT[f, :]))
            zsum = (torch.conj(self.zt) * self.w[None, :, None]).sum(1)
            col = torch.fft.fft(zsum).real / self.d
            return self.entry_statistics(col)
        nn = len(self.st.nonterminals)
        out = torch.zeros((self.B, self.n, self.n + 1, nn), dtype=self.rdtype, device=self.dev)
        full_t = self.full.T  # (d, n + 1)
        for j in range(1, self.n + 1):
            q = (self.zt * self.gmat(j)) @ full_t[:, :j]  # (B, h, j): q of (i, j), i < j
            out[:, :j, j, :] = (q.transpose(1, 2) @ self.spectra_w.T).real
        return out

    def dense(self) -> tuple[torch.Tensor, torch.Tensor]:
        """P_left and P_right, (B, d, d) each (P_right a transposed view).

        Z^T = irfft(fft(conj ZT, axis 1), axis 0), so Z = irfft of the transpose along the
        last axis; P_left = Phi^T Z. Likewise Phi P_right^T from PR, and
        P_right^T = Phi^T (Phi P_right^T).
        """
        d, inv = self.d, self.idx(-1)
        z = torch.fft.fft(torch.conj(self.zt), dim=-1).transpose(-1, -2)
        z = torch.fft.irfft(z, n=d, dim=-1)
        w = torch.fft.irfft(torch.fft.fft(self.pr, dim=-1).transpose(-1, -2), n=d, dim=-1)
        return z[:, inv], w[:, inv].transpose(-1, -2)


class _CleanupParser(_TraceParser):
    """The clean-up gate (docs/method.md, section 6), batched and differentiable: the trace
    parser's ``zt`` for P_left, no P_right; every completed cell read once into clean scores
    c = sigma(a), and a detection t_A = the grammar's rules over the children's scores
    (weighted by the per-rule weights when given), as in
    :class:`fastdcyk.engine.numpy_cleanup.CleanupParser`.

    The read-back (docs/method.md, section 7): with ``"lstsq"`` only the candidates are
    written (t_A above the candidate level) and a cell's amplitudes a solve the ridge
    system of their Gram matrix (:mod:`fastdcyk.engine.readback`), batched over sentences
    whose candidate sets differ (padded with identity rows); the solve is part of the
    autograd graph, and the amplitudes are the decoder statistics. With ``"matched"`` a is
    the trace decoder's readout of every nonterminal.
    """

    def __init__(self, *args: Any, g_cache: dict | None = None, **kwargs: Any) -> None:
        super().__init__(*args, g_cache=g_cache, **kwargs)
        self.pr = None  # never read nor written
        st, dev = self.st, self.dev
        self.scores: dict[tuple[int, int], torch.Tensor] = {}
        tspec = torch.fft.rfft(self.vec.terminal)  # (T, h)
        self.terminal_w = tspec * self.w.to(self.cdtype) / self.d
        ix = lambda a: torch.as_tensor(a, device=dev)  # noqa: E731
        self._u_row, self._u_term = ix(st.unary_rule_row), ix(st.unary_rule_terminal)
        self._b_row, self._b_left = ix(st.binary_rule_row), ix(st.binary_rule_left)
        self._b_right = ix(st.binary_rule_right)
        if self.opt.readback == "cancel":
            raise ValueError(
                "readback='cancel' is built in the numpy engine only: use backend='numpy', "
                "or readback='lstsq' with the torch backend"
            )
        self.lstsq = self.opt.readback == "lstsq"
        if self.lstsq:
            nn, nt = len(st.nonterminals), len(st.terminals)
            # the regressors of a read: nonterminals, then terminals (unary cells), whose
            # amplitudes land in a scratch column past them when padding
            self._reg_vectors = torch.cat((self.vec.nonterminal, self.vec.terminal))
            self._reg_spectra = torch.cat((self.spectra_w, self.terminal_w))
            self._lexicon = torch.zeros(nt, dtype=torch.bool, device=dev)
            self._lexicon[self._u_term] = True
            self._nn, self._nt = nn, nt
            self.stats: dict[tuple[int, int], torch.Tensor] = {}
            self._cands: dict[tuple[int, int], torch.Tensor] = {}
            self._terms = torch.zeros((self.B, nt), dtype=torch.bool, device=dev)
            # each read cell's clean scores less sigma(0) (0 but for its candidates) and the
            # candidates of any sentence, for the rule layer over the candidates' rules
            self._base = float(torch.sigmoid(torch.tensor(-0.5 * self.opt.beta, dtype=self.rdtype)))
            self._delta: dict[tuple[int, int], tuple[torch.Tensor, np.ndarray]] = {}
            bw = self._bw
            ones = torch.ones(len(st.binary_rule_row), dtype=self.rdtype, device=dev)
            weights = ones if bw is None else bw.to(self.rdtype)
            zero = torch.zeros(len(st.binary), dtype=self.rdtype, device=dev)
            self._rule_weight_sums = zero.index_add(0, self._b_row, weights)

    def _weights(self) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        return self._uw, self._bw

    def _readout(self, i: int, j: int, spectra_w: torch.Tensor) -> torch.Tensor:
        """tr([X]+ [j]+ [i]+ P_left) / d for every row X of ``spectra_w``, (B, rows)."""
        q = self._rowdot(self.zt, self._outer(j, i))
        return (q @ spectra_w.T).real

    def read(self, i: int, j: int, step: Step) -> None:
        uw, bw = self._weights()
        if step == S.UNARY and self.pre is not None:  # the unary step's t_A given
            self._t = self.pre[:, i].to(self.rdtype)
            return
        if step == S.UNARY:
            clean = self.sigmoid(self._readout(i, j, self.terminal_w))
            if self.lstsq:  # the terminals read in the cell (by any of its reads)
                self._terms |= (clean > self.opt.candidate_level) & self._lexicon
            c = clean[:, self._u_term]
            if uw is not None:
                c = c * uw.to(self.rdtype)
            zero = torch.zeros((self.B, len(self.st.unary)), dtype=self.rdtype, device=self.dev)
            self._t = zero.index_add(1, self._u_row, c)
            return
        if self.lstsq:
            self._t = self._candidate_rules(i, j, bw)
            return
        t = torch.zeros((self.B, len(self.st.binary)), dtype=self.rdtype, device=self.dev)
        for k in range(i + 1, j):
            pairs = self.scores[(i, k)][:, self._b_left] * self.scores[(k, j)][:, self._b_right]
            if bw is not None:
                pairs = pairs * bw.to(self.rdtype)
            t = t.index_add(1, self._b_row, pairs)
        self._t = t

    def _candidate_rules(self, i: int, j: int, bw: torch.Tensor | None) -> torch.Tensor:
        """The rule layer over the candidates' rules
        (:func:`fastdcyk.engine.rules.candidate_rule_layer`), batched: a non-candidate
        scores sigma(0) exactly and carries no gradient, so the rules between two of them
        add the same constant; only the rules with a candidate child (of any sentence of
        the batch) are gathered. Equal, values and gradients, to the sum over every rule."""
        st, base = self.st, self._base
        t = (self._rule_weight_sums * ((j - i - 1) * base * base)).expand(self.B, -1)
        dev = self.dev
        for k in range(i + 1, j):
            left, left_any = self._delta[(i, k)]
            right, right_any = self._delta[(k, j)]
            for grouped, anyone, own in (
                (st.rules_by_left, left_any, True),
                (st.rules_by_right, right_any, False),
            ):
                rules = rules_of(grouped, np.flatnonzero(anyone))
                if not len(rules):
                    continue
                r = torch.as_tensor(rules, device=dev)
                c = right[:, self._b_right[r]]
                vals = left[:, self._b_left[r]] * (base + c) if own else base * c
                if bw is not None:
                    vals = vals * bw.to(self.rdtype)[r]
                t = t.index_add(1, self._b_row[r], vals)
        return t

    def detect(self, i: int, j: int, step: Step, ks: slice) -> Detections:
        t = self._t[:, ks]
        # given preterminal scores are the unary step's gates themselves: a second sigmoid
        # would flatten their gradient wherever an encoder is confident
        gates = t if step == S.UNARY and self.pre is not None else self.sigmoid(t)
        if not self.lstsq:
            return Detections(t, gates, gates, gates)
        level, prune = self.opt.candidate_level, self.opt.prune
        cand = (t > level) & (gates > prune) & self.active(j)[:, None]
        rows = (self.unary_rows if step == S.UNARY else self.binary_rows)[ks]
        mask = self._cands.get((i, j))
        if mask is None:
            mask = torch.zeros((self.B, self._nn), dtype=torch.bool, device=self.dev)
        self._cands[(i, j)] = mask.index_copy(1, rows, mask[:, rows] | cand)
        return Detections(t, gates, gates * cand, gates)  # only the candidates are written

    def write(self, i: int, j: int, step: Step, ks: slice, det: Detections, keep: Any) -> None:
        rows = (self.unary_rows if step == S.UNARY else self.binary_rows)[ks]
        values = det.values
        kept = keep.any(0)
        if not bool(kept.all()):  # only the nonterminals some sentence writes
            cols = kept.nonzero().flatten()
            rows, values, keep = rows[cols], values[:, cols], keep[:, cols]
        g = (values * keep).to(self.cdtype)
        self._madd("zt", torch.conj(g @ self.spectra[rows]), self._conj(self._outer(j, i)))

    def end(self, i: int, j: int, step: Step) -> None:
        q = self._rowdot(self.zt, self._outer(j, i))
        if not self.lstsq:
            self.scores[(i, j)] = self.sigmoid((q @ self.spectra_w.T).real)
            return
        cands = self._cands.pop((i, j), None)
        if cands is None:
            cands = torch.zeros((self.B, self._nn), dtype=torch.bool, device=self.dev)
        if step == S.UNARY:
            cands = torch.cat((cands, self._terms), dim=1)
            self._terms = torch.zeros_like(self._terms)
        a = self._solve(cands, q)
        self.stats[(i, j)] = a
        self.scores[(i, j)] = scores = self.sigmoid(a)
        anyone = cands[:, : self._nn].any(0).cpu().numpy()
        self._delta[(i, j)] = (scores - self._base, anyone)

    def _solve(self, cands: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        """The least-squares amplitudes of every nonterminal, (B, N): the candidates'
        (``cands``, (B, N or N + T), the terminals read in a unary cell after the
        nonterminals) solved for together, the others 0."""
        nn, width, dev = self._nn, cands.shape[1], self.dev
        counts = cands.sum(1)
        k = int(counts.max()) if self.B else 0
        if k == 0:
            return torch.zeros((self.B, nn), dtype=self.rdtype, device=dev)
        b, r = cands.nonzero(as_tuple=True)  # ordered by sentence, then row
        offsets = torch.cumsum(counts, 0) - counts
        pos = torch.arange(len(b), device=dev) - offsets[b]
        idx = torch.full((self.B, k), width, dtype=torch.int64, device=dev)  # padding: scratch
        idx[b, pos] = r
        valid = idx < width
        safe = torch.where(valid, idx, 0)
        vecs = self._reg_vectors[safe] * valid[..., None]  # (B, k, d)
        gram = vecs @ vecs.transpose(1, 2)
        spec = self._reg_spectra[safe]  # (B, k, h)
        x = (spec @ q[:, :, None]).real.squeeze(-1) * valid
        eye = torch.eye(k, dtype=self.rdtype, device=dev)
        diag = torch.diagonal(gram, dim1=1, dim2=2)
        scale = diag.sum(1) / counts.clamp(min=1)  # the mean diagonal: 1 where not positive
        scale = torch.where(scale > 0, scale, torch.ones_like(scale))
        ridge = RIDGE * scale[:, None, None] * eye + (~valid)[:, :, None] * eye
        a = _ridge_solve(gram + ridge, x, RIDGE * scale)
        full = torch.zeros((self.B, width + 1), dtype=self.rdtype, device=dev)
        return full.scatter(1, idx, a * valid)[:, :nn]

    def statistics(self) -> torch.Tensor:
        if not self.lstsq:
            return super().statistics()
        nn = len(self.st.nonterminals)
        out = torch.zeros((self.B, self.n, self.n + 1, nn), dtype=self.rdtype, device=self.dev)
        for (i, j), a in self.stats.items():
            out[:, i, j] = a
        return out

    def dense(self) -> tuple[torch.Tensor, torch.Tensor]:
        d, inv = self.d, self.idx(-1)
        z = torch.fft.fft(torch.conj(self.zt), dim=-1).transpose(-1, -2)
        z = torch.fft.irfft(z, n=d, dim=-1)
        return z[:, inv], torch.zeros_like(z)


def _ridge_solve(m: torch.Tensor, x: torch.Tensor, floor: torch.Tensor) -> torch.Tensor:
    """m a = x for a batch of symmetric positive definite m (B, k, k) and x (B, k): by
    Cholesky; a system whose factorisation rounding defeats goes through its eigenvalues,
    floored at its own ``floor`` (B,), as :func:`fastdcyk.engine.readback.solve` does."""
    chol, info = torch.linalg.cholesky_ex(m)
    bad = info != 0
    if not bool(bad.any()):
        return torch.cholesky_solve(x[..., None], chol).squeeze(-1)
    good, bad = (~bad).nonzero().flatten(), bad.nonzero().flatten()
    out = torch.zeros_like(x)
    if len(good):
        solved = torch.cholesky_solve(x[good][..., None], chol[good]).squeeze(-1)
        out = out.index_copy(0, good, solved)
    w, u = torch.linalg.eigh(m[bad])
    w = torch.maximum(w, floor[bad][:, None])
    solved = (u @ ((u.transpose(1, 2) @ x[bad][..., None]) / w[..., None])).squeeze(-1)
    return out.index_copy(0, bad, solved)


# -- the entrywise gate: accumulators as row spectra -----------------------------------------


class _DenseParser(_Base):
    """The entrywise-gate parser of docs/method.md, section 4.3, batched.

    The accumulators are kept as ``FL = rfft((Phi P_left)^T, axis=-1)`` and
    ``FR = rfft(P_right^T, axis=-1)``, (B, d, d // 2 + 1) each, and every d x d work matrix
    is the transpose of the one in the paper's algebra (operators applied from the right,
    FFTs along the last axis).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        shape = (self.B, self.d, self.h)
        self.fl = torch.zeros(shape, dtype=self.cdtype, device=self.dev)
        self.fr = torch.zeros(shape, dtype=self.cdtype, device=self.dev)
        self._pcp_index: dict[tuple[int, int], torch.Tensor] = {}
        self._wrap: torch.Tensor | None = None  # (k + m) mod d
        self._sw: dict[tuple[int, int], torch.Tensor] = {}  # the last cell's rfft(W^T)
        if len(self.st.binary):
            self.binary_w = self.binary_spectra * self.w.to(self.cdtype) / self.d

    # -- operators applied from the right -----------------------------------------------------

    def rphi(self, x: torch.Tensor, k: int) -> torch.Tensor:
        """x Phi^k (a gather: several times faster than indexing along the last axis)."""
        return torch.gather(x, -1, self.idx(-k).expand(x.shape))

    def rcirc(self, x: torch.Tensor, spec: torch.Tensor) -> torch.Tensor:
        """x C(spec): each row's spectrum times conj(spec)."""
        return torch.fft.irfft(torch.fft.rfft(x) * torch.conj(spec), n=self.d)

    def pcp_index(self, a: int, b: int) -> torch.Tensor:
        """``ix`` with (Phi^a C(v) Phi^b)[r, c] = v[ix[r, c]] (cached)."""
        ix = self._pcp_index.get((a, b))
        if ix is None:
            ix = (self.idx(a)[:, None] - self.idx(-b)[None, :]) % self.d
            self._pcp_index[(a, b)] = ix
        return ix

    def pcp(self, v: torch.Tensor, a: int, b: int) -> torch.Tensor:
        """Phi^a C(v) Phi^b as a dense matrix ((..., d) vectors give (..., d, d))."""
        ix = self.pcp_index(a, b)
        shape = (*v.shape[:-1], self.d, self.d)
        return torch.gather(v[..., None, :].expand(shape), -1, ix.expand(shape))

    def _add(self, name: str, value: torch.Tensor) -> None:
        acc = getattr(self, name)
        if self.grad:
            setattr(self, name, acc + value)
        else:
            acc += value

    # -- updates ----------------------------------------------------------------------------

    def initialise(self) -> None:
        """P_left = sum_i [i-1]- [i]- [a_i]-: (Phi [i-1]- [i]- [a]-)^T = ([a]+ [i]+) C_{i-1}."""
        s = self.index_half
        for i in range(1, self.n + 1):
            v = self.word_rows(self.vec.terminal, i - 1)  # (B, d)
            w = self.rphi(self.rcirc(self.pcp(v, 0, 1), s[i]), 1)  # C_a Phi C_i Phi
            inc = torch.fft.rfft(w) * torch.conj(s[i - 1])
            self._add("fl", inc * self.active(i)[:, None, None])

    def update_full(self, i: int, j: int, row: int, pat: torch.Tensor, keep: torch.Tensor):
        """P_left += [i]- [j]- [A]- P_A and P_right += [A']+ [i]+ [j]+ P_A, P_A^T = ``pat``.

        (Phi [i]- [j]- [A]- P_A)^T = P_A^T C_A Phi C_j Phi C_i and
        ([A']+ [i]+ [j]+ P_A)^T = P_A^T Phi^T C_j^T Phi^T C_i^T Phi^T C_A'^T.
        """
        s = self.index_half
        k = keep.to(self.rdtype)[:, None, None]
        x = self.rphi(self.rcirc(pat, self.spectra[row]), 1)
        x = self.rphi(self.rcirc(x, s[j]), 1)
        self._add("fl", torch.fft.rfft(x) * torch.conj(s[i]) * k)
        y = self.rphi(self.rcirc(self.rphi(pat, -1), torch.conj(s[j])), -1)
        y = self.rphi(self.rcirc(y, torch.conj(s[i])), -1)
        self._add("fr", torch.fft.rfft(y) * self.right_spectra[row] * k)

    def update_diag(self, i: int, j: int, rows: torch.Tensor, p: torch.Tensor) -> None:
        """The updates of P_A = diag(p[:, k]) for the nonterminals ``rows``, at once.

        In the transposed layout the P_left part is (sum_A diag(p_A) C_A Phi) C_j Phi C_i:
        row r of the sum is sum_A p_A[r] v_A laid out as a circulant's row (one product and
        one gather). The P_right part is rfft(W^T) (.) (P^T A'^), W = Phi [i]+ [j]+.
        """
        s = self.index_half
        pt = p.transpose(-1, -2)  # (B, d, k)
        b = pt @ self.vec.nonterminal[rows]  # (B, d, d): row r = sum_A p_A[r] v_A
        ix = self.pcp_index(0, 1)
        x = torch.gather(b, -1, ix.expand(b.shape))  # sum_A diag(p_A) C_A Phi
        x = self.rphi(self.rcirc(x, s[j]), 1)
        self._add("fl", torch.fft.rfft(x) * torch.conj(s[i]))
        sw = self._sw.get((i, j))
        if sw is None:  # the cell's updates share it
            inner = self.rphi(self.rcirc(self.pcp(self.vec.index[i], 1, 1), s[j]), 1)
            sw = torch.fft.rfft(inner.T)  # rows of W^T, W = Phi C_i Phi C_j Phi
            self._sw = {(i, j): sw}
        self._add("fr", sw[None] * (pt.to(self.cdtype) @ self.right_spectra[rows]))

    # -- Algorithm 2 --------------------------------------------------------------------------

    def unary_spectrum(self, i: int) -> torch.Tensor:
        """rfft(Yt Phi^T) with Y = [i]+ [i-1]+ P_left: Mt_A = irfft(it * spec(R_u^A))."""
        s = self.index_half
        t1 = torch.fft.irfft(self.fl * s[i - 1], n=self.d)  # (C_{i-1} Phi P_left)^T
        yt = self.rcirc(self.rphi(t1, -1), torch.conj(s[i]))  # Yt = t1 Phi^T C_i^T
        return torch.fft.rfft(self.rphi(yt, -1))

    def binary_h(self, i: int, j: int) -> torch.Tensor:
        """H[r, f] = FR[r, f] conj(Yhat[f, r]), Y = [j]- [i]+ P_left: diag(Y R P_right)
        = Re(H coef_R)."""
        s = self.index_half
        yt = self.rphi(torch.fft.irfft(self.fl * (torch.conj(s[j]) * s[i]), n=self.d), 1)
        yhat = torch.fft.rfft(yt.transpose(-1, -2))  # rows of Y, (B, d, h)
        return self.fr * torch.conj(yhat)

    def group(self, step: Step) -> int | None:
        # a unary detection's P_A is a d x d matrix per sentence: one at a time
        return 1 if step == S.UNARY else None

    def read(self, i: int, j: int, step: Step) -> None:
        if step == S.UNARY:
            self._it = self.unary_spectrum(j)  # one spectrum of Yt Phi^T serves every A
        else:
            self._h = self.binary_h(i, j)

    def detect(self, i: int, j: int, step: Step, ks: slice) -> Detections:
        if step == S.UNARY:
            mt = torch.fft.irfft(self._it * self.unary_spectra[ks.start], n=self.d)
            diag = torch.diagonal(mt, dim1=-2, dim2=-1)  # (B, d)
            arg = diag.mean(-1, keepdim=True)
            if self.opt.unary_mask:
                p = self.sigmoid(diag)[:, None, :]  # (B, 1, d)
                return Detections(arg, p.mean(-1), p.abs().amax(-1), p)
            pat = self.sigmoid(mt)  # P_A^T
            means = torch.diagonal(pat, dim1=-2, dim2=-1).mean(-1, keepdim=True)
            return Detections(arg, means, pat.abs().amax((-2, -1))[:, None], pat)
        if self.opt.order == "cell":
            diags = (self._h @ self.binary_w[ks].T).real.transpose(-1, -2)  # (B, k, d)
        else:
            diags = (self._h @ self.binary_w[ks.start]).real[:, None, :]  # (B, 1, d)
        p = self.sigmoid(diags)
        return Detections(diags.mean(-1), p.mean(-1), p.amax(-1), p)

    def write(self, i: int, j: int, step: Step, ks: slice, det: Detections, keep: Any) -> None:
        if step == S.BINARY:
            self.update_diag(i, j, self.binary_rows[ks], det.values * keep[..., None])
        elif self.opt.unary_mask:
            self.update_diag(i, j, self.unary_rows[ks], det.values * keep[..., None])
        else:
            self.update_full(i, j, int(self.st.unary[ks.start]), det.values, keep[:, 0])

    # -- decoding and the dense accumulators --------------------------------------------------

    def statistics(self) -> torch.Tensor:
        """The decoder statistics of every cell, (B, n, n + 1, N)."""
        d = self.d
        if self.opt.decoder == "entry":
            return self.entry_statistics(torch.fft.irfft(self.fl[:, 0, :], n=d))
        # tr(C_A Phi W), W = C_j Phi C_i Phi P_left: with Xt = Wt Phi^T (the transpose of
        # Phi W), tr(C_A Phi W) = sum_m v_A[-m] sums[m], sums[m] = sum_k Xt[k, (k + m) mod d]
        s = self.index_half
        nn = len(self.st.nonterminals)
        out = torch.zeros((self.B, self.n, self.n + 1, nn), dtype=self.rdtype, device=self.dev)
        ct = torch.fft.irfft(torch.conj(self.spectra), n=d).T / d  # c_A[m] = v_A[-m]
        for i in range(self.n):
            zt = self.rphi(torch.fft.irfft(self.fl * s[i], n=d), -1)  # (Phi C_i Phi P_left)^T
            zhat = torch.fft.rfft(zt)
            for j in range(i + 1, self.n + 1):
                xt = self.rphi(torch.fft.irfft(zhat * s[j], n=d), -1)
                out[:, i, j, :] = self._wrapped_diagonal_sums(xt) @ ct
        return out

    def _wrapped_diagonal_sums(self, xt: torch.Tensor) -> torch.Tensor:
        """sums[..., m] = sum_k xt[..., k, (k + m) mod d].

        A strided view of [xt, xt] is faster forward; a gather has the faster backward.
        """
        d = self.d
        if self.grad:
            if self._wrap is None:
                self._wrap = (self.idx(0)[:, None] + self.idx(0)[None, :]) % d
            ix = self._wrap
            return torch.gather(xt, -1, ix.expand(xt.shape)).sum(-2)
        xc = torch.cat((xt, xt), dim=-1)
        return xc.as_strided((self.B, d, d), (2 * d * d, 1, 2 * d + 1)).sum(-1)

    def dense(self) -> tuple[torch.Tensor, torch.Tensor]:
        d = self.d
        p_left = self.rphi(torch.fft.irfft(self.fl, n=d), 1).transpose(-1, -2)
        return p_left, torch.fft.irfft(self.fr, n=d).transpose(-1, -2)


# -- the entry points ----------------------------------------------------------------------


def check_device(device: Any) -> torch.device:
    """``device`` as a :class:`torch.device` that PyTorch can compute on here (None: the CPU).

    Checked without allocating anything on a CUDA device: it must be available to PyTorch
    (``torch.cuda.is_available()``), and its index, if given, one of its devices.

    Parameters
    ----------
    device : torch.device or str or None

    Returns
    -------
    torch.device

    Raises
    ------
    ValueError
        For a name PyTorch does not know, a CUDA device when PyTorch has no CUDA here (a CPU
        build, no GPU, no driver) or has fewer devices than the index, an MPS device that
        is not available, the meta device, or another device PyTorch cannot allocate on.

    Examples
    --------
    >>> check_device(None)
    device(type='cpu')
    """
    if device is None:
        return torch.device("cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise ValueError(
            f"unknown device {device!r}: give a PyTorch device such as 'cpu', 'cuda' or 'cuda:1'"
        ) from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(
                f"device {str(dev)!r}: CUDA is not available to PyTorch {torch.__version__} "
                "here (torch.cuda.is_available() is False: a CPU build of PyTorch, or no GPU "
                "or driver): use device 'cpu', or run on a machine with a GPU and a CUDA "
                "build of PyTorch"
            )
        count = torch.cuda.device_count()
        if dev.index is not None and dev.index >= count:
            raise ValueError(
                f"device {str(dev)!r}: PyTorch sees {count} CUDA device(s) here, numbered "
                f"0 to {count - 1}"
            )
    elif dev.type == "mps":
        if not torch.backends.mps.is_available():
            raise ValueError(f"device {str(dev)!r}: MPS is not available to PyTorch here")
    elif dev.type == "meta":
        raise ValueError("device 'meta' holds no data, so nothing can be parsed on it")
    elif dev.type != "cpu":
        try:
            torch.empty(0, device=dev)
        except (RuntimeError, AssertionError, NotImplementedError) as exc:
            raise ValueError(f"device {str(dev)!r}: PyTorch cannot use it here ({exc})") from None
    return dev


def parse(
    vectors: SymbolVectors,
    structure: RuleStructure,
    sentences: Sequence[Sequence[int]],
    options: DCYKOptions,
    *,
    unary_weights: torch.Tensor | None = None,
    binary_weights: torch.Tensor | None = None,
    decode: bool = True,
    dense: bool = False,
    record: bool = False,
    on_progress: Callable[[int], None] | None = None,
    g_cache: dict | None = None,
    terminal_weights: torch.Tensor | None = None,
    preterminal_scores: torch.Tensor | None = None,
) -> TorchParse:
    """Parse a batch of sentences with D-CYK (the paper's Algorithms 2, 3 and 4) in torch.

    Differentiable with respect to every tensor of ``vectors`` (but ``perm``) and the rule
    weights, wherever ``prune`` does not cut (an update whose gate is at most ``prune`` is
    skipped, as in the numpy engine: use ``prune=0`` where gradients must be exact).

    Parameters
    ----------
    vectors : SymbolVectors
        The symbol vectors (float32 or float64) and the permutation; the index vectors
        must cover 0..n for the longest sentence.
    structure : RuleStructure
        The grammar (:func:`rule_structure`); the vectors' rows follow its order.
    sentences : sequence of sequences of int
        Each sentence as the rows of its words in ``structure.terminals`` (at least one word).
    options : DCYKOptions
        The resolved options (``gate``, ``decoder``, ``unary_mask``, ``order``,
        ``encoding``, ``beta``, ``threshold``, ``prune``), as :func:`fastdcyk.dcyk`
        resolves them (:func:`fastdcyk.options.resolve`). ``encoding="roles"``
        needs ``vectors.right``.
    unary_weights : Tensor, (number of rules A -> a,), optional
        A weight per unary rule (grammar order): R_u^A = sum w_r [a]+. Default all 1.
    binary_weights : Tensor, (number of rules A -> B C,), optional
        A weight per binary rule: R_b^A = sum w_r [B]+ [C']-. Default all 1.
    decode : bool, default True
        Compute the decoder statistics.
    dense : bool, default False
        Also return P_left and P_right.
    record : bool, default False
        Keep the log of every detection, as ``DCYKResult.log``.
    on_progress : callable, optional
        Called with the number of detections made, as they are made (a progress bar).
    g_cache : dict, optional
        The trace gate's G_k matrices (docs/method.md, section 4.4) by span index k, kept
        across calls: pass the same dict to parses with the same index vectors, permutation,
        dtype and device (never under autograd, where it is not used).
    terminal_weights : Tensor, (B, n, T), optional
        Soft terminals: per sentence and position, a weight per terminal (the rows of
        ``structure.terminals``; a distribution, typically), for the longest sentence's n
        (a shorter sentence's positions past its end are ignored). The unary step writes
        the mixture sum_a p_a [a]- instead of the word's [a]- (docs/method.md, section 11);
        one-hot weights give the words' parse. ``sentences`` then gives only the lengths.
        The vectors' dtype and device; differentiable.
    preterminal_scores : Tensor, (B, n, U), optional
        Soft preterminals (clean-up gate only): per sentence and position, a score in
        [0, 1] of every nonterminal with a rule A -> a (the rows ``structure.unary``, the
        grammar's :attr:`~fastdcyk.cfg.grammar.Grammar.preterminals`), taken as the unary
        step's detection and gate: the scores above the candidate level are written with
        the score as amplitude (not through sigma, which would flatten the gradient of a
        confident score) and read back as any cell. Nothing is written for the words.
        ``sentences`` gives only the lengths. Differentiable.

    Returns
    -------
    TorchParse
    """
    if not sentences:
        raise ValueError("no sentences to parse")
    lengths = [len(s) for s in sentences]
    if min(lengths) < 1:
        raise ValueError("empty sentence: D-CYK needs at least one word")
    n = max(lengths)
    if vectors.index.shape[0] < n + 1:
        raise ValueError(
            f"the index vectors cover 0..{vectors.index.shape[0] - 1}, the longest sentence "
            f"needs 0..{n}"
        )
    if options.encoding == "roles" and vectors.right is None:
        raise ValueError("encoding='roles' needs the right-child role vectors (vectors.right)")
    if options.encoding != "roles":
        vectors = SymbolVectors(
            vectors.terminal, vectors.nonterminal, None, vectors.index, vectors.perm
        )
    soft = _soft_input(
        "terminal_weights", terminal_weights, vectors, (len(lengths), n, len(structure.terminals))
    )
    pre = _soft_input(
        "preterminal_scores", preterminal_scores, vectors, (len(lengths), n, len(structure.unary))
    )
    if soft is not None and pre is not None:
        raise ValueError("give terminal_weights or preterminal_scores, not both")
    if pre is not None and options.gate != "cleanup":
        raise ValueError(
            f"preterminal_scores need the clean-up gate (variant='cleanup'), not gate="
            f"{options.gate!r}: the other gates read the unary step from the table; give "
            "terminal_weights instead"
        )
    padded = [list(s) + [0] * (n - len(s)) for s in sentences]
    words = torch.as_tensor(padded, dtype=torch.int64, device=vectors.device)
    args = (vectors, structure, options, words, lengths, unary_weights, binary_weights, record)
    args += (soft, pre)
    if options.gate == "trace":
        p: _Base = _TraceParser(*args, g_cache=g_cache)
    elif options.gate == "cleanup":
        p = _CleanupParser(*args, g_cache=g_cache)
    else:
        p = _DenseParser(*args)
    timings: dict[str, float] = {}
    S.run(p, p.n, options.order, p.ledger, on_progress=on_progress, timings=timings)
    t2 = time.perf_counter()
    stats = p.statistics() * p.cell_mask()[..., None] if decode else None
    t3 = time.perf_counter()
    p_left = p_right = None
    if dense:
        p_left, p_right = p.dense()
    if stats is not None and not bool(torch.isfinite(stats).all()):
        raise FloatingPointError(
            "non-finite values appeared in D-CYK's accumulators (the decoder statistics): "
            "use float64, smaller vectors or a smaller beta"
        )
    return TorchParse(
        statistics=stats,
        readouts=p.readout_tensor(),
        mask=p.cell_mask(),
        lengths=lengths,
        p_left=p_left,
        p_right=p_right,
        counts=p.ledger.count_dicts(),
        log=p.ledger.log_lists(),
        timings={**timings, "decode": t3 - t2},
    )


def _soft_input(
    name: str, x: torch.Tensor | None, vectors: SymbolVectors, shape: tuple[int, int, int]
) -> torch.Tensor | None:
    """A soft input checked: a tensor of ``shape`` with the vectors' dtype and device,
    finite."""
    if x is None:
        return None
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if tuple(x.shape) != shape:
        raise ValueError(
            f"{name} has shape {tuple(x.shape)}; expected {shape} (sentences, the longest "
            "sentence's length, symbols)"
        )
    if x.dtype != vectors.dtype or x.device != vectors.device:
        raise ValueError(
            f"{name} is {x.dtype} on {x.device}, the vectors {vectors.dtype} on "
            f"{vectors.device}: convert it with .to(dtype=..., device=...)"
        )
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name} holds NaN or infinite values")
    return x


def statistics_of(stats: torch.Tensor, n: int, nonterminals: Sequence[str]) -> Statistics:
    """The :class:`~fastdcyk.engine.decode.Statistics` of one sentence of n words from its
    (n_max, n_max + 1, N) statistics tensor."""
    values = stats[:n, : n + 1].detach().to("cpu", torch.float64).numpy()
    return Statistics(values, nonterminals)


def _free_bytes(device: torch.device) -> int:
    """Bytes free on ``device`` (the CPU: what the OS has left for this process; 0 when
    unknown)."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    if device.type == "cpu":
        return _memory.available_memory() or 0
    return 0


#: Per codebook, the G_k matrices of the trace gate by (device, dtype): a codebook's index
#: vectors and permutation never change, so later parses with it reuse them (within
#: :data:`G_CACHE_BYTES`, as the numpy engine keeps its work buffers in the codebook).
_G_CACHES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _codebook_g_cache(codebook: Codebook, vec: SymbolVectors) -> dict:
    per = _G_CACHES.setdefault(codebook, {})
    return per.setdefault((str(vec.device), vec.dtype), {})


def release_caches(codebook: Codebook | None = None) -> None:
    """Drop the G_k matrices kept for ``codebook`` (for every codebook when None)."""
    if codebook is None:
        _G_CACHES.clear()
    else:
        _G_CACHES.pop(codebook, None)


def parse_sentences(
    grammar: Grammar,
    sentences: Sequence[tuple[str, ...]],
    codebook: Codebook,
    options: DCYKOptions,
    *,
    device: Any = None,
    decode: bool = True,
    dense: bool = True,
    record: bool = False,
    on_progress: Callable[[int], None] | None = None,
) -> list[dict[str, Any]]:
    """Parse checked sentences with a codebook in one batch; the fields of each result.

    The backend of ``dcyk(..., backend="torch")`` and :func:`fastdcyk.engine.batch.dcyk_batch`:
    the sentences (tuples of terminals of the grammar, checked as :func:`fastdcyk.dcyk`
    checks them) and the options are already resolved. Runs without autograd.

    Parameters
    ----------
    grammar : Grammar
    sentences : sequence of tuple of str
    codebook : Codebook
        Its vectors and permutation, copied to ``device`` in its dtype.
    options : DCYKOptions
    device : torch.device or str, optional
        Default: the CPU.
    decode, record, on_progress
        As for :func:`parse`.
    dense : bool, default True
        Compute P_left and P_right (two d x d matrices per sentence, copied to the host).
        ``dense=False`` leaves them out (None in the fields, which then make no
        :class:`~fastdcyk.engine.DCYKResult`): for callers that need the charts only, such as
        the experiment grid (:mod:`fastdcyk.experiments`). Non-finite values are then
        caught in the decoder statistics only (``decode=True``).

    Returns
    -------
    list of dict
        Per sentence, the keyword arguments of :class:`fastdcyk.engine.DCYKResult`
        (``p_left`` and ``p_right`` as numpy arrays of the codebook's dtype, or None when
        ``dense`` is False).
    """
    st = rule_structure(grammar)
    n = max(len(s) for s in sentences)
    with torch.no_grad():
        vec = symbol_vectors(codebook, st, n, encoding=options.encoding, device=device)
        kw: dict[str, Any] = {
            "decode": decode,
            "dense": dense,
            "record": record,
            "on_progress": on_progress,
        }
        if any(has_soft(s) for s in sentences):
            # soft terminals (docs/method.md, section 11): every sentence as weights
            weights = np.zeros((len(sentences), n, len(st.terminals)))
            for b, s in enumerate(sentences):
                weights[b, : len(s)] = terminal_weights(s, st.terminals, one_hot=True)
            kw["terminal_weights"] = torch.as_tensor(weights, dtype=vec.dtype, device=vec.device)
            ids = [[0] * len(s) for s in sentences]
        else:
            ids = [st.terminal_ids(s) for s in sentences]
        res = parse(vec, st, ids, options, g_cache=_codebook_g_cache(codebook, vec), **kw)
        t0 = time.perf_counter()
        p_left = p_right = None
        if dense:
            p_left = res.p_left.cpu().numpy()
            p_right = res.p_right.cpu().numpy()
    for name, m in (("P_left", p_left), ("P_right", p_right)):
        if m is not None and not np.all(np.isfinite(m)):
            raise FloatingPointError(
                f"non-finite values appeared in D-CYK's accumulators ({name} after the parse): "
                "use float64, smaller vectors or a smaller beta"
            )
    out = []
    for b, words in enumerate(sentences):
        stats = chart = None
        if decode:
            stats = statistics_of(res.statistics[b], len(words), st.nonterminals)
            chart = chart_from_statistics(
                stats, len(words), beta=options.beta, threshold=options.threshold
            )
        timings = dict(res.timings)
        timings["decode"] += time.perf_counter() - t0
        out.append(
            {
                "words": tuple(words),
                "grammar": grammar,
                "codebook": codebook,
                "options": options,
                "p_left": _host_matrix(p_left, b, codebook.dtype),
                "p_right": _host_matrix(p_right, b, codebook.dtype),
                "statistics": stats,
                "chart": chart,
                "counts": res.counts[b],
                "timings": timings,
                "log": None if res.log is None else res.log[b],
            }
        )
    return out


def _host_matrix(batch: np.ndarray | None, b: int, dtype: np.dtype) -> np.ndarray | None:
    """Sentence ``b``'s matrix of a (B, d, d) host array, as its own C array (None: None)."""
    return None if batch is None else np.array(batch[b], dtype=dtype, order="C")

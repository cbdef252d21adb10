"""What the torch parsers share (:mod:`fastdcyk.engine.backends.torch.driver`): the symbol vectors
as tensors, the rule spectra built from them, the torch array namespace of the shared code
(:mod:`fastdcyk.engine.core.arrays`) and the parsers' base class. Imported through
:mod:`fastdcyk.engine.backends.torch.driver`, which says how to install PyTorch when it is
missing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from fastdcyk.engine.core import schedule
from fastdcyk.engine.core.arrays import ArrayNamespace, sigmoid
from fastdcyk.engine.core.rules import RuleStructure, parseval_weights
from fastdcyk.engine.core.schedule import Step
from fastdcyk.hrr import memory as system_memory
from fastdcyk.options import DCYKOptions

if TYPE_CHECKING:  # pragma: no cover
    from fastdcyk.hrr.codebook import Codebook

__all__ = [
    "COMPLEX",
    "SymbolVectors",
    "TorchNamespace",
    "TorchParse",
    "TorchParser",
    "free_bytes",
    "symbol_vectors",
]

COMPLEX = {torch.float32: torch.complex64, torch.float64: torch.complex128}


# -- the symbol vectors -----------------------------------------------------------------------


@dataclass
class SymbolVectors:
    """The symbol vectors and the permutation of a codebook, as torch tensors.

    Attributes
    ----------
    terminal : Tensor, (T, d)
        One row per terminal of the :class:`~fastdcyk.engine.core.rules.RuleStructure`.
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
        Its vectors and permutation are copied (the same numbers the numpy backend uses).
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
    """What :func:`~fastdcyk.engine.backends.torch.driver.parse` returns for a batch of B sentences
    of at most n words.

    Attributes
    ----------
    statistics : Tensor, (B, n, n + 1, N), or None
        The decoder statistic of (i, j, A) at ``[b, i, j, A]`` (~1 for a triple in the
        table); 0 outside the chart of sentence b (see ``mask``). None without decoding.
    readouts : Tensor, (B, n, n + 1, N), or None
        The gate's argument of every detection: tr(M) / d for the trace gate, the mean of
        M's diagonal for the entrywise gate (M the detection matrix of docs/method.md,
        section 2); 0 where no detection ran. None when not asked for (``readouts=False``).
    mask : Tensor of bool, (B, n, n + 1)
        The cells (i, j), 0 <= i < j <= n_b, of each sentence.
    lengths : list of int
    p_left, p_right : Tensor, (B, d, d), or None
        The accumulators (when asked for); ``p_right`` is None also where the gate never
        writes it (the clean-up gate: P_right is 0).
    later : TorchParser or None
        With ``dense="later"``: the parser, whose ``dense()`` gives the accumulators when
        called (its tables checked finite by the parse); None otherwise.
    counts : list of dict
        Per sentence: detections, updates (applied) and pruned, as the numpy backend counts.
    log : list of list of dict, or None
        Per sentence, every detection (``record=True``), as ``DCYKResult.log``.
    timings : dict
        Seconds spent in the unary step, the binary step and the decoder (whole batch).
    """

    statistics: torch.Tensor | None
    readouts: torch.Tensor | None
    mask: torch.Tensor
    lengths: list[int]
    p_left: torch.Tensor | None
    p_right: torch.Tensor | None
    counts: list[dict[str, int]]
    log: list[list[dict[str, Any]]] | None
    timings: dict[str, float]
    later: Any = None


# -- shared machinery ------------------------------------------------------------------------


class TorchNamespace(ArrayNamespace):
    """The primitives of the shared code (:mod:`fastdcyk.engine.core.arrays`) in torch, on one
    device, out of place (autograd sees every step). Index arrays come as numpy arrays;
    the read-only ones (a grammar's :class:`~fastdcyk.engine.core.rules.RuleStructure`) are copied
    to the device once."""

    name = "torch"

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self._indices: dict[int, tuple[np.ndarray, torch.Tensor]] = {}

    def index(self, a: np.ndarray) -> torch.Tensor:
        """A numpy index array on the device: kept for a read-only array that owns its data
        (a grammar's structure), copied for any other read-only one (torch writes no
        read-only array), shared where the device is the CPU."""
        if a.flags.writeable:
            return torch.as_tensor(a, device=self.device)
        if a.base is not None:
            return torch.tensor(a, device=self.device)
        got = self._indices.get(id(a))
        if got is None or got[0] is not a:
            got = (a, torch.tensor(a, device=self.device))
            self._indices[id(a)] = got
        return got[1]

    def asfloat(self, x: Any) -> torch.Tensor:
        return x

    def logistic(self, z: Any) -> torch.Tensor:
        return torch.sigmoid(z)

    def index_add(self, target: Any, index: Any, values: Any) -> torch.Tensor:
        shape = (*values.shape[:-1], target.shape[-1])
        return target.expand(shape).index_add(-1, self.index(index), values)

    def zeros(self, shape: tuple[int, ...], like: Any) -> torch.Tensor:
        return torch.zeros(shape, dtype=like.dtype, device=like.device)

    def add_to_diagonal(self, m: Any, values: Any) -> torch.Tensor:
        return m + torch.diag_embed(values.expand(m.shape[:-1]))

    def cholesky(self, m: Any) -> tuple[torch.Tensor, torch.Tensor]:
        factor, info = torch.linalg.cholesky_ex(m)
        return factor, info == 0

    def cho_solve(self, factor: Any, y: Any, rows: Any = None) -> torch.Tensor:
        used = factor if rows is None else factor[rows]
        return torch.cholesky_solve(y[..., None], used).squeeze(-1)

    def diagonal(self, m: Any) -> torch.Tensor:
        return torch.diagonal(m, dim1=-2, dim2=-1)

    def nonzero(self, mask: Any) -> torch.Tensor:
        return mask.nonzero().flatten()

    def assemble(self, like: Any, parts: Any) -> torch.Tensor:
        out = torch.zeros_like(like)
        for idx, values in parts:
            out = out.index_copy(0, idx, values)
        return out

    def all(self, mask: Any) -> bool:
        return bool(mask.all())

    def eigh(self, m: Any) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.linalg.eigh(m)

    def matvec(self, m: Any, v: Any) -> torch.Tensor:
        return (m @ v[..., None]).squeeze(-1)

    def maximum(self, x: Any, floor: Any) -> torch.Tensor:
        if isinstance(floor, torch.Tensor):
            return torch.maximum(x, floor)
        return x.clamp(min=floor)

    def where(self, cond: Any, x: Any, y: Any) -> torch.Tensor:
        if not isinstance(y, torch.Tensor):
            y = torch.full_like(x, y)
        return torch.where(cond, x, y)

    def take(self, x: Any, index: np.ndarray) -> torch.Tensor:
        return x[..., self.index(index)]

    def pad_zero(self, x: Any) -> torch.Tensor:
        return torch.cat((x, x.new_zeros((*x.shape[:-1], 1))), -1)

    def concat(self, parts: Any) -> torch.Tensor:
        return torch.cat(list(parts), -1)

    def int_counts(self, batch: int) -> torch.Tensor:
        return torch.zeros((3, batch), dtype=torch.int64, device=self.device)

    def as_int(self, mask: Any) -> torch.Tensor:
        return mask.to(torch.int64)

    def flags(self, keep: Any, check: Any) -> tuple[bool, bool]:
        any_kept, finite = torch.stack((keep.any(), torch.isfinite(check).all())).tolist()
        return bool(any_kept), bool(finite)

    def finite_flag(self, check: Any) -> torch.Tensor:
        return torch.isfinite(check).all()

    def read_flags(self, flags: Sequence[Any]) -> list[bool]:
        return [bool(f) for f in torch.stack(list(flags)).tolist()]

    def cell_flags(self, check: Any) -> torch.Tensor:
        return torch.isfinite(check).all(-1).all(0)

    def tolist(self, x: Any) -> list:
        if isinstance(x, torch.Tensor):
            return x.detach().cpu().tolist()
        return np.asarray(x).tolist()


class TorchParser(schedule.CellParser):
    """Tables, masks, counts, readouts and the detection log of one batched parse."""

    #: Whether the parse returns P_left and P_right (set by the driver; a parser may skip
    #: work that only they need when it is False).
    wants_dense: bool = True

    #: Whether ``dense()`` may be called after the parse (the spectral parsers: theirs).
    defers_dense: bool = False

    #: Whether, on a device other than the CPU, the cells' finiteness checks may be read
    #: at the end of the parse (:class:`fastdcyk.engine.core.schedule.Ledger`'s
    #: ``defer_checks``): a parser whose cells read nothing back from the device, and
    #: whose updates of 0 change nothing.
    defers_checks: bool = False

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
        self.vec, self.structure, self.opt = vec, st, opt
        # soft inputs: (B, n, T) terminal weights, or (B, n, U) preterminal scores
        self.soft, self.pre = soft, pre
        self.d = d = vec.d
        self.half = d // 2 + 1
        self.rdtype = vec.dtype
        if self.rdtype not in COMPLEX:
            raise TypeError(f"the symbol vectors must be float32 or float64, not {self.rdtype}")
        self.cdtype = COMPLEX[self.rdtype]
        self.device = vec.device
        self.words = words  # (B, n) terminal rows, padded with 0
        self.lengths = lengths
        self.batch, self.n = len(lengths), max(lengths)
        self.lengths_tensor = torch.as_tensor(lengths, device=self.device)
        self._active_by_end: torch.Tensor | None = None
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
        self.xp = TorchNamespace(self.device)
        self.parseval = torch.as_tensor(parseval_weights(d), dtype=self.rdtype, device=self.device)
        self._powers: dict[int, torch.Tensor] = {
            0: torch.arange(d, device=self.device),
            1: vec.perm,
        }
        inv = torch.empty_like(vec.perm)
        inv[vec.perm] = torch.arange(d, device=self.device)
        self._powers[-1] = inv
        self._tables(unary_weights, binary_weights)
        self.ledger = schedule.Ledger(
            self.xp,
            st.nonterminals,
            lengths,
            opt.prune,
            record=record,
            readouts=True,
            # not the bound method: the ledger would refer back to the parser, and that
            # cycle would keep every tensor of the parse (under autograd its whole graph,
            # gigabytes) alive until Python's cyclic collector happened to run
            active=lambda j, lengths=self.lengths_tensor: lengths >= j,
            defer_checks=self.defers_checks and self.device.type != "cpu",
        )

    def _tables(self, uw: torch.Tensor | None, bw: torch.Tensor | None) -> None:
        """The rule spectra (docs/method.md, section 4.1) from the vectors, with torch.fft."""
        self.unary_weights, self.binary_weights = uw, bw
        st, vec, dev = self.structure, self.vec, self.device
        rfft = torch.fft.rfft
        self.spectra = rfft(vec.nonterminal)  # (N, h)
        self.right_spectra = self.spectra if vec.right is None else rfft(vec.right)
        self.index_half = rfft(vec.index)  # (n + 1, h)
        self.unary_rows = self.xp.index(st.unary)
        self.binary_rows = self.xp.index(st.binary)
        if len(st.unary):
            tspec = rfft(vec.terminal)
            terms = tspec[self.xp.index(st.unary_rule_terminal)]
            if uw is not None:
                terms = terms * uw.to(self.rdtype)[:, None]
            rows = self.xp.index(st.unary_rule_row)
            zero = torch.zeros((len(st.unary), self.half), dtype=self.cdtype, device=dev)
            self.unary_spectra = zero.index_add(0, rows, terms)
        if len(st.binary):
            left = self.spectra[self.xp.index(st.binary_rule_left)]
            right = self.right_spectra[self.xp.index(st.binary_rule_right)]
            prod = left * torch.conj(right)
            if bw is not None:
                prod = prod * bw.to(self.rdtype)[:, None]
            rows = self.xp.index(st.binary_rule_row)
            zero = torch.zeros((len(st.binary), self.half), dtype=self.cdtype, device=dev)
            self.binary_spectra = zero.index_add(0, rows, prod)

    def word_rows(self, table: torch.Tensor, i: int) -> torch.Tensor:
        """The row of ``table`` (one per terminal) of each sentence's word i (0-based),
        (B, ...): with soft terminals, the rows mixed by the word's weights."""
        if self.soft is None:
            return table[self.words[:, i]]
        return self.soft[:, i].to(table.dtype) @ table

    def permutation_index(self, k: int) -> torch.Tensor:
        """The index ``ix`` with ``(Phi^k x)[r] = x[ix[r]]``."""
        got = self._powers.get(k)
        if got is None:
            base = self._powers[1 if k > 0 else -1]
            got = base[self.permutation_index(k - (1 if k > 0 else -1))]
            self._powers[k] = got
        return got

    def active(self, j: int) -> torch.Tensor:
        """(B,) bool: the sentences that have the cells (i, j) (a view of
        :meth:`ends_active`)."""
        return self.ends_active()[:, j]

    def ends_active(self) -> torch.Tensor:
        """(B, n + 1) bool: whether each sentence has the cells ending at each j, made once a
        parse on the device (a view of it per cell or width: no operation each)."""
        if self._active_by_end is None:
            ends = torch.arange(self.n + 1, device=self.device)
            self._active_by_end = self.lengths_tensor[:, None] >= ends[None, :]
        return self._active_by_end

    def sigmoid(self, x: torch.Tensor) -> torch.Tensor:
        """sigma with the options' beta (:func:`fastdcyk.engine.core.arrays.sigmoid`)."""
        return sigmoid(x, self.opt.beta, self.xp)

    # -- readouts, counts and the log as the caller wants them -----------------------------

    def cell_mask(self) -> torch.Tensor:
        i = torch.arange(self.n, device=self.device)[:, None]
        j = torch.arange(self.n + 1, device=self.device)[None, :]
        return (i < j)[None] & (j[None] <= self.lengths_tensor[:, None, None])

    def readout_tensor(self) -> torch.Tensor:
        shape = (self.batch, self.n, self.n + 1, len(self.structure.nonterminals))
        out = torch.zeros(shape, dtype=self.rdtype, device=self.device)
        for i, j, rows, vals in self.ledger.readouts:
            out[:, i, j, self.xp.index(np.asarray(rows))] = vals.to(self.rdtype)
        return out * self.cell_mask()[..., None]

    # -- the schedule's protocol (fastdcyk.engine.core.schedule.CellParser) -----------------------

    def rows(self, step: Step) -> np.ndarray:
        return self.structure.unary if step == schedule.UNARY else self.structure.binary

    def entry_statistics(self, col: torch.Tensor) -> torch.Tensor:
        """The entry decoder (Algorithm 4) of every cell from column 0 of Phi P_left.

        (C_A Phi C_j Phi C_i (Phi P_left))[0, 0] is row 0 of C_A Phi against
        C_j Phi C_i times the column: every A of a cell at once with one product.
        Returns (B, n, n + 1, N).
        """
        n, d = self.n, self.d
        s = self.index_half
        inner = torch.fft.irfft(torch.fft.rfft(col)[:, None, :] * s[None, :n], n=d)
        ph = torch.fft.rfft(inner[..., self.permutation_index(1)])  # Phi (C_i col)
        u = torch.fft.irfft(ph[:, :, None, :] * s[None, None, :, :], n=d)  # (B, n, n+1, d)
        cols = torch.fft.irfft(torch.conj(self.spectra), n=d)  # first columns of C_A^T
        rows = cols[:, self.permutation_index(-1)]  # row 0 of C_A Phi
        return u @ rows.T


def free_bytes(device: torch.device) -> int:
    """Bytes free on ``device`` (the CPU: what the OS has left for this process; 0 when
    unknown)."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    if device.type == "cpu":
        return system_memory.available_memory() or 0
    return 0


def all_finite(x: torch.Tensor) -> bool:
    """Whether every value of ``x`` is finite, in one reduction where it is: a sum is
    finite only if each of its terms is (NaN and infinities propagate, and inf - inf is
    NaN), so a finite sum decides at once; a non-finite one (a term, or the sum
    overflowing) is decided by the elementwise test. On the CPU ``torch.isfinite`` of a
    batch's table (32 x 129 x 256 complex64) takes about 20 times the sum's time."""
    x = x.detach()
    return bool(torch.isfinite(x.sum())) or bool(torch.isfinite(x).all())

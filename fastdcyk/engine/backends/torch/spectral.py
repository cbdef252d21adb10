"""The torch backend's table as 2-D half spectra (docs/method.md, section 4.4): the
arithmetic of the scalar gates (trace and clean-up), batched over sentences."""

from __future__ import annotations

from typing import Any

import torch

from fastdcyk.engine.backends.torch.parser import TorchParser, all_finite, free_bytes
from fastdcyk.hrr.buffers import G_CACHE_BYTES, g_cache_slots

__all__ = ["HeldTables", "TorchSpectralParser"]


def _rows(t: torch.Tensor, rows: list[int]) -> torch.Tensor:
    """``t[rows]`` without an index copied from the host: a view where the rows run on by
    one (a span width's cells), else the rows stacked."""
    if rows == list(range(rows[0], rows[0] + len(rows))):
        return t[rows[0] : rows[0] + len(rows)]
    return torch.stack([t[r] for r in rows])


class TorchSpectralParser(TorchParser):
    """A torch parser whose table is kept as 2-D half spectra (docs/method.md, section 4.4),
    batched: the trace and clean-up gates' (the numpy backend's
    :class:`~fastdcyk.engine.backends.numpy.spectral.NumpySpectralParser` in PyTorch).

    ``left_spectrum`` and ``right_spectrum`` are (B, d // 2 + 1, d): rows f <= d/2 of
    (Phi P_left)~^T and of (P_right Phi^T)~ per sentence (ZT and PR), as in the numpy
    backend. With g_A the gates of a cell, S^ = sum_A g_A A^ (S'^ with the right-child
    spectra):

    - update: ZT[f, g] += conj(S^[f] G_j[f, g] i^[g]), PR[f, g] += S'^[f] G_i[f, g] j^[g];
    - binary detection: sum_f R^[f] q[f], q[f] = sum_g ZT[f, g] PR[f, g] conj(j^[g]) i^[g];
    - unary detection and trace decoder: q[f] = sum_g ZT[f, g] G_j[f, g] i^[g].

    Without autograd the element-wise products go through two work buffers, and the unary
    detection of (i - 1, i) and its update share the matrix G_i (.) (i-1)^.

    The G_k = rows f <= d/2 of (Phi C_k Phi)~ cost one real and one complex FFT of a d x d
    matrix each, and more in gathers and fresh allocations here than in the numpy backend's
    kernel; they are shared by the whole batch and kept in a cache of up to a quarter of the
    memory the device has free when the parse starts (at least
    :data:`fastdcyk.hrr.buffers.G_CACHE_BYTES`, at most one per span index: all of them
    under autograd). At d = 6000 a G_k is 144 MB: the numpy backend's 256 MB held two, and
    nearly every cell computed one again (docs/performance.md). Without autograd the cache
    may be the caller's (``g_cache``), so that later parses with the same index vectors and
    permutation reuse it.
    """

    #: Whether the parser keeps P_right (the clean-up gate neither reads nor writes it).
    right = True

    def __init__(self, *args: Any, g_cache: dict | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        shape = (self.batch, self.half, self.d)
        self._left_spectrum: torch.Tensor | None = None  # made when first used
        self.right_spectrum = None
        if self.right:
            self.right_spectrum = torch.zeros(shape, dtype=self.cdtype, device=self.device)
        self.full_index = torch.fft.fft(self.vec.index)  # (n + 1, d)
        d = self.d
        # W = Phi C_k Phi, W[r, c] = v_k[(perm[r] - inv[c]) mod d], is read from the strided
        # (symmetric) view R[a, t] = v_k[(a + t + 1) mod d]: W^T = R[d - 1 - inv][:, perm]
        self._strided_rows = (d - 1) - self.permutation_index(-1)
        #: Whether what the parse caches outlives it (the caller's ``g_cache``).
        self.keeps_cache = g_cache is not None and not self.grad
        self._index_matrices: dict[int | str, Any] = (  # G_k by k, and "grams"
            g_cache if self.keeps_cache else {}
        )
        real = "float64" if self.rdtype == torch.float64 else "float32"
        #: Bytes free on the device when the parse started (what its caches are sized from).
        self.free_at_start = free_bytes(self.device)
        self._slots = g_cache_slots(d, real, self.n, budget=self.free_at_start // 4)
        w = self.parseval.to(self.cdtype)
        self.spectra_w = self.spectra * w / d
        if len(self.structure.unary):
            self.unary_w = self.unary_spectra * w / d
        if len(self.structure.binary):
            self.binary_w = self.binary_spectra * w / d
        #: The accumulators updated in place under autograd too: those that no operation
        #: keeps for the backward pass (a mode names them; out of place otherwise).
        self.in_place: frozenset[str] = frozenset()
        # work buffers (without autograd): a (h, d) matrix, and a (B, h, d) one made when
        # first needed (the clean-up gate's cancelling reads never need it)
        self._work = (
            None if self.grad else torch.empty(shape[1:], dtype=self.cdtype, device=self.device)
        )
        self._batch_buffer: torch.Tensor | None = None

    @property
    def left_spectrum(self) -> torch.Tensor:
        """P_left's accumulator, (B, d // 2 + 1, d): zeros made when first used (a
        cancelling parse that reads from the Gram matrices alone uses it only when P_left
        is asked for)."""
        if self._left_spectrum is None:
            shape = (self.batch, self.half, self.d)
            self._left_spectrum = torch.zeros(shape, dtype=self.cdtype, device=self.device)
        return self._left_spectrum

    @left_spectrum.setter
    def left_spectrum(self, value: torch.Tensor) -> None:
        self._left_spectrum = value

    @property
    def _batch_work(self) -> torch.Tensor | None:
        """The (B, h, d) work buffer (None under autograd), made on first use."""
        if self.grad:
            return None
        if self._batch_buffer is None:
            shape = (self.batch, self.half, self.d)
            self._batch_buffer = torch.empty(shape, dtype=self.cdtype, device=self.device)
        return self._batch_buffer

    def index_matrix(self, k: int) -> torch.Tensor:
        """G_k, from the cache or computed (under autograd every G_k is kept)."""
        g = self._index_matrices.pop(k, None)
        if g is None:
            if not self.grad:  # the least recently used out (the cache's G_k: int keys)
                # (a snapshot, and no error for a key another thread dropped first)
                held = [key for key in list(self._index_matrices) if isinstance(key, int)]
                while len(held) >= self._slots:
                    self._index_matrices.pop(held.pop(0), None)
            v = self.vec.index[k]
            r = torch.cat((v, v))[1:].unfold(0, self.d, 1)
            wt = r.index_select(0, self._strided_rows).index_select(
                1, self.permutation_index(1)
            )  # W^T
            # rfft(W, axis 0) = rfft(W^T, axis 1)^T, then the inverse FFT along the other axis
            g = torch.fft.ifft(torch.fft.rfft(wt, dim=1), dim=0).T.contiguous()
        self._index_matrices[k] = g  # last: the most recently used
        return g

    def index_outer(self, j: int, i: int) -> torch.Tensor:
        """G_j (.) i^ (a column scaling), in the work buffer without autograd."""
        if self._work is None:
            return self.index_matrix(j) * self.full_index[i]
        return torch.mul(self.index_matrix(j), self.full_index[i], out=self._work)

    def index_outers(self, spans: list[tuple[int, int]]) -> torch.Tensor:
        """G_j (.) i^ of every cell (i, j) of ``spans``, (h, C, d): made in one new array
        without autograd (stacked from new products under it). When every G_j is in the
        cache they are stacked into it and scaled in place, two operations for the cells
        together (on a device each operation is a launch); else one product a cell, each
        G_j computed as it comes (no more of them held at once than the cache holds)."""
        if self.grad:
            return torch.stack([self.index_matrix(j) * self.full_index[i] for i, j in spans], 1)
        x = torch.empty((self.half, len(spans), self.d), dtype=self.cdtype, device=self.device)
        if len(spans) > 1 and all(j in self._index_matrices for _, j in spans):
            torch.stack([self.index_matrix(j) for _, j in spans], 1, out=x)
            return x.mul_(_rows(self.full_index, [i for i, _ in spans]))
        for c, (i, j) in enumerate(spans):
            torch.mul(self.index_matrix(j), self.full_index[i], out=x[:, c])
        return x

    def conj_work(self, m: torch.Tensor) -> torch.Tensor:
        """conj(m), in place when ``m`` is the work buffer."""
        return m.conj_physical_() if m is self._work else torch.conj(m)

    def add_outer(
        self, name: str, left: torch.Tensor, m: torch.Tensor, only: list[int] | None = None
    ) -> None:
        """acc += left[b, f] * m[f, g], in place unless autograd needs the old value
        (under autograd, in place only for the accumulators named in :attr:`in_place`).

        ``name``: the accumulator's attribute (``"left_spectrum"``, ``"right_spectrum"``
        or ``"residual"``); ``only``: the sentences b to update (the others' ``left`` is 0),
        or None for all.
        """
        acc = getattr(self, name)
        if self.grad and name not in self.in_place:
            setattr(self, name, torch.addcmul(acc, left[:, :, None], m[None]))
        elif only is None:
            acc.addcmul_(left[:, :, None], m[None])
        else:  # a batch whose updates were mostly pruned: skip the others' passes
            for b in only:
                acc[b].addcmul_(left[b][:, None], m)

    def add_outers(self, name: str, lefts: torch.Tensor, ms: torch.Tensor) -> None:
        """acc[b, f, g] += sum_c lefts[f, b, c] ms[f, c, g]: the updates of several cells
        (``lefts`` (h, B, C), ``ms`` (h, C, d)) in one batched product, in place unless
        autograd needs the old value (as :meth:`add_outer`)."""
        acc = getattr(self, name)
        if self.grad and name not in self.in_place:
            setattr(self, name, torch.baddbmm(acc.transpose(0, 1), lefts, ms).transpose(0, 1))
        else:  # in place through the (h, B, d) view: no (B, h, d) temporary
            acc.transpose(0, 1).baddbmm_(lefts, ms)

    def row_dots(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """sum_g a[..., f, g] b[..., f, g] (through the batch work buffer)."""
        if self._batch_work is None:
            return (a * b).sum(-1)
        return torch.mul(a, b, out=self._batch_work).sum(-1)

    def initialise(self) -> None:
        """P_left = sum_i [i-1]- [i]- [a_i]- (P_right stays 0); with soft terminals
        [a_i]- is the mixture sum_a p_a [a]-, and with preterminal scores nothing is
        written (the unary step takes the scores)."""
        if self.pre is not None:
            return
        words = self.word_lefts()
        size = self.cells_at_once(len(words))
        for c in range(0, len(words), size):  # a few words' writes a batched product
            self.write_lefts(words[c : c + size])

    def write_lefts(self, writes: list[tuple[tuple[int, int], torch.Tensor]]) -> None:
        """P_left += sum over ``writes`` (each a cell (i, j) and its left spectrum (B, h))
        of left (x) conj(G_j (.) i^), in one batched product (:meth:`add_outers`)."""
        m = self.index_outers([span for span, _ in writes])  # G_j (.) i^, (h, C, d)
        m = torch.conj(m) if self.grad else m.conj_physical_()
        lefts = torch.stack([left for _, left in writes], 2).transpose(0, 1)  # (h, B, C)
        self.add_outers("left_spectrum", lefts, m)

    def cells_at_once(self, cells: int) -> int:
        """How many cells' index matrices ((d // 2 + 1) x d complex each) one batched
        product takes: as many as the batch has sentences (at least 8), within an eighth
        of the memory the device had free when the parse started (at least one)."""
        per_cell = self.half * self.d * self.cdtype.itemsize
        budget = max(G_CACHE_BYTES, self.free_at_start // 8)
        return max(1, min(cells, max(8, self.batch), budget // per_cell))

    def word_lefts(self) -> list[tuple[tuple[int, int], torch.Tensor]]:
        """Each word's cell (i - 1, i) and the left spectrum written there, conj([a_i]^)
        (B, h) (0 for the sentences shorter than i): P_left gains it times conj(G_i (.)
        (i - 1)^)."""
        tspec = torch.fft.rfft(self.vec.terminal)
        if self.soft is None:  # every word's row at once (B, n, h)
            rows = tspec[self.words]
        else:
            rows = self.soft.to(tspec.dtype) @ tspec
        lefts = torch.conj(rows) * self.ends_active()[:, 1:, None]  # word i ends cell i
        return [((i - 1, i), lefts[:, i - 1]) for i in range(1, self.n + 1)]

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
        place). ``keep`` (B, k): the updates kept (the others' gates are 0), so that on
        the CPU only the sentences with one are updated (on a device, finding them would
        stop the host until the device caught up: every sentence is updated).
        """
        only = None
        if keep is not None and not self.grad and self.batch > 1 and self.device.type == "cpu":
            kept = keep.any(1)
            if not bool(kept.all()):
                only = kept.nonzero().flatten().tolist()
        g = gates.to(self.cdtype)
        m = self.index_outer(j, i) if outer_ji is None else outer_ji
        left = torch.conj(g @ self.spectra[rows])
        self.add_outer("left_spectrum", left, self.conj_work(m), only)
        self.add_outer("right_spectrum", g @ self.right_spectra[rows], self.index_outer(i, j), only)

    def pair_readout(self, i: int, j: int) -> torch.Tensor:
        """q of tr([j]- [i]+ P_left C P_right) (B, h): the binary detection."""
        dg = torch.conj(self.full_index[j]) * self.full_index[i]
        if self._batch_work is None:
            return (self.left_spectrum * self.right_spectrum) @ dg
        torch.mul(self.left_spectrum, self.right_spectrum, out=self._batch_work)
        return self._batch_work.mul_(dg).sum(-1)

    def statistics(self) -> torch.Tensor:
        """The decoder statistics of every cell, (B, n, n + 1, N)."""
        if self.opt.decoder == "entry":
            # column 0 of Z = Phi P_left: (1/d) Re fft(sum_f w_f conj(ZT[f, :]))
            zsum = (torch.conj(self.left_spectrum) * self.parseval[None, :, None]).sum(1)
            col = torch.fft.fft(zsum).real / self.d
            return self.entry_statistics(col)
        nn = len(self.structure.nonterminals)
        out = torch.zeros(
            (self.batch, self.n, self.n + 1, nn), dtype=self.rdtype, device=self.device
        )
        # q[b, f, (i, j)] = sum_g ZT[b, f, g] (G_j (.) i^)[f, g]: a few cells a batched
        # product (by span end: each G_j computed once)
        cells = [(i, j) for j in range(1, self.n + 1) for i in range(j)]
        size = self.cells_at_once(len(cells))
        left_t = self.left_spectrum.transpose(0, 1)  # (h, B, d)
        where = torch.tensor(cells, device=self.device)  # one copy from the host
        for c in range(0, len(cells), size):
            part = cells[c : c + size]
            q = torch.bmm(left_t, self.index_outers(part).transpose(1, 2))  # (h, B, C)
            vals = (q.permute(1, 2, 0) @ self.spectra_w.T).real  # (B, C, N)
            out[:, where[c : c + size, 0], where[c : c + size, 1]] = vals
        return out

    #: Whether :meth:`dense` may be called after the parse has returned (``dense="later"``
    #: of :func:`~fastdcyk.engine.backends.torch.driver.parse`), :meth:`keep_for_dense` having
    #: dropped what it does not need and :meth:`dense_finite` checked what it reads.
    defers_dense = True

    def keep_for_dense(self) -> None:
        """Drop what :meth:`dense` does not need: the parse is over, its matrices made
        later."""
        self._batch_buffer = self._work = None

    def held_tables(self) -> HeldTables:
        """What :meth:`dense` reads, apart from the parser (which may then be let go), after
        :meth:`keep_for_dense`."""
        right = self.right_spectrum
        return HeldTables(self.left_spectrum, right, self.permutation_index(-1), self.d)

    #: Whether :meth:`held_tables` has work to do on the device first (the clean-up gate's
    #: deferred writes): the parser is then kept until its matrices are asked for.
    @property
    def tables_pending(self) -> bool:
        return False

    def deferred_bytes(self) -> int:
        """The bytes this parser keeps for its dense matrices, where its tables are."""
        return sum(_nbytes(t) for t in (self._left_spectrum, self.right_spectrum))

    def dense_finite(self) -> bool:
        """Whether every value :meth:`dense` will transform is finite (checked when it is
        deferred: a non-finite table stays the parse's error)."""
        left = self._left_spectrum  # not made yet: nothing written
        return (left is None or all_finite(left)) and (
            self.right_spectrum is None or all_finite(self.right_spectrum)
        )

    def dense(self) -> tuple[torch.Tensor, torch.Tensor | None]:
        """P_left and P_right, (B, d, d) each (:meth:`HeldTables.dense`)."""
        return self.held_tables().dense()


def _nbytes(t: torch.Tensor | None) -> int:
    return 0 if t is None else t.numel() * t.element_size()


class HeldTables:
    """The accumulators' half spectra of a parse and the permutation: what its dense
    matrices are made from, kept apart from the parser (so that the rest of the parse can
    be let go) where a result's P_left is made later, on the device or moved to the host
    (:func:`fastdcyk.engine.backends.torch.later.spill_deferred`)."""

    def __init__(
        self, left: torch.Tensor, right: torch.Tensor | None, inv: torch.Tensor, d: int
    ) -> None:
        self.left, self.right, self.inv, self.d = left, right, inv, d

    @property
    def device(self) -> torch.device:
        return self.left.device

    def held_tables(self) -> HeldTables:
        """Themselves (as a parser's :meth:`TorchSpectralParser.held_tables` gives them)."""
        return self

    def deferred_bytes(self) -> int:
        """The bytes of the tables, where they are (as a parser's
        :meth:`TorchSpectralParser.deferred_bytes`)."""
        return _nbytes(self.left) + _nbytes(self.right)

    def to_host(self) -> HeldTables:
        """The same tables on the host."""
        right = None if self.right is None else self.right.cpu()
        return HeldTables(self.left.cpu(), right, self.inv.cpu(), self.d)

    def dense(self) -> tuple[torch.Tensor, torch.Tensor | None]:
        """P_left and P_right, (B, d, d) each (P_right a transposed view, or None where it is
        never written: the clean-up gate's, 0), where the tables are.

        Z^T = irfft(fft(conj ZT, axis 1), axis 0), so Z = irfft of the transpose along the
        last axis; P_left = Phi^T Z. Likewise Phi P_right^T from PR, and
        P_right^T = Phi^T (Phi P_right^T).
        """
        d, inv = self.d, self.inv
        # conjugated in memory first: the FFT of a lazily conjugated tensor is 4 times slower
        z = torch.fft.fft(self.left.conj_physical(), dim=-1).transpose(-1, -2)
        z = torch.fft.irfft(z, n=d, dim=-1)
        if self.right is None:  # never written
            return z[:, inv], None
        w = torch.fft.irfft(torch.fft.fft(self.right, dim=-1).transpose(-1, -2), n=d, dim=-1)
        return z[:, inv], w[:, inv].transpose(-1, -2)

"""The clean-up gate in the torch backend (docs/method.md, sections 6 and 7): the
clean-up detection and the least-squares read-back, the systems of a batch solved together
(differentiable); the numpy backend's
:class:`~fastdcyk.engine.modes.cleanup.numpy_parser.NumpyCleanupParser` in PyTorch, on
:class:`~fastdcyk.engine.backends.torch.spectral.TorchSpectralParser`."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from fastdcyk.engine.backends.torch.parser import all_finite
from fastdcyk.engine.backends.torch.spectral import HeldTables, TorchSpectralParser
from fastdcyk.engine.core import schedule
from fastdcyk.engine.core.readback import (
    RIDGE,
    bounded_read,
    bounded_solve,
    candidates,
    linear_limit,
    ridge_solve,
)
from fastdcyk.engine.core.rules import (
    CellCandidates,
    candidate_rule_layer,
    cell_candidates,
    cell_splits,
    lexical_layer,
    rule_layer,
)
from fastdcyk.engine.core.schedule import Detections, Step
from fastdcyk.engine.modes.cleanup.turns import Turns, gram_matrices
from fastdcyk.hrr.buffers import G_CACHE_BYTES, G_KEEP_BYTES

__all__ = ["SOFT_LEVEL", "TURN_BATCH", "TorchCleanupParser"]

#: Cancelling, the smallest batch whose cells are read in groups (:class:`Turns`): below
#: it a group's index matrices, each as large as a sentence's table, cost more than the
#: sweeps they save, and each cell is written, read and subtracted in turn through one work
#: buffer (docs/performance.md, "Reads in turn": on a 2-core CPU, 10-word sentences, the
#: groups were 9% slower at batch 4 and d = 256, 15% faster at batch 4 and d = 1024, and
#: faster at batch 8 for both). Under autograd the groups are used at every batch size.
TURN_BATCH = 4

#: Cancelling with soft terminals: the weight above which a part of a word's mixture is solved
#: for and subtracted with the word (an encoder's softmax gives every terminal some weight;
#: a part below it leaks less into a read than the reads' own errors at the usual d).
SOFT_LEVEL = 1e-3


class TorchCleanupParser(TorchSpectralParser):
    """The clean-up gate (docs/method.md, section 6), batched and differentiable: the left
    spectrum for P_left, no P_right; every completed cell read once into clean scores
    c = sigma(a), and a detection t_A = the grammar's rules over the children's scores
    (weighted by the per-rule weights when given), as in
    :class:`fastdcyk.engine.modes.cleanup.numpy_parser.NumpyCleanupParser`.

    The read-back (docs/method.md, section 7): with ``"lstsq"`` only the candidates are
    written (t_A above the candidate level) and a cell's amplitudes a solve the ridge
    system of their Gram matrix (:mod:`fastdcyk.engine.core.readback`), batched over sentences
    whose candidate sets differ (padded with identity rows); the solve is part of the
    autograd graph, and the amplitudes are the decoder statistics. With ``"cancel"`` the
    same reads are made from a second table, ``residual``, from which every read is
    subtracted (the words first, then each cell's candidates with their amplitudes as read),
    as the numpy parser does, the cells of a column (or of a span width, or the words) read
    in turn from one sweep of the tables (:class:`~fastdcyk.engine.modes.cleanup.turns.Turns`),
    or, where it costs less, the whole parse from the Gram matrices of the reads' index
    matrices, with no residual table (:meth:`_reads_whole`); under autograd its updates
    are kept for the backward pass as the accumulator's are. With
    ``"matched"`` a is the trace decoder's readout of every nonterminal.
    """

    right = False  # P_right is never read nor written

    def __init__(self, *args: Any, g_cache: dict | None = None, **kwargs: Any) -> None:
        super().__init__(*args, g_cache=g_cache, **kwargs)
        st, dev = self.structure, self.device
        self.scores: dict[tuple[int, int], torch.Tensor] = {}
        tspec = torch.fft.rfft(self.vec.terminal)  # (T, h)
        self.terminal_w = tspec * self.parseval.to(self.cdtype) / self.d
        self.lstsq = self.opt.readback != "matched"  # the least-squares read-backs
        self.cancel = self.opt.readback == "cancel"
        self.residual: torch.Tensor | None = None  # the residual table (cancelling)
        self._word_clean: dict[int, torch.Tensor] = {}
        # cancelling, cells are read in turn in groups (:class:`Turns`) whose index matrices
        # take at most an eighth of the memory free now (at least the G_k cache's floor)
        self._turn_budget = max(G_CACHE_BYTES, self.free_at_start // 8)
        self._turns: Turns | None = None  # the group being read
        # (under autograd always: the groups keep far less for the backward pass than the
        # tables each cell's out-of-place updates would)
        self._in_turns = self.cancel and (self.batch >= TURN_BATCH or self.grad)
        # cancelling without autograd: the whole parse one group read from the cells' Gram
        # matrices, with no residual table, where that costs less (:meth:`_reads_whole`)
        self._whole = self._in_turns and not self.grad and self._reads_whole()
        self._unwritten: list[tuple[tuple[int, int], torch.Tensor]] = []  # P_left's, deferred
        if self.lstsq:
            nn, nt = len(st.nonterminals), len(st.terminals)
            # the regressors of a read: nonterminals, then terminals (unary cells), whose
            # amplitudes land in a scratch column past them when padding
            self._reg_vectors = torch.cat((self.vec.nonterminal, self.vec.terminal))
            self._reg_spectra = torch.cat((self.spectra_w, self.terminal_w))
            # what a read amplitude of each regressor stands for in the table (cancelling)
            self._reg_written = torch.cat((self.spectra, tspec.to(self.cdtype)))
            self._lexicon = self.xp.index(st.lexicon_rows) >= 0  # the terminals of rules A -> a
            self._nn, self._nt = nn, nt
            self.stats: dict[tuple[int, int], torch.Tensor] = {}
            self._candidates: dict[tuple[int, int], torch.Tensor] = {}
            # per unary cell, the terminals read in it (until its read-back)
            self._terms: dict[tuple[int, int], torch.Tensor] = {}
            self._no_terms = torch.zeros((self.batch, nt), dtype=torch.bool, device=dev)
            # each read cell's candidates (of any sentence of the batch) and their clean
            # scores less sigma(0), for the rule layer over the candidates' rules
            self.base = float(self.sigmoid(torch.tensor(0.0, dtype=self.rdtype)))
            self._read_cells: dict[tuple[int, int], CellCandidates] = {}
            self._scratch = np.full(nn, -1, np.intp)  # for candidate_rule_layer
            bw = self.binary_weights
            ones = torch.ones(len(st.binary_rule_row), dtype=self.rdtype, device=dev)
            weights = ones if bw is None else bw.to(self.rdtype)
            zero = torch.zeros(len(st.binary), dtype=self.rdtype, device=dev)
            self._rule_weight_sums = self.xp.index_add(zero, st.binary_rule_row, weights)

    def _rule_weights(self, weights: torch.Tensor | None) -> torch.Tensor | None:
        return None if weights is None else weights.to(self.rdtype)

    def _readout(self, i: int, j: int, spectra_w: torch.Tensor) -> torch.Tensor:
        """tr([X]+ [j]+ [i]+ P_left) / d for every row X of ``spectra_w``, (B, rows)."""
        q = self.row_dots(self.left_spectrum, self.index_outer(j, i))
        return (q @ spectra_w.T).real

    def initialise(self) -> None:
        """The words into P_left (:meth:`TorchSpectralParser.initialise`); when cancelling, the
        residual table made, and every word read from it and subtracted before the first
        cell (the terminals read, and those written for it: a soft word's mixture); or,
        where the whole parse is read from the Gram matrices, :meth:`_initialise_whole`."""
        if self._whole:
            self._initialise_whole()
            return
        super().initialise()
        if not self.cancel:
            return
        self.residual = self.left_spectrum.clone()
        if not self.vec.index.requires_grad:
            # the residual table is only read through products with index matrices, and
            # subtracted from: with fixed index vectors autograd keeps none of its values,
            # and its updates need no new array each (nor the allocator's fragmented heap)
            self.in_place = self.in_place | {"residual"}
        if self.pre is not None:  # nothing was written: the unary step takes the scores
            return
        read_word = self._word_reader()
        if not self._in_turns:  # each word read and subtracted through the work buffer
            for k in range(1, self.n + 1):
                idx = self.index_outer(k, k - 1)
                full = read_word(k, self.row_dots(self.residual, idx))
                self._subtract(full, idx)
            return
        k = 1  # the words in groups read in turn (:class:`Turns`), from the table of them all
        while k <= self.n:
            group = Turns(self, self._group(k - 1, k))
            for c, (_, word) in enumerate(group.spans):
                group.subtract(c, self._subtraction(read_word(word, group.read(c))))
            group.flush(self)
            k = group.spans[-1][1] + 1
            del group  # before the next group's index matrices

    def _reads_whole(self) -> bool:
        """Whether the whole parse is read as one :class:`Turns` group from the Gram matrices
        of its reads' index matrices, with no residual table (:meth:`_initialise_whole`):
        where they and the reads' (d // 2 + 1) x batch x reads array fit in the group
        budget, and either the codebook keeps them from an earlier parse of the same
        length and order (:meth:`_grams_key`), or computing them (about R^2 / 2
        (d // 2 + 1) d for R reads) costs no more than the two sweeps of the residual table
        a read costs otherwise (2 B (d // 2 + 1) d for B sentences)."""
        n, h, d = self.n, self.half, self.d
        words = 0 if self.pre is not None else n
        reads = n * (n + 1) // 2 + words
        size = self.cdtype.itemsize
        held = h * reads * (reads + self.batch) * size  # K, and the reads
        if self._kept_grams() is not None:
            return held <= self._turn_budget
        made = words * reads + (reads - words) ** 2 // 2  # K's entries computed
        budget = held + h * reads * d * size <= self._turn_budget  # and the index matrices
        return budget and made <= 2 * self.batch * reads

    def _grams_key(self) -> tuple:
        """What the Gram matrices of a whole parse's reads depend on besides the codebook:
        the length, the order of the cells (the "cell" and "sequential" orders visit the
        same) and whether the words are read."""
        order = "width" if self.opt.order == "width" else "cell"
        return (self.n, order, self.pre is None)

    def _kept_grams(self) -> torch.Tensor | None:
        """The Gram matrices an earlier parse of the same length and order (and words read
        or not) left in the codebook's cache (:meth:`_reads_grams`), or None."""
        kept = self._index_matrices.get("grams")
        if kept is None or kept[0] != self._grams_key():
            return None
        return kept[1]

    def _reads_grams(self, slots: list[tuple[int, int]], words: int) -> torch.Tensor:
        """K[f, c', c] = sum_g conj(X_c'[f, g]) X_c[f, g] of the index matrices X_c = G_j (.)
        i^ of the reads ``slots`` (the first ``words`` of them the words'), (h, R, R):
        where :class:`Turns` reads it (c' <= c) and in the words' rows (the reads' start
        sums them), the rest 0. Kept in the codebook's cache for the next parse of the same
        length and order, within :data:`~fastdcyk.hrr.buffers.G_KEEP_BYTES`."""
        kept = self._kept_grams()
        if kept is not None:
            return kept
        k = gram_matrices(self.index_outers(slots), words)  # from the (h, R, d) index matrices
        if self.keeps_cache and k.numel() * k.element_size() <= G_KEEP_BYTES:
            self._index_matrices["grams"] = (self._grams_key(), k)
        return k

    def _initialise_whole(self) -> None:
        """The whole parse as one :class:`Turns` group, with no residual table: the words
        (each read in turn from what all of them wrote), then every cell in the schedule's
        order, each read from the Gram matrices of the reads' index matrices
        (:meth:`_reads_grams`) as the module :mod:`~fastdcyk.engine.modes.cleanup.turns`
        derives, with R_0 the words' writes. The writes into P_left wait until it is asked
        for."""
        words = [] if self.pre is not None else self.word_lefts()
        # a word's read, then its unary cell's
        slots = [span for span, _ in words] + schedule.ends(self.n, self.opt.order)
        k = self._reads_grams(slots, len(words))
        if words:  # R_0 X_c: what the words wrote, read through each read's index matrix
            lefts = torch.stack([s for _, s in words], 2).transpose(0, 1)  # (h, B, n)
            q = lefts @ k[:, : len(words)]
        else:  # preterminal scores: nothing written before the first cell
            q = k.new_zeros((self.half, self.batch, len(slots)))
        group = self._turns = Turns(self, slots, (k, q))
        if not words:
            return
        self.defer_writes(words)
        read_word = self._word_reader()
        for c, ((_, word), _) in enumerate(words):
            group.subtract(c, self._subtraction(read_word(word, group.read(c))))

    def _word_reader(self) -> Any:
        """read_word(k, q): word k's amplitudes, (B, N + T), from its readout q (B, h)."""
        nt, dev = self._nt, self.device
        nonterminals = torch.zeros((self.batch, self._nn), dtype=torch.bool, device=dev)

        def read_word(k: int, q: torch.Tensor) -> torch.Tensor:
            clean = self.sigmoid((q @ self.terminal_w.T).real)
            self._word_clean[k] = clean
            if self.soft is None:
                written = torch.zeros((self.batch, nt), dtype=torch.bool, device=dev)
                written[torch.arange(self.batch, device=dev), self.words[:, k - 1]] = True
            else:  # a mixture's parts that leak more than the reads' own noise
                written = self.soft[:, k - 1] > SOFT_LEVEL
            terms = ((clean > self.opt.candidate_level) | written) & self._lexicon
            terms &= self.active(k)[:, None]
            return self._solve(torch.cat((nonterminals, terms), 1), q)

        return read_word

    def _subtract(self, a: torch.Tensor, idx: torch.Tensor) -> None:
        """Take what amplitudes ``a`` (B, N + T) stand for from the residual table, through
        ``idx``, the cell's :meth:`index_outer` that its read used (conjugated here, in place
        in the work buffer; under autograd a view of the read's)."""
        left = self._subtraction(a)
        if left is not None:
            self.add_outer("residual", -left, self.conj_work(idx))

    def _subtraction(self, a: torch.Tensor) -> torch.Tensor | None:
        """conj(sum_X a_X X^), (B, h): the left spectrum of what amplitudes ``a`` (B, N + T)
        stand for in the table (the product over the columns some sentence read), or None
        where every amplitude is 0."""
        cols = (a != 0).any(0).nonzero().flatten()
        if not len(cols):
            return None
        return torch.conj(a[:, cols].to(self.cdtype) @ self._reg_written[cols])

    def read(self, i: int, j: int, step: Step) -> None:
        st, xp = self.structure, self.xp
        if step == schedule.UNARY and self.pre is not None:  # the unary step's t_A given
            self._detection = self.pre[:, i].to(self.rdtype)
            return
        if step == schedule.UNARY:
            if self.cancel:  # read before the first cell
                clean = self._word_clean[j]
            else:
                clean = self.sigmoid(self._readout(i, j, self.terminal_w))
            if self.lstsq:  # the terminals read in the cell (by any of its reads)
                read = (clean > self.opt.candidate_level) & self._lexicon
                before = self._terms.get((i, j), self._no_terms)
                self._terms[(i, j)] = before | (read & self.active(j)[:, None])
            weights = self._rule_weights(self.unary_weights)
            self._detection = lexical_layer(st, clean, rule_weights=weights, xp=xp)
            return
        weights = self._rule_weights(self.binary_weights)
        if self.lstsq:  # a non-candidate scores sigma(0) exactly and carries no gradient
            splits = cell_splits(self._read_cells, i, j)
            t = candidate_rule_layer(
                st,
                splits,
                self.base,
                self._scratch,
                rule_sums=self._rule_weight_sums,
                rule_weights=weights,
                xp=xp,
            )
            self._detection = t.expand(self.batch, -1)
            return
        scores = self.scores
        layer = rule_layer(st, lambda a, b: scores[(a, b)], i, j, rule_weights=weights, xp=xp)
        self._detection = layer

    def detect(self, i: int, j: int, step: Step, ks: slice) -> Detections:
        t = self._detection[:, ks]
        # given preterminal scores are the unary step's gates themselves: a second sigmoid
        # would flatten their gradient wherever an encoder is confident
        gates = t if step == schedule.UNARY and self.pre is not None else self.sigmoid(t)
        if not self.lstsq:
            return Detections(t, gates, gates, gates)
        level, prune = self.opt.candidate_level, self.opt.prune
        cand = candidates(t, gates, level, prune) & self.active(j)[:, None]
        rows = (self.unary_rows if step == schedule.UNARY else self.binary_rows)[ks]
        mask = self._candidates.get((i, j))
        if mask is None:
            mask = torch.zeros((self.batch, self._nn), dtype=torch.bool, device=self.device)
        self._candidates[(i, j)] = mask.index_copy(1, rows, mask[:, rows] | cand)
        return Detections(t, gates, gates * cand, gates)  # only the candidates are written

    def write(self, i: int, j: int, step: Step, ks: slice, det: Detections, keep: Any) -> None:
        rows = (self.unary_rows if step == schedule.UNARY else self.binary_rows)[ks]
        values = det.values
        kept = keep.any(0)
        if not bool(kept.all()):  # only the nonterminals some sentence writes
            cols = kept.nonzero().flatten()
            rows, values, keep = rows[cols], values[:, cols], keep[:, cols]
        g = (values * keep).to(self.cdtype)
        left = torch.conj(g @ self.spectra[rows])
        if not self._in_turns:  # into the tables now
            m = self.conj_work(self.index_outer(j, i))
            self.add_outer("left_spectrum", left, m)
            if self.residual is not None:  # the residual holds what is written, until read
                self.add_outer("residual", left, m)
            return
        # cancelling: written into the residual with the cell's group, once read
        turns, c = self._turn(i, j)
        turns.write(c, left)

    def end(self, i: int, j: int, step: Step) -> None:
        if not self._in_turns:  # read (and, cancelling, subtracted) through the work buffer
            idx = self.index_outer(j, i)
            full = self._end(i, j, step, self._cell_readout(i, j, idx))
            if self.residual is not None:
                self._subtract(full, idx)
            return
        turns, c = self._turn(i, j)
        cands = self._cell_candidates(i, j, step)
        full = self._solve(cands, turns.read(c))
        self._finish(i, j, cands, full)
        if turns.subtract(c, self._subtraction(full)):  # the group's last cell
            self._turns = None
            turns.flush(self)

    def ends_width(self, step: Step) -> bool:
        """In the "width" order, whether a width's cells are read back together: with the
        least-squares read-back, whose reads subtract nothing (cancelling, the cells are
        read in turn, a width's in one sweep: :class:`Turns`)."""
        return self.lstsq and not self.cancel

    def end_width(self, spans: list[tuple[int, int]], step: Step) -> None:
        """The "width" order's read-back of a span width (the least-squares read-back):
        every cell's readout from the table as the width left it, the solves of all its
        cells and sentences as one batch, then each cell's scores."""
        qs = [self._cell_readout(i, j, self.index_outer(j, i)) for i, j in spans]
        cands = [self._cell_candidates(i, j, step) for i, j in spans]
        solved = self._solve(torch.cat(cands), torch.cat(qs)).split(self.batch)
        for (i, j), c, full in zip(spans, cands, solved, strict=True):
            self._finish(i, j, c, full)

    def _chunk(self) -> int:
        """How many cells a :class:`Turns` group holds at most: twice the batch's sentences
        (K's products, C^2 / 2 (d // 2 + 1) d, stay within the reads' and the update's,
        2 B C (d // 2 + 1) d: at batch 1 a group is two cells), and their index matrices
        ((d // 2 + 1) x d complex each, and the stack's copy) within an eighth of the memory
        the device had free when the parse started; at least one."""
        return max(1, min(2 * self.batch, self._cells_in_budget()))

    def _cells_in_budget(self) -> int:
        """How many cells' index matrices (two (d // 2 + 1) x d complex matrices each) fit
        in an eighth of the memory the device had free when the parse started."""
        per_cell = 2 * self.half * self.d * self.cdtype.itemsize
        return self._turn_budget // per_cell

    def _group(self, i: int, j: int) -> list[tuple[int, int]]:
        """The cells read in one :class:`Turns` group from cell (i, j) on: the rest of its
        span width ("width" order) or of its column (the words: all of them), in the
        schedule's order, at most :meth:`_chunk` of them."""
        n, w = self.n, j - i
        if self.opt.order == "width":
            spans = schedule.width_cells(n, w)[i:]
        elif w == 1:
            spans = [(k - 1, k) for k in range(j, n + 1)]
        else:
            spans = [(a, j) for a in range(i, -1, -1)]
        return spans[: self._chunk()]

    def _turn(self, i: int, j: int) -> tuple[Turns, int]:
        """The pending :class:`Turns` group of cell (i, j) and its place there; a new group
        from (i, j) on where none is pending."""
        turns = self._turns
        if turns is not None and (i, j) in turns.position:
            return turns, turns.position[(i, j)]
        if turns is not None:
            raise RuntimeError(f"cell ({i}, {j}) read before the cells of {turns.spans}")
        turns = self._turns = Turns(self, self._group(i, j))
        return turns, 0

    def _cell_readout(self, i: int, j: int, idx: torch.Tensor) -> torch.Tensor:
        """The readout of cell (i, j) (``idx``: its index matrix) from the table the reads
        see (the residual one when cancelling)."""
        table = self.left_spectrum if self.residual is None else self.residual
        return self.row_dots(table, idx)

    def _end(self, i: int, j: int, step: Step, q: torch.Tensor) -> torch.Tensor | None:
        """Cell (i, j) read from its readout ``q``: its amplitudes, (B, N + T), or None
        with ``"matched"`` (its clean scores only)."""
        if not self.lstsq:
            self.scores[(i, j)] = self.sigmoid((q @ self.spectra_w.T).real)
            return None
        cands = self._cell_candidates(i, j, step)
        full = self._solve(cands, q)
        self._finish(i, j, cands, full)
        return full

    def _cell_candidates(self, i: int, j: int, step: Step) -> torch.Tensor:
        """The items cell (i, j) is read for, (B, N or N + T): its candidates, and in a
        unary cell the terminals read there."""
        cands = self._candidates.pop((i, j), None)
        if cands is None:
            cands = torch.zeros((self.batch, self._nn), dtype=torch.bool, device=self.device)
        if step == schedule.UNARY:
            cands = torch.cat((cands, self._terms.pop((i, j), self._no_terms)), dim=1)
        return cands

    def _finish(self, i: int, j: int, cands: torch.Tensor, full: torch.Tensor) -> None:
        """Cell (i, j) read (``full``: every regressor's amplitude, (B, N + T)): its
        statistics and scores kept (cancelling, its group subtracts what it read)."""
        a = full[:, : self._nn]
        self.stats[(i, j)] = a
        self.scores[(i, j)] = scores = self.sigmoid(a)
        rows = np.flatnonzero(cands[:, : self._nn].any(0).cpu().numpy())
        deltas = self.xp.take(scores - self.base, rows)
        self._read_cells[(i, j)] = cell_candidates(self.structure, rows, deltas, self.xp)

    def _solve(self, cands: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        """The least-squares amplitudes of every regressor, (B, N + T): the candidates'
        (``cands``, (B, N or N + T), the terminals read in a unary cell after the
        nonterminals) solved for together, the others 0."""
        width, dev = cands.shape[1], self.device
        systems = cands.shape[0]  # the batch's sentences (of one cell or of a width's cells)
        full_width = self._nn + self._nt
        counts = cands.sum(1)
        k = int(counts.max()) if systems else 0
        if k == 0:
            return torch.zeros((systems, full_width), dtype=self.rdtype, device=dev)
        b, r = cands.nonzero(as_tuple=True)  # ordered by sentence, then row
        offsets = torch.cumsum(counts, 0) - counts
        pos = torch.arange(len(b), device=dev) - offsets[b]
        idx = torch.full((systems, k), width, dtype=torch.int64, device=dev)  # padding: scratch
        idx[b, pos] = r
        valid = idx < width
        safe = torch.where(valid, idx, 0)
        vecs = self._reg_vectors[safe] * valid[..., None]  # (B, k, d)
        gram = vecs @ vecs.transpose(1, 2)
        spec = self._reg_spectra[safe]  # (B, k, h)
        x = (spec @ q[:, :, None]).real.squeeze(-1) * valid
        a = ridge_solve(gram, x, valid=valid, xp=self.xp)
        if bounded_read(k, self.d):
            a = self._bounded(gram, x, counts, a)
        full = torch.zeros((systems, full_width + 1), dtype=self.rdtype, device=dev)
        return full.scatter(1, torch.where(valid, idx, full_width), a * valid)[:, :full_width]

    def _bounded(
        self, gram: torch.Tensor, x: torch.Tensor, counts: torch.Tensor, a: torch.Tensor
    ) -> torch.Tensor:
        """The systems of more regressors than :func:`bounded_read` allows a linear read,
        read within [0, 1] (:func:`bounded_solve`, docs/method.md, section 7, "Beyond d"):
        found on the host in float64, then the amplitudes strictly inside the box solved
        again here (with the ridge), the others held at their bounds, so that the gradient
        is the bounded read's own (none along a bound)."""
        for b in (counts > linear_limit(self.d)).nonzero().flatten().tolist():
            m = int(counts[b])
            g, xb = gram[b, :m, :m], x[b, :m]
            host = g.detach().double().cpu().numpy()
            z = bounded_solve(host, xb.detach().double().cpu().numpy())
            read = torch.as_tensor(z, dtype=a.dtype, device=a.device)
            inner = torch.as_tensor((z > 0.0) & (z < 1.0), device=a.device)
            if bool(inner.any()):
                scale = torch.diagonal(g).sum() / m  # the ridge as numpy's, in the graph
                added = RIDGE * torch.where(scale > 0, scale, torch.ones_like(scale))
                gi, rest = g[inner][:, inner], g[inner][:, ~inner]
                eye = torch.eye(len(gi), dtype=gi.dtype, device=gi.device)
                solved = torch.linalg.solve(gi + added * eye, xb[inner] - rest @ read[~inner])
                read = read.masked_scatter(inner, solved)
            rows = torch.full((m,), b, dtype=torch.int64, device=a.device)
            a = a.index_put((rows, torch.arange(m, device=a.device)), read)
        return a

    def statistics(self) -> torch.Tensor:
        """The decoder statistics of every cell, (B, n, n + 1, N): the least-squares
        amplitudes, or with ``"matched"`` the decoder's readouts."""
        if not self.lstsq:
            return super().statistics()
        nn = len(self.structure.nonterminals)
        out = torch.zeros(
            (self.batch, self.n, self.n + 1, nn), dtype=self.rdtype, device=self.device
        )
        for (i, j), a in self.stats.items():
            out[:, i, j] = a
        return out

    def defer_writes(self, writes: list[tuple[tuple[int, int], torch.Tensor]]) -> None:
        """Cells' writes into P_left (``writes``: each cell (i, j) and its left spectrum,
        (B, h)), kept until P_left is asked for (cancelling, no read sees P_left), and
        dropped where the parse returns no P_left (:attr:`wants_dense` False)."""
        if self.wants_dense:
            self._unwritten.extend(writes)

    def _write_deferred(self) -> None:
        """The writes :meth:`defer_writes` kept, into P_left, by span end j (each G_j
        computed once): as many cells a product as the batch has sentences (at least 8,
        within the memory of :meth:`_cells_in_budget`), so that their index matrices take
        about the memory of one table."""
        size = max(1, min(self._cells_in_budget(), max(8, self.batch)))
        self._unwritten.sort(key=lambda write: write[0][1])  # by G_j: each computed once
        while self._unwritten:
            part = self._unwritten[:size]
            self.write_lefts(part)
            # dropped once written: a device out of memory above leaves them to write again
            del self._unwritten[: len(part)]

    def keep_for_dense(self) -> None:
        super().keep_for_dense()
        self.residual = self._turns = self._detection = None

    def held_tables(self) -> HeldTables:
        self._write_deferred()  # on the device, where the index matrices are
        self.residual = None  # the residual table is not part of the result
        return super().held_tables()

    @property
    def tables_pending(self) -> bool:
        return bool(self._unwritten)

    def deferred_bytes(self) -> int:
        unwritten = sum(left.numel() * left.element_size() for _, left in self._unwritten)
        return super().deferred_bytes() + unwritten

    def dense_finite(self) -> bool:
        if not self._unwritten:
            return super().dense_finite()
        lefts = torch.stack([left for _, left in self._unwritten])  # one check, not one a cell
        return super().dense_finite() and all_finite(lefts)

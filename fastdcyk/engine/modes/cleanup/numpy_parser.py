"""The clean-up gate in the numpy backend (docs/method.md, sections 6 and 7), and the
least-squares read-back of a given P_left.

:class:`NumpyCleanupParser` keeps P_left as 2-D half spectra
(:class:`~fastdcyk.engine.backends.numpy.spectral.NumpySpectralParser`) and never touches P_right.
:func:`readback_statistics` runs it over a given P_left without writing: the reader of
:func:`fastdcyk.decode` with the least-squares read-backs (``readback="lstsq"`` or
``"cancel"``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fastdcyk.cfg.grammar import Grammar
from fastdcyk.engine.backends.numpy.parser import mixture
from fastdcyk.engine.backends.numpy.spectral import (
    NumpySpectralParser,
    left_spectrum_of,
    lexicon_spectra,
)
from fastdcyk.engine.core import schedule
from fastdcyk.engine.core.arrays import NUMPY, sigmoid
from fastdcyk.engine.core.certificate import (
    Certificate,
    CertificateBuilder,
    unsupported_cells,
    wrong_word_cells,
)
from fastdcyk.engine.core.decode import Statistics, chart_from_statistics, decision_boundary
from fastdcyk.engine.core.readback import (
    SMALL_SOLVE,
    bounded_read,
    candidates,
    gram,
    linear_limit,
    read_cell,
    ridge_solve,
)
from fastdcyk.engine.core.rules import (
    lexical_layer,
    rule_layer,
    rule_structure,
)
from fastdcyk.engine.core.schedule import Detections, Step
from fastdcyk.engine.core.splits import CandidateChart
from fastdcyk.engine.modes.cleanup import columns
from fastdcyk.hrr import buffers
from fastdcyk.hrr.codebook import Codebook
from fastdcyk.hrr.kernels import runs_parallel
from fastdcyk.options import DCYKOptions

__all__ = [
    "BATCHED_SOLVE",
    "COLUMNS",
    "DECODE_REFRESHES",
    "DECODE_SWEEPS",
    "NumpyCleanupParser",
    "readback_statistics",
]

#: The "width" order solves the reads of a width's cells of at most this many items as one
#: padded batch (many small systems cost their calls more than their arithmetic); larger
#: ones are solved alone, so that no small system is padded to a large one.
BATCHED_SOLVE = 32

#: Whether a parse with a least-squares read-back in the cell order fills each column of
#: binary cells in one compiled call (:mod:`.columns`; the same chart to rounding). Where
#: the table is large enough for the parallel kernels (and more than one thread is allowed),
#: the cells are visited one by one whatever this says.
COLUMNS = True

#: Decoding a given P_left with ``readback="cancel"``: the sweeps after the bottom-up pass
#: (:meth:`NumpyCleanupParser.sweep`), in which every cell is read again without the cells above it.
DECODE_SWEEPS = 2

#: Decoding with cancelling: after the sweeps, the cells' candidates are found again from
#: the swept reads (:meth:`NumpyCleanupParser.refresh`) at most this many times, each followed
#: by :data:`DECODE_SWEEPS` sweeps.
DECODE_REFRESHES = 2


class NumpyCleanupParser(NumpySpectralParser):
    """The clean-up detection (docs/method.md, section 6): P_left as 2-D half spectra
    (:class:`~fastdcyk.engine.backends.numpy.spectral.NumpySpectralParser`), P_right neither
    read nor written.

    When a cell is complete it is read once into a clean score c(i, j, X) = sigma(a_X) of
    every nonterminal X: near 1 or near 0. A binary cell's detection is the grammar's rules
    applied to its children's scores,

        t_A(i, j) = sum over splits k and rules A -> B C of c(i, k, B) c(k, j, C),

    a unary cell's t_A = sum over rules A -> a of sigma(tr([a]+ [j]+ [i]+ P_left) / d), the
    word's terminal read from P_left. The gate is sigma(t_A) I and the update of P_left the
    trace variant's. A detection's noise is then the read-back's noise on a child, however
    many rules A has.

    The read-back (``opt.readback``, docs/method.md, section 7): ``"lstsq"`` writes only
    the cell's candidates (t_A above ``opt.candidate_level``) and reads their amplitudes a
    by least squares (:mod:`fastdcyk.engine.core.readback`), every other nonterminal 0; the
    same amplitudes are the decoder statistics of the final chart. ``"cancel"`` reads the
    same way from a second copy of the table from which every read is subtracted (each
    cell's candidates with their amplitudes as read, each word's terminals once, before the
    first cell), so that a cell's read sees the other cells' items only through the errors
    of their reads (successive interference cancellation); the words' clean scores are then
    those of that first read, in the sequential order too. ``"matched"`` writes
    every update above the prune level and reads a_X = tr([X]+ [j]+ [i]+ P_left) / d for
    every X (the trace decoder's matched filter); the final chart is then the trace
    decoder's over the finished table.

    With ``p_left`` the parser reads a given P_left instead of filling one: nothing is
    written, and the unary cells take the words as read (:func:`readback_statistics`).
    """

    #: Whether a word's cell holds every item of the word's rules (the weighted table's
    #: leaves out those more than its beam below the cell's best: only the items beyond
    #: the word's rules are then wrong; :func:`~fastdcyk.engine.core.certificate.wrong_word_cells`).
    complete_words = True

    def __init__(
        self,
        grammar: Grammar,
        words: tuple[str, ...],
        cb: Codebook,
        opt: DCYKOptions,
        p_left: np.ndarray | None = None,
    ) -> None:
        given = None if p_left is None else left_spectrum_of(p_left, cb)
        # the rules act on scores: no rule spectra
        super().__init__(grammar, words, cb, opt, rules=False, right=False, left=given)
        self.frozen = p_left is not None
        self.lstsq = opt.readback != "matched"  # the least-squares read-backs
        self.cancel = opt.readback == "cancel"
        # what the reads see: the table less what was read (a given P_left's own spectrum
        # is ours to subtract from; a parse's second copy is made once the words are in)
        self.residual = self.left_spectrum if self.cancel and self.frozen else None
        self.refine = 0  # steps of iterative refinement of each cell's solve
        # decoding a given P_left with cancelling: every read, to read again (sweep())
        self._kept_reads: list[tuple[int, int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]
        self._kept_reads = []
        self._word_scores: dict[int, np.ndarray] = {}
        st = self.structure = rule_structure(grammar)
        n, nn = len(words), len(st.nonterminals)
        self.scores = np.zeros((n + 1, n + 1, nn))
        # the read-back's amplitudes (the decoder statistics) and each cell's candidates
        self.stats = np.zeros((n + 1, n + 1, nn)) if self.lstsq else None
        self._candidates: dict[tuple[int, int], list[np.ndarray]] = {}
        # the read cells' candidates and their clean scores less sigma(0), every other's
        self.base = float(sigmoid(0.0, opt.beta))
        self._read_cells = CandidateChart(st, n, self.base)
        # the terminals of the grammar's rules A -> a (its lexicon), as rows of a table of
        # their spectra
        self._lexicon_rows, self._lexicon_ids = st.lexicon_rows, st.lexicon
        self._lexicon_spectra = lexicon_spectra(cb, st)
        # per unary cell, the terminals read in it (until its read-back)
        self._terminals_read: dict[tuple[int, int], np.ndarray] = {}
        # decoding a given P_left: each position's word, as a row of the lexicon's table
        self._given_words = self._lexicon_rows[st.terminal_ids(words)] if self.frozen else None
        # a parse's least-squares reads: how far each can be trusted
        self._certify = None
        if self.lstsq and not self.frozen:
            boundary = decision_boundary(opt.beta, opt.threshold)
            self._certify = CertificateBuilder(n, boundary, cb.d)

    def trace(self, spectra: np.ndarray, q: np.ndarray) -> np.ndarray:
        """:meth:`NumpySpectralParser.trace` in the tables' own precision: a grammar's thousands
        of rows are read for every cell, and a float32 codebook's complex64 tables would
        otherwise be copied to complex128 at each read."""
        return (spectra @ (self.parseval * q).astype(spectra.dtype)).real / self.d

    def readout(self, i: int, j: int) -> np.ndarray:
        """:meth:`~NumpySpectralParser.cell_readout` of the table the reads see (the residual one
        when cancelling)."""
        table = self.left_spectrum if self.residual is None else self.residual
        return self.cell_readout(i, j, table)

    def word_scores(self, i: int, j: int, q: np.ndarray | None = None) -> np.ndarray:
        """The clean scores of the grammar's lexicon in unary cell (i, j): the word as given
        when decoding a given P_left, else the terminals read from the table (``q``: the
        cell's readout, when already lifted; when cancelling, every word is read once before
        the first cell, :meth:`_read_words`, and its scores kept)."""
        if j in self._word_scores:
            return self._word_scores[j]
        if self.frozen:  # decoding a given P_left: the word as read
            c = np.zeros(len(self._lexicon_ids))
            if self._given_words[i] >= 0:
                c[self._given_words[i]] = 1.0
            return c
        q = self.readout(i, j) if q is None else q
        return sigmoid(self.trace(self._lexicon_spectra, q), self.opt.beta)

    def _read_words(self) -> None:
        """Cancelling: every word's terminals read (their clean scores kept for the unary
        cells), solved for by least squares and subtracted from the residual table, before
        any cell is read, so that no word leaks into another cell's read. The terminals
        solved for are those read (clean score above the candidate level) and, in a parse,
        every terminal the parse wrote for the word (a soft word's mixture), so that the
        weak parts of a mixture leave the residual table too."""
        st = self.structure
        mixes = [] if self.frozen else [[t for t, _ in mixture(w)] for w in self.words]
        ids = st.terminal_ids([t for m in mixes for t in m])
        ends = np.cumsum([len(m) for m in mixes])
        compiled = self._compiled()
        for k in range(1, len(self.words) + 1):
            if compiled:  # in one call, unless it has too many terminals for it
                work = self._column_work()
                written = np.zeros(len(self._lexicon_ids), np.bool_)
                rows = self._lexicon_rows[ids[ends[k - 1] - len(mixes[k - 1]) : ends[k - 1]]]
                written[rows[rows >= 0]] = True
                c = np.zeros(len(self._lexicon_ids))
                status = columns.read_word(
                    k - 1, written, self.residual, self.index_matrix(k), work["index_full"],
                    work["index_conj"], work["lexicon"], self.parseval, self.opt.beta,
                    self.opt.candidate_level, c, work["scratch"],
                )  # fmt: skip
                if status == columns.NON_FINITE_READ:
                    raise schedule.non_finite(f"the read of word {k}")
                if status == columns.DONE:
                    self._word_scores[k] = c
                    continue
            q = self.readout(k - 1, k)
            c = self.word_scores(k - 1, k, q)
            rows = np.flatnonzero(c > self.opt.candidate_level)
            if not self.frozen:  # the lexicon's rows of what was written for the word
                written = self._lexicon_rows[ids[ends[k - 1] - len(mixes[k - 1]) : ends[k - 1]]]
                rows = np.union1d(rows, written[written >= 0])
            if len(rows):
                terms = [st.terminals[t] for t in self._lexicon_ids[rows]]
                spectra = self._lexicon_spectra[rows]
                x = self.trace(spectra, q)
                g = gram(self.cb.vectors("terminal", terms))
                a = self._solve(g, x, f"the read of word {k}")
                self._subtract(k - 1, k, a @ spectra)
                self._keep_read(k - 1, k, np.zeros(0, np.intp), spectra, g, a)
            self._word_scores[k] = c

    def _subtract(self, i: int, j: int, spectrum: np.ndarray) -> None:
        """Take sum_X a_X [i]- [j]- [X]- (``spectrum`` = sum_X a_X X^) from the residual
        table."""
        self.write_left(self.residual, -spectrum, i, j)

    def read(self, i: int, j: int, step: Step) -> None:
        st = self.structure
        if step == schedule.UNARY:
            c = self.word_scores(i, j)
            self._detection = lexical_layer(st, c, self._lexicon_rows)
            if self.lstsq:  # the terminals read in the cell (in the sequential order: any read)
                read = np.flatnonzero(c > self.opt.candidate_level)
                before = self._terminals_read.get((i, j), np.zeros(0, np.intp))
                self._terminals_read[(i, j)] = np.union1d(before, read)
        elif self.lstsq:  # every non-candidate scores sigma(0): the candidates' rules only
            self._detection = self._read_cells.layer(i, j)
        else:
            self._detection = rule_layer(st, lambda a, b: self.scores[a, b], i, j)

    def detect(self, i: int, j: int, step: Step, ks: slice) -> Detections:
        t = self._detection[ks]
        gates = sigmoid(t, self.opt.beta)
        if not self.lstsq:
            return Detections(t[None], gates[None], gates[None], gates)
        cand = self._candidate_mask(t, gates)
        self._candidates.setdefault((i, j), []).append(self.rows(step)[ks][cand])
        peaks = np.where(cand, gates, 0.0)  # only the candidates are written
        return Detections(t[None], gates[None], peaks[None], gates)

    def _candidate_mask(self, t: np.ndarray, gates: np.ndarray) -> np.ndarray:
        """Which detections ``t`` (gates ``gates``) make candidates, with the options'
        candidate level and prune (:func:`candidates`)."""
        return candidates(t, gates, self.opt.candidate_level, self.opt.prune)

    def initialise(self) -> None:
        """The words into P_left, unless it was given (it is read, never written); when
        cancelling, the residual table made and the words read from it."""
        if not self.frozen:
            super().initialise()
            if self.cancel:
                self.residual = buffers.ZR.new(self.cb, zero=False)
                np.copyto(self.residual, self.left_spectrum)
        if self.cancel:
            self._read_words()

    def write(self, i: int, j: int, step: Step, ks: slice, det: Detections, keep: Any) -> None:
        if not self.frozen:
            keep = keep[0]
            self.update(i, j, det.values[keep], self.rows(step)[ks][keep])

    def update(self, i: int, j: int, gates: np.ndarray, rows: np.ndarray) -> None:
        """sum_A g_A [i]- [j]- [A]- into P_left: the operator C_S^T, S^ = sum_A g_A A^."""
        spectrum = gates @ self.tables.spectra[rows].astype(np.complex128)
        self.write_left(self.left_spectrum, spectrum, i, j)
        if self.residual is not None:  # the residual holds what is written, until it is read
            self.write_left(self.residual, spectrum, i, j)

    def end(self, i: int, j: int, step: Step) -> None:
        """Read the completed cell once into its clean scores (and, with the least-squares
        read-back, its statistics)."""
        q = self.readout(i, j)
        if not self.lstsq:
            self.scores[i, j] = sigmoid(self.trace(self.tables.spectra, q), self.opt.beta)
            return
        rows, a = self.solve_cell(i, j, step, q)
        self._read(i, j, rows, a)

    #: Whether :meth:`run_column` may fill a column (a subclass whose reads differ: no).
    fills_columns = True

    def _compiled(self) -> bool:
        """Whether the compiled cells may run (:data:`COLUMNS`, :attr:`fills_columns`, a
        least-squares read-back, a parse and not a decoding, the serial kernels)."""
        if not (COLUMNS and self.fills_columns and self.lstsq and not self.frozen):
            return False
        return not runs_parallel((self.d // 2 + 1) * self.d)  # the table's kernels serial

    def run_word(self, i: int, ledger: schedule.Ledger, on_progress: Any = None) -> bool:
        """Fill unary cell (i, i + 1) in one compiled call (:func:`.columns.word`) where the
        parse allows it (:meth:`_compiled`); False, having done nothing, where it does not."""
        if not self._compiled():
            return False
        j = i + 1
        work = self._column_work()
        given = j in self._word_scores
        c = self._word_scores[j] if given else work["word_scores"]
        chart = self._read_cells
        chart.reserve(len(self.tables.unary))
        counts = work["counts"]
        counts[:] = 0
        status, m, k, size = columns.word(
            i, c, given, self.cancel, self.index_matrix(j), self._kernel_tables(),
            work["lexicon"], work["unary"], chart.kernel_arrays(),
            chart.size, self._kernel_params(), (self.stats, self.scores, work["cert"], counts),
            work["scratch"],
        )  # fmt: skip
        self._after_compiled(i, j, status, k, m, size, counts, ledger)
        if on_progress is not None:
            on_progress(len(self.tables.unary))
        return True

    def run_column(self, j: int, ledger: schedule.Ledger, on_progress: Any = None) -> bool:
        """Fill every binary cell (i, j) of column j in one compiled call
        (:func:`.columns.column`) where the parse allows it (:meth:`_compiled`); False,
        having done nothing, where it does not."""
        if not self._compiled():
            return False
        work = self._column_work()
        chart, nb = self._read_cells, len(self.tables.binary)
        g_j = self.index_matrix(j)
        i = j - 2
        while i >= 0:
            chart.reserve((i + 1) * nb)
            counts = work["counts"]
            counts[:] = 0
            status, i, k, size = columns.column(
                j, i, self.cancel, g_j, self._kernel_tables(), work["lexicon"],
                work["binary_rows"],
                chart.kernel_arrays(), chart.size, self._kernel_params(),
                (self.stats, self.scores, work["cert"], counts), work["scratch"],
            )  # fmt: skip
            self._after_compiled(i, j, status, k, 0, size, counts, ledger)
            if status == columns.DONE:
                break
            i -= 1  # the cell read here: on with the rest of the column
        if on_progress is not None:
            on_progress(nb * (j - 1))
        return True

    def _kernel_tables(self) -> tuple:
        """The compiled cells' tables: P_left's spectrum, the residual table (P_left's when
        not cancelling), the index vectors' full spectra and their conjugates, the
        nonterminals' spectra and vectors."""
        work = self._column_work()
        return (
            self.left_spectrum,
            work["residual"],
            work["index_full"],
            work["index_conj"],
            self.tables.spectra,
            self.tables.vectors,
        )

    def _kernel_params(self) -> tuple:
        """The compiled cells' scalars: Parseval weights, beta, the candidate and prune
        levels, the certificate's decision boundary."""
        opt = self.opt
        return (
            self.parseval,
            opt.beta,
            opt.candidate_level,
            opt.prune,
            self._certify.boundary,
        )

    def _after_compiled(self, i, j, status, k, m, size, counts, ledger) -> None:
        """A compiled call's return: the counts into the ledger, a non-finite value raised,
        a cell left unread (``k`` candidates, ``m`` terminals) read the Python way."""
        self._read_cells.size = size
        ledger.counts[:, 0] += counts
        if status == columns.NON_FINITE_DETECTION:
            raise schedule.non_finite(f"detections in cell ({i}, {j})")
        if status == columns.NON_FINITE_READ:
            raise schedule.non_finite(f"the read of cell ({i}, {j})")
        if status == columns.UNREAD:
            work = self._column_work()
            rows = work["scratch"][1][:k].copy()
            terms = work["lexicon"][2][:m]
            spectra = np.concatenate([self.tables.spectra[rows], work["lexicon"][0][terms]])
            vectors = np.concatenate([self.tables.vectors[rows], work["lexicon"][1][terms]])
            q = work["scratch"][3].copy()  # the cell's readout, after its write
            a = self._solve_items(i, j, q, rows, spectra, vectors)
            self._read(i, j, rows, a)

    def _column_work(self) -> dict:
        """The arrays the compiled cells read, made once per parse (after the words are
        written: the residual table exists then)."""
        work = getattr(self, "_work", None)
        if work is not None:
            return work
        n, d, h = len(self.words), self.d, self.d // 2 + 1
        st = self.structure
        full = np.stack([self.full_spectrum("index", i) for i in range(n + 1)])
        nb = max(len(self.tables.binary), len(self.tables.unary))
        k = min(SMALL_SOLVE, linear_limit(d))  # more: the Python way (bounded_read)
        lexicon = [st.terminals[t] for t in self._lexicon_ids]
        scratch = (
            np.zeros(nb),  # t
            np.zeros(nb, np.int64),  # cand
            np.zeros(h, self.left_spectrum.dtype),  # lv
            np.zeros(h, np.complex128),  # q
            np.zeros(k),  # x
            np.zeros((k, k)),  # gram
            np.zeros((k, k)),  # low
            np.zeros(k),  # a
            np.zeros(2 * k),  # diag
            np.zeros((k, d)),  # basis
            np.zeros(h, self.left_spectrum.dtype),  # lv_t: a read's pending subtraction
        )
        self._work = {
            "residual": self.left_spectrum if self.residual is None else self.residual,
            "index_full": full,
            "index_conj": np.conj(full),
            "binary_rows": np.asarray(self.tables.binary, np.int64),
            "unary": (
                np.asarray(self.tables.unary, np.int64),
                st.unary_rule_row.astype(np.int64),
                self._lexicon_rows[st.unary_rule_terminal].astype(np.int64),
            ),
            "lexicon": (
                self._lexicon_spectra,
                self.cb.vectors("terminal", lexicon),
                np.zeros(len(lexicon), np.int64),
            ),
            "word_scores": np.zeros(len(lexicon)),
            "cert": (self._certify.margins, self._certify.bounds),
            "counts": np.zeros(3, np.int64),
            "scratch": scratch,
        }
        return self._work

    def ends_width(self, step: Step) -> bool:
        """In the "width" order, whether a width's cells are read back together
        (:meth:`end_width`): with the least-squares read-back, whose reads subtract nothing;
        cancelling, each cell is written, read and subtracted in turn."""
        return self.lstsq and not self.cancel and not self.frozen

    def end_width(self, spans: list[tuple[int, int]], step: Step) -> None:
        """The "width" order's read-back of a whole span width (the cells ``spans``) with
        the least-squares read-back: every cell's readout from the table as the width left
        it, the solves of the cells of at most :data:`BATCHED_SOLVE` items as one batch
        padded to the largest of them (:func:`ridge_solve`), the others one by one, then
        each cell's certificate and scores, as :meth:`end` does cell by cell."""
        reads = []
        for i, j in spans:
            q = self.readout(i, j)
            rows, spectra, vectors = self._items(i, j, step)
            g, x = gram(vectors), self.trace(spectra, q)
            _check_read(g, x, f"the read of cell ({i}, {j})")
            reads.append((i, j, q, rows, spectra, g, x))
        small = [
            b
            for b, r in enumerate(reads)
            if len(r[-1]) <= BATCHED_SOLVE and not bounded_read(len(r[-1]), self.d)
        ]
        solved: dict[int, np.ndarray] = {}
        k = max((len(reads[b][-1]) for b in small), default=0)
        if k:
            gs, xs = np.zeros((len(small), k, k)), np.zeros((len(small), k))
            valid = np.zeros((len(small), k), bool)
            for row, b in enumerate(small):
                g, x = reads[b][-2:]
                m = len(x)
                gs[row, :m, :m], xs[row, :m], valid[row, :m] = g, x, True
            batch = ridge_solve(gs, xs, valid=valid, refine=self.refine)
            solved = {b: batch[row, : len(reads[b][-1])] for row, b in enumerate(small)}
        for b, (i, j, q, rows, spectra, g, x) in enumerate(reads):
            a = solved[b] if b in solved else read_cell(g, x, self.d, self.refine)
            a = self._after_solve(i, j, q, rows, spectra, g, x, a)
            self._read(i, j, rows, a)

    def _read(self, i: int, j: int, rows: np.ndarray, a: np.ndarray) -> None:
        """Cell (i, j) read: its candidates ``rows`` have amplitudes ``a``."""
        self.stats[i, j, rows] = a
        self.scores[i, j] = sigmoid(self.stats[i, j], self.opt.beta)
        deltas = sigmoid(a, self.opt.beta) - self.base
        self._read_cells.add(i, j, rows, deltas)

    def _items(self, i: int, j: int, step: Step) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """What completed cell (i, j) holds, to be read: the rows of its candidates, and
        the spectra and vectors of its items (the candidates, and in a unary cell the
        terminals read there after them)."""
        rows = np.concatenate(self._candidates.pop((i, j), [np.zeros(0, np.intp)]))
        spectra, vectors = self.tables.spectra[rows], self.tables.vectors[rows]
        read = self._terminals_read.pop((i, j), None)
        if step == schedule.UNARY and read is not None and len(read):
            # the word's terminal is an item of the cell too: solve for it alongside
            terms = [self.structure.terminals[k] for k in self._lexicon_ids[read]]
            spectra = np.concatenate([spectra, self._lexicon_spectra[read]])
            vectors = np.concatenate([vectors, self.cb.vectors("terminal", terms)])
        return rows, spectra, vectors

    def solve_cell(
        self, i: int, j: int, step: Step, q: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The least-squares read of completed cell (i, j) (``q`` its readout): the rows of
        what was written in it and their amplitudes."""
        rows, spectra, vectors = self._items(i, j, step)
        return rows, self._solve_items(i, j, q, rows, spectra, vectors)

    def _solve_items(self, i, j, q, rows, spectra, vectors) -> np.ndarray:
        """The read of cell (i, j) (``q`` its readout) over its items ``spectra`` and
        ``vectors`` (the candidates ``rows`` first): the candidates' amplitudes."""
        g = gram(vectors)
        x = self.trace(spectra, q)
        a = self._solve(g, x, f"the read of cell ({i}, {j})")
        return self._after_solve(i, j, q, rows, spectra, g, x, a)

    def _after_solve(self, i, j, q, rows, spectra, g, x, a) -> np.ndarray:
        """A cell's read solved (amplitudes ``a`` of its items): its certificate, and when
        cancelling its subtraction from the residual table; the candidates' amplitudes."""
        if self._certify is not None and len(a):
            norm2 = float(self.parseval @ (q.real**2 + q.imag**2)) / self.d  # ||r||^2
            self._certify.add(i, j, g, x, a, norm2, len(rows))
        if self.residual is not None and len(a):  # what was read leaves the residual table
            spectra = spectra.astype(np.complex128)
            self._subtract(i, j, a @ spectra)
            self._keep_read(i, j, rows, spectra, g, a)
        return a[: len(rows)]

    def _solve(
        self, g: np.ndarray, x: np.ndarray, where: str, lower: Any = 0.0, upper: Any = 1.0
    ) -> np.ndarray:
        """The amplitudes of a read (:func:`read_cell`: the ridge solve, bounded within
        [``lower``, ``upper``] from 0.9 d regressors), refusing non-finite readouts
        (``where``: which read)."""
        _check_read(g, x, where)
        return read_cell(g, x, self.d, self.refine, lower, upper)

    def _keep_read(self, i, j, rows, spectra, g, a) -> None:
        """Decoding a given P_left with cancelling: keep a read for :meth:`sweep`."""
        if self.frozen:
            self._kept_reads.append((i, j, rows, spectra, g, a))

    def sweep(self) -> None:
        """Decoding a given P_left with cancelling: read every read again, in the same order,
        from the residual table plus its own estimate (block Gauss-Seidel on the whole
        table's least squares), so that the cells above a cell, still in the table when it
        was first read, leave its read too. The candidates stay those of the first pass; the
        statistics are the new amplitudes."""
        for i, j, rows, spectra, g, a in self._kept_reads:
            x = self.trace(spectra, self.readout(i, j))
            # a bounded read keeps a + da in [0, 1]
            da = self._solve(g, x, f"the second read of cell ({i}, {j})", -a, 1.0 - a)
            a += da
            self._subtract(i, j, da @ spectra)
            if len(rows):
                self.stats[i, j, rows] = a[: len(rows)]

    def refresh(self) -> bool:
        """Decoding a given P_left with cancelling, after :meth:`sweep`: every cell's clean
        scores taken from its swept read, bottom-up, and each binary cell's candidates found
        again from its children's; a cell that gains a candidate is read again over the
        union (its earlier read given back to the residual table first, the new one taken
        from it). The first pass chose a cell's candidates from its children as read with
        the cells above them still in the table; a child misread there (a cell of more
        symbols than d read amid that leakage, say) cost its parents a candidate for good.
        Returns whether a cell was read again (the caller then sweeps again)."""
        changed = False
        binary = np.asarray(self.rows(schedule.BINARY))
        for n, (i, j, rows, spectra, g, a) in enumerate(self._kept_reads):
            if j - i > 1:
                t = self._read_cells.layer(i, j)
                new = binary[self._candidate_mask(t, sigmoid(t, self.opt.beta))]
                grown = np.setdiff1d(new, rows)
                if len(grown):
                    self._subtract(i, j, -(a @ spectra))  # the earlier read, given back
                    rows = np.concatenate([rows, grown])
                    spectra = self.tables.spectra[rows].astype(np.complex128)
                    g = gram(self.tables.vectors[rows])
                    x = self.trace(spectra, self.readout(i, j))
                    a = self._solve(g, x, f"the read again of cell ({i}, {j})")
                    self._subtract(i, j, a @ spectra)
                    self._kept_reads[n] = (i, j, rows, spectra, g, a)
                    changed = True
            k = len(rows)
            self.stats[i, j, rows] = a[:k]
            self._read_cells.add(i, j, rows, sigmoid(a[:k], self.opt.beta) - self.base)
        return changed

    def statistics(self) -> Statistics | None:
        """The decoder statistic of every triple: the least-squares amplitudes (``"lstsq"``,
        ``"cancel"``), or with ``"matched"`` the decoder's readouts of the finished table
        (the trace decoder's from the spectra; None with the entry decoder, which reads the
        dense P_left)."""
        if not self.lstsq:
            return self.decoder_statistics() if self.opt.decoder == "trace" else None
        return Statistics(self.stats[: len(self.words)], self.tables.nonterminals)

    def certificate(self, chart: dict | None = None) -> Certificate | None:
        """How far the parse's least-squares reads can be trusted; None with the matched
        read-back (:mod:`fastdcyk.engine.core.certificate`). With the decoded ``chart``, its
        cells that cannot be CYK's are refused (bound 1): a binary cell holding an item no
        split supports (:func:`~fastdcyk.engine.core.certificate.unsupported_cells`), a word's
        cell that is not its rules' (:func:`~fastdcyk.engine.core.certificate.wrong_word_cells`)."""
        if self._certify is None:
            return None
        if chart is None:  # not decoded (decode=False): the same checks, of its own reads
            chart = chart_from_statistics(
                self.statistics(), len(self.words), beta=self.opt.beta,
                threshold=self.opt.threshold,
            )  # fmt: skip
        lexicon = self.grammar.lexicon
        words = wrong_word_cells(lexicon, self.words, chart, complete=self.complete_words)
        self._certify.refuse(words + unsupported_cells(self.structure, chart))
        return self._certify.certificate()

    def suspect(self) -> bool:
        """Whether a cell read so far is suspect by its own bound, so that the parse's
        certificate cannot be sure (:func:`fastdcyk.engine.core.schedule.stopping_at_suspect`);
        False without a certificate."""
        return self._certify is not None and self._certify.suspect()

    def dense(self, deferred: bool = False) -> tuple[Any, Any]:
        """P_left as a new d x d array, and P_right, never written: zeros (each deferred
        with ``deferred``: :meth:`NumpySpectralParser.dense`)."""
        self.residual = None  # the residual table is not part of the result
        return super().dense(deferred)


def _check_read(g: np.ndarray, x: np.ndarray, where: str) -> None:
    """FloatingPointError when a read's Gram matrix or readouts are not finite."""
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(g))):
        raise schedule.non_finite(where)


def readback_statistics(
    p_left: np.ndarray,
    grammar: Grammar,
    words: tuple[str, ...],
    cb: Codebook,
    opt: DCYKOptions,
) -> Statistics:
    """The least-squares read-back of a given P_left, bottom-up (docs/method.md, section 7).

    The clean-up parse without its writes: each unary cell's candidates are the
    nonterminals of the word's rules (its terminal solved for beside them), each binary
    cell's those whose rules fire on the clean scores of the cells read before it; every
    cell is read by least squares over its candidates. With ``opt.readback == "cancel"``
    the words (with amplitude as read) and then every cell read are subtracted from the
    parser's own spectrum of P_left (the array given is not changed), so that a cell's read
    is not blurred by those read before it; then :data:`DECODE_SWEEPS` sweeps read every
    cell again without the cells above it (:meth:`NumpyCleanupParser.sweep`), and the cells'
    candidates are found again from the swept reads (:meth:`NumpyCleanupParser.refresh`; up to
    :data:`DECODE_REFRESHES` times, each followed by the sweeps).
    ``words`` are terminals of the grammar (checked); ``opt`` has the clean-up gate. The
    caller holds the codebook's lock.
    """
    parser = NumpyCleanupParser(grammar, words, cb, opt, p_left=p_left)
    n = len(words)
    try:
        ledger = schedule.Ledger(NUMPY, parser.tables.nonterminals, [n], opt.prune)
        schedule.run(parser, n, "cell", ledger)
        if parser.cancel:
            for _ in range(DECODE_REFRESHES + 1):
                for _ in range(DECODE_SWEEPS):
                    parser.sweep()
                if not parser.refresh():
                    break
        return parser.statistics()
    finally:
        parser.close()

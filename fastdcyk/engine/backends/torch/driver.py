"""The torch backend: the same algorithm as the numpy backend, batched and differentiable.

Each detection mode's torch parser (``fastdcyk/engine/modes/<mode>/torch_parser.py``)
mirrors its numpy parser (docs/method.md, section 4) with torch tensors, for a batch of
sentences at once (sentences of different lengths share every cell (i, j) that exists in
them; a cell beyond a sentence's length is masked out of its updates). The scalar gates'
parsers keep the table as 2-D half spectra
(:class:`fastdcyk.engine.backends.torch.spectral.TorchSpectralParser`: every cell costs a few
element-wise passes and one product with a rule table, and the only FFTs are those of the
index matrices G_k = (Phi C_k Phi)~, shared by the batch and kept per codebook across
parses by :func:`parse`, and of the dense results); the entrywise gate's keeps the row
spectra of the accumulators, with P_A = sigma(M) a dense matrix (or a diagonal).
:mod:`fastdcyk.engine.backends.torch.parser` holds what they share: the symbol vectors as
tensors (:class:`SymbolVectors`), the rule spectra, the torch array namespace and their base
class.

This module holds the entry points. Every option of :func:`fastdcyk.dcyk` is supported
for the modes that have a torch parser (all but ``weights="table"``), and in float64 the
numbers equal the numpy backend's to rounding (not the paper variant's: its steep gates on
non-unitary vectors amplify rounding from cell to cell until its charts can differ). The rule
spectra are built from the symbol vectors with ``torch.fft`` (docs/method.md, section
4.1), so that gradients reach the vectors (and the optional per-rule weights):
:func:`parse_tensors` is the differentiable core (:class:`fastdcyk.nn.DCYK` runs it), and
:func:`parse`, the driver of the ``"torch"`` record (:mod:`fastdcyk.registry.backends`),
runs it on a prepared plan's codebook and sentences and returns their
:class:`~fastdcyk.engine.core.result.DCYKResult` (``dcyk(..., backend="torch")`` and
:func:`fastdcyk.engine.batch.dcyk_batch` call it). ``prune`` makes the computation
piecewise: an update whose gate is at most ``prune`` is skipped, as in the numpy backend
(use ``prune=0`` for gradient checks).

PyTorch is imported here only: ``import fastdcyk`` works without it, and
``dcyk(..., backend="torch")`` tells how to install it (``pip install torch``).
The paper: "CYK Parsing over Distributed Representations" (Zanzotto, Satta, Cristini, 2020).
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

try:
    import torch
except ImportError as exc:  # pragma: no cover - exercised only without torch
    raise ImportError("the torch backend of fastdcyk needs PyTorch: pip install torch") from exc

from fastdcyk.engine.backends.torch.parser import (
    SymbolVectors,
    TorchParse,
    TorchParser,
    all_finite,
    free_bytes,
    symbol_vectors,
)
from fastdcyk.engine.backends.torch.spectral import HeldTables
from fastdcyk.engine.core import schedule
from fastdcyk.engine.core.decode import Statistics, chart_from_statistics
from fastdcyk.engine.core.deferred import DeferredArray
from fastdcyk.engine.core.result import DCYKResult
from fastdcyk.engine.core.rules import RuleStructure, rule_structure
from fastdcyk.engine.core.soft import has_soft, terminal_weights
from fastdcyk.hrr.memory import format_bytes
from fastdcyk.options import DCYKOptions
from fastdcyk.registry import modes

if TYPE_CHECKING:  # pragma: no cover
    from fastdcyk.engine.core.plan import Plan
    from fastdcyk.hrr.codebook import Codebook
    from fastdcyk.registry.backends import Backend

__all__ = [
    "SymbolVectors",
    "TorchParse",
    "check_device",
    "check_memory",
    "default_batch_size",
    "parse",
    "parse_tensors",
    "release_caches",
    "spill_deferred",
    "symbol_vectors",
]


#: Bytes of accumulator spectra (two per sentence) a default torch batch holds: on a CPU
#: about a cache's worth (measured at d = 1024, float32, one thread: 9.7 sentences per
#: second in batches of 1 to 4, 6 in batches of 8 or 16), on a GPU far more.
CPU_BATCH_BYTES = 32 << 20
GPU_BATCH_BYTES = 1 << 30
#: The most sentences of a default torch batch.
MAX_BATCH = 64


def default_batch_size(d: int, dtype: Any, device: Any = None) -> int:
    """Sentences per torch batch by default, at dimension ``d``.

    As many as keep the accumulator spectra (two half spectra of d x d per sentence) within
    :data:`CPU_BATCH_BYTES` on a CPU or :data:`GPU_BATCH_BYTES` on a CUDA device, at least
    1 and at most :data:`MAX_BATCH`.

    Parameters
    ----------
    d : int
    dtype : {"float32", "float64"} or numpy dtype
    device : torch.device or str, optional
        None: the CPU.

    Returns
    -------
    int

    Examples
    --------
    >>> default_batch_size(1024, "float32"), default_batch_size(1024, "float32", "cuda")
    (3, 64)
    """
    gpu = device is not None and "cuda" in str(device)
    spectra = 2 * (d // 2 + 1) * d * 2 * np.dtype(dtype).itemsize
    return max(1, min(MAX_BATCH, (GPU_BATCH_BYTES if gpu else CPU_BATCH_BYTES) // spectra))


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


def check_memory(
    d: int,
    dtype: Any,
    fft: Any,
    options: DCYKOptions,
    n: int,
    *,
    sentences: int = 1,
    device: Any = None,
    held: int = 0,
) -> None:
    """The torch backend's memory check (:func:`fastdcyk.engine.memory.check_memory`):
    refuse a batch whose tables alone (two half spectra of d x d per sentence) do not fit in
    the memory free on ``device`` (the CPU: what the OS has left), before anything of that
    size is allocated. The memory free unknown: no check. ``fft`` and ``held`` (the numpy
    backend's FFT library and work buffers) do not apply.

    Raises
    ------
    MemoryError
        Naming the bytes needed and free, and what to do.
    """
    dev = check_device(device)
    need = sentences * 2 * (d // 2 + 1) * d * 2 * np.dtype(dtype).itemsize
    free = free_bytes(dev)
    if free and need > free:
        raise MemoryError(
            f"{sentences} sentence(s) at d = {d} need at least {format_bytes(need)} on {dev} "
            f"for their tables alone, and {format_bytes(free)} is free: parse fewer sentences "
            "at a time, or use a smaller d"
        )


def parse_tensors(
    vectors: SymbolVectors,
    structure: RuleStructure,
    sentences: Sequence[Sequence[int]],
    options: DCYKOptions,
    *,
    unary_weights: torch.Tensor | None = None,
    binary_weights: torch.Tensor | None = None,
    decode: bool = True,
    dense: bool | str = False,
    record: bool = False,
    readouts: bool = True,
    on_progress: Callable[[int], None] | None = None,
    g_cache: dict | None = None,
    terminal_weights: torch.Tensor | None = None,
    preterminal_scores: torch.Tensor | None = None,
) -> TorchParse:
    """Parse a batch of sentences with D-CYK (the paper's Algorithms 2, 3 and 4) in torch.

    Differentiable with respect to every tensor of ``vectors`` (but ``perm``) and the rule
    weights, wherever ``prune`` does not cut (an update whose gate is at most ``prune`` is
    skipped, as in the numpy backend: use ``prune=0`` where gradients must be exact).

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
    dense : bool or "later", default False
        Also return P_left and P_right (P_right None where the gate never writes it: the
        clean-up gate's is 0). ``"later"``: the parser in ``later`` instead, whose
        ``dense()`` makes them when called (the spectral parsers; the tables checked finite
        now; the others make them now, as with True).
    record : bool, default False
        Keep the log of every detection, as ``DCYKResult.log``.
    readouts : bool, default True
        Gather every detection's readout into ``TorchParse.readouts`` (what a
        differentiable layer scores); False leaves it None (a write per cell saved).
    on_progress : callable, optional
        Called with the number of detections made, as they are made (a progress bar).
    g_cache : dict, optional
        The scalar gates' G_k matrices (docs/method.md, section 4.4) by span index k, and
        the cancelling read-back's Gram matrices of the cells' index matrices (key
        ``"grams"``), kept across calls: pass the same dict to parses with the same index
        vectors, permutation, dtype and device (never under autograd, where it is not used).
    terminal_weights : Tensor, (B, n, T), optional
        Soft terminals: per sentence and position, a weight per terminal (the rows of
        ``structure.terminals``; a distribution, typically), for the longest sentence's n
        (a shorter sentence's positions past its end are ignored). The unary step writes
        the mixture sum_a p_a [a]- instead of the word's [a]- (docs/method.md, section 11);
        one-hot weights give the words' parse. ``sentences`` then gives only the lengths.
        The vectors' dtype and device; differentiable.
    preterminal_scores : Tensor, (B, n, U), optional
        Soft preterminals (for the modes that take them: the clean-up gate): per sentence
        and position, a score in
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
    mode = options.mode
    parser_class = mode.parser("torch")
    if pre is not None and not mode.soft_preterminals:
        able = " or ".join(m.describe() for m in modes.MODES.values() if m.soft_preterminals)
        raise ValueError(
            f"preterminal_scores need a mode that takes them ({able}; variant='cleanup'), "
            f"not {mode.describe()}, which reads the unary step from the table: give "
            "terminal_weights instead"
        )
    padded = [list(s) + [0] * (n - len(s)) for s in sentences]
    words = torch.as_tensor(padded, dtype=torch.int64, device=vectors.device)
    args = (vectors, structure, options, words, lengths, unary_weights, binary_weights, record)
    args += (soft, pre)
    p: TorchParser = parser_class(*args, g_cache=g_cache)
    later = dense == "later" and p.defers_dense and not p.grad
    p.wants_dense = bool(dense)
    if not readouts:  # nothing kept per cell for them
        p.ledger.readouts = None
    timings: dict[str, float] = {}
    schedule.run(p, p.n, options.order, p.ledger, on_progress=on_progress, timings=timings)
    t2 = time.perf_counter()
    stats = p.statistics() * p.cell_mask()[..., None] if decode else None
    t3 = time.perf_counter()
    p_left = p_right = None
    if later:
        if not p.dense_finite():
            raise schedule.non_finite("P_left after the parse")
        p.keep_for_dense()
    elif dense:
        p_left, p_right = p.dense()  # P_right None where never written (0)
    if stats is not None and not all_finite(stats):
        raise schedule.non_finite("the decoder statistics")
    out = TorchParse(
        statistics=stats,
        readouts=p.readout_tensor() if readouts else None,
        mask=p.cell_mask(),
        lengths=lengths,
        p_left=p_left,
        p_right=p_right,
        counts=p.ledger.count_dicts(),
        log=p.ledger.log_lists(),
        timings={**timings, "decode": t3 - t2},
        later=p if later else None,
    )
    p.ledger.readouts = p.ledger.log = None  # read: a deferred parser need not keep them
    return out


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
    if not all_finite(x):
        raise ValueError(f"{name} holds NaN or infinite values")
    return x


def statistics_of(stats: np.ndarray, n: int, nonterminals: Sequence[str]) -> Statistics:
    """The :class:`~fastdcyk.engine.core.decode.Statistics` of one sentence of n words from its
    (n_max, n_max + 1, N) float64 statistics on the host (its own copy)."""
    return Statistics(np.array(stats[:n, : n + 1]), nonterminals)


#: Per codebook, the G_k matrices of the trace gate by (device, dtype), and the cancelling
#: read-back's Gram matrices of the cells' index matrices: a codebook's index vectors and
#: permutation never change, so later parses with it reuse them (within
#: :data:`G_CACHE_BYTES` and :data:`G_KEEP_BYTES`, as the numpy backend keeps its work
#: buffers in the codebook).
_G_CACHES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _codebook_g_cache(codebook: Codebook, vec: SymbolVectors) -> dict:
    per = _G_CACHES.setdefault(codebook, {})
    return per.setdefault((str(vec.device), vec.dtype), {})


def release_caches(codebook: Codebook | None = None) -> None:
    """Drop the G_k matrices (and the cells' Gram matrices) kept for ``codebook`` (for
    every codebook when None)."""
    if codebook is None:
        _G_CACHES.clear()
    else:
        _G_CACHES.pop(codebook, None)


def parse(
    plan: Plan,
    backend: Backend,
    *,
    device: Any = None,
    decode: bool = True,
    dense: bool = True,
    record: bool = False,
    on_progress: Callable[[int], None] | None = None,
) -> list[DCYKResult]:
    """The torch backend's driver: a prepared plan's sentences parsed in one batch.

    The driver of the ``"torch"`` record (:mod:`fastdcyk.registry.backends`), behind
    ``dcyk(..., backend="torch")`` and :func:`fastdcyk.engine.batch.dcyk_batch`: the
    sentences (tuples of terminals of the grammar, checked as :func:`fastdcyk.dcyk`
    checks them) and the options are resolved by :func:`fastdcyk.engine.prepare.prepare`. The
    codebook's vectors and permutation are copied to ``device`` in its dtype; the parse runs
    without autograd (:func:`parse_tensors` is the differentiable core).

    Parameters
    ----------
    plan : Plan
        Its grammar, sentences, options and codebook.
    backend : Backend
        This backend's record (or that of a backend that runs on this driver with parsers
        of its own).
    device : torch.device or str, optional
        Default: the CPU.
    decode, record, on_progress
        As for :func:`parse_tensors`.
    dense : bool, default True
        Compute P_left and P_right (two d x d matrices per sentence, copied to the host;
        with the spectral parsers as :class:`~fastdcyk.engine.core.deferred.DeferredArray`:
        the whole batch's made when the first of them is asked for, its tables checked
        finite now and, on a device, kept there till then within
        :func:`deferral_budget`, the oldest moved to the host beyond it:
        :func:`spill_deferred`). ``dense=False`` leaves
        them out (None in the results): for callers that need the charts only, such as the
        experiment grid (:mod:`fastdcyk.experiments`). Non-finite values are then caught in
        the decoder statistics only (``decode=True``).

    Returns
    -------
    list of DCYKResult
        In the plan's order (``p_left`` and ``p_right`` numpy arrays of the codebook's
        dtype, or None when ``dense`` is False).
    """
    grammar, sentences, codebook, options = (
        plan.grammar,
        plan.sentences,
        plan.codebook,
        plan.options,
    )
    st = rule_structure(grammar)
    n = max(len(s) for s in sentences)
    with torch.no_grad():
        vec = symbol_vectors(codebook, st, n, encoding=options.encoding, device=device)
        # the matrices are made when a result's are first asked for; on a device the
        # tables stay there till then, within deferral_budget (spill_deferred)
        kw: dict[str, Any] = {
            "decode": decode,
            "dense": "later" if dense else False,
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
        cache = _codebook_g_cache(codebook, vec)
        res = parse_tensors(vec, st, ids, options, g_cache=cache, readouts=False, **kw)
        t0 = time.perf_counter()
        p_left = p_right = [None] * len(sentences)
        if res.later is not None:
            batch = _LaterDense(res.later, codebook)
            if vec.device.type != "cpu":
                _hold_on_device(batch, vec.device)
            shape, dtype, count = (codebook.d, codebook.d), codebook.dtype, len(sentences)
            p_left = [DeferredArray(partial(batch.left, b), shape, dtype) for b in range(count)]
            p_right = [DeferredArray(partial(batch.right, b), shape, dtype) for b in range(count)]
        elif dense:
            # checked where the matrices are (on a GPU: no pass over them on the host)
            for name, m in (("P_left", res.p_left), ("P_right", res.p_right)):
                if m is not None and not all_finite(m):
                    raise schedule.non_finite(f"{name} after the parse")
            p_left, p_right = _host_matrices(res.p_left, res.p_right, codebook)
    # the batch's statistics read back in one copy (from a device, one synchronisation)
    host_stats = res.statistics.detach().to("cpu", torch.float64).numpy() if decode else None
    out = []
    for b, words in enumerate(sentences):
        stats = chart = None
        if host_stats is not None:
            stats = statistics_of(host_stats[b], len(words), st.nonterminals)
            chart = chart_from_statistics(
                stats, len(words), beta=options.beta, threshold=options.threshold
            )
        timings = dict(res.timings)
        timings["decode"] += time.perf_counter() - t0
        out.append(
            DCYKResult(
                words=tuple(words),
                grammar=grammar,
                codebook=codebook,
                options=options,
                p_left=p_left[b],
                p_right=p_right[b],
                statistics=stats,
                chart=chart,
                counts=res.counts[b],
                timings=timings,
                log=None if res.log is None else res.log[b],
            )
        )
    return out


class _LaterDense:
    """The dense matrices of a batch parsed with ``dense="later"``, made all at once (one
    batched transform) when the first sentence's are asked for, each handed out once.

    The batch keeps its tables (:class:`~fastdcyk.engine.backends.torch.spectral.HeldTables`) and
    lets the rest of the parse go at once, unless the tables have work to do on the device
    first (the clean-up gate's deferred writes: the parser is kept till then). On a device
    they can be moved to the host (:meth:`spill`). A device out of memory while the
    matrices are made (or the tables moved) loses nothing: the make is done on the host
    instead (the move is not made). A make interrupted otherwise after it began (the
    clean-up gate's deferred writes partly applied) refuses to be tried again."""

    def __init__(self, parser: TorchParser, codebook: Codebook) -> None:
        held: TorchParser | HeldTables = parser
        if not parser.tables_pending:  # the tables alone: the parse let go
            held = parser.held_tables()
        self._source: TorchParser | HeldTables | None = held
        self._codebook = codebook
        self._lock = threading.Lock()
        self._left: list[np.ndarray | None] | None = None
        self._right: list[np.ndarray | None] | None = None
        #: The device the tables are on (None once they are on the host or made).
        self.device: torch.device | None = parser.device if parser.device.type != "cpu" else None

    def device_bytes(self) -> int:
        """The bytes of this batch's tables on a device (0 on the host or made)."""
        source = self._source
        if source is None or self.device is None:
            return 0
        return source.deferred_bytes()

    def spill(self) -> int:
        """Move the tables to the host (the matrices will be made there); the bytes moved
        (0 where the device ran out of memory writing the clean-up gate's deferred
        updates first: the tables stay, nothing lost)."""
        with self._lock:
            source = self._source
            if source is None or self.device is None:
                return 0
            moved = self.device_bytes()
            try:
                with torch.no_grad():
                    tables = source.held_tables()
            except torch.cuda.OutOfMemoryError:
                return 0  # the writes not made are still the parser's to make
            self._source, self.device = tables.to_host(), None
            return moved

    def _make(self) -> None:
        with self._lock:
            if self._left is not None:
                return
            source, self._source = self._source, None
            if source is None:
                raise RuntimeError(
                    "P_left cannot be made: an earlier attempt was interrupted while it "
                    "transformed this batch's tables; parse the sentences again"
                )
            with torch.no_grad():
                try:
                    tables = source.held_tables()
                except torch.cuda.OutOfMemoryError:
                    self._source = source  # nothing lost: its writes are made when written
                    raise
                try:
                    dense = tables.dense()
                except torch.cuda.OutOfMemoryError:  # on the host instead
                    tables = tables.to_host()
                    dense = tables.dense()
                self._left, self._right = _host_matrices(*dense, self._codebook)
            self.device = None

    def left(self, b: int) -> np.ndarray:
        self._make()
        return self._hand_out(self._left, b)

    def right(self, b: int) -> np.ndarray:
        self._make()
        return self._hand_out(self._right, b)

    @staticmethod
    def _hand_out(matrices: list[np.ndarray | None] | None, b: int) -> np.ndarray:
        assert matrices is not None
        m, matrices[b] = matrices[b], None  # the result keeps it; the batch need not
        assert m is not None
        return m


#: The batches parsed on a device whose dense matrices are deferred, oldest first (weak
#: references: a batch whose results are all gone frees its tables).
_ON_DEVICE: list[weakref.ref[_LaterDense]] = []
_ON_DEVICE_LOCK = threading.Lock()


def deferral_budget(device: torch.device) -> int:
    """The bytes of deferred tables (:func:`parse`'s results whose P_left has not
    been asked for yet) that a device keeps before the oldest move to the host: a quarter
    of a CUDA device's memory; none on other devices (whose batches' tables move to the
    host as soon as they are parsed, their matrices then made on the CPU)."""
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).total_memory // 4
    return 0


def _hold_on_device(batch: _LaterDense, device: torch.device) -> None:
    """Register a deferred batch on ``device``, then keep the device's deferred tables
    within :func:`deferral_budget` (:func:`spill_deferred`)."""
    with _ON_DEVICE_LOCK:
        _ON_DEVICE.append(weakref.ref(batch))
    spill_deferred(device, keep=deferral_budget(device))


def spill_deferred(device: Any = None, keep: int = 0) -> int:
    """Move the tables of deferred results from a device to the host, oldest first, until
    at most ``keep`` bytes of them are left on it.

    A result of the torch backend on a device keeps its batch's tables there until its
    P_left or P_right is first asked for (then all the batch's matrices are made and
    copied to the host at once); :func:`parse` keeps their total within
    :func:`deferral_budget`, and :func:`fastdcyk.engine.batch.dcyk_batch` moves them all
    when the device runs out of memory. Moved tables make their matrices on the CPU.

    Parameters
    ----------
    device : torch.device or str, optional
        Only this device's (default: every device's).
    keep : int, default 0
        The bytes that may stay.

    Returns
    -------
    int
        The bytes moved.
    """
    dev = None if device is None else torch.device(device)
    with _ON_DEVICE_LOCK:
        _ON_DEVICE[:] = [ref for ref in _ON_DEVICE if _live_on_device(ref())]
        batches = [b for ref in _ON_DEVICE if (b := ref()) is not None]
    if dev is not None:  # a device without an index: every device of its type
        index = dev.index
        batches = [
            b
            for b in batches
            if b.device is not None
            and b.device.type == dev.type
            and (index is None or b.device.index == index)
        ]
    held = sum(b.device_bytes() for b in batches)
    moved = 0
    for b in batches:  # oldest first
        if held <= keep:
            break
        got = b.spill()
        held -= got
        moved += got
    return moved


def _live_on_device(batch: _LaterDense | None) -> bool:
    return batch is not None and batch.device is not None


def _host_matrices(
    p_left: torch.Tensor, p_right: torch.Tensor | None, codebook: Codebook
) -> tuple[list[np.ndarray | None], list[np.ndarray | None]]:
    """A batch's (B, d, d) matrices as one host array per sentence (:func:`_host_matrix`);
    ``p_right`` None (never written: the clean-up gate's) as zeros of each one's own."""
    left: list[np.ndarray | None] = [_host_matrix(m, codebook.dtype) for m in p_left]
    if p_right is None:
        shape = (codebook.d, codebook.d)
        return left, [np.zeros(shape, codebook.dtype) for _ in left]
    return left, [_host_matrix(m, codebook.dtype) for m in p_right]


def _host_matrix(m: torch.Tensor, dtype: np.dtype) -> np.ndarray:
    """One sentence's (d, d) matrix as a C-ordered array of its own on the host: one copy
    to the host, from the device or, on the CPU, out of the batch's tensor (so that a
    result does not keep the whole batch alive). Some parsers give P as a transposed view:
    on a device it is made C-ordered there first (one temporary d x d matrix on the
    device). Its dtype is the codebook's (``dtype``; never converted)."""
    if m.device.type == "cpu":
        host = np.array(m.numpy(), order="C")
    else:
        host = m.contiguous().cpu().numpy()
    if host.dtype != dtype:
        raise TypeError(f"P is {host.dtype}; the codebook's dtype is {dtype} (a bug: report it)")
    return host

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

from fastdcyk.engine.backends.torch.device import check_device
from fastdcyk.engine.backends.torch.later import LaterDense, hold_on_device, host_matrices
from fastdcyk.engine.backends.torch.parser import (
    SymbolVectors,
    TorchParse,
    TorchParser,
    all_finite,
    symbol_vectors,
)
from fastdcyk.engine.core import schedule
from fastdcyk.engine.core.decode import Statistics, chart_from_statistics
from fastdcyk.engine.core.deferred import DeferredArray
from fastdcyk.engine.core.result import DCYKResult
from fastdcyk.engine.core.rules import RuleStructure, rule_structure
from fastdcyk.engine.core.soft import has_soft, terminal_weights
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
    "parse",
    "parse_tensors",
    "release_caches",
    "symbol_vectors",
]


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
        :func:`~fastdcyk.engine.backends.torch.later.spill_deferred`). ``dense=False`` leaves
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
            batch = LaterDense(res.later, codebook)
            if vec.device.type != "cpu":
                hold_on_device(batch, vec.device)
            shape, dtype, count = (codebook.d, codebook.d), codebook.dtype, len(sentences)
            p_left = [DeferredArray(partial(batch.left, b), shape, dtype) for b in range(count)]
            p_right = [DeferredArray(partial(batch.right, b), shape, dtype) for b in range(count)]
        elif dense:
            # checked where the matrices are (on a GPU: no pass over them on the host)
            for name, m in (("P_left", res.p_left), ("P_right", res.p_right)):
                if m is not None and not all_finite(m):
                    raise schedule.non_finite(f"{name} after the parse")
            p_left, p_right = host_matrices(res.p_left, res.p_right, codebook)
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

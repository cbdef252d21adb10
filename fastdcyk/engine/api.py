"""The D-CYK engine: the paper's unary and binary algorithms over two d x d accumulators.

The table P is kept as two dense matrices (docs/method.md, section 1),

.. math::

    P_{left} = \\sum_{(i,j,X)} [i]^- [j]^- [X]^- D_{ijX}, \\qquad
    P_{right} = \\sum_{(i,j,X)} [X]^+ [i]^+ [j]^+ D_{ijX},

and filled by the paper's Algorithms 2 (unary) and 3 (binary) with the two corrections of
docs/method.md, section 2 (binary rules encoded as [B]+ [C]-, span check [j]- [i]+). Every operator
is an implicit :class:`~fastdcyk.hrr.operators.Operator`; P_left and P_right are the only d x d
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

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fastdcyk.cfg.grammar import Grammar
from fastdcyk.engine.numpy_backend import parse_numpy
from fastdcyk.engine.plan import Plan, prepare_from
from fastdcyk.engine.progress import check_progress, progress_bar
from fastdcyk.engine.result import DCYKResult
from fastdcyk.hrr.codebook import Codebook
from fastdcyk.options import DCYKOptions

__all__ = ["dcyk", "parse_plan"]


def parse_plan(
    plan: Plan,
    backend: str,
    *,
    device: Any = None,
    decode: bool = True,
    record: bool = False,
    on_cell: Callable[[], None] | None = None,
) -> list[DCYKResult]:
    """Parse every sentence of a prepared plan with a backend, in one batch for torch.

    The one place where a backend is chosen: ``"numpy"`` parses the sentences one at a time
    (:func:`fastdcyk.engine.numpy_backend.parse_numpy`), ``"torch"`` as one batch
    (:func:`fastdcyk.engine.torch_backend.parse_sentences`). ``on_cell`` is called after
    every cell (a progress bar).
    """
    if backend == "torch":
        from fastdcyk.engine import torch_backend

        kw = {"device": device, "decode": decode, "record": record, "on_cell": on_cell}
        fields = torch_backend.parse_sentences(
            plan.grammar, plan.sentences, plan.codebook, plan.options, **kw
        )
        return [DCYKResult(**f) for f in fields]
    kw = {"decode": decode, "record": record, "on_cell": on_cell}
    return [
        parse_numpy(plan.grammar, ws, plan.codebook, plan.options, **kw) for ws in plan.sentences
    ]


def dcyk(
    grammar: Grammar | str,
    words: str | Sequence[str],
    codebook: Codebook | None = None,
    *,
    d: int | None = None,
    seed: int = 0,
    dtype: Any = None,
    variant: str | None = None,
    gate: str | None = None,
    decoder: str | None = None,
    unary_mask: bool | None = None,
    beta: float | None = None,
    threshold: float | None = None,
    prune: float | None = None,
    order: str | None = None,
    encoding: str | None = None,
    readback: str | None = None,
    candidate_level: float | None = None,
    unitary: bool | None = None,
    engine: Any = "auto",
    decode: bool = True,
    check_memory: bool = True,
    progress: bool | float = False,
    record: bool = False,
    backend: str = "numpy",
    device: Any = None,
    options: DCYKOptions | None = None,
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
    variant : {"paper", "trace", "cleanup"}, optional
        Default ``"paper"`` (:data:`fastdcyk.options.DEFAULT_VARIANT`). ``"paper"``: the
        faithful algorithm (entrywise gate, entry (0, 0) decoder), with the
        corrections of docs/method.md, section 2. ``"trace"``: the improved preset (trace gate
        and trace decoder, docs/method.md, section 3). ``"cleanup"``: the trace variant's
        codebook with the clean-up detection and the least-squares read-back, for grammars
        of thousands of rules and cells of hundreds of symbols (docs/method.md, sections 6
        and 7; P_left only).
    gate, decoder, unary_mask : optional
        Override one ingredient of the preset: ``gate`` in {"entrywise", "trace", "cleanup"},
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
    readback : {"lstsq", "matched"}, optional
        How the clean-up gate reads a completed cell, both for its parents and for the
        chart (docs/method.md, section 7). ``"lstsq"`` (its default): the cell's candidates
        (the nonterminals whose detection t_A exceeds ``candidate_level``, the only updates
        written) are read together by least squares over their vectors, so that the
        symbols of a cell no longer blur each other; every other nonterminal reads 0.
        ``"matched"``: every nonterminal is read with its own matched filter (the trace
        decoder), as before 0.3; the final chart is then the trace decoder's (or with
        ``decoder="entry"`` the entry decoder's). Other gates read with their decoder and
        accept ``"matched"`` only.
    candidate_level : float, optional
        The detection t_A above which a nonterminal is a candidate of its cell under
        ``readback="lstsq"`` (default 0.25, :data:`fastdcyk.options.DEFAULT_CANDIDATE_LEVEL`).
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
        (:mod:`fastdcyk.engine.torch_backend`; needs ``pip install 'fastdcyk[torch]'``).
        In float64 its accumulators equal the numpy engine's to rounding; the result is the same
        type.
    device : torch.device or str, optional
        Where the torch backend computes (default the CPU); only with ``backend="torch"``.
    options : DCYKOptions, optional
        The options as one object (``variant`` to ``encoding``), instead of the keywords;
        giving both is refused.

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
    delay = check_progress(progress)
    if not isinstance(record, bool | np.bool_):
        raise ValueError(f"record must be True or False, got {record!r}")
    plan = prepare_from(locals(), [words])
    (ws,) = plan.sentences
    where = " (torch)" if backend == "torch" else ""
    bar = progress_bar(delay, len(ws) * (len(ws) + 1) // 2, f"D-CYK d={plan.codebook.d}{where}")
    try:
        on_cell = None if bar is None else (lambda: bar.update(1))
        kw = {"device": device, "decode": decode, "record": record, "on_cell": on_cell}
        return parse_plan(plan, backend, **kw)[0]
    finally:
        if bar is not None:
            bar.close()

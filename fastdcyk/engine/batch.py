"""Parsing many sentences at once: :func:`dcyk_batch`.

By default the numpy backend parses them one at a time, as :func:`fastdcyk.dcyk` does (on a
CPU the fastest way), each at the d its certificate chooses. With a device (or
``backend="torch"``) the torch backend parses them in batches
(:mod:`fastdcyk.engine.backends.torch.driver`, the numpy backend's algorithm in PyTorch,
docs/method.md, sections 2-4): sentences of similar length go into one batch, the cells they
share are computed together, and a cell beyond a sentence's length is masked out of its
updates. Either way every sentence gets the :class:`~fastdcyk.engine.DCYKResult` that
``dcyk`` would return for it with the same codebook and options.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from fastdcyk.cfg.grammar import Grammar
from fastdcyk.checks import check_dtype, check_int
from fastdcyk.engine import auto
from fastdcyk.engine.api import dcyk, name_given_d, parse_plan
from fastdcyk.engine.core.certificate import Certificate
from fastdcyk.engine.core.plan import Plan
from fastdcyk.engine.core.result import DCYKResult, DimensionChoice
from fastdcyk.engine.prepare import (
    cnf_grammar,
    map_unknown,
    option_keywords,
    prepare,
    words_of,
)
from fastdcyk.engine.progress import check_progress, progress_bar
from fastdcyk.hrr.codebook import Codebook
from fastdcyk.options import DCYKOptions, check_backend, resolve, takes_options
from fastdcyk.registry import backends
from fastdcyk.registry.backends import Backend

__all__ = ["checked_sentences", "dcyk_batch", "in_batches"]

T = TypeVar("T")
R = TypeVar("R")


def in_batches(
    items: Sequence[T],
    size: int,
    parse: Callable[[list[T]], list[R]],
    backend: Backend,
    device: Any,
    too_large: Callable[[T], str],
) -> Iterator[tuple[list[T], list[R], float]]:
    """``(chunk, parse(chunk), seconds)`` over ``items``, in order, in chunks of at most
    ``size``: a batched backend's batches (the torch backend's).

    When a torch device runs out of memory on a chunk, the tables that earlier results
    keep on it are moved to the host (the backend's ``spill``:
    :func:`fastdcyk.engine.backends.torch.later.spill_deferred`) and the chunk is tried
    again at its size; when there are none to move, the free blocks of its caching
    allocator are given back and the chunk is tried again at half the size.

    Raises
    ------
    MemoryError
        When a chunk of one item does not fit: the message is ``too_large(item)``.
    """
    import torch

    spill: Callable[[Any], int] | None = None
    if device is not None and torch.device(device).type != "cpu":
        spill = backend.part("spill")
    start = 0
    while start < len(items):
        chunk = list(items[start : start + size])
        t0 = time.perf_counter()
        try:
            got = parse(chunk)
        except torch.cuda.OutOfMemoryError:
            got = None  # handled below, once the failed batch's tensors are let go
        if got is None:
            # earlier results' tables moved to the host (the same chunk again), else halved
            if spill is not None and spill(device):
                torch.cuda.empty_cache()
                continue
            if torch.cuda.is_available() and "cuda" in str(device):
                torch.cuda.empty_cache()
            if size == 1:
                raise MemoryError(too_large(chunk[0])) from None
            size = max(1, size // 2)
            continue
        yield chunk, got, time.perf_counter() - t0
        start += len(chunk)


@takes_options()
def dcyk_batch(
    grammar: Grammar | str,
    sentences: Sequence[str | Sequence[str]],
    codebook: Codebook | None = None,
    *,
    d: int | str | None = None,
    seed: int | None = None,
    dtype: Any = None,
    unitary: bool | None = None,
    fft: Any = "auto",
    decode: bool = True,
    check_memory: bool = True,
    backend: str | None = None,
    device: Any = None,
    batch_size: int | None = None,
    options: DCYKOptions | None = None,
    max_d: int | None = None,
    unknown: str = "refuse",
    progress: bool | float | None = None,
    **keywords: Any,
) -> list[DCYKResult]:
    """Parse sentences with D-CYK, in batches: one :class:`DCYKResult` per sentence.

    Parameters
    ----------
    grammar : Grammar or str
    sentences : sequence of str or of sequences of str
        The sentences (a str is split on whitespace), each checked as :func:`fastdcyk.dcyk`
        checks one (soft terminals included: a mapping ``{terminal: weight}`` at a
        position).
    codebook, d, seed, dtype, unitary, fft, decode, check_memory, max_d, unknown
        As for :func:`fastdcyk.dcyk`; one codebook (given or built here) serves every
        sentence. d left out, or ``"auto"``: as :func:`fastdcyk.dcyk` chooses it, each
        sentence's by the certificate where the options give one (the default variant),
        1024 otherwise. With the torch backend, the sentences are first parsed so by the
        numpy backend, the batch is parsed at the largest d chosen, and each result
        carries the numpy parse's certificate for its chart (``sure``: the torch chart is
        the one the certificate vouched for; a cell where it differs is suspect) and
        says so in ``dimension``.
    {options}
    backend : {"numpy", "torch"}, optional
        Default: where the parse runs, the backend that is fastest there
        (:func:`fastdcyk.registry.backends.for_device`): ``"numpy"``, one sentence at a
        time (on a CPU faster than the torch backend's batches: docs/performance.md,
        "Many sentences on a CPU"), or ``"torch"`` when a ``device`` is given (on a GPU,
        batches of sentences at once: :mod:`fastdcyk.engine.backends.torch.driver`).
    device : torch.device or str, optional
        Where the torch backend computes (``"cuda"``; giving one selects the torch backend).
    batch_size : int, optional
        Sentences per torch batch (the numpy backend, one sentence at a time, has no
        batches: refused there). The sentences are sorted by length first, so that a
        batch wastes little work on the cells of its longer sentences. Default
        (:func:`fastdcyk.engine.backends.torch.device.default_batch_size`): as many as keep
        the accumulators within a cache's worth on a CPU (batching does not pay once they
        leave the caches) or 1 GB on a GPU, at most 64.
    options : DCYKOptions, optional
        As for :func:`fastdcyk.dcyk`.
    progress : bool, float or None, default None
        A progress bar over the sentences (tqdm.auto), as :func:`fastdcyk.dcyk`'s over a
        parse's detections: None, once the parses have run 2 seconds and only on a
        terminal; a number, after that many seconds; True at once; False never.

    Returns
    -------
    list of DCYKResult
        In the order of ``sentences``; with the defaults, what :func:`fastdcyk.dcyk`
        returns for each sentence (``sure``, ``certificate`` and ``dimension`` set).

    Raises
    ------
    ValueError, ImportError, MemoryError, FloatingPointError
        As :func:`fastdcyk.dcyk`.

    Examples
    --------
    >>> import fastdcyk as fd
    >>> from fastdcyk import dcyk_batch
    >>> g = fd.Grammar.builtin("example")
    >>> rs = dcyk_batch(g, ["a a b", "a b"])
    >>> [(sorted(r.chart[(0, len(r.words))]), r.sure, r.codebook.d) for r in rs]
    [(['S'], True, 128), (['S'], True, 128)]
    """
    if batch_size is not None:
        check_int("batch_size", batch_size, 1)
    if isinstance(sentences, str):
        raise TypeError("sentences must be a sequence of sentences, not one str")
    if not hasattr(sentences, "__len__") or not hasattr(sentences, "__getitem__"):
        raise TypeError(
            "sentences must be a sequence of sentences (each a str or a sequence of words), "
            f"got {type(sentences).__name__}"
        )
    if len(sentences) == 0:
        return []
    if unknown != "refuse":  # the grammar read once, for the mapping and the parse
        grammar = cnf_grammar(grammar)
        sentences = [map_unknown(grammar, s, unknown) for s in sentences]
    delay = check_progress(progress)
    opts = option_keywords(options, keywords)
    kw = {"seed": seed, "dtype": dtype, "unitary": unitary, "fft": fft}
    driver = check_backend(backends.for_device(device) if backend is None else backend, device)
    if batch_size is not None and not driver.batched:
        raise ValueError(
            f"batch_size is for a backend that parses in batches (torch); the {driver.name} "
            "backend parses one sentence at a time: leave batch_size out, or give "
            "backend='torch'"
        )
    g = cnf_grammar(grammar)
    every = checked_sentences(g, sentences)  # every sentence checked before any parse
    if codebook is None and _chosen_by_certificate(d, dtype, opts):
        t0 = time.perf_counter()
        bar = progress_bar(delay, len(every), "D-CYK", "sentence")
        try:
            first = []
            # with a backend that gives no certificate, the batch's d is the largest
            # chosen: each sentence's d one it needed, not a probe's
            choosing = contextlib.nullcontext() if driver.certificate else auto.needed()
            with choosing:
                for ws in every:  # as dcyk parses each one, d chosen by its certificate
                    first.append(
                        dcyk(
                            g,
                            ws,
                            d="auto",
                            decode=decode or not driver.certificate,
                            check_memory=check_memory,
                            backend=driver.name if driver.certificate else "numpy",
                            device=device if driver.certificate else None,
                            progress=False,
                            max_d=max_d,
                            **kw,
                            **opts,
                        )
                    )
                    if bar is not None:
                        bar.update(1)
        finally:
            if bar is not None:
                bar.close()
        if driver.certificate:
            return first
        d = max(r.codebook.d for r in first)  # one d for the batch: the largest chosen
        results = _parse_batch(
            g, every, None, d, kw, decode, check_memory, driver.name, device, batch_size,
            opts, None,
        )  # fmt: skip
        tried = tuple(sorted({r.codebook.d for r in first}))
        seconds = time.perf_counter() - t0
        for r, ref in zip(results, first, strict=True):
            r.certificate = _vouched(ref, r)
            why = (
                f"the largest d that d='auto' chose for the batch's {len(every)} sentences, "
                f"{ref.codebook.d} for this one (numpy backend), whose certificate vouches "
                f"for the {driver.name} backend's chart where they agree"
            )
            r.dimension = DimensionChoice(d, tried, r.sure, max_d or auto.MAX_D, why, seconds)
        return results
    if max_d is not None:
        raise ValueError("max_d applies to d='auto' only: pass d='auto' with it")
    return _parse_batch(
        g, every, codebook, d, kw, decode, check_memory, driver.name, device, batch_size,
        opts, delay,
    )  # fmt: skip


def checked_sentences(grammar: Grammar, sentences: Sequence[Any]) -> list[tuple[Any, ...]]:
    """Each sentence checked as :func:`fastdcyk.dcyk` checks one, a refusal naming the
    sentence by its index (0-based) in the batch."""
    every = []
    for k, s in enumerate(sentences):
        try:
            every.append(words_of(grammar, s))
        except (ValueError, TypeError) as exc:
            raise type(exc)(f"sentence {k} of the batch (0-based): {exc}") from None
    return every


def _chosen_by_certificate(d: Any, dtype: Any, opts: dict[str, Any]) -> bool:
    """Whether d is chosen as :func:`fastdcyk.dcyk` chooses it: ``"auto"``, or left out with
    options whose parse gives a certificate (else d left out is 1024)."""
    if auto.is_auto(d):
        return True
    return d is None and auto.certified(resolve(dtype=check_dtype(dtype), **opts))


def _vouched(ref: DCYKResult, got: DCYKResult) -> Certificate | None:
    """The certificate of the numpy parse ``ref`` for ``got``'s chart (the same sentence
    parsed by another backend): ``ref``'s own where the charts agree, else with every cell
    where they differ suspect (bound 1, margin 0: no read vouches for it). None without a
    certificate or a chart."""
    cert = ref.certificate
    if cert is None or got.chart is None or ref.chart is None:
        return None
    differ = [span for span, cell in got.chart.items() if cell != ref.chart[span]]
    if not differ:
        return cert
    bounds, margins = cert.bounds.copy(), cert.margins.copy()
    for i, j in differ:
        bounds[i, j], margins[i, j] = 1.0, 0.0
    return replace(cert, bounds=bounds, margins=margins)


def _parse_batch(
    grammar: Grammar | str,
    sentences: Sequence[str | Sequence[str]],
    codebook: Codebook | None,
    d: int | None,
    kw: dict[str, Any],
    decode: bool,
    check_memory: bool,
    backend: str,
    device: Any,
    batch_size: int | None,
    opts: dict[str, Any],
    delay: float | None,
) -> list[DCYKResult]:
    """:func:`dcyk_batch` at one d (``kw``: seed, dtype, unitary and fft), with a progress
    bar over the sentences after ``delay`` seconds (None: none)."""
    plan = prepare(
        grammar,
        sentences,
        codebook,
        d=d,
        check_memory=check_memory,
        backend=backend,
        device=device,
        options=opts,
        **kw,
    )
    driver = check_backend(backend)
    if not driver.batched:  # one sentence at a time: nothing to group
        bar = progress_bar(delay, len(plan.sentences), "D-CYK", "sentence")
        done: list[DCYKResult] = []
        try:
            for ws in plan.sentences:
                one = Plan(plan.grammar, [ws], plan.options, plan.codebook)
                done += parse_plan(one, backend, decode=decode)
                if bar is not None:
                    bar.update(1)
        finally:
            if bar is not None:
                bar.close()
        name_given_d(done, d, codebook)
        return done
    if batch_size is None:
        batch_size = driver.part("batch_size")(plan.codebook.d, plan.codebook.dtype, device)
    words = plan.sentences
    order_by_length = sorted(range(len(words)), key=lambda k: len(words[k]))
    results: list[DCYKResult | None] = [None] * len(words)

    def parse(chunk: list[int]) -> list[DCYKResult]:
        part = Plan(plan.grammar, [words[k] for k in chunk], plan.options, plan.codebook)
        return parse_plan(part, backend, device=device, decode=decode)

    def too_large(k: int) -> str:
        return (
            f"the torch device {str(device)!r} ran out of memory parsing one sentence of "
            f"{len(words[k])} words at d = {plan.codebook.d} ({plan.codebook.dtype}): use a "
            "smaller d, float32, or a device with more memory"
        )

    batches = in_batches(order_by_length, batch_size, parse, driver, device, too_large)
    bar = progress_bar(delay, len(words), "D-CYK", "sentence")
    try:
        for chunk, got, _ in batches:
            for k, r in zip(chunk, got, strict=True):
                results[k] = r
            if bar is not None:
                bar.update(len(chunk))
    finally:
        if bar is not None:
            bar.close()
    name_given_d(results, d, codebook)  # type: ignore[arg-type]
    return results  # type: ignore[return-value]

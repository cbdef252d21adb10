"""Parsing many sentences at once: :func:`dcyk_batch`.

With ``backend="torch"`` the sentences are parsed in batches by
:mod:`fastdcyk.engine.backends.torch.driver` (the numpy backend's algorithm in PyTorch,
docs/method.md, sections 2-4): sentences of similar length go into one batch, the cells they share
are computed together, and a cell beyond a sentence's length is masked out of its updates. With
``backend="numpy"`` the numpy backend parses them one at a time, as :func:`fastdcyk.dcyk` does.
Either way every sentence gets the :class:`~fastdcyk.engine.DCYKResult` that ``dcyk`` would return
for it with the same codebook and options.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from fastdcyk.cfg.grammar import Grammar
from fastdcyk.checks import check_int
from fastdcyk.engine import auto
from fastdcyk.engine.api import dcyk, parse_plan, sample_dimension
from fastdcyk.engine.core.plan import Plan
from fastdcyk.engine.core.result import DCYKResult, DimensionChoice
from fastdcyk.engine.prepare import (
    cnf_grammar,
    map_unknown,
    option_keywords,
    prepare,
    words_of,
)
from fastdcyk.hrr.codebook import Codebook
from fastdcyk.options import DCYKOptions, check_backend, takes_options
from fastdcyk.registry.backends import Backend

__all__ = ["dcyk_batch", "in_batches"]

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
    backend: str = "torch",
    device: Any = None,
    batch_size: int | None = None,
    options: DCYKOptions | None = None,
    max_d: int | None = None,
    unknown: str = "refuse",
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
        sentence. ``d="auto"``: with the numpy backend, each sentence's d is chosen as
        :func:`fastdcyk.dcyk` chooses it (so is d left out); with the torch backend, the
        batch's d is :func:`fastdcyk.choose_dimension` of its sentences (numpy parses
        first), and each result's ``dimension`` says so. Left out with the torch
        backend: 1024.
    {options}
    backend : {"torch", "numpy"}, default "torch"
        ``"torch"``: :mod:`fastdcyk.engine.backends.torch.driver` on batches of sentences (the
        reason to call this function, hence a default other than :func:`fastdcyk.dcyk`'s);
        ``"numpy"``: the numpy backend, one sentence at a time (every check made once for
        all of them).
    device : torch.device or str, optional
        Where the torch backend computes (default the CPU).
    batch_size : int, optional
        Sentences per torch batch (the sentences are sorted by length first, so that a
        batch wastes little work on the cells of its longer sentences). Default
        (:func:`fastdcyk.engine.backends.torch.device.default_batch_size`): as many as keep
        the accumulators within a cache's worth on a CPU (batching does not pay once they
        leave the caches) or 1 GB on a GPU, at most 64.
    options : DCYKOptions, optional
        As for :func:`fastdcyk.dcyk`.

    Returns
    -------
    list of DCYKResult
        In the order of ``sentences``.

    Raises
    ------
    ValueError, ImportError, MemoryError, FloatingPointError
        As :func:`fastdcyk.dcyk`.

    Examples
    --------
    >>> import fastdcyk as fd
    >>> from fastdcyk import dcyk_batch
    >>> g = fd.Grammar.builtin("example")
    >>> rs = dcyk_batch(g, ["a a b", "a b"], d=256, variant="trace", backend="numpy")
    >>> [sorted(r.chart[(0, len(r.words))]) for r in rs]
    [['S'], ['S']]
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
    opts = option_keywords(options, keywords)
    kw = {"seed": seed, "dtype": dtype, "unitary": unitary, "fft": fft}
    driver = check_backend(backend, device)
    if driver.certificate and codebook is None and (d is None or auto.is_auto(d)):
        g = cnf_grammar(grammar)
        every = [words_of(g, s) for s in sentences]  # every sentence checked first
        return [
            dcyk(
                g,
                ws,
                d=d,
                decode=decode,
                check_memory=check_memory,
                progress=False,
                max_d=max_d,
                **kw,
                **opts,
            )
            for ws in every
        ]
    chosen = None
    if auto.is_auto(d):
        auto.refuse_codebook(codebook)
        t0 = time.perf_counter()
        given = kw | {"max_d": max_d, "seed": 0 if seed is None else seed}
        d, sure = sample_dimension(grammar, sentences, False, opts, given)
        chosen = DimensionChoice(
            d,
            (d,),
            sure,
            max_d or auto.MAX_D,
            f"the largest d that d='auto' chose for the batch's {len(sentences)} sentences "
            "(numpy backend; fastdcyk.choose_dimension)",
            time.perf_counter() - t0,
        )
    elif max_d is not None:
        raise ValueError("max_d applies to d='auto' only: pass d='auto' with it")
    results = _parse_batch(
        grammar, sentences, codebook, d, kw, decode, check_memory, backend, device, batch_size, opts
    )
    if chosen is not None:
        for r in results:
            r.dimension = chosen
    return results


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
) -> list[DCYKResult]:
    """:func:`dcyk_batch` at one d (``kw``: seed, dtype, unitary and fft)."""
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
        return parse_plan(plan, backend, decode=decode)
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
    for chunk, got, _ in batches:
        for k, r in zip(chunk, got, strict=True):
            results[k] = r
    return results  # type: ignore[return-value]

"""How much memory a parse needs, and the check that refuses one that cannot fit.

:func:`estimate_memory` sums the declared d x d arrays (:mod:`fastdcyk.hrr.buffers`) that a
parse with given options holds; :func:`check_parse_memory` compares it with the memory
available (:mod:`fastdcyk.hrr.memory`) before anything of size d is allocated.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fastdcyk.checks import check_dim, check_dtype, check_int
from fastdcyk.engine.backends.numpy.accounting import Held
from fastdcyk.hrr import buffers
from fastdcyk.hrr import memory as system_memory
from fastdcyk.hrr.blocks import block_bytes
from fastdcyk.hrr.buffers import g_cache_slots, g_kept_slots
from fastdcyk.hrr.fft import get_fft
from fastdcyk.options import DCYKOptions, resolve, takes_options
from fastdcyk.registry.backends import Backend

__all__ = [
    "check_memory",
    "check_parse_memory",
    "estimate_memory",
    "largest_fitting_d",
    "parse_bytes",
    "work_buffers",
]


def work_buffers(opt: DCYKOptions, blockwise: bool, slots: int, kept: int = 0) -> Held:
    """The d x d arrays a numpy parse with options ``opt`` holds, as its mode lists them
    (:attr:`Mode.buffers <fastdcyk.registry.modes.Mode>`; a mode that lists none holds the
    dense results only).

    Parameters
    ----------
    opt : DCYKOptions
    blockwise : bool
        Whether the FFT library applies operator chains block by block (no d x d buffer
        inside a chain).
    slots : int
        The G_k matrices a spectral parse keeps (:func:`~fastdcyk.hrr.buffers.g_cache_slots`).
    kept : int, default 0
        Those the codebook keeps for its next parse (:func:`~fastdcyk.hrr.buffers.g_kept_slots`).
    """
    held = opt.mode.part("buffers")
    if held is None:
        return Held([], [buffers.P_LEFT, buffers.P_RIGHT])
    return held(opt, blockwise, slots, kept)


@takes_options(exclude=("variant",))
def estimate_memory(
    d: int,
    dtype: Any = "float32",
    fft: Any = "auto",
    threads: int | None = None,
    *,
    variant: str = "paper",
    n: int = 10,
    **options: Any,
) -> int:
    """Peak bytes of the d x d arrays one parse needs (accumulators, work buffers, results).

    Parameters
    ----------
    d : int
    dtype : {"float32", "float64"}
    fft, threads
        As for :class:`Codebook`: the FFT library and its threads.
    variant : {"paper", "trace", "cleanup"}, default "paper"
        As for :func:`dcyk`.
    n : int, default 10
        Sentence length (the spectral parsers keep up to n + 1 index matrices, within
        :data:`~fastdcyk.hrr.buffers.G_CACHE_BYTES`).
    {options}

    Returns
    -------
    int
        Bytes; the larger of the figure during the parse and at its end.
    """
    opt = resolve(variant, **options)
    n = check_int("the sentence length n", n, 1)
    return parse_bytes(check_dim(d), check_dtype(dtype), get_fft(fft, threads), opt, n)


def parse_bytes(d: int, dtype: Any, fft: Any, opt: DCYKOptions, n: int) -> int:
    """:func:`estimate_memory` of resolved options ``opt`` (with the FFT ``fft``)."""
    library = get_fft(fft)
    slots = g_cache_slots(d, dtype, n)
    held = work_buffers(opt, library.blockwise, slots, g_kept_slots(d, dtype, slots))
    size = {
        when: sum(b.nbytes(d, dtype) for b in held_)
        for when, held_ in (("during", held.during), ("end", held.end))
    }
    if library.blockwise and held.chains is not None:  # the blocks of operator chains
        size[held.chains] += block_bytes(d, dtype, library.threads)
    return max(size.values())


def largest_fitting_d(
    memory: int,
    dtype: Any = "float32",
    fft: Any = "auto",
    *,
    upper: int = 1 << 40,
    options: DCYKOptions | None = None,
    **keywords: Any,
) -> int | None:
    """The largest d whose parse fits in ``memory`` bytes by :func:`estimate_memory`.

    Parameters
    ----------
    memory : int
        Bytes available.
    dtype, fft
        As for :func:`estimate_memory`.
    upper : int, optional
        Look no higher than this d.
    options : DCYKOptions, optional
        The parse's options, resolved; or, without them, the keywords below.
    **keywords
        The other keywords of :func:`estimate_memory` (threads, n, and without ``options``
        the variant and the options).

    Returns
    -------
    int or None
        None when not even d = 2 fits.
    """
    library = get_fft(fft, keywords.pop("threads", None))
    n = check_int("the sentence length n", keywords.pop("n", 10), 1)
    if options is None:
        options = resolve(keywords.pop("variant", "paper"), **keywords)
    elif keywords:
        raise TypeError(f"options= and the keywords {sorted(keywords)} were both given")

    def fits(d: int) -> bool:
        return parse_bytes(d, dtype, library, options, n) <= memory

    if not fits(2):
        return None
    lo, hi = 2, max(2, int(upper))
    if fits(hi):
        return hi
    while hi - lo > 1:  # lo fits, hi does not
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


def check_memory(
    backend: Backend,
    d: int,
    dtype: Any,
    fft: Any,
    opt: DCYKOptions,
    n: int,
    *,
    sentences: int = 1,
    device: Any = None,
    held: int = 0,
) -> None:
    """Raise MemoryError, before anything of size d is allocated, when a parse with
    ``backend`` cannot fit where it computes: the check its record names
    (:attr:`fastdcyk.registry.backends.Backend.memory`; the numpy backend's
    :func:`check_parse_memory`, the torch backend's the batch's tables on its device). The
    check of :func:`fastdcyk.engine.prepare.prepare` and of :class:`fastdcyk.nn.DCYK`'s
    batches.

    Parameters
    ----------
    backend : Backend
    d : int
    dtype : numpy dtype
    fft : FFT library
    opt : DCYKOptions
    n : int
        The longest sentence's length.
    sentences : int, default 1
        The sentences parsed together.
    device : optional
        Where the backend computes.
    held : int, default 0
        Bytes of work buffers a given codebook already holds (they are reused).
    """
    check = backend.part("memory")
    if check is not None:
        check(d, dtype, fft, opt, n, sentences=sentences, device=device, held=held)


def check_parse_memory(
    d: int,
    dtype: Any,
    fft: Any,
    opt: DCYKOptions,
    n: int,
    held: int = 0,
    *,
    sentences: int = 1,
    device: Any = None,
) -> None:
    """Raise MemoryError, before anything of size d is allocated, when a numpy parse cannot
    fit (the numpy backend's check: its sentences are parsed one at a time, on the host).

    ``held``: bytes of work buffers the codebook already holds (they are reused).
    """
    need = parse_bytes(d, dtype, fft, opt, n) - held
    avail = system_memory.available_memory()
    if avail is None or need <= avail:
        return
    dtype = np.dtype(dtype)
    # a tenth of the memory kept free for what the estimate leaves out; 3 significant digits
    fits = largest_fitting_d(int(0.9 * avail) + held, dtype, fft, upper=d, options=opt, n=n)
    hint = "use a smaller d"
    if fits is not None:
        step = 10 ** max(0, len(str(fits)) - 3)
        fits = max(2, fits - fits % step)
        hint += f" (at most about d = {fits} fits in the memory available now)"
    if dtype == np.float64:
        hint = "use dtype='float32' or " + hint[4:]
    raise MemoryError(
        f"D-CYK at d = {d} in {dtype} needs about {system_memory.format_bytes(need)}"
        f"{' more' if held else ''} for its accumulators and work buffers, but only "
        f"{system_memory.format_bytes(avail)} of memory is available: {hint}. (From Python, "
        "check_memory=False, an argument of dcyk and dcyk_batch, tries anyway.)"
    )

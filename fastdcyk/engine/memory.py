"""How much memory a parse needs, and the check that refuses one that cannot fit.

:func:`estimate_memory` sums the declared d x d arrays (:mod:`fastdcyk.hrr.buffers`) that a
parse with given options holds; :func:`check_parse_memory` compares it with the memory
available (:mod:`fastdcyk.hrr.memory`) before anything of size d is allocated.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fastdcyk.hrr import buffers as B
from fastdcyk.hrr import memory as _memory
from fastdcyk.hrr.blocks import block_bytes
from fastdcyk.hrr.buffers import g_cache_slots, g_kept_slots
from fastdcyk.hrr.codebook import Codebook
from fastdcyk.hrr.fft import get_engine
from fastdcyk.options import SCALAR_GATES, DCYKOptions, check_int, resolve

__all__ = [
    "check_codebook_memory",
    "check_parse_memory",
    "estimate_memory",
    "largest_fitting_d",
    "work_buffers",
]


def work_buffers(
    gate: str,
    order: str,
    decoder: str,
    blockwise: bool,
    slots: int,
    kept: int = 0,
    cancel: bool = False,
) -> tuple[list[B.Buffer], list[B.Buffer]]:
    """The d x d arrays (:mod:`fastdcyk.hrr.buffers`) a parse holds: during it, and at its end.

    The entrywise-gate parser (:class:`~fastdcyk.engine.numpy_backend.EntrywiseParser`)
    keeps both accumulators as half spectra beside two real work buffers and a spectrum buffer,
    plus one spectrum for the shared
    product of a unary cell (``order="cell"``) or of the trace decoder; an engine that
    applies operator chains block by block (:mod:`fastdcyk.hrr.blocks`) needs no d x d buffer
    inside the chains, the others one real one. At the end both dense results exist while
    the work buffers are held. The trace-gate parser
    (:class:`~fastdcyk.engine.numpy_backend.TraceParser`) keeps both accumulators as 2-D half
    spectra, one real work buffer and ``slots`` G_k matrices; at
    its end one accumulator spectrum is still held while both dense results are formed, and
    the ``kept`` G_k matrices the codebook keeps for its next parse
    (:func:`~fastdcyk.hrr.buffers.g_kept_slots`). The cancelling read-back (``cancel``,
    ``readback="cancel"``) holds a second P_left spectrum during the parse: the table less
    what was read.
    """
    if gate in SCALAR_GATES:
        # the clean-up gate neither reads nor writes P_right: no PR spectrum
        pr = [B.PR] if gate == "trace" else []
        during = [B.ZT, *pr, B.W, *(B.g_matrix(k) for k in range(slots))]
        if cancel:
            during.append(B.ZR)
        g_kept = [B.g_matrix(k) for k in range(kept)]
        end = [*pr, B.W, B.Y, B.P_LEFT, B.P_RIGHT, *g_kept]
        if decoder == "entry":  # decoding reads the dense P_left back as a spectrum
            end = [B.W, B.Y, B.P_LEFT, B.P_RIGHT, B.SHUFFLED, B.FL, B.SPECTRUM, *g_kept]
        return during, end
    held = [B.Y, B.W, B.SPECTRUM]
    if order == "cell" or decoder == "trace":
        held.append(B.YHAT)
    if not blockwise:
        held.append(B.APPLY_REAL)
    return [B.FL, B.FR, *held], [*held, B.P_LEFT, B.P_RIGHT]


def estimate_memory(
    d: int,
    dtype: Any = "float32",
    engine: Any = "auto",
    threads: int | None = None,
    *,
    variant: str = "paper",
    gate: str | None = None,
    order: str | None = None,
    decoder: str | None = None,
    readback: str | None = None,
    weights: str | None = None,
    n: int = 10,
) -> int:
    """Peak bytes of the d x d arrays one parse needs (accumulators, work buffers, results).

    Parameters
    ----------
    d : int
    dtype : {"float32", "float64"}
    engine, threads
        As for :class:`Codebook`: the FFT engine and its threads.
    variant, gate, order, decoder, readback, weights
        As for :func:`dcyk`: the options change which buffers a parse holds (the
        cancelling read-back, ``weights="table"``'s default, one more spectrum).
    n : int, default 10
        Sentence length (the trace gate keeps up to n + 1 index matrices, within
        :data:`G_CACHE_BYTES`).

    Returns
    -------
    int
        Bytes; the larger of the figure during the parse and at its end.
    """
    opt = resolve(
        variant, gate=gate, order=order, decoder=decoder, readback=readback, weights=weights
    )
    gate, order, decoder = opt.gate, opt.order, opt.decoder
    check_int("the sentence length n", n, 1)
    eng = get_engine(engine, threads)
    slots = g_cache_slots(d, dtype, n)
    kept = g_kept_slots(d, dtype, slots)
    cancel = opt.readback == "cancel"
    during, end = work_buffers(gate, order, decoder, eng.blockwise, slots, kept, cancel)
    size = [sum(b.nbytes(d, dtype) for b in buffers) for buffers in (during, end)]
    if eng.blockwise and (gate not in SCALAR_GATES or decoder == "entry"):
        # the blocks of operator chains: in the parse, or in the decoder of a dense P_left
        size[1 if gate in SCALAR_GATES else 0] += block_bytes(d, dtype, eng.threads)
    return max(size)


def largest_fitting_d(
    memory: int, dtype: Any = "float32", engine: Any = "auto", *, upper: int = 1 << 40, **options
) -> int | None:
    """The largest d whose parse fits in ``memory`` bytes by :func:`estimate_memory`.

    Parameters
    ----------
    memory : int
        Bytes available.
    dtype, engine
        As for :func:`estimate_memory`.
    upper : int, optional
        Look no higher than this d.
    **options
        The other keywords of :func:`estimate_memory` (threads, variant, gate, order,
        decoder, readback, n).

    Returns
    -------
    int or None
        None when not even d = 2 fits.
    """
    eng = get_engine(engine, options.pop("threads", None))
    if estimate_memory(2, dtype, eng, **options) > memory:
        return None
    lo, hi = 2, max(2, int(upper))
    if estimate_memory(hi, dtype, eng, **options) <= memory:
        return hi
    while hi - lo > 1:  # estimate(lo) fits, estimate(hi) does not
        mid = (lo + hi) // 2
        if estimate_memory(mid, dtype, eng, **options) <= memory:
            lo = mid
        else:
            hi = mid
    return lo


def check_parse_memory(
    d: int, dtype: Any, engine: Any, opt: DCYKOptions, n: int, held: int = 0
) -> None:
    """Raise MemoryError, before anything of size d is allocated, when a parse cannot fit.

    ``held``: bytes of work buffers the codebook already holds (they are reused).
    """
    kw = {"gate": opt.gate, "order": opt.order, "decoder": opt.decoder, "n": n}
    kw["readback"] = opt.readback
    need = estimate_memory(d, dtype, engine, **kw) - held
    avail = _memory.available_memory()
    if avail is None or need <= avail:
        return
    dtype = np.dtype(dtype)
    # a tenth of the memory kept free for what the estimate leaves out; 3 significant digits
    fits = largest_fitting_d(int(0.9 * avail) + held, dtype, engine, upper=d, **kw)
    hint = "use a smaller d"
    if fits is not None:
        step = 10 ** max(0, len(str(fits)) - 3)
        fits = max(2, fits - fits % step)
        hint += f" (at most about d = {fits} fits in the memory available now)"
    if dtype == np.float64:
        hint = "use dtype='float32' or " + hint[4:]
    raise MemoryError(
        f"D-CYK at d = {d} in {dtype} needs about {_memory.format_bytes(need)}"
        f"{' more' if held else ''} for its accumulators and work buffers, but only "
        f"{_memory.format_bytes(avail)} of memory is available: {hint}. (From Python, "
        "dcyk(..., check_memory=False) tries anyway.)"
    )


def check_codebook_memory(cb: Codebook, opt: DCYKOptions, n: int) -> None:
    """:func:`check_parse_memory` for a parse with ``cb`` (its work buffers are reused)."""
    check_parse_memory(cb.d, cb.dtype, cb.engine, opt, n, held=cb.buffer_bytes())

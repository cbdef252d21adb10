"""Where the torch backend computes, and how much it can hold there: the device checked, the
memory a batch needs on it checked, the default batch size (the parts the ``"torch"``
record names beside its driver: :mod:`fastdcyk.registry.backends`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from fastdcyk.engine.backends.torch.parser import free_bytes
from fastdcyk.hrr.memory import format_bytes
from fastdcyk.options import DCYKOptions

__all__ = [
    "CPU_BATCH_BYTES",
    "GPU_BATCH_BYTES",
    "MAX_BATCH",
    "check_device",
    "check_memory",
    "default_batch_size",
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

"""Many independent random streams at once: a codebook's symbol vectors.

Each symbol's vector is drawn from its own stream, ``numpy.random.default_rng(
numpy.random.SeedSequence(seed, spawn_key=key)).standard_normal(d)``, so that a vector does
not depend on which other symbols were drawn with it. For a grammar's thousands of symbols
most of that time is spent building one :class:`~numpy.random.SeedSequence` and one
:class:`~numpy.random.PCG64` per symbol (about 15 of 20 microseconds). :func:`normal_rows`
gives the same numbers, bit for bit, about twice as fast: it runs SeedSequence's hash
(numpy's documented algorithm, stable across numpy versions by NEP 19) over every key at
once in uint32 arithmetic, seeds PCG64 by its own rule (``pcg64_set_seed``), and sets the
state of one reused generator per row. Each call checks its first row against numpy's own
path and, should a numpy ever seed differently, draws every row numpy's own way.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["normal_rows"]

# numpy's SeedSequence (numpy/random/bit_generator.pyx): the pool of 4 uint32 words
_POOL = 4
_INIT_A, _MULT_A = 0x43B0D7E5, 0x931E8875
_INIT_B, _MULT_B = 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R = 0xCA01F9DD, 0x4973F715
_SHIFT = 16
_M32 = 0xFFFFFFFF
# PCG64's 128-bit LCG multiplier (numpy/random/src/pcg64/pcg64.h)
_PCG_MULT = 0x2360ED051FC65DA44385DF649FCCF645
_M128 = (1 << 128) - 1


def _words(x: int) -> list[int]:
    """An integer >= 0 as SeedSequence takes it: uint32 words, least significant first."""
    if x == 0:
        return [0]
    out = []
    while x > 0:
        out.append(x & _M32)
        x >>= 32
    return out


def _states(entropy: np.ndarray) -> list[list[int]]:
    """SeedSequence(...).generate_state(4, uint64) of each row of ``entropy`` (uint32 words
    held in uint64, every row of one length): four lists of uint64 values (as int)."""
    m32 = np.uint64(_M32)
    shift = np.uint64(_SHIFT)
    const = [_INIT_A]

    def hashmix(v: np.ndarray) -> np.ndarray:
        v = (v ^ np.uint64(const[0])) & m32
        const[0] = (const[0] * _MULT_A) & _M32
        v = (v * np.uint64(const[0])) & m32
        return v ^ (v >> shift)

    def mix(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        r = (np.uint64(_MIX_L) * x - np.uint64(_MIX_R) * y) & m32
        return r ^ (r >> shift)

    m, k = entropy.shape
    zero = np.zeros(m, np.uint64)
    pool = [hashmix(entropy[:, i] if i < k else zero) for i in range(_POOL)]
    for src in range(_POOL):
        for dst in range(_POOL):
            if src != dst:
                pool[dst] = mix(pool[dst], hashmix(pool[src]))
    for src in range(_POOL, k):
        for dst in range(_POOL):
            pool[dst] = mix(pool[dst], hashmix(entropy[:, src]))
    const_b = _INIT_B
    out = []
    for i in range(2 * _POOL):  # 8 uint32 words, cycling over the pool
        v = (pool[i % _POOL] ^ np.uint64(const_b)) & m32
        const_b = (const_b * _MULT_B) & _M32
        v = (v * np.uint64(const_b)) & m32
        out.append(v ^ (v >> shift))
    return [(out[2 * j] | (out[2 * j + 1] << np.uint64(32))).tolist() for j in range(_POOL)]


def _pcg_states(seed: int, keys: Sequence[tuple[int, ...]]) -> list[tuple[int, int]]:
    """PCG64's (state, inc) after seeding from SeedSequence(seed, spawn_key=key), per key."""
    run = _words(seed)
    run += [0] * (_POOL - len(run))  # a spawn key pads the run entropy to the pool
    rows = [run + [w for x in key for w in _words(x)] for key in keys]
    by_length: dict[int, list[int]] = {}
    for r, row in enumerate(rows):
        by_length.setdefault(len(row), []).append(r)
    words = [[0] * len(rows) for _ in range(_POOL)]
    with np.errstate(over="ignore"):
        for idx in by_length.values():
            got = _states(np.array([rows[r] for r in idx], np.uint64))
            for j in range(_POOL):
                for r, value in zip(idx, got[j], strict=True):
                    words[j][r] = value
    out = []
    for hi_s, lo_s, hi_i, lo_i in zip(*words, strict=True):
        # pcg64_set_seed: state 0, inc = initseq << 1 | 1; step; state += initstate; step
        inc = ((((hi_i << 64) | lo_i) << 1) | 1) & _M128
        state = (inc + ((hi_s << 64) | lo_s)) & _M128
        out.append(((state * _PCG_MULT + inc) & _M128, inc))
    return out


def _reference(seed: int, key: tuple[int, ...], d: int) -> np.ndarray:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key)).standard_normal(d)


def _reference_rows(seed: int, keys: Sequence[tuple[int, ...]], out: np.ndarray) -> np.ndarray:
    """Every row of ``out`` drawn numpy's own way (:func:`_reference`)."""
    for r, key in enumerate(keys):
        out[r] = _reference(seed, key, out.shape[1])
    return out


def normal_rows(seed: int, keys: Sequence[tuple[int, ...]], d: int) -> np.ndarray:
    """Row r: ``default_rng(SeedSequence(seed, spawn_key=keys[r])).standard_normal(d)``.

    Parameters
    ----------
    seed : int
        The entropy (an integer >= 0).
    keys : sequence of tuples of int
        The spawn keys (integers >= 0), one stream each.
    d : int
        The numbers per row.

    Returns
    -------
    ndarray of float64, (len(keys), d)
        The same numbers as numpy's own path, bit for bit.

    Examples
    --------
    >>> rows = normal_rows(3, [(1, 2), (7,)], 5)
    >>> ref = np.random.default_rng(np.random.SeedSequence(3, spawn_key=(7,)))
    >>> bool(np.array_equal(rows[1], ref.standard_normal(5)))
    True
    """
    out = np.empty((len(keys), d))
    if not len(keys):
        return out
    if seed < 0 or any(x < 0 for key in keys for x in key):  # numpy's own error
        return _reference_rows(seed, keys, out)
    bits = np.random.PCG64(0)
    gen = np.random.Generator(bits)
    state: dict = {"bit_generator": "PCG64", "has_uint32": 0, "uinteger": 0}
    for r, (s, inc) in enumerate(_pcg_states(seed, keys)):
        state["state"] = {"state": s, "inc": inc}
        bits.state = state
        out[r] = gen.standard_normal(d)
    if not np.array_equal(out[0], _reference(seed, keys[0], d)):  # numpy seeds otherwise
        return _reference_rows(seed, keys, out)
    return out

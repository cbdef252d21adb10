"""Many random streams at once (fastdcyk.hrr.streams): numpy's own numbers, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from fastdcyk.hrr import streams


def reference(seed, key, d):
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key)).standard_normal(d)


@pytest.mark.parametrize("seed", [0, 1, 2**32 - 1, 2**32, 2**33 + 5, 12345678901234567890])
def test_rows_are_numpys_own_streams(seed):
    rng = np.random.default_rng(7)
    keys = [tuple(int(x) for x in rng.integers(0, 2**32, 5)) for _ in range(300)]
    keys += [(0,), (1, 5), (3, 0), (2**40, 7), (2**64 + 3,), (0x5EED,), tuple(range(9))]
    d = 33
    rows = streams.normal_rows(seed, keys, d)
    assert rows.dtype == np.float64 and rows.shape == (len(keys), d)
    for key, row in zip(keys, rows, strict=True):
        np.testing.assert_array_equal(row, reference(seed, key, d))


def test_the_fast_path_is_taken_and_checked(monkeypatch):
    """The rows come from the reused generator (not numpy's path row by row), and a numpy
    that seeded otherwise would be caught by the check of the first row."""
    calls = []
    real = streams._reference

    def counted(*args):
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(streams, "_reference", counted)
    keys = [(1, k) for k in range(50)]
    rows = streams.normal_rows(0, keys, 16)
    assert len(calls) == 1  # the check of the first row only
    monkeypatch.setattr(streams, "_pcg_states", lambda seed, keys: [(1, 1)] * len(keys))
    calls.clear()
    np.testing.assert_array_equal(streams.normal_rows(0, keys, 16), rows)  # fell back
    assert len(calls) == 1 + len(keys)


def test_nothing_to_draw_and_numpys_error():
    assert streams.normal_rows(0, [], 8).shape == (0, 8)
    with pytest.raises(ValueError):
        streams.normal_rows(-1, [(1,)], 8)

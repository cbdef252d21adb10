"""The numbers do not move: parses and predictions against tests/data/reference_parses.npz.

The file holds, for every option set that changes the accumulators (codebook of either
variant, gate, unary mask, encoding, order) on two grammars in float64 with both backends,
P_left, P_right, both decoders' statistics, the chart and the counts, and the capacity
model's predictions; tests/data/make_reference.py wrote it and says when to write it again.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

DATA = Path(__file__).parents[1] / "data"
_spec = importlib.util.spec_from_file_location("make_reference", DATA / "make_reference.py")
ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ref)

#: float64 arithmetic in the same order gives the same bits; 1e-9 leaves room for a
#: reordered sum (a few ulps amplified by at most beta / 4 per gate over a short sentence).
RTOL = 1e-9


@pytest.fixture(scope="module")
def stored():
    with np.load(ref.OUT) as z:
        arrays = {k: z[k] for k in z.files}
    return arrays, json.loads(str(arrays.pop("meta")))


def _close(got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype, what
    scale = max(float(np.abs(want).max()), 1e-300)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=RTOL * scale, err_msg=what)


@pytest.mark.parametrize("case", sorted(ref.CASES))
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_parses_equal_the_reference(stored, backend, case):
    if backend == "torch":
        pytest.importorskip("torch")
    arrays, meta = stored
    seen = 0
    for k, opts, r, entry in ref.parses(backend, case):
        want = meta["parses"][k]
        assert want["options"] == opts
        _close(r.p_left, arrays[f"{k}|p_left"], f"{k}: P_left")
        _close(r.p_right, arrays[f"{k}|p_right"], f"{k}: P_right")
        n = len(r.words)
        _close(ref.stats_array(r.statistics, r.grammar, n), arrays[f"{k}|trace_stats"], k)
        _close(ref.stats_array(entry, r.grammar, n), arrays[f"{k}|entry_stats"], k)
        chart = sorted([i, j, sorted(v)] for (i, j), v in r.chart.items())
        assert chart == want["chart"], k
        assert r.counts == want["counts"], k
        seen += 1
    assert seen == len(ref.option_sets()) == 24


def test_capacity_predictions_equal_the_reference(stored):
    _, meta = stored
    got = ref.predictions()
    assert got.keys() == meta["capacity"].keys()
    for k, values in meta["capacity"].items():
        np.testing.assert_allclose(got[k], values, rtol=RTOL, atol=1e-12, err_msg=k)

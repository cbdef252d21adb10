"""0.3.0: one default variant for every entry point; what a parse keeps for the next one
(codebooks, index matrices) changes no number and stays bounded; statistics as arrays."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import fastdcyk as fd
from fastdcyk.engine import prepare as plan
from fastdcyk.engine.backends.numpy import spectral as numpy_spectral
from fastdcyk.engine.core.decode import Statistics, chart_from_statistics
from fastdcyk.options import DEFAULT_VARIANT

SENTENCE = "fish swim fish near fish"


# -- defaults ---------------------------------------------------------------------------------


def test_every_entry_point_defaults_to_the_variant_for_real_grammars():
    assert DEFAULT_VARIANT == "cleanup"
    g = fd.Grammar.builtin("G0")
    assert fd.dcyk(g, SENTENCE, d=64).options.variant == "cleanup"
    assert fd.dcyk_batch(g, [SENTENCE], d=64, backend="numpy")[0].options.variant == "cleanup"
    for fn in (fd.capacity.predict, fd.capacity.estimate_memory):
        assert inspect.signature(fn).parameters["variant"].default == "cleanup"
    # required_dim passes its keywords to predict: the same default
    assert fd.capacity.required_dim("example", 3, 0.99, samples=1, sentences=3) is not None
    from fastdcyk.cli import build_parser

    parser = build_parser()
    for command in ("parse", "capacity"):
        args = parser.parse_args(_argv(command))
        assert args.variant == "cleanup", command
    # the paper's grid keeps the paper's two variants
    assert fd.experiments.ExperimentConfig().variants == ("paper", "trace")


def _argv(command: str) -> list[str]:
    if command == "capacity":
        return ["capacity", "--grammar", "G0", "--length", "3"]
    return ["parse", "--grammar", "G0", "fish"]


def test_the_nn_layer_defaults_to_the_same_variant(torch_one_thread):
    from fastdcyk.nn import DCYK

    layer = DCYK(fd.Grammar.builtin("G0"), 32)
    assert layer.options.variant == "cleanup" and layer.options.readback == "cancel"


# -- what a parse keeps ------------------------------------------------------------------------


def test_kept_codebooks_and_index_matrices_change_no_number():
    g = fd.Grammar.builtin("G1")
    fd.clear_caches()
    first = fd.dcyk(g, SENTENCE, d=128, dtype="float64")
    again = fd.dcyk(g, SENTENCE, d=128, dtype="float64")  # the kept codebook, its G_k
    assert again.codebook is first.codebook
    fd.clear_caches()
    fresh = fd.dcyk(g, SENTENCE, d=128, dtype="float64")
    assert fresh.codebook is not first.codebook
    for r in (again, fresh):
        np.testing.assert_array_equal(r.p_left, first.p_left)
        np.testing.assert_array_equal(r.statistics.array, first.statistics.array)
        assert r.chart == first.chart
    # another seed, d or dtype is another codebook
    assert fd.dcyk(g, SENTENCE, d=128, dtype="float64", seed=1).codebook is not first.codebook


def test_the_kept_codebooks_are_bounded(monkeypatch):
    fd.clear_caches()
    g = fd.Grammar.builtin("G0")
    seeds = range(plan.CODEBOOK_CACHE_SIZE + 2)
    kept = [fd.dcyk(g, "fish swim", d=64, seed=s).codebook for s in seeds]
    assert len(plan._CODEBOOKS) == plan.CODEBOOK_CACHE_SIZE
    assert kept[0] not in plan._CODEBOOKS.values() and kept[-1] in plan._CODEBOOKS.values()
    monkeypatch.setattr(plan, "CODEBOOK_CACHE_BYTES", 1)  # within the bytes too, but the last
    fd.dcyk(g, "fish swim", d=64, seed=99)
    assert len(plan._CODEBOOKS) == 1
    fd.clear_caches()
    assert not plan._CODEBOOKS and not numpy_spectral._KEPT


def test_index_matrices_kept_between_parses_stay_within_their_budget():
    from fastdcyk.hrr.buffers import G_KEEP_BYTES, g_matrix

    fd.clear_caches()
    cb = fd.Codebook.for_grammar(fd.Grammar.builtin("G0"), 256, 0)
    fd.dcyk("G0", SENTENCE, cb)
    full, gs = numpy_spectral.kept_spectra(cb)
    assert 0 < len(gs) <= len(SENTENCE.split()) + 1 and full
    assert len(gs) * g_matrix(0).nbytes(256, cb.dtype) <= G_KEEP_BYTES


# -- statistics as arrays ------------------------------------------------------------------------


def test_statistics_are_an_array_read_as_a_mapping():
    g = fd.Grammar.builtin("G0")
    r = fd.dcyk(g, SENTENCE, d=256, variant="trace")
    s = r.statistics
    assert isinstance(s, Statistics) and s.array.shape == (5, 6, len(g.nonterminals))
    assert len(s) == 15 * len(g.nonterminals) == len(list(s))
    k = g.nonterminals.index("NP")
    assert s[(0, 1, "NP")] == s.array[0, 1, k] == s.cell(0, 1)[k]
    for bad in [(1, 1, "NP"), (0, 6, "NP"), (0, 1, "nope"), (0, 1), "x"]:
        with pytest.raises(KeyError):
            s[bad]
    assert (1, 1, "NP") not in s and (0, 1, "NP") in s
    as_dict = dict(s.items())
    for threshold in (0.5, 0.9, 0.99):
        by_array = chart_from_statistics(s, 5, beta=50.0, threshold=threshold)
        by_dict = chart_from_statistics(as_dict, 5, beta=50.0, threshold=threshold)
        assert by_array == by_dict
    assert r.chart_at(threshold=0.99) == r.chart
    with pytest.raises(ValueError, match="expected"):
        Statistics(np.zeros((2, 2, 3)), ("A", "B", "C"))

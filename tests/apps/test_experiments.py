"""The experiment runner: configuration hash, tasks, results file, resumption, executors."""

from __future__ import annotations

import errno
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import fastdcyk as fd
import fastdcyk.experiments as ex
from fastdcyk import Codebook, Grammar, GrammarError, Scores, cell_scores, cyk, dcyk
from fastdcyk.cfg.forest import Forest, bracket_scores
from fastdcyk.engine import VARIANTS, default_codebook
from fastdcyk.experiments import config as ex_config
from fastdcyk.experiments import executors as ex_exec
from fastdcyk.experiments import records as ex_records
from fastdcyk.experiments import store as ex_store
from fastdcyk.experiments import tasks as ex_tasks
from fastdcyk.experiments.config import PAPER_VARIANTS

SMALL = ex.ExperimentConfig(grammars=("G0", "G1"), dims=(16, 32), sentences=12, max_len=6)
#: A grid crossing both variants with both orders (G0, d = 16, short sentences).
ORDERED = ex.ExperimentConfig(
    grammars=("G0",), dims=(16,), sentences=6, max_len=4, orders=("sequential", "cell")
)
#: The hash of ExperimentConfig(grammars=("G0",), dims=(64,), sentences=3, max_len=4), pinned
#: from the code before configurations had orders.
PINNED_HASH = "b3eff59a0264a6edc235e0a476fd073a69b8170c0567d3809e1629343cf45f20"


def _strip(records):
    """Records keyed by their grid key, without the parse time (the only field that varies)
    and the backend's name (on the torch backend's records)."""
    out = {}
    for r in records:
        key = ex.record_key(r)
        assert key not in out, f"duplicate record {key}"
        out[key] = {k: v for k, v in r.items() if k not in ("seconds", ex.BACKEND_FIELD)}
    return out


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """SMALL run serially, uninterrupted: the records every other run must reproduce."""
    path = tmp_path_factory.mktemp("ref") / "ref.jsonl"
    summary = ex.run_experiment(SMALL, path, executor="serial", progress=False)
    assert summary.complete and summary.written == SMALL.grid_size()
    return _strip(ex.load_records(path))


# -- configuration --------------------------------------------------------------------------


def test_config_is_normalised_so_the_same_grid_has_the_same_hash():
    a = ex.ExperimentConfig(grammars=["G1", "G0"], dims=[32, 16, 32], variants=["trace", "paper"])
    b = ex.ExperimentConfig(grammars=["G0", "G1"], dims=[16, 32])
    assert a == b
    assert a.hash() == b.hash()
    assert a.dims == (16, 32) and a.variants == ("paper", "trace")
    assert ex.ExperimentConfig.from_dict(json.loads(json.dumps(a.to_dict()))) == a


def test_config_hash_changes_with_any_field():
    base = ex.ExperimentConfig(grammars=("G0",), dims=(16,), sentences=5)
    others = [
        ex.ExperimentConfig(grammars=("G0",), dims=(16,), sentences=6),
        ex.ExperimentConfig(grammars=("G0",), dims=(17,), sentences=5),
        ex.ExperimentConfig(grammars=("G0",), dims=(16,), sentences=5, betas=(20.0,)),
        ex.ExperimentConfig(grammars=("G0",), dims=(16,), sentences=5, seeds=(1,)),
        ex.ExperimentConfig(grammars=("G0",), dims=(16,), sentences=5, threshold=0.9),
        ex.ExperimentConfig(grammars=("G0",), dims=(16,), sentences=5, sentence_seed=3),
    ]
    hashes = {c.hash() for c in others} | {base.hash()}
    assert len(hashes) == len(others) + 1
    assert len(base.hash()) == 64


def test_config_hash_covers_the_grammar_text(tmp_path):
    path = tmp_path / "g.cfg"
    path.write_text(Grammar.builtin("G0").to_string())
    cfg = ex.ExperimentConfig(grammars=(str(path),), dims=(16,), sentences=3)
    before = cfg.hash()
    path.write_text(Grammar.builtin("G1").to_string())
    assert cfg.hash() != before


def _assert_old_file_refused(tmp_path, cfg, old_config: dict, old_hash: str) -> None:
    """A file whose header holds ``old_config`` (hash ``old_hash``) is refused by ``cfg``."""
    path = tmp_path / "old.jsonl"
    header = ex_store._header(cfg, old_hash)
    header["config"] = old_config
    path.write_text(json.dumps(header) + "\n")
    with pytest.raises(ex.ConfigMismatchError, match="another configuration"):
        ex.open_results(path, cfg, cfg.hash())


def test_configurations_with_orders_do_not_resume_files_written_before_orders(tmp_path):
    # Before orders existed every variant was parsed in the paper's order; the trace
    # variant has defaulted to another order since, so a default configuration must not add records
    # to such a file: its hash differs, and the file is refused with a clear error.
    cfg = ex.ExperimentConfig(grammars=("G0",), dims=(64,), sentences=3, max_len=4)
    assert cfg.orders == (None,)
    assert cfg.hash() != PINNED_HASH
    assert cfg.to_dict()["orders"] == [None]
    old = {k: v for k, v in cfg.to_dict().items() if k != "orders"}
    _assert_old_file_refused(tmp_path, cfg, old, PINNED_HASH)
    # an explicit (None,) is the default; a header without "orders" reads as it
    assert (
        ex.ExperimentConfig(grammars=("G0",), dims=(64,), sentences=3, max_len=4, orders=None)
        == cfg
    )
    assert ex.ExperimentConfig.from_dict(old) == cfg
    assert ex.ExperimentConfig.from_dict(cfg.to_dict()) == cfg
    # records of such files were all parsed in the paper's order
    assert ex.record_order({"variant": "trace"}) == "sequential"
    # asking for an order is another grid, with another hash, and the header says so
    for orders in (("cell",), ("sequential", "cell"), (None, "cell")):
        other = ex.ExperimentConfig(
            grammars=("G0",), dims=(64,), sentences=3, max_len=4, orders=orders
        )
        assert other.hash() not in (PINNED_HASH, cfg.hash())
        assert other.to_dict()["orders"] == list(other.orders)
        assert ex.ExperimentConfig.from_dict(json.loads(json.dumps(other.to_dict()))) == other


def test_config_orders_are_normalised_and_crossed_with_the_variants():
    cfg = ex.ExperimentConfig(orders=["cell", "sequential", "cell"])
    assert cfg.orders == ("sequential", "cell")
    assert cfg == ex.ExperimentConfig(orders=("sequential", "cell"))
    assert ex.ExperimentConfig(orders="cell").orders == ("cell",)
    assert cfg.variant_orders() == (
        ("paper", "sequential"),
        ("paper", "cell"),
        ("trace", "sequential"),
        ("trace", "cell"),
    )
    assert cfg.grid_size() == 2 * ex.ExperimentConfig().grid_size()
    own = ex.ExperimentConfig()
    assert own.variant_orders() == tuple((v, VARIANTS[v]["order"]) for v in PAPER_VARIANTS)
    # None and the order it resolves to are one pair, run once
    mixed = ex.ExperimentConfig(orders=(None, "sequential"))
    assert mixed.orders == (None, "sequential")
    assert mixed.variant_orders() == (
        ("paper", "sequential"),
        ("trace", "width"),
        ("trace", "sequential"),
    )
    assert mixed.grid_size() == 3 * own.grid_size() // 2


def test_a_grid_in_the_trace_variants_own_order_names_it_in_its_hash(tmp_path):
    """The trace variant's own order became "width" (it was "cell" when grid files began):
    a grid that runs it in its own order names that in its configuration, so a file of the
    cell order has another hash and is refused, not resumed in the width order; a grid
    that names its orders, or runs no trace variant, keeps the hash it had."""
    from fastdcyk.experiments import config as ex_config

    cfg = ex.ExperimentConfig(grammars=("G0",), dims=(64,), sentences=3, max_len=4)
    assert cfg.to_dict()["own_orders"] == {"trace": "width"}
    assert ex.ExperimentConfig.from_dict(cfg.to_dict()) == cfg
    assert "own_orders" not in ex.ExperimentConfig(orders=("cell",)).to_dict()
    assert "own_orders" not in ex.ExperimentConfig(variants=("paper",)).to_dict()
    earlier = cfg.to_dict()
    del earlier["own_orders"]  # the header of a file written in the cell order
    grammars = cfg.load_grammars()
    texts = {g: ex_config._sha256(grammars[g].to_string()) for g in sorted(grammars)}
    earlier_hash = ex_config._sha256(
        ex_config._canonical({"config": earlier, "grammar_sha256": texts})
    )
    assert earlier_hash != cfg.hash()
    _assert_old_file_refused(tmp_path, cfg, earlier, earlier_hash)
    with pytest.raises(ex.ConfigMismatchError, match="own order became 'width'") as err:
        ex.open_results(tmp_path / "old.jsonl", cfg, cfg.hash())  # says why, and what to do
    # in the API's words (orders=, out), and in the command's (--orders, --out)
    assert "orders=('cell',)" in str(err.value) and "--" not in str(err.value)
    assert "--orders cell" in err.value.cli_message and "(--out)" in err.value.cli_message
    with pytest.raises(ValueError, match=r"own orders of then, \{'trace': 'cell'\}"):
        ex.ExperimentConfig.from_dict({**cfg.to_dict(), "own_orders": {"trace": "cell"}})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"orders": ("fast",)},
            r"unknown order 'fast': choose one of \('sequential', 'cell', 'width'\)",
        ),
        ({"orders": ()}, "orders must not be empty"),
        ({"dims": (1,)}, "dims must hold integers >= 2"),
        ({"dims": ()}, "dims must not be empty"),
        ({"variants": ("fast",)}, "unknown variant 'fast'"),
        ({"betas": (0.0,)}, "beta must be a finite number > 0"),
        ({"betas": (math.inf,)}, "beta must be a finite number > 0"),
        ({"seeds": (-1,)}, "seeds must hold integers >= 0"),
        ({"sentences": 0}, "sentences must be >= 1"),
        ({"min_len": 5, "max_len": 3}, "min_len <= max_len"),
        ({"threshold": 1.0}, "threshold must lie strictly between 0 and 1"),
        ({"dtype": "float16"}, "dtype must be"),
        ({"grammars": ()}, "grammars must not be empty"),
    ],
)
def test_config_rejects_bad_values(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ex.ExperimentConfig(**kwargs)


def test_unknown_grammar_is_a_grammar_error():
    cfg = ex.ExperimentConfig(grammars=("G9",), dims=(16,), sentences=3)
    with pytest.raises(GrammarError, match="G9"):
        cfg.hash()


def test_a_grammar_that_cannot_read_the_sample_is_refused(tmp_path):
    path = tmp_path / "other.cfg"
    path.write_text("S -> A A\nA -> 'x'\n")
    cfg = ex.ExperimentConfig(grammars=(str(path),), dims=(16,), sentences=4)
    with pytest.raises(ValueError, match="has no rule for the words"):
        ex.plan_tasks(cfg)
    out = tmp_path / "r.jsonl"
    with pytest.raises(ValueError, match="has no rule for the words"):
        ex.run_experiment(cfg, out, executor="serial", progress=False)
    assert not out.exists()


# -- tasks ----------------------------------------------------------------------------------


def _task_keys(tasks):
    return [
        (t.grammar, t.variant, t.order, t.beta, t.d, t.seed, i)
        for t in tasks
        for _, ix in t.items
        for i in ix
    ]


def test_tasks_cover_the_grid_once_and_parse_each_distinct_sentence_once():
    tasks = ex.plan_tasks(SMALL)
    sample = SMALL.sample()
    assert len(set(sample)) < len(sample)  # the sample has repeats: dedupe matters
    keys = [
        (t.grammar, t.variant, t.order, t.beta, t.d, t.seed, i)
        for t in tasks
        for _, ix in t.items
        for i in ix
    ]
    assert len(keys) == len(set(keys)) == SMALL.grid_size()
    per_cell: dict = {}
    for t in tasks:
        cell = (t.grammar, t.variant, t.order, t.beta, t.d, t.seed)
        per_cell.setdefault(cell, []).extend(w for w, _ in t.items)
    for words in per_cell.values():
        assert sorted(words) == sorted(set(sample))
    for t in tasks:
        for words, indices in t.items:
            assert all(sample[i] == words for i in indices)


def test_tasks_skip_what_is_done_and_respect_batch_size():
    all_tasks = ex.plan_tasks(SMALL, batch_size=2)
    assert all(len(t.items) <= 2 for t in all_tasks)
    first = ex.run_task(all_tasks[0])
    done = {ex.record_key(r, SMALL) for r in first}  # records straight from run_task
    rest = ex.plan_tasks(SMALL, done, batch_size=2)
    assert sum(t.n_records for t in rest) == SMALL.grid_size() - len(first)
    assert not done & {
        (t.grammar, t.variant, t.order, t.beta, t.d, t.seed, i)
        for t in rest
        for _, ix in t.items
        for i in ix
    }
    with pytest.raises(ValueError, match="batch_size"):
        ex.plan_tasks(SMALL, batch_size=0)


def test_run_task_scores_match_a_direct_parse():
    """A record holds cell_scores(cyk, dcyk) with the variant's own codebook choice."""
    g = Grammar.builtin("G1")
    words = ("fish", "swim", "near", "fish")
    for variant in VARIANTS:
        task = ex.Task("G1", g.to_string(), variant, 50.0, 32, 3, 0.99, "float32", ((words, (7,)),))
        (rec,) = ex.run_task(task)
        cb = default_codebook(g, 32, 3, unitary=VARIANTS[variant]["unitary"])
        expected = cell_scores(cyk(g, words), dcyk(g, words, cb, variant=variant).chart)
        assert (rec["tp"], rec["gold"], rec["predicted"]) == (
            expected.tp,
            expected.gold,
            expected.predicted,
        )
        assert rec["f1"] == expected.f1 and rec["index"] == 7 and rec["length"] == 4
        assert rec["words"] == "fish swim near fish" and rec["variant"] == variant
        assert task.order == rec["order"] == VARIANTS[variant]["order"]  # resolved
        assert list(rec) == list(ex.RECORD_FIELDS)
        assert rec["seconds"] > 0


def test_run_task_records_the_best_tree_of_the_decoded_chart():
    """A record's tree fields are those of DCYKResult.tree(): whether the decoded chart
    gave a tree, and its labelled brackets against the closest tree of symbolic CYK."""
    g = Grammar.builtin("G1")
    sentences = [("fish", "swim", "near", "fish"), ("fish", "fish", "fish", "swim")]
    seen = set()
    for variant, d in (("trace", 256), ("paper", 32), ("paper", 8)):
        items = tuple((w, (k,)) for k, w in enumerate(sentences))
        task = ex.Task("G1", g.to_string(), variant, 50.0, d, 1, 0.99, "float32", items)
        cb = default_codebook(g, d, 1, unitary=VARIANTS[variant]["unitary"])
        for rec, words in zip(ex.run_task(task), sentences, strict=True):
            tree = dcyk(g, words, cb, variant=variant).tree(cnf=True)
            expected = bracket_scores(tree, Forest(g, words))
            assert rec["tree"] == int(tree is not None)
            assert (rec["bracket_tp"], rec["bracket_gold"], rec["bracket_predicted"]) == (
                expected.tp,
                expected.gold,
                expected.predicted,
            )
            seen.add(rec["tree"])
    assert seen == {0, 1}  # d = 8 loses the tree of some sentence, d = 256 keeps them


def test_aggregate_tree_scores_and_old_records_without_them():
    recs = _records([3, 4], [4, 4], [3, 5])
    for r, (tree, tp, gold, pred) in zip(recs, [(1, 5, 7, 7), (0, 0, 7, 0)], strict=True):
        r |= {"tree": tree, "bracket_tp": tp, "bracket_gold": gold, "bracket_predicted": pred}
    (row,) = ex.aggregate(recs)
    pooled = Scores(5, 14, 7)
    assert row["trees"] == 0.5
    assert row["bracket_precision"] == pytest.approx(pooled.precision)
    assert row["bracket_recall"] == pytest.approx(pooled.recall)
    assert row["bracket_f1"] == pytest.approx(pooled.f1)
    assert row["bracket_f1_lo"] <= row["bracket_f1"] <= row["bracket_f1_hi"]
    table = ex.format_table([row], ("grammar",))
    assert "trees" in table and "bracket F1" in table and f"{pooled.f1:.3f}" in table
    (old,) = ex.aggregate(_records([3, 4], [4, 4], [3, 5]))
    assert math.isnan(old["trees"]) and math.isnan(old["bracket_f1_hi"])
    assert " - " in ex.format_table([old], ("grammar",))


# -- the results file and resumption --------------------------------------------------------


def test_run_writes_header_and_records_and_a_rerun_resumes_with_nothing_to_do(tmp_path, reference):
    path = tmp_path / "r.jsonl"
    s1 = ex.run_experiment(SMALL, path, executor="serial", progress=False)
    assert (s1.resumed, s1.written, s1.total) == (0, SMALL.grid_size(), SMALL.grid_size())
    header = json.loads(path.read_text().splitlines()[0])
    assert header["format"] == "fastdcyk-results"
    assert header["config_hash"] == SMALL.hash()
    assert ex.ExperimentConfig.from_dict(header["config"]) == SMALL
    size = path.stat().st_size
    s2 = ex.run_experiment(SMALL, path, executor="serial", progress=False)
    assert (s2.resumed, s2.written, s2.tasks) == (SMALL.grid_size(), 0, 0)
    assert path.stat().st_size == size
    assert _strip(ex.load_records(path)) == reference


def test_a_results_file_of_another_configuration_is_refused(tmp_path):
    path = tmp_path / "r.jsonl"
    small = ex.ExperimentConfig(grammars=("G0",), dims=(16,), sentences=3)
    ex.run_experiment(small, path, executor="serial", progress=False)
    content = path.read_bytes()
    other = ex.ExperimentConfig(grammars=("G0",), dims=(16, 32), sentences=3)
    with pytest.raises(ex.ConfigMismatchError) as err:
        ex.run_experiment(other, path, executor="serial", progress=False)
    msg = str(err.value)
    assert str(path) in msg and small.hash() in msg and other.hash() in msg
    # what differs, and what to do, in the API's words (the out argument, not --out)
    assert "differs from this run's in dims (the file's 16, this run's 16 32)" in msg
    assert "out argument of run_experiment" in msg and "--" not in msg
    assert "--dims (the file's 16, this run's 16 32)" in err.value.cli_message
    assert "(--out)" in err.value.cli_message
    assert path.read_bytes() == content  # untouched


def test_a_header_edited_by_hand_is_refused_and_not_recomputed(tmp_path):
    """A header whose configuration was edited (the hash kept) is refused: before, every
    rerun recomputed the whole grid and appended another copy of it."""
    path = tmp_path / "r.jsonl"
    cfg = ex.ExperimentConfig(grammars=("G0",), dims=(16,), sentences=3)
    ex.run_experiment(cfg, path, executor="serial", progress=False)
    head, rest = path.read_text().split("\n", 1)
    header = json.loads(head)
    header["config"]["threshold"] = 0.9
    path.write_text(json.dumps(header) + "\n" + rest)
    content = path.read_bytes()
    edited = ex.ExperimentConfig.from_dict(header["config"])
    for config in (cfg, edited):  # the hash's configuration, and the header's
        with pytest.raises(ex.ResultsFileError, match="header was edited|another configuration"):
            ex.run_experiment(config, path, executor="serial", progress=False)
    with pytest.raises(ex.ResultsFileError, match=r"\['threshold'\].*header was edited"):
        ex.run_experiment(cfg, path, executor="serial", progress=False)
    assert path.read_bytes() == content  # untouched, nothing appended


def test_a_file_that_is_not_a_results_file_is_refused_and_kept(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("my notes\n")
    with pytest.raises(ex.ResultsFileError, match="not a fastdcyk results file"):
        ex.run_experiment(SMALL, path, executor="serial", progress=False)
    path.write_text("a single line without newline")
    with pytest.raises(ex.ResultsFileError, match="not a fastdcyk results file"):
        ex.run_experiment(SMALL, path, executor="serial", progress=False)
    assert path.read_text() == "a single line without newline"


def test_a_torn_last_line_is_cut_and_the_run_resumes(tmp_path, reference):
    path = tmp_path / "r.jsonl"
    ex.run_experiment(SMALL, path, executor="serial", progress=False)
    lines = path.read_bytes().splitlines(keepends=True)
    kept = lines[:-5]
    path.write_bytes(b"".join(kept) + lines[-5][:17])  # a record cut mid-write
    found = ex.read_results(path)
    assert len(found.records) == len(kept) - 1 and found.torn_bytes == 17
    summary = ex.run_experiment(SMALL, path, executor="serial", progress=False)
    assert summary.torn_bytes == 17 and summary.written == 5
    assert _strip(ex.load_records(path)) == reference
    assert all(line.endswith(b"\n") for line in path.read_bytes().splitlines(keepends=True))


def test_a_compressed_results_file_is_read_as_it_is_and_never_appended_to(tmp_path, reference):
    """docs/lab/records/ keeps results gzip-compressed: they load (a torn last line counted in
    the decompressed bytes), a run refuses to append to one or to write a .gz, and a
    damaged one is a ResultsFileError; nothing is changed."""
    import gzip

    path = tmp_path / "r.jsonl"
    ex.run_experiment(SMALL, path, executor="serial", progress=False)
    packed = tmp_path / "r.jsonl.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    assert _strip(ex.load_records(packed)) == reference
    torn = tmp_path / "torn.gz"
    torn.write_bytes(gzip.compress(path.read_bytes()[:-9]))
    assert ex.read_results(torn).torn_bytes == len(path.read_bytes().splitlines()[-1]) - 8
    content = packed.read_bytes()
    for target in (packed, tmp_path / "new.jsonl.gz", tmp_path / "named-plainly"):
        if target.name == "named-plainly":
            target.write_bytes(content)  # compressed, whatever its name
        with pytest.raises(ex.ResultsFileError, match="gzip.*plain results file.*gunzip -k") as e:
            ex.run_experiment(SMALL, target, executor="serial", progress=False)
        assert "the out argument of run_experiment" in str(e.value)  # the API's own words
        assert "--out" in e.value.cli_message and "--out" not in str(e.value)
    assert packed.read_bytes() == content and not (tmp_path / "new.jsonl.gz").exists()
    (tmp_path / "bad.gz").write_bytes(content[:40])
    with pytest.raises(ex.ResultsFileError, match="damaged gzip"):
        ex.read_results(tmp_path / "bad.gz")


def test_a_corrupt_line_before_the_end_is_an_error(tmp_path):
    path = tmp_path / "r.jsonl"
    ex.run_experiment(SMALL, path, executor="serial", progress=False)
    lines = path.read_bytes().splitlines(keepends=True)
    lines[3] = b"{garbage\n"
    path.write_bytes(b"".join(lines))
    with pytest.raises(ex.ResultsFileError, match="line 4"):
        ex.run_experiment(SMALL, path, executor="serial", progress=False)


def test_a_full_disk_stops_the_run_and_keeps_what_was_written(tmp_path, monkeypatch, reference):
    path = tmp_path / "r.jsonl"
    calls = {"n": 0}
    real_fsync = os.fsync

    def fsync(fd):
        calls["n"] += 1
        if calls["n"] == 4:  # the header, two batches, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(ex_store.os, "fsync", fsync)
    with pytest.raises(ex.ResultsWriteError, match="No space left on device") as err:
        ex.run_experiment(SMALL, path, executor="serial", progress=False, batch_size=1)
    assert "rerun" in str(err.value)
    written = ex.read_results(path)
    assert written.torn_bytes == 0  # the failed batch was cut back
    assert 0 < len(written.records) < SMALL.grid_size()
    monkeypatch.setattr(ex_store.os, "fsync", real_fsync)
    summary = ex.run_experiment(SMALL, path, executor="serial", progress=False)
    assert summary.resumed == len(written.records) and summary.complete
    assert _strip(ex.load_records(path)) == reference


def test_ctrl_c_keeps_finished_tasks(tmp_path, monkeypatch, reference):
    path = tmp_path / "r.jsonl"
    real = ex.run_task
    calls = {"n": 0}

    def run_task(task, **how):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real(task, **how)

    monkeypatch.setattr(ex_exec, "run_task", run_task)
    with pytest.raises(KeyboardInterrupt):
        ex.run_experiment(SMALL, path, executor="serial", progress=False, batch_size=2)
    kept = ex.read_results(path).records
    assert len(kept) > 0
    monkeypatch.setattr(ex_exec, "run_task", real)
    summary = ex.run_experiment(SMALL, path, executor="serial", progress=False)
    assert summary.resumed == len(kept) and summary.complete
    assert _strip(ex.load_records(path)) == reference


KILL_CONFIG = ex.ExperimentConfig(
    grammars=("G0",), dims=(64, 128, 256), sentences=40, max_len=7, variants=("paper",)
)


def test_kill_9_mid_run_then_resume_gives_every_row_once(tmp_path):
    """SIGKILL a real run once some records are on disk; a rerun completes it exactly."""
    path = tmp_path / "killed.jsonl"
    cmd = [
        sys.executable,
        "-m",
        "fastdcyk.cli",
        "experiment",
        "--grammars",
        "G0",
        "--variants",
        "paper",
        "--dims",
        *map(str, KILL_CONFIG.dims),
        "--sentences",
        str(KILL_CONFIG.sentences),
        "--max-len",
        str(KILL_CONFIG.max_len),
        "--executor",
        "serial",
        "--batch-size",
        "1",
        "--no-progress",
        "--out",
        str(path),
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            if path.exists() and path.read_bytes().count(b"\n") >= 4:  # header + 3 records
                break
            assert proc.poll() is None, proc.stderr.read().decode()
            time.sleep(0.01)
        assert proc.poll() is None, "the run finished before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    before = ex.read_results(path)
    assert 0 < len(before.records) < KILL_CONFIG.grid_size()

    summary = ex.run_experiment(KILL_CONFIG, path, executor="serial", progress=False)
    assert summary.resumed == len(before.records)
    assert summary.resumed + summary.written == KILL_CONFIG.grid_size()
    resumed = _strip(ex.load_records(path))  # raises on a duplicate key
    assert len(ex.read_results(path).records) == KILL_CONFIG.grid_size()

    fresh = tmp_path / "fresh.jsonl"
    ex.run_experiment(KILL_CONFIG, fresh, executor="serial", progress=False)
    assert resumed == _strip(ex.load_records(fresh))


# -- executors ------------------------------------------------------------------------------


def test_process_pool_gives_the_serial_rows(tmp_path, reference):
    path = tmp_path / "pool.jsonl"
    summary = ex.run_experiment(
        SMALL, path, executor="process", workers=2, batch_size=3, progress=False
    )
    assert summary.workers == 2 and summary.complete
    assert _strip(ex.load_records(path)) == reference


def test_dask_local_cluster_gives_the_serial_rows(tmp_path, reference):
    distributed = pytest.importorskip("dask.distributed")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        path = tmp_path / "dask.jsonl"
        summary = ex.run_experiment(
            SMALL, path, executor="dask", client=client, batch_size=3, progress=False
        )
        assert summary.complete
        assert _strip(ex.load_records(path)) == reference
        # the same through the scheduler's address, as the command line does
        path2 = tmp_path / "dask2.jsonl"
        ex.run_experiment(
            SMALL, path2, executor="dask", scheduler=cluster.scheduler_address, progress=False
        )
        assert _strip(ex.load_records(path2)) == reference


def test_bad_executor_arguments():
    with pytest.raises(ValueError, match="unknown executor"):
        ex.run_experiment(SMALL, "x.jsonl", executor="threads")
    with pytest.raises(ValueError, match="workers"):
        ex.run_experiment(SMALL, "x.jsonl", executor="process", workers=0)
    assert not Path("x.jsonl").exists()


# -- orders ---------------------------------------------------------------------------------


def test_run_task_parses_in_the_task_order(monkeypatch):
    """The order reaches the parse, in the warm-up too, and is written into every record."""
    calls = []
    real = ex_tasks.parse_plan

    def spy(plan, *args, **kwargs):
        calls.append(plan.options.order)
        return real(plan, *args, **kwargs)

    monkeypatch.setattr(ex_tasks, "parse_plan", spy)
    g = Grammar.builtin("G1")
    words = ("fish", "swim", "fish")
    for order in ("cell", "sequential"):
        monkeypatch.setattr(ex_tasks, "_local", threading.local())  # no codebook held: a warm-up
        task = ex.Task(
            "G1", g.to_string(), "paper", 50.0, 24, 5, 0.99, "float32", ((words, (2,)),), order
        )
        calls.clear()
        (rec,) = ex.run_task(task)
        assert calls == [order, order]  # the warm-up, then the parse
        assert rec["order"] == order and list(rec) == list(ex.RECORD_FIELDS)
        cb = Codebook(24, seed=5, unitary=VARIANTS["paper"]["unitary"])
        chart = fd.dcyk(g, words, cb, variant="paper", order=order).chart
        expected = cell_scores(cyk(g, words), chart)
        assert (rec["tp"], rec["predicted"]) == (expected.tp, expected.predicted)
    with pytest.raises(ValueError, match="unknown order 'fast'"):
        ex.Task("G1", g.to_string(), "paper", 50.0, 24, 5, 0.99, "float32", (), "fast")


def test_record_key_distinguishes_orders_and_reads_old_records_as_sequential():
    rec = {"grammar": "G0", "variant": "paper", "beta": 50.0, "d": 16, "seed": 0, "index": 3}
    seq = ex.record_key(dict(rec, order="sequential"))
    cell = ex.record_key(dict(rec, order="cell"))
    assert seq != cell and "cell" in cell and "sequential" in seq
    # no "order": written before orders existed, when every variant ran in the paper's order
    assert ex.record_key(rec) == seq
    assert ex.record_order(dict(rec, variant="trace")) == "sequential"
    assert ex.record_key(dict(rec, variant="trace")) != ex.record_key(
        dict(rec, variant="trace", order="cell")
    )


def test_a_grid_of_two_orders_writes_both_and_resumes(tmp_path):
    path = tmp_path / "r.jsonl"
    summary = ex.run_experiment(ORDERED, path, executor="serial", progress=False)
    assert summary.complete and summary.written == ORDERED.grid_size() == 4 * 6
    records = ex.load_records(path)
    assert {(r["variant"], r["order"]) for r in records} == {
        (v, o) for v in PAPER_VARIANTS for o in ("sequential", "cell")
    }
    for variant in PAPER_VARIANTS:
        for order in ("sequential", "cell"):
            mine = [r for r in records if (r["variant"], r["order"]) == (variant, order)]
            assert sorted(r["index"] for r in mine) == list(range(6))
    full = _strip(records)
    assert len(full) == len(records)  # two orders of a variant are distinct records
    header = json.loads(path.read_text().splitlines()[0])
    assert header["config"]["orders"] == ["sequential", "cell"]
    # keep the header and the records of one order only: the other is redone, nothing else
    lines = path.read_text().splitlines(keepends=True)
    kept = [ln for ln in lines[1:] if json.loads(ln)["order"] == "cell"]
    path.write_text(lines[0] + "".join(kept))
    again = ex.run_experiment(ORDERED, path, executor="serial", progress=False)
    assert (again.resumed, again.written) == (len(kept), ORDERED.grid_size() - len(kept))
    assert again.complete
    assert _strip(ex.load_records(path)) == full
    last = ex.run_experiment(ORDERED, path, executor="serial", progress=False)
    assert (last.resumed, last.written, last.tasks) == (ORDERED.grid_size(), 0, 0)


def test_old_records_without_an_order_load_and_aggregate_but_are_not_resumed(tmp_path):
    """A file written before records had "order": its records read as the paper's order
    (the only one then), they aggregate, and today's configuration refuses to add to it."""
    cfg = ex.ExperimentConfig(grammars=("G0",), dims=(64,), sentences=3, max_len=4)
    new = tmp_path / "new.jsonl"
    ex.run_experiment(cfg, new, executor="serial", progress=False)
    old = tmp_path / "old.jsonl"
    lines = new.read_text().splitlines()
    header = json.loads(lines[0])
    del header["config"]["orders"]
    header["config_hash"] = PINNED_HASH  # what the code before orders wrote for cfg
    legacy = [json.loads(ln) for ln in lines[1:]]
    for r in legacy:
        del r["order"]
    old.write_text("\n".join(json.dumps(x) for x in [header, *legacy]) + "\n")
    assert '"order"' not in old.read_text()
    records = ex.load_records(old)
    assert len(records) == cfg.grid_size()
    assert all(r["order"] == "sequential" for r in records)
    with pytest.raises(ex.ConfigMismatchError, match="another configuration"):
        ex.run_experiment(cfg, old, executor="serial", progress=False)
    # the paper variant's records are those of its default order; the trace variant's are
    # labelled with the order they were parsed in, so its rows say "sequential"
    rows = ex.aggregate(legacy)
    assert len(rows) == 2
    assert {(r["variant"], r.get("order")) for r in rows} == {
        ("paper", "sequential"),
        ("trace", "sequential"),
    }


# -- aggregation ----------------------------------------------------------------------------


def _records(tp, gold, pred, **extra):
    out = []
    for k, (t, g, p) in enumerate(zip(tp, gold, pred, strict=True)):
        s = Scores(t, g, p)
        rec = {"grammar": "G0", "variant": "paper", "beta": 50.0, "d": 64, "seed": 0}
        rec |= {"index": k, "words": f"w{k}", "length": 2 + k % 3, "seconds": 0.1}
        rec |= {"tp": t, "gold": g, "predicted": p, **s.as_dict(), **extra}
        out.append(rec)
    return out


def test_aggregate_micro_and_macro_with_intervals():
    rng = np.random.default_rng(5)
    gold = rng.integers(5, 30, 60)
    tp = rng.integers(0, gold + 1)
    pred = tp + rng.integers(0, 10, 60)
    recs = _records(tp.tolist(), gold.tolist(), pred.tolist())
    (row,) = ex.aggregate(recs)
    pooled = Scores(int(tp.sum()), int(gold.sum()), int(pred.sum()))
    assert row["n"] == 60
    assert row["micro_precision"] == pytest.approx(pooled.precision)
    assert row["micro_recall"] == pytest.approx(pooled.recall)
    assert row["micro_f1"] == pytest.approx(pooled.f1)
    f1s = [Scores(*x).f1 for x in zip(tp.tolist(), gold.tolist(), pred.tolist(), strict=True)]
    assert row["macro_f1"] == pytest.approx(np.mean(f1s))
    for m in ("micro", "macro"):
        for s in ("precision", "recall", "f1"):
            lo, v, hi = row[f"{m}_{s}_lo"], row[f"{m}_{s}"], row[f"{m}_{s}_hi"]
            assert 0 <= lo < v < hi <= 1
    half = (row["macro_f1_hi"] - row["macro_f1_lo"]) / 2
    sem = np.std(f1s, ddof=1) / np.sqrt(60)
    assert half == pytest.approx(2.0010 * sem, rel=1e-3)  # t_{0.975, 59}
    assert ex.aggregate(recs) == ex.aggregate(recs)  # fixed bootstrap seed
    assert ex.aggregate(recs, seed=1)[0]["micro_f1_lo"] != row["micro_f1_lo"]


def test_aggregate_groups_and_edge_cases():
    recs = _records([1, 2, 0], [2, 2, 0], [1, 4, 0])
    rows = ex.aggregate(recs, ("length",))
    assert [r["length"] for r in rows] == [2, 3, 4] and all(r["n"] == 1 for r in rows)
    assert all(math.isnan(r["micro_f1_lo"]) and math.isnan(r["macro_f1_hi"]) for r in rows)
    assert rows[2]["micro_f1"] == 1.0  # nothing to find, nothing found
    with pytest.raises(ValueError, match="level"):
        ex.aggregate(recs, level=1.5)


def test_study_rows_select_the_paper_studies():
    recs = []
    for g in ("G0", "G1", "G2"):
        for d in (64, 128) if g == "G0" else (128,):
            recs += _records([1] * 6, [2] * 6, [2] * 6, grammar=g, d=d)
    for k, r in enumerate(recs):
        r["index"] = k
    a = ex.study_rows(recs, "a", max_len=3)
    assert {(r["d"], r["n"]) for r in a} == {(64, 4), (128, 4)}  # lengths 2 and 3 only
    b = ex.study_rows(recs, "b")
    assert {(r["d"], r["length"]) for r in b} == {(d, n) for d in (64, 128) for n in (2, 3, 4)}
    c = ex.study_rows(recs, "c")
    assert {r["d"] for r in c} == {128} and {r["grammar"] for r in c} == {"G0", "G1", "G2"}
    assert ex.study_rows(recs, "c", d=64)[0]["grammar"] == "G0"
    pooled = ex.study_rows(recs, "c", per_length=False)
    assert [(r["grammar"], r["n"]) for r in pooled] == [("G0", 6), ("G1", 6), ("G2", 6)]
    with pytest.raises(ValueError, match="unknown study"):
        ex.study_rows(recs, "d")


def test_summary_table_lists_every_cell(reference):
    table = ex.summary_table(_with_seconds(reference))
    lines = table.splitlines()
    assert lines[0].split()[:4] == ["grammar", "variant", "beta", "d"]
    assert len(lines) == 1 + 2 * 2 * 2  # grammars x variants x dims
    md = ex.summary_table(_with_seconds(reference), markdown=True)
    assert md.startswith("| grammar | variant |") and md.count("\n") == 1 + 8


def _with_seconds(records_by_key):
    return [dict(r, seconds=0.0) for r in records_by_key.values()]


def test_aggregate_splits_a_variant_run_in_two_orders():
    seq = _records([1, 2, 1], [2, 2, 2], [1, 2, 4], order="sequential")
    cell = _records([2, 2, 2], [2, 2, 2], [2, 2, 2], order="cell")
    rows = ex.aggregate(seq + cell)
    assert [(r["variant"], r["order"], r["n"]) for r in rows] == [
        ("paper", "cell", 3),
        ("paper", "sequential", 3),
    ]
    assert list(rows[0])[:3] == ["grammar", "variant", "order"]
    assert rows[0]["micro_f1"] == 1.0 and rows[1]["micro_f1"] < 1.0
    # one order per variant, its own: the rows are those of before (no "order")
    assert all("order" not in r for r in ex.aggregate(seq))
    # another order than the variant's own is named
    (only,) = ex.aggregate(cell)
    assert only["order"] == "cell"
    # a grouping without the variant pools orders as it pools variants
    assert [r["n"] for r in ex.aggregate(seq + cell, ("length",))] == [2, 2, 2]
    table = ex.summary_table(seq + cell).splitlines()
    assert table[0].split()[:5] == ["grammar", "variant", "order", "beta", "d"]
    assert table[1].split()[:3] == ["G0", "paper", "cell"] and len(table) == 3
    md = ex.format_table(rows, ("variant", "d"), markdown=True)
    assert md.startswith("| variant | order | d | n |")


def test_study_rows_split_orders(tmp_path):
    recs = _records([1] * 4, [2] * 4, [2] * 4, order="sequential")
    recs += _records([2] * 4, [2] * 4, [2] * 4, order="cell")
    for study in ("a", "b", "c"):
        rows = ex.study_rows(recs, study)
        assert {r["order"] for r in rows} == {"sequential", "cell"}
    a = ex.study_rows(recs, "a", max_len=7)
    assert {(r["order"], r["micro_f1"]) for r in a} == {("sequential", 0.5), ("cell", 1.0)}


# -- encodings -------------------------------------------------------------------------------


def test_config_encoding_is_checked_and_always_in_the_hash():
    default = ex.ExperimentConfig(grammars=("G0",), dims=(16,), sentences=4)
    roles = ex.ExperimentConfig(grammars=("G0",), dims=(16,), sentences=4, encoding="roles")
    assert default.to_dict()["encoding"] is None and roles.to_dict()["encoding"] == "roles"
    assert default.hash() != roles.hash()
    assert ex.ExperimentConfig.from_dict(roles.to_dict()) == roles
    with pytest.raises(ValueError, match="unknown encoding 'sidon'"):
        ex.ExperimentConfig(grammars=("G0",), encoding="sidon")


def test_tasks_and_records_carry_the_encoding(monkeypatch):
    calls = []
    real = ex_tasks.parse_plan

    def spy(plan, *args, **kwargs):
        calls.append(plan.options.encoding)
        return real(plan, *args, **kwargs)

    monkeypatch.setattr(ex_tasks, "parse_plan", spy)
    cfg = ex.ExperimentConfig(grammars=("G2",), dims=(32,), sentences=3, max_len=4)
    tasks = ex.plan_tasks(cfg)
    assert {(t.variant, t.encoding) for t in tasks} == {("paper", "paper"), ("trace", "roles")}
    cfg2 = ex.ExperimentConfig(grammars=("G2",), dims=(32,), sentences=3, max_len=4,
                               encoding="paper")  # fmt: skip
    assert {t.encoding for t in ex.plan_tasks(cfg2)} == {"paper"}
    task = next(t for t in tasks if t.variant == "trace")
    monkeypatch.setattr(ex_tasks, "_local", threading.local())
    records = ex.run_task(task)
    assert set(calls) == {"roles"}
    assert all(r["encoding"] == "roles" and list(r) == list(ex.RECORD_FIELDS) for r in records)
    with pytest.raises(ValueError, match="unknown encoding"):
        ex.Task("G2", "", "paper", 50.0, 16, 0, 0.99, "float32", (), None, "sidon")


def test_records_without_an_encoding_read_as_paper_and_aggregate_apart():
    rec = {"grammar": "G0", "variant": "trace", "beta": 50.0, "d": 16, "seed": 0, "index": 3}
    assert ex.record_encoding(rec) == "paper"
    assert ex.record_key(rec) != ex.record_key(dict(rec, encoding="roles"))
    paper = _records([1, 2, 1], [2, 2, 2], [1, 2, 4], order="sequential")
    roles = [dict(r, encoding="roles") for r in _records([2, 2, 2], [2, 2, 2], [2, 2, 2])]
    rows = ex.aggregate(paper + roles)
    assert [(r["variant"], r["encoding"], r["n"]) for r in rows] == [
        ("paper", "paper", 3),
        ("paper", "roles", 3),
    ]
    assert all("encoding" not in r for r in ex.aggregate(paper))  # each variant's own
    md = ex.format_table(rows, ("variant", "d"), markdown=True)
    assert md.startswith("| variant | encoding | d | n |")


# -- the cleanup variant's read-back -------------------------------------------------------------


def test_config_readback_in_the_hash_only_for_the_least_squares_read_back(tmp_path):
    kw = dict(grammars=("G1",), dims=(32,), sentences=3, max_len=4)
    default = ex.ExperimentConfig(variants=("cleanup",), **kw)
    assert default.readback == "cancel" and default.to_dict()["readback"] == "cancel"
    lstsq = ex.ExperimentConfig(variants=("cleanup",), readback="lstsq", **kw)
    matched = ex.ExperimentConfig(variants=("cleanup",), readback="matched", **kw)
    assert lstsq.to_dict()["readback"] == "lstsq" and lstsq.hash() != default.hash()
    # "matched" (what the cleanup variant read with before) is left out: a file written
    # before the read-back existed keeps its hash, and is not resumed with least squares
    assert "readback" not in matched.to_dict() and lstsq.hash() != matched.hash()
    assert ex.ExperimentConfig.from_dict(matched.to_dict()) == matched
    assert ex.ExperimentConfig.from_dict(lstsq.to_dict()) == lstsq
    paper = ex.ExperimentConfig(**kw)  # no cleanup variant: nothing to choose
    assert paper.readback == "matched" and "readback" not in paper.to_dict()
    with pytest.raises(ValueError, match="cleanup variant only"):
        ex.ExperimentConfig(readback="lstsq", **kw)
    with pytest.raises(ValueError, match="unknown readback"):
        ex.ExperimentConfig(variants=("cleanup",), readback="ols", **kw)
    # the records of two read-backs never share a key, and aggregate apart
    path_a, path_b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    ex.run_experiment(lstsq, path_a, executor="serial", progress=False)
    ex.run_experiment(matched, path_b, executor="serial", progress=False)
    a, b = ex.load_records(path_a), ex.load_records(path_b)
    assert {ex.record_key(r) for r in a}.isdisjoint(ex.record_key(r) for r in b)
    rows = ex.aggregate(a + b)
    assert sorted(r["readback"] for r in rows) == ["lstsq", "matched"]


def test_tasks_parse_with_the_configured_read_back(monkeypatch):
    calls = []
    real = ex_tasks.parse_plan

    def spy(plan, *args, **kwargs):
        calls.append((plan.options.variant, plan.options.readback))
        return real(plan, *args, **kwargs)

    monkeypatch.setattr(ex_tasks, "parse_plan", spy)
    monkeypatch.setattr(ex_tasks, "_local", threading.local())
    cfg = ex.ExperimentConfig(grammars=("G1",), dims=(32,), sentences=2, max_len=3,
                              variants=("paper", "cleanup"), readback="matched")  # fmt: skip
    for task in ex.plan_tasks(cfg):
        ex.run_task(task)
    assert set(calls) == {("paper", "matched"), ("cleanup", "matched")}


# -- codebooks --------------------------------------------------------------------------------


def test_config_codebooks_is_checked_in_the_hash_and_reaches_the_worker(monkeypatch, tmp_path):
    default = ex.ExperimentConfig(grammars=("G1",), dims=(32,), sentences=3, max_len=4)
    plain = ex.ExperimentConfig(grammars=("G1",), dims=(32,), sentences=3, max_len=4,
                                codebooks="plain")  # fmt: skip
    assert default.to_dict()["codebooks"] == "grammar" and default.hash() != plain.hash()
    # a file written before codebooks existed (its records parsed with random symbol
    # vectors) has another hash: it is refused, not resumed with other codebooks
    old = {k: v for k, v in default.to_dict().items() if k != "codebooks"}
    texts = {"G1": ex_config._sha256(Grammar.builtin("G1").to_string())}
    old_hash = ex_config._sha256(ex_config._canonical({"config": old, "grammar_sha256": texts}))
    assert old_hash != default.hash()
    _assert_old_file_refused(tmp_path, default, old, old_hash)
    with pytest.raises(ValueError, match="unknown codebooks 'mine'"):
        ex.ExperimentConfig(grammars=("G0",), codebooks="mine")
    with pytest.raises(ValueError, match="unknown codebooks"):
        ex.Task("G1", "", "trace", 50.0, 16, 0, 0.99, "float32", (), codebooks="mine")
    g = Grammar.builtin("G1")
    for cfg, shifted in ((default, True), (plain, False)):
        task = next(t for t in ex.plan_tasks(cfg) if t.variant == "trace")
        assert task.codebooks == cfg.codebooks
        monkeypatch.setattr(ex_tasks, "_local", threading.local())
        cb, built = ex_tasks._worker_codebook(task)
        assert built and cb.unitary and bool(cb.shifted_symbols) is shifted
        mine = cb if shifted else Codebook(32, 0, unitary=True)
        for rec in ex.run_task(task):
            words = tuple(rec["words"].split())
            want = cell_scores(cyk(g, words), dcyk(g, words, mine, variant="trace").chart)
            assert (rec["tp"], rec["predicted"]) == (want.tp, want.predicted)


# -- results format version -------------------------------------------------------------------


#: The identifying fields of a record of G0, paper variant, d = 16.
_G0_RECORD = {
    "grammar": "G0",
    "variant": "paper",
    "order": "sequential",
    "encoding": "paper",
    "beta": 50.0,
    "d": 16,
    "words": "fish swim",
}


def _versioned_file(path, version, cfg):
    """A results file of ``cfg`` with one record, its header of format version ``version``."""
    header = ex_store._header(cfg, cfg.hash())
    header["format_version"] = version
    record = {f: 0 for f in ex.RECORD_FIELDS} | _G0_RECORD
    path.write_text(json.dumps(header) + "\n" + json.dumps(record) + "\n")
    return path


def test_a_results_file_of_a_newer_format_version_is_refused(tmp_path, monkeypatch):
    cfg = ex.ExperimentConfig(grammars=("G0",), dims=(16,), sentences=1, max_len=2)
    same = _versioned_file(tmp_path / "same.jsonl", ex.RESULTS_VERSION, cfg)
    assert len(ex.read_results(same).records) == len(ex.load_records(same)) == 1
    newer = _versioned_file(tmp_path / "newer.jsonl", ex.RESULTS_VERSION + 1, cfg)
    for read in (ex.read_results, ex.load_records):
        with pytest.raises(ex.ResultsFileError, match="written by fastdcyk .*: upgrade"):
            read(newer)
    with pytest.raises(ex.ResultsFileError, match=f"reads versions up to {ex.RESULTS_VERSION}"):
        ex.open_results(newer, cfg, cfg.hash())  # nor resumed
    for bad in (None, "1", 0, True):
        with pytest.raises(ex.ResultsFileError, match="no valid results format version"):
            ex.read_results(_versioned_file(tmp_path / "bad.jsonl", bad, cfg))
    # a code that knows a later version still reads the older ones
    monkeypatch.setattr(ex_store, "RESULTS_VERSION", ex.RESULTS_VERSION + 1)
    assert len(ex.read_results(same).records) == len(ex.read_results(newer).records) == 1
    with pytest.raises(ex.ResultsFileError, match="upgrade"):
        ex.read_results(
            _versioned_file(tmp_path / "newest.jsonl", ex_store.RESULTS_VERSION + 1, cfg)
        )


def test_plot_of_a_newer_results_file_exits_2(tmp_path, capsys):
    from fastdcyk.cli import main

    cfg = ex.ExperimentConfig(grammars=("G0",), dims=(16,), sentences=1, max_len=2)
    newer = _versioned_file(tmp_path / "newer.jsonl", ex.RESULTS_VERSION + 1, cfg)
    assert main(["plot", str(newer), "--out", str(tmp_path / "figs")]) == 2
    err = capsys.readouterr().err
    assert "upgrade fastdcyk" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "figs").exists()


# -- record keys: the settings of a record's configuration --------------------------------------


def test_record_key_tells_apart_thresholds_dtypes_codebooks_and_samples():
    rec = _G0_RECORD | {"seed": 0, "index": 3}
    key = ex.record_key(rec)
    others = [
        {"threshold": 0.5},
        {"dtype": "float64"},
        {"codebooks": "plain"},
        {"source": "G1"},
        {"min_len": 3},
        {"max_len": 10},
        {"sentence_seed": 1},
        {"words": "fish swim fish"},
    ]
    keys = {ex.record_key(rec | o) for o in others}
    assert key not in keys and len(keys) == len(others)
    # a record without its settings reads as the default configuration, or as the one given
    cfg = ex.ExperimentConfig()
    full = rec | {name: getattr(cfg, name) for name in ex_records._SETTINGS}
    assert ex.record_key(full) == key == ex.record_key(rec, cfg)
    small = ex.ExperimentConfig(max_len=6, threshold=0.9)
    assert ex.record_key(rec, small) == ex.record_key(rec | {"max_len": 6, "threshold": 0.9})
    assert ex.record_key(rec | {"threshold": 0.5}, small) == ex.record_key(
        rec | {"max_len": 6, "threshold": 0.5}
    )  # what the record holds wins


def _with_header(src, dst, **config):
    """A copy of results file ``src`` whose header's configuration has ``config`` changed (a
    key set to None is removed)."""
    lines = src.read_text().splitlines(keepends=True)
    header = json.loads(lines[0])
    for k, v in config.items():
        if v is None:
            del header["config"][k]
        else:
            header["config"][k] = v
    dst.write_text(json.dumps(header) + "\n" + "".join(lines[1:]))
    return dst


def test_load_records_keeps_the_records_of_files_of_other_settings_apart(tmp_path):
    cfg = ex.ExperimentConfig(grammars=("G0",), dims=(16,), sentences=3, max_len=3)
    path = tmp_path / "r.jsonl"
    ex.run_experiment(cfg, path, executor="serial", progress=False)
    mine = ex.load_records(path)
    assert len(mine) == cfg.grid_size()
    settings = {
        (r["threshold"], r["dtype"], r["codebooks"], r["source"], r["max_len"]) for r in mine
    }
    assert settings == {(0.99, "float32", "grammar", "G0", 3)}  # from the header
    # the same records under another header setting: both files' records are kept
    for k, change in enumerate(({"threshold": 0.5}, {"dtype": "float64"}, {"sentence_seed": 9})):
        other = _with_header(path, tmp_path / f"other{k}.jsonl", **change)
        both = ex.load_records([path, other])
        assert len(both) == 2 * len(mine), change
        name, value = next(iter(change.items()))
        assert sorted({r[name] for r in both}, key=str) == sorted(
            {getattr(cfg, name), value}, key=str
        )
        # and aggregated apart: one row per setting, named in the table
        rows = ex.aggregate(both, ("grammar", "variant", "d"))
        assert {row[name] for row in rows} == {getattr(cfg, name), value}
        assert len(rows) == 2 * len(ex.aggregate(mine, ("grammar", "variant", "d")))
        assert name in ex.format_table(rows, ("grammar", "variant", "d")).splitlines()[0]
    # records of one setting, some without it (as run_experiment returns them): one group
    plain = [{k: v for k, v in r.items() if k not in ex_records._SETTINGS} for r in mine]
    assert "threshold" not in ex.aggregate(mine + plain)[0]
    # the same file twice (a copy): each record once
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(path.read_bytes())
    assert len(ex.load_records([path, copy])) == len(mine)
    # a header written before codebooks existed: its records read as "plain" codebooks
    old = _with_header(path, tmp_path / "old.jsonl", codebooks=None)
    assert {r["codebooks"] for r in ex.read_results(old).records} == {"plain"}
    assert len(ex.load_records([path, old])) == 2 * len(mine)
    # the record's own value wins over its header's
    lines = old.read_text().splitlines(keepends=True)
    rec = json.loads(lines[1]) | {"codebooks": "grammar"}
    old.write_text(lines[0] + json.dumps(rec) + "\n")
    assert ex.read_results(old).records[0]["codebooks"] == "grammar"
    # resuming still finds every record done
    again = ex.run_experiment(cfg, path, executor="serial", progress=False)
    assert (again.resumed, again.written, again.tasks) == (cfg.grid_size(), 0, 0)


def test_a_header_without_a_configuration_is_refused(tmp_path):
    path = tmp_path / "r.jsonl"
    header = {"format": ex.RESULTS_FORMAT, "format_version": ex.RESULTS_VERSION}
    path.write_text(json.dumps(header) + "\n")
    with pytest.raises(ex.ResultsFileError, match="holds no configuration"):
        ex.read_results(path)


# -- the torch backend ----------------------------------------------------------------------

#: Both variants and two grammars at float64: the paper variant at beta = 50 amplifies
#: rounding (docs/method.md, section 4), so in float32 its decoded charts may differ between
#: backends where a statistic is near the threshold (they do on one sentence of this grid);
#: in float64 the backends agree to 1e-8 (tests/engine/test_torch.py), far from any flip.
TORCH_GRID = ex.ExperimentConfig(
    grammars=("G0", "G1"), dims=(16, 32), sentences=6, max_len=5, dtype="float64"
)


@pytest.fixture(scope="module")
def torch_reference(tmp_path_factory):
    """TORCH_GRID run with the numpy backend: the records the torch backend must give."""
    path = tmp_path_factory.mktemp("torch-ref") / "numpy.jsonl"
    assert ex.run_experiment(TORCH_GRID, path, executor="serial", progress=False).complete
    return path


def test_torch_backend_gives_the_numpy_records(tmp_path, torch_one_thread, torch_reference):
    path = tmp_path / "torch.jsonl"
    messages = []
    summary = ex.run_experiment(
        TORCH_GRID, path, executor="serial", progress=False, backend="torch", echo=messages.append
    )
    assert summary.complete and summary.backend == "torch" and summary.device == "cpu"
    assert "(serial, torch on cpu)" in messages[0]
    records = ex.load_records(path)
    fields = set(ex.RECORD_FIELDS) | set(ex_records._SETTINGS) | {ex.BACKEND_FIELD}
    assert all(set(r) == fields and ex.record_backend(r) == "torch" for r in records)
    assert all(r["seconds"] > 0 for r in records)
    assert _strip(records) == _strip(ex.load_records(torch_reference))
    # backend and device are run options: the file is the numpy run's configuration
    assert ex.read_results(path).config_hash == TORCH_GRID.hash()
    assert ex.read_results(path).header["config"] == TORCH_GRID.to_dict()


def test_a_numpy_file_is_resumed_by_torch_and_back(tmp_path, torch_one_thread, torch_reference):
    lines = torch_reference.read_text().splitlines(keepends=True)
    expected = _strip(ex.load_records(torch_reference))
    for first, then in (("numpy", "torch"), ("torch", "numpy")):
        path = tmp_path / f"{first}-{then}.jsonl"
        if first == "numpy":
            path.write_text("".join(lines[: 1 + len(lines) // 3]))  # a third of the grid
        else:
            ex.run_experiment(TORCH_GRID, path, executor="serial", progress=False, backend="torch")
            kept = path.read_text().splitlines(keepends=True)
            path.write_text("".join(kept[: 1 + len(kept) // 3]))
        summary = ex.run_experiment(
            TORCH_GRID, path, executor="serial", progress=False, backend=then
        )
        assert summary.resumed == len(lines) // 3 and summary.complete
        records = ex.load_records(path)
        assert _strip(records) == expected
        # each record says which backend parsed it, and aggregates keep the two apart
        assert {ex.record_backend(r) for r in records} == {"numpy", "torch"}
        rows = ex.aggregate(records, ("grammar", "variant", "d"))
        assert {row["backend"] for row in rows} == {"numpy", "torch"}


def test_torch_tasks_are_larger_and_cover_the_same_sentences():
    cfg = ex.ExperimentConfig(grammars=("G0",), dims=(16, 3000), sentences=40, max_len=8)
    numpy_tasks = ex.plan_tasks(cfg)
    torch_tasks = ex.plan_tasks(cfg, backend="torch")
    assert _task_keys(torch_tasks) == _task_keys(numpy_tasks)  # the same records, in order
    paper = [len(t.items) for t in numpy_tasks if t.d == 3000 and t.variant == "paper"]
    assert max(paper) <= 2  # numpy: a few seconds of one core per task
    # torch: every distinct sentence of a cell in one task (one per variant)
    assert [len(t.items) for t in torch_tasks if t.d == 3000] == [len(set(cfg.sample()))] * 2
    assert ex.plan_tasks(cfg, backend="torch", batch_size=3) == ex.plan_tasks(cfg, batch_size=3)
    with pytest.raises(ValueError, match="unknown backend 'jax'"):
        ex.plan_tasks(cfg, backend="jax")


def test_torch_tasks_halve_their_batches_when_the_device_is_full(monkeypatch, torch_one_thread):
    from fastdcyk.engine.backends.torch import driver as _torch

    torch = torch_one_thread
    task = ex.plan_tasks(TORCH_GRID, backend="torch")[0]
    assert len(task.items) > 1
    expected = [{k: v for k, v in r.items() if k != "seconds"} for r in ex.run_task(task)]
    parse = _torch.parse
    sizes = []

    def small_device(plan, *args, **kwargs):
        sizes.append(len(plan.sentences))
        if len(plan.sentences) > 1:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (a test)")
        return parse(plan, *args, **kwargs)

    monkeypatch.setattr(_torch, "parse", small_device)
    got = ex.run_task(task, backend="torch")
    assert [{k: v for k, v in r.items() if k != "seconds"} for r in got] == [
        r | {ex.BACKEND_FIELD: "torch"} for r in expected
    ]
    assert sizes[-len(task.items) :] == [1] * len(task.items)

    def full_device(*args, **kwargs):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory (a test)")

    monkeypatch.setattr(_torch, "parse", full_device)
    with pytest.raises(MemoryError, match=r"ran out of memory parsing one sentence .* d = 16"):
        ex.run_task(task, backend="torch")


def test_torch_backend_errors_touch_no_file(tmp_path, monkeypatch, torch_one_thread):
    from fastdcyk.engine.backends.torch import device as _device

    torch = torch_one_thread
    out = tmp_path / "r.jsonl"
    run = dict(executor="serial", progress=False)
    for executor in ("process", "dask"):
        with pytest.raises(ValueError, match="serial executor only.*executor='serial'"):
            ex.run_experiment(TORCH_GRID, out, executor=executor, backend="torch", scheduler="x")
    with pytest.raises(ValueError, match="needs backend='torch'"):
        ex.run_experiment(TORCH_GRID, out, device="cpu", **run)
    with pytest.raises(ValueError, match="unknown backend 'jax'"):
        ex.run_experiment(TORCH_GRID, out, backend="jax", **run)
    with pytest.raises(ValueError, match="unknown device 'gpu'"):
        ex.run_experiment(TORCH_GRID, out, backend="torch", device="gpu", **run)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match=r"device 'cuda': CUDA is not available"):
        ex.run_experiment(TORCH_GRID, out, backend="torch", device="cuda", **run)
    assert not out.exists()
    with pytest.raises(ValueError, match="needs backend='torch'"):
        ex.run_task(ex.plan_tasks(TORCH_GRID)[0], device="cpu")
    # the other side: CUDA available (as PyTorch says), with one device
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert _device.check_device("cuda") == torch.device("cuda")
    assert _device.check_device("cuda:0") == torch.device("cuda:0")
    with pytest.raises(ValueError, match=r"'cuda:1': PyTorch sees 1 CUDA device"):
        _device.check_device("cuda:1")
    assert _device.check_device(None) == torch.device("cpu")
    with pytest.raises(ValueError, match="meta"):
        _device.check_device("meta")


def test_edited_results_files_are_errors_that_name_the_line_and_blank_lines_are_skipped(
    tmp_path,
):
    path = tmp_path / "r.jsonl"
    cfg = ex.ExperimentConfig(grammars=("G0",), dims=(16,), sentences=3, max_len=4)
    ex.run_experiment(cfg, path, executor="serial", progress=False)
    head, *lines = path.read_text().splitlines()
    expected = ex.load_records(path)

    def variant(name, text):
        p = tmp_path / name
        p.write_text(text)
        return p

    blank = variant("blank.jsonl", "\n".join([head, lines[0], "", "  ", *lines[1:]]) + "\n")
    assert ex.load_records(blank) == expected  # an editor's blank lines are nothing
    header = json.loads(head)
    header["config"]["max_len"] = "five"
    bad = variant("header.jsonl", "\n".join([json.dumps(header), *lines]) + "\n")
    with pytest.raises(ex.ResultsFileError, match="header's configuration is not valid.*five"):
        ex.load_records(bad)
    for field, value in (("d", "abc"), ("tp", 1.5), ("words", 3), ("f1", True)):
        record = json.loads(lines[1]) | {field: value}
        bad = variant("record.jsonl", "\n".join([head, lines[0], json.dumps(record)]) + "\n")
        with pytest.raises(ex.ResultsFileError, match=f"line 3: field '{field}' is"):
            ex.load_records(bad)


def test_the_task_planner_knows_every_order_of_the_variants():
    """Each (variant, order) the grid can run has a cost in the planner (an order it did
    not know fell back to the paper's sequential cost, 11 times the trace variant's, and
    cut the grid into needlessly small tasks): the trace variant's orders cost alike."""
    from fastdcyk.experiments import tasks as ex_tasks
    from fastdcyk.options import VARIANTS

    for variant in ("paper", "trace"):
        assert (variant, VARIANTS[variant]["order"]) in ex_tasks._COST_FACTOR
    cell, width = (ex_tasks._parse_cost(7, 1000, "trace", o) for o in ("cell", "width"))
    assert width == cell == ex_tasks._parse_cost(7, 1000, "trace")
    assert width < ex_tasks._parse_cost(7, 1000, "paper") / 10


# -- each record's own read-back; records outside the grid; what a refusal names ------------


def _tiny(path: Path, grammars: tuple[str, ...], variants: tuple[str, ...], **kw):
    """A grid of G0's 3 sentences of up to 4 words at d = 16, run serially into ``path``."""
    cfg = ex.ExperimentConfig(
        grammars=grammars, variants=variants, dims=(16,), sentences=3, max_len=4, **kw
    )
    return ex.run_experiment(cfg, path, executor="serial", progress=False)


def test_a_variant_without_a_choice_of_read_back_is_labelled_matched_in_every_file(tmp_path):
    """The header's read-back is the cleanup variant's choice: the trace variant of a grid
    with cleanup reads with matched filters as in any other grid, so its rows say
    "matched", whichever file they come from, and one parse is one record."""
    both, g1 = tmp_path / "both.jsonl", tmp_path / "g1.jsonl"
    _tiny(both, ("G0",), ("trace", "cleanup"))
    _tiny(g1, ("G1",), ("trace",))
    records = ex.load_records([both, g1])
    rows = ex.study_rows(records, "c", d=16, per_length=False)
    assert sorted((r["variant"], r["grammar"]) for r in rows) == [
        ("cleanup", "G0"),
        ("trace", "G0"),
        ("trace", "G1"),
    ]
    # no row of the trace variant says "cancel": each variant has one read-back here
    assert all(r.get("readback", "matched") == "matched" for r in rows if r["variant"] == "trace")
    table = ex.format_table(rows, ("d", "variant", "grammar"))
    assert "cancel" not in table and "readback" not in table
    assert {(r["variant"], ex.record_readback(r)) for r in records} == {
        ("trace", "matched"),
        ("cleanup", "cancel"),
    }
    # a cleanup variant read back two ways splits its rows; the trace rows say "matched"
    lstsq = tmp_path / "lstsq.jsonl"
    _tiny(lstsq, ("G0",), ("cleanup",), readback="lstsq")
    rows = ex.aggregate(ex.load_records([both, lstsq]), ("variant",))
    assert sorted((r["variant"], r["readback"]) for r in rows) == [
        ("cleanup", "cancel"),
        ("cleanup", "lstsq"),
        ("trace", "matched"),
    ]
    # the trace records of a trace-only file of the same sample are the same parses: kept once
    g0 = tmp_path / "g0.jsonl"
    _tiny(g0, ("G0",), ("trace",))
    assert len(ex.load_records([both, g0])) == len(ex.load_records(both))
    # and the grid with cleanup still resumes its own file: nothing to do
    again = _tiny(both, ("G0",), ("trace", "cleanup"))
    assert (again.resumed, again.tasks) == (again.total, 0)


def _with_strays(path: Path, d: int = 999) -> bytes:
    """Append to ``path`` a copy of its last record and one at dimension ``d``."""
    last = path.read_text().splitlines()[-1]
    stray = json.dumps({**json.loads(last), "d": d})
    with open(path, "a") as fh:
        fh.write(last + "\n" + stray + "\n")
    return path.read_bytes()


def test_a_resumed_file_counts_only_the_records_of_its_grid(tmp_path):
    cfg = ex.ExperimentConfig(grammars=("G0",), dims=(16, 32), sentences=3, max_len=4)
    path = tmp_path / "r.jsonl"
    ex.run_experiment(cfg, path, executor="serial", progress=False)
    content = _with_strays(path)
    said = []
    summary = ex.run_experiment(cfg, path, executor="serial", progress=False, echo=said.append)
    total = cfg.grid_size()
    assert (summary.total, summary.resumed, summary.written, summary.tasks) == (total, total, 0, 0)
    assert (summary.duplicates, summary.outside) == (1, 1) and summary.complete
    assert f"{total} already written, 0 to do" in said[0] and "-1 to do" not in said[0]
    assert "2 records of the file not counted: 1 repeats an earlier one" in said[0]
    assert "1 lies outside the grid (d = 999 is not among its dims (16, 32))" in said[0]
    assert path.read_bytes() == content  # nothing of the user's file is rewritten
    # a record missing besides: only it is to do, and the strays are still not counted
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:1] + lines[2:]) + "\n")
    summary = ex.run_experiment(cfg, path, executor="serial", progress=False)
    assert (summary.resumed, summary.written) == (total - 1, 1) and summary.complete


def test_load_records_leaves_out_records_outside_their_files_grid_with_a_warning(tmp_path):
    cfg = ex.ExperimentConfig(grammars=("G0",), dims=(16, 32), sentences=3, max_len=4)
    path = tmp_path / "r.jsonl"
    ex.run_experiment(cfg, path, executor="serial", progress=False)
    content = _with_strays(path)
    with pytest.warns(ex.ResultsWarning, match=r"1 record outside the grid.*d = 999 is not"):
        records = ex.load_records(path)
    assert len(records) == cfg.grid_size() and {r["d"] for r in records} == {16, 32}
    assert 999 in {r["d"] for r in ex.load_records(path, grid_only=False)}
    assert path.read_bytes() == content
    assert all(ex.grid_mismatch(r, cfg) is None for r in records)
    bad = {**records[0], "index": 3}
    assert ex.grid_mismatch(bad, cfg) == "index 3 is not one of its sample of 3 sentences"
    other = {**records[0], "variant": "cleanup"}
    assert (
        ex.grid_mismatch(other, cfg) == "variant = cleanup is not among its variants (paper, trace)"
    )
    assert ex.grid_mismatch({**records[0], "beta": 7.0}, cfg) == (
        "beta = 7 is not among its betas (50)"
    )


def test_a_grammar_edited_since_the_results_is_named_with_what_to_do(tmp_path, capsys):
    from fastdcyk.cli import main

    grammar = tmp_path / "G.cfg"
    grammar.write_text(Grammar.builtin("G0").to_string())
    path = tmp_path / "r.jsonl"
    cfg = ex.ExperimentConfig(
        grammars=(str(grammar),), source=str(grammar), dims=(16,), sentences=3, max_len=4
    )
    ex.run_experiment(cfg, path, executor="serial", progress=False)
    header = json.loads(path.read_text().splitlines()[0])
    assert header["grammar_sha256"] == cfg.grammar_hashes()
    grammar.write_text(grammar.read_text() + "\nVP -> 'runs'\n")
    content = path.read_bytes()
    with pytest.raises(ex.ConfigMismatchError) as err:
        ex.run_experiment(cfg, path, executor="serial", progress=False)
    msg = str(err.value)
    assert f"grammar {grammar} changed since these results were written" in msg
    assert "restore the grammar as it was" in msg and "out argument of run_experiment" in msg
    assert "--" not in msg  # the API's words, not the command's
    assert "(--out)" in err.value.cli_message
    # a header written before it kept the grammars' hashes: the single grammar is named
    lines = path.read_text().splitlines()
    del header["grammar_sha256"]
    old = tmp_path / "old.jsonl"
    old.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    with pytest.raises(ex.ConfigMismatchError, match=f"grammar {grammar} changed since"):
        ex.run_experiment(cfg, old, executor="serial", progress=False)

    # the command: the same, in its options
    def argv(*dims: str) -> list[str]:
        return [
            "experiment",
            *("--grammars", str(grammar), "--source", str(grammar), "--dims", *dims),
            *("--sentences", "3", "--max-len", "4", "--out", str(path)),
            *("--executor", "serial", "--no-progress"),
        ]

    assert main(argv("16")) == 2
    err_text = capsys.readouterr().err
    assert f"grammar {grammar} changed since these results were written" in err_text
    assert "(--out)" in err_text and "run_experiment" not in err_text
    assert "Traceback" not in err_text and path.read_bytes() == content
    assert main(argv("16", "32")) == 2  # and a field besides: named as its option
    assert "--dims (the file's 16, this run's 16 32)" in capsys.readouterr().err

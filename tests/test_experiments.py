"""The experiment runner: configuration hash, tasks, results file, resumption, executors."""

from __future__ import annotations

import errno
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import fastdcyk.experiments as ex
from fastdcyk import Codebook, Grammar, GrammarError, Scores, cell_scores, cyk, dcyk
from fastdcyk.engine import VARIANTS

SMALL = ex.ExperimentConfig(grammars=("G0", "G1"), dims=(16, 32), sentences=12, max_len=6)


def _strip(records):
    """Records keyed by their grid key, without the parse time (the only field that varies)."""
    out = {}
    for r in records:
        key = ex.record_key(r)
        assert key not in out, f"duplicate record {key}"
        out[key] = {k: v for k, v in r.items() if k != "seconds"}
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


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"dims": (1,)}, "dims must hold integers >= 2"),
        ({"dims": ()}, "dims must not be empty"),
        ({"variants": ("fast",)}, "unknown variant 'fast'"),
        ({"betas": (0.0,)}, "betas must hold finite numbers > 0"),
        ({"betas": (math.inf,)}, "betas must hold finite numbers > 0"),
        ({"seeds": (-1,)}, "seeds must hold integers >= 0"),
        ({"sentences": 0}, "sentences must be >= 1"),
        ({"min_len": 5, "max_len": 3}, "min_len <= max_len"),
        ({"threshold": 1.0}, "threshold must be strictly between 0 and 1"),
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
        (t.grammar, t.variant, t.beta, t.d, t.seed, i)
        for t in tasks
        for _, ix in t.items
        for i in ix
    ]


def test_tasks_cover_the_grid_once_and_parse_each_distinct_sentence_once():
    tasks = ex.plan_tasks(SMALL)
    sample = SMALL.sample()
    assert len(set(sample)) < len(sample)  # the sample has repeats: dedupe matters
    keys = [
        (t.grammar, t.variant, t.beta, t.d, t.seed, i)
        for t in tasks
        for _, ix in t.items
        for i in ix
    ]
    assert len(keys) == len(set(keys)) == SMALL.grid_size()
    per_cell: dict = {}
    for t in tasks:
        cell = (t.grammar, t.variant, t.beta, t.d, t.seed)
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
    done = {ex.record_key(r) for r in first}
    rest = ex.plan_tasks(SMALL, done, batch_size=2)
    assert sum(t.n_records for t in rest) == SMALL.grid_size() - len(first)
    assert not done & {
        (t.grammar, t.variant, t.beta, t.d, t.seed, i)
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
        cb = Codebook(32, seed=3, unitary=VARIANTS[variant]["unitary"])
        expected = cell_scores(cyk(g, words), dcyk(g, words, cb, variant=variant).chart)
        assert (rec["tp"], rec["gold"], rec["predicted"]) == (
            expected.tp,
            expected.gold,
            expected.predicted,
        )
        assert rec["f1"] == expected.f1 and rec["index"] == 7 and rec["length"] == 4
        assert rec["words"] == "fish swim near fish" and rec["variant"] == variant
        assert list(rec) == list(ex.RECORD_FIELDS)
        assert rec["seconds"] > 0


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
    assert str(path) in msg and small.hash() in msg and other.hash() in msg and "--out" in msg
    assert path.read_bytes() == content  # untouched


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

    monkeypatch.setattr(ex.os, "fsync", fsync)
    with pytest.raises(ex.ResultsWriteError, match="No space left on device") as err:
        ex.run_experiment(SMALL, path, executor="serial", progress=False, batch_size=1)
    assert "rerun" in str(err.value)
    written = ex.read_results(path)
    assert written.torn_bytes == 0  # the failed batch was cut back
    assert 0 < len(written.records) < SMALL.grid_size()
    monkeypatch.setattr(ex.os, "fsync", real_fsync)
    summary = ex.run_experiment(SMALL, path, executor="serial", progress=False)
    assert summary.resumed == len(written.records) and summary.complete
    assert _strip(ex.load_records(path)) == reference


def test_ctrl_c_keeps_finished_tasks(tmp_path, monkeypatch, reference):
    path = tmp_path / "r.jsonl"
    real = ex.run_task
    calls = {"n": 0}

    def run_task(task):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real(task)

    monkeypatch.setattr(ex, "run_task", run_task)
    with pytest.raises(KeyboardInterrupt):
        ex.run_experiment(SMALL, path, executor="serial", progress=False, batch_size=2)
    kept = ex.read_results(path).records
    assert len(kept) > 0
    monkeypatch.setattr(ex, "run_task", real)
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

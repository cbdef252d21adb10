"""fastdcyk.threads: one setting for FFTs and kernels, and scoped limits."""

from __future__ import annotations

import threading

import pytest

import fastdcyk as fd
import fastdcyk.experiments as ex
from fastdcyk import threads
from fastdcyk.hrr import kernels


def test_the_setting_governs_new_ffts_and_the_kernels():
    assert threads.get_threads() == 0
    assert fd.get_fft("scipy").threads == threads.cores() >= 1
    threads.set_threads(1)
    try:
        assert kernels.get_threads() == 1  # the kernels read the same setting
        assert fd.get_fft("scipy").threads == 1
        assert fd.Codebook(8, fft="scipy").fft.threads == 1
        assert fd.get_fft("scipy", threads=3).threads == 3  # an explicit count wins
    finally:
        threads.set_threads(None)
    assert threads.get_threads() == 0 and fd.get_fft("scipy").threads == threads.cores()


def test_the_setting_governs_blas_and_gives_its_counts_back():
    """BLAS's pools (numpy's and scipy's) follow set_threads; 0 gives back what they had."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    import numpy  # noqa: F401  (its BLAS loaded)
    import scipy.linalg  # noqa: F401

    def counts():
        return [
            i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"
        ]

    before = counts()
    assert before, "numpy links no BLAS that threadpoolctl finds"
    threads.set_threads(1)
    try:
        assert counts() == [1] * len(before)
        with threads.limit(2):  # a limit block leaves the process's BLAS alone
            assert counts() == [1] * len(before)
    finally:
        threads.set_threads(None)
    assert counts() == before


@pytest.mark.parametrize("bad", [-1, 1.5, True, "2"])
def test_bad_counts_are_refused(bad):
    with pytest.raises(ValueError, match="threads must be None or an integer >= 0"):
        threads.set_threads(bad)
    with pytest.raises(ValueError, match="threads must be None or an integer >= 0"):
        with threads.limit(bad):
            pass
    assert threads.get_threads() == 0


def test_limit_nests_and_restores_even_on_error():
    with threads.limit(1):
        assert threads.get_threads() == 1
        with threads.limit(2):
            assert threads.get_threads() == 2
        assert threads.get_threads() == 1
        with pytest.raises(RuntimeError), threads.limit(3):
            raise RuntimeError
        assert threads.get_threads() == 1
    assert threads.get_threads() == 0


def test_limit_applies_to_its_own_thread_only():
    seen = {}
    inside, release = threading.Event(), threading.Event()

    def other():
        with threads.limit(1):
            inside.set()
            release.wait(10)
            seen["other"] = threads.get_threads()

    t = threading.Thread(target=other)
    t.start()
    inside.wait(10)
    seen["main"] = threads.get_threads()  # while the other thread is inside its block
    release.set()
    t.join()
    assert seen == {"other": 1, "main": 0}


def test_run_task_runs_on_one_thread_and_leaves_the_setting_alone(monkeypatch):
    from fastdcyk.experiments import tasks as ex_tasks

    cfg = ex.ExperimentConfig(grammars=("G0",), dims=(16,), variants=("trace",), sentences=1)
    (task,) = ex.plan_tasks(cfg)
    real, seen = ex_tasks.parse_plan, []

    def spy(*args, **kwargs):
        seen.append(threads.get_threads())
        return real(*args, **kwargs)

    monkeypatch.setattr(ex_tasks, "parse_plan", spy)
    monkeypatch.setattr(ex_tasks, "_local", threading.local())  # build a fresh codebook
    assert ex.run_task(task)
    assert seen and set(seen) == {1}
    assert ex_tasks._local.codebook[1].fft.threads == 1
    assert threads.get_threads() == 0

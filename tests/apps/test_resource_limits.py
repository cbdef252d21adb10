"""Failing cleanly at the machine's limits: memory, a results file in use, a killed run."""

from __future__ import annotations

import json
import os
import pickle
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import fastdcyk as fd
import fastdcyk.engine.prepare as engine_plan
import fastdcyk.experiments as ex
import fastdcyk.hrr.memory as memory_module
from fastdcyk import cli, logfile
from fastdcyk.experiments import executors as ex_exec
from fastdcyk.experiments import store as ex_store

LINUX = sys.platform.startswith("linux")
#: Where this fastdcyk lives, for the subprocesses (and the pool workers they spawn).
ROOT = str(Path(fd.__file__).resolve().parents[1])
TINY = ex.ExperimentConfig(grammars=("G0",), dims=(16,), sentences=4, max_len=4)


@pytest.fixture(scope="module")
def example():
    return fd.Grammar.builtin("example")


def _python(code: str, *args: str, logs: Path) -> subprocess.Popen:
    """Run ``code`` in a new Python; its stdout and stderr go to files in ``logs`` (not to
    pipes, which processes it leaves behind would hold open)."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with open(logs / "stdout", "w") as out, open(logs / "stderr", "w") as err:
        return subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(code), *args], env=env, stdout=out, stderr=err
        )


# -- memory: a d that cannot fit fails at once, before anything of size d is allocated -------

#: Run under an address-space limit of 2 GiB beyond what the imports take (``ulimit -v``),
#: so that a regression fails with numpy's MemoryError instead of exhausting the machine.
HUGE_D_SCRIPT = """
import contextlib, io, json, resource, sys, time
import fastdcyk as fd
from fastdcyk import cli, logfile

with open("/proc/self/status") as fh:
    used = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmSize:"))
resource.setrlimit(resource.RLIMIT_AS, (used + 2 * 2**30, resource.RLIM_INFINITY))
out = {}
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.monotonic()
for d in (10**7, 10**9):
    for variant in ("paper", "trace"):
        try:
            fd.dcyk("example", "a a b", d=d, variant=variant)
            out[f"{d} {variant}"] = "no error"
        except MemoryError as exc:
            out[f"{d} {variant}"] = str(exc)
out["seconds"] = time.monotonic() - t0
cb = fd.Codebook.for_grammar(fd.Grammar.builtin("G0"), 10**9)
out["repr"] = repr(cb)
for name, get in (("perm", lambda: cb.perm), ("vector", lambda: cb.vector("terminal", "a"))):
    try:
        get()
        out[name] = "no error"
    except MemoryError as exc:
        out[name] = str(exc)
out["rss_mib"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss) / 1024
for command in (
    ["parse", "--dim", "1000000000", "a", "a", "b"],
    ["experiment", "--grammars", "G0", "--dims", "64", "1000000000", "--sentences", "2",
     "--max-len", "3", "--executor", "serial", "--no-progress", "--out", sys.argv[1]],
    ["demo", "--sentences", "0", "--repro-dims", "1000000000", "--no-progress", "--out",
     sys.argv[1] + ".demo"],
):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        out[command[0]] = [cli.main(command), err.getvalue()]
print(json.dumps(out))
"""


@pytest.mark.skipif(not LINUX, reason="needs /proc and RLIMIT_AS")
def test_a_huge_d_fails_at_once_under_ulimit_v(tmp_path):
    """d = 10**9 (and 10**7) is refused by the memory check, before the codebook draws its
    permutation or vectors: under ``ulimit -v`` the error is the check's, not numpy's, and
    the process stays small. The CLI prints it as one line."""
    results = tmp_path / "huge.jsonl"
    proc = _python(HUGE_D_SCRIPT, str(results), logs=tmp_path)
    try:
        proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, (tmp_path / "stderr").read_text()
    out = json.loads((tmp_path / "stdout").read_text().strip().splitlines()[-1])
    for d in (10**7, 10**9):
        for variant in ("paper", "trace"):
            msg = out[f"{d} {variant}"]
            assert msg.startswith(f"D-CYK at d = {d} in float32 needs about"), msg
            # the limit of the address space bounds what is available
            assert re.search(r"only (1\.\d\d|2\.00) GiB of memory is available", msg), msg
            assert re.search(r"use a smaller d \(at most about d = \d+ fits", msg), msg
            assert "check_memory=False" in msg
    assert out["seconds"] < 30  # 4.5 s and 0.8 GB for d = 10**7 before the check came first
    assert out["rss_mib"] < 100, out["rss_mib"]  # nothing of size d was allocated
    assert out["repr"].startswith("Codebook(d=1000000000, seed=0, float32, unitary")
    assert out["perm"].startswith("a codebook of dimension d = 1000000000 needs about 22.35 GiB")
    assert "for its permutation" in out["perm"] and "use a smaller d" in out["perm"]
    assert "for a symbol vector" in out["vector"]
    status, err = out["parse"]
    assert status == 1
    assert err.startswith("fastdcyk parse: error: D-CYK at d = 1000000000 in float32 needs")
    assert err.count("\n") == 1
    status, err = out["experiment"]
    assert status == 1
    assert err.startswith(
        "fastdcyk experiment: error: the grid's largest parse (d = 1000000000, variant 'paper'"
    )
    assert "run the dimensions d <= " in err and "(the dimensions: --dims)" in err
    assert err.count("\n") == 1
    assert not results.exists()  # refused before the results file was created
    status, err = out["demo"]  # the demo's option for its dimensions is --repro-dims
    assert status == 1 and "(the dimensions: --repro-dims)" in err and "--dims)" not in err


def test_dcyk_checks_memory_before_building_its_codebook(example, monkeypatch):
    def no_codebook(*args, **kwargs):
        raise AssertionError("the codebook was built before the memory check")

    monkeypatch.setattr(memory_module, "available_memory", lambda: 2**30)
    monkeypatch.setattr(engine_plan, "default_codebook", no_codebook)
    for variant in ("paper", "trace"):
        with pytest.raises(MemoryError) as err:
            fd.dcyk(example, "a a b", d=10**6, variant=variant)
        msg = str(err.value)
        assert "but only 1.00 GiB of memory is available" in msg
        fits = int(re.search(r"at most about d = (\d+) fits", msg).group(1))
        opts = {"variant": variant, "fft": "scipy", "n": 3}
        # the suggestion fits, with room to spare, and is not far below the limit
        assert fd.estimate_memory(fits, **opts) <= 0.9 * 2**30
        assert fd.estimate_memory(int(fits * 1.2), **opts) > 0.9 * 2**30
    with pytest.raises(MemoryError, match=r"use dtype='float32' or a smaller d \(at most"):
        fd.dcyk(example, "a a b", d=10**6, dtype="float64")


def test_dcyk_checks_a_given_codebook_before_drawing_from_it(example, monkeypatch):
    monkeypatch.setattr(memory_module, "available_memory", lambda: 2**30)
    cb = fd.Codebook(10**6, seed=1)
    with pytest.raises(MemoryError, match=r"D-CYK at d = 1000000 in float32 needs about"):
        fd.dcyk(example, "a a b", cb)
    assert cb._perm is None and not cb.symbols("terminal")  # nothing was drawn


def test_the_permutation_is_drawn_on_first_use():
    cb = fd.Codebook(64, seed=5)
    assert cb._perm is None
    # the same permutation as when it was drawn at construction (pinned)
    np.testing.assert_array_equal(cb.perm[:8], [31, 6, 34, 5, 53, 38, 16, 62])
    fresh = fd.Codebook(64, seed=5)
    np.testing.assert_array_equal(fresh.permutation_index(-2)[:4], [59, 36, 57, 11])
    np.testing.assert_array_equal(fresh.perm, cb.perm)
    later = pickle.loads(pickle.dumps(fd.Codebook(64, seed=5)))  # pickled before drawing
    np.testing.assert_array_equal(later.perm, cb.perm)
    g0 = fd.Codebook.for_grammar(fd.Grammar.builtin("G0"), 128, seed=2)
    np.testing.assert_array_equal(g0.perm[:8], [51, 41, 96, 108, 127, 98, 101, 85])


def test_a_codebook_refuses_what_cannot_fit(monkeypatch):
    monkeypatch.setattr(memory_module, "available_memory", lambda: 100 * 2**20)
    cb = fd.Codebook(2**22)  # a permutation of 96 MiB, its vectors 192 MiB at their peak
    with pytest.raises(MemoryError, match=r"d = 4194304 needs about 0\.09 GiB for its perm"):
        cb.perm  # noqa: B018
    with pytest.raises(MemoryError, match=r"for a symbol vector, which does not fit in the"):
        cb.vector("terminal", "a")
    assert cb._perm is None and not cb.symbols("terminal")
    # small draws are not checked at all
    monkeypatch.setattr(memory_module, "available_memory", lambda: 0)
    small = fd.Codebook(1024)
    assert small.perm.size == 1024 and small.spectrum("terminal", "a").size == 513


@pytest.mark.skipif(not LINUX, reason="reads /proc/self/status")
def test_available_memory_is_bounded_by_the_address_space_limit(monkeypatch):
    import resource

    used = memory_module.proc_status_bytes("VmSize")["VmSize"]
    real = resource.getrlimit

    def limited(which):
        if which == resource.RLIMIT_AS:
            return used + 300 * 2**20, resource.RLIM_INFINITY
        return real(which)

    monkeypatch.setattr(resource, "getrlimit", limited)
    avail = memory_module.available_memory()
    assert 200 * 2**20 < avail <= 300 * 2**20


def test_an_experiment_that_cannot_fit_is_refused_before_it_starts(monkeypatch, tmp_path):
    monkeypatch.setattr(memory_module, "available_memory", lambda: 2**30)
    cfg = ex.ExperimentConfig(grammars=("G0",), dims=(16, 100_000), sentences=3, max_len=4)
    out = tmp_path / "big.jsonl"
    with pytest.raises(MemoryError) as err:
        ex.run_experiment(cfg, out, executor="serial", progress=False)
    msg = str(err.value)
    assert msg.startswith("the grid's largest parse (d = 100000, variant 'paper'")
    assert "but only 1.00 GiB of memory is available: run the dimensions d <= " in msg
    assert not out.exists()
    # a resumed file: only what is left to do counts
    small = ex.ExperimentConfig(grammars=("G0",), dims=(16,), sentences=3, max_len=4)
    ex.run_experiment(small, out, executor="serial", progress=False)
    before = out.read_bytes()
    monkeypatch.setattr(memory_module, "available_memory", lambda: 1000)
    assert ex.run_experiment(small, out, executor="serial", progress=False).complete
    out.write_bytes(before[: before.rindex(b"\n", 0, -1) + 1])  # one record less
    with pytest.raises(MemoryError, match=r"largest parse \(d = 16"):
        ex.run_experiment(small, out, executor="serial", progress=False)


@pytest.mark.slow
def test_the_pool_is_cut_to_the_workers_that_fit(monkeypatch, tmp_path):
    cfg = ex.ExperimentConfig(
        grammars=("G0",), dims=(16,), sentences=4, max_len=4, variants=("paper",)
    )
    need = fd.estimate_memory(16, "float32", "auto", 1, variant="paper")
    monkeypatch.setattr(memory_module, "available_memory", lambda: need + need // 2)
    said = []
    summary = ex.run_experiment(
        cfg, tmp_path / "r.jsonl", workers=2, batch_size=1, progress=False, echo=said.append
    )
    assert summary.complete and summary.workers == 1
    assert any("so the pool has 1 workers instead of 2" in s for s in said), said


# -- one writer per results file -------------------------------------------------------------


class _Holder:
    """Holds a results file's lock in another thread until released."""

    def __init__(self, path: Path) -> None:
        self.held, self.release = threading.Event(), threading.Event()
        self.thread = threading.Thread(target=self._run, args=(path,), daemon=True)
        self.thread.start()
        assert self.held.wait(30)

    def _run(self, path: Path) -> None:
        with ex_store.results_lock(path):
            self.held.set()
            self.release.wait(60)

    def stop(self) -> None:
        self.release.set()
        self.thread.join(30)


@pytest.mark.skipif(os.name != "posix", reason="the lock is flock")
def test_a_file_being_written_is_refused_and_left_alone(tmp_path, capsys):
    path = tmp_path / "r.jsonl"
    ex.run_experiment(TINY, path, executor="serial", progress=False)
    with open(path, "ab") as fh:
        fh.write(b'{"grammar": "G0", "var')  # a torn last line, which a run would cut off
    before = path.read_bytes()
    holder = _Holder(path)
    try:
        with pytest.raises(ex.ResultsLockedError, match="is being written by another run"):
            ex.run_experiment(TINY, path, executor="serial", progress=False)
        with pytest.raises(ex.ResultsLockedError, match=re.escape(repr(str(path)))):
            ex.open_results(path, TINY, TINY.hash())
        args = ["experiment", "--grammars", "G0", "--dims", "16", "--sentences", "4"]
        args += ["--max-len", "4", "--executor", "serial", "--no-progress", "--out", str(path)]
        assert cli.main(args) == 2
        err = capsys.readouterr().err
        assert err.startswith("fastdcyk experiment: error: ") and "another run" in err
        assert path.read_bytes() == before  # not even the torn line was cut
    finally:
        holder.stop()
    summary = ex.run_experiment(TINY, path, executor="serial", progress=False)
    assert summary.torn_bytes > 0 and summary.written == 0 and summary.complete
    assert [p.name for p in tmp_path.iterdir()] == ["r.jsonl"]  # no lock file beside it


@pytest.mark.skipif(os.name != "posix", reason="the lock is flock")
def test_the_lock_is_released_when_the_run_fails(tmp_path, monkeypatch):
    path = tmp_path / "r.jsonl"

    def boom(task, **how):
        raise KeyboardInterrupt

    monkeypatch.setattr(ex_exec, "run_task", boom)
    with pytest.raises(KeyboardInterrupt):
        ex.run_experiment(TINY, path, executor="serial", progress=False)
    monkeypatch.undo()
    assert not logfile._HELD
    # another thread may take it now
    holder = _Holder(path)
    holder.stop()
    assert ex.run_experiment(TINY, path, executor="serial", progress=False).complete


#: A serial grid slow enough to be caught running (as the kill test of test_experiments).
SLOW = ex.ExperimentConfig(
    grammars=("G0",), dims=(64, 128, 256), sentences=40, max_len=7, variants=("paper",)
)
RUN_SCRIPT = """
import sys
import fastdcyk.experiments as ex
cfg = ex.ExperimentConfig.from_dict(__import__("json").loads(sys.argv[1]))
ex.run_experiment(cfg, sys.argv[2], executor=sys.argv[3], workers=2, batch_size=1,
                  progress=False)
"""


def _wait_for_records(proc: subprocess.Popen, path: Path, count: int) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") > count:
            return
        if proc.poll() is not None:
            pytest.fail(f"the run ended early: {(path.parent / 'stderr').read_text()}")
        time.sleep(0.05)
    pytest.fail("no records were written in time")


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="the lock is flock")
def test_a_second_run_is_refused_until_the_first_dies(tmp_path):
    path = tmp_path / "r.jsonl"
    proc = _python(RUN_SCRIPT, json.dumps(SLOW.to_dict()), str(path), "serial", logs=tmp_path)
    try:
        _wait_for_records(proc, path, 2)
        with pytest.raises(ex.ResultsLockedError):
            ex.run_experiment(SLOW, path, executor="serial", progress=False)
        proc.send_signal(signal.SIGKILL)  # a killed run's lock goes with it
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    written = len(ex.read_results(path).records)
    summary = ex.run_experiment(SLOW, path, executor="serial", progress=False)
    assert summary.resumed == written and summary.complete
    keys = [ex.record_key(r) for r in ex.read_results(path).records]
    assert len(keys) == len(set(keys)) == SLOW.grid_size()  # every record once


# -- pool workers do not outlive the run -------------------------------------------------------


def _children(pid: int) -> dict[int, str]:
    """{pid: start time} of the live processes whose parent is ``pid`` (from /proc)."""
    out = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat(int(entry))
            if fields is not None and int(fields[1]) == pid and fields[0] != "Z":
                out[int(entry)] = fields[19]
    return out


def _stat(pid: int) -> list[str] | None:
    """Fields 3 onwards of /proc/<pid>/stat (state, ppid, ...), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            text = fh.read()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()


def _alive(pid: int, start: str) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z" and fields[19] == start


@pytest.mark.slow
@pytest.mark.skipif(not LINUX, reason="finds the workers in /proc")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_pool_workers_exit_when_the_run_is_killed(tmp_path, sig):
    path = tmp_path / "r.jsonl"
    proc = _python(RUN_SCRIPT, json.dumps(SLOW.to_dict()), str(path), "process", logs=tmp_path)
    try:
        _wait_for_records(proc, path, 2)  # the workers are up and have run tasks
        children = _children(proc.pid)  # the two workers and the resource tracker
        assert len(children) >= 2, children
        proc.send_signal(sig)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(_alive(p, s) for p, s in children.items()):
        time.sleep(0.1)
    left = [p for p, s in children.items() if _alive(p, s)]
    for p in left:  # do not leave them behind, whatever the result
        os.kill(p, signal.SIGKILL)
    assert not left, f"processes of the killed run still alive: {left}"

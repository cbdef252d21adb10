"""Every code block of the README, the tutorials, the how-to guides and the tour runs as
written, and prints what it shows.

- A Python block runs in one namespace per page, in order. Full-line comments right after a
  line that calls ``print(`` are the output it shows: they must appear, in order, among the
  lines the block printed.
- A shell block runs with bash (``set -e``), the lines that install packages left out:
  installing is what CI's own set-up (``.ci/run``) does with the same commands.
- A block right after an HTML comment ``<!-- not run in the tests: REASON -->`` is not run;
  the reason must be given (a GPU, a cluster, data outside the repository, hours of work).

Every block runs in a fresh folder holding links to the repository's ``tests``, ``docs``
and ``benchmarks``, so that the pages' relative paths work and their outputs land there.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [
    ROOT / "README.md",
    ROOT / "docs" / "index.md",
    ROOT / "docs" / "tour.md",
    *sorted((ROOT / "docs" / "tutorials").glob("*.md")),
    *sorted((ROOT / "docs" / "howto").glob("*.md")),
]
FENCE = re.compile(
    r"(?P<marker><!--\s*not run in the tests:(?P<reason>.*?)-->\s*\n)?"
    r"^(?P<indent>[ ]*)```(?P<lang>python|bash)\n(?P<code>.*?)^(?P=indent)```",
    re.S | re.M,
)


def blocks(page: Path) -> list[tuple[str, str, str | None]]:
    """The page's (language, code, reason not run or None), in order."""
    found = []
    for m in FENCE.finditer(page.read_text(encoding="utf-8")):
        code = textwrap.dedent(m.group("code"))
        reason = m.group("reason").strip() if m.group("marker") else None
        found.append((m.group("lang"), code, reason))
    return found


def shown_output(code: str) -> list[str]:
    """The output a Python block shows: the full-line comments right after a print."""
    shown, after_print = [], False
    for line in code.splitlines():
        stripped = line.strip()
        if after_print and stripped.startswith("#"):
            shown.append(stripped[2:] if stripped.startswith("# ") else stripped[1:])
            continue
        after_print = "print(" in line and not stripped.startswith("#")
    return shown


@pytest.fixture
def folder(tmp_path, monkeypatch):
    for name in ("tests", "docs", "benchmarks"):
        (tmp_path / name).symlink_to(ROOT / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _ids(page: Path) -> str:
    return str(page.relative_to(ROOT))


@pytest.mark.parametrize("page", PAGES, ids=_ids)
def test_every_block_runs_and_prints_what_it_shows(page, folder):
    found = blocks(page)
    assert found, f"{_ids(page)} has no code block"
    namespace: dict = {"__name__": "__docs__"}
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    for k, (lang, code, reason) in enumerate(found):
        where = f"{_ids(page)}, block {k + 1} ({lang})"
        if reason is not None:
            assert len(reason) > 10, f"{where}: say why it is not run"
            continue
        if lang == "python":
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(code, where, "exec"), namespace)
            printed = [line.rstrip() for line in out.getvalue().splitlines()]
            at = 0
            for line in shown_output(code):
                while at < len(printed) and printed[at] != line.rstrip():
                    at += 1
                assert at < len(printed), f"{where}: shows {line!r}, which it did not print"
                at += 1
        else:
            script = "\n".join(
                line for line in code.splitlines() if not line.lstrip().startswith("pip install")
            )
            if not script.strip():
                continue
            run = subprocess.run(
                ["bash", "-e", "-c", script],
                capture_output=True,
                text=True,
                env=env,
                timeout=600,
            )
            assert run.returncode == 0, f"{where}:\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}"


def test_a_shown_output_is_checked():
    """The checker itself: a block that shows what it does not print fails."""
    code = 'print("a")\n# b\n'
    assert shown_output(code) == ["b"]
    assert shown_output("x = 1\n# a comment, not output\nprint(x)  # inline\n") == []

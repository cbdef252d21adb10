"""The README's first example runs, and prints the tree it shows."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def _first_example() -> str:
    text = README.read_text(encoding="utf-8")
    block = re.search(r"```python\n(.*?)```", text, re.S)
    assert block, "README.md has no Python example"
    # the part before the ATIS lines, which need NLTK's grammar file (not shipped)
    return block.group(1).split("# A real grammar")[0]


def test_readme_first_example_runs_and_draws_the_tree_it_shows():
    code = _first_example()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(README), "exec"), {})
    printed = out.getvalue().splitlines()
    # the comment lines after "print(r.tree().pretty())" are the drawing the README promises
    shown = []
    lines = code.splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith("print(r.tree().pretty())"))
    for line in lines[start + 1 :]:
        if not line.startswith("# "):
            break
        shown.append(line[2:])
    assert len(shown) >= 3, "the README shows no tree"
    assert "\n".join(shown) in "\n".join(printed)
    assert "True 1" in printed  # recognized, one tree


def test_readme_pcfg_example_prints_what_it_shows():
    text = README.read_text(encoding="utf-8")
    block = re.search(r"  ```python\n(  pcfg = .*?)  ```", text, re.S)
    assert block, "README.md has no PCFG example"
    code = "\n".join(line[2:] for line in block.group(1).splitlines())
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile("import fastdcyk as fd\n" + code, str(README), "exec"), {})
    shown = [line[2:] for line in code.splitlines() if line.startswith("# ")]
    assert out.getvalue().splitlines() == shown

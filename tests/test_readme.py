"""The README and the tutorials stay short and plain (docs/lab/prose_stats.py measures them):
the README at most 120 lines and 7,000 characters, and both at most 22 words a sentence on
average. Their code blocks run in tests/test_docs_examples.py."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROSE_STATS = ROOT / "docs" / "lab" / "prose_stats.py"
_spec = importlib.util.spec_from_file_location("prose_stats", PROSE_STATS)
prose = importlib.util.module_from_spec(_spec)
sys.modules["prose_stats"] = prose  # its dataclass looks its module up there
_spec.loader.exec_module(prose)

TUTORIALS = sorted((ROOT / "docs" / "tutorials").glob("*.md"))


def test_readme_is_short():
    s = prose.prose_stats(ROOT / "README.md")
    assert s.lines <= 120 and s.chars <= 7000, (s.lines, s.chars)


@pytest.mark.parametrize("page", [ROOT / "README.md", *TUTORIALS], ids=lambda p: p.name)
def test_sentences_are_short_on_average(page):
    s = prose.prose_stats(page)
    assert s.sentences >= 10
    assert s.mean_words <= 22, f"{page.name}: {s.mean_words:.1f} words a sentence"


def test_the_measure_counts_what_it_should():
    text = "# Title\n\nOne two three. Four five `code here` six.\n\n```python\nx = 1\n```\n"
    assert prose.sentences(text) == ["One two three.", "Four five CODE six."]
    assert prose.sentences("- an item\n- [a link](http://x.y) here\n") == ["an item", "a link here"]


def test_the_readme_starts_with_the_two_commands():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    first = re.search(r"```bash\n(.*?)```", text, re.S).group(1).splitlines()
    assert first == ["pip install . && fastdcyk demo", "pip install '.[test]' && pytest"]
    assert text.index("```bash") < text.index("##")  # before any section

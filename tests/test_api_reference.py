"""docs/api.md, the API reference readable in the repository, is the one the code writes."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

import fastdcyk as fd

SCRIPT = Path(__file__).parents[1] / "docs" / "sphinx" / "api_markdown.py"
_spec = importlib.util.spec_from_file_location("api_markdown", SCRIPT)
api_markdown = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(api_markdown)


def test_the_committed_page_is_current():
    pytest.importorskip("torch")  # the page documents the layer too
    text = api_markdown.reference_markdown()
    assert api_markdown.PAGE.read_text(encoding="utf-8") == text, (
        "docs/api.md is stale: run python docs/sphinx/api_markdown.py (or build the docs)"
    )


def test_every_public_name_is_on_the_page_with_its_signature_and_summary():
    pytest.importorskip("torch")
    text = api_markdown.PAGE.read_text(encoding="utf-8")
    for name in fd.__all__:
        if not name.startswith("_"):
            assert f"### `fastdcyk.{name}`" in text, name
    assert "dcyk_batch(\n    grammar,\n    sentences," in text  # a signature, wrapped
    summary = "Parse a sentence with D-CYK (the paper's Algorithms 2, 3 and 4)."
    assert summary in text  # dcyk's, from its docstring
    assert ":func:" not in text and ":class:" not in text  # Markdown, not reStructuredText
    assert not re.search(r"(?<!`)``[^`]", text)  # no ``literal`` (code fences are ```)

"""Sphinx configuration of fastdcyk's documentation site (the pages of ``docs/``).

Build it with ``pip install '.[docs]'`` and
``sphinx-build -W -c docs/sphinx -b html docs docs/_build/html``
(``-W``: a warning fails the build: a broken link between pages, a missing toctree entry, a
docstring docutils cannot read). Cross-references inside docstrings to numpy, the standard
library or torch are not resolved (intersphinx would fetch their inventories, and CI has no
network for that), so the build is not run in nitpicky mode.

It lives in docs/sphinx/ (``-c``), so that docs/'s root holds pages only; the studies'
scripts and records are under docs/lab/ (its README.md), which the site leaves out.
"""

from __future__ import annotations

import sys
from pathlib import Path

import fastdcyk
from fastdcyk.cli import reference_markdown

project = "fastdcyk"
author = "The fastdcyk developers"
copyright = "2026, The fastdcyk developers"
release = fastdcyk.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "myst_parser",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "sphinx.ext.intersphinx",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "lab", "sphinx"]  # lab/: the studies, sphinx/: this file
myst_heading_anchors = 3
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True, "show-inheritance": False}
intersphinx_mapping = {}
html_theme = "alabaster"
html_title = f"fastdcyk {release}"
html_static_path: list[str] = []


def write_cli_reference(path: Path) -> None:
    """docs/cli.md, the command line's reference (fastdcyk.cli.reference_markdown), written
    again whenever the parser's help has changed; tests/apps/test_cli_help_defaults.py
    checks that the committed page is current."""
    text = reference_markdown()
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def write_api_reference() -> None:
    """docs/api.md, the API reference readable in the repository (docs/sphinx/api_markdown.py),
    written again whenever the code's signatures or docstrings have changed;
    tests/test_api_reference.py checks that the committed page is current. Left as it is
    where a module cannot be imported here (PyTorch missing: the page would lack the layer)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import api_markdown

    try:
        text = api_markdown.reference_markdown()
    except ImportError:
        return
    page = api_markdown.PAGE
    if not page.exists() or page.read_text(encoding="utf-8") != text:
        page.write_text(text, encoding="utf-8")


write_cli_reference(Path(__file__).resolve().parents[1] / "cli.md")
write_api_reference()

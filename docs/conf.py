"""Sphinx configuration of fastdcyk's documentation site (``docs/``).

Build it with ``pip install '.[docs]'`` and ``sphinx-build -W -b html docs docs/_build/html``
(``-W``: a warning fails the build: a broken link between pages, a missing toctree entry, a
docstring docutils cannot read). Cross-references inside docstrings to numpy, the standard
library or torch are not resolved (intersphinx would fetch their inventories, and CI has no
network for that), so the build is not run in nitpicky mode.

This is the one script at docs/'s root, because sphinx-build reads its configuration there;
the studies' scripts and records are under docs/lab/ (its README.md), which the site leaves
out.
"""

from __future__ import annotations

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
exclude_patterns = ["_build", "lab"]  # lab/: the studies' scripts and records, not pages
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


write_cli_reference(Path(__file__).resolve().parent / "cli.md")

"""Every option of the command line whose help names a default names the parser's own
default (the value used when the option is left out), so help and code cannot drift apart."""

from __future__ import annotations

import argparse
import re

import pytest

from fastdcyk.cli import build_parser
from fastdcyk.engine import auto
from fastdcyk.options import VARIANTS, resolve

#: help text that names a default which depends on another option or on the machine
#: (checked by hand)
DEPENDENT = (
    "variant's",
    "variants'",
    "each variant",
    "the grammar's",
    "chosen",
    "auto",
    "per core",
    "first grammar",
    "seconds of work",
    "epsilon",
    "most grammars",
    "a terminal",
    "largest of --dims",
    "fastdcyk's default",
)
#: options whose parser default is None and which the code resolves: the value it uses
RESOLVED = {
    "beta": resolve("cleanup").beta,
    "threshold": resolve("cleanup").threshold,
    "max_dim": auto.MAX_D,
    "candidate_level": resolve("cleanup").candidate_level,
}


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _shown(value: object) -> set[str]:
    """The ways a help text may write a default."""
    if isinstance(value, list | tuple):
        return {" ".join(map(str, value)), ", ".join(map(str, value)), str(value)}
    if isinstance(value, bool):
        return {"on", str(value)} if value else {"off", str(value)}
    if isinstance(value, float):
        return {str(value), f"{value:g}"}
    return {str(value), repr(value)}


@pytest.mark.parametrize("name", sorted(_subcommands()))
def test_help_names_the_default_the_parser_uses(name):
    parser = _subcommands()[name]
    checked = 0
    for action in parser._actions:
        if not action.help or action.help == argparse.SUPPRESS:
            continue
        text = action.help % {"default": action.default, "prog": parser.prog}
        for m in re.finditer(r"\(default:? ([^()]*(?:\([^()]*\)[^()]*)*)\)", text):
            named = m.group(1).strip()
            if any(k in named for k in DEPENDENT):
                continue
            first = re.split(r"[;,:]| \(|(?<=\S) [a-z]+ ", named)[0].strip()
            default = RESOLVED.get(action.dest) if action.default is None else action.default
            if default is None:
                assert first in ("none", "None", "off"), (name, action.dest, named)
                continue
            if action.dest in ("beta", "threshold"):  # one value for every variant
                assert len({getattr(resolve(v), action.dest) for v in VARIANTS}) == 1
            shown = _shown(default)
            assert first in shown or named in shown or any(s in named for s in shown), (
                f"fastdcyk {name} {action.option_strings}: help says default {named!r}, "
                f"the code's default is {default!r}"
            )
            checked += 1
    assert checked or name in ("plot",), f"fastdcyk {name}: no default named in its help"


def test_the_committed_cli_reference_is_current():
    """docs/cli.md is the parser's help (fastdcyk.cli.reference_markdown, which the
    documentation build writes): regenerate it with a Sphinx build when this fails."""
    from pathlib import Path

    from fastdcyk.cli import reference_markdown

    page = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
    assert page.read_text(encoding="utf-8") == reference_markdown(), (
        "docs/cli.md is stale: run sphinx-build -c docs/sphinx -b html docs docs/_build/html"
    )

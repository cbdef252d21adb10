"""docs/api.md, the API reference as a page readable in the repository: every public name
of fastdcyk with its signature and the summary of its docstring, written from the code.

``conf.py`` writes the page at each build of the documentation site (where it changed);
``tests/test_api_reference.py`` checks that the committed page is current. Run by hand::

    python docs/sphinx/api_markdown.py          # writes docs/api.md
    python docs/sphinx/api_markdown.py --check  # exit 1 if docs/api.md is stale
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import pprint
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

PAGE = Path(__file__).resolve().parents[1] / "api.md"

#: The modules whose public names (their ``__all__``) the page lists, in this order, with
#: what each is for.
MODULES = (
    ("fastdcyk", "what `import fastdcyk as fd` gives"),
    ("fastdcyk.capacity", "the capacity model: D-CYK's accuracy predicted without parsing"),
    ("fastdcyk.nn", "D-CYK as a PyTorch layer (needs PyTorch)"),
    ("fastdcyk.experiments", "the paper's experiment grid, resumable, on cores or a cluster"),
    ("fastdcyk.plots", "the paper's figures from the grid's records"),
    ("fastdcyk.options", "every option, declared once"),
    ("fastdcyk.threads", "the threads of the FFTs and kernels"),
    ("fastdcyk.registry.modes", "the detection modes (for adding one)"),
    ("fastdcyk.registry.backends", "the backends (for adding one)"),
)

#: Records a parse's result holds, from modules not listed whole above: (module, what they
#: are, their names).
RECORDS = (
    (
        "fastdcyk.engine.core.result",
        "how a parse's d and beam were chosen (`DCYKResult.dimension`, `DCYKResult.beam`)",
        ("DimensionChoice", "BeamChoice"),
    ),
    (
        "fastdcyk.engine.core.certificate",
        "the certificate of a parse's chart (`DCYKResult.certificate`)",
        ("Certificate",),
    ),
)


#: The pages of the documentation site with the full docstrings, by layer.
FULL = ("options", "cfg", "hrr", "engine", "applications")

_ROLE = re.compile(
    r":(?:py:)?(?:func|class|meth|mod|attr|data|exc|obj):`(~?)([^`<]*?)(?: <([^>]+)>)?`"
)


def _markdown(text: str) -> str:
    """A docstring's reStructuredText roles and literals as Markdown code."""

    def role(m: re.Match[str]) -> str:
        shown = m.group(2).strip()
        if m.group(1) == "~":  # ~a.b.c shows c
            shown = shown.rsplit(".", 1)[-1]
        return f"`{shown}`"

    text = _ROLE.sub(role, text)
    return text.replace("``", "`")


def _summary(obj: Any) -> str:
    """The first paragraph of ``obj``'s docstring, on one line."""
    doc = inspect.getdoc(obj) or ""
    first = doc.split("\n\n", 1)[0]
    return _markdown(" ".join(first.split()))


def _signature(name: str, obj: Any) -> str | None:
    """``name(parameters)`` without annotations, wrapped one parameter a line when long."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    empty = inspect.Parameter.empty
    params = [p.replace(annotation=empty) for p in sig.parameters.values()]
    if params and params[0].name in ("self", "cls"):
        params = params[1:]
    parts: list[str] = []  # each parameter as str(signature) writes it, with * and /
    kinds = [p.kind for p in params]
    for k, p in enumerate(params):
        if (
            p.kind == p.KEYWORD_ONLY
            and p.VAR_POSITIONAL not in kinds[:k]
            and (k == 0 or kinds[k - 1] != p.KEYWORD_ONLY)
        ):
            parts.append("*")
        parts.append(str(p))
        if p.kind == p.POSITIONAL_ONLY and (k + 1 == len(params) or kinds[k + 1] != p.kind):
            parts.append("/")
    line = f"{name}({', '.join(parts)})"
    if len(line) <= 92:
        return line
    return "\n".join([f"{name}(", *(f"    {p}," for p in parts), ")"])


def _members(cls: type) -> list[tuple[str, Any]]:
    """A class's public methods and properties, its own and those of fastdcyk's base classes
    (not ``object``'s or a library's), in definition order."""
    seen: dict[str, Any] = {}
    for base in reversed(cls.__mro__):
        if not base.__module__.startswith("fastdcyk"):
            continue
        for key, value in vars(base).items():
            if key.startswith("_"):
                continue
            if isinstance(value, property | staticmethod | classmethod) or inspect.isfunction(
                value
            ):
                seen[key] = value
    return list(seen.items())


_SECTION = re.compile(r"^Attributes\n-{3,}\n(.*?)(?:\n\n[A-Z][A-Za-z ]+\n-{3,}\n|\Z)", re.S | re.M)
_FIELD = re.compile(r"^(\w+(?:, \w+)*)(?: : (.*))?$")


def _attributes(cls: type) -> list[tuple[str, str]]:
    """The fields of a class's numpydoc "Attributes" section: (names, type and the first
    sentence of their description)."""
    doc = inspect.getdoc(cls) or ""
    m = _SECTION.search(doc)
    if m is None:
        return []
    found: list[tuple[str, str]] = []
    lines = m.group(1).splitlines()
    k = 0
    while k < len(lines):
        head = _FIELD.match(lines[k])
        k += 1
        if head is None:
            continue
        body = []
        while k < len(lines) and (lines[k].startswith(" ") or not lines[k].strip()):
            body.append(lines[k].strip())
            k += 1
        text = " ".join(" ".join(body).split())
        first = re.split(r"(?<=[a-z0-9)`'\"])\. (?=[A-Z`])", text, maxsplit=1)[0].rstrip(".")
        kind = head.group(2) or ""
        about = ": ".join(x for x in (kind.strip(), first) if x)
        found.append((head.group(1), _markdown(about + ("." if first else ""))))
    return found


def _value(short: str, obj: Any) -> list[str]:
    """A constant's lines: its value as Python writes it, a mapping or sequence one entry a
    line; one too long to read whole named by its keys."""
    value = pprint.pformat(obj, width=92, compact=True, sort_dicts=False)
    if value.count("\n") > 40 and isinstance(obj, dict):
        keys = ", ".join(repr(k) for k in obj)
        kind = type(obj).__name__
        return [f"A {kind} of {len(obj)} entries, `help()` shows them: {keys}.", ""]
    return ["```python", f"{short} = {value}", "```", ""]


def _entry(qualified: str, obj: Any) -> list[str]:
    """The page's lines for one public name."""
    short = qualified.rsplit(".", 1)[1]
    out = [f"### `{qualified}`", ""]
    if isinstance(obj, ModuleType):
        return out + [f"A module: see [`{obj.__name__}`](#{_anchor(obj.__name__)}).", ""]
    if inspect.isclass(obj) or callable(obj):
        sig = _signature(short, obj)
        if sig is not None:
            out += ["```python", sig, "```", ""]
        out += [_summary(obj) or "(no docstring)", ""]
        if inspect.isclass(obj) and not issubclass(obj, BaseException):
            rows = [f"| `{names}` (attribute) | {about} |" for names, about in _attributes(obj)]
            for key, value in _members(obj):
                target = value.fget if isinstance(value, property) else value
                target = getattr(target, "__func__", target)
                if isinstance(value, property):
                    label = f"`{key}` (property)"
                else:
                    sig = _signature(key, target)
                    flat = " ".join((sig or key).split()).replace("( ", "(").replace(", )", ")")
                    label = f"`{flat}`"
                rows.append(f"| {label} | {_summary(target) or ''} |")
            if rows:
                out += ["| member | what it does |", "|---|---|", *rows, ""]
        return out
    if re.search(r" at 0x[0-9a-fA-F]+>$", repr(obj)):  # an object's default repr: its type
        kind = type(obj)
        return out + [f"A `{kind.__module__}.{kind.__qualname__}`: {_summary(kind)}", ""]
    return out + _value(short, obj)


def _anchor(module: str) -> str:
    """The heading anchor of a module's section (as GitHub and MyST make it)."""
    return re.sub(r"[^a-z0-9 -]", "", module.lower()).replace(" ", "-")


def reference_markdown() -> str:
    """The page: every module of :data:`MODULES` and its public names.

    Raises
    ------
    ImportError
        When a module cannot be imported (PyTorch missing for ``fastdcyk.nn``): the page
        would be incomplete.
    """
    lines = [
        "# API reference",
        "",
        "Every public name of fastdcyk, with its signature and the summary of its docstring",
        "(written from the code at each build of the documentation: do not edit). `help()`",
        "shows a name's whole docstring, and so do the pages by layer on the documentation",
        "site: " + ", ".join(f"[{p}](api/{p}.rst)" for p in FULL) + ".",
        "",
        "Modules: "
        + ", ".join(f"[`{m}`](#{_anchor(m)})" for m, _ in MODULES)
        + "; [what a parse's result holds](#what-a-parses-result-holds).",
        "",
    ]
    for module_name, about in MODULES:
        module = importlib.import_module(module_name)
        lines += [f"## {module_name}", "", f"{about[0].upper()}{about[1:]}.", ""]
        for name in module.__all__:
            if name.startswith("_"):
                continue
            lines += _entry(f"{module_name}.{name}", getattr(module, name))
    lines += ["## What a parse's result holds", ""]
    for module_name, about, names in RECORDS:
        module = importlib.import_module(module_name)
        lines += [f"From `{module_name}`: {about}.", ""]
        for name in names:
            lines += _entry(f"{module_name}.{name}", getattr(module, name))
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="exit 1 if docs/api.md is stale")
    args = p.parse_args(argv)
    text = reference_markdown()
    current = PAGE.read_text(encoding="utf-8") if PAGE.exists() else ""
    if args.check:
        if current != text:
            print(f"{PAGE} is stale: run python docs/sphinx/api_markdown.py", file=sys.stderr)
            return 1
        return 0
    if current != text:
        PAGE.write_text(text, encoding="utf-8")
        print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The engine's layers, as docs/architecture.md draws them, held against its imports.

From the bottom: the registries (``fastdcyk/registry/``: what modes and backends exist,
importing nothing of fastdcyk), the algorithm written once (``engine/core/``), the backends
(``engine/backends/<backend>/``), the modes (``engine/modes/<mode>/``), and at the engine's
root its policies (auto, beam, cost, memory, progress) below its front doors (prepare, api,
batch). Every import (lazy and ``TYPE_CHECKING`` ones included) runs down this list or stays
on its floor; a backend does not import another backend, and a policy no front door.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "fastdcyk"

#: The floors, bottom first: a module's floor is that of the longest prefix listed.
FLOORS = {
    "fastdcyk.registry": 0,
    "fastdcyk.engine.core": 1,
    "fastdcyk.engine.backends": 2,
    "fastdcyk.engine.modes": 3,
    "fastdcyk.engine.auto": 4,
    "fastdcyk.engine.beam": 4,
    "fastdcyk.engine.cost": 4,
    "fastdcyk.engine.memory": 4,
    "fastdcyk.engine.progress": 4,
    "fastdcyk.engine.prepare": 5,
    "fastdcyk.engine.api": 6,
    "fastdcyk.engine.batch": 7,
    "fastdcyk.engine": 8,  # the package's face: its __init__ exports the front doors
}


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _floor(module: str) -> int | None:
    held = [p for p in FLOORS if module == p or module.startswith(p + ".")]
    return FLOORS[max(held, key=len)] if held else None


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every fastdcyk module ``path`` imports (a name imported from a package counts as its
    submodule where one of that name exists), with its line."""
    module = _module(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(up + ([node.module] if node.module else []))
            for a in node.names:
                sub = f"{base}.{a.name}"
                is_module = (PACKAGE.parent / (sub.replace(".", "/") + ".py")).exists() or (
                    PACKAGE.parent / sub.replace(".", "/") / "__init__.py"
                ).exists()
                found.append((node.lineno, sub if is_module else base))
    return [(line, m) for line, m in found if m.startswith("fastdcyk")]


def _modules(*folders: str) -> list[Path]:
    return sorted(p for f in folders for p in (PACKAGE / f).rglob("*.py"))


def test_the_floors_cover_every_module_of_the_engine_and_the_registries():
    for path in _modules("engine", "registry"):
        assert _floor(_module(path)) is not None, path


def test_no_import_runs_up_a_floor():
    against = []
    for path in _modules("engine", "registry"):
        here = _module(path)
        for line, target in _imports(path):
            there = _floor(target)
            if there is not None and there > _floor(here):
                against.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {here} -> {target}")
    assert not against, "imports against the layering:\n" + "\n".join(against)


def test_the_registries_import_nothing_of_fastdcyk_but_themselves():
    for path in _modules("registry"):
        outside = [m for _, m in _imports(path) if not m.startswith("fastdcyk.registry")]
        assert not outside, (path, outside)


@pytest.mark.parametrize("folder", ["engine/backends", "engine/modes"])
def test_a_backend_or_mode_imports_no_other_but_the_one_it_extends(folder):
    """Each backend's folder is its own; a mode imports another only to extend it (the
    weighted table's parser is the clean-up gate's, writing a PCFG's scores; the tanh
    gate's is the trace gate's, writing tanh)."""
    extends = {("weighted", "cleanup"), ("tanh", "trace")}
    prefix = "fastdcyk." + folder.replace("/", ".") + "."
    for path in _modules(folder):
        own = _module(path)[len(prefix) :].split(".")[0]
        for line, target in _imports(path):
            if target.startswith(prefix):
                other = target[len(prefix) :].split(".")[0]
                assert other == own or (own, other) in extends, f"{path}:{line} -> {target}"


@pytest.mark.parametrize("name", ["torch_backend", "rules", "plan", "numpy_backend", "decode"])
def test_the_engines_modules_before_0_5_are_refused_naming_where_they_went(name):
    import importlib

    from fastdcyk import engine

    with pytest.raises(ImportError, match=rf"fastdcyk.engine.{name} moved after 0.4.*import from"):
        importlib.import_module(f"fastdcyk.engine.{name}")
    assert engine.MOVED[name].split()[0].startswith("fastdcyk.engine.")
    importlib.import_module(engine.MOVED[name].split()[0])  # where it went exists


def test_the_registry_of_modes_is_refused_where_it_was():
    from fastdcyk.engine import modes

    with pytest.raises(ImportError, match=r"moved to fastdcyk.registry.modes.register"):
        modes.register  # noqa: B018
    with pytest.raises(ImportError, match=r"moved to fastdcyk.registry.modes.select "):
        from fastdcyk.engine.modes import select  # noqa: F401
    assert not hasattr(modes, "no_such_name")

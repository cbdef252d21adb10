"""The examples in the package's docstrings run and print what they say.

They are run through the imported package (not by collecting the source files), so that
they test whatever ``pip install`` put in place.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import fastdcyk

#: Every module but ``__main__`` ones (importing one runs the program).
MODULES = sorted(
    name
    for _, name, _ in pkgutil.walk_packages(fastdcyk.__path__, "fastdcyk.")
    if not name.endswith(".__main__")
)
#: Modules that need PyTorch (the optional extra ``torch``).
NEEDS_TORCH = tuple(
    m
    for m in MODULES
    if m.startswith(("fastdcyk.engine.torch_", "fastdcyk.nn")) or m.endswith(".torch_parser")
)


def test_every_module_is_listed():
    assert "fastdcyk.engine" in MODULES and "fastdcyk.hrr.operators" in MODULES
    assert "fastdcyk.experiments.store" in MODULES and set(NEEDS_TORCH) <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    if name in NEEDS_TORCH:
        pytest.importorskip("torch")
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"

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

MODULES = sorted(name for _, name, _ in pkgutil.iter_modules(fastdcyk.__path__, "fastdcyk."))


def test_every_module_is_listed():
    assert "fastdcyk.engine" in MODULES and "fastdcyk.operators" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"

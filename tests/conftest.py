"""Fixtures shared by the test modules."""

from __future__ import annotations

import pytest


@pytest.fixture
def torch_one_thread():
    """PyTorch (the test is skipped without it), on one intra-op thread while the test runs:
    the tensors of the tests are tiny, and on a busy machine torch's pool of threads costs
    more than it saves."""
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield torch
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def commandtalk():
    """SRI's CommandTalk grammar in CNF (tests/data/commandtalk.cfg.gz, its notice kept):
    7,984 nonterminals, cells of up to about 250 symbols."""
    import warnings
    from pathlib import Path

    import fastdcyk as fd

    path = Path(__file__).parent / "data" / "commandtalk.cfg.gz"
    with warnings.catch_warnings():  # its few undefined symbols
        warnings.simplefilter("ignore", fd.GrammarWarning)
        return fd.Grammar.from_file(path, cnf="allow", encoding="latin-1").to_cnf()

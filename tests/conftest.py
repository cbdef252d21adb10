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

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


#: CommandTalk sentences whose charts hold cells of 122 to 373 symbols (generate(...,
#: min_len=4, max_len=7, seed=3)).
BIG_CELLS = (
    "that vehicle charlie eight assemble",
    "cev umcp are skurkas",
    "gunslinger five shamrock eight or sinbad",
    "brdm2 can tow zpu t80",
)


@pytest.fixture(scope="session")
def big_cells(commandtalk):
    """The CommandTalk sentences of :data:`BIG_CELLS` (``.sentences``), and
    ``.scores(codebook, readback)``: the cleanup variant's cell scores on them, summed."""
    import types

    import fastdcyk as fd

    def scores(codebook, readback):
        total = fd.Scores(0, 0, 0)
        for s in BIG_CELLS:
            r = fd.dcyk(commandtalk, s, codebook, variant="cleanup", readback=readback)
            total = total + fd.cell_scores(fd.cyk(commandtalk, s.split()), r.chart)
        return total

    return types.SimpleNamespace(sentences=BIG_CELLS, scores=scores)

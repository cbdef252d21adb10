"""d chosen for you: d="auto" doubles d while the certificate flags a cell
(fastdcyk.engine.auto; docs/method.md, section 7)."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

import fastdcyk as fd
import fastdcyk.hrr.memory as memory_module
from fastdcyk.engine import auto
from fastdcyk.engine.memory import parse_bytes
from fastdcyk.options import resolve

#: A CommandTalk sentence whose chart holds a cell of 215 symbols: at d = 128 (a bounded
#: read) the certificate flags cells, at 256 it is sure and the chart is CYK's.
NEEDS_256 = "avengers initiate only m113s"
#: A CommandTalk sentence with a word of 187 nonterminals ("umcp"): its cell has more
#: symbols than d = 128, read within the amplitudes' bounds, exactly, and the certificate
#: is sure of it.
WORD_OF_187 = "cev umcp are skurkas"
#: A CommandTalk sentence sure and exact at d = 128.
EASY = "topaz sleepy labeled foxtrot"


@pytest.fixture(autouse=True)
def fresh():
    """Every test starts with no starting d kept."""
    fd.clear_caches()
    yield
    fd.clear_caches()


def test_auto_doubles_until_the_certificate_is_sure(commandtalk):
    r = fd.dcyk(commandtalk, NEEDS_256, d="auto")
    assert r.dimension.tried == (128, 256)
    assert r.codebook.d == r.dimension.d == 256
    assert r.sure and r.dimension.sure
    assert r.chart == fd.cyk(commandtalk, NEEDS_256)
    assert "sure of the chart at d = 256" in r.dimension.reason
    assert "suspect cells at d = 128" in r.dimension.reason
    # the parse at 128 was not sure: the doubling was needed
    assert not fd.dcyk(commandtalk, NEEDS_256, d=128).sure


def test_a_try_below_the_largest_d_stops_at_its_first_suspect_cell(commandtalk, monkeypatch):
    """Below its largest d, d="auto" stops a parse once a cell it read is suspect by its own
    bound (after which its chart could not be sure): the d chosen, its tries and the result
    are those of tries run to the end, and the stopped try read fewer cells."""
    from contextlib import contextmanager

    from fastdcyk.engine.core import certificate, schedule

    read_when_stopped = []
    suspect = certificate.CertificateBuilder.suspect

    def spy(self, *args):
        verdict = suspect(self, *args)
        if verdict:
            read_when_stopped.append(int(np.isfinite(self.margins).sum()))
        return verdict

    monkeypatch.setattr(certificate.CertificateBuilder, "suspect", spy)
    r = fd.dcyk(commandtalk, NEEDS_256, d="auto")
    assert r.dimension.tried == (128, 256) and r.sure
    assert "suspect cells at d = 128, where it stopped)" in r.dimension.reason
    # stopped at 128 after fewer than the 10 cells of its table (a read cell has a margin)
    assert len(read_when_stopped) == 1 and 0 < read_when_stopped[0] < 10
    for order in ("cell", "width", "sequential"):
        with pytest.raises(schedule.SuspectCell), schedule.stopping_at_suspect():
            fd.dcyk(commandtalk, NEEDS_256, d=128, order=order)
    with schedule.stopping_at_suspect(), schedule.stopping_at_suspect(False):
        assert not fd.dcyk(commandtalk, NEEDS_256, d=128).sure  # run to the end

    stopping = schedule.stopping_at_suspect

    @contextmanager
    def to_the_end(stop=True):
        with stopping(False):
            yield

    fd.clear_caches()
    monkeypatch.setattr(schedule, "stopping_at_suspect", to_the_end)
    full = fd.dcyk(commandtalk, NEEDS_256, d="auto")
    assert full.dimension.tried == r.dimension.tried
    assert "stopped" not in full.dimension.reason
    np.testing.assert_array_equal(full.p_left, r.p_left)
    assert full.statistics == r.statistics and full.chart == r.chart


def test_a_sentence_of_the_same_length_starts_where_the_last_one_worked(commandtalk):
    fd.dcyk(commandtalk, NEEDS_256, d="auto")
    r = fd.dcyk(commandtalk, EASY, d="auto")
    assert r.dimension.tried == (256,)
    assert "where the last sentence of 1 to 5 words was sure" in r.dimension.reason
    fd.clear_caches()  # forgets it
    assert fd.dcyk(commandtalk, EASY, d="auto").dimension.tried == (128,)


def test_a_word_cell_of_more_symbols_than_d_is_tried_and_judged(commandtalk):
    """A one-word cell of 187 symbols at d = 128 is read by the bounded read (docs/method.md,
    section 7, "Beyond d"): the certificate is sure of the chart, which is CYK's, so
    d="auto" stops at 128 and keeps it for the bin."""
    gold = fd.cyk(commandtalk, WORD_OF_187.split())
    assert len(gold[(1, 2)]) == 187  # "umcp"
    r = fd.dcyk(commandtalk, WORD_OF_187, d="auto")
    assert r.dimension.tried == (128,) and r.sure and r.chart == gold
    assert fd.dcyk(commandtalk, EASY, d="auto").dimension.tried == (128,)


@pytest.mark.parametrize("name", ["G0", "G1", "G2", "G3", "G4"])
def test_the_papers_grammars_need_no_more_than_128(name):
    """G0..G4 at the default d: every chart of a sample sure and exact at d = 128."""
    g = fd.Grammar.builtin(name)
    for words in fd.generate(g, 5, min_len=3, max_len=8, seed=0):
        r = fd.dcyk(g, words)  # d left out: chosen
        assert r.dimension.tried == (128,)
        assert r.chart == fd.cyk(g, words)


def test_d_left_out_is_chosen_only_where_there_is_a_certificate():
    g = fd.Grammar.builtin("G0")
    assert fd.dcyk(g, "fish swim").dimension.d == 128
    trace = fd.dcyk(g, "fish swim", variant="trace")
    assert trace.codebook.d == 1024 and trace.dimension.reason == "the default, 1024"
    assert not trace.dimension.chosen and fd.dcyk(g, "fish swim").dimension.chosen
    assert trace.dimension.tried == (1024,) and trace.dimension.sure is None  # no certificate
    assert fd.dcyk(g, "fish swim", readback="matched").codebook.d == 1024
    given = fd.dcyk(g, "fish swim", d=64).dimension
    assert (given.d, given.tried, given.reason, given.sure) == (64, (64,), "given", True)
    book = fd.Codebook(256, 0)
    assert fd.dcyk(g, "fish swim", book).dimension.reason == "the codebook's"
    batch = fd.dcyk_batch(g, ["fish swim"], variant="trace")[0].dimension
    assert (batch.d, batch.reason) == (1024, "the default, 1024")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"d": "big"}, "integer >= 2 or 'auto'"),
        ({"d": "auto", "variant": "trace"}, "gives none"),
        ({"d": "auto", "readback": "matched"}, "gives none"),
        ({"d": "auto", "max_d": 64}, "max_d must be an integer >= 128"),
        ({"d": 256, "max_d": 512}, "max_d applies to d='auto' only"),
    ],
)
def test_what_auto_refuses(kwargs, message):
    with pytest.raises(ValueError, match=message):
        fd.dcyk(fd.Grammar.builtin("G0"), "fish swim", **kwargs)


def test_auto_refuses_a_codebook_and_the_torch_backend():
    g = fd.Grammar.builtin("G0")
    with pytest.raises(ValueError, match="a codebook was given"):
        fd.dcyk(g, "fish swim", fd.Codebook.for_grammar(g, 64, 0), d="auto")
    with pytest.raises(ValueError, match="choose_dimension"):
        fd.dcyk(g, "fish swim", d="auto", backend="torch")


def _memory_for(d: int, n: int) -> int:
    """The memory available that lets a parse at d fit, and not one at 2d."""
    opt = resolve(dtype="float32")
    return int(parse_bytes(d, "float32", "auto", opt, n) / 0.9) + 1


def test_a_max_d_that_does_not_fit_is_refused_before_any_parse(monkeypatch, commandtalk):
    monkeypatch.setattr(memory_module, "available_memory", lambda: _memory_for(256, 4))
    parsed = []
    monkeypatch.setattr(auto, "choose", lambda *a, **k: parsed.append(a))
    with pytest.raises(MemoryError, match=r"max_d = 8192, .* pass max_d=256"):
        fd.dcyk(commandtalk, NEEDS_256, d="auto", max_d=8192)
    assert not parsed


def test_auto_stops_at_the_memory_cap_and_says_so(monkeypatch, commandtalk):
    """Memory for d = 128 only: the default max_d is lowered to 128, the sentence (which
    needs 256) is parsed there, and the result says that its chart may be wrong, with a
    DimensionWarning."""
    monkeypatch.setattr(memory_module, "available_memory", lambda: _memory_for(128, 4))
    with pytest.warns(fd.DimensionWarning, match="still flags"):
        r = fd.dcyk(commandtalk, NEEDS_256, d="auto")
    assert r.dimension.tried == (128,) and r.dimension.max_d == 128
    assert not r.dimension.sure and not r.sure and r.suspect_cells()
    assert "the largest power of two whose parse fits" in r.dimension.reason


def test_choose_dimension_takes_the_largest_of_a_sample(commandtalk):
    d = fd.choose_dimension(commandtalk, ["brdm2 can tow zpu t80", NEEDS_256])
    assert d == 256
    with pytest.raises(ValueError, match="non-empty sequence"):
        fd.choose_dimension(commandtalk, NEEDS_256)


def test_dcyk_batch_chooses_d():
    g = fd.Grammar.builtin("G4")
    sents = fd.generate(g, 3, min_len=5, max_len=9, seed=0)
    each = fd.dcyk_batch(g, sents, d="auto", backend="numpy")
    assert [r.dimension.d for r in each] == [128, 128, 128]
    assert all(r.chart == fd.cyk(g, w) for r, w in zip(each, sents, strict=True))
    pytest.importorskip("torch")
    for d in ("auto", None):  # d chosen per sentence by numpy's certificate, the batch's max
        batch = fd.dcyk_batch(g, sents, d=d, backend="torch")
        assert {r.codebook.d for r in batch} == {128}
        assert all(r.sure and r.certificate is not None for r in batch)
        assert "whose certificate vouches" in batch[0].dimension.reason
        assert [r.chart for r in batch] == [r.chart for r in each]
    trace = fd.dcyk_batch(g, sents, backend="torch", variant="trace")  # no certificate
    assert trace[0].codebook.d == 1024 and trace[0].sure is None


@pytest.mark.parametrize("d", ["auto", 128])
def test_a_batch_refuses_a_bad_sentence_by_its_index_before_any_parse(d):
    g = fd.Grammar.builtin("G0")
    with pytest.raises(ValueError, match=r"^sentence 2 of the batch \(0-based\): word 'cat'"):
        fd.dcyk_batch(g, ["fish swim", "fish swim", "fish cat"], d=d)
    with pytest.raises(ValueError, match=r"^sentence 1 of the batch \(0-based\): empty"):
        fd.dcyk_batch(g, ["fish swim", " "], d=d)
    with pytest.raises(ValueError, match="the numpy backend parses one sentence at a time"):
        fd.dcyk_batch(g, ["fish swim"], d=d, batch_size=4)


def test_a_batch_at_a_fixed_d_shows_a_bar_over_its_sentences(capsys):
    g = fd.Grammar.builtin("G0")
    fd.dcyk_batch(g, ["fish swim"] * 3, d=128, progress=True)
    err = capsys.readouterr().err
    assert "0/3 [" in err and "sentence/s" in err  # tqdm's bar over the 3 sentences


def test_one_d_for_a_sample_is_one_its_sentences_need_never_a_probes():
    g = fd.Grammar.builtin("G4")
    sample = fd.generate(g, 20, min_len=5, max_len=10, seed=0)
    fd.clear_caches()
    each = [fd.dcyk(g, s) for s in sample]  # the 9th of a length bin is a probe, up or down
    assert any(r.codebook.d == 256 and "twice the d" in r.dimension.reason for r in each)
    assert fd.choose_dimension(g, sample) == 128  # every sentence is sure at 128
    assert all(fd.dcyk(g, s, d=128).sure for s in sample)


def test_the_layer_chooses_d_from_a_sample():
    pytest.importorskip("torch")
    from fastdcyk.nn import DCYK

    g = fd.Grammar.builtin("G2")
    sample = fd.generate(g, 3, min_len=3, max_len=6, seed=0)
    assert DCYK(g, "auto", sample=sample, max_length=6).d == 128
    with pytest.raises(ValueError, match="pass sample="):
        DCYK(g, "auto")
    with pytest.raises(ValueError, match="apply to d='auto' only"):
        DCYK(g, 64, sample=sample)


def test_the_cli_parses_at_the_d_it_chose():
    out = subprocess.run(
        [sys.executable, "-m", "fastdcyk.cli", "parse", "--grammar", "G0", "fish", "swim"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "d=128" in out and "d chosen: the certificate is sure" in out
    assert "certificate: sure" in out
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "fastdcyk.cli",
            "parse",
            "--dim",
            "auto",
            "--variant",
            "trace",
            "a",
            "b",
        ],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "--variant trace has no certificate" in bad.stderr


def test_a_result_at_a_fixed_d_says_its_d_was_given():
    r = fd.dcyk(fd.Grammar.builtin("G0"), "fish swim", d=256)
    assert r.dimension.reason == "given" and r.dimension.d == 256 and r.sure
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isfinite(r.certificate.smallest_margin) or r.certificate.smallest_margin > 0


def test_the_cli_refuses_a_max_dim_below_the_start(capsys):
    from fastdcyk import cli

    code = cli.main(["parse", "--grammar", "G0", "--max-dim", "64", "fish", "swim"])
    assert code == 2 and "--max-dim must be at least 128" in capsys.readouterr().err


class _Clock:
    """A clock the stand-in parses advance: each parse at d costs ``cost(d)`` seconds."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class _Parse:
    """A stand-in for a parse at d: sure when d reaches what the sentence needs; each call
    advances the clock by the cost of a parse at d."""

    def __init__(self, need, clock=None, cost=lambda d: d * d):
        self.need, self.asked, self.clock, self.cost = need, [], clock, cost

    def __call__(self, d):
        self.asked.append(d)
        if self.clock is not None:
            self.clock.now += self.cost(d)
        parse = self
        return type("R", (), {"sure": d >= parse.need, "suspect_cells": lambda self: [1]})()


def test_a_bin_held_at_a_large_d_steps_down_when_its_sentences_allow(monkeypatch):
    """Parses cost d^2: a probe at half the bin's d that is sure there is faster, so the bin
    moves down; one that is not is slower (its failed try counted), so it stays."""
    clock = _Clock()
    monkeypatch.setattr(auto, "_clock", clock)
    auto.clear()
    key, n, cap = ("policy",), 7, 8192

    def parse(need):
        return _Parse(need, clock)

    hard = parse(512)
    auto.choose(hard, key, n, cap)
    assert hard.asked == [128, 256, 512]
    for _ in range(auto.STEP_DOWN_AFTER):  # easy sentences: sure at once at the kept 512
        easy = parse(128)
        _, choice = auto.choose(easy, key, n, cap)
        assert easy.asked == [512]
    probe = parse(128)
    _, choice = auto.choose(probe, key, n, cap)
    assert probe.asked == [256] and choice.d == 256 and "half the d" in choice.reason
    after = parse(128)
    auto.choose(after, key, n, cap)
    assert after.asked == [256]  # sure at 256, and faster there: the bin now starts at 256
    harder = parse(300)  # more than 256: doubled to 512, which the bin keeps again
    auto.choose(harder, key, n, cap)
    assert harder.asked == [256, 512]
    for _ in range(auto.STEP_DOWN_AFTER):
        auto.choose(parse(512), key, n, cap)
    up = parse(512)  # the next probe goes up, in turn: sure at 1024 but slower, so back
    _, choice = auto.choose(up, key, n, cap)
    assert up.asked == [1024] and "twice the d" in choice.reason
    assert (again := parse(512)) and auto.choose(again, key, n, cap) and again.asked == [512]
    for _ in range(auto.STEP_DOWN_AFTER - 1):  # (again was the first of the streak)
        auto.choose(parse(512), key, n, cap)
    failing = parse(512)  # the probe at 256 is not sure: back to 512, the streak anew
    _, choice = auto.choose(failing, key, n, cap)
    assert failing.asked == [256, 512] and choice.d == 512
    again = parse(512)
    auto.choose(again, key, n, cap)
    assert again.asked == [512]
    auto.clear()


def test_a_bin_moves_up_where_its_sentences_parse_faster(monkeypatch):
    """The fastest sure d is not always the smallest (a cell of more than 0.9 d takes the
    bounded read): parses at 128 that cost more than those at 256 move the bin up after a
    probe at 256, and it stays there."""
    clock = _Clock()
    monkeypatch.setattr(auto, "_clock", clock)
    auto.clear()
    key, n, cap = ("policy-up",), 12, 8192

    def parse():
        return _Parse(128, clock, cost=lambda d: 5.0 if d == 128 else 1.0 if d == 256 else 4.0)

    for _ in range(auto.STEP_DOWN_AFTER + 1):
        first = parse()
        auto.choose(first, key, n, cap)
        assert first.asked == [128]
    probe = parse()
    _, choice = auto.choose(probe, key, n, cap)  # no half of 128 to try: twice it
    assert probe.asked == [256] and "twice the d" in choice.reason
    for _ in range(3):
        later = parse()
        _, choice = auto.choose(later, key, n, cap)
        assert later.asked == [256] and "parse fastest and sure" in choice.reason
    auto.clear()


def test_workers_share_a_table_by_what_they_saw(monkeypatch):
    """A worker parses with a copy of the parent's table inside ``sharing``; the parent
    learns what it saw, and its next copy starts where the worker's sentences went."""
    clock = _Clock()
    monkeypatch.setattr(auto, "_clock", clock)
    parent = auto.Table()
    worker = parent.copy()
    with auto.sharing(worker) as seen:
        hard = _Parse(512, clock)
        auto.choose(hard, ("any key",), 7, 8192)
    assert hard.asked == [128, 256, 512] and len(seen) == 1 and seen[0].final == 512
    assert parent.bin(1).kept is None  # the parent's own is untouched until it learns
    for s in seen:
        parent.learn(s)
    with auto.sharing(parent.copy()):
        next_one = _Parse(128, clock)
        auto.choose(next_one, ("another key",), 8, 8192)
    assert next_one.asked == [512]  # the shared bin's d, whatever the key


def test_a_probe_is_handed_to_one_job_only(monkeypatch):
    """Jobs in flight at once each get a copy of the corpus's table; a bin due a probe gives
    it to the first copy handed out, and the copies after it start at the bin's d."""
    clock = _Clock()
    monkeypatch.setattr(auto, "_clock", clock)
    parent = auto.Table()
    for _ in range(auto.STEP_DOWN_AFTER + 1):  # a bin at 512 and a streak that makes it due
        with auto.sharing(parent.handout()) as seen:
            auto.choose(_Parse(512, clock), ("key",), 7, 8192)
        for s in seen:
            parent.learn(s)
    assert parent.bin(1).kept == 512 and parent.due(parent.bin(1))
    first, second, third = parent.handout(), parent.handout(), parent.handout()
    asked = []
    for job in (first, second, third):
        with auto.sharing(job) as seen:
            sentence = _Parse(128, clock)
            auto.choose(sentence, ("key",), 7, 8192)
        asked.append(sentence.asked)
        for s in seen:
            parent.learn(s)
    assert asked == [[256], [512], [512]]  # one probe (down, half of 512), not three
    assert parent.bin(1).probes == 1
    assert parent.bin(1).kept == 256  # the probe was sure and faster at 256 (cost grows with d)

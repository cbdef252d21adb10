"""fastdcyk.learn_grammar and ``fastdcyk learn``: a grammar learned from strings through the
D-CYK table, its checkpoints, and the input it refuses."""

from __future__ import annotations

import math
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

import fastdcyk as fd
from fastdcyk.cli import main
from fastdcyk.learn import inputs
from fastdcyk.learn.result import LearnedGrammar

torch = pytest.importorskip("torch")

from fastdcyk.learn import model, train  # noqa: E402  (needs torch)


def anbn(n: int) -> tuple[str, ...]:
    return ("a",) * n + ("b",) * n


def one_edit_negatives(members, rng: random.Random) -> list[tuple[str, ...]]:
    """For each member, one string one edit (insertion, deletion, substitution) from it
    that is not of the form a^n b^n."""
    out = []
    for w in members:
        while True:
            w2 = list(w)
            kind = rng.choice("ids")
            at = rng.randrange(len(w2) + (kind == "i"))
            if kind == "i":
                w2.insert(at, rng.choice("ab"))
            elif kind == "d" and len(w2) > 1:
                del w2[at]
            else:
                w2[min(at, len(w2) - 1)] = rng.choice("ab")
            n = len(w2) // 2
            if w2 and tuple(w2) != anbn(n):
                out.append(tuple(w2))
                break
    return out


def anbn_data(count: int, seed: int, lo: int = 1, hi: int = 5):
    rng = random.Random(seed)
    pos = [anbn(rng.randint(lo, hi)) for _ in range(count // 2)]
    neg = one_edit_negatives(pos, rng)
    return pos + neg, [True] * len(pos) + [False] * len(neg)


@pytest.mark.slow
def test_anbn_learned_through_the_table_recognises_longer_strings():
    """200 labelled strings of 2 to 10 words; the grammar read off the table's weights,
    judged by symbolic CYK on strings of 12 to 40 words: every a^n b^n in, every one-edit
    negative out."""
    strings, labels = anbn_data(200, seed=0)
    learned = fd.learn_grammar(
        strings, labels, nonterminals=4, dtype="float32", seed=0, progress=False
    )
    assert learned.grammar is not None
    longer = [anbn(n) for n in range(6, 21)]
    assert all(learned.accepts(w) for w in longer)
    negatives = one_edit_negatives(longer * 4, random.Random(1))
    assert not any(learned.accepts(w) for w in negatives)
    assert learned.held_out_accuracy == 1.0
    assert learned.config["method"] == "table"


def _interrupt_after(monkeypatch, calls: int, name: str) -> None:
    """Make model.<name> raise KeyboardInterrupt at its ``calls``-th call (a Ctrl-C)."""
    real = getattr(model, name)
    seen = [0]

    def wrapped(*args, **kwargs):
        seen[0] += 1
        if seen[0] == calls:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(model, name, wrapped)


@pytest.mark.parametrize(
    ("method", "restarts", "steps", "stop"),
    [("chart", 2, 40, 57), ("table", 1, 30, 17)],
)
def test_a_resumed_run_ends_as_an_uninterrupted_one(
    tmp_path, monkeypatch, method, restarts, steps, stop
):
    strings, labels = anbn_data(60, seed=3)
    kw = dict(
        nonterminals=3,
        method=method,
        d=64,
        max_steps=steps,
        restarts=restarts,
        seed=2,
        progress=False,
    )
    whole = fd.learn_grammar(strings, labels, **kw)
    folder = tmp_path / "ck"
    with monkeypatch.context() as m:
        _interrupt_after(m, stop, f"{method}_cells")
        with pytest.raises(KeyboardInterrupt):
            fd.learn_grammar(strings, labels, checkpoint=folder, **kw)
    assert (folder / train.STATE).exists()
    state = torch.load(folder / train.STATE, weights_only=True)
    done = state["restart"] * steps + state["step"]
    assert done == stop - 1  # every step finished before the interrupt was kept
    resumed = fd.learn_grammar(strings, labels, checkpoint=folder, resume=True, **kw)
    assert resumed.weights == whole.weights
    assert resumed.grammar == whole.grammar
    assert resumed.history == whole.history
    # a finished run's checkpoint gives its result again, without training
    again = fd.learn_grammar(strings, labels, checkpoint=folder, resume=True, **kw)
    assert again.weights == whole.weights


def test_a_checkpoint_of_another_run_is_refused(tmp_path):
    strings, labels = anbn_data(20, seed=0)
    kw = dict(nonterminals=2, method="chart", max_steps=3, progress=False)
    fd.learn_grammar(strings, labels, checkpoint=tmp_path, **kw)
    with pytest.raises(ValueError, match="holds a checkpoint already"):
        fd.learn_grammar(strings, labels, checkpoint=tmp_path, **kw)
    with pytest.raises(ValueError, match="another run"):
        fd.learn_grammar(strings, labels, checkpoint=tmp_path, resume=True, **{**kw, "seed": 1})
    with pytest.raises(ValueError, match="give checkpoint=FOLDER"):
        fd.learn_grammar(strings, labels, resume=True, **kw)


@pytest.fixture
def no_training(monkeypatch):
    """Fail the test if any step is computed."""

    def refuse(*args, **kwargs):
        raise AssertionError("training ran on input that should have been refused")

    monkeypatch.setattr(model, "chart_cells", refuse)
    monkeypatch.setattr(model, "table_cells", refuse)


@pytest.mark.parametrize(
    ("strings", "labels", "kw", "error", "match"),
    [
        (["a b"], [1], {}, TypeError, "labels are booleans"),
        (["a b", "a"], [True], {}, ValueError, "1 labels for 2 strings"),
        (["a b"], None, {"nonterminals": 0}, ValueError, "nonterminals"),
        ([], None, {}, ValueError, "no training strings"),
        (["a b", "b"], [False, False], {}, ValueError, "no string is labelled True"),
        (["a b", ""], None, {}, ValueError, "empty"),
        ("a b", None, {}, TypeError, "sequence of sentences"),
        (["a b a"], None, {"brackets": [[(0, 2), (1, 3)]]}, ValueError, "cross"),
        (["a b"], None, {"brackets": [[(0, 3)]]}, ValueError, "outside the sentence"),
        (["a b"], None, {"brackets": [[(0, 1)], []]}, ValueError, "1 strings"),
        (["a b"], None, {"brackets": [["0-1"]]}, TypeError, "pair of ints"),
        (["a b"], None, {"nonterminals": 4000}, MemoryError, "fewer nonterminals"),
        (["a b"], None, {"held_out": 1.0}, ValueError, "held_out"),
        (["a b"], None, {"method": "symbolic"}, ValueError, "method"),
        (["a b"], None, {"beta": (3.0, -1.0)}, ValueError, "beta"),
    ],
)
def test_bad_input_is_refused_before_training(no_training, strings, labels, kw, error, match):
    kw = {"nonterminals": 2, "progress": False, **kw}
    with pytest.raises(error, match=match):
        fd.learn_grammar(strings, labels, **kw)


def test_crossing_spans():
    assert inputs.crossing_spans(4, [(0, 2)]) == [(1, 3), (1, 4)]
    assert inputs.crossing_spans(3, []) == []


def test_brackets_enter_the_loss():
    """The bracket terms: a bracket no nonterminal spans costs, and so does a nonterminal
    over a span that crosses a bracket."""
    inv = model.inventory(3, "S", ("a", "b"))
    gen = torch.Generator().manual_seed(0)
    wb = torch.rand(inv.n_binary, generator=gen, dtype=torch.float64).requires_grad_()
    wu = torch.rand(inv.n_unary, generator=gen, dtype=torch.float64)
    s = train._settings(
        nonterminals=3, start="S", seed=0, max_steps=10, restarts=1, method="chart",
        gate="sigmoid", d=64,
        dtype="float64", batch_size=4, lr=0.05, l1=0.0, beta=3.0, held_out=0.0,
        bracket_weight=1.0,
    )  # fmt: skip
    strings = [("a", "a", "b", "b")]
    cells = model.chart_cells(inv, strings, wu, wb, 3.0)
    plain = train._loss(s, cells, [True], [()])
    with_brackets = train._loss(s, cells, [True], [((1, 3),)])
    assert float(with_brackets.detach()) > float(plain.detach())
    with_brackets.backward()
    assert torch.isfinite(wb.grad).all() and wb.grad.abs().sum() > 0


def test_learned_grammar_saved_and_loaded(tmp_path):
    strings, labels = anbn_data(40, seed=1)
    learned = fd.learn_grammar(
        strings, labels, nonterminals=3, method="chart", max_steps=30, progress=False
    )
    path = learned.save(tmp_path / "g.cfg")
    back = LearnedGrammar.load(path)
    assert back.grammar == learned.grammar
    assert back.weights == learned.weights
    assert back.history == learned.history
    if learned.grammar is not None:
        assert fd.Grammar.from_file(path) == learned.grammar
    plain = tmp_path / "plain.cfg"
    plain.write_text("S -> 'a'\n", encoding="utf-8")
    with pytest.raises(ValueError, match="not written by LearnedGrammar.save"):
        LearnedGrammar.load(plain)


def _write(path: Path, lines) -> str:
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return str(path)


def test_cli_learn_writes_a_grammar(tmp_path, capsys):
    strings, labels = anbn_data(60, seed=0)
    s = _write(tmp_path / "s.txt", [" ".join(w) for w in strings])
    y = _write(tmp_path / "y.txt", ["1" if v else "0" for v in labels])
    out = tmp_path / "g.cfg"
    args = ["learn", "--strings", s, "--labels", y, "--nonterminals", "3", "--out", str(out)]
    assert main([*args, "--method", "chart", "--steps", "40", "--gate", "tanh"]) == 0
    assert "learned" in capsys.readouterr().out
    learned = LearnedGrammar.load(out)
    assert learned.config["max_steps"] == 40
    assert learned.config["gate"] == "tanh" and learned.config["beta"] == [1.0, 1.0]
    if learned.grammar is not None:
        assert fd.Grammar.from_file(out) == learned.grammar


@pytest.mark.parametrize(
    ("files", "extra", "match"),
    [
        ({"y": ["1", "maybe"]}, [], "line 2 is 'maybe'"),
        ({"y": ["1"]}, [], "1 labels for 2 sentences"),
        ({"b": ["0-3", ""]}, [], "outside the sentence"),
        ({"b": ["0:1", ""]}, [], "a bracket is i-j"),
        ({}, ["--resume"], "give --checkpoint"),
        ({"s": ["a b", ""]}, [], "line 2 is empty"),
    ],
)
def test_cli_learn_bad_input(tmp_path, capsys, files, extra, match):
    s = _write(tmp_path / "s.txt", files.get("s", ["a b", "a a b b"]))
    args = ["learn", "--strings", s, "--nonterminals", "2", "--out", str(tmp_path / "g.cfg")]
    if "y" in files:
        args += ["--labels", _write(tmp_path / "y.txt", files["y"])]
    if "b" in files:
        args += ["--brackets", _write(tmp_path / "b.txt", files["b"])]
    assert main([*args, *extra, "--method", "chart", "--steps", "2"]) == 2
    err = capsys.readouterr().err
    assert match in err and "Traceback" not in err
    assert not (tmp_path / "g.cfg").exists()


@pytest.mark.slow
def test_cli_learn_killed_and_resumed(tmp_path):
    """kill -9 in the middle of a run, then --resume: the grammar file is the one an
    uninterrupted run writes."""
    strings, labels = anbn_data(80, seed=4)
    s = _write(tmp_path / "s.txt", [" ".join(w) for w in strings])
    y = _write(tmp_path / "y.txt", ["1" if v else "0" for v in labels])

    def command(out: Path, *extra: str) -> list[str]:
        return [
            sys.executable, "-m", "fastdcyk", "learn", "--strings", s, "--labels", y,
            "--nonterminals", "3", "--out", str(out), "--steps", "400", "--method", "chart",
            *extra,
        ]  # fmt: skip

    whole = tmp_path / "whole.cfg"
    subprocess.run(command(whole), check=True, capture_output=True)
    ck, out = tmp_path / "ck", tmp_path / "resumed.cfg"
    proc = subprocess.Popen(command(out, "--checkpoint", str(ck)), stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not (ck / train.STATE).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    proc.kill()
    proc.wait()
    assert (ck / train.STATE).exists() and not out.exists()
    state = torch.load(ck / train.STATE, weights_only=True)
    assert 0 < state["step"] < 400
    done = subprocess.run(
        command(out, "--checkpoint", str(ck), "--resume"), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    a, b = LearnedGrammar.load(whole), LearnedGrammar.load(out)
    assert a.weights == b.weights and a.grammar == b.grammar


def test_the_tanh_gate_writes_nothing_where_nothing_is_derived():
    """Over the exact chart, an item no rule derives is 0 with the tanh gate and
    sigma(-beta / 2) > 0 with the sigmoid gate; a derived one is tanh(beta s)."""
    inv = model.inventory(2, "S", ("a", "b"))
    wb = torch.zeros(inv.n_binary, dtype=torch.float64)
    wb[0] = 1.0  # S -> S S, the only binary rule
    wu = torch.tensor([1.0, 0.0, 0.0, 0.0], dtype=torch.float64)  # S -> 'a' only
    strings = [("a", "a"), ("a", "b")]
    tanh = model.chart_cells(inv, strings, wu, wb, 2.0, "tanh").top()
    sig = model.chart_cells(inv, strings, wu, wb, 2.0, "sigmoid").top()
    one = math.tanh(2.0)  # each 'a' as S
    assert tanh.tolist() == pytest.approx([math.tanh(2.0 * one * one), 0.0], abs=1e-15)
    assert float(sig[1]) > 0.1


def test_the_table_with_the_tanh_gate_follows_the_exact_chart():
    """nn.DCYK with gate="tanh" computes the chart's values up to the table's crosstalk,
    which falls as d grows (float64, the layer's default codebook seed)."""
    inv = model.inventory(3, "S", ("a", "b"))
    gen = torch.Generator().manual_seed(0)
    wb = 0.5 * torch.rand(inv.n_binary, generator=gen, dtype=torch.float64)
    wu = torch.rand(inv.n_unary, generator=gen, dtype=torch.float64)
    strings = [("a", "b", "a", "b"), ("b", "a", "a"), ("a", "a", "b", "b", "b")]
    exact = model.chart_cells(inv, strings, wu, wb, 1.0, "tanh").top()
    errors = []
    for d in (128, 2048):
        layer = model.table_layer(inv, d, "tanh", 1.0, torch.float64, max_length=5)
        got = model.table_cells(layer, strings, wu, wb).top()
        errors.append(float((got - exact).abs().max()))
    assert errors[1] < errors[0]
    assert errors[1] < 0.05  # crosstalk ~ sqrt(items / d): about 0.02 at d = 2048


def test_the_tanh_gate_is_not_a_numpy_parser():
    with pytest.raises(ValueError, match="torch"):
        fd.dcyk(fd.Grammar.builtin("G0"), ["fish", "swim"], d=64, gate="tanh")

"""fastdcyk.nn.DCYK: the torch layer against the numpy backend, its gradients and its loss."""

from __future__ import annotations

import numpy as np
import pytest

import fastdcyk as fd

torch = pytest.importorskip("torch")
from fastdcyk.nn import DCYK  # noqa: E402

G0_SENTENCES = ["fish swim", "fish swim fish", "fish swim near fish", "fish"]


@pytest.mark.parametrize("variant", ["trace", "paper", "cleanup"])
def test_scores_and_charts_equal_the_numpy_engine(variant):
    g = fd.Grammar.builtin("G0")
    layer = DCYK(g, 32, variant=variant, dtype=torch.float64, seed=2, max_length=6)
    with torch.no_grad():
        out = layer(G0_SENTENCES)
    cb = layer.codebook()  # the module's vectors, for the numpy backend
    assert out.scores.shape == (4, 4, 5, len(g.nonterminals))
    for b, words in enumerate(G0_SENTENCES):
        ref = fd.dcyk(g, words, cb, variant=variant, prune=0.0)
        n = len(words.split())
        for (i, j, a), value in ref.statistics.items():
            k = layer.structure.nonterminals.index(a)
            got = float(out.scores[b, i, j, k].detach())
            assert got == pytest.approx(value, rel=1e-8, abs=1e-10), (words, i, j, a)
        assert out.charts[b] == ref.chart
        assert bool(out.mask[b, 0, n]) and not bool(out.mask[b, 0, n + 1 :].any())
    # the default codebook is the one dcyk builds for the variant
    again = fd.dcyk(g, G0_SENTENCES[1], d=32, seed=2, dtype="float64", variant=variant, prune=0)
    assert out.charts[1] == again.chart


def test_trees_of_a_batch_are_those_of_the_numpy_engine():
    g = fd.Grammar.builtin("G0")
    layer = DCYK(g, 256, variant="trace", dtype=torch.float64, seed=1, max_length=6)
    sentences = ["fish swim", "fish near fish swim fish swim", "fish swim near fish"]
    with torch.no_grad():
        out = layer(sentences)
    cb = layer.codebook()
    refs = [fd.dcyk(g, words, cb, variant="trace", prune=0.0) for words in sentences]
    assert out.trees() == [r.tree() for r in refs]
    assert out.trees()[-1] is None and None not in out.trees()[:-1]  # the last: not G0's
    assert out.trees(3) == [r.trees(3) for r in refs]
    assert [f.count for f in out.forests] == [r.tree_count for r in refs]
    with pytest.raises(ValueError, match="k must be"):
        out.trees(0)


def test_loss_is_bce_against_symbolic_cyk_and_gradients_reach_every_parameter():
    g = fd.Grammar.builtin("G0")
    layer = DCYK(g, 32, variant="trace", dtype=torch.float64, learn=("vectors", "rules", "indices"))
    names = {name for name, _ in layer.named_parameters()}
    assert names == {
        "terminal",
        "nonterminal",
        "right",
        "index",
        "unary_weights",
        "binary_weights",
    }
    out = layer(G0_SENTENCES[:3])
    loss = out.loss()
    # the same number by hand: sigma's logits, centred on the decoder's boundary (0.5 +
    # logit(0.99) / 50), against CYK's charts over the masked cells
    gold = out.gold()
    assert gold.sum() == sum(len(c) for w in G0_SENTENCES[:3] for c in fd.cyk(g, w).values())
    keep = out.mask[..., None].expand_as(out.scores)
    boundary = 0.5 + np.log(0.99 / 0.01) / 50
    assert out.boundary == pytest.approx(boundary)
    p = torch.sigmoid((out.scores - boundary) * 50)[keep]
    by_hand = -(gold[keep] * torch.log(p) + (1 - gold[keep]) * torch.log1p(-p)).mean()
    assert float(loss.detach()) == pytest.approx(float(by_hand.detach()), rel=1e-9)
    loss.backward()
    for name, param in layer.named_parameters():
        assert param.grad is not None and torch.isfinite(param.grad).all(), name
        assert float(param.grad.abs().max()) > 0, name
    # given gold charts (here: empty ones) replace CYK's
    lengths = [len(w.split()) for w in G0_SENTENCES[:3]]
    empty = [{(i, j): frozenset() for i in range(n) for j in range(i + 1, n + 1)} for n in lengths]
    assert float(out.gold(empty).sum()) == 0
    with pytest.raises(ValueError, match="2 charts for 3 sentences"):
        out.loss(empty[:2])
    with pytest.raises(ValueError, match="not a nonterminal"):
        out.loss([{(0, 1): {"X"}}] * 3)


def test_gradcheck_through_the_module():
    g = fd.Grammar.from_string("S -> A B | S S\nA -> 'a'\nB -> 'b'")
    layer = DCYK(g, 16, dtype=torch.float64, beta=4.0, max_length=4)

    def scores(nonterminal):
        params = {"nonterminal": nonterminal}
        return torch.func.functional_call(layer, params, (["a b", "a b a b"],)).scores

    start = layer.nonterminal.detach().clone().requires_grad_(True)
    assert torch.autograd.gradcheck(scores, (start,), eps=1e-6, atol=1e-6, fast_mode=True)


def test_a_few_steps_of_gradient_descent_lower_the_loss():
    g = fd.Grammar.builtin("G2")
    sents = fd.generate(g, 6, min_len=2, max_len=4, seed=1)
    layer = DCYK(g, 32, dtype=torch.float64, seed=0, max_length=4)
    opt = torch.optim.Adam(layer.parameters(), lr=0.02)
    losses = []
    for _ in range(4):
        opt.zero_grad()
        loss = layer(sents).loss()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    assert losses[-1] < losses[0]


def test_the_learned_codebook_saves_loads_and_parses_as_the_module(tmp_path):
    g = fd.Grammar.builtin("G0")
    layer = DCYK(g, 32, variant="trace", dtype=torch.float64, max_length=5)
    with torch.no_grad():
        layer.terminal.mul_(1.1)  # as if learned: no longer the default codebook's vectors
    path = tmp_path / "learned.npz"
    layer.codebook().save(path)
    cb = fd.Codebook.load(path)
    assert cb.d == 32 and cb.dtype == np.float64
    words = "fish swim near fish"
    ref = fd.dcyk(g, words, cb, variant="trace", prune=0.0)
    out = layer([words])
    k = layer.structure.nonterminals.index("S")
    got = float(out.scores[0, 0, 4, k].detach())
    assert got == pytest.approx(ref.statistics[0, 4, "S"], rel=1e-8)
    # a state dict round trip gives the same module
    other = DCYK(g, 32, variant="trace", dtype=torch.float64, max_length=5, seed=9)
    other.load_state_dict(layer.state_dict())
    assert torch.equal(other([words]).scores, out.scores)


def test_bad_arguments_are_refused(tmp_path):
    g = fd.Grammar.builtin("G0")
    with pytest.raises(ValueError, match="unknown learn 'weights'"):
        DCYK(g, 16, learn=("weights",))
    with pytest.raises(ValueError, match="dtype must be torch.float32 or torch.float64"):
        DCYK(g, 16, dtype=torch.float16)
    with pytest.raises(TypeError, match="unexpected keyword argument .progress."):
        DCYK(g, 16, progress=True)
    with pytest.raises(ValueError, match="the dimension d must be an integer >= 2"):
        DCYK(g, 1)
    layer = DCYK(g, 16, max_length=3)
    with pytest.raises(ValueError, match="longer than max_length = 3"):
        layer(["fish swim fish near fish"])
    with pytest.raises(ValueError, match="dog"):
        layer(["fish dog"])
    with pytest.raises(TypeError, match="not one str"):
        layer("fish swim")
    bad = tmp_path / "bad.npz"
    np.savez(bad, x=np.zeros(3))
    with pytest.raises(ValueError, match="not a codebook file"):
        fd.Codebook.load(bad)


def test_the_learning_example_runs_and_lowers_the_loss(tmp_path):
    """docs/lab/learning.py, the worked example, for a few steps at a tiny d."""
    import runpy
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "docs" / "lab" / "learning.py"
    main = runpy.run_path(str(script))["main"]
    out = main(
        ["--steps", "4", "--every", "1", "--d", "32", "--train", "8", "--test", "4"]
        + ["--lr", "0.003"]
        + ["--seeds", "0", "--json", str(tmp_path / "l.json"), "--figure", str(tmp_path / "l.png")]
        + ["--save", str(tmp_path / "cb")]
    )
    (r,) = out["results"]
    loss = r["curve"]["loss"]
    assert all(b < a for a, b in zip(loss, loss[1:], strict=False)), loss
    assert (tmp_path / "l.png").stat().st_size > 0 and (tmp_path / "l.json").exists()
    assert fd.Codebook.load(tmp_path / "cb.seed0.npz").d == 32


@pytest.mark.parametrize("readback", ["lstsq", "cancel"])
def test_the_cleanup_variant_learns(readback):
    """nn.DCYK with the clean-up detection: gradients reach the vectors, and a few steps of
    gradient descent lower the loss (G2, float64, fixed seeds; at d = 32 the cancelling
    read-back's charts are nearly exact from the start, so it learns at d = 16)."""
    g = fd.Grammar.builtin("G2")
    torch.manual_seed(0)
    d = 32 if readback == "lstsq" else 16
    layer = DCYK(g, d, variant="cleanup", readback=readback, dtype=torch.float64)
    sents = fd.generate(g, 8, min_len=3, max_len=5, seed=2)
    opt = torch.optim.Adam(layer.parameters(), lr=0.01)
    losses = []
    for _ in range(4):
        loss = layer(sents).loss()
        opt.zero_grad()
        loss.backward()
        assert all(
            p.grad is not None and torch.isfinite(p.grad).all()
            for p in opt.param_groups[0]["params"]
        )
        opt.step()
        losses.append(loss.item())
    assert all(b < a for a, b in zip(losses, losses[1:], strict=False)), losses


def test_devices_dtypes_and_values_are_checked_with_one_clear_message():
    g = fd.Grammar.builtin("G0")
    bad = ["gpu"] + ([] if torch.cuda.is_available() else ["cuda"])
    for device in bad:
        message = "unknown device" if device == "gpu" else "CUDA is not available"
        with pytest.raises(ValueError, match=message):
            DCYK(g, 32, device=device)
        with pytest.raises(ValueError, match=message):
            fd.dcyk(g, "fish swim", d=32, backend="torch", device=device)
        with pytest.raises(ValueError, match=message):
            fd.dcyk_batch(g, ["fish swim"], d=32, device=device)
    layer = DCYK(g, 32, dtype=torch.float64)
    layer.nonterminal.data = layer.nonterminal.data.float()  # one tensor cast by hand
    with pytest.raises(ValueError, match=r"different dtypes.*layer\.to\(dtype\)"):
        layer(["fish swim"])
    layer = DCYK(g, 32, dtype=torch.float64)
    with torch.no_grad():
        layer.terminal[0, 0] = float("nan")  # a diverged optimisation step
    with pytest.raises(ValueError, match="terminal holds NaN"):
        layer(["fish swim"])


def test_the_dimension_must_be_an_integer():
    for d in (2.5, "64", 1, True):
        with pytest.raises(ValueError, match="dimension d must be an integer"):
            DCYK(fd.Grammar.builtin("G0"), d)


def test_dcyk_input_marks_likely_tags_with_the_probabilities_gradient():
    """fastdcyk.nn.dcyk_input: 1 where the softmax exceeds the floor, 0 elsewhere, and
    the gradient of the probabilities (straight through), or of the log probabilities."""
    from fastdcyk.nn import dcyk_input

    logits = torch.tensor([[[2.0, 1.0, -30.0]]], dtype=torch.float64, requires_grad=True)
    x = dcyk_input(logits)  # 1 + p - p: 1 to the dtype's rounding
    torch.testing.assert_close(x.detach(), torch.tensor([[[1.0, 1.0, 0.0]]], dtype=x.dtype))
    w = torch.tensor([1.0, -1.0, 0.5], dtype=torch.float64)
    (x * w).sum().backward()
    p = torch.softmax(logits.detach(), -1)
    expected = p * (w - (p * w).sum(-1, keepdim=True))  # the Jacobian of softmax times w
    torch.testing.assert_close(logits.grad, expected)
    logits.grad = None
    (dcyk_input(logits, log=True) * w).sum().backward()
    torch.testing.assert_close(logits.grad, w - p * w.sum())
    assert dcyk_input(logits.detach(), floor=0.5).tolist() == [[[1.0, 0.0, 0.0]]]  # no grad
    with pytest.raises(ValueError, match="floor must be a probability"):
        dcyk_input(logits, floor=1.5)
    with pytest.raises(TypeError, match="float32 or float64"):
        dcyk_input(torch.ones((2, 3), dtype=torch.int64))
    with pytest.raises(ValueError, match=r"\(n, P\) or \(B, n, P\)"):
        dcyk_input(torch.ones(3))


def test_a_batch_whose_tables_do_not_fit_is_refused_before_it_allocates(monkeypatch):
    """dcyk and dcyk_batch refuse a d that does not fit before allocating; so does the
    layer, for its batch's tables (it failed in torch's allocator before)."""
    from fastdcyk.engine.backends.torch import device as tdevice

    g = fd.Grammar.builtin("G0")
    layer = DCYK(g, 64, dtype=torch.float64, max_length=4)
    tables = 2 * 33 * 64 * 16  # two half spectra of complex128 per sentence
    monkeypatch.setattr(tdevice, "free_bytes", lambda device: 3 * tables - 1)
    layer(["fish swim", "fish"])  # two sentences' tables fit
    with pytest.raises(MemoryError, match=r"3 sentence\(s\) at d = 64 need at least .*fewer"):
        layer(["fish swim", "fish", "swim"])


def test_the_layer_takes_a_dtype_by_name_as_dcyk_does():
    g = fd.Grammar.builtin("G0")
    assert DCYK(g, 32, dtype="float64").nonterminal.dtype == torch.float64
    with pytest.raises(ValueError, match=r"torch.float64 \('float32' or 'float64'\), got 'int8'"):
        DCYK(g, 32, dtype="int8")

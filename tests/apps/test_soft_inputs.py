"""Soft inputs: terminal weights and preterminal scores instead of words, in the numpy backend,
the torch backend and fastdcyk.nn.DCYK; their gradients; a tiny encoder trained through D-CYK;
the trees of soft inputs and of a PCFG from the layer's outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import fastdcyk as fd
from fastdcyk.engine.core.soft import SoftWord

torch = pytest.importorskip("torch")
from fastdcyk.nn import DCYK  # noqa: E402

# the bound for one-hot inputs against words, float64
ONE_HOT_TOL = 1e-6
VARIANTS = ("cleanup", "trace", "paper")


def _one_hot(layer: DCYK, sentences: list[tuple[str, ...]]) -> torch.Tensor:
    n = max(map(len, sentences))
    x = torch.zeros(len(sentences), n, len(layer.terminals), dtype=torch.float64)
    for b, words in enumerate(sentences):
        for i, w in enumerate(words):
            x[b, i, layer.terminals.index(w)] = 1.0
    return x


def _indicator(layer: DCYK, sentences: list[tuple[str, ...]]) -> torch.Tensor:
    """Each position's preterminals: the nonterminals A with A -> word."""
    g, pre = layer.grammar, layer.preterminals
    n = max(map(len, sentences))
    x = torch.zeros(len(sentences), n, len(pre), dtype=torch.float64)
    for b, words in enumerate(sentences):
        for i, w in enumerate(words):
            for a in g.lexicon[w]:
                x[b, i, pre.index(a)] = 1.0
    return x


@pytest.mark.parametrize("variant", VARIANTS)
def test_one_hot_terminals_give_what_the_words_give_in_the_layer(variant):
    g = fd.Grammar.builtin("G4")
    sentences = fd.generate(g, 4, min_len=2, max_len=6, seed=3)
    layer = DCYK(g, 64, variant=variant, dtype=torch.float64, seed=1, max_length=6)
    with torch.no_grad():
        words = layer(sentences)
        soft = layer(terminals=_one_hot(layer, sentences), lengths=[len(s) for s in sentences])
    assert soft.sentences == words.sentences
    diff = (soft.scores - words.scores).abs().max()
    assert float(diff) <= ONE_HOT_TOL
    assert float((soft.readouts - words.readouts).abs().max()) <= ONE_HOT_TOL
    assert soft.charts == words.charts
    assert soft.trees() == words.trees()


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("variant", VARIANTS)
def test_one_hot_weights_give_what_the_words_give_in_dcyk(variant, backend):
    g = fd.Grammar.builtin("G4")
    for words in fd.generate(g, 3, min_len=2, max_len=6, seed=5):
        ref = fd.dcyk(g, words, d=96, variant=variant, dtype="float64", backend=backend)
        got = fd.dcyk(
            g, [{w: 1.0} for w in words], d=96, variant=variant, dtype="float64", backend=backend
        )
        assert all(isinstance(w, SoftWord) for w in got.words) and got.words == ref.words
        diff = np.abs(got.statistics.array - ref.statistics.array).max()
        assert diff <= ONE_HOT_TOL
        assert got.chart == ref.chart and got.tree() == ref.tree()


def test_a_mixture_is_the_same_in_numpy_torch_and_the_layer():
    g = fd.Grammar.builtin("G4")
    words = ["like", {"fish": 0.8, "flies": 0.2}, "flies", "sail"]
    np_res = fd.dcyk(g, words, d=128, dtype="float64")
    torch_res = fd.dcyk(g, words, d=128, dtype="float64", backend="torch")
    # float64 arithmetic in a different order: the backends agree to rounding
    assert np.allclose(np_res.statistics.array, torch_res.statistics.array, rtol=0, atol=1e-9)
    layer = DCYK(g, 128, dtype=torch.float64, max_length=4)
    x = torch.zeros(1, 4, len(layer.terminals), dtype=torch.float64)
    for i, w in enumerate(words):
        for t, p in w.items() if isinstance(w, dict) else [(w, 1.0)]:
            x[0, i, layer.terminals.index(t)] = p
    with torch.no_grad():
        out = layer(terminals=x)
    assert out.sentences == [np_res.words]
    got = out.scores[0].numpy()[:4]
    assert np.allclose(got, np_res.statistics.array, rtol=0, atol=1e-9)
    assert out.charts[0] == np_res.chart and out.trees()[0] == np_res.tree()


def test_soft_words_are_checked_and_carry_their_weights():
    g = fd.Grammar.builtin("G4")
    r = fd.dcyk(g, ["fish", {"swim": 0.75, "fish": 0}], d=64)
    assert r.words[1] == "swim" and r.words[1].weights == (("swim", 0.75),)
    with pytest.raises(ValueError, match="'cat' is not a terminal"):
        fd.dcyk(g, ["fish", {"cat": 1.0}], d=64)
    for bad in (-1.0, 1.5, 100, 1e6):  # a weight of 100 gave a wrong chart before
        with pytest.raises(ValueError, match=r"weights are probabilities in \[0, 1\]"):
            fd.dcyk(g, ["fish", {"swim": bad}], d=64)
    # each weight in [0, 1], but together more than one sentence's worth of probability
    # (they inflated a PCFG's tree probability past the real sentence's)
    with pytest.raises(ValueError, match=r"position 1: the weights sum to 1.5; .*divide"):
        fd.dcyk(g, ["fish", {"swim": 0.75, "fish": 0.75}], d=64)
    r = fd.dcyk(g, ["fish", {"swim": 0.6, "fish": 0.4 + 1e-7}], d=64)  # a float32 softmax's
    assert r.words[1] == "swim" and dict(r.words[1].weights) == {"swim": 0.6, "fish": 0.4 + 1e-7}
    with pytest.raises(ValueError, match="are one terminal in Unicode NFC"):
        fd.dcyk(
            fd.Grammar.from_string("S -> 'caf\u00e9'"),
            [{"caf\u00e9": 0.5, "cafe\u0301": 0.5}],
            d=64,
        )
    with pytest.raises(ValueError, match="no terminal has a positive weight"):
        fd.dcyk(g, ["fish", {"swim": 0.0}], d=64)
    with pytest.raises(TypeError, match="not a number"):
        fd.dcyk(g, ["fish", {"swim": "1"}], d=64)
    with pytest.raises(TypeError, match="keys must be terminals"):
        fd.dcyk(g, ["fish", {1: 1.0}], d=64)


def test_gradcheck_through_the_soft_unary_step():
    g = fd.Grammar.from_string("S -> A B | S S\nA -> 'a' | 'b'\nB -> 'b'")
    sentences = [("a", "b"), ("a", "b", "a", "b")]
    for variant in ("cleanup", "trace"):
        layer = DCYK(g, 16, variant=variant, dtype=torch.float64, beta=4.0, max_length=4)
        start = _one_hot(layer, sentences) * 0.8 + 0.1
        start.requires_grad_(True)

        def scores(x, layer=layer):
            return layer(terminals=x, lengths=[2, 4]).scores

        assert torch.autograd.gradcheck(scores, (start,), eps=1e-6, atol=1e-6)
    layer = DCYK(g, 16, dtype=torch.float64, beta=4.0, max_length=4)
    pre = (_indicator(layer, sentences) * 0.8 + 0.1).requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda x: layer(preterminals=x, lengths=[2, 4]).scores, (pre,), eps=1e-6, atol=1e-6
    )


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize(
    ("variant", "given"), [("cleanup", "preterminals"), ("trace", "terminals")]
)
def test_the_layer_on_cuda_gives_the_cpu_scores_and_gradients(variant, given):
    g = fd.Grammar.builtin("G4")
    sentences = fd.generate(g, 4, min_len=2, max_len=6, seed=3)
    got = {}
    for dev in ("cpu", "cuda"):
        layer = DCYK(g, 128, variant=variant, dtype=torch.float64, seed=1, max_length=6, device=dev)
        soft = _indicator if given == "preterminals" else _one_hot
        x = (soft(layer, sentences) * 0.8 + 0.1).to(dev).requires_grad_(True)
        if given == "preterminals":
            out = layer(sentences, preterminals=x)
        else:  # the weights are the sentences
            out = layer(terminals=x, lengths=[len(s) for s in sentences])
        out.loss([fd.cyk(g, s) for s in sentences]).backward()
        got[dev] = (out.scores.detach().cpu(), x.grad.cpu(), out.charts)
    (s_cpu, g_cpu, c_cpu), (s_gpu, g_gpu, c_gpu) = got["cpu"], got["cuda"]
    # float64 on both: the two FFT libraries round differently, far under these bounds
    assert float((s_gpu - s_cpu).abs().max()) <= 1e-9
    scale = float(g_cpu.abs().max())
    assert scale > 0
    assert float((g_gpu - g_cpu).abs().max()) <= 1e-9 * scale
    assert c_gpu == c_cpu


def test_preterminal_scores_take_the_place_of_the_words():
    g = fd.Grammar.builtin("G4")
    sentences = fd.generate(g, 4, min_len=2, max_len=6, seed=3)
    layer = DCYK(g, 256, dtype=torch.float64, seed=0, max_length=6)
    with torch.no_grad():
        words = layer(sentences)
        pre = layer(sentences, preterminals=_indicator(layer, sentences))
    n = max(map(len, sentences))
    unary = (slice(None), range(n), range(1, n + 1))
    # the unary step's detections: sum over A -> word of the read terminal's clean score
    # (1 to within sigma's tail) against the given 1
    got, ref = pre.readouts[unary], words.readouts[unary]
    assert float((got - ref).abs().max()) <= ONE_HOT_TOL
    # the table holds no word vectors, so the read-backs differ by their leakage only
    assert pre.charts == words.charts
    assert pre.sentences == words.sentences
    tokens = [tuple(f"w{i}" for i in range(len(s))) for s in sentences]
    with torch.no_grad():
        anon = layer(tokens, preterminals=_indicator(layer, sentences))
    assert anon.charts == pre.charts
    assert all(t is not None for t in anon.trees())
    assert [tuple(t.leaves()) for t in anon.trees()] == tokens


def test_soft_inputs_are_checked_with_clear_messages():
    g = fd.Grammar.builtin("G4")
    layer = DCYK(g, 32, dtype=torch.float64, max_length=4)
    x = torch.zeros(1, 3, len(layer.terminals), dtype=torch.float64)
    x[:, :, 0] = 1.0
    p = torch.ones(1, 3, len(layer.preterminals), dtype=torch.float64)
    with pytest.raises(ValueError, match="not both"):
        layer(terminals=x, preterminals=p)
    with pytest.raises(ValueError, match="not both"):
        layer(["fish swim fish"], terminals=x)
    with pytest.raises(ValueError, match=r"\(sentences, positions, 13\) tensor"):
        layer(terminals=x[..., :5])
    with pytest.raises(ValueError, match="float32"):
        layer(terminals=x.float())
    with pytest.raises(ValueError, match="lengths must lie in 1..3"):
        layer(terminals=x, lengths=[4])
    with pytest.raises(ValueError, match="2 lengths"):
        layer(terminals=x, lengths=[1, 2])
    with pytest.raises(ValueError, match="NaN"):
        layer(terminals=x * float("nan"))
    with pytest.raises(ValueError, match=r"terminals= holds values from -1 to .*\[0, 1\]"):
        layer(terminals=-x)
    over = x.clone()
    over[0, 0] = 0.9  # every weight of the position 0.9: a sum of 13 * 0.9
    with pytest.raises(ValueError, match=r"weights sum to 11\.7.*softmax over the last axis"):
        layer(terminals=over)
    with pytest.raises(ValueError, match=r"preterminals= holds values from 5 to 5.*sigmoid"):
        layer(preterminals=p * 5)
    with pytest.raises(ValueError, match="lengths= goes with"):
        layer(["fish"], lengths=[1])
    with pytest.raises(TypeError, match="nothing to parse"):
        layer()
    with pytest.raises(ValueError, match="give gold_charts"):
        layer(terminals=x).loss()
    trace = DCYK(g, 32, variant="trace", dtype=torch.float64, max_length=4)
    with pytest.raises(ValueError, match="clean-up gate"):
        trace(preterminals=p)


def test_the_trees_of_a_pcfg_from_the_layer_are_its_viterbi_trees():
    g = fd.Grammar.load("tests/data/pp.pcfg")
    words = tuple("john saw the man with a telescope".split())
    layer = DCYK(g, 512, dtype=torch.float64, max_length=8)
    with torch.no_grad():
        out = layer([words])
        soft = layer(terminals=_one_hot(layer, [words]))
        pre = layer([words], preterminals=_indicator(layer, [words]))
    best = fd.viterbi(g, words)
    assert out.charts[0] == fd.cyk(g, words)  # the chart is exact here
    assert out.best_parses() == [best] == soft.best_parses()
    assert out.trees() == [best.tree]
    # preterminal scores of 1 give each tag log score 0: the tree of the binary rules
    tags = [{a: 0.0 for a in g.lexicon[w]} for w in words]
    assert pre.best_parses() == [fd.viterbi(g, words, lexical=tags)]
    assert pre.best_parses()[0].tree == best.tree
    with pytest.raises(ValueError, match="no probabilities"):
        DCYK(fd.Grammar.builtin("G4"), 32, max_length=2)(["fish swim"]).best_parses()


def test_a_tiny_encoder_learns_the_preterminals_of_unseen_words():
    """Nouns end in 'o', verbs in 'i': an encoder of each word's last letter learns, through
    D-CYK's chart loss alone, to tag words it never saw."""
    g = fd.Grammar.from_string(
        "S -> NP VP\nVP -> V NP\nNP -> Det N\nDet -> 'the' | 'a'\n"
        "N -> 'dogo' | 'cato' | 'bato'\nV -> 'seei' | 'hiti'"
    )
    train = [s for s in fd.generate(g, 40, min_len=5, max_len=5, seed=0)]
    torch.manual_seed(0)
    letters = "abcdefghijklmnopqrstuvwxyz"
    layer = DCYK(g, 64, dtype=torch.float64, seed=0, max_length=5, learn=())
    encoder = torch.nn.Sequential(
        torch.nn.Embedding(len(letters), 8), torch.nn.Linear(8, len(layer.preterminals))
    ).double()

    def scores(batch):
        last = torch.tensor([[letters.index(w[-1]) for w in s] for s in batch])
        return torch.sigmoid(encoder(last))

    opt = torch.optim.Adam(encoder.parameters(), lr=0.1)
    for step in range(30):
        batch = train[(step * 8) % 40 : (step * 8) % 40 + 8]
        opt.zero_grad()
        loss = layer(batch, preterminals=scores(batch)).loss([fd.cyk(g, s) for s in batch])
        loss.backward()
        opt.step()
    unseen = [("the", "fiso", "jumi", "a", "lupo"), ("a", "rato", "runi", "the", "dogo")]
    known = [("the", "dogo", "seei", "a", "cato")] * 2  # the same categories, known words
    with torch.no_grad():
        out = layer(unseen, preterminals=scores(unseen))
    assert out.charts == [fd.cyk(g, s) for s in known]
    assert [str(t) for t in out.trees()] == [
        "(S (NP (Det the) (N fiso)) (VP (V jumi) (NP (Det a) (N lupo))))",
        "(S (NP (Det a) (N rato)) (VP (V runi) (NP (Det the) (N dogo))))",
    ]


def test_best_parses_with_preterminals_score_the_taggers_scores_not_the_lexical_rules():
    """With preterminals= the log probability of best_parses() adds the log of the tagger's
    scores where a parse of words adds the rules A -> a (as documented): the difference
    between the two is exactly the lexical rules' log probabilities less the tagger's."""
    import math

    g = fd.Grammar.from_file(Path(__file__).parents[1] / "data" / "pp.pcfg")
    layer = DCYK(g, 256, dtype=torch.float64)
    words = "john saw the man with a telescope".split()
    pre = torch.zeros((1, len(words), len(layer.preterminals)), dtype=torch.float64)
    tags = {a: k for k, a in enumerate(layer.preterminals)}
    for i, w in enumerate(words):
        for a in g.lexicon[w]:
            pre[0, i, tags[a]] = 0.95
    (tagged,) = layer([words], preterminals=pre).best_parses(cnf=True)
    (worded,) = layer([words]).best_parses(cnf=True)
    assert tagged.tree == worded.tree
    pcfg = fd.Forest(g, words).score(tagged.tree)
    assert worded.log_prob == pytest.approx(pcfg, abs=1e-9)  # words: the PCFG's probability
    lexical = sum(g.log_prob(r) for r in tagged.tree.productions() if r.is_unary)
    expected = pcfg - lexical + len(words) * math.log(0.95)
    assert tagged.log_prob == pytest.approx(expected, abs=1e-9)

"""Bad input at the public boundary (issue 41, item 2): trees, weights, probabilities, score
tensors, paths and counts are checked where they are given, with the parameter's name in
the message, instead of failing deep inside or being accepted silently."""

from __future__ import annotations

import math

import numpy as np
import pytest

import fastdcyk as fd
from fastdcyk.cfg.forest import Forest
from fastdcyk.cfg.grammar import Rule, Symbol
from fastdcyk.cfg.metrics import labelled_brackets
from fastdcyk.cfg.treebank import TreebankGrammar, read_trees, word_class
from fastdcyk.cfg.viterbi import tree_from_scores

DOG = "(S (NP (DT the) (NN dog)) (VP (VBZ barks)))"
EX = fd.Grammar.builtin("example")
PCFG = fd.Grammar.from_string("S -> S S [0.4] | 'a' [0.6]")
TREE = fd.Tree.fromstring("(S (D a) (E b))")
SCORES = {(0, 1, "D"): 0.0, (1, 2, "E"): 0.0, (0, 2, "S"): 0.0}
RULES = [Rule("S", (Symbol("a", True),)), Rule("S", (Symbol("b", True),))]


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: fd.Tree("S", "ab"), TypeError, r"children must be an iterable.*\['ab'\]"),
        (lambda: fd.Tree("S", None), TypeError, "children must be an iterable.*NoneType"),
        (lambda: fd.Tree.from_nltk(None), TypeError, "tree must be an nltk.Tree, got NoneType"),
        (lambda: fd.Tree.from_nltk(DOG), TypeError, "got str .parse it first"),
        (lambda: fd.Tree.from_nltk(TREE), TypeError, "already a fastdcyk Tree"),
        (lambda: fd.un_cnf("(S a)", EX), TypeError, "tree must be a Tree, got str"),
        (lambda: fd.un_cnf(TREE, None), TypeError, "grammar must be a fastdcyk.Grammar"),
        (lambda: fd.is_parse(None, EX, "a b"), TypeError, "tree must be a Tree, got NoneType"),
        (lambda: fd.is_parse(["S"], EX, "a b"), TypeError, "tree must be a Tree, got list"),
        (lambda: fd.is_parse(TREE, EX, None), TypeError, "words must be a str .* got NoneType"),
        (lambda: fd.cyk(EX, None), TypeError, "words must be a str .* got NoneType"),
        (lambda: fd.viterbi(PCFG, 3), TypeError, "words must be a str .* got int"),
        (lambda: Forest(EX, None), TypeError, "words must be a str .* got NoneType"),
        (lambda: fd.Grammar.normalize_words(b"a b"), TypeError, r"got bytes \(decode it"),
    ],
)
def test_trees_and_sentences(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: Forest(EX, "a b").score(None), TypeError, "tree must be a Tree, got NoneType"),
        (lambda: Forest(EX, "a b").closest("(S a)"), TypeError, "tree must be a Tree, got str"),
        (
            lambda: Forest(PCFG, "a a").score(fd.Tree.fromstring("(S a)")),
            ValueError,
            r"over other words \('a'\) than the forest \('a a'\)",
        ),
        (
            lambda: Forest(EX, "a b", scores={**SCORES, (0, 1, "D"): math.nan}).best(),
            ValueError,
            r"scores\[\(0, 1, 'D'\)\] is nan: scores are finite or -inf",
        ),
        (
            lambda: Forest(EX, "a b", scores={**SCORES, (0, 1, "D"): math.inf}),
            ValueError,
            r"scores\[\(0, 1, 'D'\)\] is inf",
        ),
        (
            lambda: Forest(EX, "a b", scores={**SCORES, (0, 1, "D"): "x"}),
            TypeError,
            "is 'x', not a number",
        ),
        (lambda: Forest(EX, "a b", scores=[1.0]), TypeError, "scores must be a mapping"),
        (
            lambda: Forest(EX, "a b", scores={}).best(),
            ValueError,
            r"scores gives no score for the item \(0, 1, 'D'\)",
        ),
        (lambda: Forest(EX, "a b", chart=[1]), TypeError, "chart must be a chart, a mapping"),
        (
            lambda: Forest(EX, "a b", chart={(0, 1): "D"}),
            TypeError,
            r"chart\[\(0, 1\)\] is 'D': a cell is a set of nonterminals",
        ),
        (
            lambda: Forest(EX, "a b", lexical=[{"D": "x"}, None]),
            TypeError,
            r"lexical\[0\]\['D'\] is 'x', not a number",
        ),
        (lambda: fd.viterbi(PCFG, "a a", chart=[1]), TypeError, "chart must be a chart"),
        (lambda: fd.cell_scores(None, {}), TypeError, "gold must be a chart.*None"),
        (lambda: fd.cell_scores({}, "S"), TypeError, "predicted must be a chart.*got str"),
        (
            lambda: tree_from_scores(PCFG, ("a", "a"), None),
            TypeError,
            "read_scores must be a mapping",
        ),
        (
            lambda: tree_from_scores(PCFG, ("a", "a"), {(0, 1, "Q"): 0.0}),
            ValueError,
            "read_scores names 'Q', which is not a nonterminal",
        ),
        (
            lambda: tree_from_scores(PCFG, ("a", "a"), {(0, 1, "S"): "x"}),
            TypeError,
            r"read_scores\[\(0, 1, 'S'\)\] is 'x', not a number",
        ),
        (lambda: fd.evalb(TREE, TREE, delete="ROOT"), TypeError, r"delete.*\['ROOT'\]"),
        (lambda: labelled_brackets(TREE, equal=None), TypeError, "equal must be a mapping"),
    ],
)
def test_forests_scores_and_charts(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: fd.Grammar(RULES, probs=[True, True]), fd.GrammarError, "is True, not a number"),
        (lambda: fd.Grammar(RULES, probs=3), fd.GrammarError, r"probs is 3 \(int\)"),
        (lambda: fd.Grammar(None), TypeError, "rules must be an iterable of Rule"),
        (lambda: fd.Grammar("S -> 'a'"), TypeError, "got str .grammar text: Grammar.from"),
        (lambda: fd.Grammar(["S -> 'a'"]), TypeError, "rules must hold Rule objects"),
        (lambda: fd.generate(EX, 2, seed=1.5), ValueError, "seed must be an int or None"),
        (lambda: fd.generate(EX, 2, seed="x"), ValueError, "seed must be an int or None"),
        (
            lambda: TreebankGrammar.from_trees([DOG], horizontal=True),
            ValueError,
            "horizontal must be an integer >= 1, got True",
        ),
        (
            lambda: TreebankGrammar.from_trees([DOG], rare=True),
            ValueError,
            "rare must be an integer >= 0, got True",
        ),
        (lambda: word_class(None), TypeError, "word must be a str, got NoneType"),
        (lambda: fd.get_fft("numpy", 1.5), ValueError, "threads must be an integer >= 1"),
        (lambda: fd.Codebook(8).phi(1.5), ValueError, "power must be an integer, got 1.5"),
        (
            lambda: fd.Codebook(8).circulant(np.full(8, np.nan)),
            ValueError,
            "vector has non-finite values",
        ),
        (
            lambda: fd.Codebook.from_vectors(permutation=np.arange(4), terminals=[1]),
            TypeError,
            "terminals must be a mapping",
        ),
    ],
)
def test_weights_and_counts(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_paths(tmp_path):
    from fastdcyk import plots
    from fastdcyk.experiments import load_records, read_results

    (tmp_path / "t.mrg").write_text(DOG)
    with pytest.raises(ValueError, match="unknown encoding 'bogus': give a Python codec"):
        read_trees(tmp_path / "t.mrg", encoding="bogus")
    with pytest.raises(fd.GrammarError, match="is a folder, not a grammar file"):
        fd.Grammar.from_file(tmp_path)
    with pytest.raises(TypeError, match="spec must be a built-in grammar's name or a .*NoneType"):
        fd.Grammar.load(None)
    with pytest.raises(TypeError, match="path must be a path .*NoneType"):
        fd.Codebook(8).save(None)
    with pytest.raises(IsADirectoryError, match="is a folder: give a file's path"):
        fd.Codebook(8).save(tmp_path)
    with pytest.raises(TypeError, match="path must be a path .*NoneType"):
        fd.Codebook.load(None)
    with pytest.raises(TypeError, match="path must be a path .*NoneType"):
        read_results(None)
    with pytest.raises(TypeError, match="paths must be a path or a sequence of paths"):
        load_records(None)
    with pytest.raises(TypeError, match="path must be a path .*NoneType"):
        plots.figure_format(None)
    with pytest.raises(TypeError, match="out_dir must be a path"):
        plots.plot_studies([], None)
    with pytest.raises(ValueError, match="max_len must be an integer >= 1, got -1"):
        plots.plot_studies([], tmp_path, max_len=-1)
    with pytest.raises(ValueError, match="max_len must be an integer >= 1, got 0"):
        plots.figure_study([], "a", max_len=0)


def test_experiment_output_and_workers(tmp_path):
    from fastdcyk.experiments import ExperimentConfig, ResultsFileError, run_experiment

    config = ExperimentConfig(
        grammars=["example"], dims=[64], variants=["trace"], sentences=1, source="example"
    )
    with pytest.raises(ResultsFileError, match="is a folder: give the path of a results file"):
        run_experiment(config, tmp_path, executor="serial", progress=False)
    with pytest.raises(TypeError, match="out must be a path"):
        run_experiment(config, None, executor="serial", progress=False)
    with pytest.raises(ValueError, match="workers must be an integer >= 1, got 1.5"):
        run_experiment(config, tmp_path / "r.jsonl", workers=1.5, progress=False)
    assert not (tmp_path / "r.jsonl").exists()


def test_figures_of_a_parse():
    pytest.importorskip("matplotlib")
    from fastdcyk import plots

    r = fd.dcyk(EX, "a b", d=64, variant="trace")
    with pytest.raises(TypeError, match="result must be a DCYKResult"):
        plots.figure_parse(None)
    with pytest.raises(TypeError, match="gold must be a chart"):
        plots.figure_parse(r, gold=[1])
    for name in ("max_symbols", "matrix_size"):
        with pytest.raises(ValueError, match=f"{name} must be an integer >= 1, got 1.5"):
            plots.figure_parse(r, **{name: 1.5})
    with pytest.raises(TypeError, match="fig must be a matplotlib Figure"):
        plots.save_figure(None, "x.png")
    with pytest.raises(ValueError, match="dpi must be an integer >= 1, got 1.5"):
        plots.save_figure(plots.figure_parse(r), "x.png", dpi=1.5)


@pytest.fixture(scope="module")
def layers():
    torch = pytest.importorskip("torch")
    from fastdcyk.nn import DCYK

    trace = DCYK(EX, 64, dtype=torch.float64, variant="trace")
    return torch, trace


def _soft(torch, value=None, dtype=None):
    x = torch.tensor([[[0.9, 0.1], [0.1, 0.9]]], dtype=torch.float64)
    if value is not None:
        x[0, 0, 1] = value
    return x if dtype is None else x.to(dtype)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"terminals": math.nan}, ValueError, "terminals= holds NaN or infinite values"),
        ({"terminals": math.inf}, ValueError, "terminals= holds NaN or infinite values"),
        ({"dtype": "float32"}, ValueError, "terminals= is torch.float32 on cpu, the layer"),
        ({"dtype": "bool"}, ValueError, "terminals= is a torch.bool tensor: give probabilities"),
        ({"dtype": "complex128"}, ValueError, "terminals= is a torch.complex128 tensor"),
        ({"lengths": 2}, TypeError, "lengths= must be a sequence of int or a 1-D tensor"),
        ({"sentences": 3}, TypeError, "sentences must be a sequence of sentences.*got int"),
        ({"sentences": [None]}, TypeError, r"sentences\[0\] is NoneType"),
    ],
)
def test_the_layers_inputs(layers, kwargs, error, match):
    torch, layer = layers
    if "sentences" in kwargs:
        call = lambda: layer(kwargs["sentences"])  # noqa: E731
    else:
        dtype = kwargs.get("dtype")
        soft = _soft(torch, kwargs.get("terminals"), getattr(torch, dtype) if dtype else None)
        call = lambda: layer(terminals=soft, lengths=kwargs.get("lengths"))  # noqa: E731
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"pos_weight": -1.0}, ValueError, "pos_weight must be a finite number > 0"),
        ({"pos_weight": math.nan}, ValueError, "pos_weight must be a finite number > 0"),
        ({"pos_weight": True}, ValueError, "pos_weight must be a finite number > 0"),
        ({"gold_charts": "abc"}, TypeError, "gold_charts must be a sequence of charts"),
        ({"gold_charts": {(0, 1): {"D"}}}, TypeError, r"got dict \(one chart: \[chart\]\)"),
        ({"gold_charts": [None]}, TypeError, r"gold_charts\[0\] is None"),
        ({"gold_charts": [{(0, 1): "D"}]}, TypeError, r"gold_charts\[0\]\[\(0, 1\)\] is 'D'"),
    ],
)
def test_the_layers_loss(layers, kwargs, error, match):
    torch, layer = layers
    out = layer(["a b"])
    with pytest.raises(error, match=match):
        out.loss(**kwargs)


def test_the_layers_learn_and_loss_output(layers):
    from fastdcyk.nn import DCYK
    from fastdcyk.nn.loss import chart_loss

    with pytest.raises(TypeError, match="learn must be a sequence of"):
        DCYK(EX, 64, learn=None)
    with pytest.raises(TypeError, match="output must be a DCYKOutput"):
        chart_loss(None)


# -- the engine's entry points ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: fd.dcyk("G0", None, d=64), TypeError, "a sentence must be a str"),
        (lambda: fd.dcyk("G0", 3, d=64), TypeError, "a sentence must be a str"),
        (lambda: fd.dcyk_batch("G0", None, d=64), TypeError, "sentences must be a sequence"),
        (lambda: fd.choose_dimension("G0", None), TypeError, "sentences must be a sequence"),
    ],
)
def test_the_engine_names_a_sentence_that_is_not_one(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_decoding_checks_what_it_is_given():
    g = fd.Grammar.builtin("G0")
    r = fd.dcyk(g, "fish swim", d=64)
    with pytest.raises(TypeError, match="p_left must be a numpy array"):
        fd.decode_statistics(None, g, 2, r.codebook)
    with pytest.raises(ValueError, match="n = 99, but the result's sentence has 2 words"):
        fd.decode(r, n=99)
    assert fd.decode(r, n=2) == r.chart  # its own length: its own chart


def test_preterminals_on_a_layer_without_them_are_named():
    torch = pytest.importorskip("torch")
    from fastdcyk.nn import DCYK

    g = fd.Grammar.builtin("G4")
    layer = DCYK(g, 64, variant="trace", max_length=4)
    scores = torch.full((1, 3, len(g.preterminals)), 0.5, dtype=torch.float32)
    with pytest.raises(ValueError, match="preterminals= needs a layer whose mode takes"):
        layer(preterminals=scores, lengths=[3])


def test_records_and_powers_of_the_wrong_type_are_named():
    from fastdcyk.experiments.aggregate import aggregate
    from fastdcyk.plots import figure_study

    with pytest.raises(TypeError, match="records must be an iterable of experiment records"):
        aggregate(None)
    pytest.importorskip("matplotlib")
    with pytest.raises(TypeError, match="records must be a sequence of experiment records"):
        figure_study(None, "a")
    cb = fd.Codebook(16, seed=0)
    with pytest.raises(TypeError, match="the power k of Phi must be an integer"):
        cb.permutation_index(1.5)
    assert (cb.permutation_index(np.int64(2)) == cb.permutation_index(2)).all()

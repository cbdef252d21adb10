"""Options declared once (fastdcyk.options): every front door's keywords, checks and
documentation come from the declarations, and so do the command line's options; renamed
keywords are refused with a message naming the new one."""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest

import fastdcyk as fd
from fastdcyk import options
from fastdcyk.cli import build_parser

#: The front doors that take every option, and those that take a subset.
EVERY = [fd.dcyk, fd.dcyk_batch]
SOME = [fd.capacity.predict, fd.capacity.estimate_memory, fd.estimate_memory]


def keyword_names(func) -> set[str]:
    sig = inspect.signature(func)
    return {p.name for p in sig.parameters.values() if p.kind is p.KEYWORD_ONLY}


def test_the_declarations_are_the_fields_of_dcyk_options():
    assert options.NAMES == tuple(f.name for f in dataclasses.fields(options.DCYKOptions))
    for f in dataclasses.fields(options.DCYKOptions):
        assert f.metadata["doc"] and f.metadata["kind"], f.name  # every one documented


@pytest.mark.parametrize("func", EVERY, ids=lambda f: f.__name__)
def test_every_option_is_a_documented_keyword_of_the_front_doors(func):
    assert set(options.NAMES) <= keyword_names(func)
    for name in options.NAMES:  # documented, from the declaration
        assert f"\n    {name} : " in func.__doc__, name
    assert "{options}" not in func.__doc__


@pytest.mark.parametrize("func", SOME, ids=lambda f: f"{f.__module__}.{f.__name__}")
def test_the_front_doors_that_take_some_options_document_those(func):
    names = func.option_names
    assert names and set(names) <= set(options.NAMES)
    for name in names:
        assert f"\n    {name} : " in func.__doc__, name


def test_the_layer_takes_the_options_too():
    pytest.importorskip("torch")
    from fastdcyk.nn import DCYK

    # every option but beam (the layer has no weighted table to prune), which it refuses
    assert set(options.NAMES) - {"variant", "beam"} <= keyword_names(DCYK)
    assert "beam" not in keyword_names(DCYK)
    with pytest.raises(TypeError, match="does not take beam="):
        DCYK("G0", 16, beam=3)
    for name in DCYK.__init__.option_names:
        assert f"\n    {name} : " in DCYK.__doc__, name
    assert "{options}" not in DCYK.__doc__
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'gates' \(did you mean"):
        DCYK("G0", 16, gates="trace")


def test_unknown_and_renamed_keywords_are_refused():
    g = fd.Grammar.builtin("G0")
    with pytest.raises(TypeError, match=r"dcyk\(\) got an unexpected keyword argument 'varaint' "):
        fd.dcyk(g, "fish swim", d=16, varaint="trace")
    for call in (
        lambda: fd.dcyk(g, "fish swim", d=16, engine="scipy"),
        lambda: fd.dcyk_batch(g, ["fish swim"], d=16, backend="numpy", engine="scipy"),
        lambda: fd.Codebook(16, engine="numpy"),
        lambda: fd.Codebook.for_grammar(g, 16, engine="numpy"),
        lambda: fd.estimate_memory(1024, engine="numpy"),
    ):
        with pytest.raises(TypeError, match=r"engine=, renamed fft= in fastdcyk 0.4"):
            call()
    for name, new in (("get_engine", "get_fft"), ("available_engines", "available_ffts")):
        with pytest.raises(AttributeError, match=f"{name} was renamed {new}"):
            getattr(fd, name)
        with pytest.raises(AttributeError, match=f"{name} was renamed {new}"):
            getattr(fd.hrr, name)
    with pytest.raises(AttributeError, match="Codebook.fft"):
        fd.Codebook(16).engine  # noqa: B018
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        fd.nothing  # noqa: B018
    assert fd.Codebook(16, fft="numpy").fft.name == "numpy"


def test_options_and_keywords_are_two_ways_to_say_the_same():
    g = fd.Grammar.builtin("G0")
    opts = options.resolve("trace", beta=20)
    a = fd.dcyk(g, "fish swim", d=32, options=opts)
    b = fd.dcyk(g, "fish swim", d=32, variant="trace", beta=20)
    assert a.options == b.options and np.array_equal(a.p_left, b.p_left)
    with pytest.raises(ValueError, match=r"options= and the keyword options \['beta'\]"):
        fd.dcyk(g, "fish swim", d=32, options=opts, beta=10)
    with pytest.raises(ValueError, match="unary_mask must be True or False"):
        options.resolve("paper", unary_mask="no")


def test_the_command_line_options_are_the_declared_ones():
    parser = build_parser()
    actions = {a.dest: a for a in parser._subparsers._group_actions[0].choices["parse"]._actions}
    for name in options.NAMES:
        action = actions[name]
        assert action.option_strings[0] == "--" + name.replace("_", "-")
        allowed = options.choices(name)
        if allowed is not None:
            assert tuple(action.choices) == tuple(allowed), name
    args = parser.parse_args(["parse", "--prune", "0", "--candidate-level", "0.3", "fish"])
    assert args.prune == 0.0 and args.candidate_level == 0.3
    capacity = parser._subparsers._group_actions[0].choices["capacity"]
    dests = {a.dest for a in capacity._actions}
    assert set(fd.capacity.predict.option_names) <= dests
    assert "decoder" not in dests  # what the model does not simulate is no option of it


def test_the_command_line_checks_an_option_as_the_library_does(capsys):
    from fastdcyk.cli import main

    with pytest.raises(SystemExit) as err:  # an argparse error: the usage, and exit status 2
        main(["parse", "--grammar", "G0", "--candidate-level", "-1", "fish"])
    assert err.value.code == 2
    assert "candidate_level must be a finite number >= 0, got -1.0" in capsys.readouterr().err
    with pytest.raises(SystemExit) as err:  # a level no item with one derivation reaches
        main(["parse", "--grammar", "G0", "--candidate-level", "1", "fish"])
    assert err.value.code == 2
    assert "candidate_level must be below 1, got 1.0" in capsys.readouterr().err

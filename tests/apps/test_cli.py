"""The command line: parse, experiment, plot and demo; exit statuses and messages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import fastdcyk as fd
import fastdcyk.cli as cli
import fastdcyk.cli.common as cli_common
import fastdcyk.cli.experiment as cli_experiment
import fastdcyk.cli.parse as cli_parse
import fastdcyk.experiments as ex
from fastdcyk.cli import main
from fastdcyk.options import VARIANTS

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
TINY = ["--grammars", "G0", "G1", "--dims", "16", "32", "--sentences", "8", "--max-len", "5"]


def _usage_error(argv, capsys):
    """Run argv, expecting an argparse error (SystemExit 2); return stderr."""
    with pytest.raises(SystemExit) as err:
        main(argv)
    assert err.value.code == 2
    return capsys.readouterr().err


# -- parse ----------------------------------------------------------------------------------


def test_parse_prints_both_charts_and_marks_disagreements(capsys):
    argv = ["parse", "--grammar", "example", "--dim", "16", "--variant", "paper"]
    assert main([*argv, "a", "a", "b"]) == 0
    out = capsys.readouterr().out
    assert "symbolic CYK:" in out and "variant=paper" in out
    assert "i \\ j" in out and "1:a" in out and "3:b" in out
    assert "cells: P=" in out
    # at d = 16 the faithful decoder is wrong somewhere: a +A or -A marker is printed
    chart = out.split("variant=paper", 1)[1]
    assert "+" in chart or " -" in chart


def test_parse_tree_prints_the_k_best_trees_in_the_grammar_as_written(tmp_path, capsys):
    argv = ["parse", "--grammar", "G0", "--dim", "1024", "--variant", "trace", "--tree"]
    sentence = "fish near fish swim fish swim".split()  # three trees
    assert main([*argv, *sentence]) == 0
    out = capsys.readouterr().out
    r = fd.dcyk(fd.Grammar.builtin("G0"), sentence, d=1024, variant="trace")
    assert r.tree_count == 3
    assert f"admits {r.tree_count} trees" in out
    assert f"\n{r.tree()}\n" in out and "tree 2" not in out
    assert r.tree().pretty() in out
    assert main([*argv, "--k", "2", "--ascii", *sentence]) == 0
    out = capsys.readouterr().out
    best, second = r.trees(2)
    assert out.index(f"\n{best}\n") < out.index("tree 2") < out.index(f"\n{second}\n")
    assert best.pretty(ascii=True) in out and out.isascii()
    # a grammar that went through --to-cnf: the trees are in the user's rules
    path = tmp_path / "g.cfg"
    path.write_text("S -> NP VP\nNP -> 'the' N | N\nN -> 'dog'\nVP -> 'barks'\n")
    assert (
        main(
            [
                "parse",
                "--grammar",
                str(path),
                "--to-cnf",
                "--dim",
                "512",
                "--variant",
                "trace",
                "--tree",
                "the",
                "dog",
                "barks",
            ]
        )
        == 0
    )
    assert "\n(S (NP the (N dog)) (VP barks))\n" in capsys.readouterr().out
    # not a sentence of the grammar
    assert main([*argv, "swim", "swim"]) == 0
    assert "no tree: the grammar does not derive the sentence" in capsys.readouterr().out


def test_parse_options_reach_the_engine(capsys):
    argv = ["parse", "--grammar", "G0", "--dim", "256", "--variant", "trace"]
    argv += ["--threshold", "0.9", "--beta", "40", "fish", "swim", "fish"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "variant=trace" in out and "beta=40" in out and "threshold=0.9" in out
    assert "d=256" in out


def test_parse_order_reaches_the_engine_and_the_report(capsys):
    argv = ["parse", "--grammar", "G0", "--dim", "64", "fish", "swim"]
    expected = [
        ([], "variant=cleanup (gate=cleanup, readback=cancel, order=cell,"),
        (["--variant", "paper"], "variant=paper (gate=entrywise, decoder=entry, order=sequential"),
        (["--variant", "trace"], "variant=trace (gate=trace, decoder=trace, order=width,"),
        (
            ["--variant", "paper", "--order", "cell"],
            "variant=paper (gate=entrywise, decoder=entry, order=cell",
        ),
        (["--variant", "trace", "--order", "sequential"], "order=sequential"),
    ]
    for extra, shown in expected:
        assert main(argv[:5] + extra + argv[5:]) == 0
        out = capsys.readouterr().out
        assert shown in out, out


def test_parse_progress_bar_only_for_long_parses_on_a_terminal(monkeypatch, capsys):
    seen = []
    real = cli_parse.dcyk

    def spy(*args, **kwargs):
        seen.append(kwargs.get("progress"))
        return real(*args, **kwargs)

    monkeypatch.setattr(cli_parse, "dcyk", spy)
    argv = ["parse", "--dim", "16", "a", "a", "b"]
    assert main(argv) == 0  # stderr is not a terminal here: no bar
    assert main([*argv[:1], "--progress", *argv[1:]]) == 0
    assert main([*argv[:1], "--no-progress", *argv[1:]]) == 0
    monkeypatch.setattr(cli.sys.stderr, "isatty", lambda: True, raising=False)
    assert main(argv) == 0  # a terminal: the bar, after a few seconds
    assert seen == [False, cli.PARSE_PROGRESS_DELAY, False, cli.PARSE_PROGRESS_DELAY]
    assert 0 < cli.PARSE_PROGRESS_DELAY <= 5
    assert capsys.readouterr().err == ""  # short parses print nothing extra


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["parse", "--grammar", "nosuch", "a"], "cannot load grammar 'nosuch'"),
        (["parse", "--grammar", "example", "a", "c"], "word 'c' at position 1"),
        (["parse", "--grammar", "G0", "fish", "cake"], "its terminals are 'fish', "),
        (
            ["parse", "--grammar", "G0", "--variant", "paper", "--dim", "auto", "fish"],
            "--variant paper has no certificate",
        ),
    ],
)
def test_parse_bad_arguments_exit_2_with_a_message(argv, message, capsys):
    assert main(argv) == 2
    out = capsys.readouterr()
    assert message in out.err
    assert out.out == ""  # refused before anything is printed


def test_capacity_refuses_a_length_the_grammar_does_not_derive_first(tmp_path, capsys):
    path = tmp_path / "short.cfg"  # sentences of 2 to 4 words only
    path.write_text("S -> NP VP\nNP -> 'she' | D N\nVP -> 'runs' | V NP\nD -> 'the'\n"
                    "N -> 'ball'\nV -> 'eats'\n")  # fmt: skip
    assert main(["capacity", "--grammar", str(path), "--length", "50", "--dims", "64"]) == 2
    out = capsys.readouterr()
    assert "derives no sentence with a length in [50, 50]" in out.err and out.out == ""


def test_a_compact_chart_says_why_it_is_compact(capsys):
    assert main(["parse", "--grammar", "G0", "--dim", "128", "--chart", "compact", "fish"]) == 0
    assert "(a compact view, --chart compact:" in capsys.readouterr().out


def test_parse_unreadable_grammar_file(tmp_path, capsys):
    bad = tmp_path / "bad.cfg"
    bad.write_bytes(b"S -> \xff\xfe 'a\n")
    assert main(["parse", "--grammar", str(bad), "a"]) == 2
    assert "cannot load grammar" in capsys.readouterr().err
    folder = tmp_path / "folder.cfg"
    folder.mkdir()
    assert main(["parse", "--grammar", str(folder), "a"]) == 2
    assert "cannot load grammar" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["parse", "--dim", "1", "a"], "the dimension d must be an integer >= 2, got 1"),
        (["parse", "--dim", "x", "a"], "expected the dimension, an integer"),
        (["parse", "--variant", "fast", "a"], "invalid choice: 'fast'"),
        (["parse", "--threshold", "1.5", "a"], "strictly between 0 and 1"),
        (["parse", "--order", "fast", "a"], "argument --order: invalid choice: 'fast'"),
        (["experiment", "--orders", "cell", "fast"], "argument --orders: invalid choice: 'fast'"),
        (["experiment", "--dims", "100", "1"], "the dimension d must be an integer >= 2, got 1"),
        (["experiment", "--variants", "fast"], "invalid choice: 'fast'"),
        (["experiment", "--sentences", "0"], "expected an integer >= 1"),
        (["experiment", "--executor", "threads"], "invalid choice: 'threads'"),
        (["plot"], "the following arguments are required: results"),
    ],
)
def test_argument_errors_exit_2(argv, message, capsys):
    assert message in _usage_error(argv, capsys)


# -- experiment -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--grammars", "G9"], "G9"),
        (["--executor", "dask"], "--executor dask needs --scheduler"),
        (["--scheduler", "tcp://localhost:1"], "--scheduler is only used with --executor dask"),
        (["--min-len", "6", "--max-len", "3"], "min_len <= max_len"),
        (["--device", "cpu"], "--device cpu is only used with --backend torch"),
        (["--backend", "torch", "--executor", "process"], "--executor serial only"),
        (["--backend", "torch", "--executor", "dask"], "--executor serial only"),
    ],
)
def test_experiment_bad_arguments_exit_2(extra, message, tmp_path, capsys):
    argv = ["experiment", "--dims", "16", "--sentences", "2", "--out", str(tmp_path / "r.jsonl")]
    assert main(argv + extra) == 2
    err = capsys.readouterr().err
    assert err.startswith("fastdcyk experiment: error:") and message in err


def test_experiment_unreadable_grammar_file_exits_2(tmp_path, capsys):
    missing = tmp_path / "missing.cfg"
    argv = ["experiment", "--grammars", str(missing), "--dims", "16", "--sentences", "2"]
    assert main(argv + ["--out", str(tmp_path / "r.jsonl")]) == 2
    assert "missing.cfg" in capsys.readouterr().err


def test_experiment_runs_resumes_and_refuses_another_configuration(tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    argv = ["experiment", *TINY, "--out", str(out), "--executor", "serial", "--no-progress"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "64 records written" in captured.out
    assert "grammar  variant  beta  d" in captured.out  # the summary table
    assert "G1       trace    50    32" in captured.out
    assert f"results: {out}" in captured.err
    assert main(argv) == 0  # resume: nothing left
    assert "0 records written" in capsys.readouterr().out
    other = ["experiment", *TINY, "--dims", "16", "--out", str(out), "--executor", "serial"]
    assert main(other) == 2
    err = capsys.readouterr().err
    assert "holds results of another configuration" in err and "--out" in err
    assert len(ex.read_results(out).records) == 64


def test_experiment_orders_cross_the_variants_and_resume(tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    argv = ["experiment", "--grammars", "G0", "--dims", "16", "--sentences", "4"]
    argv += ["--max-len", "4", "--variants", "paper", "--orders", "sequential", "cell"]
    argv += ["--out", str(out), "--executor", "serial", "--no-progress"]
    assert main(argv) == 0
    captured = capsys.readouterr().out
    assert "8 records written" in captured
    table = captured.split("grammar", 1)[1].splitlines()
    assert table[0].split()[:4] == ["variant", "order", "beta", "d"]
    assert [r.split()[:3] for r in table[1:3]] == [
        ["G0", "paper", "cell"],
        ["G0", "paper", "sequential"],
    ]
    records = ex.read_results(out).records
    assert sorted({r["order"] for r in records}) == ["cell", "sequential"]
    header = json.loads(out.read_text().splitlines()[0])
    assert header["config"]["orders"] == ["sequential", "cell"]
    assert main(argv) == 0  # resume: both orders are done
    assert "0 records written" in capsys.readouterr().out
    # without --orders: each variant's own order, the hash of a grid without orders
    cfg = cli.config_from_args(cli.build_parser().parse_args(["experiment"]))
    assert cfg.orders == (None,) and cfg == ex.ExperimentConfig()


def test_experiment_codebooks_option_reaches_the_config(capsys):
    parse = cli.build_parser().parse_args
    assert cli.config_from_args(parse(["experiment"])).codebooks == "grammar"
    assert cli.config_from_args(parse(["experiment", "--codebooks", "plain"])).codebooks == "plain"
    with pytest.raises(SystemExit) as e:
        parse(["experiment", "--codebooks", "mine"])
    assert e.value.code == 2 and "invalid choice: 'mine'" in capsys.readouterr().err


def test_experiment_help_quotes_the_core_hours_constant(monkeypatch, capsys):
    assert "PAPER_GRID_CORE_HOURS" in ex.__all__
    assert cli_experiment.PAPER_GRID_CORE_HOURS == ex.PAPER_GRID_CORE_HOURS
    monkeypatch.setattr(cli_experiment, "PAPER_GRID_CORE_HOURS", 1234)
    with pytest.raises(SystemExit) as err:
        main(["experiment", "--help"])
    assert err.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "some 1234 core-hours" in text
    assert "default: each variant's own: paper sequential, trace width" in text


def test_experiment_default_out_is_named_by_the_hash(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    argv = ["experiment", "--grammars", "G0", "--dims", "16", "--sentences", "3"]
    assert main(argv + ["--executor", "serial", "--no-progress"]) == 0
    cfg = ex.ExperimentConfig(grammars=("G0",), dims=(16,), sentences=3)
    assert (tmp_path / "fastdcyk-results" / f"{cfg.hash()[:12]}.jsonl").exists()


def test_experiment_ctrl_c_exits_130_and_says_how_to_resume(tmp_path, monkeypatch, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_common, "run_experiment", interrupted)
    argv = ["experiment", *TINY, "--out", str(tmp_path / "r.jsonl")]
    assert main(argv) == 130
    err = capsys.readouterr().err
    assert "interrupted" in err and "rerun the same command to resume" in err


def _ctrl_c_in_a_kernel(*args, **kwargs):
    """What CPython raises when Ctrl-C lands inside a Numba kernel."""
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt as exc:
        raise SystemError("CPUDispatcher(...) returned a result with an exception set") from exc


def test_ctrl_c_inside_a_numba_kernel_is_an_interrupt_too(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli_common, "run_experiment", _ctrl_c_in_a_kernel)
    assert main(["experiment", *TINY, "--out", str(tmp_path / "r.jsonl")]) == 130
    err = capsys.readouterr().err
    assert "rerun the same command to resume" in err and "SystemError" not in err
    monkeypatch.setattr(cli_parse, "dcyk", _ctrl_c_in_a_kernel)
    assert main(["parse", "--grammar", "G0", "--dim", "16", "fish", "swim"]) == 130
    assert capsys.readouterr().err == "fastdcyk parse: interrupted\n"

    def bug(*args, **kwargs):
        raise SystemError("a real bug")

    monkeypatch.setattr(cli_parse, "dcyk", bug)  # another SystemError is not hidden
    with pytest.raises(SystemError, match="a real bug"):
        main(["parse", "--grammar", "G0", "--dim", "16", "fish", "swim"])


def test_experiment_write_failure_exits_1(tmp_path, monkeypatch, capsys):
    def full(*args, **kwargs):
        raise ex.ResultsWriteError(28, "cannot write records to 'r.jsonl' (disk full)")

    monkeypatch.setattr(cli_common, "run_experiment", full)
    assert main(["experiment", *TINY, "--out", str(tmp_path / "r.jsonl")]) == 1
    assert "disk full" in capsys.readouterr().err


def test_experiment_runs_as_a_script(tmp_path):
    """The installed entry point: a subprocess, with a process pool."""
    out = tmp_path / "r.jsonl"
    argv = [sys.executable, "-m", "fastdcyk.cli", "experiment", *TINY, "--workers", "2"]
    proc = subprocess.run(
        argv + ["--out", str(out), "--no-progress"], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    assert "64/64 records" in proc.stdout
    header = json.loads(out.read_text().splitlines()[0])
    assert header["config"]["grammars"] == ["G0", "G1"]


# -- plot -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "r.jsonl"
    cfg = ex.ExperimentConfig(grammars=("G0", "G1"), dims=(16, 32), sentences=8, max_len=5)
    ex.run_experiment(cfg, out, executor="serial", progress=False)
    return out


def test_plot_writes_figures_and_prints_tables(results, tmp_path, capsys):
    figs = tmp_path / "figs"
    assert main(["plot", str(results), "--out", str(figs), "--dim", "32", "--markdown"]) == 0
    out = capsys.readouterr().out
    assert "study (a)" in out and "study (b)" in out and "study (c)" in out
    assert "| grammar | variant | d | n |" in out
    assert "figures written to" in out
    assert "no study (c) figure" not in out
    pngs = sorted(figs.glob("*.png"))
    svgs = sorted(figs.glob("*.svg"))
    assert len(pngs) == len(svgs) == 3
    one = tmp_path / "one.jsonl"  # G0's records alone: no figure of study (c), and why
    lines = results.read_text().splitlines(keepends=True)
    one.write_text("".join(line for line in lines if '"grammar":"G1"' not in line))
    assert main(["plot", str(one), "--out", str(tmp_path / "one"), "--dim", "32"]) == 0
    assert "no study (c) figure: it compares grammars at one d" in capsys.readouterr().out
    assert len(list((tmp_path / "one").glob("*.png"))) == 2
    assert all(p.read_bytes().startswith(PNG_MAGIC) for p in pngs)
    assert all(b"<svg" in p.read_bytes()[:2000] for p in svgs)


def test_plot_bad_files_exit_2(tmp_path, capsys):
    assert main(["plot", str(tmp_path / "nope.jsonl")]) == 2
    assert "cannot read results file" in capsys.readouterr().err
    junk = tmp_path / "junk.jsonl"
    junk.write_text("hello\nworld\n")
    assert main(["plot", str(junk)]) == 2
    assert "not a fastdcyk results file" in capsys.readouterr().err


# -- demo -----------------------------------------------------------------------------------


def test_demo_prints_charts_then_a_small_reproduction(tmp_path, capsys):
    out = tmp_path / "demo"
    argv = ["demo", "--dim", "64", "--sentences", "1", "--repro-sentences", "6"]
    argv += ["--repro-dims", "16", "32", "--out", str(out), "--workers", "1", "--no-progress"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "=== example: a a b" in text and "=== G0:" in text
    # two sentences, each charted once per preset variant, in that variant's order
    for variant in VARIANTS:
        assert text.count(f"variant={variant}") == 2, variant
    for order in ("sequential", "cell"):
        expected = 2 * sum(preset["order"] == order for preset in VARIANTS.values())
        assert text.count(f"order={order}") == expected, order
    assert "small reproduction" in text and "G0       trace    50    32" in text
    assert f"figures written to {out.resolve()}" in text
    assert "demo finished in" in text
    assert {p.name for p in out.glob("*.png")} == {
        "study_a_scores_vs_d.png",
        "study_b_f1_vs_length.png",
    }
    assert len(list(out.glob("results-*.jsonl"))) == 1


def test_demo_default_grid_is_the_documented_one():
    assert cli.DEMO_GRID.grammars == ("G0",)
    assert cli.DEMO_GRID.variants == ("paper", "trace")
    assert cli.DEMO_GRID.sentences == 40
    assert cli.DEMO_GRID.dims == (64, 256, 512)


def test_one_grid_estimate_everywhere():
    """The pages that cost the paper's grid quote the same core-hours as the CLI's help."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    figure = f"{ex.PAPER_GRID_CORE_HOURS} core-hours"
    for doc in ("docs/tutorials/reproduce.md", "docs/howto/dask.md", "docs/results.md"):
        text = " ".join((root / doc).read_text(encoding="utf-8").split())
        assert figure in text, f"{doc} does not quote {figure!r}"


def test_capacity_prints_the_table_and_the_dimension_needed(capsys):
    argv = ["capacity", "--grammar", "example", "--length", "3", "--dims", "64", "256"]
    assert main([*argv, "--sentences", "5", "--samples", "1"]) == 0
    out = capsys.readouterr().out
    assert "variant=cleanup, encoding=paper, readback=cancel" in out
    rows = [
        line.split() for line in out.splitlines() if line.strip().split(" ")[0] in ("64", "256")
    ]
    assert [r[0] for r in rows] == ["64", "256"] and all(len(r) == 5 for r in rows)
    assert "d needed for F1 >= 0.99:" in out and "no D-CYK run" in out
    assert "predicted F1 " in out  # the d found, with its prediction


def test_capacity_below_the_search_grid_prints_the_table_and_says_why_no_search(capsys):
    """--dims all below 64, where the search for the d needed starts: the table, then why
    there is no search (it failed with max_dim's error after the table before)."""
    argv = ["capacity", "--grammar", "example", "--length", "3", "--dims", "16", "32"]
    assert main([*argv, "--sentences", "5", "--samples", "1"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n    16 ") + out.count("\n    32 ") == 2
    assert "no search for the d needed" in out and "--max-dim 64 or more" in out


def test_capacity_usage_errors(capsys):
    assert main(["capacity", "--grammar", "nope", "--length", "3"]) == 2
    assert "cannot load grammar" in capsys.readouterr().err
    assert main(["capacity", "--grammar", "G0", "--length", "1", "--sentences", "1"]) == 2
    assert "derives no sentence with a length in [1, 1]" in capsys.readouterr().err
    err = _usage_error(
        ["capacity", "--grammar", "G0", "--length", "3", "--target-f1", "1.5"], capsys
    )
    assert "(0, 1]" in err


# -- plot: errors are one line, exit 2, and leave no file behind ---------------------------------


def _one_line_error(argv, capsys):
    assert main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fastdcyk plot: error: "), captured.err
    assert "Traceback" not in captured.err
    return lines[0], captured.out


def test_plot_on_a_full_disk_exits_2_and_leaves_no_file(results, tmp_path, monkeypatch, capsys):
    import errno

    from matplotlib.figure import Figure

    def full(self, fname, *args, **kwargs):
        if hasattr(fname, "write"):
            fname.write(b"<svg partial")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Figure, "savefig", full)
    figs = tmp_path / "figs"
    line, _ = _one_line_error(["plot", str(results), "--out", str(figs)], capsys)
    assert "No space left on device" in line and str(figs) in line
    assert "no figure was written" in line
    assert not figs.exists()
    figs.mkdir()
    (figs / "notes.txt").write_text("mine")
    _one_line_error(["plot", str(results), "--out", str(figs)], capsys)
    assert [p.name for p in figs.iterdir()] == ["notes.txt"]


def test_plot_out_that_is_a_file_or_cannot_be_created_exits_2(results, tmp_path, capsys):
    path = tmp_path / "figs.png"
    path.write_bytes(b"mine")
    line, _ = _one_line_error(["plot", str(results), "--out", str(path)], capsys)
    assert "it is a file, not a folder" in line and str(path) in line
    line, _ = _one_line_error(["plot", str(results), "--out", str(path / "sub")], capsys)
    assert "cannot create the figures folder" in line
    assert path.read_bytes() == b"mine" and list(tmp_path.iterdir()) == [path]


def test_plot_into_an_existing_folder_replaces_the_figures(results, tmp_path, capsys):
    figs = tmp_path / "figs"
    figs.mkdir()
    (figs / "notes.txt").write_text("mine")
    (figs / "study_a_scores_vs_d.png").write_bytes(b"old")
    assert main(["plot", str(results), "--out", str(figs), "--formats", "png"]) == 0
    assert (figs / "study_a_scores_vs_d.png").read_bytes().startswith(PNG_MAGIC)
    assert (figs / "notes.txt").read_text() == "mine"
    assert not [p for p in figs.iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize(
    "extra, present",
    [
        (["--grammar", "G3"], "their grammars are G0, G1"),
        (["--beta", "7"], "their betas are 50"),
        (["--dim", "64"], "their dimensions are 16, 32"),
    ],
)
def test_plot_of_a_grammar_beta_or_dim_the_results_lack_exits_2(
    results, tmp_path, capsys, extra, present
):
    figs = tmp_path / "figs"
    line, out = _one_line_error(["plot", str(results), "--out", str(figs), *extra], capsys)
    assert line.endswith(f"{' '.join(extra)}: the results hold no records of it; {present}")
    assert out == "" and not figs.exists()  # no table, no figure


def test_plot_default_grammar_is_g0_or_the_first_of_the_results(tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    cfg = ex.ExperimentConfig(grammars=("G1", "G2"), dims=(16,), sentences=3, max_len=3)
    ex.run_experiment(cfg, out, executor="serial", progress=False)
    assert main(["plot", str(out), "--out", str(tmp_path / "figs"), "--formats", "png"]) == 0
    study_b = capsys.readouterr().out.split("study (b)")[1].split("study (c)")[0]
    assert "G1 " in study_b and "G2 " not in study_b


def test_the_guides_and_the_help_quote_no_other_grid_cost(capsys):
    """Every "N core-hours" of the tutorial, the Dask guide and ``experiment --help`` is the
    constant."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    pages = ("docs/tutorials/reproduce.md", "docs/howto/dask.md")
    texts = [(p, (root / p).read_text(encoding="utf-8")) for p in pages]
    with pytest.raises(SystemExit):
        main(["experiment", "--help"])
    for where, text in (*texts, ("--help", capsys.readouterr().out)):
        found = re.findall(r"([\d,.]+)\s+core-hours", " ".join(text.split()))
        assert found, where
        assert {float(n.replace(",", "")) for n in found} == {ex.PAPER_GRID_CORE_HOURS}, where


# -- bad inputs: option checks, grammar files, paths, pipes ---------------------------------

CAFE = "caf\u00e9"
NOT_CNF_LATIN1 = f"S -> N V 'x'\nN -> '{CAFE}'\nV -> 'noir'\n".encode("latin-1")


def test_parse_checks_every_option_before_printing(monkeypatch, capsys):
    err = _usage_error(["parse", "--seed", "-1", "a", "a", "b"], capsys)
    assert "argument --seed: expected an integer >= 0, got -1" in err

    def refuses(*args, **kwargs):
        raise ValueError("a bad option")

    monkeypatch.setattr(cli_parse, "dcyk", refuses)
    assert main(["parse", "--dim", "16", "a", "a", "b"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # no symbolic chart before the error
    assert captured.err == "fastdcyk parse: error: a bad option\n"


def test_parse_grammar_encoding_and_to_cnf(tmp_path, capsys):
    path = tmp_path / "latin1.cfg"
    path.write_bytes(NOT_CNF_LATIN1)
    argv = ["parse", "--grammar", str(path), "--dim", "64", CAFE, "noir", "x"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "latin1.cfg is not UTF-8 text (byte 22 is 0xe9)" in err
    assert "pass --grammar-encoding latin-1" in err and "\n" not in err.rstrip("\n")
    assert main([*argv[:3], "--grammar-encoding", "latin-1", *argv[3:]]) == 2
    err = capsys.readouterr().err
    assert "not in Chomsky normal form (its rule S -> N V 'x' is neither" in err
    assert "pass --to-cnf" in err and "cnf=" not in err  # CLI advice, not Python's
    assert main([*argv[:3], "--grammar-encoding", "latin-1", "--to-cnf", *argv[3:]]) == 0
    out = capsys.readouterr().out
    assert f"1:{CAFE}" in out and "T_x" in out
    assert "unknown encoding 'no-such'" in _usage_error(
        ["parse", "--grammar-encoding", "no-such", "a"], capsys
    )


def test_parse_words_are_compared_in_nfc(tmp_path, capsys):
    path = tmp_path / "cafe.cfg"
    path.write_text(f"S -> N V\nN -> '{CAFE}'\nV -> 'noir'\n", encoding="utf-8")
    decomposed = "cafe\u0301"  # the same word, the accent a combining character
    assert main(["parse", "--grammar", str(path), "--dim", "64", decomposed, "noir"]) == 0
    assert f"1:{CAFE}" in capsys.readouterr().out
    assert main(["parse", "--grammar", str(path), "--dim", "64", "th\u00e9", "noir"]) == 2
    err = capsys.readouterr().err
    assert "word 'th\u00e9' at position 0" in err and "Unicode NFC" in err


def test_capacity_grammar_file_options(tmp_path, capsys):
    path = tmp_path / "latin1.cfg"
    path.write_bytes(NOT_CNF_LATIN1)
    argv = ["capacity", "--grammar", str(path), "--length", "3", "--dims", "64"]
    argv += ["--sentences", "2", "--samples", "1"]
    assert main(argv) == 2
    assert "pass --grammar-encoding latin-1" in capsys.readouterr().err
    assert main([*argv, "--grammar-encoding", "latin-1"]) == 2
    assert "pass --to-cnf" in capsys.readouterr().err
    assert main([*argv, "--grammar-encoding", "latin-1", "--to-cnf"]) == 0
    assert "d needed for F1" in capsys.readouterr().out


def test_experiment_grammar_encoding_and_to_cnf(tmp_path, capsys):
    path = tmp_path / "latin1.cfg"
    path.write_bytes(NOT_CNF_LATIN1)
    out = tmp_path / "r.jsonl"
    argv = ["experiment", "--grammars", str(path), "--source", str(path), "--dims", "16"]
    argv += ["--sentences", "2", "--variants", "trace", "--executor", "serial"]
    argv += ["--no-progress", "--out", str(out)]
    for extra, message in (
        ([], "not UTF-8 text"),
        (["--grammar-encoding", "latin-1"], "pass --to-cnf"),
    ):
        assert main(argv + extra) == 2
        err = capsys.readouterr().err
        assert err.startswith("fastdcyk experiment: error: ") and err.count("\n") == 1
        assert message in err and "Traceback" not in err
        assert not out.exists()
    assert main([*argv, "--grammar-encoding", "latin-1", "--to-cnf"]) == 0
    assert "2 records written" in capsys.readouterr().out
    header = json.loads(out.read_text().splitlines()[0])
    assert header["config"]["grammar_encoding"] == "latin-1" and header["config"]["to_cnf"]
    # the options are part of the grid: the same file resumes with them, not without
    assert main([*argv, "--grammar-encoding", "latin-1", "--to-cnf"]) == 0
    assert "0 records written" in capsys.readouterr().out
    # at their defaults they stay out of the configuration (and of its hash)
    cfg = cli.config_from_args(cli.build_parser().parse_args(["experiment"]))
    assert "grammar_encoding" not in cfg.to_dict() and "to_cnf" not in cfg.to_dict()


def test_paths_that_cannot_be_written_are_usage_errors(results, tmp_path, capsys):
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    argv = ["experiment", "--dims", "16", "--sentences", "2"]
    cases = [
        (["--out", str(tmp_path)], f"--out {tmp_path}: not a regular file"),
        (["--out", os.devnull], f"--out {os.devnull}: not a regular file"),
        (["--out", str(a_file / "r.jsonl")], f"{a_file} exists and is not a folder"),
        (["--out", str(tmp_path / "r.jsonl"), "--figures", str(a_file)], "is not a folder"),
    ]
    for extra, message in cases:
        assert main(argv + extra) == 2
        err = capsys.readouterr().err
        assert err.startswith("fastdcyk experiment: error: ") and message in err
        assert "Traceback" not in err
    assert not (tmp_path / "r.jsonl").exists()
    assert main(["plot", str(results), "--out", str(a_file)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fastdcyk plot: error: ") and err.count("\n") == 1
    assert str(a_file) in err and "not a folder" in err


def test_a_closed_pipe_ends_the_command_quietly():
    """``fastdcyk parse ... | head -1``: the reader goes before the output is written."""
    root = Path(cli.__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, "-m", "fastdcyk.cli", "parse", "--dim", "16", "a", "a", "b"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=root,
    )
    proc.stdout.close()  # long before the interpreter has started and printed anything
    err = proc.stderr.read().decode()
    proc.stderr.close()
    status = proc.wait(timeout=120)
    assert "Traceback" not in err and err == ""
    assert status == 141  # 128 + SIGPIPE, as for a command that the broken pipe ends


# -- experiment --backend torch -----------------------------------------------------------------


def test_experiment_backend_torch_runs_serially_and_says_so(tmp_path, capsys, torch_one_thread):
    out = tmp_path / "r.jsonl"
    argv = ["experiment", "--grammars", "G0", "--dims", "16", "--sentences", "4", "--max-len"]
    argv += ["4", "--dtype", "float64", "--out", str(out), "--no-progress"]
    assert main([*argv, "--backend", "torch", "--device", "cpu"]) == 0
    captured = capsys.readouterr()
    assert "to do in 2 tasks (serial, torch on cpu)" in captured.err  # serial by default
    assert "8 records written by the torch backend on cpu" in captured.out
    # the same configuration for either backend: numpy resumes the file, with nothing to do
    assert main([*argv, "--executor", "serial"]) == 0
    assert "0 records written in" in capsys.readouterr().out
    assert len(ex.read_results(out).records) == 8


def test_experiment_device_without_cuda_exits_2_and_touches_no_file(
    tmp_path, monkeypatch, capsys, torch_one_thread
):
    monkeypatch.setattr(torch_one_thread.cuda, "is_available", lambda: False)
    out = tmp_path / "r.jsonl"
    argv = ["experiment", *TINY, "--out", str(out), "--backend", "torch", "--device", "cuda"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("fastdcyk experiment: error: device 'cuda': CUDA is not available")
    assert len(err.strip().splitlines()) == 1 and not out.exists()
    assert main([*argv[:-1], "cuda:x"]) == 2
    assert "unknown device 'cuda:x'" in capsys.readouterr().err


def test_experiment_run_options_default_the_executor_by_backend(capsys):
    parse = cli.build_parser().parse_args
    assert cli.run_options(parse(["experiment"])) == {
        "executor": "process",
        "backend": "numpy",
        "device": None,
    }
    got = cli.run_options(parse(["experiment", "--backend", "torch", "--device", "cuda"]))
    assert got == {"executor": "serial", "backend": "torch", "device": "cuda"}
    assert cli.run_options(parse(["experiment", "--executor", "serial"]))["executor"] == "serial"
    with pytest.raises(SystemExit):
        main(["experiment", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "Default: process, but serial with --backend torch" in text
    assert "--device DEVICE" in text


def test_output_paths_that_cannot_be_written_are_refused_before_any_work(tmp_path, capsys):
    """Before, `experiment --figures /proc/figs` computed the whole grid, then exited 2, and
    `demo --out FILE` printed every chart, then failed with FileExistsError."""

    def refused(argv):
        assert main(argv) == 2
        return capsys.readouterr()

    blocked = tmp_path / "a-file"
    blocked.write_text("x")
    out = tmp_path / "r.jsonl"
    argv = ["experiment", *TINY, "--out", str(out), "--figures", str(blocked / "figs")]
    assert "exists and is not a folder" in refused(argv).err
    assert not out.exists()  # nothing computed, nothing written
    unwritable = "/proc/fastdcyk-figures"  # /proc takes no new folders, even for root
    argv = ["experiment", *TINY, "--out", str(out), "--figures", unwritable]
    assert "cannot write there" in refused(argv).err
    assert not out.exists()
    got = refused(["demo", "--out", str(blocked)])
    assert "exists and is not a folder" in got.err
    assert "symbolic CYK" not in got.out  # no chart printed first
    got = refused(["experiment", *TINY, "--out", "/proc/r.jsonl"])
    assert "--out /proc/r.jsonl: cannot write into /proc" in got.err
    # a folder that can be written: the probe leaves nothing behind
    fresh = tmp_path / "new" / "figs"
    cli_common.check_out_folder("--figures", fresh)
    assert not (tmp_path / "new").exists()


def test_grammar_warnings_are_one_line_on_the_command_line(tmp_path, capsys):
    path = tmp_path / "g.cfg"
    path.write_text("S -> NP VP\nVP -> V NP | 'swim'\nNP -> 'fish'\n")
    assert main(["parse", "--grammar", str(path), "--to-cnf", "--dim", "64", "fish", "swim"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("fastdcyk parse: warning: ")
    assert "line 2: V has no rules" in err and "Warning" not in err  # no Python warning form


def test_parse_takes_unknown_words_as_their_class(tmp_path, capsys):
    """--unknown class parses a word the grammar lacks as its unknown-word class; a grammar
    without classes refuses it with its position, no traceback."""
    grammar = tmp_path / "unk.cfg"
    grammar.write_text("S -> N V\nN -> 'dogs' | 'UNK-LC-s'\nV -> 'bark'\n", encoding="utf-8")
    assert main(["parse", "--grammar", str(grammar), "--unknown", "class", "cats", "bark"]) == 0
    assert "sentence: UNK-LC-s bark" in capsys.readouterr().out
    assert main(["parse", "--grammar", "G0", "--unknown", "class", "fish", "dog"]) == 2
    err = capsys.readouterr().err
    assert "'dog' at position 1" in err and "no unknown-word class" in err
    assert "Traceback" not in err


def test_python_dash_m_fastdcyk_runs_the_command_line():
    done = subprocess.run(
        [sys.executable, "-m", "fastdcyk", "parse", "--grammar", "G0", "fish", "swim"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "sentence: fish swim   grammar: G0" in done.stdout and "certificate: sure" in done.stdout

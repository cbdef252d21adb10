"""The figures of the three studies: valid files, labelled axes, legends and error bars."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET

import pytest

import fastdcyk.experiments as ex

pytest.importorskip("matplotlib")
from fastdcyk.plots import FIGURE_NAMES, figure_study, plot_studies  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    """G0 at two dimensions and G0..G2 at one: every study has data."""
    folder = tmp_path_factory.mktemp("plots")
    ab = ex.ExperimentConfig(grammars=("G0",), dims=(16, 32), sentences=12, max_len=6)
    c = ex.ExperimentConfig(grammars=("G0", "G1", "G2"), dims=(32,), sentences=12, max_len=6)
    for k, cfg in enumerate((ab, c)):
        ex.run_experiment(cfg, folder / f"{k}.jsonl", executor="serial", progress=False)
    return ex.load_records([folder / "0.jsonl", folder / "1.jsonl"])


def test_plot_studies_writes_valid_png_and_svg(records, tmp_path):
    paths = plot_studies(records, tmp_path / "figs")
    assert sorted(p.name for p in paths) == sorted(
        f"{FIGURE_NAMES[s]}.{f}" for s in "abc" for f in ("png", "svg")
    )
    for path in paths:
        data = path.read_bytes()
        assert len(data) > 1000
        if path.suffix == ".png":
            assert data.startswith(PNG_MAGIC)
            assert data[12:16] == b"IHDR"
        else:
            root = ET.fromstring(data)
            assert root.tag == "{http://www.w3.org/2000/svg}svg"
            text = data.decode()
            assert "F1" in text and "variant" in text  # text kept as text (svg.fonttype none)


def test_figures_have_labels_legend_error_bars_and_title(records):
    from matplotlib.container import ErrorbarContainer

    for study, xlabel in (("a", "dimension d"), ("b", "sentence length"), ("c", "sentence length")):
        fig = figure_study(records, study)
        axes = fig.axes
        # one column per variant; study (a) has a second row for the best trees
        assert len(axes) == {"a": 4, "b": 2, "c": 6}[study]
        assert axes[-1].get_xlabel() == xlabel
        assert axes[0].get_ylabel() in ("cell score", "F1")
        assert axes[0].get_title() == "variant 'paper'"
        assert fig.get_suptitle().startswith(f"({study})")
        assert "95% CI" in fig.get_suptitle()
        assert fig.legends and fig.legends[0].get_texts()
        bars = [c for c in axes[0].containers if isinstance(c, ErrorbarContainer)]
        assert bars
    legend = [t.get_text() for t in figure_study(records, "b").legends[0].get_texts()]
    assert legend == ["d = 16", "d = 32"]
    legend = [t.get_text() for t in figure_study(records, "c").legends[0].get_texts()]
    assert legend == ["G0", "G1", "G2"]


def test_study_a_draws_the_best_trees_against_d_when_the_records_have_them(records):
    import math

    fig = figure_study(records, "a")
    rows = [r for r in ex.study_rows(records, "a") if r["variant"] == "trace"]
    ax = fig.axes[3]  # second row, the trace variant's column
    assert ax.get_xlabel() == "dimension d" and fig.axes[2].get_ylabel() == "best tree"
    (bars,) = [c for c in ax.containers if c.get_label() == "bracket F1"]
    assert list(bars.lines[0].get_ydata()) == [r["bracket_f1"] for r in rows]
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert list(lines["sentences with a tree"].get_ydata()) == [r["trees"] for r in rows]
    assert all(0 <= r["trees"] <= 1 and not math.isnan(r["bracket_f1_lo"]) for r in rows)
    # records of a file written before the tree fields existed: the cells' row only
    old = [{k: v for k, v in r.items() if k not in ex.TREE_FIELDS} for r in records]
    assert len(figure_study(old, "a").axes) == 2


def test_error_bars_are_the_aggregated_intervals(records):
    fig = figure_study(records, "a", average="macro")
    rows = [r for r in ex.study_rows(records, "a") if r["variant"] == "paper"]
    ax = fig.axes[0]
    line = ax.containers[0].lines[0]  # the F1 series
    assert list(line.get_ydata()) == pytest.approx([r["macro_f1"] for r in rows])


def test_study_c_is_skipped_with_a_single_grammar(records, tmp_path):
    g0 = [r for r in records if r["grammar"] == "G0"]
    paths = plot_studies(g0, tmp_path, formats=("png",))
    assert {p.stem for p in paths} == {FIGURE_NAMES["a"], FIGURE_NAMES["b"]}


def test_bad_arguments(records, tmp_path):
    with pytest.raises(ValueError, match="unknown figure format"):
        plot_studies(records, tmp_path, formats=("gif",))
    with pytest.raises(ValueError, match="average"):
        figure_study(records, "a", average="median")
    assert figure_study([], "a") is None


def test_two_orders_get_their_own_panels(tmp_path):
    from fastdcyk.experiments import ExperimentConfig, load_records, run_experiment
    from fastdcyk.plots import figure_study

    cfg = ExperimentConfig(
        grammars=("G0",), dims=(16,), sentences=4, max_len=4, orders=("sequential", "cell")
    )
    path = tmp_path / "r.jsonl"
    run_experiment(cfg, path, executor="serial", progress=False)
    fig = figure_study(load_records(path), "b")
    titles = sorted(ax.get_title() for ax in fig.axes if ax.get_title())
    assert titles == [
        "variant 'paper', order 'cell'",
        "variant 'paper', order 'sequential'",
        "variant 'trace', order 'cell'",
        "variant 'trace', order 'sequential'",
    ]


# -- writing: all or nothing ------------------------------------------------------------------


def _full_disk(monkeypatch, after=0):
    """Figure.savefig writes a few bytes, then fails as on a full disk (after ``after``
    successful calls)."""
    import errno

    from matplotlib.figure import Figure

    real = getattr(Figure.savefig, "real", Figure.savefig)  # not an earlier fake
    calls = []

    def savefig(self, fname, *args, **kwargs):
        calls.append(fname)
        if len(calls) <= after:
            return real(self, fname, *args, **kwargs)
        if hasattr(fname, "write"):
            fname.write(b"<partial")
        raise OSError(errno.ENOSPC, "No space left on device")

    savefig.real = real
    monkeypatch.setattr(Figure, "savefig", savefig)
    return calls


def _snapshot(folder):
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def test_a_full_disk_leaves_no_file_and_a_new_folder_is_removed(records, tmp_path, monkeypatch):
    import errno

    from fastdcyk.plots import FigureWriteError

    for after in (0, 3):  # the first figure fails, or the fourth (three written to temporaries)
        calls = _full_disk(monkeypatch, after)
        out = tmp_path / f"new{after}" / "figs"
        with pytest.raises(FigureWriteError, match="No space left on device") as err:
            plot_studies(records, out)
        assert len(calls) == after + 1
        assert err.value.errno == errno.ENOSPC
        assert "no figure was written" in str(err.value) and str(out) in str(err.value)
        assert not (tmp_path / f"new{after}").exists()  # the folders created are gone


def test_a_full_disk_leaves_an_existing_folder_as_it_was(records, tmp_path, monkeypatch):
    from fastdcyk.plots import FigureWriteError

    out = tmp_path / "figs"
    plot_studies(records, out, formats=("png", "svg"))
    (out / "notes.txt").write_text("mine")
    before = _snapshot(out)
    for after in (0, 1, 4):
        _full_disk(monkeypatch, after)
        with pytest.raises(FigureWriteError):
            plot_studies(records, out, average="macro")  # other figures than those there
        assert _snapshot(out) == before  # no temporary left, no figure half replaced


def test_an_existing_folder_gets_its_figures_replaced_and_keeps_other_files(records, tmp_path):
    import stat

    out = tmp_path / "figs"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    stale = out / f"{FIGURE_NAMES['a']}.png"
    stale.write_bytes(b"old")
    paths = plot_studies(records, out, formats=("png",))
    assert stale in paths and stale.read_bytes().startswith(b"\x89PNG")
    assert (out / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in out.iterdir()) == sorted([p.name for p in paths] + ["notes.txt"])
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(stale.stat().st_mode) == 0o666 & ~umask  # as any new file


def test_a_file_in_place_of_the_folder_is_an_error(records, tmp_path):
    import errno

    from fastdcyk.plots import FigureWriteError

    path = tmp_path / "figs"
    path.write_text("not a folder")
    with pytest.raises(FigureWriteError, match="it is a file, not a folder") as err:
        plot_studies(records, path)
    assert err.value.errno == errno.ENOTDIR
    assert path.read_text() == "not a folder"
    with pytest.raises(FigureWriteError, match="cannot create the figures folder"):
        plot_studies(records, path / "sub")
    assert path.read_text() == "not a folder"


def test_a_reused_folder_keeps_no_stale_figure_of_another_run(records, tmp_path):
    out = tmp_path / "figs"
    plot_studies(records, out, formats=("png",))  # three grammars: study (c) drawn
    assert (out / f"{FIGURE_NAMES['c']}.png").exists()
    (out / "notes.txt").write_text("mine")
    g0 = [r for r in records if r["grammar"] == "G0"]
    paths = plot_studies(g0, out, formats=("png",))  # one grammar: no study (c)
    assert {p.name for p in out.iterdir()} == {p.name for p in paths} | {"notes.txt"}


# -- one parse ------------------------------------------------------------------------------


def test_figure_parse_colours_each_symbol_against_the_symbolic_chart(tmp_path):
    from matplotlib.patches import Rectangle
    from PIL import Image

    import fastdcyk as fd
    from fastdcyk.plots import PARSE_COLOURS, figure_parse, save_figure

    g = fd.Grammar.builtin("G0")
    words = "fish swim fish near fish"
    r = fd.dcyk(g, words, d=64, variant="paper")  # small d: false triples and misses
    gold = fd.cyk(g, words)
    triples = {"true": 0, "false": 0, "missed": 0}
    for (i, j), cell in r.chart.items():
        for a in set(cell) | set(gold[(i, j)]):
            kind = "true" if a in cell and a in gold[(i, j)] else "false" if a in cell else "missed"
            triples[kind] += 1
    assert triples["false"] and triples["missed"] and triples["true"]  # every colour drawn
    fig = figure_parse(r, gold, max_symbols=20)
    chart, p_left, p_right = fig.axes[:3]
    colours = {v: k for k, v in PARSE_COLOURS.items()}
    bars = {"true": 0, "false": 0, "missed": 0}
    for patch in chart.patches:
        if isinstance(patch, Rectangle) and patch.get_fill():
            hexa = "#{:02x}{:02x}{:02x}".format(
                *(round(255 * c) for c in patch.get_facecolor()[:3])
            )
            bars[colours[hexa]] += 1
    assert bars == triples  # one bar per symbol of a cell, in its colour
    assert p_left.get_title() == "P_left" and p_right.get_title() == "P_right"
    assert p_left.images[0].get_array().shape == (64, 64)
    path = save_figure(fig, tmp_path / "parse.png", dpi=50)
    with Image.open(path) as im:
        w, h = fig.get_size_inches()
        assert abs(im.size[0] - w * 50) <= 1 and abs(im.size[1] - h * 50) <= 1  # rounding
    big = fd.dcyk(g, "fish swim", d=512, variant="trace")
    assert figure_parse(big, matrix_size=128).axes[1].get_title() == "P_left [:128, :128]"
    with pytest.raises(ValueError, match="not decoded"):
        figure_parse(fd.dcyk(g, "fish swim", d=32, decode=False))
    with pytest.raises(ValueError, match=".png, .svg or .pdf"):
        save_figure(fig, tmp_path / "parse.gif")


def test_parse_plot_writes_the_figure_and_checks_the_path_first(tmp_path, capsys):
    from fastdcyk.cli import main

    out = tmp_path / "parse.svg"
    argv = ["parse", "--grammar", "G0", "--dim", "256", "--variant", "trace", "--plot"]
    assert main([*argv, str(out), "fish", "swim"]) == 0
    assert out.read_bytes().startswith(b"<?xml") and "figure written to" in capsys.readouterr().out
    assert main([*argv, str(tmp_path / "parse.gif"), "fish", "swim"]) == 2
    got = capsys.readouterr()
    assert "give a file ending in .png, .svg or .pdf" in got.err and "symbolic CYK" not in got.out


# -- fastdcyk plot: its checks before any table, and records outside a file's grid -----------


@pytest.fixture
def results_file(tmp_path):
    """G0 and G1 at d = 16, 3 sentences of 2 to 4 words."""
    path = tmp_path / "r.jsonl"
    cfg = ex.ExperimentConfig(grammars=("G0", "G1"), dims=(16,), sentences=3, max_len=4)
    ex.run_experiment(cfg, path, executor="serial", progress=False)
    return path


def test_plot_of_a_max_len_shorter_than_every_sentence_exits_2_naming_the_lengths(
    results_file, tmp_path, capsys
):
    from fastdcyk.cli import main

    lengths = sorted({r["length"] for r in ex.load_records(results_file) if r["grammar"] == "G0"})
    figs = tmp_path / "figs"
    assert main(["plot", str(results_file), "--out", str(figs), "--max-len", "1"]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("fastdcyk plot: error: --max-len 1: no sentence of G0")
    assert str(lengths[0]) in captured.err and f"--max-len {lengths[0]} or more" in captured.err
    assert captured.out == "" and not figs.exists()  # no empty table, no figure


def test_plot_into_a_file_fails_before_any_table_or_figure_is_computed(
    results_file, records, tmp_path, monkeypatch, capsys
):
    import fastdcyk.cli.plot as cli_plot
    import fastdcyk.plots.studies as plots
    from fastdcyk.cli import main
    from fastdcyk.plots import FigureWriteError

    def never(*args, **kwargs):
        raise AssertionError("computed before the output folder was checked")

    monkeypatch.setattr(cli_plot, "study_rows", never)
    monkeypatch.setattr(plots, "figure_study", never)
    a_file = tmp_path / "a-file"
    a_file.write_text("mine")
    assert main(["plot", str(results_file), "--out", str(a_file)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fastdcyk plot: error: ") and "it is a file, not a folder" in err
    with pytest.raises(FigureWriteError, match="it is a file, not a folder"):
        plot_studies(records, a_file)  # the API checks first too
    with pytest.raises(FigureWriteError, match="a-file' is a file, not a folder"):
        plot_studies(records, a_file / "sub")
    assert a_file.read_text() == "mine"


def test_plot_leaves_out_records_outside_the_files_grid_with_a_note(results_file, tmp_path, capsys):
    import json

    from fastdcyk.cli import main

    last = results_file.read_text().splitlines()[-1]
    with open(results_file, "a") as fh:  # a record of a d the file's grid does not have
        fh.write(json.dumps({**json.loads(last), "d": 999}) + "\n")
    content = results_file.read_bytes()
    figs = tmp_path / "figs"
    assert main(["plot", str(results_file), "--out", str(figs), "--formats", "svg"]) == 0
    captured = capsys.readouterr()
    assert "fastdcyk plot: note: " in captured.err and "1 record outside the grid" in captured.err
    assert "d = 999 is not among its dims (16)" in captured.err
    assert "999" not in captured.out  # no table row of it
    assert ">999<" not in (figs / f"{FIGURE_NAMES['a']}.svg").read_text()  # no tick of it
    assert results_file.read_bytes() == content  # the user's file is never rewritten

"""docs/results.md's tables of studies (a) to (c) come from the committed records
(docs/lab/records/): every number of those tables is what the records give."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import fastdcyk.experiments as ex
from fastdcyk.experiments.aggregate import study_rows

ROOT = Path(__file__).resolve().parents[2]
RECORDS = ROOT / "docs" / "lab" / "records"
RESULTS = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")

pytestmark = pytest.mark.skipif(not RECORDS.is_dir(), reason="docs/lab/records/ not in this tree")


def _section(title: str) -> str:
    start = RESULTS.index(f"## {title}")
    end = RESULTS.find("\n## ", start + 1)
    return RESULTS[start:end]


@pytest.fixture(scope="module")
def g0():
    """Study (a)'s records: G0, codebook seed 0 (the seeds file is the spread's)."""
    files = sorted(p for p in (RECORDS / "g0").glob("*.jsonl.gz") if "seeds" not in p.name)
    return ex.load_records(files)


def _ci(row: dict, name: str) -> str:
    return f"{row[name]:.3f} [{row[name + '_lo']:.3f}, {row[name + '_hi']:.3f}]"


def test_study_a_table_is_the_records(g0):
    section = _section("Study (a)")
    rows = [r for r in study_rows(g0, "a") if r["variant"] == "paper"]
    assert sorted(r["d"] for r in rows) == [100, 500, 1000, 2000, 3000, 4000, 5000, 6000]
    for r in rows:
        cells = [_ci(r, f"micro_{s}") for s in ("precision", "recall", "f1")]
        cells += [_ci(r, "macro_f1"), f"{r['trees']:.3f}", f"{r['bracket_f1']:.3f}"]
        line = f"| {r['d']} | " + " | ".join(cells) + " |"
        assert line in section, line
    trace = {r["d"]: r for r in study_rows(g0, "a") if r["variant"] == "trace"}
    assert f"F1 {_ci(trace[100], 'micro_f1')} at d = 100" in section.replace("\n", " ")
    for v in ("trace", "cleanup"):  # "every chart exact" from 500 (trace), 100 (cleanup)
        first = 500 if v == "trace" else 100
        for r in study_rows(g0, "a"):
            if r["variant"] == v and r["d"] >= first:
                assert r["micro_f1"] == 1.0, (v, r["d"])


def test_study_b_table_is_the_records(g0):
    section = _section("Study (b)")
    rows = study_rows(g0, "b")
    for d in sorted({r["d"] for r in rows}):
        f1 = {r["length"]: r["micro_f1"] for r in rows if r["variant"] == "paper" and r["d"] == d}
        exact = sum(
            r["tp"] == r["gold"] == r["predicted"]
            for r in g0
            if r["variant"] == "paper" and r["d"] == d
        )
        line = f"| paper | {d} | " + " | ".join(f"{f1[n]:.3f}" for n in range(2, 8))
        assert f"{line} | {exact} |" in section, line


@pytest.fixture(scope="module")
def study_c(g0):
    """Study (c)'s records: G0's (study (a)) and G1..G4's."""
    return g0 + ex.load_records(sorted((RECORDS / "grammars").glob("*.jsonl.gz")))


def _group(records: list[dict], variant: str, d: int, grammar: str) -> list[dict]:
    """One point's records: the whole sample of 2,000 sentences."""
    group = [r for r in records if (r["variant"], r["d"], r["grammar"]) == (variant, d, grammar)]
    assert len(group) == 2000, (variant, d, grammar)
    return group


def test_study_c_table_is_the_records(study_c):
    section = _section("Study (c)")
    found = 0
    for line in section.splitlines():
        m = re.match(r"\| paper \| (\d+) \| (.*) \|$", line)
        if not m:
            continue
        d = int(m.group(1))
        for cell, g in zip(m.group(2).split(" | "), ("G0", "G1", "G2", "G3", "G4"), strict=True):
            group = _group(study_c, "paper", d, g)
            counts = [sum(r[k] for r in group) for k in ("tp", "gold", "predicted")]
            p, rc = counts[0] / counts[2], counts[0] / counts[1]
            f1 = 2 * p * rc / (p + rc)
            assert cell == f"{f1:.3f} ({p:.2f}/{rc:.2f})", (d, g, cell)
            found += 1
    assert found == 5 * 5  # d = 100, 500, 1000, 3000, 6000


def test_study_c_exact_rows_are_the_records(study_c):
    """The trace and cleanup rows of study (c) that say 1.000 for every grammar: every
    record of each d they list (2,000 sentences a grammar) is an exact chart."""
    section = _section("Study (c)")
    found = 0
    for line in section.splitlines():
        m = re.match(r"\| (trace|cleanup) \| ([\d, ]+) \|((?: 1\.000 \|){5})$", line)
        if not m:
            continue
        for d in (int(x) for x in m.group(2).split(", ")):
            for g in ("G0", "G1", "G2", "G3", "G4"):
                group = _group(study_c, m[1], d, g)
                assert all(r["tp"] == r["gold"] == r["predicted"] for r in group), (m[1], d, g)
                found += 1
    assert found >= 5 * 10  # trace at five d, cleanup at six


def test_study_j_grid_table_is_the_records():
    """Study (j)'s table of the paper's grids in both orders is what the records give
    (docs/lab/trace_width_study.py --grids: the cell order's records and
    docs/lab/records/width/)."""
    import runpy

    lines = runpy.run_path(str(ROOT / "docs" / "lab" / "trace_width_study.py"))["grid_lines"]()
    section = _section("Study (j)")
    assert len(lines) == 2 + 8 + 4  # G0 at eight d, G1..G4 at four
    for line in lines:
        assert line in section, line

"""The benchmark scripts that are not pytest-benchmark modules run (on small inputs)."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_floor_before_after_runs_two_checkouts_interleaved(capsys):
    """benchmarks/floor_before_after.py (docs/performance.md, "The engine by mode: before and
    after") with this checkout as both, at d = 64 on 5-word CommandTalk sentences."""
    spec = importlib.util.spec_from_file_location(
        "floor_before_after", ROOT / "benchmarks" / "floor_before_after.py"
    )
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    argv = [str(ROOT), str(ROOT), "--runs", "1", "--d", "64", "--words", "5", "5"]
    summary = script.main([*argv, "--rounds", "1"])
    assert set(summary) == {(str(ROOT), "CommandTalk")}  # one checkout, given twice
    parse, ratio, pooled = summary[(str(ROOT), "CommandTalk")]
    assert parse > 0 and math.isfinite(ratio) and ratio > 0 and math.isfinite(pooled)
    out = capsys.readouterr().out
    assert out.count('"checkout"') == 2 and "median parse" in out

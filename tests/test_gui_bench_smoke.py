"""The GUI benchmark harness runs end to end at its smallest size and reports every key.

Only the harness is checked: timings are never asserted (they belong in
benchmarks/results, not in pass/fail).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PAINT_KEYS = {
    "nodes",
    "edges",
    "layout_s",
    "window_s",
    "placed_s",
    "first_paint_s",
    "placed",
    "repaint_10pct_ms",
    "repaint_idle_ms",
    "target_s",
}
LAG_KEYS = {
    "nodes",
    "bridge",
    "seconds",
    "events_per_run",
    "events_per_s",
    "runs_per_s",
    "catch_up_s",
    "ticks",
    "lag_p50_ms",
    "lag_p99_ms",
    "lag_max_ms",
}


@pytest.mark.slow
@pytest.mark.timeout(30)
def test_quick_run_reports_first_paint_and_lag_for_both_bridges(tmp_path):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.gui_bench", "--quick", "--out", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=28,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]

    results = json.loads((tmp_path / "gui.json").read_text())
    sizes = results["sizes"]
    assert [r["nodes"] for r in results["paint"]] == sizes["paint_sizes"]
    for row in results["paint"]:
        assert row.keys() >= PAINT_KEYS
        assert row["placed"] is True  # every node got a position before the first paint
        assert row["edges"] > 0
    pairs = {(r["nodes"], r["bridge"]) for r in results["lag"]}
    assert pairs == {(n, b) for n in sizes["lag_sizes"] for b in ("taskloom", "naive")}
    for row in results["lag"]:
        assert row.keys() >= LAG_KEYS
        assert row["ticks"] > 0  # the probe timer fired while the engine streamed
        assert row["events_per_s"] > 0 and row["runs_per_s"] > 0
        assert row["catch_up_s"] is not None  # the window showed the last event

    # The big-workflow cases (issue 11): validate, open, lag while tasks stream.
    assert [r["tasks"] for r in results["validate"]] == sizes["validate_sizes"]
    assert all(r["exit"] == 0 for r in results["validate"])
    for row in results["open"]:
        assert row["drawn_s"] is not None and row["shown_s"] <= row["drawn_s"]
        assert row["items_drawn"] > 0
    assert [(r["kind"], r["tasks"]) for r in results["stream"]] == list(sizes["stream"].items())
    for row in results["stream"]:
        assert row["catch_up_s"] is not None  # the window showed the last event

    table = (tmp_path / "gui.md").read_text()
    assert "G1 first paint" in table and "G2 event-loop lag" in table
    assert "G3 validate" in table and "G4 open" in table and "G5 lag" in table
    assert table in proc.stdout

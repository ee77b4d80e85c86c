"""The command-line and idle-window benchmarks run end to end at their smallest size.

Only the harnesses are checked: timings are never asserted (they belong in
benchmarks/results, not in pass/fail).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_cli_benchmark_times_every_command_and_lists_the_imports(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.cli_bench", "--quick", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads((tmp_path / "cli.json").read_text())
    rows = ("list", "next", "history", "validate", "run: first command starts", "run: exits")
    assert set(result["medians_s"]["now"]) == set(rows)
    assert all(len(result["all_s"]["now"][row]) == 2 for row in rows)
    now = result["medians_s"]["now"]
    assert 0 < now["run: first command starts"] < now["run: exits"]
    assert "taskloom.cli" in dict(result["imports_ms"]["now"])
    table = (tmp_path / "cli.md").read_text()
    assert "| `taskloom list` |" in table


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_idle_benchmark_measures_a_resting_window(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.idle_bench", "--quick", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads((tmp_path / "idle.json").read_text())
    window = result["windows"]["now"]
    assert window["wall_s"] >= 3
    assert window["processes"] >= 2  # the window and its helpers (forecast, reaper watcher)
    assert window["cpu_s"] >= 0
    assert "CPU, window and its helpers" in (tmp_path / "idle.md").read_text()

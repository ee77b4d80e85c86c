"""The forecast benchmark runs end to end at its smallest size (timings never asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_quick_forecast_bench_reports_every_workload(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "benchmarks.forecast_bench", "--quick", "--out", str(tmp_path)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    rows = json.loads((tmp_path / "forecast.json").read_text())["rows"]
    assert [r["workload"] for r in rows] == ["DAG of 200", "DAG of 200 + 15 recurring, 24 h"]
    for row in rows:
        assert row["simulated_runs"] >= 200
        assert row["point_pass_s"] > 0 and row["passes_in_2s"] >= 1

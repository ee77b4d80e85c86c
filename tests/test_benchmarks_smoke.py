"""The benchmark harness runs end to end at its smallest size and reports every workload.

Only the harness is checked: timings are never asserted (they belong in
benchmarks/results, not in pass/fail).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# What each workload must report, and which systems take part in it.
KEYS = {
    "W1": {"tasks_per_s", "schedule_us"},
    "W2": {"p50_ms", "p99_ms", "max_ms"},
    "W3": {"chain_add_s", "chain_run_s", "chain_add_ratio", "dag_add_s", "dag_run_s",
           "dag_add_ratio"},
    "W4": {"bytes_per_task", "us_per_schedule"},
    "W5": {"us_per_cancel", "freed_pct", "held_after_pct"},
    "W6": {"mean_high_position"},
}  # fmt: skip
TIMERS = {"taskloom", "textbook_timer", "apscheduler", "sched"}
SYSTEMS = {
    "W1": TIMERS | {"textbook_dag"},
    "W2": TIMERS,
    "W3": {"taskloom", "textbook_dag"},
    "W4": TIMERS,
    "W5": TIMERS,
    "W6": {"taskloom", "textbook_timer", "textbook_dag", "sched"},
}


@pytest.mark.slow
@pytest.mark.timeout(30)
def test_quick_run_reports_every_workload_for_every_system(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.engine_bench", "--quick", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=28,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]

    results = json.loads((tmp_path / "engine.json").read_text())
    assert results["mode"] == "quick"
    assert results["machine"]["nproc"] >= 1
    assert results["machine"]["python"].startswith(f"{sys.version_info.major}.")

    problems = []
    for workload, keys in KEYS.items():
        by_system = results["workloads"].get(workload, {})
        assert set(by_system) == SYSTEMS[workload], workload
        for name, result in by_system.items():
            if "error" in result:
                problems.append(f"{workload} {name}: {result['error']}")
            elif missing := keys - set(result["median"]):
                problems.append(f"{workload} {name}: no {sorted(missing)}")
    assert not problems, "\n".join(problems)

    table = (tmp_path / "engine.md").read_text()
    for workload in ("W1", "W2", "W3", "W4", "W5", "W6"):
        assert f"| {workload} " in table
    assert "Machine:" in table


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_watch_benchmark_runs_every_configuration_and_measures_the_lag(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.watch_bench", "--quick", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = json.loads((tmp_path / "watch.json").read_text())["results"]
    for task in ("noop", "sleep_5ms"):
        configs = results[task]["configs"]
        assert list(configs) == [
            "no feed",
            "0 watchers",
            "1 watcher",
            "3 watchers",
            "journal 1",
            "journal 3",
        ]
        for name, row in configs.items():
            assert row["tasks_per_s"] > 0
            watchers = {"1 watcher": 1, "3 watchers": 3, "journal 1": 1, "journal 3": 3}.get(
                name, 0
            )
            # every watcher heard every task succeed, and said when
            assert row["successes_seen"] == watchers * results[task]["tasks"]
            assert (row["lag_p50_ms"] is None) == (watchers == 0)

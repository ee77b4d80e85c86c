"""``taskloom forecast`` as a real process, and the issue's proof of the ETA: a
workflow of commands that sleep known times, run twice; the ETA taken at the
second run's start is within 10% of when it really finished, and the critical
path it names is the chain that decided that finish."""

from __future__ import annotations

import json
import textwrap
from datetime import datetime

import pytest

from taskloom.engine.durations_model import DurationModel
from taskloom.engine.forecast import Plan, SimRun, critical_path, forecast
from taskloom.engine.workflow import load
from taskloom.runs import open_run
from tests.test_cli import ENV, private_store_dir, taskloom, write  # noqa: F401 (fixture)

NIGHTLY = """
    [workflow]
    name = "nightly"
    workers = 1

    [tasks.backup]
    command = ["true"]
    cron = "*/20 * * * *"
    timezone = "Europe/Berlin"
    expected = "5m"

    [tasks.sync]
    command = ["true"]
    every = "30m"
    expected = "45m"

    [tasks.prepare]
    command = ["true"]
    expected = "10s"

    [tasks.publish]
    command = ["true"]
    deps = ["prepare"]
    expected = "20s"
"""


def test_forecast_prints_the_finish_critical_path_runs_and_collisions(tmp_path):
    path = write(tmp_path, NIGHTLY)
    result = taskloom("forecast", path, "--for", "24h", "--db", tmp_path / "none.db")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Forecast of nightly" in out and "for 1 d, 1 workers" in out
    assert "durations: 0 from history, 4 expected, 0 guessed (no runs stored yet)" in out
    assert "critical path: prepare -> publish" in out
    # sync takes 45m every 30m: overlap=skip drops every other occurrence
    assert "dropped  sync: its run that started 30.0m earlier still goes" in out
    # sync keeps the only worker busy 45 minutes an hour: some backups must wait
    assert "queued   backup: waits" in out


def test_forecast_json_has_every_run_and_collision(tmp_path):
    backup = NIGHTLY.index("    [tasks.backup]")
    path = write(tmp_path, NIGHTLY[:backup] + NIGHTLY[NIGHTLY.index("    [tasks.sync]") :])
    result = taskloom("forecast", path, "--for", "6h", "--json", "--db", tmp_path / "none.db")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["workflow"] == "nightly"
    assert data["horizon_seconds"] == 6 * 3600
    assert data["critical_path"] == ["prepare", "publish"]
    sync = [r for r in data["runs"] if r["task"] == "sync"]
    starts = [datetime.fromisoformat(r["start"]) for r in sync]
    # every other half-hour occurrence runs: an hour apart (after the first 10s+20s chain)
    assert all((b - a).total_seconds() == 3600 for a, b in zip(starts, starts[1:], strict=False))
    assert {c["kind"] for c in data["collisions"]} >= {"dropped"}
    assert data["durations"]["sync"] == {
        "source": "expected",
        "median": 2700.0,
        "p90": 2700.0,
        "estimate": 2700.0,
        "runs": 0,
    }


def test_forecast_of_a_bad_file_exits_2(tmp_path):
    path = write(tmp_path, "[tasks.a]\ncommand = ['true']\nexpected = 'later'\n")
    result = taskloom("forecast", path)
    assert result.returncode == 2
    assert "tasks.a.expected: bad duration" in result.stderr


def test_forecast_refuses_a_bad_horizon(tmp_path):
    path = write(tmp_path, NIGHTLY)
    result = taskloom("forecast", path, "--for", "0")
    assert result.returncode == 2
    assert "--for: must be > 0" in result.stderr


# ---------------------------------------------------------------------- the ETA proof
SLEEPS = """
    [workflow]
    name = "sleeps"
    workers = 4

    [tasks.a]
    command = ["sleep", "0.6"]

    [tasks.b]  # 0.90-0.99 s: some variance between the runs
    command = "sleep 0.9$(shuf -i 0-9 -n 1)"
    shell = true
    deps = ["a"]

    [tasks.c]
    command = ["sleep", "0.4"]
    deps = ["a"]

    [tasks.d]
    command = ["sleep", "0.6"]
    deps = ["b", "c"]

    [tasks.side]
    command = ["sleep", "0.8"]
"""


def _run(workflow, db):
    return open_run(workflow, db, fresh=True, log_dir=str(db.parent / "logs"))


@pytest.mark.slow
def test_eta_at_the_start_of_a_second_run_is_within_ten_percent(tmp_path):
    path = tmp_path / "sleeps.toml"
    path.write_text(textwrap.dedent(SLEEPS))
    workflow = load(path)
    db = tmp_path / "sleeps.db"
    first = _run(workflow, db)
    assert first.scheduler.wait(60)
    first.scheduler.shutdown()
    first.store.close()

    second = _run(workflow, db)
    live = second.scheduler
    model = DurationModel.from_store(second.store)
    assert model.stats("b").runs == 1
    plan = Plan.from_scheduler(live)  # the run as it stands at its start
    live.start()
    eta = forecast(plan, model, until_settled=True, budget=0.3)  # computed while it runs
    assert live.wait(60)
    attempts = {tid: live.attempts(tid)[-1] for tid in workflow.tasks}
    live.shutdown()
    second.store.close()

    # From the run's first start: how long the engine's threads took to start on a
    # loaded machine (up to 0.15 s seen) is not the forecast's to know.
    began = min(a.started for a in attempts.values())
    actual = max(a.ended for a in attempts.values()) - began
    assert abs(eta.finish - actual) <= 0.1 * actual, (eta.finish, actual)
    assert abs(eta.finish_p50 - actual) <= 0.1 * actual, (eta.finish_p50, actual)
    # The chain that decided the real finish, found the same way in the real attempts.
    deps = {tid: d.deps for tid, d in workflow.tasks.items()}

    def ready(tid):  # when its dependencies had all ended (it started a commit later)
        return max((attempts[d].ended for d in deps[tid]), default=attempts[tid].started)

    real = [SimRun(t, a.number, ready(t), a.started, a.ended) for t, a in attempts.items()]
    assert critical_path(real, deps) == ["a", "b", "d"]
    assert eta.critical_path == ["a", "b", "d"]

"""taskloom list / next / run --task / run --dry-run and the --json answers, as real
processes; the fire-time arithmetic itself with a fixed "now" (taskloom/plan.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from taskloom import plan
from taskloom.engine.workflow import loads
from tests.test_cli import EXAMPLES, private_store_dir, taskloom, write  # noqa: F401

FLOW = """
[workflow]
name = "nightly"

[tasks.fetch]
command = ["true"]
cron = "30 2 * * *"
timezone = "Europe/Berlin"

[tasks.tick]
command = ["true"]
every = "90s"

[tasks.build]
command = ["true"]
deps = ["fetch"]

[tasks.ship]
command = ["true"]
deps = ["build"]
after = "1h"
"""


# ---------------------------------------------------------------------- plan, pure
def test_fire_times_across_tasks_are_merged_earliest_first():
    workflow = loads(FLOW)
    now = datetime(2026, 3, 28, 12, 0, tzinfo=UTC)  # the night Berlin springs forward
    fires = plan.next_fires(workflow, now, 5)
    assert [(f.task, f.at) for f in fires] == [
        ("tick", now + timedelta(seconds=90)),
        ("tick", now + timedelta(seconds=180)),
        ("tick", now + timedelta(seconds=270)),
        ("tick", now + timedelta(seconds=360)),
        ("tick", now + timedelta(seconds=450)),
    ]
    cron = plan.fire_times(workflow.tasks["fetch"], now, 2)
    # 02:30 does not exist on 29 March in Berlin: it runs at 03:00 (CEST, +02:00)
    assert [t.isoformat() for t in cron] == [
        "2026-03-29T03:00:00+02:00",
        "2026-03-30T02:30:00+02:00",
    ]
    assert plan.fire_times(workflow.tasks["build"], now, 3) == []
    assert plan.fire_times(workflow.tasks["ship"], now, 3) == [now + timedelta(hours=1)]


def test_select_runs_a_task_once_now_with_or_without_its_upstream():
    workflow = loads(FLOW)
    alone = plan.select(workflow, ["ship"], with_upstream=False)
    assert list(alone.tasks) == ["ship"]
    assert alone.tasks["ship"].deps == () and alone.tasks["ship"].schedule_kind == "deps"
    chain = plan.select(workflow, ["ship"], with_upstream=True)
    assert list(chain.tasks) == ["fetch", "build", "ship"]
    assert chain.tasks["fetch"].cron is None  # once, now: not at 02:30
    assert chain.tasks["ship"].deps == ("build",)
    assert list(workflow.tasks) == ["fetch", "tick", "build", "ship"]  # untouched
    with pytest.raises(KeyError):
        plan.select(workflow, ["nope"], with_upstream=False)


# ---------------------------------------------------------------------- the commands
def test_list_shows_triggers_deps_and_next_fire_times(tmp_path):
    path = write(tmp_path, FLOW)
    result = taskloom("list", path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["task", "trigger", "next", "deps"]
    fetch = next(line for line in lines if line.startswith("fetch "))
    assert "cron 30 2 * * * (Europe/Berlin)" in fetch and fetch.rstrip().endswith("-")
    build = next(line for line in lines if line.startswith("build "))
    assert "after its dependencies" in build and build.rstrip().endswith("fetch")
    assert lines[-1] == "* counted from the start of a run started now"


def test_list_json_has_a_stable_documented_shape(tmp_path):
    path = write(tmp_path, FLOW)
    result = taskloom("list", path, "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["version"] == 1
    assert (document["workflow"], document["workers"], document["executor"]) == (
        "nightly",
        4,
        "threads",
    )
    tasks = {task["id"]: task for task in document["tasks"]}
    assert list(tasks) == ["fetch", "tick", "build", "ship"]
    assert set(tasks["fetch"]) == {
        "id", "action", "trigger", "trigger_text", "deps", "next", "definition"
    }  # fmt: skip
    assert tasks["fetch"]["definition"]["cron"] == "30 2 * * *"
    fetch_next = datetime.fromisoformat(tasks["fetch"]["next"])
    assert fetch_next.astimezone(UTC).minute in (0, 30) and fetch_next > datetime.now(UTC)
    assert tasks["build"]["next"] is None and tasks["build"]["deps"] == ["fetch"]
    assert tasks["tick"]["trigger"] == "every" and tasks["tick"]["action"] == "command"


def test_next_lists_n_fire_times_in_local_time_with_the_zone(tmp_path):
    path = write(tmp_path, FLOW)
    result = taskloom("next", path, "-n", "3", "--json")
    assert result.returncode == 0, result.stderr
    fires = json.loads(result.stdout)["fires"]
    assert [fire["task"] for fire in fires] == ["tick", "tick", "tick"]
    times = [datetime.fromisoformat(fire["at"]) for fire in fires]
    assert times[1] - times[0] == timedelta(seconds=90) and times[0].utcoffset() is not None
    assert all(fire["relative"] for fire in fires)
    text = taskloom("next", path, "-n", "2", TZ="Asia/Kolkata")
    assert text.returncode == 0
    first = text.stdout.splitlines()[0]
    assert "IST (+0530)" in first and "tick" in first and first.endswith("every  *")


def test_next_of_a_file_without_timed_tasks_says_so():
    result = taskloom("next", EXAMPLES / "etl.toml")
    assert result.returncode == 0
    assert result.stdout.strip() == (
        "etl has no timed task: every task runs when its dependencies allow"
    )
    assert json.loads(taskloom("next", EXAMPLES / "etl.toml", "--json").stdout)["fires"] == []


@pytest.mark.parametrize("command", ["list", "next"])
def test_list_and_next_of_an_invalid_file_exit_2(tmp_path, command):
    path = write(tmp_path, "[tasks.a]\ncommand = 1\n")
    result = taskloom(command, path, "--json")
    assert result.returncode == 2
    assert result.stdout == ""
    assert f"{path}: tasks.a.command: must be an argv list or a string" in result.stderr


def test_validate_json_lists_problems_with_file_line_and_column(tmp_path):
    bad = write(tmp_path, '[tasks.a]\ncommand = ["true"]\nprioity = 1\n')
    result = taskloom("validate", bad, "--json")
    assert result.returncode == 2
    document = json.loads(result.stdout)
    assert document["valid"] is False and document["unreadable"] is False
    (problem,) = document["problems"]
    assert (problem["task"], problem["key"]) == ("a", "prioity")
    assert problem["message"] == "unknown key (did you mean 'priority'?)"
    broken = write(tmp_path, "[tasks.a\n", "broken.toml")
    (syntax,) = json.loads(taskloom("validate", broken, "--json").stdout)["problems"]
    assert (syntax["line"], syntax["column"]) == (1, 9)
    good = json.loads(taskloom("validate", EXAMPLES / "etl.toml", "--json").stdout)
    assert (good["valid"], good["tasks"], good["problems"]) == (True, 6, [])
    missing = taskloom("validate", tmp_path / "none.toml", "--json")
    assert missing.returncode == 2 and json.loads(missing.stdout)["unreadable"] is True


@pytest.mark.slow
def test_history_json_lists_attempts_oldest_first(tmp_path):
    path = write(tmp_path, '[tasks.a]\ncommand = ["true"]\n[tasks.b]\ncommand = ["false"]\n')
    empty = json.loads(taskloom("history", path, "--json").stdout)
    assert empty["attempts"] == [] and empty["workflow"] == "flow"
    assert taskloom("run", path).returncode == 1
    document = json.loads(taskloom("history", path, "--json").stdout)
    attempts = {row["task"]: row for row in document["attempts"]}
    assert attempts["a"]["outcome"] == "succeeded" and attempts["a"]["run"] == 1
    assert attempts["b"]["outcome"] == "failed" and attempts["b"]["exit_code"] == 1
    started = datetime.fromisoformat(attempts["a"]["started"])
    assert abs(started - datetime.now(UTC)) < timedelta(minutes=5)


@pytest.mark.slow
def test_run_one_task_runs_only_it_now_in_a_store_of_its_own(tmp_path):
    ledger = tmp_path / "ledger"
    step = f'command = ["sh", "-c", "echo $0 >> {ledger}"]'
    path = write(
        tmp_path,
        f"""
        [tasks.fetch]
        {step.replace("$0", "fetch")}
        cron = "0 3 * * *"

        [tasks.build]
        {step.replace("$0", "build")}
        deps = ["fetch"]

        [tasks.ship]
        {step.replace("$0", "ship")}
        deps = ["build"]
        """,
    )
    alone = taskloom("run", path, "--task", "build")
    assert alone.returncode == 0, alone.stdout + alone.stderr
    assert ledger.read_text().split() == ["build"]
    chain = taskloom("run", path, "--task", "build", "--with-upstream")
    assert chain.returncode == 0, chain.stdout + chain.stderr
    assert ledger.read_text().split() == ["build", "fetch", "build"]  # fetch now, not at 03:00
    stores = sorted(p.name for p in (tmp_path / "xdg-data" / "taskloom" / "runs").glob("*.db"))
    assert len(stores) == 1 and stores[0].endswith(".tasks.db")  # the workflow's run untouched
    unknown = taskloom("run", path, "--task", "biuld")
    assert unknown.returncode == 2
    assert "no task 'biuld' (it has: fetch, build, ship)" in unknown.stderr
    lonely = taskloom("run", path, "--with-upstream")
    assert lonely.returncode == 2 and "--with-upstream needs --task" in lonely.stderr


def test_dry_run_says_what_would_run_and_runs_nothing(tmp_path):
    marker = tmp_path / "ran"
    path = write(
        tmp_path,
        f"""
        [tasks.load]
        command = ["touch", "{marker}"]
        deps = ["extract"]

        [tasks.extract]
        command = ["touch", "{marker}"]
        every = "5m"
        """,
    )
    result = taskloom("run", path, "--dry-run")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "dry run of flow: would run 2 tasks, in this order (nothing is run):"
    assert lines[1].split() == ["1.", "extract", "every", "5m"]
    assert lines[2].split() == ["2.", "load", "after", "its", "dependencies;", "needs", "extract"]
    assert lines[3].endswith("(not opened)")
    assert not marker.exists()
    assert not (tmp_path / "xdg-data").exists()  # no store, no folder written
    one = taskloom("run", path, "--dry-run", "--task", "load", "--with-upstream")
    assert "would run the selected tasks, once and now" in one.stdout
    assert one.stdout.splitlines()[1].split() == ["1.", "extract", "at", "once"]


@pytest.mark.slow
@pytest.mark.parametrize("command", [["list"], ["next", "-n", "5000"]])
def test_output_into_a_closed_pipe_exits_141_without_a_traceback(tmp_path, command):
    # `taskloom list FILE | head -1`: the reader goes away after one line.
    import subprocess
    import sys

    path = tmp_path / "wide.toml"
    tasks = (f'[tasks.t{i}]\ncommand = ["true"]\nevery = "{1 + i % 7}m"\n' for i in range(3000))
    path.write_text('[workflow]\nname = "wide"\n' + "".join(tasks))
    argv = [sys.executable, "-m", "taskloom", *command, str(path)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline()
    proc.stdout.close()
    assert proc.wait(timeout=120) == 141
    assert b"Traceback" not in proc.stderr.read()
    proc.stderr.close()

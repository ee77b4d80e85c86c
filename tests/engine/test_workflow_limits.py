"""Workflow files at the edges: odd files, deep nesting, values the engine cannot take.

Whatever ``load`` accepts must run; whatever it refuses is a ``WorkflowError``
naming the file (and the key, when it is about one).
"""

from __future__ import annotations

import os
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest

from taskloom.engine import Scheduler, TaskState
from taskloom.engine.workflow import MAX_FILE_BYTES, WorkflowError, load, loads


def problems_of(tmp_path, text: str):
    path = tmp_path / "flow.toml"
    path.write_text(text)
    with pytest.raises(WorkflowError) as caught:
        load(path)
    return path, caught.value.problems


def the_problem(tmp_path, text: str, where: str) -> str:
    path, problems = problems_of(tmp_path, text)
    found = [p for p in problems if p.where == where]
    assert found, [str(p) for p in problems]
    assert str(found[0]).startswith(f"{path}: {where}: ")
    return found[0].message


def task(extra: str = "", name: str = "a") -> str:
    return f'[tasks.{name}]\ncommand = ["true"]\n{extra}'


# ---------------------------------------------------------------------- nesting
@pytest.mark.parametrize(
    "value",
    [
        "[" * 2000 + "]" * 2000,
        "{ a = " * 5000 + "1" + " }" * 5000,
        "[" * 150 + "]" * 150,  # parses, but too deep to save or store
    ],
    ids=["arrays", "inline-tables", "moderate"],
)
def test_deep_nesting_is_a_problem_naming_the_file(tmp_path, value):
    path, problems = problems_of(tmp_path, f"x = {value}\n" + task())
    (problem,) = problems
    assert str(problem).startswith(f"{path}")
    assert "nested too deeply" in problem.message


def test_deep_nesting_in_args_is_a_problem(tmp_path):
    text = '[tasks.a]\ncall = "os:getcwd"\nargs = { x = ' + "[" * 150 + "]" * 150 + " }\n"
    _, problems = problems_of(tmp_path, text)
    assert any("nested too deeply" in p.message for p in problems)


def test_loads_reports_deep_nesting_too():
    with pytest.raises(WorkflowError, match="nested too deeply"):
        loads("x = " + "[" * 2000 + "]" * 2000 + "\n" + task())


def test_reasonable_nesting_in_args_is_fine(tmp_path):
    path = tmp_path / "flow.toml"
    path.write_text('[tasks.a]\ncall = "os:getcwd"\nargs = { x = [[[{ y = [1] }]]] }\n')
    assert load(path).tasks["a"].action.kwargs == {"x": [[[{"y": [1]}]]]}


# ---------------------------------------------------------------------- the file itself
@pytest.mark.timeout(10)
def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "flow.toml"
    os.mkfifo(fifo)
    with pytest.raises(WorkflowError) as caught:
        load(fifo)
    (problem,) = caught.value.problems
    assert str(problem) == f"{fifo}: cannot read: not a regular file"


@pytest.mark.timeout(10)
@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_dev_zero_is_refused_without_reading_it():
    with pytest.raises(WorkflowError, match="/dev/zero: cannot read: not a regular file"):
        load("/dev/zero")


def test_a_directory_is_refused(tmp_path):
    with pytest.raises(WorkflowError, match="cannot read"):
        load(tmp_path)


@pytest.mark.timeout(10)
def test_a_huge_file_is_refused_before_reading(tmp_path):
    path = tmp_path / "flow.toml"
    with open(path, "wb") as stream:
        stream.truncate(MAX_FILE_BYTES + 1)  # sparse: costs no disk
    with pytest.raises(WorkflowError) as caught:
        load(path)
    (problem,) = caught.value.problems
    assert str(problem).startswith(f"{path}: cannot read: ")
    assert "32 MiB" in problem.message


@pytest.mark.slow
def test_a_big_but_sane_file_loads(tmp_path):
    text = "".join(task(name=f"t{n}") for n in range(10_000))
    path = tmp_path / "flow.toml"
    path.write_text(text)
    assert len(load(path).tasks) == 10_000


# ---------------------------------------------------------------------- workflow.name
@pytest.mark.parametrize(
    "name", ["a/b", "../up", "a\\\\b", "..", ".", "tab\\there", "bell\\u0007", "nul\\u0000"]
)
def test_a_name_that_cannot_be_a_file_name_is_a_problem(tmp_path, name):
    message = the_problem(tmp_path, f'[workflow]\nname = "{name}"\n' + task(), "workflow.name")
    assert "name" in message or "character" in message


@pytest.mark.parametrize("name", ["nightly", "ETL 2026", "backup-db_v2", "naïve", "a.b"])
def test_ordinary_names_are_fine(tmp_path, name):
    path = tmp_path / "flow.toml"
    path.write_text(f'[workflow]\nname = "{name}"\n' + task())
    assert load(path).name == name


# ---------------------------------------------------------------------- values run refuses
@pytest.mark.parametrize("key", ["after", "every", "timeout"])
@pytest.mark.parametrize("text", ["1e400", "nan", "-1e400", "1e12"])
def test_infinite_or_absurd_durations_are_problems(tmp_path, key, text):
    message = the_problem(tmp_path, task(f'{key} = "{text}"\n'), f"tasks.a.{key}")
    assert repr(text) in message


@pytest.mark.parametrize("text", ["1e400", "nan"])
def test_infinite_misfire_grace_is_a_problem(tmp_path, text):
    extra = f'every = "1m"\nmisfire_grace = "{text}"\n'
    message = the_problem(tmp_path, task(extra), "tasks.a.misfire_grace")
    assert repr(text) in message


@pytest.mark.parametrize("key", ["base", "max_delay"])
def test_infinite_retry_durations_are_problems(tmp_path, key):
    extra = f'retry = {{ max_attempts = 3, {key} = "1e400" }}\n'
    message = the_problem(tmp_path, task(extra), f"tasks.a.retry.{key}")
    assert "'1e400'" in message


@pytest.mark.parametrize("port", ["0", "65536", "99999"])
def test_dask_port_out_of_range_is_a_problem(tmp_path, port):
    text = f'[workflow]\nexecutor = "dask://localhost:{port}"\n' + task()
    message = the_problem(tmp_path, text, "workflow.executor")
    assert port in message and "65535" in message


def test_dask_port_in_range_is_fine(tmp_path):
    path = tmp_path / "flow.toml"
    path.write_text('[workflow]\nexecutor = "dask://localhost:8786"\n' + task())
    assert load(path).executor == "dask://localhost:8786"


def test_args_that_cannot_be_stored_are_a_problem(tmp_path):
    text = '[tasks.a]\ncall = "os:getcwd"\nargs = { when = 2026-01-01T00:00:00Z }\n'
    message = the_problem(tmp_path, text, "tasks.a.args.when")
    assert "date" in message


def test_an_at_beyond_100_years_is_a_problem(tmp_path):
    message = the_problem(tmp_path, task("at = 9999-12-31T23:59:59Z\n"), "tasks.a.at")
    assert "100 years" in message


@pytest.mark.parametrize(
    ("extra", "where"),
    [
        ('command = ["tr\\u0000ue"]\n', "tasks.b.command"),
        ('command = "echo \\u0000"\nshell = true\n', "tasks.b.command"),
        ('command = ["true"]\nenv = { A = "x\\u0000y" }\n', "tasks.b.env.A"),
        ('command = ["true"]\nenv = { "A=B" = "x" }\n', 'tasks.b.env."A=B"'),
        ('command = ["true"]\ncwd = "a\\u0000b"\n', "tasks.b.cwd"),
    ],
)
def test_what_a_process_cannot_be_given_is_a_problem(tmp_path, extra, where):
    message = the_problem(tmp_path, f"[tasks.b]\n{extra}", where)
    assert message


# ---------------------------------------------------------------------- valid means it runs
def test_values_at_the_limits_schedule(tmp_path):
    """A file at every limit load() allows schedules on a real engine."""
    soon = (datetime.now(UTC) + timedelta(days=365 * 99)).isoformat()
    path = tmp_path / "flow.toml"
    path.write_text(
        task('after = "36524d"\ntimeout = "36524d"\n', name="a")
        + task('every = "36524d"\nmisfire_grace = "36524d"\n', name="b")
        + task(f'at = "{soon}"\nretry = {{ max_attempts = 1000000, factor = 1e300 }}\n', "c")
    )
    workflow = load(path)
    sched = Scheduler(workers=1)  # the real clock: a timer thread waits for these
    ids = workflow.schedule_into(sched)
    sched.start()
    time.sleep(0.2)
    timers = [t for t in threading.enumerate() if t.name == "taskloom-timers"]
    assert timers and all(t.is_alive() for t in timers)
    assert set(ids) == {"a", "b", "c"}
    assert {info.state for info in sched.tasks()} == {TaskState.SCHEDULED}
    sched.shutdown()

"""The one schema of a task: TaskDefinition and its file, row and engine conversions."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from taskloom.engine import (
    Attempt,
    Call,
    InvalidArgument,
    ManualClock,
    Misfire,
    Mode,
    Outcome,
    Overlap,
    RetryPolicy,
    Scheduler,
    TaskDefinition,
    TaskState,
    TriggerRule,
)
from taskloom.engine.command import Command
from taskloom.engine.store import SQLiteStore
from taskloom.engine.workflow import load, loads
from tests.engine.test_workflow import VALID, write

WALL = datetime(2026, 11, 30, tzinfo=UTC)
BASE = Path("/fixed/dir")


def one_of_each(base: Path = BASE) -> dict[str, TaskDefinition]:
    """A definition of every schedule kind, with non-default settings."""
    command = Command(["python3", "x.py"], cwd=str(base / "sub"), env={"A": "b"})
    return {
        "at": TaskDefinition(
            "at", Call("os:getcwd", {"n": 1}), at=datetime(2026, 12, 1, 2, tzinfo=UTC), priority=3
        ),
        "after": TaskDefinition(
            "after", command, after=90.0, retry=RetryPolicy(3, base=2.0), timeout=5.0
        ),
        "every": TaskDefinition(
            "every",
            Command("echo hi", shell=True, cwd=str(base)),
            every=300.0,
            mode=Mode.FIXED_DELAY,
            overlap=Overlap.QUEUE,
            deps=("at",),
        ),
        "cron": TaskDefinition(
            "cron",
            Call("os:getcwd"),
            cron="0 2 * * *",
            timezone="Europe/Berlin",
            misfire=Misfire.SKIP,
            misfire_grace=90.0,
            trigger_rule=TriggerRule.ALL_DONE,
        ),
        "deps": TaskDefinition("deps", Call("os:getcwd"), deps=("after", "cron")),
    }


# ---------------------------------------------------------------------- the fields
@pytest.mark.parametrize(
    "field, enum", [("mode", Mode), ("trigger_rule", TriggerRule), ("overlap", Overlap),
                    ("misfire", Misfire)],
)  # fmt: skip
def test_option_fields_take_their_strings_and_become_enums(field, enum):
    member = list(enum)[-1]
    definition = TaskDefinition("a", Call("os:getcwd"), **{field: member.value})
    assert getattr(definition, field) is member


@pytest.mark.parametrize(
    "field, valid",
    [
        ("mode", "fixed_rate, fixed_delay"),
        ("trigger_rule", "all_success, all_done, one_failed"),
        ("overlap", "skip, queue, parallel"),
        ("misfire", "run_once, skip, run_all"),
    ],
)
def test_a_bad_option_is_refused_naming_the_field_and_the_valid_values(field, valid):
    with pytest.raises(InvalidArgument) as caught:
        TaskDefinition("a", Call("os:getcwd"), **{field: "sometimes"})
    assert str(caught.value) == f"{field} must be one of {valid}, got 'sometimes'"
    assert caught.value.field == field


def test_at_most_one_time_and_an_aware_at():
    with pytest.raises(InvalidArgument, match="only one of at, after, every, cron") as caught:
        TaskDefinition("a", Call("os:getcwd"), after=1.0, every=2.0)
    assert caught.value.field == "every"
    with pytest.raises(InvalidArgument, match="at must be an aware datetime"):
        TaskDefinition("a", Call("os:getcwd"), at=datetime(2026, 1, 1))


def test_it_is_frozen_and_deps_are_a_tuple():
    definition = TaskDefinition("a", Call("os:getcwd"), deps=["x", "y"])
    assert definition.deps == ("x", "y")
    with pytest.raises(AttributeError):
        definition.priority = 3  # type: ignore[misc]


def test_schedule_kinds():
    kinds = {tid: d.schedule_kind for tid, d in one_of_each().items()}
    assert kinds == {"at": "at", "after": "after", "every": "every", "cron": "cron", "deps": "deps"}
    assert [tid for tid, d in one_of_each().items() if d.recurring] == ["every", "cron"]


# ---------------------------------------------------------------------- the file
def test_every_kind_round_trips_through_its_table():
    for definition in one_of_each().values():
        table = definition.to_table(BASE)
        assert TaskDefinition.from_table(definition.id, table, BASE) == definition


def test_table_writes_only_what_differs_with_paths_relative_to_the_file():
    tables = {tid: d.to_table(BASE) for tid, d in one_of_each().items()}
    assert tables["after"] == {
        "command": ["python3", "x.py"],
        "cwd": "sub",
        "env": {"A": "b"},
        "after": 90.0,
        "retry": {"max_attempts": 3, "base": 2.0},
        "timeout": 5.0,
    }
    assert tables["every"] == {
        "command": "echo hi",
        "shell": True,
        "every": 300.0,
        "mode": "fixed_delay",
        "deps": ["at"],
        "overlap": "queue",
    }
    assert tables["cron"]["timezone"] == "Europe/Berlin"
    assert tables["deps"] == {"call": "os:getcwd", "deps": ["after", "cron"]}


@pytest.mark.parametrize("written", ["sub", "../shared", "/elsewhere/abs"])
def test_cwd_is_written_back_as_the_file_wrote_it(written):
    definition = TaskDefinition.from_table("t", {"command": ["true"], "cwd": written}, BASE)
    assert definition.to_table(BASE)["cwd"] == written
    for same in (".", None):  # the file's own folder: no cwd key
        table = {"command": ["true"]} if same is None else {"command": ["true"], "cwd": same}
        assert "cwd" not in TaskDefinition.from_table("t", table, BASE).to_table(BASE)


def test_a_python_object_has_no_table():
    with pytest.raises(ValueError, match="runs a Python object"):
        TaskDefinition("obj", print).to_table(BASE)


def test_a_file_round_trips_through_its_definitions(tmp_path):
    workflow = load(write(tmp_path, VALID))
    for tid, definition in workflow.tasks.items():
        table = definition.to_table(workflow.base_dir)
        assert TaskDefinition.from_table(tid, table, workflow.base_dir) == definition


def test_fingerprints_are_those_earlier_versions_stored():
    """A store's meta keeps the fingerprints of its run's file: the same file must
    give the same digests, or every resumed task would count as changed."""
    workflow = loads(VALID.replace('cwd = "."\n', ""), "/fixed/flow.toml")
    assert workflow.fingerprints() == {
        "extract": "e713416b75aa6364",
        "load": "9f9f3d69089fa8fb",
        "notify": "3e34778b6040547b",
        "poll": "69b3c2bf242192b9",
    }
    changed = replace(workflow.tasks["poll"], every=301.0)
    assert changed.fingerprint(workflow.base_dir) != workflow.fingerprints()["poll"]


# ---------------------------------------------------------------------- the store
def test_every_kind_round_trips_through_its_row():
    for definition in one_of_each().values():
        row = json.loads(json.dumps(definition.to_row()))  # as the store keeps it
        assert TaskDefinition.from_row(definition.id, row) == definition


def test_a_cron_task_without_a_zone_keeps_none_through_its_row():
    definition = TaskDefinition("c", Call("os:getcwd"), cron="0 2 * * *")
    row = definition.to_row()
    assert row["tz"] == "UTC"  # what older readers need
    assert TaskDefinition.from_row("c", row) == definition


# Rows exactly as the previous format wrote them (no "schema" key).
OLD_ROWS = {
    "at": '{"action": {"call": "os:getcwd", "args": {"a": 1}}, "deps": [], "priority": 3, '
    '"retry": null, "timeout": null, "trigger_rule": "all_success", "run_at_wall": 1796086800.0}',
    "after": '{"action": {"command": ["true"], "shell": false, "cwd": "/tmp", "env": {"A": "b"}}, '
    '"deps": [], "priority": 0, "retry": {"max_attempts": 3, "base": 1.0, "factor": 2.0, '
    '"max_delay": 300.0, "jitter": 0.1}, "timeout": 5.0, "trigger_rule": "all_success", '
    '"run_at_wall": 1795996890.0}',
    "every": '{"action": {"command": "echo hi", "shell": true, "cwd": null, "env": {}}, '
    '"deps": ["at"], "priority": 0, "retry": null, "timeout": null, "trigger_rule": '
    '"all_success", "every": 300.0, "mode": "fixed_delay", "overlap": "queue", "misfire": '
    '"run_once", "misfire_grace": 30.0, "run_at_wall": null}',
    "cron": '{"action": {"call": "os:getcwd", "args": {}}, "deps": [], "priority": 0, '
    '"retry": null, "timeout": null, "trigger_rule": "all_done", "cron": "0 2 * * *", '
    '"tz": "Europe/Berlin", "overlap": "skip", "misfire": "skip", "misfire_grace": 90.0, '
    '"run_at_wall": null}',
    "deps": '{"action": {"call": "os:getcwd", "args": {}}, "deps": ["after"], "priority": 0, '
    '"retry": null, "timeout": null, "trigger_rule": "all_success", "run_at_wall": null}',
}


def test_rows_of_the_previous_format_are_read():
    read = {tid: TaskDefinition.from_row(tid, json.loads(row)) for tid, row in OLD_ROWS.items()}
    assert read["at"] == TaskDefinition(
        "at", Call("os:getcwd", {"a": 1}), at=datetime(2026, 12, 1, 1, tzinfo=UTC), priority=3
    )
    # An old row kept no delay: its due time reads as an "at" time.
    assert read["after"] == TaskDefinition(
        "after",
        Command(["true"], cwd="/tmp", env={"A": "b"}),
        at=datetime.fromtimestamp(1795996890.0, UTC),
        retry=RetryPolicy(3),
        timeout=5.0,
    )
    assert read["every"] == TaskDefinition(
        "every",
        Command("echo hi", shell=True),
        every=300.0,
        mode="fixed_delay",
        overlap="queue",
        deps=("at",),
    )
    assert read["cron"] == TaskDefinition(
        "cron",
        Call("os:getcwd"),
        cron="0 2 * * *",
        timezone="Europe/Berlin",
        misfire="skip",
        misfire_grace=90.0,
        trigger_rule="all_done",
    )
    assert read["deps"] == TaskDefinition("deps", Call("os:getcwd"), deps=("after",))


def test_a_store_written_in_the_previous_format_still_resumes(tmp_path):
    db = tmp_path / "old.db"
    clock = ManualClock(wall=WALL)
    old_store = SQLiteStore(db)
    first = Scheduler(clock=clock, store=old_store)
    for tid in ("at", "after", "every", "cron", "deps"):
        first.add(Call("os:getcwd"), name=tid)  # rows to overwrite with the old specs
    first.shutdown()
    old_store.close()
    conn = sqlite3.connect(db)
    with conn:
        for tid, row in OLD_ROWS.items():
            conn.execute("UPDATE tasks SET spec = ? WHERE id = ?", (row, tid))
    conn.close()

    store = SQLiteStore(db)
    resumed = Scheduler(clock=ManualClock(wall=WALL), store=store)
    try:
        assert resumed.definition("every").every == 300.0
        assert resumed.task("every").recurring and resumed.task("cron").recurring
        assert resumed.definition("cron").timezone == "Europe/Berlin"
        assert resumed.definition("deps").deps == ("after",)
        assert resumed.task("deps").deps == ("after",)
        assert resumed.definition("at").action == Call("os:getcwd", {"a": 1})
    finally:
        resumed.shutdown()
        store.close()


# ---------------------------------------------------------------------- the engine
def test_the_engine_tells_the_definition_a_file_gave_it(make_sched, tmp_path):
    workflow = load(write(tmp_path, VALID))
    s = make_sched(start=False)
    workflow.schedule_into(s)
    for tid, definition in workflow.tasks.items():
        assert s.definition(tid) == definition


def test_submit_schedules_every_kind_and_the_engine_gives_it_back(make_sched):
    s = make_sched(clock=ManualClock(wall=WALL), start=False)
    definitions = one_of_each()
    for tid in ("at", "after", "every", "cron", "deps"):
        assert definitions[tid].submit(s) == tid
        assert s.definition(tid) == definitions[tid]
    assert s.task("at").run_at == (definitions["at"].at - WALL).total_seconds()
    assert s.task("after").run_at == 90.0
    assert s.task("every").recurring and s.task("cron").recurring
    assert s.task("deps").deps == ("after", "cron")


def test_plain_scheduling_calls_have_definitions_too(make_sched):
    s = make_sched(clock=ManualClock(wall=WALL), start=False)
    s.schedule(print, 60.0, name="clock_time")  # a time on the scheduler clock
    generated = s.add(print)
    s.add(print, name="later")
    s.add_dependency("later", "clock_time")  # deps as they are now, not as given
    assert s.definition("clock_time").at == WALL + timedelta(seconds=60)
    assert s.definition(generated).id == generated
    assert s.definition("later").deps == ("clock_time",)
    assert s.definition("later").action is print
    with pytest.raises(KeyError, match="no task 'missing'"):
        s.definition("missing")


def test_an_id_left_empty_is_generated_by_the_engine(make_sched):
    s = make_sched(start=False)
    tid = TaskDefinition("", Call("os:getcwd")).submit(s)
    assert tid.startswith("getcwd-") and s.definition(tid).id == tid


def test_a_refused_definition_leaves_the_engine_unchanged(make_sched):
    s = make_sched(start=False)
    bad = TaskDefinition("x", Call("os:getcwd"), cron="0 2 * * *", timezone="Mars/Base")
    with pytest.raises(ValueError, match="Mars/Base"):
        bad.submit(s)
    assert s.tasks() == []


def test_a_restored_task_has_the_definition_its_row_kept(tmp_path):
    db = tmp_path / "runs.db"
    aware = datetime(2026, 12, 1, 2, tzinfo=timezone(timedelta(hours=1)))
    definitions = one_of_each(tmp_path)
    definitions["at"] = replace(definitions["at"], at=aware)
    first_store = SQLiteStore(db)
    first = Scheduler(clock=ManualClock(wall=WALL), store=first_store)
    for definition in definitions.values():
        definition.submit(first)
    first.shutdown()
    first_store.close()
    store = SQLiteStore(db)
    again = Scheduler(clock=ManualClock(wall=WALL), store=store)
    try:
        for tid, definition in definitions.items():
            assert again.definition(tid) == definition
        assert again.definition("at").at.utcoffset() == timedelta(hours=1)  # as given
        assert again.task("deps").state is TaskState.PENDING
    finally:
        again.shutdown()
        store.close()


def test_a_time_on_the_scheduler_clock_is_restored_as_its_wall_time(tmp_path):
    db = tmp_path / "runs.db"
    first_store = SQLiteStore(db)
    first = Scheduler(clock=ManualClock(wall=WALL), store=first_store)
    first.schedule(Call("os:getcwd"), 60.0, name="soon")
    assert first.definition("soon").at == WALL + timedelta(seconds=60)
    first.shutdown()
    first_store.close()
    store = SQLiteStore(db)
    again = Scheduler(clock=ManualClock(wall=WALL), store=store)
    try:
        assert again.definition("soon") == TaskDefinition(
            "soon", Call("os:getcwd"), at=WALL + timedelta(seconds=60)
        )
    finally:
        again.shutdown()
        store.close()


# ---------------------------------------------------------------------- attempts
def test_an_attempt_read_from_the_store_says_whose_it_is():
    row = {
        "run": 2,
        "task_id": "a",
        "number": 1,
        "started": 100.0,
        "ended": 101.5,
        "outcome": "failed",
        "error": "boom",
        "traceback": None,
        "output": "out",
        "log_path": None,
        "exit_code": 1,
        "worker": "w",
    }
    attempt = Attempt.from_row(row, offset=100.0)
    assert attempt == Attempt(
        1, 0.0, 1.5, Outcome.FAILED, "boom", None, "out", None, 1, "w", "a", 2
    )
    assert attempt.to_row("a", lambda t: None if t is None else t + 100.0) == (
        "a", 1, 100.0, 101.5, "failed", "boom", None, "out", None, 1, "w",
    )  # fmt: skip


FP_FILE = """
[workflow]
name = "fp"
[tasks.a]
command = ["echo", "a"]
retry = {max_attempts = 3, base = "2s"}
timeout = "1m"
[tasks.b]
command = "echo b | cat"
shell = true
deps = ["a"]
every = "5m"
jitter = "10s"
pool = "p"
expected = 12
group = "g"
[tasks.c]
call = "os:getcwd"
cron = "0 3 * * *"
timezone = "Europe/Paris"
skip = ["2026-12-25"]
deps = ["a", "b"]
trigger_rule = "all_done"
[pools]
p = 2
"""


def test_fingerprints_stay_the_digests_earlier_versions_stored():
    """A resumed run compares the file's fingerprints with the stored ones: a change of
    how they are computed would redefine every task (digests from 06a9e17)."""
    from pathlib import Path

    from taskloom.engine.workflow import loads

    workflow = loads(FP_FILE, path=Path("/base/fp.toml"))  # a cwd of its own: not where tests run
    digests = {tid: t.fingerprint(Path("/base")) for tid, t in workflow.tasks.items()}
    assert digests == {"a": "e2ebd6db12babbde", "b": "1c5561fa4dd9c65a", "c": "ef17dc8c9807bffe"}

"""One schema: the option enums, and the store rows built next to the records' fields."""

from __future__ import annotations

import pytest

from taskloom.engine import (
    TRIGGER_RULES,
    Attempt,
    InvalidArgument,
    ManualClock,
    Misfire,
    Mode,
    Outcome,
    Overlap,
    Scheduler,
    SyncExecutor,
    TaskState,
    TriggerRule,
    store,
    workflow,
)
from taskloom.engine._schedule import recurrence
from taskloom.engine._store import records
from taskloom.engine.store import SQLiteStore

OFFSET = 1_700_000_000.0  # wall = mono + OFFSET


def to_wall(mono):
    return None if mono is None else mono + OFFSET


def _noop():
    return None


# ---------------------------------------------------------------- the enums
def test_the_old_tuples_are_the_enums_values_in_order():
    assert recurrence.MODES == ("fixed_rate", "fixed_delay")
    assert recurrence.OVERLAPS == ("skip", "queue", "parallel")
    assert recurrence.MISFIRES == ("run_once", "skip", "run_all")
    assert TRIGGER_RULES == ("all_success", "all_done", "one_failed")
    assert tuple(Outcome) == (
        "running",
        "succeeded",
        "failed",
        "cancelled",
        "interrupted",
        "lost",
    )


def test_the_workflow_loader_lists_the_same_values():
    assert workflow.CHOICES == {
        "mode": recurrence.MODES,
        "trigger_rule": TRIGGER_RULES,
        "overlap": recurrence.OVERLAPS,
        "misfire": recurrence.MISFIRES,
    }


def test_a_member_is_its_string():
    assert Mode.FIXED_DELAY == "fixed_delay"
    assert f"{Overlap.PARALLEL}" == "parallel"
    assert Misfire("run_all") is Misfire.RUN_ALL
    assert {TriggerRule.ONE_FAILED: 1}["one_failed"] == 1


@pytest.mark.parametrize("given", [Mode.FIXED_DELAY, "fixed_delay"])
def test_mode_is_accepted_as_enum_or_string_and_kept_as_the_enum(sched, clock, runs, given):
    sched.schedule_every(runs.fn("tick"), 10.0, name="tick", mode=given)
    assert sched.definition("tick").mode is Mode.FIXED_DELAY
    clock.advance(12.0)
    assert sched.task("tick").run_at == 22.0  # counted from the end of the run


@pytest.mark.parametrize("overlap", [*Overlap, *(o.value for o in Overlap)])
@pytest.mark.parametrize("misfire", [Misfire.RUN_ALL, "run_all", Misfire.SKIP, "run_once"])
def test_overlap_and_misfire_are_accepted_as_enum_or_string(sched, overlap, misfire):
    sched.schedule_every(_noop, 10.0, name="tick", overlap=overlap, misfire=misfire)
    task = sched.definition("tick")
    assert task.overlap is Overlap(overlap)
    assert task.misfire is Misfire(misfire)


@pytest.mark.parametrize("misfire", [Misfire.RUN_ALL, "run_all"])
def test_cron_takes_the_enums_too(sched, misfire):
    sched.schedule_cron(_noop, "0 * * * *", name="hourly", overlap=Overlap.QUEUE, misfire=misfire)
    task = sched.definition("hourly")
    assert (task.overlap, task.misfire) == (Overlap.QUEUE, Misfire.RUN_ALL)


@pytest.mark.parametrize("rule", [*TriggerRule, *(r.value for r in TriggerRule)])
def test_trigger_rule_is_accepted_as_enum_or_string(unstarted, rule):
    unstarted.add(_noop, name="a", deps=["later"], trigger_rule=rule)
    assert unstarted.definition("a").trigger_rule is TriggerRule(rule)


def test_trigger_rule_enum_decides_like_its_string(sched, runs):
    sched.add(runs.fn("a", lambda: 1 / 0), name="a")
    sched.add(runs.fn("b"), name="b", deps=["a"], trigger_rule=TriggerRule.ALL_DONE)
    sched.add(runs.fn("c"), name="c", deps=["a"], trigger_rule=TriggerRule.ONE_FAILED)
    sched.add(runs.fn("d"), name="d", deps=["a"], trigger_rule=TriggerRule.ALL_SUCCESS)
    assert sched.task("b").state is TaskState.SUCCEEDED
    assert sched.task("c").state is TaskState.SUCCEEDED
    assert sched.task("d").state is TaskState.SKIPPED


@pytest.mark.parametrize(
    ("call", "field", "message"),
    [
        (
            lambda s: s.schedule_every(_noop, 1, mode="fixed-rate"),
            "mode",
            "mode must be one of fixed_rate, fixed_delay, got 'fixed-rate'",
        ),
        (
            lambda s: s.schedule_every(_noop, 1, overlap="serial"),
            "overlap",
            "overlap must be one of skip, queue, parallel, got 'serial'",
        ),
        (
            lambda s: s.schedule_cron(_noop, "* * * * *", misfire="never"),
            "misfire",
            "misfire must be one of run_once, skip, run_all, got 'never'",
        ),
        (
            lambda s: s.add(_noop, trigger_rule="any"),
            "trigger_rule",
            "trigger_rule must be one of all_success, all_done, one_failed, got 'any'",
        ),
        (
            lambda s: s.schedule_every(_noop, 1, mode=Overlap.SKIP),  # another enum's member
            "mode",
            "mode must be one of fixed_rate, fixed_delay, got <Overlap.SKIP: 'skip'>",
        ),
    ],
)
def test_a_bad_value_is_refused_with_the_same_message(sched, call, field, message):
    with pytest.raises(InvalidArgument) as info:
        call(sched)
    assert str(info.value) == message
    assert info.value.field == field
    assert sched.snapshot()[1] == []  # nothing was added


# ---------------------------------------------------------------- attempt rows
def _attempt(**changes) -> Attempt:
    record = Attempt(
        3,
        12.5,
        14.25,
        Outcome.FAILED,
        "ValueError: no",
        "Traceback ...",
        "out\n",
        "/tmp/log.txt",
        2,
        "thread-1",
    )
    return record._replace(**changes)


def test_an_attempt_row_is_the_store_columns_it_fills():
    row = _attempt().to_row("job", to_wall)
    assert row == (
        "job",
        3,
        12.5 + OFFSET,
        14.25 + OFFSET,
        "failed",
        "ValueError: no",
        "Traceback ...",
        "out\n",
        "/tmp/log.txt",
        2,
        "thread-1",
    )
    assert type(row[4]) is str  # plain text for SQLite
    assert store.ATTEMPT_COLUMNS[1:12] == ("task_id", *Attempt._fields[:10])
    assert Attempt._fields[10:] == ("task_id", "run")  # whose it is, once read back


@pytest.mark.parametrize(
    "record",
    [
        _attempt(),
        _attempt(ended=None, outcome=Outcome.RUNNING, error=None, traceback=None, exit_code=None),
        _attempt(outcome=Outcome.LOST, output=None, log_path=None, worker=None),
    ],
)
def test_an_attempt_round_trips_through_its_row(record):
    row = dict(zip(store.ATTEMPT_COLUMNS[1:12], record.to_row("job", to_wall), strict=True))
    back = Attempt.from_row(row, OFFSET)
    assert back == record._replace(task_id="job")  # this row has no run column
    assert back.outcome is record.outcome


def test_a_row_with_an_outcome_no_enum_knows_is_read_as_it_is():
    row = dict(zip(store.ATTEMPT_COLUMNS[1:12], _attempt().to_row("job", to_wall), strict=True))
    row["outcome"] = "vanished"
    assert Attempt.from_row(row, OFFSET).outcome == "vanished"


def test_attempts_round_trip_through_a_real_store(tmp_path):
    path = tmp_path / "taskloom.db"
    written = [
        _attempt(number=1, started=1.0, ended=2.0, outcome=Outcome.SUCCEEDED, error=None),
        _attempt(number=2, started=3.0, ended=None, outcome=Outcome.RUNNING, exit_code=None),
    ]
    s = SQLiteStore(path)
    try:
        for record in written:
            s.put_attempt(record.to_row("job", to_wall))
        s.flush()
    finally:
        s.close()
    s = SQLiteStore(path)  # one owner at a time: the first one is closed
    try:
        stored = s.recent_attempts(10)["job"]
        known = [record._replace(task_id="job", run=s.run) for record in written]
        assert [Attempt.from_row(row, OFFSET) for row in stored] == known
        newest = s.attempts("job")
        assert [Attempt.from_row(row, OFFSET) for row in newest] == known[::-1]
        assert newest[0]["outcome"] == "running" and type(newest[0]["outcome"]) is str
    finally:
        s.close()


# ---------------------------------------------------------------- task rows
def test_task_rows_fill_the_task_columns_and_round_trip_through_a_real_store(tmp_path):
    path = tmp_path / "taskloom.db"
    s = SQLiteStore(path)
    sched = Scheduler(clock=ManualClock(), executor=SyncExecutor(), store=s)
    sched.schedule_every(
        "tests.engine._store_jobs:noop",
        10.0,
        name="tick",
        mode=Mode.FIXED_DELAY,
        overlap="queue",
        misfire=Misfire.RUN_ALL,
    )
    sched.pause("tick")
    task = sched._graph.tasks["tick"]
    state = records.StateRow.of(task, sched._journal.to_wall)
    assert records.TASK_COLUMNS.split(", ")[3:] == list(records.StateRow._fields)
    sched.shutdown()
    s.close()

    s = SQLiteStore(path)
    try:
        (loaded,) = s.load_tasks()
        assert loaded["id"] == "tick"
        assert loaded["state"] == state.state == task.state.value
        assert loaded["paused"] == state.paused == 1
        assert loaded["next_wall"] == pytest.approx(state.next_wall)
        spec = loaded["spec"]
        assert (spec["mode"], spec["overlap"], spec["misfire"], spec["trigger_rule"]) == (
            "fixed_delay",
            "queue",
            "run_all",
            "all_success",
        )
    finally:
        s.close()


def test_a_state_row_is_what_update_task_and_put_task_take():
    row = records.StateRow("scheduled", 2, 1, 5.0, 1, None, None, 0)
    assert row.update_row("t") == ("scheduled", 2, 1, 5.0, 1, None, None, 0, "t")
    assert row.task_row("t", 7, {"a": 1}) == ("t", 7, '{"a": 1}', *row)


def test_the_gui_colours_every_outcome_by_enum_or_string():
    pytest.importorskip("PySide6")
    from taskloom.gui.style import OUTCOME_COLOURS

    assert set(OUTCOME_COLOURS) == set(Outcome)
    assert OUTCOME_COLOURS["lost"] == OUTCOME_COLOURS[Outcome.LOST]

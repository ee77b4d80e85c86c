"""A run's deadline ([workflow] timeout): past it, what is unfinished is cancelled
and the owner is told why, once. On a ManualClock: nothing sleeps."""

from __future__ import annotations

import pytest

from taskloom.engine import TaskState, current_run
from taskloom.engine.deadline import RunDeadline

S = TaskState


def test_the_deadline_cancels_every_unfinished_task_once_it_passes(sched, clock, runs):
    told = []
    sched.schedule(runs.fn("early"), run_at=60.0, name="early")
    sched.schedule(runs.fn("late"), run_at=3 * 3600.0, name="late")
    sched.add(runs.fn("after"), deps=["late"], name="after")
    sched.schedule_every(runs.fn("tick"), 600.0, name="tick")
    deadline = RunDeadline(sched, 7200.0, on_expired=lambda *a: told.append(a)).start()
    for _ in range(11):
        clock.advance(600.0)
    clock.advance(599.0)
    assert not deadline.expired and told == []
    assert sched.task("early").state is S.SUCCEEDED
    assert runs.count("tick") == 11
    clock.advance(1.0)
    assert deadline.expired
    assert told == [(deadline.reason, ["late", "after", "tick"])]
    assert "timeout = 2h" in deadline.reason
    states = {info.id: info.state for info in sched.tasks()}
    assert states == {
        "early": S.SUCCEEDED,  # finished before: kept
        "late": S.CANCELLED,
        "after": S.CANCELLED,
        "tick": S.CANCELLED,
    }
    ticks = runs.count("tick")
    clock.advance(4 * 3600.0)  # nothing runs after it, and it is not told again
    assert runs.count("tick") == ticks and runs.count("late") == 0
    assert len(told) == 1 and sched.upcoming() == []


def test_a_resumed_run_keeps_the_deadline_it_had(sched, clock, runs):
    sched.schedule(runs.fn("late"), run_at=3600.0, name="late")
    deadline = RunDeadline(sched, 7200.0, elapsed=5400.0).start()  # 90 min used before
    clock.advance(1799.0)
    assert sched.task("late").state is S.SCHEDULED
    clock.advance(1.0)
    assert deadline.expired and sched.task("late").state is S.CANCELLED


def test_a_stopped_deadline_cancels_nothing(sched, clock, runs):
    sched.schedule(runs.fn("late"), run_at=3600.0, name="late")
    deadline = RunDeadline(sched, 60.0).start()
    deadline.stop()
    clock.advance(3600.0)
    assert not deadline.expired and sched.task("late").state is S.SUCCEEDED


@pytest.mark.timeout(30)
def test_a_running_attempt_is_asked_to_stop_and_ends_cancelled(make_sched, clock, recorder):
    sched = make_sched(threads=True, workers=1)
    rec = recorder(sched)

    def forever():
        run = current_run()
        assert run is not None
        assert run.wait_cancelled(20), "never asked to stop"

    try:
        sched.schedule(forever, name="forever")
        rec.wait_kind("forever", "running")
        RunDeadline(sched, 10.0).start()
        clock.advance(10.0)
        rec.wait_kind("forever", "cancelled")
        assert sched.task("forever").state is S.CANCELLED
    finally:
        sched.shutdown()

"""Scheduler.update: replace a task's definition and keep what it did."""

from __future__ import annotations

import pytest

from taskloom.engine import (
    CycleError,
    InvalidArgument,
    ManualClock,
    Scheduler,
    SyncExecutor,
    TaskDefinition,
    TaskState,
)
from taskloom.engine.store import SQLiteStore

S = TaskState
calls: list[str] = []


def good():
    calls.append("good")


def bad():
    calls.append("bad")
    raise RuntimeError("boom")


def after():
    calls.append("after")


@pytest.fixture
def failed_chain():
    """a fails; b and c (downstream) are skipped."""
    calls.clear()
    scheduler = Scheduler(workers=1, clock=ManualClock(), executor=SyncExecutor())
    events = []
    scheduler.subscribe(events.append)
    scheduler.add(bad, name="a")
    scheduler.add(after, name="b", deps=["a"])
    scheduler.add(after, name="c", deps=["b"])
    scheduler.start()
    assert scheduler.wait(5)
    assert scheduler.task("a").state is S.FAILED
    scheduler.events = events
    yield scheduler
    scheduler.shutdown(wait=True)


def test_update_of_a_failed_task_keeps_its_attempts_and_state(failed_chain):
    s = failed_chain
    before = len(s.events)
    s.update("a", TaskDefinition("a", good))
    info = s.task("a")
    assert info.state is S.FAILED  # fixed, not run: clear() or retry() runs it
    assert info.dependents == ("b",)
    assert [a.outcome for a in s.attempts("a")] == ["failed"]
    assert s.definition("a").action is good
    kinds = [(e.kind, e.task_id) for e in s.events[before:]]
    assert kinds == [("edited", "a")]  # no "removed", nothing else touched
    assert s.task("b").state is S.SKIPPED
    # Clearing the fixed task with its downstream runs the new code, numbering on.
    assert s.clear("a", downstream=True) == ["a", "b", "c"]
    assert s.wait(5)
    assert calls == ["bad", "good", "after", "after"]
    assert [a.number for a in s.attempts("a")] == [1, 2]
    assert s.task("c").state is S.SUCCEEDED


def test_update_of_a_task_not_started_judges_it_again():
    clock = ManualClock()
    s = Scheduler(workers=1, clock=clock, executor=SyncExecutor())
    try:
        s.add(good, name="up")
        s.schedule_after(after, 60, name="x")
        s.add(after, name="down", deps=["x"])
        assert s.task("x").state is S.SCHEDULED
        s.update("x", TaskDefinition("x", after, deps=("up",)))
        assert s.task("x").state is S.PENDING  # waits for its new dependency now
        assert s.task("x").deps == ("up",)
        assert s.task("up").dependents == ("x",)
        assert s.task("x").dependents == ("down",)
        assert s.upcoming() == []  # its old timer is gone
        s.start()
        assert s.wait(5)
        assert s.task("down").state is S.SUCCEEDED
    finally:
        s.shutdown(wait=True)


def test_refused_updates_change_nothing(failed_chain):
    s = failed_chain
    before = (s.tasks(), s.definition("a"), len(s.events))
    with pytest.raises(CycleError):
        s.update("a", TaskDefinition("a", good, deps=("c",)))
    with pytest.raises(CycleError):
        s.update("a", TaskDefinition("a", good, deps=("a",)))
    with pytest.raises(KeyError, match="nope"):
        s.update("a", TaskDefinition("a", good, deps=("nope",)))
    with pytest.raises(InvalidArgument) as refused:
        s.update("a", TaskDefinition("a", good, timeout=-1))
    assert refused.value.field == "timeout"
    with pytest.raises(InvalidArgument) as refused:
        s.update("a", TaskDefinition("other", good))
    assert refused.value.field == "name"
    with pytest.raises(TypeError):
        s.update("a", "not a definition")
    with pytest.raises(KeyError, match="ghost"):
        s.update("ghost", TaskDefinition("ghost", good))
    assert (s.tasks(), s.definition("a"), len(s.events)) == before


def test_update_refuses_a_running_task_and_changes_nothing():
    import threading

    release, started = threading.Event(), threading.Event()

    def slow():
        started.set()
        release.wait(5)

    s = Scheduler(workers=1)
    try:
        s.add(slow, name="slow")
        s.start()
        assert started.wait(5)
        with pytest.raises(ValueError, match="'slow' is RUNNING"):
            s.update("slow", TaskDefinition("slow", good))
        assert s.definition("slow").action is slow
        release.set()
        assert s.wait(5)
    finally:
        release.set()
        s.shutdown(wait=True)


def test_update_is_stored_and_the_edited_event_journaled(tmp_path):
    path = tmp_path / "run.db"
    store = SQLiteStore(path)
    s = Scheduler(workers=1, clock=ManualClock(), executor=SyncExecutor(), store=store)
    s.add("tests.engine.test_update:bad", name="a")
    s.start()
    assert s.wait(5)
    s.update("a", TaskDefinition("a", "tests.engine.test_update:good"))
    s.shutdown(wait=True)
    store.close()
    store = SQLiteStore(path)
    try:
        again = Scheduler(workers=1, clock=ManualClock(), executor=SyncExecutor(), store=store)
        assert again.definition("a").action.ref == "tests.engine.test_update:good"
        assert again.task("a").state is S.FAILED
        assert again.task("a").attempt == 1
        again.shutdown(wait=True)
    finally:
        store.close()


def test_update_between_one_shot_and_recurring_keeps_wait_counting_right():
    clock = ManualClock()
    s = Scheduler(workers=1, clock=clock, executor=SyncExecutor())
    try:
        s.schedule_after(after, 60, name="x")
        s.add(after, name="down", deps=["x"])
        s.update("x", TaskDefinition("x", after, every=10.0))
        assert s.task("x").recurring and s.task("x").state is S.SCHEDULED
        s.start()
        assert s.wait(0)  # recurring x and its downstream are not waited for
        clock.advance(10)
        assert s.task("down").state is S.SUCCEEDED
        s.update("x", TaskDefinition("x", after, after=5.0))
        assert not s.task("x").recurring and s.task("x").state is S.SCHEDULED
        assert not s.wait(0)  # a one-shot again: waited for
        clock.advance(5)
        assert s.wait(1)
    finally:
        s.shutdown(wait=True)


def test_restore_puts_a_removed_task_back_as_it_was_with_its_edges_and_runs_nothing(tmp_path):
    from taskloom.engine import ManualClock, Scheduler, SyncExecutor, TaskState

    ran = []
    store = SQLiteStore(str(tmp_path / "run.db"))
    scheduler = Scheduler(clock=ManualClock(), executor=SyncExecutor(), store=store)
    try:
        scheduler.add("os:getcwd", name="a")
        scheduler.add("os:getcwd", name="b", deps=["a"])
        scheduler.add("os:getcwd", name="c", deps=["b"])
        scheduler.subscribe(lambda e: ran.append(e.task_id) if e.kind == "running" else None)
        scheduler.start()
        assert scheduler.wait(5)
        assert ran == ["a", "b", "c"]
        ran.clear()
        assert scheduler.remove("b")
        assert scheduler.task("c").deps == ()
        assert scheduler.restore("b") == []
        b = scheduler.task("b")
        assert b.state is TaskState.SUCCEEDED and b.deps == ("a",) and b.dependents == ("c",)
        assert scheduler.task("c").deps == ("b",)
        assert len(scheduler.attempts("b")) == 1 and ran == []
        with pytest.raises(KeyError):
            scheduler.restore("b")  # once
        store.flush()
        rows = {r["id"]: r for r in store.load_tasks()}
        assert rows["b"]["state"] == "succeeded" and rows["b"]["attempt"] == 1
    finally:
        scheduler.shutdown()
        store.close()

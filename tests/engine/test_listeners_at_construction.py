"""Scheduler(listeners=...): subscribed before a store is restored, so they hear it."""

from __future__ import annotations

import pytest

from taskloom.engine import ManualClock, Scheduler, SyncExecutor, TaskState
from taskloom.engine.store import SQLiteStore

S = TaskState


def stored_run(path):
    """A run left behind: one task succeeded, one waits for it (then it was stopped)."""
    store = SQLiteStore(path)
    s = Scheduler(workers=1, clock=ManualClock(), executor=SyncExecutor(), store=store)
    s.add("os:getcwd", name="done")
    s.schedule_after("os:getcwd", 3600, name="later")
    s.start()
    assert s.wait(0) is False
    s.shutdown(wait=True)
    last = store.max_seq()
    store.close()
    return last


def test_listeners_hear_one_restored_event_per_task_then_what_follows(tmp_path):
    path = tmp_path / "run.db"
    last = stored_run(path)
    heard = []
    store = SQLiteStore(path)
    s = Scheduler(
        workers=1,
        clock=ManualClock(),
        executor=SyncExecutor(),
        store=store,
        listeners=[heard.append],
    )
    try:
        assert [(e.seq, e.kind, e.task_id, e.state) for e in heard] == [
            (last + 1, "restored", "done", S.SUCCEEDED),
            (last + 2, "restored", "later", S.SCHEDULED),
        ]
        assert s.snapshot()[0] == last + 2
        s.unsubscribe(heard.append)
        s.run_now("later")
        s.start()
        assert len(heard) == 2  # unsubscribed: nothing more
    finally:
        s.shutdown(wait=True)
        store.close()


def test_without_listeners_a_restore_emits_nothing(tmp_path):
    path = tmp_path / "run.db"
    last = stored_run(path)
    store = SQLiteStore(path)
    s = Scheduler(workers=1, clock=ManualClock(), executor=SyncExecutor(), store=store)
    try:
        assert s.snapshot()[0] == last  # numbering goes on from the store's, nothing used
    finally:
        s.shutdown(wait=True)
        store.close()


def test_a_listener_must_be_callable():
    with pytest.raises(TypeError, match="listener must be callable"):
        Scheduler(workers=1, listeners=["not callable"])

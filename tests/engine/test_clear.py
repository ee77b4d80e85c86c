"""Scheduler.clear: run settled tasks again within the run (Airflow's "Clear")."""

from __future__ import annotations

import pytest

from taskloom.engine import ManualClock, Scheduler, SyncExecutor, TaskState

S = TaskState
calls: list[str] = []


def make(name):
    def run():
        calls.append(name)

    return run


@pytest.fixture
def chain():
    calls.clear()
    scheduler = Scheduler(workers=1, clock=ManualClock(), executor=SyncExecutor())
    scheduler.add(make("a"), name="a")
    scheduler.add(make("b"), name="b", deps=["a"])
    scheduler.add(make("c"), name="c", deps=["b"])
    scheduler.start()
    assert scheduler.wait(5)
    yield scheduler
    scheduler.shutdown(wait=True)


def test_clear_one_task_runs_it_again_and_leaves_downstream(chain):
    assert calls == ["a", "b", "c"]
    assert chain.clear("b") == ["b"]
    assert chain.wait(5)
    assert calls == ["a", "b", "c", "b"]
    assert chain.task("c").state is S.SUCCEEDED
    assert [a.number for a in chain.attempts("b")] == [1, 2]


def test_clear_with_downstream_runs_them_again_in_order(chain):
    assert chain.clear("a", downstream=True) == ["a", "b", "c"]
    assert chain.wait(5)
    assert calls == ["a", "b", "c", "a", "b", "c"]


def test_clear_refuses_an_unsettled_task_and_changes_nothing():
    scheduler = Scheduler(workers=1, clock=ManualClock(), executor=SyncExecutor())
    try:
        scheduler.add(make("done"), name="done")
        scheduler.schedule_after(make("x"), 60, name="x")
        scheduler.start()
        assert scheduler.task("done").state is S.SUCCEEDED
        with pytest.raises(ValueError, match="'x' is SCHEDULED"):
            scheduler.clear(["done", "x"])
        assert scheduler.task("done").state is S.SUCCEEDED  # refused: nothing changed
        with pytest.raises(KeyError):
            scheduler.clear("nope")
    finally:
        scheduler.shutdown(wait=True)

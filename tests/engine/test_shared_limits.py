"""Shared limits (``[pools]`` in a workflow): at most N runs of a pool's tasks at once,
beside ``workers``; priority decides who goes first; the wait is visible."""

from __future__ import annotations

import threading

import pytest

from taskloom.engine import InvalidArgument, TaskState

S = TaskState


def test_a_pool_of_one_runs_its_tasks_one_at_a_time_best_first(make_sched, runs):
    s = make_sched(start=False, workers=4, pools={"gpu": 1})
    s.add(runs.fn("a"), name="a", pool="gpu", priority=0)
    s.add(runs.fn("b"), name="b", pool="gpu", priority=5)
    s.add(runs.fn("c"), name="c", pool="gpu", priority=1)
    s.add(runs.fn("free"), name="free", priority=-1)
    s.start()
    assert [n for n in runs.order if n != "free"] == ["b", "c", "a"]
    assert runs.order.index("free") < 3  # not held up by the pool: only workers limit it
    assert s.pool_usage() == {"gpu": (0, 1, [])}
    s.shutdown()


def test_waiting_for_a_slot_is_visible_and_a_freed_slot_goes_to_the_best(make_sched, runs):
    s = make_sched(start=False, workers=4, pools={"db": 2})
    seen = {}

    def look(name):
        def body():
            seen[name] = (s.pool_usage(), s.pool_wait("c"), s.busy, s.task("c").state)

        return body

    for name, priority in (("a", 9), ("b", 8), ("c", 1), ("d", 3)):
        s.add(runs.fn(name, look(name)), name=name, pool="db", priority=priority)
    s.start()  # SyncExecutor: a and b take both slots, c and d wait, each runs inline
    assert seen["a"] == (
        {"db": (2, 2, ["d", "c"])},
        "waiting for pool db: 2 of 2 busy",
        2,  # two of four workers idle: the pool, not workers, holds c and d
        S.READY,
    )
    assert runs.order == ["a", "b", "d", "c"]  # a's slot went to d, the better one
    assert seen["c"][1] is None  # running, not waiting
    assert s.pool_usage() == {"db": (0, 2, [])}
    s.shutdown()


def test_a_running_pool_holds_its_slot_on_a_worker_thread(make_sched, runs):
    s = make_sched(threads=True, workers=3, pools={"db": 1})
    gate, started = threading.Event(), threading.Event()

    def block():
        started.set()
        assert gate.wait(10)

    try:
        s.add(runs.fn("hold", block), name="hold", pool="db")
        assert started.wait(10)
        assert s.pool_usage() == {"db": (1, 1, [])}
        assert s.pool_wait("hold") is None
        gate.set()
        assert s.wait(10)
        assert s.pool_usage() == {"db": (0, 1, [])}
    finally:
        gate.set()
        s.shutdown()


def test_a_cancelled_or_paused_task_leaves_the_pool_queue(make_sched, runs):
    s = make_sched(start=False, workers=4, pools={"one": 1})
    seen = []

    def hold():
        seen.append(s.pool_usage()["one"])
        assert s.cancel("x")
        s.pause("y")
        seen.append(s.pool_usage()["one"])
        seen.append((s.task("x").state, s.pool_wait("y")))

    s.add(runs.fn("hold", hold), name="hold", pool="one", priority=5)
    s.add(runs.fn("x"), name="x", pool="one")
    s.add(runs.fn("y"), name="y", pool="one", priority=-1)
    s.start()
    assert seen == [(1, 1, ["x", "y"]), (1, 1, []), (S.CANCELLED, None)]
    assert runs.order == ["hold"]
    s.resume("y")
    assert runs.order == ["hold", "y"]
    s.shutdown()


def test_pool_and_jitter_are_part_of_the_definition(make_sched, runs):
    from taskloom.engine import TaskDefinition

    s = make_sched(start=False, pools={"db": 3})
    s.schedule_every("json:dumps", 60.0, name="tick", pool="db", jitter=5.0)
    d = s.definition("tick")
    assert (d.pool, d.jitter) == ("db", 5.0)
    assert TaskDefinition.from_row("tick", d.to_row()) == d
    s.add("json:dumps", name="once", pool="db")
    assert s.definition("once").pool == "db"
    s.shutdown()


def test_an_unknown_pool_or_a_bad_limit_is_refused(make_sched):
    s = make_sched(start=False, pools={"db": 3})
    with pytest.raises(
        InvalidArgument, match=r"pool must be one of the scheduler's pools \(db\), got 'gpu'"
    ) as err:
        s.add("json:dumps", name="x", pool="gpu")
    assert err.value.field == "pool"
    assert [t.id for t in s.tasks()] == []
    s.shutdown()
    for bad in ({"db": 0}, {"db": True}, {"": 1}, {"db": "3"}):
        with pytest.raises(InvalidArgument) as err:
            make_sched(start=False, pools=bad)
        assert err.value.field == "pools"


def test_a_forecast_simulates_the_pools_and_ignores_pools_it_is_not_told(make_sched):
    from dataclasses import replace

    from taskloom.engine.forecast import Plan, forecast

    s = make_sched(start=False, pools={"one": 1})
    for name in ("a", "b"):
        s.schedule_after("json:dumps", 60.0, name=name, pool="one")
    plan = Plan.from_scheduler(s, expected={"a": 600.0, "b": 600.0})
    assert plan.pools == {"one": 1}
    limited = forecast(plan, horizon=3600.0)
    assert sorted(r.start for r in limited.runs) == [60.0, 660.0]
    assert [c.kind for c in limited.collisions] == ["pool"]
    free = forecast(replace(plan, pools={}), horizon=3600.0)  # a watched run tells none
    assert sorted(r.start for r in free.runs) == [60.0, 60.0]
    s.shutdown()

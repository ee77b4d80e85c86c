"""Which due task runs first: priority, then due time, then scheduling order."""

from __future__ import annotations

import threading

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from taskloom.engine import TaskState


def test_higher_priority_runs_first(sched, clock, runs):
    for name, priority in [("low", 0), ("high", 5), ("mid", 2), ("negative", -3)]:
        sched.schedule(runs.fn(name), run_at=1.0, name=name, priority=priority)
    clock.advance(1.0)
    assert runs.order == ["high", "mid", "low", "negative"]


def test_equal_priority_runs_earliest_due_first(sched, clock, runs):
    for name, run_at in [("third", 3.0), ("first", 1.0), ("second", 2.0)]:
        sched.schedule(runs.fn(name), run_at=run_at, name=name)
    clock.advance(10.0)  # all three are due at once
    assert runs.order == ["first", "second", "third"]


def test_equal_priority_and_due_time_run_in_scheduling_order(sched, clock, runs):
    names = ["zulu", "alpha", "mike", "bravo", "yankee"]  # not sorted: ids must not decide
    for name in names:
        sched.schedule(runs.fn(name), run_at=1.0, name=name)
    clock.advance(1.0)
    assert runs.order == names


def test_due_tasks_present_at_start_run_in_priority_order(unstarted, runs):
    for name, priority in [("a", 1), ("b", 3), ("c", 2)]:
        unstarted.schedule(runs.fn(name), name=name, priority=priority)
    assert runs.order == []  # nothing runs before start()
    unstarted.start()
    assert runs.order == ["b", "c", "a"]


def test_earlier_low_priority_task_does_not_jump_a_due_high_priority_one(sched, clock, runs):
    sched.schedule(runs.fn("low"), run_at=1.0 - 1e-6, name="low", priority=0)
    sched.schedule(runs.fn("high"), run_at=1.0, name="high", priority=10)
    clock.advance(1.0)
    assert runs.order == ["high", "low"]


def test_not_yet_due_high_priority_task_never_delays_a_due_one(sched, clock, runs):
    sched.schedule(runs.fn("later"), run_at=5.0, name="later", priority=100)
    sched.schedule(runs.fn("now"), run_at=1.0, name="now", priority=0)
    clock.advance(1.0)
    assert runs.order == ["now"]
    assert sched.task("later").state is TaskState.SCHEDULED
    clock.advance(4.0)
    assert runs.order == ["now", "later"]


@pytest.mark.timeout(30)
def test_ready_tasks_are_ordered_by_priority_when_the_only_worker_frees_up(
    make_sched, runs, recorder
):
    s = make_sched(threads=True, workers=1)
    rec = recorder(s)
    release = threading.Event()
    s.schedule(runs.fn("blocker", lambda: release.wait(10)), name="blocker")
    rec.wait_kind("blocker", "running")
    for name, priority in [("p1", 1), ("p9", 9), ("p5", 5), ("p9b", 9)]:
        s.schedule(runs.fn(name), name=name, priority=priority)
    assert {s.task(n).state for n in ("p1", "p9", "p5", "p9b")} == {TaskState.READY}
    release.set()
    assert s.wait(timeout=10)
    assert runs.order == ["blocker", "p9", "p9b", "p5", "p1"]


@pytest.mark.timeout(30)
def test_a_due_task_runs_while_others_wait_on_the_timer_heap(make_sched, runs, recorder):
    s = make_sched(threads=True, workers=1)
    rec = recorder(s)
    for i in range(50):
        s.schedule(runs.fn(f"future{i}"), run_at=1000.0 + i, name=f"future{i}", priority=50)
    s.schedule(runs.fn("due"), name="due")
    rec.wait_kind("due", "succeeded")
    assert runs.order == ["due"]


def test_upcoming_lists_timers_earliest_first_up_to_the_limit(sched, runs):
    for name, run_at, priority in [("c", 3.0, 0), ("a", 1.0, 0), ("d", 4.0, 9), ("b", 2.0, 1)]:
        sched.schedule(runs.fn(name), run_at=run_at, name=name, priority=priority)
    entries = sched.upcoming()
    assert [e.task_id for e in entries] == ["a", "b", "c", "d"]
    assert [(e.run_at, e.priority, e.kind) for e in entries[:2]] == [
        (1.0, 0, "scheduled"),
        (2.0, 1, "scheduled"),
    ]
    assert [e.task_id for e in sched.upcoming(limit=2)] == ["a", "b"]


@settings(max_examples=60, deadline=None)
@given(
    tasks=st.lists(
        st.tuples(st.integers(-2, 2), st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, 3.0])),
        min_size=1,
        max_size=25,
    ),
    steps=st.lists(st.sampled_from([0.25, 0.5, 1.0, 2.0]), min_size=1, max_size=6),
)
def test_each_advance_runs_exactly_the_due_tasks_in_rule_order(tasks, steps):
    from taskloom.engine import ManualClock, Scheduler, SyncExecutor

    clock = ManualClock()
    with Scheduler(clock=clock, executor=SyncExecutor()) as s:
        order: list[str] = []
        for i, (priority, run_at) in enumerate(tasks):
            s.schedule(lambda i=i: order.append(f"t{i}"), run_at=run_at, name=f"t{i}",
                       priority=priority)  # fmt: skip
        ran_before: set[str] = set()
        started = len(order)
        # tasks due at 0 ran on schedule(); check them like any other batch
        batches = [(0.0, order[:started])]
        for step in steps:
            clock.advance(step)
            batches.append((clock.now(), order[started:]))
            started = len(order)
        for now, batch in batches:
            due = [f"t{i}" for i, (_, run_at) in enumerate(tasks) if run_at <= now]
            expected_set = set(due) - ran_before
            assert set(batch) == expected_set
            if now > 0.0:  # one advance made them all due at once: the rules decide
                key = {f"t{i}": (-p, run_at, i) for i, (p, run_at) in enumerate(tasks)}
                assert batch == sorted(batch, key=key.__getitem__)
            ran_before |= set(batch)
        assert len(order) == len(set(order))

"""Events: one per change of state, numbered without gaps, listeners by kind."""

from __future__ import annotations

import re

import pytest

from taskloom.engine import Attempt, Event, RetryPolicy, TaskState

S = TaskState
STATE_KINDS = {state.value for state in TaskState}
OTHER_KINDS = {"dependency_added", "dependency_removed", "paused", "resumed", "removed"}


def _busy_history(s, clock, build):
    """Drive a bit of everything: graph, failure, retry, cancel, recurring, edits."""
    g = build(
        s,
        {"a": [], "b": ["a"], "c": ["b"], "flaky": [], "later": []},
        fail={"flaky", "b"},
        retry={"flaky": RetryPolicy(max_attempts=2, jitter=0)},
        run_at={"later": 3.0},
    )
    s.schedule_every(g.runs.fn("tick"), 2.0, name="tick")
    s.schedule(g.runs.fn("d"), name="d", run_at=50.0)
    s.add_dependency("d", "later")
    s.remove_dependency("d", "later")
    s.pause("d")
    s.resume("d")
    s.cancel("d")
    clock.advance(5.0)
    return g


def test_seq_grows_by_one_per_event_and_matches_snapshot(sched, clock, build, recorder):
    rec = recorder(sched)
    _busy_history(sched, clock, build)
    seqs = [e.seq for e in rec.events]
    assert len(seqs) > 20
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    assert sched.snapshot()[0] == seqs[-1]


def test_every_event_kind_is_documented_and_state_kinds_match_state(sched, clock, build, recorder):
    rec = recorder(sched)
    _busy_history(sched, clock, build)
    kinds = {e.kind for e in rec.events}
    assert kinds <= STATE_KINDS | OTHER_KINDS
    assert {"dependency_added", "dependency_removed", "paused", "resumed"} <= kinds
    for e in rec.events:
        assert isinstance(e, Event)
        if e.kind in STATE_KINDS:
            assert e.state.value == e.kind, e


def test_last_event_of_each_task_matches_its_state(sched, clock, build, recorder):
    rec = recorder(sched)
    _busy_history(sched, clock, build)
    for info in sched.tasks():
        assert rec.of(info.id)[-1].state is info.state, info.id


@pytest.mark.parametrize(
    "kwargs, first_kind",
    [
        ({}, {"ready", "scheduled"}),
        ({"run_at": 5.0}, {"scheduled"}),
        ({"deps": ("up",)}, {"pending"}),
    ],
)
def test_creating_a_task_emits_exactly_one_event(unstarted, runs, recorder, kwargs, first_kind):
    unstarted.schedule(runs.fn("up"), name="up", run_at=100.0)
    rec = recorder(unstarted)
    unstarted.schedule(runs.fn("new"), name="new", **kwargs)
    assert len(rec.events) == 1
    assert rec.events[0].task_id == "new"
    assert rec.events[0].kind in first_kind


def test_one_shot_lifecycle_events(sched, clock, runs, recorder):
    rec = recorder(sched)
    sched.schedule(runs.fn("job"), run_at=1.0, name="job")
    clock.advance(1.0)
    assert rec.kinds("job") == ["scheduled", "ready", "running", "succeeded"]
    assert [e.attempt for e in rec.of("job")][-1] == 1
    assert rec.of("job")[0].run_at == 1.0


def test_error_is_type_colon_message(sched, recorder):
    rec = recorder(sched)

    def broken():
        raise ValueError("bad input 42")

    sched.schedule(broken, name="broken")
    failed = rec.of("broken")[-1]
    assert (failed.kind, failed.error) == ("failed", "ValueError: bad input 42")
    assert sched.task("broken").error == "ValueError: bad input 42"
    attempt = sched.attempts("broken")[-1]
    assert attempt.error == "ValueError: bad input 42"
    assert "bad input 42" in attempt.traceback


def test_on_delivers_only_its_kind_and_unsubscribes(sched, build):
    got = []
    unsubscribe = sched.on("succeeded", got.append)
    build(sched, {"a": [], "b": ["a"], "bad": []}, fail={"bad"})
    assert [e.task_id for e in got] == ["a", "b"]
    assert {e.kind for e in got} == {"succeeded"}
    unsubscribe()
    sched.schedule(print, name="after")
    assert len(got) == 2


def test_subscribe_unsubscribe_stops_delivery(sched):
    got = []
    unsubscribe = sched.subscribe(got.append)
    sched.schedule(print, name="one", run_at=5.0)
    assert len(got) == 1
    unsubscribe()
    sched.schedule(print, name="two", run_at=5.0)
    assert len(got) == 1


@pytest.mark.parametrize("kind", ["bogus", "SUCCEEDED", "done", ""])
def test_on_with_unknown_kind_raises_value_error(sched, kind):
    with pytest.raises(ValueError, match=re.escape(kind) if kind else None):
        sched.on(kind, print)


def test_events_after_snapshot_have_larger_seq(sched, clock, runs, recorder):
    sched.schedule(runs.fn("a"), run_at=1.0, name="a")
    seq, tasks, upcoming = sched.snapshot()
    assert [t.id for t in tasks] == ["a"]
    assert [e.task_id for e in upcoming] == ["a"]
    rec = recorder(sched)
    clock.advance(1.0)
    assert rec.events and all(e.seq > seq for e in rec.events)


def test_engine_records_have_every_field(sched, clock, build, recorder):
    """The hot path builds Event and Attempt with tuple.__new__, which fills in no
    defaults: a field added to either must be added there too."""
    rec = recorder(sched)
    _busy_history(sched, clock, build)
    assert rec.events and all(len(e) == len(Event._fields) for e in rec.events)
    attempts = [a for info in sched.tasks() for a in sched.attempts(info.id)]
    assert attempts and all(len(a) == len(Attempt._fields) for a in attempts)
    assert all(a.task_id is None and a.run is None for a in attempts)

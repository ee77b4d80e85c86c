"""The engine answers "why not" for every action (``Action.CLEAR`` too), in the words a
window shows, and ``clear_plan`` is exactly what ``clear`` then does."""

from __future__ import annotations

import pytest

from taskloom.engine import Action, TaskState

A, S = Action, TaskState


def test_why_not_is_none_exactly_for_the_allowed_actions(sched, build):
    g = build(sched, {"up": [], "down": ["up"], "side": []}, fail={"up"})
    sched.schedule(lambda: None, run_at=10.0, name="later")
    sched.schedule_every(lambda: None, 60.0, name="every")
    assert g.state("down") is S.SKIPPED
    for info in sched.tasks():
        allowed = sched.allowed_actions(info.id)
        for action in Action:
            why = sched.why_not(info.id, action)
            assert (why is None) is (action in allowed), (info.id, action, why)
            if why is not None:
                assert info.id in why  # it names the task


def test_the_reasons_are_the_ones_the_window_shows(sched, build):
    build(sched, {"up": [], "down": ["up"], "ok": []}, fail={"up"})
    sched.schedule(lambda: None, run_at=10.0, name="later")
    sched.schedule_every(lambda: None, 60.0, name="every")
    assert sched.why_not("down", A.RETRY) == (
        "down was skipped because an upstream task failed: retry that one"
    )
    assert sched.why_not("later", A.RETRY) == (
        "later is scheduled: only a failed, skipped or cancelled task can be retried"
    )
    assert sched.why_not("ok", A.RUN_NOW) == (
        "ok is succeeded: nothing waits for a time that Run now could bring forward"
    )
    assert (
        sched.why_not("later", A.CLEAR) == "later is scheduled: only a finished task can run again"
    )
    assert sched.why_not("every", A.CLEAR) == "every is recurring: use Run now for an extra run"
    assert sched.why_not("ok", A.CANCEL) == (
        "ok is succeeded: only a task that has not finished can be cancelled"
    )
    assert sched.why_not("ok", A.CLEAR) is None and A.CLEAR in sched.allowed_actions("ok")


def test_clear_plan_is_what_clear_then_does(sched, build):
    g = build(sched, {"a": [], "b": ["a"], "c": ["b"], "d": []}, fail={"c"})
    assert g.state("c") is S.FAILED
    assert sched.clear_plan("a") == ["a"]
    plan = sched.clear_plan(["a"], downstream=True)
    assert plan == ["a", "b", "c"]
    assert [t.state for t in sched.tasks()] == [S.SUCCEEDED, S.SUCCEEDED, S.FAILED, S.SUCCEEDED]
    assert sched.clear(["a"], downstream=True) == plan


def test_clear_plan_refuses_what_clear_refuses(sched):
    sched.schedule(lambda: None, run_at=10.0, name="later")
    with pytest.raises(ValueError, match="only a settled one-shot task"):
        sched.clear_plan("later")
    with pytest.raises(KeyError):
        sched.clear_plan("nope")

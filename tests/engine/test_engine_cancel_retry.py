"""cancel() and the manual retry(): what they return and what they change."""

from __future__ import annotations

import threading

import pytest

from taskloom.engine import RetryPolicy, TaskState, current_run

S = TaskState


# --- cancel ------------------------------------------------------------------------


def test_cancel_scheduled_task_never_runs_and_leaves_no_heap_entry(sched, clock, runs):
    sched.schedule(runs.fn("job"), run_at=10.0, name="job")
    assert [e.task_id for e in sched.upcoming()] == ["job"]
    assert sched.cancel("job") is True
    assert sched.task("job").state is S.CANCELLED
    assert sched.upcoming() == []
    clock.advance(20.0)
    assert runs.order == []


def test_cancel_pending_task_never_runs_even_when_its_deps_succeed(sched, clock, build):
    g = build(sched, {"up": [], "down": ["up"]}, run_at={"up": 5.0})
    assert sched.cancel("down") is True
    clock.advance(5.0)
    assert g.ran == ["up"]
    assert g.state("down") is S.CANCELLED


def test_cancel_retry_wait_task_stops_its_retries(sched, clock, runs):
    runs.fail.add("flaky")
    sched.schedule(runs.fn("flaky"), name="flaky", retry=RetryPolicy(max_attempts=3, jitter=0))
    assert sched.task("flaky").state is S.RETRY_WAIT
    assert sched.cancel("flaky") is True
    assert sched.upcoming() == []
    clock.advance(100.0)
    assert runs.count("flaky") == 1
    assert sched.task("flaky").state is S.CANCELLED


@pytest.mark.timeout(30)
def test_cancel_ready_task_never_runs(make_sched, runs, recorder):
    s = make_sched(threads=True, workers=1)
    rec = recorder(s)
    release = threading.Event()
    s.schedule(runs.fn("blocker", lambda: release.wait(10)), name="blocker")
    rec.wait_kind("blocker", "running")
    s.schedule(runs.fn("queued"), name="queued")
    assert s.task("queued").state is S.READY
    assert s.cancel("queued") is True
    release.set()
    assert s.wait(timeout=10)
    assert runs.order == ["blocker"]
    assert s.task("queued").state is S.CANCELLED
    assert s.upcoming() == []


@pytest.mark.timeout(30)
@pytest.mark.parametrize("outcome", ["returns", "raises"])
def test_cancel_running_task_is_cooperative_and_final(make_sched, runs, recorder, outcome):
    s = make_sched(threads=True, workers=2)
    rec = recorder(s)
    seen = []

    def body():
        run = current_run()
        seen.append(run.wait_cancelled(10) and run.cancelled)  # the task sees the request
        if outcome == "raises":
            raise RuntimeError("stopping")

    policy = RetryPolicy(max_attempts=3, base=0.0, jitter=0.0)
    s.schedule(runs.fn("job", body), name="job", retry=policy)
    s.add(runs.fn("after"), name="after", deps=("job",))
    rec.wait_kind("job", "running")
    assert s.cancel("job") is True
    assert s.wait(timeout=10)
    assert seen == [True]
    assert s.task("job").state is S.CANCELLED
    assert s.task("after").state is S.SKIPPED
    assert runs.order == ["job"]  # no retry, nothing downstream
    assert "succeeded" not in rec.kinds("job") and "retry_wait" not in rec.kinds("job")


def test_cancel_of_unknown_id_raises_key_error(sched):
    with pytest.raises(KeyError, match="ghost"):
        sched.cancel("ghost")


@pytest.mark.parametrize("settled", ["succeeded", "failed", "cancelled", "skipped"])
def test_cancel_of_a_settled_task_returns_false(sched, build, settled):
    g = build(
        sched,
        {"succeeded": [], "failed": [], "cancelled": [], "skipped": ["failed"]},
        fail={"failed"},
        run_at={"cancelled": 5.0},
    )
    sched.cancel("cancelled")
    before = sched.snapshot()
    assert sched.cancel(settled) is False
    assert sched.snapshot() == before
    assert g.state(settled) is S[settled.upper()]


# --- manual retry ------------------------------------------------------------------------


def test_retry_of_failed_task_runs_again_with_a_fresh_budget(sched, clock, runs):
    runs.fail.add("flaky")
    policy = RetryPolicy(max_attempts=2, base=1.0, jitter=0.0)
    sched.schedule(runs.fn("flaky"), name="flaky", retry=policy)
    clock.advance(1.0)
    assert sched.task("flaky").state is S.FAILED
    assert sched.retry("flaky") is True
    assert runs.attempts("flaky") == [1, 2, 3]  # ran at once; attempt keeps counting
    assert sched.task("flaky").state is S.RETRY_WAIT  # budget afresh: one more to go
    clock.advance(1.0)
    info = sched.task("flaky")
    assert (info.state, info.attempt) == (S.FAILED, 4)
    assert runs.attempts("flaky") == [1, 2, 3, 4]


def test_retry_rearms_skipped_downstream_and_does_not_rerun_successes(sched, build):
    g = build(
        sched,
        {"root": [], "mid": ["root"], "leaf": ["mid"], "tail": ["leaf"], "sibling": ["root"]},
        fail={"mid"},
    )
    assert g.states() == {
        "root": S.SUCCEEDED,
        "mid": S.FAILED,
        "leaf": S.SKIPPED,
        "tail": S.SKIPPED,
        "sibling": S.SUCCEEDED,
    }
    g.fail.clear()
    assert sched.retry("mid") is True
    assert set(g.states().values()) == {S.SUCCEEDED}
    assert g.runs.count("root") == 1 and g.runs.count("sibling") == 1
    assert g.ran[-3:] == ["mid", "leaf", "tail"]


def test_retry_of_cancelled_task_ignores_its_old_run_at(sched, clock, build):
    g = build(sched, {"job": [], "after": ["job"]}, run_at={"job": 50.0})
    sched.cancel("job")
    assert g.state("after") is S.SKIPPED
    assert sched.retry("job") is True
    assert g.ran == ["job", "after"]
    assert clock.now() == 0.0


def test_retry_of_skipped_task_waits_while_its_upstream_is_still_failed(sched, build):
    g = build(sched, {"up": [], "down": ["up"]}, fail={"up"})
    assert sched.retry("down") is True
    assert g.runs.count("down") == 0
    assert g.state("down") in (S.PENDING, S.SKIPPED)
    g.fail.clear()
    sched.retry("up")
    assert g.ran == ["up", "up", "down"]
    assert g.state("down") is S.SUCCEEDED


def test_retry_of_unknown_id_raises_key_error(sched):
    with pytest.raises(KeyError, match="ghost"):
        sched.retry("ghost")


@pytest.mark.parametrize("name", ["done", "later", "waiting"])
def test_retry_of_a_task_that_did_not_fail_returns_false(sched, build, name):
    build(sched, {"done": [], "later": [], "waiting": ["later"]}, run_at={"later": 5.0})
    before = sched.snapshot()
    assert sched.retry(name) is False
    assert sched.snapshot() == before


# --- pause / resume / run_now / remove -----------------------------------------------------


def test_pause_one_task_holds_it_back_until_resumed(sched, clock, runs, recorder):
    rec = recorder(sched)
    sched.schedule(runs.fn("held"), run_at=1.0, name="held")
    sched.schedule(runs.fn("free"), run_at=1.0, name="free")
    sched.pause("held")
    assert sched.task("held").paused is True
    assert "paused" in rec.kinds("held")
    clock.advance(2.0)
    assert runs.order == ["free"]
    sched.resume("held")
    clock.advance(0.0)
    assert runs.order == ["free", "held"]
    assert sched.task("held").paused is False
    assert "resumed" in rec.kinds("held")


def test_pause_all_stops_dispatch_until_resumed(sched, clock, runs):
    sched.schedule(runs.fn("low"), run_at=1.0, name="low", priority=1)
    sched.schedule(runs.fn("high"), run_at=1.0, name="high", priority=2)
    sched.pause()
    clock.advance(2.0)
    assert runs.order == []
    sched.schedule(runs.fn("new"), name="new")
    assert runs.order == []
    sched.resume()
    clock.advance(0.0)
    assert runs.order == ["high", "low", "new"]


def test_run_now_runs_a_not_yet_due_task(sched, runs):
    sched.schedule(runs.fn("later"), run_at=100.0, name="later")
    assert sched.run_now("later") is True
    assert runs.order == ["later"]
    assert sched.task("later").state is S.SUCCEEDED
    assert sched.upcoming() == []


def test_remove_takes_a_task_out_of_the_engine(sched, runs, recorder):
    rec = recorder(sched)
    sched.schedule(runs.fn("gone"), run_at=10.0, name="gone")
    assert sched.remove("gone") is True
    assert "removed" in rec.kinds("gone")
    assert [t.id for t in sched.tasks()] == []
    assert sched.upcoming() == []
    with pytest.raises(KeyError):
        sched.task("gone")


def test_cancel_of_a_paused_task(sched, clock, runs):
    sched.schedule(runs.fn("held"), run_at=1.0, name="held")
    sched.pause("held")
    assert sched.cancel("held") is True
    sched.resume("held")
    clock.advance(5.0)
    assert runs.order == []
    assert sched.task("held").state is S.CANCELLED


def test_retry_of_a_task_waiting_out_its_backoff_returns_false(sched, runs):
    runs.fail.add("flaky")
    sched.schedule(runs.fn("flaky"), name="flaky", retry=RetryPolicy(max_attempts=3, jitter=0))
    before = sched.snapshot()
    assert sched.retry("flaky") is False
    assert sched.snapshot() == before


@pytest.mark.timeout(30)
def test_remove_of_a_running_task_returns_false(make_sched, runs, recorder):
    s = make_sched(threads=True, workers=1)
    rec = recorder(s)
    release = threading.Event()
    s.schedule(runs.fn("busy", lambda: release.wait(10)), name="busy")
    rec.wait_kind("busy", "running")
    try:
        assert s.remove("busy") is False
        assert s.task("busy").state is S.RUNNING
    finally:
        release.set()
    assert s.wait(timeout=10)


def test_remove_of_unknown_id_raises_key_error(sched):
    with pytest.raises(KeyError, match="ghost"):
        sched.remove("ghost")


def test_a_recurring_task_can_gain_a_dependency_after_it_ran(sched, clock, runs, recorder):
    rec = recorder(sched)
    sched.schedule_every(runs.fn("tick"), 10.0, name="tick")
    sched.schedule(runs.fn("gate"), run_at=100.0, name="gate")
    clock.advance(10.0)
    assert runs.count("tick") == 1
    sched.add_dependency("tick", "gate")
    assert sched.task("tick").deps == ("gate",)
    assert "dependency_added" in rec.kinds("tick")

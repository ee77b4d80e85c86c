"""start, wait and shutdown."""

from __future__ import annotations

import threading
import time

import pytest

from taskloom.engine import Scheduler, SystemClock, TaskState

S = TaskState


def test_nothing_runs_before_start(unstarted, clock, runs):
    unstarted.schedule(runs.fn("now"), name="now")
    unstarted.schedule(runs.fn("soon"), run_at=1.0, name="soon")
    clock.advance(5.0)
    assert runs.order == []
    unstarted.start()
    assert runs.order == ["now", "soon"]  # equal priority: earliest due first


def test_wait_starts_the_scheduler_and_returns_true_once_settled(unstarted, runs):
    unstarted.schedule(runs.fn("job"), name="job")
    assert unstarted.wait(timeout=5) is True
    assert runs.order == ["job"]


@pytest.mark.timeout(30)
def test_wait_returns_when_an_upstream_failed(build):
    with Scheduler(workers=2) as s:
        g = build(s, {"a": [], "b": ["a"], "c": ["b"], "d": []}, fail={"a"})
        assert s.wait(timeout=10) is True
        assert g.states() == {"a": S.FAILED, "b": S.SKIPPED, "c": S.SKIPPED, "d": S.SUCCEEDED}


@pytest.mark.timeout(30)
def test_wait_with_timeout_returns_false_while_work_is_pending(sched, runs):
    sched.schedule(runs.fn("later"), run_at=100.0, name="later")
    started = time.monotonic()
    assert sched.wait(timeout=0.2) is False
    assert time.monotonic() - started < 5.0


@pytest.mark.timeout(30)
def test_context_manager_starts_and_shuts_down(runs):
    with Scheduler(workers=2) as s:
        s.schedule(runs.fn("job"), name="job")
        assert s.wait(timeout=10)
    assert runs.order == ["job"]
    with pytest.raises(RuntimeError):
        s.schedule(runs.fn("late"))


@pytest.mark.timeout(30)
def test_shutdown_lets_running_tasks_finish(make_sched, runs, recorder):
    s = make_sched(threads=True, workers=2, clock=SystemClock())
    rec = recorder(s)
    finished = []

    def body():
        time.sleep(0.3)  # real work in progress when shutdown() is called
        finished.append(True)

    s.schedule(runs.fn("busy", body), name="busy")
    rec.wait_kind("busy", "running")
    s.shutdown(wait=True)
    assert finished == [True]
    assert s.task("busy").state is S.SUCCEEDED
    assert "succeeded" in rec.kinds("busy")  # events produced are delivered before return


@pytest.mark.timeout(30)
def test_nothing_runs_after_shutdown_returns(make_sched, clock, runs):
    s = make_sched(threads=True, workers=1)
    s.schedule(runs.fn("later"), run_at=5.0, name="later")
    s.shutdown(wait=True)
    clock.advance(10.0)
    assert runs.order == []


def test_nothing_runs_after_shutdown_with_the_sync_executor(sched, clock, runs):
    sched.schedule(runs.fn("later"), run_at=5.0, name="later")
    sched.shutdown()
    clock.advance(10.0)
    assert runs.order == []


def test_every_scheduling_call_after_shutdown_raises_runtime_error(sched, build):
    build(sched, {"a": [], "b": [], "c": ["a"]}, fail={"a"}, run_at={"b": 5.0})
    sched.shutdown()
    before = sched.snapshot()
    calls = {
        "schedule": lambda: sched.schedule(print),
        "schedule_after": lambda: sched.schedule_after(print, 1.0),
        "schedule_every": lambda: sched.schedule_every(print, 1.0),
        "schedule_cron": lambda: sched.schedule_cron(print, "* * * * *"),
        "add": lambda: sched.add(print, deps=("a",)),
        "add_dependency": lambda: sched.add_dependency("b", "a"),
        "remove_dependency": lambda: sched.remove_dependency("c", "a"),
        "cancel": lambda: sched.cancel("b"),
        "retry": lambda: sched.retry("a"),
        "run_now": lambda: sched.run_now("b"),
        "start": sched.start,
    }
    for name, call in calls.items():
        with pytest.raises(RuntimeError):
            call()
        assert sched.snapshot() == before, name
    assert {t.id for t in sched.tasks()} == {"a", "b", "c"}  # reading still works


def test_shutdown_twice_is_fine(sched):
    sched.shutdown()
    sched.shutdown()
    sched.shutdown(wait=False)


@pytest.mark.timeout(30)
def test_shutdown_before_start_is_fine(make_sched):
    s = make_sched(start=False, threads=True)
    s.shutdown()
    with pytest.raises(RuntimeError):
        s.start()


@pytest.mark.timeout(30)
def test_shutdown_does_not_leave_engine_threads_behind(make_sched, runs):
    before = set(threading.enumerate())
    s = make_sched(threads=True, workers=4, clock=SystemClock())
    s.schedule(runs.fn("job"), name="job")
    assert s.wait(timeout=10)
    s.shutdown(wait=True)
    leftover = [t for t in set(threading.enumerate()) - before if t.is_alive()]
    assert leftover == []


@pytest.mark.timeout(30)
@pytest.mark.parametrize("with_listener", [False, True])
def test_wait_returns_promptly_once_settled(make_sched, runs, with_listener):
    s = make_sched(threads=True, workers=2, clock=SystemClock())
    if with_listener:
        s.subscribe(lambda event: None)
    s.schedule(runs.fn("job"), name="job")
    started = time.monotonic()
    assert s.wait(timeout=20) is True
    assert time.monotonic() - started < 5.0, "wait() sat out its timeout after work settled"


@pytest.mark.timeout(30)
def test_events_of_the_last_run_are_delivered_without_further_activity(make_sched, runs, recorder):
    s = make_sched(threads=True, workers=1)
    rec = recorder(s)
    release = threading.Event()
    s.schedule(runs.fn("job", lambda: release.wait(10)), name="job")
    rec.wait_kind("job", "running")
    release.set()
    rec.wait_kind("job", "succeeded", timeout=5)


@pytest.mark.timeout(30)
def test_wait_returns_after_delivering_the_events_so_far(make_sched, runs):
    s = make_sched(threads=True, workers=4, clock=SystemClock())
    last_kind: dict[str, str] = {}
    s.subscribe(lambda event: last_kind.__setitem__(event.task_id, event.kind))
    for i in range(200):
        s.schedule(runs.fn(f"t{i}"), name=f"t{i}", deps=(f"t{i - 1}",) if i % 2 else ())
    assert s.wait(timeout=20)
    assert len(last_kind) == 200
    assert set(last_kind.values()) == {"succeeded"}


@pytest.mark.timeout(30)
def test_shutdown_without_wait_starts_nothing_new(make_sched, runs, recorder):
    s = make_sched(threads=True, workers=1)
    rec = recorder(s)
    release = threading.Event()
    s.schedule(runs.fn("blocker", lambda: release.wait(10)), name="blocker")
    rec.wait_kind("blocker", "running")
    s.schedule(runs.fn("queued"), name="queued")
    s.shutdown(wait=False)
    release.set()
    s.shutdown(wait=True)  # a second call waits for the running task
    assert runs.order == ["blocker"]
    assert s.task("blocker").state is S.SUCCEEDED

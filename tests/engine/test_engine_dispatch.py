"""The dispatcher with real threads: waking up, external executors, event order, cron."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import pytest

from taskloom.engine import ManualClock, Scheduler, SystemClock, TaskState

S = TaskState


@pytest.mark.timeout(30)
def test_an_earlier_task_wakes_the_sleeping_dispatcher(make_sched, runs, recorder):
    s = make_sched(threads=True, workers=2, clock=SystemClock())
    rec = recorder(s)
    s.schedule_after(runs.fn("far"), 3600.0, name="far")  # the dispatcher sleeps towards this
    s.schedule_after(runs.fn("soon"), 0.05, name="soon")
    rec.wait_kind("soon", "succeeded", timeout=5)
    assert runs.order == ["soon"]


@pytest.mark.timeout(30)
def test_cancelling_the_earliest_timer_lets_the_next_one_run(make_sched, runs, recorder):
    s = make_sched(threads=True, workers=2, clock=SystemClock())
    rec = recorder(s)
    s.schedule_after(runs.fn("first"), 0.2, name="first")
    s.schedule_after(runs.fn("second"), 0.3, name="second")
    assert s.cancel("first") is True
    rec.wait_kind("second", "succeeded", timeout=5)
    assert runs.order == ["second"]


@pytest.mark.timeout(30)
def test_manual_clock_with_threads_dispatches_on_advance(make_sched, clock, runs, recorder):
    s = make_sched(threads=True, workers=2)
    rec = recorder(s)
    s.schedule(runs.fn("job"), run_at=5.0, name="job")
    clock.advance(4.0)
    assert s.task("job").state is S.SCHEDULED
    clock.advance(1.0)
    assert s.task("job").state in (S.READY, S.RUNNING, S.SUCCEEDED)  # dispatched on return
    rec.wait_kind("job", "succeeded")
    assert runs.times("job") == [5.0]


@pytest.mark.timeout(30)
def test_an_external_executor_never_has_more_than_workers_in_flight(runs):
    active, peak = [0], [0]
    lock = threading.Lock()

    def body():
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        threading.Event().wait(0.01)  # some work, so runs overlap when allowed to
        with lock:
            active[0] -= 1

    with ThreadPoolExecutor(max_workers=8) as pool, Scheduler(workers=2, executor=pool) as s:
        for i in range(40):
            s.schedule(runs.fn(f"t{i}", body), name=f"t{i}")
        assert s.wait(timeout=20)
    assert len(runs.order) == 40
    assert peak[0] == 2


@pytest.mark.timeout(30)
def test_an_external_executor_keeps_priority_order(runs, recorder):
    release = threading.Event()
    with (
        ThreadPoolExecutor(max_workers=4) as pool,
        Scheduler(workers=1, executor=pool, clock=ManualClock()) as s,
    ):
        rec = recorder(s)
        s.schedule(runs.fn("blocker", lambda: release.wait(10)), name="blocker")
        rec.wait_kind("blocker", "running")
        for name, priority in [("low", 1), ("high", 9), ("mid", 5)]:
            s.schedule(runs.fn(name), name=name, priority=priority)
        release.set()
        assert s.wait(timeout=10)
    assert runs.order == ["blocker", "high", "mid", "low"]


@pytest.mark.timeout(30)
def test_threaded_listeners_see_events_in_seq_order(make_sched, runs):
    s = make_sched(threads=True, workers=4, clock=SystemClock())
    seqs = []
    s.subscribe(lambda event: seqs.append(event.seq))
    for i in range(300):
        deps = (f"t{i - 1}",) if i % 3 else ()
        s.schedule(runs.fn(f"t{i}"), name=f"t{i}", deps=deps, priority=i % 4)
    assert s.wait(timeout=20)
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    assert seqs[-1] == s.snapshot()[0]


def test_generated_ids_are_unique(sched):
    ids = {sched.schedule(print, run_at=1.0) for _ in range(20)}
    assert len(ids) == 20
    assert {t.id for t in sched.tasks()} == ids


def test_cron_runs_at_wall_clock_times_in_its_zone(make_sched, runs):
    clock = ManualClock(wall=datetime(2026, 1, 1, 0, 0, tzinfo=UTC))
    s = make_sched(clock=clock)
    s.schedule_cron(runs.fn("nightly"), "0 2 * * *", tz="Europe/Berlin", name="nightly")
    assert s.task("nightly").run_at == pytest.approx(3600.0)  # 02:00 CET is 01:00 UTC
    clock.advance(3599.0)
    assert runs.order == []
    clock.advance(1.0)
    assert runs.order == ["nightly"]
    assert s.task("nightly").run_at == pytest.approx(3600.0 + 86400.0)


class CountingClock(SystemClock):
    """The real clock, counting how often the engine reads it: a dispatcher that polls
    reads it on every round, one that sleeps until its next timer does not."""

    def __init__(self):
        self.reads = 0

    def now(self) -> float:
        self.reads += 1
        return time.monotonic()


@pytest.mark.timeout(30)
def test_an_idle_scheduler_does_not_poll(make_sched, runs, recorder):
    clock = CountingClock()
    s = make_sched(threads=True, workers=4, clock=clock)
    rec = recorder(s)
    s.schedule_after(runs.fn("far"), 3600.0, name="far")
    s.schedule_every(runs.fn("tick"), 1800.0, name="tick")
    s.schedule_after(runs.fn("now"), 0.0, name="now")
    rec.wait_kind("now", "succeeded")  # the dispatcher has gone round: now it sleeps
    reads = clock.reads
    threading.Event().wait(1.0)  # measuring idleness: nothing is due for half an hour
    assert clock.reads - reads <= 2, f"an idle engine read the clock {clock.reads - reads}x in 1 s"
    assert runs.order == ["now"]

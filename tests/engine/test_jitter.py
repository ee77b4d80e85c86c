"""Jitter: each occurrence waits a random delay up to ``jitter`` before it starts
(systemd's RandomizedDelaySec); the delay drawn is recorded with the attempt."""

from __future__ import annotations

import random

import pytest

from taskloom.engine import InvalidArgument, RetryPolicy, TaskState

S = TaskState


def test_each_occurrence_starts_within_its_jitter_and_the_delay_is_recorded(
    make_sched, clock, runs
):
    s = make_sched(seed=7)
    s.schedule_every(runs.fn("tick"), 60.0, name="tick", jitter=10.0)
    expected = random.Random(7)
    for n in range(1, 6):
        due = 60.0 * n
        clock.advance(due - clock.now())  # the occurrence is due
        delay = expected.uniform(0.0, 10.0)
        assert runs.count("tick") == n - 1
        assert s.task("tick").state is S.READY  # due, waiting its delay
        assert s.next_due() == pytest.approx(due + delay)  # its start, within the bound
        assert 0.0 <= delay <= 10.0
        clock.advance(s.next_due() - clock.now())
        assert runs.count("tick") == n
        assert runs.times("tick")[-1] == pytest.approx(due + delay)
        assert s.jitter_delays("tick")[n] == pytest.approx(delay)
        # The nominal time a command is told is the occurrence's, not the later start.
        assert s.scheduled_at("tick").timestamp() == pytest.approx(clock.wall().timestamp() - delay)
    s.shutdown()


def test_the_same_seed_draws_the_same_delays(make_sched, clock, runs):
    delays = []
    for _ in range(2):
        s = make_sched(seed=3)
        s.schedule_after(runs.fn("once"), 5.0, name="once", jitter=120.0)
        clock.advance(5.0)  # due: its delay counts from here
        clock.advance(s.next_due() - clock.now())
        delays.append(s.jitter_delays("once"))
        s.shutdown()
    assert delays[0] == delays[1] and 0.0 <= delays[0][1] <= 120.0


def test_a_retry_does_not_wait_again_and_a_cancel_drops_the_delay(make_sched, clock, runs):
    s = make_sched(seed=1)
    runs.fail.add("flaky")
    s.schedule_after(
        runs.fn("flaky"), 0.0, name="flaky", jitter=30.0, retry=RetryPolicy(2, base=1.0, jitter=0)
    )
    clock.advance(30.0)  # the first attempt started within its delay and failed
    assert runs.count("flaky") == 1 and s.task("flaky").state is S.RETRY_WAIT
    first = runs.times("flaky")[0]
    clock.advance(1.0)  # the retry's backoff: no new delay
    assert runs.times("flaky") == [first, 31.0]
    assert list(s.jitter_delays("flaky")) == [1]

    s.schedule_after(runs.fn("never"), 0.0, name="never", jitter=30.0)
    clock.advance(0.0)
    assert s.task("never").state is S.READY and runs.count("never") == 0
    assert s.cancel("never")
    clock.advance(60.0)
    assert runs.count("never") == 0 and s.task("never").state is S.CANCELLED
    s.shutdown()


def test_a_bad_jitter_is_refused(make_sched):
    s = make_sched(start=False)
    for bad, error in ((-1.0, InvalidArgument), (float("nan"), InvalidArgument), ("5m", TypeError)):
        with pytest.raises(error, match="jitter"):
            s.add("json:dumps", name="x", jitter=bad)
    assert s.tasks() == []
    s.shutdown()


def test_the_delay_is_stored_with_the_attempt_and_read_back_by_a_resumed_run(tmp_path):
    from datetime import UTC, datetime

    from taskloom.engine import ManualClock, Scheduler, SyncExecutor
    from taskloom.engine.store import SQLiteStore

    db, wall = tmp_path / "run.db", datetime(2026, 12, 1, 2, 0, tzinfo=UTC)
    clock = ManualClock(wall=wall)
    s = Scheduler(clock=clock, executor=SyncExecutor(), store=SQLiteStore(db), seed=5)
    s.schedule_after("json:dumps", 0.0, name="once", jitter=90.0)
    s.start()
    clock.advance(0.0)
    clock.advance(s.next_due() - clock.now())
    delay = s.jitter_delays("once")[1]
    assert 0.0 <= delay <= 90.0
    s.shutdown()
    assert s.store.jitter_delays() == {"once": {1: pytest.approx(delay)}}
    s.store.close()
    again = Scheduler(clock=ManualClock(wall=wall), executor=SyncExecutor(), store=SQLiteStore(db))
    assert again.jitter_delays("once") == {1: pytest.approx(delay)}
    again.shutdown()
    again.store.close()

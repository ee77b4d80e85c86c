"""Automatic retries: exponential backoff, jitter, RETRY_WAIT on the timer heap."""

from __future__ import annotations

import threading

import pytest

from taskloom.engine import Entry, RetryPolicy, TaskState

S = TaskState


def test_backoff_delays_are_exact_without_jitter(sched, clock, runs):
    policy = RetryPolicy(max_attempts=5, base=1.0, factor=2.0, max_delay=5.0, jitter=0.0)
    runs.fail.add("flaky")
    sched.schedule(runs.fn("flaky"), name="flaky", retry=policy)
    # delays 1, 2, 4, then min(5, 8) = 5: attempts at t = 0, 1, 3, 7, 12
    for delay in (1.0, 2.0, 4.0, 5.0):
        info = sched.task("flaky")
        assert info.state is S.RETRY_WAIT
        assert info.run_at == pytest.approx(clock.now() + delay)
        clock.advance(delay - 0.5)
        assert sched.task("flaky").state is S.RETRY_WAIT  # not early
        clock.advance(0.5)
    assert runs.times("flaky") == [0.0, 1.0, 3.0, 7.0, 12.0]
    assert runs.attempts("flaky") == [1, 2, 3, 4, 5]
    info = sched.task("flaky")
    assert info.state is S.FAILED
    assert info.attempt == 5
    history = sched.attempts("flaky")
    assert [a.outcome for a in history] == ["failed"] * 5
    assert [a.number for a in history] == [1, 2, 3, 4, 5]
    assert [(a.started, a.ended) for a in history] == [(t, t) for t in (0.0, 1.0, 3.0, 7.0, 12.0)]
    assert all(a.error == "RuntimeError: flaky failed" for a in history)
    assert sched.upcoming() == []


def test_retry_wait_is_visible_as_a_retry_entry(sched, clock, runs):
    runs.fail.add("flaky")
    policy = RetryPolicy(max_attempts=2, base=3.0, jitter=0.0)
    sched.schedule(runs.fn("flaky"), name="flaky", retry=policy, priority=7)
    assert sched.upcoming() == [Entry(3.0, 7, "flaky", "retry")]
    clock.advance(3.0)
    assert sched.upcoming() == []


def test_a_retry_that_succeeds_ends_succeeded(sched, clock, runs):
    runs.fail.add("flaky")
    sched.schedule(runs.fn("flaky"), name="flaky", retry=RetryPolicy(max_attempts=3, jitter=0))
    runs.fail.clear()
    clock.advance(1.0)
    info = sched.task("flaky")
    assert (info.state, info.attempt) == (S.SUCCEEDED, 2)
    assert [a.outcome for a in sched.attempts("flaky")] == ["failed", "succeeded"]


def test_jittered_delays_stay_within_bounds_and_vary(sched, clock, runs):
    policy = RetryPolicy(max_attempts=2, base=10.0, jitter=0.5)
    for i in range(30):
        runs.fail.add(f"t{i}")
        sched.schedule(runs.fn(f"t{i}"), name=f"t{i}", retry=policy)
    delays = [sched.task(f"t{i}").run_at - clock.now() for i in range(30)]
    assert all(5.0 <= d <= 15.0 for d in delays), delays
    assert len(set(delays)) > 1, "jitter never applied"


def test_jitter_is_applied_after_the_max_delay_cap(sched, clock, runs):
    policy = RetryPolicy(max_attempts=2, base=100.0, max_delay=10.0, jitter=0.1)
    for i in range(30):
        runs.fail.add(f"t{i}")
        sched.schedule(runs.fn(f"t{i}"), name=f"t{i}", retry=policy)
    delays = [sched.task(f"t{i}").run_at - clock.now() for i in range(30)]
    assert all(9.0 <= d <= 11.0 for d in delays), delays
    assert any(d > 10.0 for d in delays), "jitter was applied before the cap"


def test_retry_none_means_one_attempt(sched, runs):
    runs.fail.add("once")
    sched.schedule(runs.fn("once"), name="once")
    assert sched.task("once").state is S.FAILED
    assert runs.count("once") == 1


@pytest.mark.timeout(30)
def test_backoff_is_counted_from_the_end_of_the_failed_attempt(make_sched, clock, runs, recorder):
    s = make_sched(threads=True, workers=1)
    rec = recorder(s)
    release = threading.Event()
    runs.fail.add("slow")
    policy = RetryPolicy(max_attempts=2, base=2.0, jitter=0.0)
    s.schedule(runs.fn("slow", lambda: release.wait(10)), name="slow", retry=policy)
    rec.wait_kind("slow", "running")
    clock.advance(7.0)  # the attempt takes 7 s of scheduler time
    release.set()
    event = rec.wait_kind("slow", "retry_wait")
    assert event.run_at == pytest.approx(9.0)
    assert s.task("slow").run_at == pytest.approx(9.0)


@pytest.mark.timeout(30)
def test_no_worker_sleeps_through_a_backoff(make_sched, runs, recorder):
    s = make_sched(threads=True, workers=1)
    rec = recorder(s)
    runs.fail.add("flaky")
    s.schedule(runs.fn("flaky"), name="flaky", retry=RetryPolicy(max_attempts=2, base=1000.0))
    rec.wait_kind("flaky", "retry_wait")
    s.schedule(runs.fn("other"), name="other")
    rec.wait_kind("other", "succeeded")
    assert s.task("flaky").state is S.RETRY_WAIT

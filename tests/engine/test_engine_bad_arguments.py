"""Engine arguments at the edges: a clear error naming the argument, nothing lost.

Each refused call leaves the engine as it was; each accepted value works.
"""

from __future__ import annotations

import math
import os
import stat
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest

from taskloom.engine import RetryPolicy, TaskState
from taskloom.engine.command import Command, CommandFailed
from taskloom.engine.testing import RunContext, run_in_context

S = TaskState


@pytest.fixture
def busy(sched, build):
    """A started engine with some state that a bad call must not disturb."""
    build(sched, {"done": [], "later": [], "waiting": ["later"]}, run_at={"later": 5.0})
    return sched


# ---------------------------------------------------------------------- RetryPolicy
@pytest.mark.parametrize("field", ["max_attempts", "base", "factor", "max_delay", "jitter"])
@pytest.mark.parametrize("value", [True, False])
def test_a_bool_is_not_a_number_for_a_retry_policy(field, value):
    with pytest.raises((TypeError, ValueError), match=field):
        RetryPolicy(**{field: value})


@pytest.mark.parametrize("failed", [8, 1025, 1026, 5000, 10**6, 10**400])
@pytest.mark.parametrize("factor", [2.0, 1e200])
def test_retry_delay_never_overflows(failed, factor):
    policy = RetryPolicy(max_attempts=10**9, base=1.0, factor=factor, max_delay=60.0, jitter=0.0)
    assert policy.delay(failed) == 60.0


def test_a_huge_factor_reaches_the_cap_at_the_third_failure():
    policy = RetryPolicy(max_attempts=5, base=1.0, factor=1e200, max_delay=60.0, jitter=0.5)
    assert [policy.delay(n, rand=0.0) for n in (1, 2, 3)] == [0.5, 30.0, 30.0]


@pytest.mark.parametrize("failed", [1, 2, 10, 1026, 10**400])
def test_retry_delay_with_a_shrinking_or_flat_factor(failed):
    assert RetryPolicy(base=4.0, factor=1.0, jitter=0.0).delay(failed) == 4.0
    shrinking = RetryPolicy(base=4.0, factor=0.5, jitter=0.0).delay(failed)
    assert shrinking == 4.0 * 0.5 ** (failed - 1) if failed < 2000 else shrinking == 0.0
    assert RetryPolicy(base=0.0, factor=1e200, jitter=0.0).delay(failed) == 0.0


def test_retry_delay_keeps_its_values_below_the_cap():
    policy = RetryPolicy(base=2.0, factor=3.0, max_delay=1000.0, jitter=0.0)
    assert [policy.delay(n) for n in range(1, 8)] == [2.0, 6.0, 18.0, 54.0, 162.0, 486.0, 1000.0]
    jittered = RetryPolicy(base=2.0, factor=3.0, max_delay=1000.0, jitter=0.5)
    assert jittered.delay(3, rand=0.0) == 9.0 and jittered.delay(30, rand=0.0) == 500.0


def test_a_task_with_a_huge_backoff_factor_retries_and_fails_cleanly(sched, clock, runs):
    calls = []

    def flaky():
        calls.append(clock.now())
        raise RuntimeError("boom")

    policy = RetryPolicy(max_attempts=5, base=1.0, factor=1e200, max_delay=10.0, jitter=0.0)
    sched.add(flaky, name="flaky", retry=policy)
    for _ in range(5):
        clock.advance(10.0)
    assert sched.task("flaky").state is S.FAILED
    assert len(calls) == 5
    assert calls[2] - calls[1] == 10.0  # the third failure hit the cap, not an OverflowError


@pytest.mark.timeout(30)
def test_thousands_of_retries_keep_the_worker_threads_alive(make_sched):
    sched = make_sched(threads=True, workers=1, clock=None)  # the real clock: 0 s backoffs
    attempts = 0

    def flaky():
        nonlocal attempts
        attempts += 1
        raise RuntimeError("boom")

    policy = RetryPolicy(max_attempts=1100, base=0.0, factor=2.0, max_delay=0.0, jitter=0.0)
    sched.add(flaky, name="flaky", retry=policy)
    assert sched.wait(20)
    assert sched.task("flaky").state is S.FAILED
    assert attempts == 1100
    sched.add(lambda: None, name="after")  # the worker still runs tasks
    assert sched.wait(20)
    assert sched.task("after").state is S.SUCCEEDED


# ---------------------------------------------------------------------- task names
@pytest.mark.parametrize("name", [" ", "   ", "\t", "\n "])
def test_a_blank_task_name_is_refused_like_in_files(busy, name):
    before = busy.snapshot()
    with pytest.raises(ValueError, match="name"):
        busy.schedule(print, name=name)
    with pytest.raises(ValueError, match="name"):
        busy.schedule_every(print, 1.0, name=name)
    assert busy.snapshot() == before


@pytest.mark.parametrize("name", [3, b"x", ("a",)])
def test_a_task_name_that_is_not_a_string_is_refused(busy, name):
    before = busy.snapshot()
    with pytest.raises((TypeError, ValueError), match="name"):
        busy.schedule(print, name=name)
    assert busy.snapshot() == before


def test_a_name_with_spaces_inside_is_fine(busy):
    busy.add(print, name=" padded name ")
    assert busy.task(" padded name ").state is S.SUCCEEDED


# ---------------------------------------------------------------------- wait()
@pytest.mark.timeout(10)
@pytest.mark.parametrize("timeout", [math.nan, -1, -0.5, -math.inf])
def test_wait_refuses_nan_and_negative_timeouts(busy, timeout):
    with pytest.raises(ValueError, match="timeout"):
        busy.wait(timeout)


@pytest.mark.timeout(10)
@pytest.mark.parametrize("timeout", ["1", b"1", [1], True, object()])
def test_wait_refuses_a_timeout_that_is_not_a_number(busy, timeout):
    with pytest.raises(TypeError, match="timeout"):
        busy.wait(timeout)


@pytest.mark.timeout(10)
def test_wait_checks_its_timeout_before_starting_the_engine(make_sched):
    sched = make_sched(start=False)
    with pytest.raises(ValueError, match="timeout"):
        sched.wait(math.nan)
    sched.add(print, name="job")
    assert sched.task("job").state is S.PENDING or sched.task("job").state is S.READY


@pytest.mark.timeout(10)
@pytest.mark.parametrize("timeout", [math.inf, 1e300, 10**400, threading.TIMEOUT_MAX * 2])
def test_wait_treats_an_endless_timeout_as_none(busy, timeout):
    busy.cancel("later")
    busy.cancel("waiting")
    assert busy.wait(timeout) is True


@pytest.mark.timeout(10)
def test_wait_with_an_endless_timeout_on_a_threaded_engine(make_sched):
    sched = make_sched(threads=True)
    sched.add(lambda: None, name="job")
    assert sched.wait(math.inf) is True
    assert sched.wait(0) is True
    assert sched.wait(2**70) is True


# ---------------------------------------------------------------------- seconds
@pytest.mark.parametrize("value", [10**400, -(10**400)])
def test_a_huge_int_delay_names_the_argument(busy, value):
    before = busy.snapshot()
    with pytest.raises(ValueError, match="delay must be a finite number"):
        busy.schedule_after(print, value)
    assert busy.snapshot() == before


@pytest.mark.parametrize(
    ("call", "word"),
    [
        (lambda s: s.schedule(print, run_at=10**400), "run_at"),
        (lambda s: s.schedule_every(print, 10**400), "interval"),
        (lambda s: s.schedule(print, timeout=10**400), "timeout"),
        (lambda s: s.schedule_every(print, 1.0, misfire_grace=10**400), "misfire_grace"),
    ],
)
def test_huge_ints_name_the_argument_everywhere(busy, call, word):
    before = busy.snapshot()
    with pytest.raises(ValueError, match=f"{word} must be a finite number"):
        call(busy)
    assert busy.snapshot() == before


# ---------------------------------------------------------------------- command log files
def _run_in(task_id: str, log_dir) -> RunContext:
    ctx = RunContext(task_id, 1, log_dir=None if log_dir is None else str(log_dir))
    run_in_context(ctx, Command([sys.executable, "-c", "print('hi')"]))
    return ctx


@pytest.mark.parametrize("task_id", ["..", ".", ".hidden", "...x", "/"])
def test_a_dotted_task_name_does_not_get_a_hidden_log_file(tmp_path, task_id):
    log = Path(_run_in(task_id, tmp_path).log_path)
    assert log.parent == tmp_path
    assert not log.name.startswith(".")
    assert log.read_text().strip() == "hi"


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.skipif(sys.platform != "linux", reason="XDG_CACHE_HOME picks the folder")
def test_the_default_log_folder_is_private_to_the_user(cache_home):
    log = Path(_run_in("job", None).log_path)
    assert log.parent == cache_home / "taskloom" / "logs"
    assert stat.S_IMODE(os.stat(log.parent).st_mode) == 0o700
    assert log.read_text().strip() == "hi"


@pytest.mark.skipif(sys.platform != "linux", reason="XDG_CACHE_HOME picks the folder")
def test_a_loose_default_log_folder_is_made_private(cache_home):
    folder = cache_home / "taskloom" / "logs"
    folder.mkdir(parents=True, mode=0o755)
    os.chmod(folder, 0o755)
    assert Path(_run_in("job", None).log_path).parent == folder
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700


@pytest.mark.skipif(sys.platform != "linux", reason="XDG_CACHE_HOME picks the folder")
def test_a_symlinked_default_log_folder_is_refused(cache_home, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (cache_home / "taskloom").mkdir(parents=True)
    (cache_home / "taskloom" / "logs").symlink_to(elsewhere)
    with pytest.raises(CommandFailed, match="symlink"):
        _run_in("job", None)
    assert list(elsewhere.iterdir()) == []


# ---------------------------------------------------------------------- far timers
@pytest.mark.parametrize(
    ("call", "word"),
    [
        (lambda s: s.schedule_after(print, 1e10), "delay"),
        (lambda s: s.schedule(print, run_at=1e12), "run_at"),
        (lambda s: s.schedule(print, run_at=datetime(9999, 1, 1, tzinfo=UTC)), "run_at"),
        (lambda s: s.schedule_every(print, 1e10), "interval"),
        (lambda s: s.schedule(print, timeout=1e10), "timeout"),
    ],
)
def test_a_timer_beyond_250_years_is_refused_and_changes_nothing(busy, call, word):
    # A lock cannot wait past ~292 years: such a timer made the timer thread spin.
    before = busy.snapshot()
    with pytest.raises(ValueError, match=f"{word} must be at most .*250 years"):
        call(busy)
    assert busy.snapshot() == before


def test_a_retry_backoff_beyond_250_years_is_refused():
    with pytest.raises(ValueError, match="max_delay must be at most"):
        RetryPolicy(max_delay=1e10)


def test_a_timer_just_inside_the_limit_is_accepted_and_has_a_definition(busy):
    far = 249 * 365.25 * 86400
    busy.schedule_after(print, far, name="far-delay")
    busy.schedule(print, run_at=far, name="far-time")
    assert busy.definition("far-delay").after == far
    assert busy.definition("far-time").at.year >= 2026 + 248
    assert [e.task_id for e in busy.upcoming()][-2:] == ["far-delay", "far-time"]


def test_definition_of_a_clock_time_past_the_last_datetime_does_not_raise():
    from taskloom.engine import ManualClock, Scheduler, SyncExecutor

    s = Scheduler(clock=ManualClock(wall=datetime(9990, 1, 1, tzinfo=UTC)), executor=SyncExecutor())
    s.schedule(print, run_at=20 * 365.25 * 86400, name="after-9999")  # accepted: 20 years
    assert s.definition("after-9999").at.year == 9999
    s.shutdown()

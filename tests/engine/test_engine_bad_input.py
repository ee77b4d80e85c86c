"""Bad input: a clear error, and an engine exactly as it was before the call."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from taskloom.engine import RetryPolicy, TaskState

S = TaskState
BAD_SECONDS = [-1, -0.001, math.nan, math.inf, -math.inf]


@pytest.fixture
def busy(sched, build):
    """A started engine with some state that a bad call must not disturb."""
    build(
        sched,
        {"done": [], "later": [], "waiting": ["later"], "bad": []},
        fail={"bad"},
        run_at={"later": 5.0},
    )
    sched.schedule_every(print, 3.0, name="tick")
    return sched


def _assert_unchanged(s, before):
    assert s.snapshot() == before


@pytest.mark.parametrize("delay", BAD_SECONDS)
def test_bad_delay(busy, delay):
    before = busy.snapshot()
    with pytest.raises(ValueError, match="delay"):
        busy.schedule_after(print, delay)
    _assert_unchanged(busy, before)


@pytest.mark.parametrize("run_at", BAD_SECONDS)
def test_bad_run_at(busy, run_at):
    before = busy.snapshot()
    with pytest.raises(ValueError, match="run_at"):
        busy.schedule(print, run_at=run_at)
    _assert_unchanged(busy, before)


@pytest.mark.parametrize("interval", [0, 0.0, *BAD_SECONDS])
def test_bad_interval(busy, interval):
    before = busy.snapshot()
    with pytest.raises(ValueError, match="interval"):
        busy.schedule_every(print, interval)
    _assert_unchanged(busy, before)


@pytest.mark.parametrize("run_at", BAD_SECONDS)
def test_bad_run_at_of_a_recurring_task(busy, run_at):
    before = busy.snapshot()
    with pytest.raises(ValueError, match="run_at"):
        busy.schedule_every(print, 1.0, run_at=run_at)
    _assert_unchanged(busy, before)


def test_naive_datetime_run_at(busy):
    before = busy.snapshot()
    with pytest.raises(ValueError, match="time zone|timezone|naive|aware"):
        busy.schedule(print, run_at=datetime(2026, 1, 1, 0, 0, 5))
    _assert_unchanged(busy, before)


def test_aware_datetime_run_at_is_converted_to_the_scheduler_clock(sched, clock, runs):
    when = clock.wall() + timedelta(seconds=5)
    sched.schedule(runs.fn("job"), run_at=when.astimezone(UTC), name="job")
    assert sched.task("job").run_at == pytest.approx(5.0)
    clock.advance(4.9)
    assert runs.order == []
    clock.advance(0.1)
    assert runs.order == ["job"]


@pytest.mark.parametrize("fn", [42, None, 3.5, object(), b"json:dumps", ["json:dumps"]])
def test_not_callable(busy, fn):
    before = busy.snapshot()
    with pytest.raises(TypeError, match="callable"):
        busy.schedule(fn)
    _assert_unchanged(busy, before)


@pytest.mark.parametrize(
    "ref", ["json", "json:", ":dumps", "json:dumps:x", "not a ref", "json.:dumps", "", "a b:c"]
)
def test_malformed_reference(busy, ref):
    before = busy.snapshot()
    with pytest.raises(ValueError, match="module:function|malformed|reference"):
        busy.schedule(ref)
    _assert_unchanged(busy, before)


def test_duplicate_name(busy):
    before = busy.snapshot()
    with pytest.raises(ValueError, match="'done'"):
        busy.schedule(print, name="done")
    with pytest.raises(ValueError, match="'tick'"):
        busy.schedule_every(print, 1.0, name="tick")
    _assert_unchanged(busy, before)


def test_unknown_trigger_rule(busy):
    before = busy.snapshot()
    with pytest.raises(ValueError, match="trigger_rule"):
        busy.schedule(print, trigger_rule="any_success")
    _assert_unchanged(busy, before)


@pytest.mark.parametrize(
    "kwargs, word",
    [
        ({"mode": "sometimes"}, "mode"),
        ({"overlap": "maybe"}, "overlap"),
        ({"misfire": "later"}, "misfire"),
        ({"misfire_grace": -1}, "misfire_grace"),
    ],
)
def test_unknown_recurring_options(busy, kwargs, word):
    before = busy.snapshot()
    with pytest.raises(ValueError, match=word):
        busy.schedule_every(print, 1.0, **kwargs)
    _assert_unchanged(busy, before)


@pytest.mark.parametrize("timeout", [0, -1, math.nan, math.inf])
def test_bad_timeout(busy, timeout):
    before = busy.snapshot()
    with pytest.raises(ValueError, match="timeout"):
        busy.schedule(print, timeout=timeout)
    _assert_unchanged(busy, before)


def test_retry_that_is_not_a_policy(busy):
    before = busy.snapshot()
    with pytest.raises(TypeError, match="RetryPolicy"):
        busy.schedule(print, retry=3)
    _assert_unchanged(busy, before)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_attempts": 0},
        {"base": -1.0},
        {"factor": math.nan},
        {"max_delay": math.inf},
        {"jitter": 1.5},
    ],
)
def test_bad_retry_policy(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        RetryPolicy(**kwargs)


def test_unknown_ids(busy):
    before = busy.snapshot()
    for call in (
        lambda: busy.task("ghost"),
        lambda: busy.cancel("ghost"),
        lambda: busy.retry("ghost"),
        lambda: busy.attempts("ghost"),
        lambda: busy.pause("ghost"),
        lambda: busy.resume("ghost"),
        lambda: busy.run_now("ghost"),
        lambda: busy.remove_dependency("ghost", "done"),
    ):
        with pytest.raises(KeyError, match="ghost"):
            call()
    _assert_unchanged(busy, before)


def test_calls_after_shutdown(busy):
    busy.shutdown()
    before = busy.snapshot()
    for call in (
        lambda: busy.schedule(print),
        lambda: busy.schedule_after(print, 1.0),
        lambda: busy.schedule_every(print, 1.0),
        lambda: busy.add(print, deps=("done",)),
        lambda: busy.add_dependency("waiting", "done"),
        lambda: busy.pause("later"),
        lambda: busy.resume(),
    ):
        with pytest.raises(RuntimeError, match="shut down|shutdown"):
            call()
    _assert_unchanged(busy, before)
    assert busy.task("later").state is S.SCHEDULED


def test_bad_input_is_checked_after_shutdown_too(busy):
    """Shutdown wins over a bad argument or the other way round: either is clear."""
    busy.shutdown()
    before = busy.snapshot()
    with pytest.raises((RuntimeError, ValueError)):
        busy.schedule_after(print, -1)
    _assert_unchanged(busy, before)

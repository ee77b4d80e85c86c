"""Cron triggers: wall-clock times in a zone, once per day across DST changes."""

from __future__ import annotations

import pickle
from datetime import UTC, datetime

import pytest

from taskloom.engine.cron import CronTrigger, describe
from taskloom.engine.cron import zone as tz

BERLIN = tz("Europe/Berlin")
NEW_YORK = tz("America/New_York")


def utc(*args) -> datetime:
    return datetime(*args, tzinfo=UTC)


def test_next_after_is_strictly_later_and_in_the_zone():
    trigger = CronTrigger("0 2 * * *", tz="Europe/Berlin")
    fire = trigger.next_after(utc(2026, 6, 1, 0, 0))  # 02:00 Berlin summer time
    assert fire == utc(2026, 6, 2, 0, 0)
    assert fire.tzinfo == BERLIN and (fire.hour, fire.minute) == (2, 0)
    assert trigger.next_after(fire) == utc(2026, 6, 3, 0, 0)


def test_next_n_lists_the_following_times():
    trigger = CronTrigger("*/15 9 * * MON-FRI")
    times = trigger.next_n(utc(2026, 1, 2, 9, 20), 4)  # a Friday
    assert times == [
        utc(2026, 1, 2, 9, 30),
        utc(2026, 1, 2, 9, 45),
        utc(2026, 1, 5, 9, 0),
        utc(2026, 1, 5, 9, 15),
    ]


def test_berlin_spring_forward_runs_a_missing_time_once_at_three():
    # 2026-03-29: clocks go from 02:00 to 03:00; 02:30 does not exist that day.
    trigger = CronTrigger("30 2 * * *", tz="Europe/Berlin")
    times = trigger.next_n(datetime(2026, 3, 28, 12, 0, tzinfo=BERLIN), 3)
    assert [t.astimezone(UTC) for t in times] == [
        utc(2026, 3, 29, 1, 0),  # 03:00 CEST
        utc(2026, 3, 30, 0, 30),  # 02:30 CEST
        utc(2026, 3, 31, 0, 30),
    ]
    assert [(t.hour, t.minute) for t in times] == [(3, 0), (2, 30), (2, 30)]


def test_berlin_fall_back_runs_a_repeated_time_once():
    # 2026-10-25: 02:00-03:00 happens twice; the job runs at the first 02:30 only.
    trigger = CronTrigger("30 2 * * *", tz="Europe/Berlin")
    times = trigger.next_n(datetime(2026, 10, 24, 12, 0, tzinfo=BERLIN), 3)
    assert [t.astimezone(UTC) for t in times] == [
        utc(2026, 10, 25, 0, 30),  # 02:30 CEST (+02:00)
        utc(2026, 10, 26, 1, 30),  # 02:30 CET (+01:00)
        utc(2026, 10, 27, 1, 30),
    ]


def test_from_inside_the_repeated_hour_the_past_first_run_is_not_repeated():
    trigger = CronTrigger("30 2 * * *", tz="Europe/Berlin")
    second_0215 = datetime(2026, 10, 25, 2, 15, fold=1, tzinfo=BERLIN)  # 01:15 UTC
    assert trigger.next_after(second_0215) == utc(2026, 10, 26, 1, 30)
    assert trigger.next_after(utc(2026, 10, 25, 0, 30)) == utc(2026, 10, 26, 1, 30)


def test_new_york_spring_forward_runs_once_at_three():
    # 2026-03-08: 02:00 -> 03:00 EDT.
    trigger = CronTrigger("30 2 * * *", tz="America/New_York")
    times = trigger.next_n(datetime(2026, 3, 7, 12, 0, tzinfo=NEW_YORK), 2)
    assert [t.astimezone(UTC) for t in times] == [utc(2026, 3, 8, 7, 0), utc(2026, 3, 9, 6, 30)]


def test_new_york_fall_back_runs_once():
    # 2026-11-01: 01:00-02:00 happens twice (EDT, then EST).
    trigger = CronTrigger("30 1 * * *", tz="America/New_York")
    times = trigger.next_n(datetime(2026, 10, 31, 12, 0, tzinfo=NEW_YORK), 2)
    assert [t.astimezone(UTC) for t in times] == [utc(2026, 11, 1, 5, 30), utc(2026, 11, 2, 6, 30)]


def test_interval_like_expressions_follow_real_time_through_the_repeated_hour():
    trigger = CronTrigger("*/30 * * * *", tz="America/New_York")
    times = trigger.next_n(datetime(2026, 11, 1, 0, 50, tzinfo=NEW_YORK), 5)
    assert [t.astimezone(UTC) for t in times] == [
        utc(2026, 11, 1, 5, 0),  # 01:00 EDT
        utc(2026, 11, 1, 5, 30),
        utc(2026, 11, 1, 6, 0),  # 01:00 EST
        utc(2026, 11, 1, 6, 30),
        utc(2026, 11, 1, 7, 0),  # 02:00 EST
    ]


def test_six_fields_means_seconds_first():
    trigger = CronTrigger("*/20 * * * * *")
    assert trigger.next_n(utc(2026, 1, 1, 0, 0, 5), 2) == [
        utc(2026, 1, 1, 0, 0, 20),
        utc(2026, 1, 1, 0, 0, 40),
    ]


@pytest.mark.parametrize("expr", ["61 * * * *", "* * *", "0 0 31 2 *", "0 0 30 2 *", "x y z a b"])
def test_bad_expression_is_a_value_error_naming_it(expr):
    with pytest.raises(ValueError, match="bad cron expression") as caught:
        CronTrigger(expr)
    assert repr(expr) in str(caught.value)


@pytest.mark.parametrize(
    "name", ["Mars/Olympus_Mons", "", "Europe/Berln", "Europe", "America", "America/"]
)
def test_unknown_zone_is_a_value_error_naming_it(name):
    with pytest.raises(ValueError, match="unknown time zone") as caught:
        CronTrigger("0 2 * * *", tz=name)
    assert repr(name) in str(caught.value)


def test_naive_datetimes_are_refused():
    with pytest.raises(ValueError, match="aware"):
        CronTrigger("0 2 * * *").next_after(datetime(2026, 1, 1))


@pytest.mark.parametrize(
    ("expr", "text"),
    [
        ("0 2 * * *", "At 02:00 every day"),
        ("*/5 * * * *", "Every fifth minute of every hour"),
        ("0 9 * * MON-FRI", "At 09:00 on Monday through Friday"),
    ],
)
def test_describe_in_plain_language(expr, text):
    assert describe(expr) == text
    assert CronTrigger(expr).describe() == text


def test_describe_refuses_a_bad_expression():
    with pytest.raises(ValueError, match="bad cron expression"):
        describe("99 * * * *")


def test_trigger_is_a_plain_value():
    trigger = CronTrigger("0  2 * * *", tz="Europe/Berlin")
    assert trigger == CronTrigger("0 2 * * *", tz="Europe/Berlin")
    assert trigger != CronTrigger("0 2 * * *")
    assert pickle.loads(pickle.dumps(trigger)) == trigger
    assert repr(trigger) == "CronTrigger('0 2 * * *', tz='Europe/Berlin')"


def test_engine_runs_a_cron_task_at_the_shifted_spring_forward_time(make_sched, runs):
    from taskloom.engine import ManualClock

    clock = ManualClock(wall=utc(2026, 3, 29, 0, 0))  # 01:00 CET, before the gap
    runs.clock = clock
    s = make_sched(clock=clock)
    s.schedule_cron(runs.fn("nightly"), "30 2 * * *", tz="Europe/Berlin", name="nightly")
    clock.advance(3599)
    assert runs.count("nightly") == 0
    clock.advance(1)  # 01:00 UTC = 03:00 CEST
    assert runs.times("nightly") == [3600]

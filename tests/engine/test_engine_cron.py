"""Cron tasks in the engine: wall-clock times in a zone, DST, clock jumps, misfires."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from taskloom.engine import ManualClock, Scheduler, SyncExecutor

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")
HOUR = 3600.0


def cron_runs(expr, tz, start_local: datetime, hours: float, step=HOUR / 4, **kw):
    """Run a cron task on a ManualClock from ``start_local`` for ``hours``; local run times."""
    clock = ManualClock(wall=start_local)
    s = Scheduler(clock=clock, executor=SyncExecutor())
    runs: list[datetime] = []
    s.schedule_cron(lambda: runs.append(clock.wall().astimezone(ZoneInfo(tz))), expr, tz=tz, **kw)
    s.start()
    elapsed = 0.0
    while elapsed < hours * HOUR:
        clock.advance(step)
        elapsed += step
    s.shutdown()
    return runs


@pytest.mark.parametrize(
    ("zone", "day"),
    [("Europe/Berlin", datetime(2026, 3, 29)), ("America/New_York", datetime(2026, 3, 8))],
)
def test_spring_forward_job_at_a_missing_time_runs_once_at_the_next_valid_minute(zone, day):
    start = (day - timedelta(days=1)).replace(hour=12, tzinfo=ZoneInfo(zone))
    runs = cron_runs("30 2 * * *", zone, start, hours=72, step=60)
    assert len(runs) == 3  # one run a day, the DST day included
    dst_day = [r for r in runs if r.date() == day.date()]
    assert len(dst_day) == 1
    assert (dst_day[0].hour, dst_day[0].minute) == (3, 0)


@pytest.mark.parametrize(
    ("zone", "day"),
    [("Europe/Berlin", datetime(2026, 10, 25)), ("America/New_York", datetime(2026, 11, 1))],
)
def test_fall_back_job_at_a_repeated_time_runs_once(zone, day):
    start = (day - timedelta(days=1)).replace(hour=12, tzinfo=ZoneInfo(zone))
    runs = cron_runs("30 1 * * *", zone, start, hours=72, step=60)
    assert len(runs) == 3
    assert sum(1 for r in runs if r.date() == day.date()) == 1


def test_cron_times_are_wall_clock_in_the_zone():
    start = datetime(2026, 6, 1, 0, 0, tzinfo=BERLIN)
    runs = cron_runs("0 9 * * 1-5", "Europe/Berlin", start, hours=7 * 24)
    assert [r.strftime("%a %H:%M") for r in runs] == [
        "Mon 09:00",
        "Tue 09:00",
        "Wed 09:00",
        "Thu 09:00",
        "Fri 09:00",
    ]


def test_next_cron_run_is_requeued_when_the_wall_clock_jumps():
    clock = ManualClock(wall=datetime(2026, 6, 1, 10, 0, tzinfo=BERLIN))
    s = Scheduler(clock=clock, executor=SyncExecutor())
    runs = []
    s.schedule_cron(
        lambda: runs.append(clock.wall()), "0 12 * * *", tz="Europe/Berlin", name="noon"
    )
    s.start()
    assert s.upcoming()[0].run_at == pytest.approx(2 * HOUR)
    clock.jump_wall(1.5 * HOUR)  # an NTP step: it is 11:30 now, not 10:00
    assert s.upcoming()[0].run_at == pytest.approx(0.5 * HOUR)
    clock.advance(0.5 * HOUR)
    assert len(runs) == 1
    assert runs[0].astimezone(BERLIN).hour == 12
    s.shutdown()


@pytest.mark.parametrize(("misfire", "expected"), [("run_once", 1), ("skip", 0), ("run_all", 5)])
def test_cron_misfire_after_a_stall(misfire, expected):
    clock = ManualClock(wall=datetime(2026, 6, 1, 0, 30, tzinfo=BERLIN))
    s = Scheduler(clock=clock, executor=SyncExecutor())
    runs = []
    s.schedule_cron(
        lambda: runs.append(clock.now()), "0 * * * *", tz="Europe/Berlin", misfire=misfire
    )
    s.start()
    clock.advance(5 * HOUR)  # a suspended laptop: five hourly runs were missed
    assert len(runs) == expected
    assert s.upcoming()[0].run_at == pytest.approx(5.5 * HOUR)  # the cadence goes on
    s.shutdown()


def test_bad_cron_expression_and_zone_are_refused_and_change_nothing():
    s = Scheduler(clock=ManualClock(), executor=SyncExecutor())
    before = s.snapshot()
    with pytest.raises(ValueError, match="61 "):
        s.schedule_cron(lambda: None, "61 * * * *")
    with pytest.raises(ValueError, match="Mars/Olympus"):
        s.schedule_cron(lambda: None, "0 * * * *", tz="Mars/Olympus")
    assert s.snapshot() == before
    s.shutdown()


def test_wall_a_hair_behind_at_the_due_time_runs_the_occurrence_once():
    # The timer wakes at the monotonic due while the wall clock reads 5 µs before the
    # minute (skew, NTP slewing): the 12:01 occurrence must run once, not twice.
    clock = ManualClock(wall=datetime(2026, 6, 1, 12, 0, 30, tzinfo=BERLIN))
    s = Scheduler(clock=clock, executor=SyncExecutor())
    runs = []
    s.schedule_cron(lambda: runs.append(clock.wall()), "* * * * *", tz="Europe/Berlin")
    s.start()
    clock.jump_wall(-0.000005)
    clock.advance(30.0)  # the monotonic due of 12:01:00
    clock.advance(1.0)
    assert len(runs) == 1
    clock.advance(60.0)  # past 12:02
    assert len(runs) == 2
    assert runs[1].astimezone(BERLIN).minute == 2
    s.shutdown()


def test_store_keeps_the_cron_cursor_exactly_and_a_restart_resumes_from_it(tmp_path):
    from taskloom.engine.store import SQLiteStore

    db = str(tmp_path / "taskloom.db")
    clock = ManualClock(wall=datetime(2026, 6, 1, 12, 0, 30, tzinfo=BERLIN))
    store = SQLiteStore(db)
    s = Scheduler(clock=clock, executor=SyncExecutor(), store=store)
    s.schedule_cron("tests.engine._store_jobs:noop", "*/5 * * * *", tz="Europe/Berlin", name="five")
    s.start()
    clock.jump_wall(0.3)  # skew, too small to count as a jump
    clock.advance(270.0)  # 12:05 runs
    assert s.task("five").attempt == 1
    clock.jump_wall(0.3)
    s.pause("five")  # writes the task's row again, with the wall clock skewed since
    s.resume("five")
    s.shutdown()
    store.flush()
    (row,) = store.load_tasks()
    assert row["next_wall"] == datetime(2026, 6, 1, 12, 10, tzinfo=BERLIN).timestamp()
    store.close()

    # Restarted at 12:07 on a clock whose monotonic time starts at 0 again.
    clock = ManualClock(wall=datetime(2026, 6, 1, 12, 7, tzinfo=BERLIN))
    store = SQLiteStore(db)
    s = Scheduler(clock=clock, executor=SyncExecutor(), store=store)
    s.start()
    assert s.upcoming()[0].run_at == pytest.approx(180.0)
    clock.advance(180.0)
    assert s.task("five").attempt == 2
    assert s.upcoming()[0].run_at == pytest.approx(480.0)
    s.shutdown()
    store.close()


@pytest.mark.parametrize(("misfire", "expected"), [("run_once", 1), ("skip", 0), ("run_all", 3)])
def test_a_wall_jump_forward_over_occurrences_follows_the_misfire_policy(misfire, expected):
    clock = ManualClock(wall=datetime(2026, 6, 1, 10, 30, tzinfo=BERLIN))
    s = Scheduler(clock=clock, executor=SyncExecutor())
    runs = []
    s.schedule_cron(lambda: runs.append(1), "0 * * * *", tz="Europe/Berlin", misfire=misfire)
    s.start()
    clock.jump_wall(3 * HOUR)  # a suspend: 11:00, 12:00 and 13:00 passed, it is 13:30
    assert len(runs) == expected
    assert s.upcoming()[0].run_at == pytest.approx(0.5 * HOUR)  # 14:00
    s.shutdown()


def test_a_wall_jump_back_runs_no_occurrence_twice():
    clock = ManualClock(wall=datetime(2026, 6, 1, 10, 59, tzinfo=BERLIN))
    s = Scheduler(clock=clock, executor=SyncExecutor())
    runs = []
    s.schedule_cron(lambda: runs.append(clock.wall()), "0 * * * *", tz="Europe/Berlin")
    s.start()
    clock.advance(120.0)  # 11:00 runs; it is 11:01
    clock.jump_wall(-2 * HOUR)  # back to 09:01: 10:00 and 11:00 are not run again
    assert s.upcoming()[0].run_at == pytest.approx(120.0 + 3 * HOUR - 60.0)  # 12:00
    clock.advance(3 * HOUR)
    assert [r.astimezone(BERLIN).hour for r in runs] == [11, 12]
    s.shutdown()


def test_a_wall_jump_back_of_hours_starts_the_cadence_afresh():
    # The clock was a day ahead and got corrected: waiting a day for the cursor would
    # be wrong; cron starts from the corrected time.
    clock = ManualClock(wall=datetime(2026, 6, 2, 10, 30, tzinfo=BERLIN))
    s = Scheduler(clock=clock, executor=SyncExecutor())
    s.schedule_cron(lambda: None, "0 * * * *", tz="Europe/Berlin")
    s.start()
    clock.jump_wall(-24 * HOUR)
    assert s.upcoming()[0].run_at == pytest.approx(0.5 * HOUR)
    s.shutdown()

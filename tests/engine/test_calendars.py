"""Calendars: skip = [...] and calendar = "holidays.toml" leave those days out of a
recurring task's occurrences, each day read in the task's zone. ManualClock: nothing
sleeps; each occurrence is recorded by the nominal time its run is told."""

from __future__ import annotations

import textwrap
from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

import pytest

from taskloom.engine import ManualClock, Scheduler, SyncExecutor, TaskDefinition, current_run
from taskloom.engine.calendars import SkipDays, parse_days
from taskloom.engine.workflow import WorkflowError, dumps, load, loads
from taskloom.listing import located

HOLIDAYS = ["2026-12-24", "2026-12-25..2026-12-26"]


def run_days(definitions, start: datetime, hours: int, step: float = 3600.0):
    """{task id: [local date of each occurrence that ran]} over ``hours`` from ``start``."""
    clock = ManualClock(wall=start)
    scheduler = Scheduler(workers=2, clock=clock, executor=SyncExecutor())
    told: dict[str, list[datetime]] = {d.id: [] for d in definitions}

    def record(tid):
        def task():
            run = current_run()
            assert run is not None and run.scheduled_at is not None
            told[tid].append(datetime.fromtimestamp(run.scheduled_at, UTC))

        return task

    from dataclasses import replace

    for definition in definitions:
        replace(definition, action=record(definition.id)).submit(scheduler)
    scheduler.start()
    try:
        for _ in range(int(hours * 3600 / step)):
            clock.advance(step)
    finally:
        scheduler.shutdown()
    return told


@pytest.mark.parametrize("zone", ["Europe/Berlin", "America/New_York"])
def test_a_cron_task_skips_its_calendar_days_in_its_own_zone(zone):
    cron = TaskDefinition(
        "nightly", print, cron="0 2 * * *", timezone=zone, skip=parse_days(HOLIDAYS)
    )
    told = run_days([cron], datetime(2026, 12, 21, 12, tzinfo=UTC), hours=8 * 24)
    local = [moment.astimezone(ZoneInfo(zone)) for moment in told["nightly"]]
    assert [(m.day, m.hour, m.minute) for m in local] == [
        (22, 2, 0),
        (23, 2, 0),
        (27, 2, 0),
        (28, 2, 0),
        (29, 2, 0),
    ]


def test_the_day_is_the_tasks_own_not_utc():
    """23:30 in New York on the 23rd is the 24th in UTC: it runs (and the 24th's does not)."""
    cron = TaskDefinition(
        "late", print, cron="30 23 * * *", timezone="America/New_York", skip=parse_days(HOLIDAYS)
    )
    told = run_days([cron], datetime(2026, 12, 22, 12, tzinfo=UTC), hours=6 * 24)
    local = [m.astimezone(ZoneInfo("America/New_York")).day for m in told["late"]]
    assert local == [22, 23, 27]


def test_an_interval_task_skips_the_days_and_keeps_its_cadence():
    every = TaskDefinition(
        "six", print, every=6 * 3600.0, skip=parse_days(["2026-12-24"]), timezone="Europe/Berlin"
    )
    told = run_days([every], datetime(2026, 12, 23, 0, tzinfo=UTC), hours=3 * 24)
    berlin = [m.astimezone(ZoneInfo("Europe/Berlin")) for m in told["six"]]
    assert all(m.date() != date(2026, 12, 24) for m in berlin)
    hours = [(m.day, m.hour) for m in told["six"]]
    # the cadence of 00, 06, 12, 18 UTC goes on: 23 Dec 00:00-22:59 UTC is the 24th in Berlin
    assert hours == [(23, 6), (23, 12), (23, 18), (25, 0), (25, 6), (25, 12), (25, 18), (26, 0)]


def test_a_fixed_delay_interval_task_skips_the_days_too():
    every = TaskDefinition(
        "six",
        print,
        every=6 * 3600.0,
        mode="fixed_delay",
        skip=parse_days(["2026-12-24"]),
        timezone="Europe/Berlin",
    )
    told = run_days([every], datetime(2026, 12, 23, 0, tzinfo=UTC), hours=3 * 24)
    berlin = [m.astimezone(ZoneInfo("Europe/Berlin")) for m in told["six"]]
    assert berlin and all(m.date() != date(2026, 12, 24) for m in berlin), berlin
    assert any(m.date() == date(2026, 12, 25) for m in berlin)  # it goes on after


def test_skip_days_are_merged_and_read_in_a_zone():
    assert parse_days(["2026-12-25..2026-12-26", "2026-12-24", "2026-12-31"]) == (
        (date(2026, 12, 24), date(2026, 12, 26)),
        (date(2026, 12, 31), date(2026, 12, 31)),
    )
    days = SkipDays(parse_days(HOLIDAYS), "Asia/Tokyo")
    assert days.skips(datetime(2026, 12, 23, 16, tzinfo=UTC))  # the 24th, 01:00 in Tokyo
    assert not days.skips(datetime(2026, 12, 23, 14, tzinfo=UTC))
    assert days.resumes(datetime(2026, 12, 24, tzinfo=UTC)) == datetime(
        2026, 12, 26, 15, tzinfo=UTC
    )


def test_a_calendar_file_is_shared_and_read_back_the_same(tmp_path):
    (tmp_path / "holidays.toml").write_text('skip = ["2026-12-24", "2026-12-25..2026-12-26"]\n')
    path = tmp_path / "flow.toml"
    path.write_text(
        textwrap.dedent(
            """
            [tasks.nightly]
            command = ["true"]
            cron = "0 2 * * *"
            timezone = "Europe/Berlin"
            calendar = "holidays.toml"
            skip = ["2026-12-31"]

            [tasks.hourly]
            command = ["true"]
            every = "1h"
            calendar = "holidays.toml"
            """
        )
    )
    workflow = load(path)
    assert workflow.tasks["nightly"].skip == parse_days([*HOLIDAYS, "2026-12-31"])
    assert workflow.tasks["hourly"].skip == parse_days(HOLIDAYS)
    assert loads(dumps(workflow), path) == workflow
    row = workflow.tasks["nightly"].to_row()
    assert row["skip"] == ["2026-12-24..2026-12-26", "2026-12-31"]
    assert TaskDefinition.from_row("nightly", row).skip == workflow.tasks["nightly"].skip


def test_bad_skip_days_and_calendars_are_named_with_their_place(tmp_path):
    (tmp_path / "bad.toml").write_text('skip = ["2026-02-30"]\n')
    path = tmp_path / "flow.toml"
    path.write_text(
        textwrap.dedent(
            """
            [tasks.a]
            command = ["true"]
            cron = "0 2 * * *"
            skip = ["2026-12-26..2026-12-24"]

            [tasks.b]
            command = ["true"]
            every = "1h"
            calendar = "bad.toml"

            [tasks.c]
            command = ["true"]
            skip = ["2026-12-24"]
            """
        )
    )
    with pytest.raises(WorkflowError) as caught:
        load(path)
    lines = [line for _, line in located(path, caught.value.problems)]
    assert lines[0] == (
        f"{path}:5:1: tasks.a.skip: '2026-12-26..2026-12-24' ends before it begins "
        "(a date, or a range like '2026-12-25..2026-12-26')"
    )
    assert lines[1] == (
        f"{tmp_path / 'bad.toml'}:1:10: calendar: '2026-02-30' is not a date like '2026-12-24'"
    )
    assert lines[2] == (
        f"{path}:14:1: tasks.c.skip: applies only to a recurring task (every or cron)"
    )
    assert len(lines) == 3


def test_next_shows_the_skipped_occurrences_as_skipped(tmp_path, capsys):
    from taskloom.listing import next_fires

    workflow = loads(
        textwrap.dedent(
            """
            [tasks.nightly]
            command = ["true"]
            cron = "0 2 * * *"
            timezone = "Europe/Berlin"
            skip = ["2026-12-24..2026-12-25"]
            """
        ),
        tmp_path / "flow.toml",
    )
    next_fires(workflow, 4, as_json=True, now=datetime(2026, 12, 23, 12, tzinfo=UTC))
    import json

    fires = json.loads(capsys.readouterr().out)["fires"]
    berlin = ZoneInfo("Europe/Berlin")
    days = [(datetime.fromisoformat(f["at"]).astimezone(berlin).day, f["skipped"]) for f in fires]
    assert days == [(24, True), (25, True), (26, False), (27, False)]
    next_fires(workflow, 3, as_json=False, now=datetime(2026, 12, 23, 12, tzinfo=UTC))
    lines = capsys.readouterr().out.splitlines()
    assert [line.endswith("skipped (calendar)") for line in lines] == [True, True, False]


def test_the_forecast_leaves_skipped_days_out_and_lists_them(tmp_path):
    from taskloom.engine.forecast import Plan, forecast
    from taskloom.forecasting import render_text, skipped

    workflow = loads(
        textwrap.dedent(
            """
            [tasks.nightly]
            command = ["true"]
            cron = "0 2 * * *"
            timezone = "Europe/Berlin"
            skip = ["2026-12-24"]
            expected = "1m"
            """
        ),
        tmp_path / "flow.toml",
    )
    start = datetime(2026, 12, 22, 12, tzinfo=UTC)
    result = forecast(Plan.from_workflow(workflow, start), horizon=4 * 86400.0, budget=0)
    berlin = ZoneInfo("Europe/Berlin")
    ran = sorted(result.at(run.start).astimezone(berlin).day for run in result.runs)
    assert ran == [23, 25, 26]
    left_out = skipped(workflow, result)
    assert [(f.task, f.at.astimezone(berlin).day) for f in left_out] == [("nightly", 24)]
    from taskloom.engine.durations_model import DurationModel

    assert "skipped (calendar): 1" in render_text(workflow, result, DurationModel(), "none")

"""Durations and times as a person reads them, and the run panel that shows them."""

from __future__ import annotations

import re

import pytest
from rich.console import Console

from taskloom import human
from taskloom.cli import LiveReport, RunMonitor, counted_tasks
from taskloom.engine import ManualClock, Scheduler, TaskState
from taskloom.engine.workflow import loads


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.0, "0 s"),
        (0.44, "440 ms"),
        (0.0004, "1 ms"),
        (1.04, "1 s"),
        (9.94, "9.9 s"),
        (42.4, "42 s"),
        (60, "1 min"),
        (303, "5 min 3 s"),
        (73112.2, "20 h 18 min"),
        (7200, "2 h"),
        (86400 * 3 + 3600 * 4 + 59, "3 d 4 h"),
        (-5, "0 s"),
        (float("inf"), "forever"),
    ],
)
def test_durations_read_in_the_two_largest_units(seconds, text):
    assert human.duration(seconds) == text


def test_clock_time_in_a_zone_with_the_date_when_not_today():
    wall = 1_796_232_600.0  # 2026-12-02 17:30 UTC = 2026-12-03 02:30 in Tokyo
    assert human.clock_time(wall, "Asia/Tokyo", now=wall - 3600) == "02:30 (Asia/Tokyo)"
    assert human.clock_time(wall, "Asia/Tokyo", now=wall - 86400) == (
        "2026-12-03 02:30 (Asia/Tokyo)"
    )
    # a hair before the occurrence (read back through a monotonic clock) is the occurrence
    assert human.clock_time(wall - 0.0004, "Asia/Tokyo", now=wall) == "02:30 (Asia/Tokyo)"


def test_the_live_panel_says_what_it_waits_for_in_hours_not_seconds():
    workflow = loads(
        '[tasks.prep]\ncommand = ["true"]\n[tasks.backup]\ncommand = ["true"]\nevery = "73112s"\n'
    )
    scheduler = Scheduler(clock=ManualClock())
    try:
        workflow.schedule_into(scheduler)
        monitor = RunMonitor(workflow, counted_tasks(workflow))
        infos = scheduler.tasks()
        monitor.seed(
            [i._replace(state=TaskState.SUCCEEDED) if i.id == "prep" else i for i in infos]
        )
        report = LiveReport(scheduler, monitor)
        console = Console(record=True, width=120, color_system=None)
        console.print(report.render())
        text = console.export_text()
    finally:
        scheduler.shutdown()
    assert "1/1 done" in text
    assert re.search(r"backup +20 h 18 min +recurring", text), text
    assert "73112" not in text
    assert "waiting for recurring tasks; Ctrl-C to stop" in text

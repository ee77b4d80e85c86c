"""The timeline shows the occurrences a calendar leaves out as skipped: a cross with
a tooltip, never an occurrence in the recurring band (real window, offscreen)."""

from __future__ import annotations

from datetime import UTC, datetime

from taskloom.engine import ManualClock, Scheduler, SyncExecutor, TaskDefinition
from taskloom.engine.calendars import parse_days
from taskloom.gui.occurrences import later_occurrences


def noop():
    return None


def test_a_skipped_occurrence_is_a_cross_in_the_timeline(qtbot, make_window):
    # 23:58 on the 23rd in UTC: the 00:00, 00:01, ... occurrences of the 24th are skipped
    clock = ManualClock(wall=datetime(2026, 12, 23, 23, 58, tzinfo=UTC))
    scheduler = Scheduler(workers=2, clock=clock, executor=SyncExecutor())
    TaskDefinition("tick", noop, cron="* * * * *", skip=parse_days(["2026-12-24"])).submit(
        scheduler
    )
    TaskDefinition("six", noop, every=60.0, skip=parse_days(["2026-12-24"])).submit(scheduler)
    scheduler.start()
    try:
        later = later_occurrences(scheduler, scheduler.upcoming(), horizon=300.0)
        kinds = {(e.task_id, e.kind) for e in later}
        assert ("tick", "skipped") in kinds and ("six", "skipped") in kinds
        for entry in later:  # nothing on the 24th is shown as an occurrence that runs
            wall = clock.wall().timestamp() + entry.run_at - clock.now()
            on_24th = datetime.fromtimestamp(wall, UTC).day == 24
            assert on_24th == (entry.kind == "skipped"), entry
        window = make_window(scheduler)
        timeline = window.timeline
        timeline.set_span(600.0)
        qtbot.waitUntil(lambda: "tick" in timeline.model.later, timeout=3000)
        timeline.canvas.repaint()
        tips = [tip for _rect, _tid, tip in timeline.canvas._hits]
        # (the timeline tells times by the machine's clock, not the ManualClock's wall)
        assert sum(tip.startswith("tick: skipped (calendar), ") for tip in tips) >= 2
        assert sum(tip.startswith("six: skipped (calendar), ") for tip in tips) >= 2
    finally:
        scheduler.shutdown()


def test_inside_a_skipped_day_the_ones_before_the_next_run_are_shown_skipped():
    clock = ManualClock(wall=datetime(2026, 12, 24, 20, 30, tzinfo=UTC))
    scheduler = Scheduler(workers=2, clock=clock, executor=SyncExecutor())
    TaskDefinition("hourly", noop, cron="0 * * * *", skip=parse_days(["2026-12-24"])).submit(
        scheduler
    )
    scheduler.start()
    try:
        (entry,) = scheduler.upcoming()
        assert entry.run_at - clock.now() == 3.5 * 3600  # the 25th, 00:00
        later = later_occurrences(scheduler, [entry], horizon=300.0)
        skipped = [e.run_at - clock.now() for e in later if e.kind == "skipped"]
        assert skipped == [0.5 * 3600, 1.5 * 3600, 2.5 * 3600]  # 21:00, 22:00, 23:00
    finally:
        scheduler.shutdown()

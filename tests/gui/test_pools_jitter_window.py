"""The window shows a task waiting for a slot of its pool, and a jittered occurrence
as the window it may start in (issue 26: pools and jitter)."""

from __future__ import annotations

import threading

import pytest

from taskloom.engine import Scheduler, TaskState
from taskloom.engine.durations import format_duration

S = TaskState


def noop():
    return None


def test_the_window_shows_a_pool_wait_and_a_jitter_window(qtbot, make_window):
    scheduler = Scheduler(workers=4, pools={"db": 1})
    gate = threading.Event()
    try:
        scheduler.add(lambda: gate.wait(10), name="hold", pool="db", priority=1)
        scheduler.add(noop, name="load", pool="db")
        scheduler.schedule_after(noop, 3600.0, name="nightly", jitter=300.0)
        scheduler.start()
        window = make_window(scheduler)
        qtbot.waitUntil(lambda: scheduler.pool_wait("load") is not None, timeout=10000)
        qtbot.waitUntil(lambda: window.bridge.tasks["load"].state is S.READY, timeout=10000)
        window.select_tasks(["load"])
        why = window.inspector.fields["why not"].text()
        assert why == "ready, waiting for pool db: 1 of 1 busy"
        assert "counts against pool db" in window.inspector.fields["rule"].text()

        window.select_tasks(["nightly"])
        assert "starts up to 5m late (jitter)" in window.inspector.fields["trigger"].text()
        timeline = window.timeline
        qtbot.waitUntil(lambda: timeline.model.jitter_window("nightly") is not None)
        start, end = timeline.model.jitter_window("nightly")
        assert end - start == pytest.approx(300.0)
        timeline.canvas.grab()  # paints: the entry's tooltip says it is a window
        tips = [tip for _, tid, tip in timeline.canvas._hits if tid == "nightly"]
        assert any("starts within 5 min after (jitter)" in tip for tip in tips), tips
    finally:
        gate.set()
        scheduler.shutdown(wait=True)


def give():
    return {"rows": 17}


def test_the_inspector_shows_an_attempts_jitter_delay_and_its_outputs(
    qtbot, make_window, manual_scheduler
):
    s, clock = manual_scheduler, manual_scheduler.clock
    s.schedule_after(f"{__name__}:give", 10.0, name="extract", jitter=60.0)
    s.start()
    clock.advance(10.0)  # due: waits its random delay
    clock.advance(s.next_due() - clock.now())
    assert s.task("extract").state is S.SUCCEEDED
    delay = s.jitter_delays("extract")[1]
    window = make_window(s)
    window.select_tasks(["extract"])
    qtbot.waitUntil(lambda: "outputs: rows=17" in window.inspector.output.toPlainText())
    text = window.inspector.output.toPlainText()
    assert f"jitter: started {format_duration(round(delay, 3))} after its time" in text


def test_a_jittered_tasks_forecast_ghost_is_drawn_as_its_window(qtbot, make_window):
    # The forecast's ghost of a one-shot task with jitter starts at its earliest time;
    # the timeline draws the window it may start in, and says so.
    scheduler = Scheduler(workers=2)
    gate = threading.Event()
    try:
        scheduler.add(lambda: gate.wait(10), name="hold")
        scheduler.add(noop, name="after", deps=["hold"], jitter=120.0)
        scheduler.add(noop, name="plain", deps=["hold"])
        scheduler.start()
        window = make_window(scheduler)
        timeline = window.timeline
        qtbot.waitUntil(lambda: {"after", "plain"} <= set(timeline.model.lanes), timeout=10000)
        # The live forecast's own ghosts first (else they may land during the grab below).
        qtbot.waitUntil(lambda: window.forecast_view.live is not None, timeout=20000)
        now = scheduler.clock.now()
        timeline.set_ghosts(
            # just after now: inside whatever span the timeline shows
            {"after": [(now + 0.2, now + 1, False)], "plain": [(now + 0.2, now + 1, False)]}
        )
        timeline.canvas.grab()
        assert timeline.model.jitter["after"] == 120.0 and not timeline.model.jitter["plain"]
        tips = {tid: tip for _, tid, tip in timeline.canvas._hits if "forecast" in tip}
        assert "may start up to 2 min later (jitter)" in tips["after"], tips
        assert "jitter" not in tips["plain"]
    finally:
        gate.set()
        scheduler.shutdown(wait=True)


def test_a_forecast_does_not_ask_every_task_for_its_jitter(qtbot, make_window):
    # Found on a 10,000-task graph: the first forecast asked the engine for each task's
    # definition on the GUI thread (100-125 ms). Only painted ghosts ask, once each.
    scheduler = Scheduler(workers=2)
    try:
        for i in range(300):
            scheduler.schedule_after(noop, 3600.0, name=f"t{i}")
        window = make_window(scheduler)
        timeline = window.timeline
        asked = []
        timeline.jitter_of = lambda tid: asked.append(tid)
        now = scheduler.clock.now()
        timeline.set_ghosts({f"t{i}": [(now + 0.2, now + 1, False)] for i in range(300)})
        assert asked == []
        timeline.canvas.grab()
        timeline.canvas.grab()
        assert len(asked) == len(set(asked)) < 300
    finally:
        scheduler.shutdown(wait=True)

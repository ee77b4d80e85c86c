"""The timeline: markers for upcoming entries by kind, late entries, bars for attempts, clicks,
zooming and panning back in time."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QPoint, QPointF, Qt
from PySide6.QtGui import QMouseEvent, QWheelEvent
from PySide6.QtWidgets import QApplication, QToolTip

from taskloom.engine import Entry, RetryPolicy, TaskState
from taskloom.gui.timeline import DEFAULT_SPAN, LABEL_WIDTH, LANE_HEIGHT, NOW_AT, SPANS

S = TaskState


def noop():
    return None


def flaky():
    raise OSError("timeout talking to s3")


def tips(timeline):
    return [tip for _rect, _tid, tip in timeline.canvas._hits]


def test_upcoming_entries_attempt_bars_and_click(qtbot, make_window, manual_scheduler):
    manual_scheduler.schedule_after(noop, 40, name="later")
    manual_scheduler.schedule_every(noop, 15, name="tick")
    manual_scheduler.add(flaky, name="upload", retry=RetryPolicy(max_attempts=3, base=20, jitter=0))
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    timeline = window.timeline
    timeline.set_span(DEFAULT_SPAN)  # a fixed window: no automatic fit
    qtbot.waitUntil(lambda: "upload" in timeline.model.entries, timeout=3000)
    entries = {tid: [e.kind for e in es] for tid, es in timeline.model.entries.items()}
    assert entries == {"later": ["scheduled"], "tick": ["recurring"], "upload": ["retry"]}
    assert len(timeline.model.later["tick"]) > 1  # and its later occurrences, drawn faint
    timeline.canvas.repaint()
    text = "\n".join(tips(timeline))
    assert "later: scheduled, in 40.0 s" in text
    assert "upload: retry (attempt 2), in 20.0 s" in text
    assert "tick: recurring, in 15.0 s" in text
    assert "upload attempt 1: failed" in text  # the bar of the failed attempt
    # Markers sit where their time is: 'later' (40 s) right of 'tick' (15 s).
    now = manual_scheduler.clock.now()
    assert timeline.canvas.x_of(now + 40, now) > timeline.canvas.x_of(now + 15, now)
    past = DEFAULT_SPAN * NOW_AT
    assert past == 30.0
    assert timeline.canvas.x_of(now - past, now) == LABEL_WIDTH  # the axis starts 30 s ago

    row = timeline.model.lane_index["later"]
    qtbot.mouseClick(
        timeline.canvas,
        Qt.MouseButton.LeftButton,
        pos=QPoint(200, row * LANE_HEIGHT + LANE_HEIGHT // 2),
    )
    assert window.graph_view.selected() == ["later"]
    assert window.inspector.title.text() == "later"


def test_entry_past_due_is_marked_late(qtbot, make_window, manual_scheduler):
    manual_scheduler.schedule_after(noop, 5, name="job")
    window = make_window(manual_scheduler)
    timeline = window.timeline
    now = manual_scheduler.clock.now()
    # An entry still on the heap after its time (a busy or stalled dispatcher).
    timeline.set_upcoming([Entry(now - 7.0, 0, "job", "scheduled")])
    timeline.canvas.repaint()
    assert any("job: scheduled, late by 7.0 s" in tip for tip in tips(timeline))
    timeline.set_upcoming([Entry(now + 7.0, 0, "job", "scheduled")])
    timeline.canvas.repaint()
    assert not any("late" in tip for tip in tips(timeline))


def wheel(widget, dy=0, dx=0, modifiers=Qt.KeyboardModifier.NoModifier, x=400.0):
    pos = QPointF(x, 5)
    event = QWheelEvent(
        pos,
        widget.mapToGlobal(pos),
        QPoint(0, 0),
        QPoint(dx, dy),
        Qt.MouseButton.NoButton,
        modifiers,
        Qt.ScrollPhase.NoScrollPhase,
        False,
    )
    QApplication.sendEvent(widget, event)
    return event


def test_ctrl_wheel_zooms_from_ten_seconds_to_a_week_ahead(qtbot, make_window, manual_scheduler):
    window = make_window(manual_scheduler)
    canvas = window.timeline.canvas
    canvas.set_span(DEFAULT_SPAN)
    assert canvas.span == DEFAULT_SPAN and canvas.following and not canvas.auto_fit
    wheel(canvas, dy=-120, modifiers=Qt.KeyboardModifier.ControlModifier)
    assert canvas.span == 300.0
    for _ in range(20):
        wheel(canvas, dy=-120, modifiers=Qt.KeyboardModifier.ControlModifier)
    assert canvas.span == SPANS[-1] and canvas.horizon == 7 * 86400.0  # a week ahead
    for _ in range(20):
        wheel(canvas, dy=120, modifiers=Qt.KeyboardModifier.ControlModifier)
    assert canvas.span == SPANS[0] == 10.0
    assert canvas.following  # zooming while following keeps now in view
    now = manual_scheduler.clock.now()
    assert canvas.window(now) == (now - 2.0, now + 8.0)


def test_panning_back_and_home_follows_now_again(qtbot, make_window, manual_scheduler):
    window = make_window(manual_scheduler)
    timeline = window.timeline
    canvas = timeline.canvas
    canvas.set_span(DEFAULT_SPAN)
    manual_scheduler.clock.advance(1000)
    now = manual_scheduler.clock.now()
    before = canvas.window(now)
    wheel(canvas, dy=120, modifiers=Qt.KeyboardModifier.ShiftModifier)  # back in time
    assert not canvas.following
    assert canvas.window(now)[0] == before[0] - 0.1 * DEFAULT_SPAN
    wheel(canvas, dx=-120)  # a horizontal wheel the other way
    assert canvas.window(now) == before
    # Drag right by a quarter of the plot: the window moves a quarter span back.
    y = 5
    start = QPoint(LABEL_WIDTH + 100, y)
    qtbot.mousePress(canvas, Qt.MouseButton.LeftButton, pos=start)
    quarter = int(canvas.plot_width() / 4)
    move = QMouseEvent(
        QEvent.Type.MouseMove,
        QPointF(start.x() + quarter, y),
        canvas.mapToGlobal(QPointF(start.x() + quarter, y)),
        Qt.MouseButton.LeftButton,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    QApplication.sendEvent(canvas, move)
    qtbot.mouseRelease(canvas, Qt.MouseButton.LeftButton, pos=QPoint(start.x() + quarter, y))
    moved = before[0] - canvas.window(now)[0]
    assert abs(moved - quarter / canvas.plot_width() * DEFAULT_SPAN) < 1e-6
    # Time passes; a panned window stays where it is, and the Now button shows.
    manual_scheduler.clock.advance(60)
    assert canvas.window()[0] == canvas.window(now)[0]
    timeline.axis.repaint()
    assert timeline.axis.now_button.isVisible()
    canvas.setFocus()
    qtbot.keyClick(canvas, Qt.Key.Key_Home)
    assert canvas.following
    later = manual_scheduler.clock.now()
    assert canvas.window() == (later - 30.0, later + 120.0)
    timeline.axis.repaint()
    assert not timeline.axis.now_button.isVisible()


def test_zooming_a_panned_window_keeps_the_time_under_the_mouse(
    qtbot, make_window, manual_scheduler
):
    window = make_window(manual_scheduler)
    canvas = window.timeline.canvas
    canvas.set_span(DEFAULT_SPAN)  # no automatic fit (a forecast arriving would refit)
    manual_scheduler.clock.advance(10_000)
    canvas.pan(-3000)
    now = manual_scheduler.clock.now()
    x = LABEL_WIDTH + canvas.plot_width() * 0.75
    under = canvas.t_of(x, now)
    wheel(canvas, dy=-120, modifiers=Qt.KeyboardModifier.ControlModifier, x=x)
    assert canvas.span == 300.0
    assert abs(canvas.t_of(x, now) - under) < 1e-6


def test_hovering_a_marker_shows_its_tooltip(qtbot, make_window, manual_scheduler):
    manual_scheduler.schedule_after(noop, 40, name="later")
    window = make_window(manual_scheduler)
    canvas = window.timeline.canvas
    canvas.repaint()
    rect, tid, tip = canvas._hits[0]
    assert tid == "later"
    move = QMouseEvent(
        QEvent.Type.MouseMove,
        rect.center(),
        canvas.mapToGlobal(rect.center()),
        Qt.MouseButton.NoButton,
        Qt.MouseButton.NoButton,
        Qt.KeyboardModifier.NoModifier,
    )
    QApplication.sendEvent(canvas, move)
    assert QToolTip.isVisible() and "later: scheduled, in 40.0 s" in QToolTip.text()
    away = QMouseEvent(
        QEvent.Type.MouseMove,
        QPointF(5, 5),
        canvas.mapToGlobal(QPointF(5, 5)),
        Qt.MouseButton.NoButton,
        Qt.MouseButton.NoButton,
        Qt.KeyboardModifier.NoModifier,
    )
    QApplication.sendEvent(canvas, away)
    qtbot.waitUntil(lambda: not QToolTip.isVisible(), timeout=3000)


def test_lanes_by_worker_show_which_worker_ran_each_attempt(qtbot, make_window):
    import threading

    from taskloom.engine import Scheduler

    s = Scheduler(workers=2)
    gate = threading.Barrier(2, timeout=5)  # two tasks at once: each on its own worker

    def pair():
        gate.wait()

    s.add(pair, name="left")
    s.add(pair, name="right")
    s.add(noop, name="after", deps=["left", "right"])
    s.start()
    try:
        window = make_window(s)
        timeline = window.timeline
        assert s.wait(10)
        timeline.set_by_worker(True)  # what View > Lanes by worker does
        assert timeline.by_worker_action.isChecked()
        workers = {a.worker for tid in ("left", "right", "after") for a in s.attempts(tid)}
        assert len(workers) == 2
        qtbot.waitUntil(lambda: set(timeline.model.workers) == workers, timeout=3000)
        bars = {
            bar[4]: worker for worker, rows in timeline.model.worker_bars.items() for bar in rows
        }
        assert bars["left"] != bars["right"]  # they ran side by side
        timeline.canvas.repaint()
        assert any(" on taskloom-worker-" in tip for _rect, _tid, tip in timeline.canvas._hits)
        # a click on a bar selects its task in the graph and the inspector
        point = timeline.canvas._hits[0][0].center().toPoint()
        topmost = [tid for rect, tid, _ in reversed(timeline.canvas._hits) if rect.contains(point)]
        qtbot.mouseClick(timeline.canvas, Qt.MouseButton.LeftButton, pos=point)
        assert window.graph_view.selected() == topmost[:1]  # the bar drawn on top wins
        timeline.set_by_worker(False)
        assert timeline.model.visible_lanes() == timeline.model.lanes
    finally:
        s.shutdown()


def test_entry_ten_seconds_ahead_shows_then_goes_once_it_ran(qtbot, make_window, manual_scheduler):
    manual_scheduler.schedule_after(noop, 10, name="soon")
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    timeline = window.timeline
    qtbot.waitUntil(lambda: "soon" in timeline.model.entries, timeout=3000)
    (entry,) = timeline.model.entries["soon"]
    assert entry.kind == "scheduled"
    assert entry.run_at == manual_scheduler.clock.now() + 10
    timeline.canvas.repaint()
    assert any(tip.startswith("soon: scheduled, in 10.0 s") for tip in tips(timeline))
    manual_scheduler.clock.advance(10)  # it comes due and runs (SyncExecutor)
    qtbot.waitUntil(lambda: "soon" not in timeline.model.entries, timeout=3000)
    qtbot.waitUntil(lambda: bool(timeline.model.bars.get("soon")), timeout=3000)
    assert timeline.model.bars["soon"][-1][2] == "succeeded"  # now a bar of the run


def test_with_many_tasks_only_those_with_something_to_show_get_a_lane(
    qtbot, make_window, manual_scheduler
):
    from taskloom.gui.timeline import MANY_LANES

    manual_scheduler.schedule_after(noop, 3600, name="gate")
    waiting = [f"w{i:03d}" for i in range(MANY_LANES + 50)]
    for tid in waiting:
        manual_scheduler.add(noop, name=tid, deps=["gate"])  # PENDING: nothing to show yet
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    timeline = window.timeline
    qtbot.waitUntil(lambda: timeline.model.visible_lanes() == ["gate"], timeout=3000)
    assert timeline.canvas.height() == LANE_HEIGHT  # one lane, not 251
    timeline.select("w007")  # the selected task always gets a lane
    assert timeline.model.visible_lanes() == ["gate", "w007"]
    manual_scheduler.clock.advance(3600)  # the gate opens: everything runs
    qtbot.waitUntil(lambda: len(timeline.model.visible_lanes()) == len(waiting) + 1, timeout=5000)


def test_lanes_run_upstream_first_then_in_natural_name_order():
    from taskloom.engine import TaskInfo, TaskState
    from taskloom.gui.timeline import TimelineModel

    def task(tid, deps=()):
        return TaskInfo(
            tid, tid, TaskState.PENDING, tuple(deps), (), 0, 0, None, False, False, None
        )

    model = TimelineModel()
    model.set_tasks({t: task(t) for t in ("task-10", "task-2", "Task-1")})
    assert model.lanes == ["Task-1", "task-2", "task-10"]
    # A task that waits for another comes after it, whatever its name.
    model.set_tasks({"a-first": task("a-first", deps=["task-10"])})
    assert model.lanes == ["Task-1", "task-2", "task-10", "a-first"]
    model.set_tasks({"task-3": task("task-3")})
    assert model.lanes == ["Task-1", "task-2", "task-3", "task-10", "a-first"]
    assert model.lane_index["task-10"] == 3


def test_a_collapsed_group_is_one_lane_with_its_tasks_bars():
    from taskloom.engine import Event, TaskInfo
    from taskloom.gui.timeline import GROUP_LANE, TimelineModel

    def task(tid):
        return TaskInfo(tid, tid, TaskState.PENDING, (), (), 0, 0, None, False, False, None)

    model = TimelineModel()
    model.set_tasks({t: task(t) for t in ("etl.b", "solo", "etl.a")})
    model.set_lane_groups(lambda tid: "etl" if tid.startswith("etl.") else None)
    assert model.visible_lanes() == [GROUP_LANE + "etl", "solo"]
    assert model.group_sizes == {"etl": 2}

    def event(kind, tid, at, outcome=None):
        return Event(1, kind, tid, None, at, 1, None, None, outcome=outcome)

    model.add_events([event("running", "etl.a", 5.0), event("running", "solo", 6.0)])
    model.add_events([event("succeeded", "etl.a", 7.0, outcome="succeeded")])
    [(tid, bar)] = model.group_bars["etl"]
    assert tid == "etl.a" and bar[:3] == [5.0, 7.0, "succeeded"]  # ended in the group lane too
    model.set_lane_groups(None)  # the group expanded again: a lane per task
    assert model.visible_lanes() == ["etl.a", "etl.b", "solo"]


def test_view_menu_looks_ahead_an_hour_a_day_or_a_week(qtbot, make_window, manual_scheduler):
    from PySide6.QtGui import QAction

    window = make_window(manual_scheduler)
    canvas = window.timeline.canvas
    canvas.pan(-3000)  # a person looked back; looking ahead follows now again
    for name, seconds in (("week", 7 * 86400.0), ("hour", 3600.0), ("day", 86400.0)):
        window.findChild(QAction, f"lookAhead_{name}").trigger()
        assert canvas.following and not canvas.auto_fit
        assert abs(canvas.horizon - seconds) < 1e-6
        now = manual_scheduler.clock.now()
        assert abs(canvas.window(now)[1] - (now + seconds)) < 1e-6


# The axis labels and the fitted range (from the screenshot review).
def test_axis_labels_are_centred_on_their_ticks(qtbot, make_window, manual_scheduler):
    window = make_window(manual_scheduler)
    timeline = window.timeline
    timeline.set_span(150)
    axis, canvas = timeline.axis, timeline.canvas
    axis.repaint()
    now = manual_scheduler.clock.now()
    assert len(axis.label_rects) >= 3
    for t, box in axis.label_rects:
        assert abs(box.center().x() - canvas.x_of(t, now)) < 0.5
        assert box.left() >= LABEL_WIDTH and box.right() <= axis.width()


def test_timeline_fits_a_short_run_until_the_user_zooms(qtbot, make_window, manual_scheduler):
    manual_scheduler.schedule_after(noop, 2, name="first")
    manual_scheduler.schedule_after(noop, 5, name="second")
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    timeline = window.timeline
    canvas = timeline.canvas
    qtbot.waitUntil(lambda: len(timeline.model.entries) == 2, timeout=3000)
    manual_scheduler.clock.advance(3)  # "first" runs: a bar from t0+2
    qtbot.waitUntil(lambda: "first" in timeline.model.bars, timeout=3000)
    now = manual_scheduler.clock.now()
    assert canvas.refit(now) or canvas.fit_left is not None
    left, right = canvas.window(now)
    assert canvas.span == 20.0  # 3 s of work fits the smallest fitted range
    started = timeline.model.bars["first"][0][0]
    assert left < started and right > now + 2  # the bar and the upcoming "second"
    width = canvas.x_of(started + 1, now) - canvas.x_of(started, now)
    assert width > 15  # a 1 s attempt is readable (2 px on the old fixed 150 s range)
    canvas.zoom(-10)  # the user zooms in: no more fitting
    assert canvas.span == SPANS[0] == 10.0
    assert not canvas.auto_fit and not canvas.refit(now)

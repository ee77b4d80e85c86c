"""The timeline: markers for upcoming entries by kind, late entries, bars for attempts, clicks."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QPoint, QPointF, Qt
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QApplication, QToolTip

from engine import Entry, RetryPolicy, TaskState
from gui.timeline import LABEL_WIDTH, LANE_HEIGHT, PAST

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
    qtbot.waitUntil(lambda: "upload" in timeline.model.entries, timeout=3000)
    entries = {tid: [e.kind for e in es] for tid, es in timeline.model.entries.items()}
    assert entries == {"later": ["scheduled"], "tick": ["recurring"], "upload": ["retry"]}
    timeline.canvas.repaint()
    text = "\n".join(tips(timeline))
    assert "later: scheduled, in 40.0 s" in text
    assert "upload: retry (attempt 2), in 20.0 s" in text
    assert "tick: recurring, in 15.0 s" in text
    assert "upload attempt 1: failed" in text  # the bar of the failed attempt
    # Markers sit where their time is: 'later' (40 s) right of 'tick' (15 s).
    now = manual_scheduler.clock.now()
    assert timeline.canvas.x_of(now + 40, now) > timeline.canvas.x_of(now + 15, now)
    assert timeline.canvas.x_of(now - PAST, now) == LABEL_WIDTH  # the axis starts 30 s ago

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


def test_ctrl_wheel_zooms_the_horizon(qtbot, make_window, manual_scheduler):
    window = make_window(manual_scheduler)
    timeline = window.timeline
    before = timeline.canvas.horizon
    timeline.canvas.horizonChanged.emit(600.0)
    assert timeline.canvas.horizon == 600.0 != before


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

"""Issue 24, items 9 and 11: the timeline of a recurring task and of a long look-ahead,
and a past run opened read-only in the graph and the timeline."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QPointF, Qt
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QApplication, QToolTip

from taskloom.gui.timeline import SPANS


def noop_task():
    return None


def _hover(canvas, point: QPointF) -> str:
    move = QMouseEvent(
        QEvent.Type.MouseMove,
        point,
        canvas.mapToGlobal(point),
        Qt.MouseButton.NoButton,
        Qt.MouseButton.NoButton,
        Qt.KeyboardModifier.NoModifier,
    )
    QApplication.sendEvent(canvas, move)
    return QToolTip.text() if QToolTip.isVisible() else ""


def test_a_recurring_task_is_one_band_and_the_look_ahead_says_where_its_ghosts_end(
    qtbot, make_window, manual_scheduler
):
    manual_scheduler.schedule_after(noop_task, 40, name="pipeline")
    manual_scheduler.schedule_every(noop_task, 10, name="tick")
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    timeline, canvas = window.timeline, window.timeline.canvas
    forecaster = window.forecast_view.forecaster
    qtbot.waitUntil(lambda: len(timeline.model.ghosts.get("tick", ())) > 30, timeout=20_000)

    # Zoom out with the keyboard to ten minutes: 60 occurrences of "tick" in view.
    qtbot.mouseClick(canvas, Qt.MouseButton.LeftButton, pos=canvas.rect().center())
    while canvas.span < 600:
        qtbot.keyClick(canvas, Qt.Key.Key_Minus)
    canvas.repaint()
    tick_hits = [hit for hit in canvas._hits if hit[1] == "tick"]
    # One band and the next occurrence's marker, not a comb of 60 ghosts and markers.
    assert len(tick_hits) <= 3, [hit[2] for hit in tick_hits]
    bands = [(rect, label) for tid, rect, label in canvas.bands if tid == "tick"]
    assert len(bands) == 1 and bands[0][1] == "every 10 s"
    rect = bands[0][0]
    assert rect.width() > canvas.plot_width() * 0.5  # the band runs through the window
    tip = _hover(canvas, rect.center() + QPointF(rect.width() / 4, 0))
    assert "every 10 s" in tip and "occurrences in view" in tip

    # The widest zoom is the week's look-ahead: while a forecast that far ahead is
    # computed the timeline says it is filling, then where the ghosts end (+2 d).
    filling: list[bool] = []
    forecaster.computing.connect(lambda _h: filling.append(timeline.model.forecast_filling))
    computed = forecaster.computed
    while canvas.span < SPANS[-1]:
        qtbot.keyClick(canvas, Qt.Key.Key_Minus)
    qtbot.waitUntil(lambda: True in filling, timeout=10_000)
    timeline.axis.repaint()
    assert timeline.axis.reach_label.startswith("filling…")
    qtbot.waitUntil(
        lambda: forecaster.computed > computed and not timeline.model.forecast_filling,
        timeout=60_000,
    )
    now = manual_scheduler.clock.now()
    reach = timeline.model.forecast_reach
    assert reach is not None and now + 86400 < reach < now + 6 * 86400
    timeline.axis.repaint()
    canvas.repaint()
    assert timeline.axis.reach_label.startswith("ghosts end +2")
    assert canvas.reach_region is not None
    region = canvas.reach_region
    tip = _hover(canvas, QPointF(region.right() - 4, 4))
    assert "20,000 simulated runs" in tip

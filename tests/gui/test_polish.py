"""Issues 24/25 follow-up: what a tester found in offscreen grabs of a small window."""

from __future__ import annotations

from PySide6.QtGui import QColor

from taskloom.engine import TaskState

S = TaskState


def noop():
    return None


def test_a_long_message_ends_before_the_state_counts_at_820x520(
    qtbot, make_window, manual_scheduler
):
    """At 820x520 the message ran into the counts ("…: 0 of✓ 1 succeeded"): now it is
    elided and a gap of plain background is left before the counts."""
    manual_scheduler.add(noop, name="ok")
    window = make_window(manual_scheduler, size=(820, 520))
    manual_scheduler.start()
    counts = window.status_panel.counts
    qtbot.waitUntil(lambda: "1 succeeded" in counts.text(), timeout=3000)
    bar = window.statusBar()
    bar.showMessage("W" * 300)
    qtbot.waitUntil(lambda: counts.isVisible() and counts.x() > 100)
    image = bar.grab().toImage()
    background = bar.palette().window().color()

    def inked(x: int) -> bool:
        return any(QColor(image.pixel(x, y)) != background for y in range(2, image.height() - 2))

    start = counts.x() - 8  # the columns just before the counts' frame
    assert not any(inked(x) for x in range(start, counts.x() - 2)), "the message runs on"
    assert any(inked(x) for x in range(6, 40)), "the message is drawn"
    assert bar.shown_message().endswith("…")

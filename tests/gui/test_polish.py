"""The small things from issue 13's polish list, each checked."""

from __future__ import annotations

from PySide6.QtGui import QFontMetrics

from taskloom.engine import TaskState

S = TaskState


def noop():
    return None


def test_event_log_shows_whole_dependency_event_names(qtbot):
    from taskloom.gui.event_log import EventLog

    log = EventLog()
    qtbot.addWidget(log)
    log.resize(500, 300)
    metrics = QFontMetrics(log.table.font())
    for label in ("• dependency removed", "• dependency added", "↻ retry wait"):
        assert log.table.columnWidth(3) >= metrics.horizontalAdvance(label) + 8


def _alpha(pixmap) -> float:
    image = pixmap.toImage()
    total = sum(
        image.pixelColor(x, y).alpha() for x in range(image.width()) for y in range(image.height())
    )
    return total / (image.width() * image.height())


def test_disabled_icons_carry_a_faded_picture_of_their_own(qtbot):
    """Not the style's generated one, which in the dark theme looked enabled."""
    from PySide6.QtGui import QIcon

    from taskloom.gui.icons import icon

    run_now = icon("run-now")
    normal = _alpha(run_now.pixmap(24, 24, QIcon.Mode.Normal))
    disabled = _alpha(run_now.pixmap(24, 24, QIcon.Mode.Disabled))
    assert normal > 0 and disabled < normal * 0.5

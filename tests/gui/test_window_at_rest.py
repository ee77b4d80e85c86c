"""A window at rest costs nothing: its timers fire only when something on screen can
change (issue 25). Counts of timer firings and repaints are asserted, never times
(benchmarks/idle_bench.py measures the CPU)."""

from __future__ import annotations

import os
import signal
import subprocess

import pytest
from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QApplication

from taskloom.gui.run_summary import delay_changes_in, describe_delay

HOURS = 3600.0


def noop() -> None:
    pass


class Firings(QObject):
    """Counts the timer events of QTimers inside ``window``, and the timeline's paints."""

    def __init__(self, window):
        super().__init__()
        self.window = window
        self.timers: list[str] = []
        self.paints = 0
        QApplication.instance().installEventFilter(self)

    def eventFilter(self, obj, event) -> bool:
        kind = event.type()
        if kind == QEvent.Type.Timer and isinstance(obj, QTimer) and self._inside(obj):
            parent = obj.parent()
            self.timers.append(f"{type(parent).__name__}/{obj.interval()}ms")
        elif kind == QEvent.Type.Paint and obj is self.window.timeline.canvas:
            self.paints += 1
        return False

    def _inside(self, obj) -> bool:
        while obj is not None:
            if obj is self.window:
                return True
            obj = obj.parent()
        return False

    def remove(self) -> None:
        QApplication.instance().removeEventFilter(self)


@pytest.fixture
def resting_window(qtbot, make_window, threaded_scheduler):
    """A window on a running engine whose only task is due in five hours."""
    threaded_scheduler.schedule(noop, threaded_scheduler.clock.now() + 5 * HOURS, name="nightly")
    threaded_scheduler.start()
    window = make_window(threaded_scheduler)
    forecaster = window.forecast_view.forecaster
    qtbot.waitUntil(lambda: forecaster.computed >= 1, timeout=30_000)
    bridge = window.bridge
    qtbot.waitUntil(lambda: not bridge._timer.isActive() and not bridge._upcoming_timer.isActive())
    return window


def test_a_window_at_rest_is_woken_only_as_often_as_its_now_line_moves(qtbot, resting_window):
    window = resting_window
    firings = Firings(window)
    try:
        qtbot.wait(2000)  # the window rests: what fires meanwhile is counted
    finally:
        firings.remove()
    # Before: the bridge every 33 ms, the timeline every 100 ms, the status bar every
    # 250 ms, the inspector and the forecast's view every second: ~110 in 2 s.
    # Now: the timeline when now has moved a pixel (the window shows 10 min at most:
    # about a second a pixel), and nothing else.
    assert len(firings.timers) <= 6, firings.timers
    assert firings.paints <= 4
    assert not window._status_timer.isActive()  # nothing runs, nothing finished lately
    assert not window.bridge._timer.isActive()


def test_an_event_wakes_the_bridge_and_reaches_the_window(qtbot, resting_window):
    window = resting_window
    scheduler = window.scheduler
    scheduler.add(noop, name="now")
    qtbot.waitUntil(lambda: window.bridge.tasks.get("now") is not None)
    qtbot.waitUntil(lambda: window.bridge.tasks["now"].state.settled)
    qtbot.waitUntil(lambda: not window.bridge._timer.isActive())  # and it rests again


def test_the_inspector_ticks_when_its_countdown_changes_not_every_second(qtbot, resting_window):
    window = resting_window
    window.select_tasks(["nightly"])
    qtbot.waitUntil(lambda: window.inspector.task_id == "nightly")
    assert window.inspector.fields["next run"].text() == "in 5.0 h"
    # "in 5.0 h" says the same for minutes: the next tick is when it says "in 4.9 h".
    assert window._inspector_timer.remainingTime() > 60_000
    window.select_tasks([])
    qtbot.waitUntil(lambda: window.inspector.task_id is None)
    assert window._inspector_timer.remainingTime() > 60_000  # the summary's "in 5.0 h"


def test_nothing_ticks_while_the_window_is_minimised(qtbot, resting_window):
    window = resting_window
    window.showMinimized()
    qtbot.waitUntil(window.isMinimized)
    QApplication.processEvents()
    ticks = window.timeline.ticks
    firings = Firings(window)
    try:
        qtbot.wait(1500)
    finally:
        firings.remove()
    assert window.timeline.ticks <= ticks + 1  # at most one, that finds it minimised
    assert not window._inspector_timer.isActive()
    assert not window.timeline._timer.isActive()
    assert firings.paints == 0
    window.showNormal()
    qtbot.waitUntil(lambda: not window.isMinimized())
    assert window._inspector_timer.isActive()  # its countdown again
    qtbot.waitUntil(lambda: window.timeline.ticks > ticks)  # redrawn on being restored


def test_the_timeline_moves_a_pixel_per_tick_and_not_at_all_when_panned_into_the_past(
    qtbot, resting_window
):
    timeline = resting_window.timeline
    canvas = timeline.canvas
    now = canvas.clock_now()
    per_pixel = canvas.span / canvas.plot_width()
    assert timeline._next_move(now) == pytest.approx(per_pixel)  # following now
    canvas.pan(-10 * canvas.span)  # far into the past: now is out of view
    assert timeline._next_move(canvas.clock_now()) == float("inf")
    canvas.pan(20 * canvas.span)  # ahead: something moves once now comes into view
    now = canvas.clock_now()
    assert timeline._next_move(now) == pytest.approx(canvas.window(now)[0] - now)


@pytest.mark.parametrize(
    "seconds", [5 * HOURS, 2 * HOURS + 7, 3599.0, 3601.0, 61.0, 59.5, 30.0, 0.5, -2.0, -3700.0]
)
def test_a_countdown_changes_its_text_when_delay_changes_in_says(seconds):
    wait = delay_changes_in(seconds)
    assert wait > 0
    assert describe_delay(seconds - (wait - 0.011)) == describe_delay(seconds)  # not before
    assert describe_delay(seconds - wait) != describe_delay(seconds)  # but then


@pytest.mark.timeout(30)
def test_a_signal_wakes_the_resting_event_loop_without_a_timer(qapp):
    from taskloom.app import _StopSignals

    stop = _StopSignals(qapp)
    stop.install()
    try:
        # Sent by another process once the loop waits: no Python code runs until the
        # signal's byte on the wakeup socket wakes the loop.
        killers = []
        QTimer.singleShot(
            0, lambda: killers.append(subprocess.Popen(["kill", "-TERM", str(os.getpid())]))
        )
        assert QApplication.exec() == 0
        assert stop.requested
        killers[0].wait(timeout=10)
    finally:
        stop.restore()
    assert signal.getsignal(signal.SIGTERM) is not stop._stop

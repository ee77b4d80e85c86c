"""A running node shows how long its attempt has taken."""

from __future__ import annotations

import threading

from taskloom.engine import ManualClock, Scheduler, TaskState
from taskloom.gui.graph.items import format_elapsed


def test_running_node_shows_its_elapsed_time(qtbot, make_window):
    clock = ManualClock()
    s = Scheduler(workers=1, clock=clock)
    release = threading.Event()
    started = threading.Event()

    def long_job():
        started.set()
        release.wait(10)

    s.add(long_job, name="job")
    s.start()
    try:
        window = make_window(s)
        assert started.wait(5)
        node = lambda: window.scene.nodes.get("job")  # noqa: E731
        qtbot.waitUntil(
            lambda: node() is not None and node().info.state is TaskState.RUNNING, timeout=3000
        )
        clock.advance(75)
        window.scene.refresh_elapsed()  # what its one-second timer does
        assert "running 1m15s" in node().status_text.text()
        release.set()
        qtbot.waitUntil(lambda: node().info.state is TaskState.SUCCEEDED, timeout=3000)
        assert "1m15s" not in node().status_text.text()
    finally:
        release.set()
        s.shutdown()


def test_elapsed_format_is_short():
    assert [format_elapsed(x) for x in (0, 12.7, 65, 3599, 3725)] == [
        "0s",
        "12s",
        "1m05s",
        "59m59s",
        "1h02m",
    ]

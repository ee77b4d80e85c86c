"""The bridge coalesces engine events into a few batches handled in the GUI thread."""

from __future__ import annotations

import threading
import time

import pytest
from PySide6.QtCore import QCoreApplication, QThread

from taskloom.engine import Event, TaskState
from taskloom.gui.bridge import EngineBridge

S = TaskState


def noop():
    return None


def test_bridge_must_be_created_in_the_gui_thread(qapp, manual_scheduler):
    errors = []

    def build():
        try:
            EngineBridge(manual_scheduler)
        except AssertionError as exc:
            errors.append(exc)

    thread = threading.Thread(target=build)
    thread.start()
    thread.join()
    assert errors and "GUI thread" in str(errors[0])


def test_first_state_comes_from_the_snapshot(qtbot, manual_scheduler):
    a = manual_scheduler.add(noop, name="a")
    manual_scheduler.add(noop, name="b", deps=[a])
    bridge = EngineBridge(manual_scheduler)
    try:
        assert set(bridge.tasks) == {"a", "b"}
        assert bridge.tasks["b"].deps == ("a",)
        assert bridge.tasks["b"].state is S.PENDING
    finally:
        bridge.close()


def test_events_up_to_the_snapshot_are_dropped(qtbot, manual_scheduler):
    manual_scheduler.add(noop, name="a")
    bridge = EngineBridge(manual_scheduler)
    try:
        state = bridge.tasks["a"].state
        stale = Event(bridge.snapshot_seq, "failed", "a", S.FAILED, 0.0, 1, None, "Old: news")
        bridge._on_event(stale)  # what the engine would have delivered just before the snapshot
        bridge.drain()
        assert bridge.tasks["a"].state is state
        fresh = stale._replace(seq=bridge.snapshot_seq + 1)
        bridge._on_event(fresh)
        bridge.drain()
        assert bridge.tasks["a"].state is S.FAILED
    finally:
        bridge.close()


def test_new_tasks_and_edges_reach_the_gui(qtbot, manual_scheduler):
    bridge = EngineBridge(manual_scheduler)
    try:
        with qtbot.waitSignal(bridge.structureChanged, timeout=2000):
            manual_scheduler.add(noop, name="a")
            manual_scheduler.add(noop, name="b")
        assert set(bridge.tasks) == {"a", "b"}
        with qtbot.waitSignal(bridge.structureChanged, timeout=2000):
            manual_scheduler.add_dependency("b", "a")
        assert bridge.tasks["b"].deps == ("a",)
        assert bridge.tasks["a"].dependents == ("b",)
        with qtbot.waitSignal(bridge.tasksRemoved, timeout=2000) as removed:
            manual_scheduler.remove("b")
        assert removed.args[0] == ["b"]
        assert "b" not in bridge.tasks
    finally:
        bridge.close()


@pytest.mark.timeout(120)
def test_event_burst_arrives_coalesced_in_the_gui_thread(qtbot, threaded_scheduler):
    tasks = 17_000  # about three events each (ready, running, succeeded): ~51,000 events
    bridge = EngineBridge(threaded_scheduler)
    batches = []
    threads = set()

    def on_batch(changed):
        batches.append(len(changed))
        threads.add(QThread.currentThread())

    bridge.tasksChanged.connect(on_batch)
    try:
        for _ in range(tasks):
            threaded_scheduler.add(noop)
        threaded_scheduler.start()

        def all_done():
            return len(bridge.tasks) == tasks and all(
                t.state is S.SUCCEEDED for t in bridge.tasks.values()
            )

        qtbot.waitUntil(all_done, timeout=60_000)
        assert bridge.received() >= 50_000
        # Thousands of events per batch, not one signal per event.
        assert len(batches) < 1000, len(batches)
        assert len(batches) * 20 < bridge.received()
        assert threads == {QCoreApplication.instance().thread()}
        assert bridge.state_counts()[S.SUCCEEDED] == tasks
    finally:
        bridge.close()


def test_pause_survives_a_later_state_event_in_the_same_batch(qtbot, manual_scheduler):
    manual_scheduler.schedule_after(noop, 10, name="job")
    manual_scheduler.start()
    bridge = EngineBridge(manual_scheduler)
    try:
        manual_scheduler.pause("job")
        manual_scheduler.cancel("job")  # a state event after the pause, before any drain
        bridge.drain()
        assert bridge.tasks["job"].paused is True
        assert bridge.tasks["job"].state is S.CANCELLED
    finally:
        bridge.close()


def _events(bridge, count, start_seq):
    return [
        Event(start_seq + i, "failed", f"t{i}", S.FAILED, 0.0, 1, None, "Err: x")
        for i in range(count)
    ]


def test_a_busy_drain_makes_the_next_wake_wait_and_a_quiet_one_does_not(qtbot, manual_scheduler):
    """While a run is busy the window shows it a few times a second: after a drain
    that handed on many changes the next events wait BUSY_INTERVAL_MS; after a quiet
    one a single change shows within the bridge's own interval."""
    from taskloom.gui import bridge as bridge_module

    for i in range(40):
        manual_scheduler.add(noop, name=f"t{i}")
    bridge = EngineBridge(manual_scheduler, interval_ms=33)
    try:
        seq = bridge.snapshot_seq + 1
        busy = _events(bridge, bridge_module.BUSY_CHANGES, seq)
        for event in busy:
            bridge._on_event(event)
        bridge.drain()
        bridge._timer.stop()
        bridge._wake()
        assert bridge._timer.isActive()
        assert bridge._timer.interval() == bridge_module.BUSY_INTERVAL_MS
        bridge._timer.stop()
        bridge._on_event(busy[0]._replace(seq=seq + 100, kind="succeeded", state=S.SUCCEEDED))
        bridge.drain()  # one change: quiet again
        bridge._timer.stop()
        bridge._wake()
        assert bridge._timer.interval() == 33
    finally:
        bridge.close()


def test_a_backlog_is_drained_one_interval_apart_however_many_drains_it_takes(
    qtbot, manual_scheduler, monkeypatch
):
    """The rest of a flood goes in drains one bridge interval apart: the interval is
    kept apart from the timer's (QTimer.start(ms) sets it), so it does not shrink to
    0 ms drain after drain, nor take the busy pace."""
    from taskloom.gui import bridge as bridge_module

    monkeypatch.setattr(bridge_module, "FOLD_PER_DRAIN", 5)
    monkeypatch.setattr(bridge_module, "MOST_FOLD_PER_DRAIN", 5)
    for i in range(40):
        manual_scheduler.add(noop, name=f"t{i}")
    bridge = EngineBridge(manual_scheduler, interval_ms=40)
    try:
        for event in _events(bridge, 40, bridge.snapshot_seq + 1):
            bridge._on_event(event)

        def views_work(_changed):  # each batch costs the views about 4 ms
            until = time.perf_counter() + 0.004
            while time.perf_counter() < until:
                pass

        bridge.tasksChanged.connect(views_work)
        waits = []
        for _ in range(6):
            bridge._timer.stop()
            bridge.drain()
            assert bridge._timer.isActive()  # more to come, event or not
            waits.append(bridge._timer.interval())
        assert all(25 <= wait <= 36 for wait in waits), waits  # 40 ms less the drain's own
    finally:
        bridge.close()

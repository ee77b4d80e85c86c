"""The window under a flood of events: no GUI-thread slice does unbounded work.

Counts, not times: each drain folds at most FOLD_PER_DRAIN tasks' states and hands
at most EVENTS_PER_DRAIN events to the log and the timeline; every event still
arrives, in order; the log inserts no more rows than it keeps.
"""

from __future__ import annotations

from PySide6.QtCore import QSortFilterProxyModel

from taskloom.engine import Event, TaskState
from taskloom.gui import bridge as bridge_module
from taskloom.gui.bridge import EngineBridge
from taskloom.gui.event_log import EventLog, EventLogModel

S = TaskState


def noop():
    return None


def test_a_drain_folds_a_bounded_share_of_a_flood_and_every_state_arrives(
    qtbot, manual_scheduler, monkeypatch
):
    monkeypatch.setattr(bridge_module, "FOLD_PER_DRAIN", 100)
    monkeypatch.setattr(bridge_module, "SHARE_OF_KNOWN", 0.1)  # 45 of 450: under 100
    for i in range(450):
        manual_scheduler.add(noop, name=f"t{i}")
    bridge = EngineBridge(manual_scheduler)
    batches: list[int] = []
    bridge.tasksChanged.connect(lambda changed: batches.append(len(changed)))
    try:
        manual_scheduler.start()
        manual_scheduler.clock.advance(1)  # all 450 run at once: 450 tasks changed
        qtbot.waitUntil(
            lambda: all(t.state is S.SUCCEEDED for t in bridge.tasks.values()), timeout=20_000
        )
        assert max(batches) <= 100
        assert sum(batches) >= 450
        assert bridge.pending() == 0
        assert bridge.state_counts()[S.SUCCEEDED] == 450
    finally:
        bridge.close()


def test_a_window_gets_events_in_bounded_slices_all_of_them_in_order(
    qtbot, make_window, manual_scheduler, monkeypatch
):
    monkeypatch.setattr(bridge_module, "EVENTS_PER_DRAIN", 150)
    window = make_window(manual_scheduler)
    handed: list[list[Event]] = []
    window.bridge.eventsArrived.connect(handed.append)
    received: list[int] = []
    manual_scheduler.subscribe(lambda event: received.append(event.seq))
    for i in range(400):
        manual_scheduler.add(noop, name=f"t{i}")
    manual_scheduler.start()
    manual_scheduler.clock.advance(1)
    last = manual_scheduler.snapshot()[0]
    qtbot.waitUntil(
        lambda: (
            bool(window.event_log.model.events) and window.event_log.model.events[-1].seq == last
        ),
        timeout=20_000,
    )
    assert max(len(batch) for batch in handed) <= 150
    seqs = [event.seq for batch in handed for event in batch]
    assert seqs == sorted(seqs) and len(seqs) == len(set(seqs))
    assert set(received) <= set(seqs)  # none dropped: fewer than the bridge keeps
    assert len(received) > 150 * 3
    assert window.bridge.dropped_events == 0


def test_events_beyond_what_the_bridge_keeps_drop_the_oldest_first(qtbot, manual_scheduler):
    bridge = EngineBridge(manual_scheduler, max_events=300)
    handed: list[int] = []
    bridge.eventsArrived.connect(lambda events: handed.extend(e.seq for e in events))
    try:
        for i in range(400):  # one event each, all before a drain: 100 too many
            manual_scheduler.add(noop, name=f"t{i}")
        last = manual_scheduler.snapshot()[0]
        qtbot.waitUntil(lambda: bool(handed) and handed[-1] == last, timeout=20_000)
        assert handed == sorted(handed)
        assert len(handed) + bridge.dropped_events == 400
        assert bridge.dropped_events >= 100
    finally:
        bridge.close()


def test_the_log_inserts_no_more_rows_than_it_keeps(qtbot):
    model = EventLogModel(capacity=100)
    inserted: list[int] = []
    model.rowsInserted.connect(lambda _parent, first, last: inserted.append(last - first + 1))
    events = [
        Event(seq, "succeeded", f"t{seq}", S.SUCCEEDED, 0.0, 1, None, None) for seq in range(1, 351)
    ]
    model.append(events[:60])
    model.append(events[60:])  # 290 at once into a log of 100
    assert inserted == [60, 100]
    assert [e.seq for e in model.events] == list(range(251, 351))


def test_the_log_filters_in_qt_not_per_row_in_python(qtbot):
    log = EventLog(capacity=100)
    qtbot.addWidget(log)
    # No Python filterAcceptsRow: with no filter set, inserted rows are not filtered
    # one Python call each (184 ms for 10,000 events).
    assert type(log.proxy).filterAcceptsRow is QSortFilterProxyModel.filterAcceptsRow
    events = [
        Event(1, "succeeded", "load.db", S.SUCCEEDED, 0.0, 1, None, None),
        Event(2, "failed", "loadXdb", S.FAILED, 0.0, 1, None, "boom"),
        Event(3, "failed", "Load.DB.2", S.FAILED, 0.0, 1, None, "boom"),
    ]
    log.add_events(events)
    assert log.row_count() == 3
    log.task_filter.setText("load.db")  # a dot is a dot, any case
    assert log.row_count() == 2
    log.kind_filter.setCurrentIndex(log.kind_filter.findData("failed"))
    assert log.row_count() == 1
    log.task_filter.clear()
    assert log.row_count() == 2
    log.kind_filter.setCurrentIndex(0)
    assert log.row_count() == 3


def test_the_run_summary_works_out_its_colours_once_per_palette(
    qtbot, make_window, manual_scheduler, monkeypatch
):
    from PySide6.QtGui import QColor, QPalette

    from taskloom.gui import run_summary

    calls = []
    real = run_summary.link_colours
    monkeypatch.setattr(run_summary, "link_colours", lambda p: (calls.append(1), real(p))[1])
    manual_scheduler.add(noop, name="a")
    window = make_window(manual_scheduler)
    summary = window.inspector.summary
    calls.clear()
    for _ in range(5):  # five batches of a busy run: the window's palette, known
        summary.refresh()
    assert calls == []
    before = summary.summary_html()
    palette = summary.palette()
    palette.setColor(QPalette.ColorRole.Window, QColor("#202124"))
    summary.setPalette(palette)  # dark: links and states recoloured
    after = summary.summary_html()
    assert len(calls) == 1
    assert after != before
    assert "1" in summary.text() and "a" in after


def test_thousands_of_new_tasks_come_in_batches_that_grow_with_the_window(
    qtbot, manual_scheduler, monkeypatch
):
    # A fixed budget made 20,000 new tasks 50 batches, each costing the views work
    # for every task shown: the budget grows with what the window already has.
    monkeypatch.setattr(bridge_module, "REREADS_PER_DRAIN", 100)
    monkeypatch.setattr(bridge_module, "READ_SLICE_S", 60.0)  # counts, not the clock
    bridge = EngineBridge(manual_scheduler)
    batches: list[int] = []
    bridge.tasksChanged.connect(lambda changed: batches.append(len(changed)))
    try:
        for i in range(3000):
            manual_scheduler.add(noop, name=f"t{i}")
        qtbot.waitUntil(lambda: len(bridge.tasks) == 3000, timeout=20_000)
        known = 0
        for size in batches:
            assert size <= max(100, int(known * bridge_module.SHARE_OF_KNOWN))
            known += size
        assert len(batches) < 3000 // 100 // 2  # a fixed 100 a batch: 30 batches
        assert bridge.pending() == 0 and not bridge._reread_later
    finally:
        bridge.close()


def test_the_status_bar_works_out_its_colours_once_per_palette(
    qtbot, make_window, manual_scheduler, monkeypatch
):
    from PySide6.QtGui import QColor, QPalette

    from taskloom.gui import status

    calls = []
    real = status.state_text_colour
    monkeypatch.setattr(status, "state_text_colour", lambda s, b: (calls.append(s), real(s, b))[1])
    manual_scheduler.add(noop, name="a")
    window = make_window(manual_scheduler)
    panel = window.status_panel
    panel.update(False)
    calls.clear()
    for _ in range(5):  # five batches of a busy run
        panel.update(False)
    assert calls == []
    assert "1" in panel.counts.text()
    palette = panel.counts.palette()
    palette.setColor(QPalette.ColorRole.Window, QColor("#202124"))
    panel.counts.setPalette(palette)
    panel.update(False)
    assert len(calls) == len(S)  # each state's colour once for the new palette


def test_a_drain_rereads_no_more_than_its_cap_however_many_tasks_are_known(
    qtbot, manual_scheduler, monkeypatch
):
    # A share of 20,000 known tasks was 5,000 re-reads in one GUI-thread slice.
    monkeypatch.setattr(bridge_module, "REREADS_PER_DRAIN", 50)
    monkeypatch.setattr(bridge_module, "MOST_REREADS_PER_DRAIN", 120)
    monkeypatch.setattr(bridge_module, "READ_SLICE_S", 60.0)
    for i in range(2000):
        manual_scheduler.add(noop, name=f"old{i}")
    bridge = EngineBridge(manual_scheduler)  # knows 2,000: a quarter would be 500
    batches: list[int] = []
    bridge.tasksChanged.connect(lambda changed: batches.append(len(changed)))
    try:
        for i in range(600):
            manual_scheduler.add(noop, name=f"new{i}")
        qtbot.waitUntil(lambda: len(bridge.tasks) == 2600, timeout=20_000)
        assert max(batches) <= 120
        assert sum(batches) == 600
    finally:
        bridge.close()


def test_state_counts_are_kept_per_task_changed_not_counted_per_batch(qtbot, manual_scheduler):
    for i in range(300):
        manual_scheduler.add(noop, name=f"t{i}")
    bridge = EngineBridge(manual_scheduler)
    try:
        counted: list[int] = []
        real_values = dict.values

        class Tasks(dict):
            def values(self):  # a pass over every task
                counted.append(len(self))
                return real_values(self)

        bridge.tasks = Tasks(bridge.tasks)
        manual_scheduler.start()
        manual_scheduler.clock.advance(1)
        for i in range(5):
            manual_scheduler.remove(f"t{i}")
        manual_scheduler.schedule(noop, manual_scheduler.clock.now() + 100, name="late")
        qtbot.waitUntil(
            lambda: "late" in bridge.tasks and "t0" not in bridge.tasks and bridge.pending() == 0,
            timeout=20_000,
        )
        counts = bridge.state_counts()
        assert counted == []  # asked as often as the views like, never a pass
        expected = dict.fromkeys(S, 0)
        for info in real_values(bridge.tasks):
            expected[info.state] += 1
        assert counts == expected
        assert counts[S.SUCCEEDED] == 295 and sum(counts.values()) == 296
    finally:
        bridge.close()


def test_a_batch_reaches_every_slot_as_the_same_object(qtbot, manual_scheduler):
    # A dict signal converted the batch to a QVariantMap and back for each slot
    # (9 ms per 5,000 tasks per slot).
    manual_scheduler.add(noop, name="a")
    bridge = EngineBridge(manual_scheduler)
    got: list[dict] = []
    for _ in range(3):
        bridge.tasksChanged.connect(got.append)
    try:
        manual_scheduler.start()
        manual_scheduler.clock.advance(1)
        qtbot.waitUntil(lambda: len(got) >= 3, timeout=20_000)
        assert got[0] is got[1] is got[2]
    finally:
        bridge.close()


def boom():
    raise RuntimeError("boom")


def test_the_run_header_says_the_same_from_the_bridges_tallies_without_a_pass(
    qtbot, make_window, manual_scheduler
):
    from taskloom.gui.run_header import header_text

    for i in range(40):
        manual_scheduler.add(noop, name=f"ok{i}")
    manual_scheduler.add(boom, name="bad")
    manual_scheduler.schedule_every(noop, 60.0, name="tick")
    window = make_window(manual_scheduler)
    manual_scheduler.start()
    manual_scheduler.clock.advance(1)
    bridge = window.bridge
    qtbot.waitUntil(lambda: bridge.tasks["bad"].state is S.FAILED and bridge.pending() == 0)
    manual_scheduler.remove("ok0")
    qtbot.waitUntil(lambda: "ok0" not in bridge.tasks)

    class Tasks(dict):
        passes = 0

        def values(self):
            Tasks.passes += 1
            return super().values()

    bridge.tasks = Tasks(bridge.tasks)
    header = window.run_header
    header._key = None
    header.refresh()
    assert Tasks.passes == 0  # the counts came from the bridge, kept per task changed
    counted = header_text(
        manual_scheduler.run,
        dict(bridge.tasks),
        started=True,
        paused=False,
        started_at=header.started_at,
        finished_at=header.finished_at,
        eta=window.forecast_view.eta.text() if window.forecast_view.eta.isVisible() else "",
        deadline=window.deadline_at,
    )
    assert header.full_text.replace("Live run ", "Run ") == counted
    assert "40/40 done" in counted and "1 recurring" in counted and "1 failed" in counted


def test_a_drain_stops_reading_when_its_slice_is_used_up(qtbot, manual_scheduler, monkeypatch):
    # Each read waits for the engine's lock and the GIL: under a flood a count alone
    # made 100-300 ms slices. With the slice used up at once, each drain reads the
    # fewest it may, and the rest come in the next drains, none lost.
    monkeypatch.setattr(bridge_module, "READ_SLICE_S", 0.0)
    monkeypatch.setattr(bridge_module, "FEWEST_REREADS", 30)
    bridge = EngineBridge(manual_scheduler)
    batches: list[int] = []
    bridge.tasksChanged.connect(lambda changed: batches.append(len(changed)))
    try:
        for i in range(200):
            manual_scheduler.add(noop, name=f"t{i}")
        qtbot.waitUntil(lambda: len(bridge.tasks) == 200, timeout=20_000)
        assert max(batches) == 30 and sum(batches) == 200
        assert set(bridge.tasks) == {f"t{i}" for i in range(200)}
    finally:
        bridge.close()


def test_a_task_at_the_end_of_many_new_edges_is_read_once_a_drain(qtbot, manual_scheduler):
    manual_scheduler.add(noop, name="root")
    bridge = EngineBridge(manual_scheduler)
    reads: list[str] = []
    real = bridge._read
    bridge._read = lambda tid: (reads.append(tid), real(tid))[1]
    try:
        for i in range(500):
            manual_scheduler.add(noop, name=f"t{i}", deps=["root"])
        qtbot.waitUntil(lambda: len(bridge.tasks) == 501 and bridge.pending() == 0)
        qtbot.waitUntil(lambda: len(bridge.tasks["root"].dependents) == 500)
        # Read with each new task, the root (and its growing list of dependents) was
        # read 500 times.
        assert reads.count("root") <= bridge.batches
        assert reads.count("root") < 50
    finally:
        bridge.close()


def test_the_run_is_not_called_finished_while_the_window_still_reads_its_tasks(
    qtbot, make_window, manual_scheduler, monkeypatch
):
    # Mid-flood, the first 1,000 tasks read of 20,000 had all succeeded: the header
    # said "finished in 0.1 s · 1000 succeeded" beside an event log of tasks to come.
    monkeypatch.setattr(bridge_module, "READ_SLICE_S", 0.0)
    monkeypatch.setattr(bridge_module, "FEWEST_REREADS", 10)
    manual_scheduler.add(noop, name="first")
    window = make_window(manual_scheduler)
    window.set_started(True)
    manual_scheduler.start()
    manual_scheduler.clock.advance(1)
    qtbot.waitUntil(lambda: window.bridge.tasks["first"].state is S.SUCCEEDED)
    said: list[tuple[bool, str, bool]] = []
    window.bridge.tasksChanged.connect(
        lambda _changed: said.append(
            (window.bridge.reading(), window.run_header.full_text, window.notices._finished)
        )
    )
    for i in range(60):
        manual_scheduler.add(noop, name=f"t{i}")
    manual_scheduler.clock.advance(1)  # all run and succeed before the window reads them
    qtbot.waitUntil(lambda: len(window.bridge.tasks) == 61 and not window.bridge.reading())
    qtbot.waitUntil(lambda: bool(said) and not said[-1][0])
    reading = [(text, finished) for still, text, finished in said if still]
    assert len(reading) >= 3  # read ten at a time
    assert all("finished" not in text and "reading new tasks" in text for text, _ in reading)
    assert not any(finished for _, finished in reading)
    assert "finished" in said[-1][1] and "61 succeeded" in said[-1][1] and said[-1][2]

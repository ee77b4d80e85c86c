"""The inspector shows the selected task and its attempts; the event log is bounded and filters."""

from __future__ import annotations

import re

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

from taskloom.engine import Event, RetryPolicy, TaskState
from taskloom.gui.event_log import EventLog
from taskloom.gui.style import contrast, theme_palette

S = TaskState


def broken():
    raise ValueError("bad row 17")


def noop():
    return None


def test_inspector_shows_settings_deps_and_attempts(qtbot, make_window, manual_scheduler):
    manual_scheduler.add(noop, name="extract")
    manual_scheduler.add(
        broken,
        name="load",
        deps=["extract"],
        priority=5,
        retry=RetryPolicy(max_attempts=2, base=10, jitter=0),
    )
    manual_scheduler.add(noop, name="report", deps=["load"])
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    window.select_tasks(["load"])
    inspector = window.inspector
    assert inspector.title.text() == "load"
    assert inspector.fields["priority"].text() == "5"
    assert "extract" in inspector.fields["after"].text()
    assert "report" in inspector.fields["before"].text()
    # First attempt failed: waiting 10 s for the retry.
    qtbot.waitUntil(lambda: "retry wait" in inspector.state.text(), timeout=3000)
    assert inspector.fields["next run"].text().startswith("in ")
    assert inspector.attempt_list.topLevelItemCount() == 1
    manual_scheduler.clock.advance(10)
    qtbot.waitUntil(lambda: inspector.attempt_list.topLevelItemCount() == 2, timeout=3000)
    assert "failed" in inspector.state.text()
    item = inspector.attempt_list.topLevelItem(1)
    assert item.text(0) == "2" and item.text(3) == "failed"
    text = inspector.output.toPlainText()
    assert "ValueError: bad row 17" in text and "Traceback" in text
    assert "ValueError: bad row 17" in inspector.fields["error"].text()


def test_clicking_a_dependency_link_selects_it(qtbot, make_window, manual_scheduler):
    manual_scheduler.add(noop, name="a")
    manual_scheduler.add(noop, name="b", deps=["a"])
    window = make_window(manual_scheduler)
    window.select_tasks(["b"])
    window.inspector.fields["after"].linkActivated.emit("a")
    assert window.graph_view.selected() == ["a"]
    assert window.inspector.title.text() == "a"


def event(seq, tid="t", kind="running", state=S.RUNNING):
    return Event(seq, kind, tid, state, float(seq), 1, None, None)


def test_event_log_is_bounded(qtbot):
    log = EventLog(capacity=100)
    qtbot.addWidget(log)
    log.add_events([event(i) for i in range(1, 71)])
    log.add_events([event(i) for i in range(71, 151)])
    assert log.model.rowCount() == 100
    assert log.model.events[0].seq == 51 and log.model.events[-1].seq == 150
    log.add_events([event(i) for i in range(151, 400)])  # a batch bigger than the log
    assert log.model.rowCount() == 100 and log.model.events[0].seq == 300


def test_event_log_filters_by_task_and_kind(qtbot):
    log = EventLog(capacity=100)
    qtbot.addWidget(log)
    log.add_events(
        [
            event(1, "extract", "running"),
            event(2, "extract", "succeeded", S.SUCCEEDED),
            event(3, "load", "running"),
            event(4, "load", "failed", S.FAILED),
        ]
    )
    assert log.row_count() == 4
    log.task_filter.setText("LOAD")
    assert log.row_count() == 2
    log.kind_filter.setCurrentIndex(log.kind_filter.findData("failed"))
    assert log.row_count() == 1
    assert log.proxy.index(0, 0).data() == 4
    log.task_filter.clear()
    assert log.row_count() == 1  # only the kind filter is left
    log.kind_filter.setCurrentIndex(0)
    assert log.row_count() == 4
    QApplication.processEvents()


def test_window_log_receives_engine_events(qtbot, make_window, manual_scheduler):
    manual_scheduler.add(noop, name="only")
    window = make_window(manual_scheduler)
    manual_scheduler.start()
    log = window.event_log
    qtbot.waitUntil(lambda: any(e.kind == "succeeded" for e in log.model.events), timeout=3000)
    kinds = [e.kind for e in log.model.events if e.task_id == "only"]
    assert kinds[-2:] == ["running", "succeeded"]
    seqs = [e.seq for e in log.model.events]
    assert seqs == sorted(seqs)


def link_colour(label) -> QColor:
    match = re.search(r'style="color:(#[0-9a-fA-F]{6})"', label.text())
    assert match, label.text()
    return QColor(match.group(1))


def test_dependency_links_stay_readable_in_the_dark_theme(qtbot, make_window, manual_scheduler):
    manual_scheduler.add(noop, name="a")
    manual_scheduler.add(noop, name="b", deps=["a"])
    window = make_window(manual_scheduler)
    window.select_tasks(["b"])
    after = window.inspector.fields["after"]
    light = link_colour(after)
    original = QGuiApplication.palette()
    assert light == original.color(QPalette.ColorRole.Link)  # the palette's own link colour
    dark = QPalette(original)  # dark window and text, Qt's default dark-blue links kept
    dark.setColor(QPalette.ColorRole.Window, QColor("#202124"))
    dark.setColor(QPalette.ColorRole.Base, QColor("#17181A"))
    dark.setColor(QPalette.ColorRole.Text, QColor("#E8EAED"))
    dark.setColor(QPalette.ColorRole.WindowText, QColor("#E8EAED"))
    try:
        QApplication.setPalette(dark)
        qtbot.waitUntil(lambda: link_colour(after) != light, timeout=2000)
        assert contrast(QColor("#0000FF"), QColor("#202124")) < 3  # what it was: unreadable
        assert contrast(link_colour(after), QColor("#202124")) >= 4.5
    finally:
        QApplication.setPalette(original)
    qtbot.waitUntil(lambda: link_colour(after) == light, timeout=2000)


def test_run_summary_follows_every_batch_not_only_the_clock_tick(
    qtbot, make_window, manual_scheduler
):
    manual_scheduler.add("builtins:print", name="p")
    manual_scheduler.schedule_after("builtins:print", 60, name="later")
    window = make_window(manual_scheduler)
    window._inspector_timer.stop()  # only batches may update it now
    summary = window.inspector.summary

    def shown() -> str:  # the summary's words, without its HTML
        return re.sub(r"<[^>]+>|&nbsp;", " ", summary.text())

    manual_scheduler.start()
    qtbot.waitUntil(lambda: re.search(r"1\s+.*succeeded", shown()) is not None, timeout=3000)
    assert re.search(r"1\s+.*scheduled", shown())


# The event log's words and columns; the run summary (from the screenshot review).
def test_log_shows_kinds_as_words_and_colours_by_palette(qtbot):
    log = EventLog()
    qtbot.addWidget(log)
    log.add_events([Event(1, "retry_wait", "t", S.RETRY_WAIT, 0.0, 1, 5.0, "boom")])
    index = log.model.index(0, 3)
    assert log.model.data(index) == "↻ retry wait"
    assert log.kind_filter.findText("retry wait") >= 0
    log.model.set_palette(theme_palette("light"))
    colour = log.model.data(index, Qt.ItemDataRole.ForegroundRole).color()
    assert contrast(colour, QColor("#FFFFFF")) >= 4.5


def test_log_columns_fit_at_1400_px(qtbot, make_window, manual_scheduler):
    manual_scheduler.add(noop, name="a_rather_long_task_name")
    window = make_window(manual_scheduler, size=(1400, 900))
    manual_scheduler.start()
    table = window.event_log.table
    qtbot.waitUntil(lambda: table.model().rowCount() > 0, timeout=3000)
    header = table.horizontalHeader()
    assert header.length() <= table.viewport().width()
    assert table.horizontalScrollBar().maximum() == 0
    metrics = header.fontMetrics()
    for column in (0, 1, 3, 4):  # the fixed columns are at least as wide as their header
        title = table.model().headerData(column, Qt.Orientation.Horizontal)
        assert header.sectionSize(column) >= metrics.horizontalAdvance(title)


def test_inspector_summarises_the_run_with_nothing_selected(qtbot, make_window, manual_scheduler):
    manual_scheduler.add(noop, name="ok")
    manual_scheduler.add(broken, name="broken")
    manual_scheduler.schedule_after(noop, 30, name="later")
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    qtbot.waitUntil(lambda: window.bridge.tasks["broken"].state is S.FAILED, timeout=3000)
    inspector = window.inspector
    inspector.refresh()
    assert inspector.pages.currentIndex() == 1
    text = inspector.summary.text()
    assert "3 tasks" in text and "failed" in text and "bad row 17" in text
    assert 'href="later"' in text and "in 30.0 s" in text
    inspector.summary.linkActivated.emit("broken")  # what clicking the link sends
    assert window.graph_view.selected() == ["broken"]
    assert inspector.pages.currentIndex() == 0
    assert inspector.title.text() == "broken"

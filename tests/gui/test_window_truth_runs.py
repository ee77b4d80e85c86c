"""Issue 24, items 9 and 11: the timeline of a recurring task and of a long look-ahead,
and a past run opened read-only in the graph and the timeline."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QPoint, QPointF, Qt
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


def test_a_past_run_opens_read_only_in_the_graph_and_the_timeline(qtbot, tmp_path, settings):
    import sys

    from taskloom.app import WorkflowSession
    from taskloom.engine import TaskState as S
    from taskloom.engine.workflow import load

    marker = tmp_path / "ran-once"
    # Fails the first time, succeeds after: run 1 and run 2 end differently.
    flaky = (
        f'["{sys.executable}", "-c", "import os, sys; p = {str(marker)!r}; '
        "seen = os.path.exists(p); open(p, 'w').close(); sys.exit(0 if seen else 2)\"]"
    )
    quick = f'["{sys.executable}", "-c", "pass"]'
    source = tmp_path / "etl.toml"
    source.write_text(
        '[workflow]\nname = "etl"\n\n'
        f"[tasks.load]\ncommand = {quick}\n\n"
        f'[tasks.report]\ncommand = {flaky}\ndeps = ["load"]\n\n'
        f'[tasks.cleanup]\ncommand = {quick}\ndeps = ["report"]\n',
        encoding="utf-8",
    )
    paths = dict(db_path=tmp_path / "run.db", log_dir=tmp_path / "logs")
    done = (S.SUCCEEDED, S.FAILED, S.SKIPPED)
    for fresh in (False, True):  # run 1: report fails, cleanup skipped; run 2: all succeed
        session = WorkflowSession(load(source), settings, fresh=fresh, **paths)
        try:
            qtbot.waitUntil(
                lambda s=session: all(t.state in done for t in s.scheduler.tasks()),
                timeout=20_000,
            )
            if fresh:
                _check_past_run(qtbot, session.window)
        finally:
            session.close()


def _check_past_run(qtbot, window) -> None:
    from taskloom.engine import TaskState as S

    window.resize(1400, 900)
    window.show()
    qtbot.waitExposed(window)
    window.runs_dock.show()
    window.runs_dock.raise_()
    view, scene, timeline = window.runs_view, window.scene, window.timeline
    qtbot.waitUntil(lambda: view.grid is not None and len(view.grid.runs) == 2, timeout=10_000)
    qtbot.waitUntil(lambda: scene.tasks["cleanup"].state is S.SUCCEEDED, timeout=10_000)
    first, _live = view.grid.runs
    header = view.horizontalHeader()
    at = header.sectionViewportPosition(0) + header.sectionSize(0) // 2
    qtbot.mouseClick(header.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(at, 5))

    bar = window.past_run_bar
    qtbot.waitUntil(bar.isVisible, timeout=10_000)
    assert bar.text.startswith(f"Run {first} of etl (finished ")
    assert bar.text.endswith(", 1 failed) — read-only")
    # The run header above the graph stays the live run's, and says so.
    assert window.run_header.full_text.startswith(f"Live run {_live} · ")
    # The graph is that run's: report failed, cleanup skipped, load succeeded.
    assert scene.tasks["report"].state is S.FAILED
    assert scene.tasks["cleanup"].state is S.SKIPPED
    assert scene.tasks["load"].state is S.SUCCEEDED
    # The timeline shows that run's attempts, not following now.
    canvas = timeline.canvas
    assert canvas.model is not timeline.model and not canvas.following
    assert [bar[2] for bar in canvas.model.bars["report"]] == ["failed"]
    assert "cleanup" not in canvas.model.bars
    # Nothing edits or steers it: select a task with the mouse, the actions stay off,
    # Delete removes nothing.
    node = scene.nodes["report"]
    point = window.graph_view.mapFromScene(node.sceneBoundingRect().center())
    qtbot.mouseClick(window.graph_view.viewport(), Qt.MouseButton.LeftButton, pos=point)
    assert window.selected == ["report"]
    state = window.inspector.state.text()  # the inspector says how that run left it
    assert "failed" in state and f"in run {first} (read-only)" in state
    for action in (
        window.act_edit,
        window.act_remove,
        window.act_clear,
        window.act_clear_all,
        window.act_run_now,
        window.act_add,
        window.act_pause_all,
        window.act_undo,
        window.act_relayout,
    ):
        assert not action.isEnabled(), action.text()
        assert "read-only" in action.toolTip()
    qtbot.keyClick(window.graph_view, Qt.Key.Key_Delete)
    assert "report" in window.document.tasks
    assert window.remove_question is None

    # Back to the live run: its states, its timeline, its actions.
    button = bar.button
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    assert not bar.isVisible()
    assert window.run_header.full_text.startswith(f"Run {_live} · ")
    assert scene.tasks["report"].state is S.SUCCEEDED
    assert scene.tasks["cleanup"].state is S.SUCCEEDED
    assert canvas.model is timeline.model
    assert window.act_clear_all.isEnabled() and window.act_add.isEnabled()
    assert window.act_remove.isEnabled()

    # From the keyboard: Ctrl+Enter on a cell of run 1 opens it again.
    view.setFocus()
    view.setCurrentCell(0, 1)
    qtbot.keyClick(view, Qt.Key.Key_Left)  # to run 1's column
    assert view.currentColumn() == 0
    qtbot.keyClick(view, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(bar.isVisible, timeout=10_000)
    assert scene.tasks["report"].state is S.FAILED
    # The live run's own header goes back to it.
    at = header.sectionViewportPosition(1) + header.sectionSize(1) // 2
    qtbot.mouseClick(header.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(at, 5))
    assert not bar.isVisible() and scene.tasks["report"].state is S.SUCCEEDED


def test_the_event_log_fits_its_columns_at_every_width_without_end(qtbot):
    # Found making the README's pictures: at some widths hiding the seq and # columns
    # and the horizontal scroll bar changed the viewport, which undid the verdict,
    # which refitted it again: a RecursionError (a crash of the window).
    from taskloom.engine import Event, TaskState
    from taskloom.gui.event_log import COLUMNS, EventLog

    log = EventLog(lambda at: "12:00:00")
    qtbot.addWidget(log)
    log.add_events(
        [
            Event(i, "running", f"task{i}", TaskState.RUNNING, float(i), 1, None, None)
            for i in range(20)
        ]
    )
    log.show()
    qtbot.waitExposed(log)
    seq = COLUMNS.index("seq")
    hidden = set()
    for width in range(150, 800, 2):
        log.resize(width, 160)
        QApplication.processEvents()
        hidden.add(log.table.isColumnHidden(seq))
    assert hidden == {True, False}  # narrow logs hid seq, wide ones showed it


def test_a_recurring_band_follows_an_edit_of_its_interval(qtbot, make_window, manual_scheduler):
    import dataclasses

    manual_scheduler.schedule_every(noop_task, 10, name="tick")
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    labels = window.timeline.model.recurring
    qtbot.waitUntil(lambda: labels.get("tick") == "every 10 s", timeout=5000)
    definition = manual_scheduler.definition("tick")
    manual_scheduler.update("tick", dataclasses.replace(definition, every=20.0))
    qtbot.waitUntil(lambda: labels.get("tick") == "every 20 s", timeout=5000)


def test_a_narrow_event_log_shows_its_event_column_whole(qtbot):
    """At an 820 px window's dock width the visible columns fit the view (issue 24:
    the event column was cut off at the edge)."""
    from taskloom.engine import Event, TaskState
    from taskloom.gui.event_log import COLUMNS, EventLog

    log = EventLog(lambda at: "12:00:00.000")
    qtbot.addWidget(log)
    log.add_events(
        [
            Event(i, "running", f"task{i}", TaskState.RUNNING, float(i), 1, None, None)
            for i in range(5)
        ]
    )
    log.show()
    for width in (260, 300, 340, 420, 700):
        log.resize(width, 160)
        QApplication.processEvents()
        table = log.table
        shown = [c for c in range(len(COLUMNS)) if not table.isColumnHidden(c)]
        assert COLUMNS.index("event") in shown
        right = max(table.columnViewportPosition(c) + table.columnWidth(c) for c in shown)
        assert right <= table.viewport().width() + 1, (width, right, table.viewport().width())

"""Issue 24: the window tells the truth (edits without side effects, what runs, the
forecast, paused, small windows and the keyboard)."""

from __future__ import annotations

import sys

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from taskloom.app import WorkflowSession
from taskloom.engine import TaskState
from taskloom.engine.workflow import load

S = TaskState
CTRL = Qt.KeyboardModifier.ControlModifier


def _flow(tmp_path, name="flow", extra="") -> object:
    source = tmp_path / f"{name}.toml"
    quick = f'["{sys.executable}", "-c", "pass"]'
    source.write_text(
        f'[workflow]\nname = "{name}"\nworkers = 2\n\n'
        f"[tasks.load]\ncommand = {quick}\n\n"
        f'[tasks.report]\ncommand = {quick}\ndeps = ["load"]\n\n'
        f'[tasks.cleanup]\ncommand = {quick}\ndeps = ["report"]\ntrigger_rule = "all_done"\n'
        + extra,
        encoding="utf-8",
    )
    return source


def test_undo_of_a_remove_puts_the_finished_task_back_as_it_was_and_runs_nothing(
    qtbot, tmp_path, settings
):
    session = WorkflowSession(
        load(_flow(tmp_path)), settings, db_path=tmp_path / "run.db", log_dir=tmp_path / "logs"
    )
    try:
        window = session.window
        qtbot.addWidget(window)
        window.resize(1400, 900)
        window.show()
        with qtbot.waitActive(window):
            window.activateWindow()
        scheduler = session.scheduler
        qtbot.waitUntil(
            lambda: all(t.state is S.SUCCEEDED for t in scheduler.tasks()), timeout=20000
        )
        qtbot.waitUntil(lambda: window.bridge.tasks["cleanup"].state is S.SUCCEEDED)
        before = scheduler.attempts("report")
        window.select_tasks(["report"])
        qtbot.keyClick(window.graph_view, Qt.Key.Key_Delete)
        # A finished task is not removed without asking.
        box = window.remove_question
        assert isinstance(box, QMessageBox) and box.isVisible()
        assert "report" in {t.id for t in scheduler.tasks()}
        remove = next(b for b in box.buttons() if b.text() == "Remove")
        qtbot.mouseClick(remove, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: "report" not in window.scene.nodes)
        assert "report" not in {t.id for t in scheduler.tasks()}
        with qtbot.waitActive(window):  # the question had the focus (offscreen: kept)
            window.activateWindow()
        qtbot.keyClick(window.graph_view, Qt.Key.Key_Z, CTRL)
        report = scheduler.task("report")
        assert report.state is S.SUCCEEDED  # as it was: nothing runs
        assert scheduler.attempts("report") == before  # its attempt is still there
        assert scheduler.task("cleanup").deps == ("report",)  # the edge to its downstream
        qtbot.waitUntil(lambda: window.scene.graph.has_edge("report", "cleanup"))
        qtbot.waitUntil(lambda: window.bridge.tasks.get("report") is not None)
        assert window.bridge.tasks["report"].state is S.SUCCEEDED
        assert all(len(scheduler.attempts(t.id)) == 1 for t in scheduler.tasks())
        assert not window.document.kept_edges  # the engine holds the edge itself
    finally:
        session.close()


def test_cancel_in_the_remove_question_keeps_the_task(qtbot, make_window, manual_scheduler):
    manual_scheduler.add("os:getcwd", name="a")
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    qtbot.waitUntil(
        lambda: window.bridge.tasks.get("a") and window.bridge.tasks["a"].state is S.SUCCEEDED
    )
    window.select_tasks(["a"])
    window.act_remove.trigger()
    box = window.remove_question
    assert box is not None
    qtbot.mouseClick(box.button(QMessageBox.StandardButton.Cancel), Qt.MouseButton.LeftButton)
    assert manual_scheduler.task("a").state is S.SUCCEEDED
    assert window.controller.undo_stack.count() == 0


def test_a_discarded_edit_never_comes_back_after_reopening(qtbot, tmp_path, settings):
    """Edit a failed task's command, Apply, close without saving (Discard), reopen: the
    run is the file's (the engine runs the file's command), not dirty, and Save writes
    the file's command."""
    from dataclasses import replace

    from taskloom.engine.command import Command

    source = tmp_path / "fix.toml"
    fails = f'["{sys.executable}", "-c", "raise SystemExit(3)"]'
    text = (
        '[workflow]\nname = "fix"\nworkers = 2\n\n'
        f"[tasks.fetch]\ncommand = {fails}\n\n"
        f'[tasks.later]\ncommand = ["{sys.executable}", "-c", "pass"]\nafter = "1h"\n'
    )
    source.write_text(text, encoding="utf-8")
    paths = dict(db_path=tmp_path / "run.db", log_dir=tmp_path / "logs")
    session = WorkflowSession(load(source), settings, **paths)
    try:
        qtbot.addWidget(session.window)
        scheduler = session.scheduler
        qtbot.waitUntil(lambda: scheduler.task("fetch").state is S.FAILED, timeout=20000)
        old = scheduler.definition("fetch")
        edited = Command([sys.executable, "-c", "print('edited')"], cwd=old.action.cwd)
        assert session.window.controller.edit_task("fetch", replace(old, action=edited)) is None
        assert session.window.document.dirty
    finally:
        session.close()  # Discard: the file is unchanged
    assert source.read_text(encoding="utf-8") == text

    session = WorkflowSession(load(source), settings, start=False, **paths)
    try:
        qtbot.addWidget(session.window)
        window = session.window
        argv = session.scheduler.definition("fetch").action.argv
        assert argv[-1] == "raise SystemExit(3)"  # the file's command, not the edit
        assert not window.document.dirty
        assert window.save_workflow()
        assert load(source).tasks["fetch"].action.argv[-1] == "raise SystemExit(3)"
    finally:
        session.close()


def test_paused_is_visible_on_the_graph_and_drawn_with_a_glyph_the_font_has(
    qtbot, make_window, manual_scheduler
):
    from PySide6.QtGui import QFontMetrics

    from taskloom.gui.graph.items import NodeItem

    manual_scheduler.start()
    window = make_window(manual_scheduler)
    assert not window.pause_bar.isVisible()
    qtbot.keyClick(window.graph_view, Qt.Key.Key_P, CTRL)  # Pause all
    qtbot.waitUntil(lambda: manual_scheduler.paused)
    assert window.pause_bar.isVisible()
    assert "nothing starts" in window.pause_bar.label.text()
    ran = []
    manual_scheduler.add(lambda: ran.append(1), name="job")
    qtbot.waitUntil(lambda: "job" in window.scene.nodes)
    qtbot.waitUntil(lambda: window.bridge.tasks["job"].state is S.READY)
    node = window.scene.nodes["job"]
    qtbot.waitUntil(lambda: "paused" in node.status_text.text())
    metrics = QFontMetrics(NodeItem._status_font)
    text = node.status_text.text()
    assert all(metrics.inFontUcs4(ord(ch)) for ch in text), text  # no empty boxes
    status = window.status_panel.paused.text()
    assert all(QFontMetrics(window.font()).inFontUcs4(ord(ch)) for ch in status if ord(ch) > 127)
    qtbot.mouseClick(window.pause_bar.button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: ran == [1])
    assert not manual_scheduler.paused and not window.pause_bar.isVisible()


def _forecast(wall, finish, path=(), starts=None):
    from taskloom.engine.forecast import Forecast

    return Forecast(
        wall, None, 2, [], [], finish, finish, finish, 10, list(path), starts or {}, {}, 0.0
    )


def test_the_forecast_survives_a_name_filter_and_a_group_expand(
    qtbot, make_window, manual_scheduler
):
    """The badges were children of cards a filter or a group deletes: every refresh
    after it raised RuntimeError (pytest-qt fails the test on an exception in a slot)."""
    for group in ("load", "extract"):
        for i in range(160):  # 320 tasks: the window opens with its groups collapsed
            manual_scheduler.schedule_after(lambda: None, 3600, name=f"{group}.{i}")
    manual_scheduler.add(lambda: None, name="report", deps=["load.0"])
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    scene, view = window.scene, window.forecast_view
    qtbot.waitUntil(scene.is_drawn, timeout=5000)

    def refreshed():
        done = view.forecaster.computed
        view.forecaster.request()
        qtbot.waitUntil(lambda: view.forecaster.computed > done, timeout=10000)
        view.tick()

    scene.expand("load")
    qtbot.waitUntil(scene.is_drawn, timeout=5000)
    refreshed()
    assert view.badges  # expected starts on the expanded group's cards
    scene.collapse("load")  # the cards (and their badges) go
    qtbot.waitUntil(scene.is_drawn, timeout=5000)
    refreshed()
    qtbot.keyClicks(window.filter_bar.text, "report")  # a name filter rebuilds the cards
    qtbot.waitUntil(lambda: set(scene.nodes) == {"report"}, timeout=5000)
    refreshed()
    assert set(view.badges) <= {"report"}


def test_the_eta_moves_with_time_is_paused_while_paused_and_absent_before_start(
    qtbot, make_window, manual_scheduler
):
    from datetime import datetime, timedelta

    from taskloom.gui.forecast_view import eta_texts
    from taskloom.gui.forecaster import Live

    now = datetime.now().astimezone()
    past = Live(_forecast(now - timedelta(seconds=30), 24.0), None)  # its finish was 6 s ago
    text, _ = eta_texts(past, now)
    assert "(in 1s)" in text  # a running task past its estimate pushes it: never the past
    assert eta_texts(past, now, paused=True)[0].startswith("ETA ‖ paused")
    later = Live(_forecast(now, 60.0), None)
    assert eta_texts(later, now + timedelta(seconds=20))[0].endswith("(in 40s)")

    manual_scheduler.schedule_after(lambda: None, 3600, name="a")
    window = make_window(manual_scheduler)
    window.set_started(False)
    window.forecast_view.show(later)
    assert not window.forecast_view.eta.isVisible()  # nothing runs before Start
    window.set_started(True)
    window.forecast_view.tick()
    assert window.forecast_view.eta.isVisible()


def test_the_critical_path_ring_is_only_on_work_still_to_do(qtbot, make_window, manual_scheduler):
    from datetime import datetime

    from taskloom.gui.forecaster import Live

    manual_scheduler.add("os:getcwd", name="done")
    manual_scheduler.schedule_after(lambda: None, 3600, name="todo", deps=["done"])
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    qtbot.waitUntil(lambda: window.scene.tasks.get("done") is not None)
    qtbot.waitUntil(lambda: window.scene.tasks["done"].state is S.SUCCEEDED)
    view = window.forecast_view
    view.forecaster.close()
    view.show(Live(_forecast(datetime.now().astimezone(), 60.0, ["done", "todo"]), None))
    ring = view.critical.path().boundingRect()
    assert ring.intersects(window.scene.nodes["todo"].sceneBoundingRect())
    assert not ring.intersects(window.scene.nodes["done"].sceneBoundingRect())


def test_the_inspector_says_slower_than_usual_by_how_much(qtbot):
    from taskloom.engine import Attempt, Outcome
    from taskloom.gui.duration_trend import DurationTrend

    trend = DurationTrend()
    qtbot.addWidget(trend)
    running = Attempt(1, 100.0, None, Outcome.RUNNING, None, None, None, None, None)
    trend.show_attempts([running], now=110.0)  # this run's only attempt: no p90 of its own
    assert trend.slow.isHidden()
    trend.set_usual(4.0)  # the stored runs' p90 (the forecast's model)
    assert not trend.slow.isHidden()
    assert trend.slow.text().startswith("⚠ slower than usual by 6.00 s")


def test_ctrl_n_places_the_new_card_in_free_space_and_relayout_has_a_button_and_a_key(
    qtbot, make_window, manual_scheduler
):
    from PySide6.QtWidgets import QDialogButtonBox, QToolBar, QToolButton

    for name in ("b", "c"):
        manual_scheduler.schedule_after(lambda: None, 3600, name=name)
    manual_scheduler.schedule_after(lambda: None, 3600, name="d", deps=["b"])
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    scene = window.scene
    qtbot.waitUntil(lambda: len(scene.nodes) == 3 and scene.is_drawn())

    def overlaps(tid):
        mine = scene.nodes[tid].sceneBoundingRect()
        return [
            t for t, n in scene.nodes.items() if t != tid and n.sceneBoundingRect().intersects(mine)
        ]

    # "a" sorts first: the new layout's first place, (0, 0), is where b stands.
    for name, dep in (("a", None), ("after_b", "b")):
        qtbot.keyClick(window.graph_view, Qt.Key.Key_N, CTRL)
        dialog = window.add_dialog
        qtbot.waitUntil(dialog.isVisible)
        qtbot.keyClicks(dialog.name, name)
        qtbot.keyClicks(dialog.target, "true")
        if dep is not None:
            row = next(i for i in range(dialog.deps.count()) if dialog.deps.item(i).text() == dep)
            dialog.deps.item(row).setCheckState(Qt.CheckState.Checked)
        ok = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)
        qtbot.mouseClick(ok, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda name=name: name in scene.nodes and scene.nodes[name].isVisible())
        with qtbot.waitActive(window):
            window.activateWindow()
    assert overlaps("a") == [] and overlaps("after_b") == []
    assert scene.nodes["after_b"].pos().x() > scene.nodes["b"].pos().x()  # beside its upstream

    # Connecting into a node left of its new upstream moves it to the right of it.
    assert window.controller.connect_tasks("d", "c")
    qtbot.waitUntil(lambda: scene.nodes["c"].pos().x() > scene.nodes["d"].pos().x())
    assert overlaps("c") == []

    # Re-layout: a toolbar button and a shortcut.
    bar = window.findChild(QToolBar, "mainToolbar")
    assert any(
        isinstance(w, QToolButton) and w.defaultAction() is window.act_relayout
        for w in bar.findChildren(QToolButton)
    )
    assert not window.act_relayout.shortcut().isEmpty()
    scene.pin_many({"a": (900.0, 900.0)})
    qtbot.keyClick(
        window.graph_view,
        window.act_relayout.shortcut()[0].key(),
        window.act_relayout.shortcut()[0].keyboardModifiers(),
    )
    qtbot.waitUntil(lambda: "a" not in scene.pins)


def test_save_as_writes_folders_relative_to_the_new_file_and_new_keys_inside_their_table(
    qtbot, tmp_path, settings
):
    from dataclasses import replace

    old, new = tmp_path / "old", tmp_path / "copy"
    (old / "sub").mkdir(parents=True)
    (new / "sub").mkdir(parents=True)  # a copy of the folder
    source = old / "flow.toml"
    source.write_text(
        '[workflow]\nname = "flow"\n\n'
        '[tasks.here]\ncommand = ["python3", "scripts/step.py"]\nafter = "1h"\n\n'
        '# "there" runs in the sub folder\n'
        '[tasks.there]\ncommand = ["python3", "go.py"]\ncwd = "sub"\nafter = "1h"\n',
        encoding="utf-8",
    )
    session = WorkflowSession(load(source), settings, start=False)
    try:
        window = session.window
        qtbot.addWidget(window)
        # A new key: the edit gives "here" a priority; Save writes it inside its table.
        before = session.scheduler.definition("here")
        assert window.controller.edit_task("here", replace(before, priority=5)) is None
        assert window.save_workflow()
        text = source.read_text(encoding="utf-8")
        here_table = text.split('# "there"')[0]
        assert "priority = 5" in here_table  # not after the comment that introduces "there"
        assert load(source).tasks["here"].priority == 5

        target = new / "flow.toml"
        assert window.save_workflow(str(target))
        written = target.read_text(encoding="utf-8")
        assert str(old) not in written  # no absolute folder of the old place
        copied = load(target)
        assert copied.tasks["here"].action.cwd in (None, str(new))
        assert copied.tasks["there"].action.cwd == str(new / "sub")
    finally:
        session.close()


def test_the_keyboard_reaches_everything(qtbot, make_window, manual_scheduler):
    manual_scheduler.add("os:getcwd", name="done")
    manual_scheduler.schedule_after(lambda: None, 3600, name="later")
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    qtbot.waitUntil(lambda: "done" in window.scene.nodes and "later" in window.scene.nodes)
    qtbot.waitUntil(lambda: window.bridge.tasks["done"].state is S.SUCCEEDED)

    # Tab leaves the event log (it walked the log's cells).
    table = window.event_log.table
    table.setFocus()
    qtbot.waitUntil(table.hasFocus)
    qtbot.keyClick(table, Qt.Key.Key_Tab)
    assert not table.hasFocus()

    # Shift+F10 and the Menu key open the selected task's menu.
    window.select_tasks(["done"])
    window.graph_view.setFocus()
    for key, modifiers in (
        (Qt.Key.Key_F10, Qt.KeyboardModifier.ShiftModifier),
        (Qt.Key.Key_Menu, Qt.KeyboardModifier.NoModifier),
    ):
        window.task_menu = None
        qtbot.keyClick(window.graph_view, key, modifiers)
        qtbot.waitUntil(lambda: window.task_menu is not None and window.task_menu.isVisible())
        window.task_menu.close()
        with qtbot.waitActive(window):
            window.activateWindow()

    # Run again (F5), Remove (Ctrl+Delete), Re-layout (Ctrl+L) have keys.
    qtbot.keyClick(window.graph_view, Qt.Key.Key_F5)
    qtbot.waitUntil(
        lambda: window.clear_question.box is not None and window.clear_question.box.isVisible()
    )
    window.clear_question.box.reject()
    with qtbot.waitActive(window):
        window.activateWindow()
    qtbot.keyClick(window.graph_view, Qt.Key.Key_Delete, CTRL)
    qtbot.waitUntil(lambda: window.remove_question is not None)
    window.remove_question.reject()
    assert window.act_relayout.shortcut().toString() == "Ctrl+L"

    # Ctrl+Q quits (closes the window).
    with qtbot.waitActive(window):
        window.activateWindow()
    qtbot.keyClick(window.graph_view, Qt.Key.Key_Q, CTRL)
    qtbot.waitUntil(lambda: not window.isVisible())


def test_a_small_window_gives_the_graph_half_its_height(qtbot, make_window, manual_scheduler):
    manual_scheduler.schedule_after(lambda: None, 3600, name="a")
    manual_scheduler.start()
    window = make_window(manual_scheduler, size=(820, 520))
    qtbot.waitUntil(lambda: window.graph_view.height() >= 260)
    assert window.legend.height() <= 40 and window.legend.compact  # one line
    assert window.inspector_dock.width() <= 260
    table = window.event_log.table
    event = 3  # the event column is in view
    assert (
        table.columnViewportPosition(event) + table.columnWidth(event) <= table.viewport().width()
    )
    window.resize(1400, 900)
    qtbot.waitUntil(lambda: not window.legend.compact)  # room again: every label written out


def test_the_inspector_says_what_a_task_is_and_why_it_is_not_running(qtbot, tmp_path, settings):
    from dataclasses import replace

    from taskloom.engine.command import Command

    source = tmp_path / "what.toml"
    quick = f'["{sys.executable}", "-c", "pass"]'
    fails = f'["{sys.executable}", "-c", "raise SystemExit(1)"]'
    source.write_text(
        '[workflow]\nname = "what"\nworkers = 2\n\n'
        f'[tasks.broken]\ncommand = {fails}\nretry = {{ max_attempts = 2, base = "100ms" }}\n'
        'timeout = "30s"\n\n'
        f'[tasks.after_broken]\ncommand = {quick}\ndeps = ["broken"]\n\n'
        f'[tasks.nightly]\ncommand = {quick}\ncron = "30 2 * * *"\ntimezone = "Europe/Berlin"\n',
        encoding="utf-8",
    )
    session = WorkflowSession(load(source), settings)
    try:
        window = session.window
        qtbot.addWidget(window)
        scheduler = session.scheduler
        qtbot.waitUntil(lambda: scheduler.task("after_broken").state is S.SKIPPED, timeout=20000)
        qtbot.waitUntil(lambda: window.bridge.tasks["after_broken"].state is S.SKIPPED)
        inspector = window.inspector
        field = inspector.fields

        window.select_tasks(["broken"])
        assert field["runs"].text().startswith("command: ") and "SystemExit" in field["runs"].text()
        assert field["folder"].text() == str(tmp_path)
        assert field["retry"].text().startswith("up to 2 attempts")
        assert field["timeout"].text() == "30s"
        assert "all dependencies succeeded" in field["rule"].text()
        assert field["attempts"].text() == "2 attempts"
        assert "failed for good" in field["why not"].text()
        assert inspector.trend.caption.text() == "2 attempts, none succeeded"  # not "yet"

        window.select_tasks(["after_broken"])
        assert field["why not"].text().startswith("skipped because broken failed")
        assert field["attempts"].text() == "0 attempts"

        window.select_tasks(["nightly"])
        trigger = field["trigger"].text()
        assert "Europe/Berlin" in trigger and "local" in trigger and "next" in trigger
        assert field["why not"].text().startswith("waiting for its next occurrence")

        # An edit applied here, not saved: the inspector says the file differs.
        old = scheduler.definition("after_broken")
        edited = Command([sys.executable, "-c", "print(1)"], cwd=old.action.cwd)
        assert window.controller.edit_task("after_broken", replace(old, action=edited)) is None
        window.select_tasks(["after_broken"])
        assert "changed here, not in the file" in field["runs"].text()
    finally:
        session.close()


def test_the_run_header_says_how_the_run_goes_and_how_it_ended(
    qtbot, make_window, manual_scheduler
):
    def broken():
        raise RuntimeError("no")

    manual_scheduler.add(lambda: None, name="a")
    manual_scheduler.add(broken, name="b", deps=["a"])
    manual_scheduler.add(lambda: None, name="c", deps=["b"])
    manual_scheduler.schedule_after(lambda: None, 60, name="later")
    window = make_window(manual_scheduler)
    header = window.run_header
    window.set_started(False)
    window._refresh_status()
    assert header.full_text.startswith("This run · not started")
    manual_scheduler.start()
    window.set_started(True)
    qtbot.waitUntil(lambda: window.bridge.tasks["c"].state is S.SKIPPED)
    window._refresh_status()
    assert header.full_text.startswith("This run · running · 3/4 done · 1 failed · 1 skipped")
    qtbot.keyClick(window.graph_view, Qt.Key.Key_P, CTRL)
    qtbot.waitUntil(lambda: "‖ paused" in header.full_text)
    qtbot.keyClick(window.graph_view, Qt.Key.Key_P, CTRL)
    manual_scheduler.clock.advance(60)
    qtbot.waitUntil(lambda: window.bridge.tasks["later"].state is S.SUCCEEDED)
    window._refresh_status()
    assert header.full_text.startswith("This run · failed in ")
    assert "2 succeeded · 1 failed · 1 skipped" in header.full_text
    assert "ETA" not in header.full_text


def test_the_runs_view_shows_runs_by_tasks_and_a_click_opens_that_attempt(
    qtbot, tmp_path, settings
):
    source = tmp_path / "grid.toml"
    quick = f'["{sys.executable}", "-c", "pass"]'
    fails = f'["{sys.executable}", "-c", "raise SystemExit(2)"]'
    source.write_text(
        '[workflow]\nname = "grid"\n\n'
        f"[tasks.ok]\ncommand = {quick}\n\n[tasks.bad]\ncommand = {fails}\n",
        encoding="utf-8",
    )
    paths = dict(db_path=tmp_path / "run.db", log_dir=tmp_path / "logs")
    done = (S.SUCCEEDED, S.FAILED)
    for fresh in (False, True):  # two runs in the same store
        session = WorkflowSession(load(source), settings, fresh=fresh, **paths)
        try:
            qtbot.waitUntil(
                lambda s=session: all(t.state in done for t in s.scheduler.tasks()), timeout=20000
            )
            if fresh:
                _check_runs_view(qtbot, session.window)
        finally:
            session.close()


def _check_runs_view(qtbot, window) -> None:
    window.resize(1400, 900)
    window.show()
    window.runs_dock.show()
    window.runs_dock.raise_()
    view = window.runs_view
    qtbot.waitUntil(lambda: view.grid is not None and len(view.grid.runs) == 2)
    qtbot.waitUntil(lambda: ("ok", view.grid.runs[-1]) in view.grid.cells)
    first, _second = view.grid.runs
    rows = {view.verticalHeaderItem(r).text(): r for r in range(view.rowCount())}
    assert view.item(rows["ok"], 0).text().startswith("✓ ")
    assert view.item(rows["bad"], 1).text().startswith("✗ ")
    assert "✗1" in view.horizontalHeaderItem(1).text()
    cell = view.visualItemRect(view.item(rows["bad"], 0)).center()
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=cell)
    inspector = window.inspector
    assert inspector.task_id == "bad"

    def chosen_run():
        item = inspector.attempt_list.currentItem()
        return None if item is None else item.text(5)

    qtbot.waitUntil(lambda: chosen_run() == str(first), timeout=5000)


def test_the_timeline_fits_the_run_not_the_forecast_horizon(qtbot, make_window, manual_scheduler):
    manual_scheduler.schedule_after(noop_task, 40, name="pipeline")
    manual_scheduler.schedule_every(noop_task, 10, name="tick")
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    timeline = window.timeline
    now = manual_scheduler.clock.now()
    # What the forecast gives: the pipeline ends at +40 s, the recurring task every 10 s
    # up to its 10-minute horizon.
    ghosts = {
        "pipeline": [(now + 35, now + 40, True)],
        "tick": [(now + 10 * k, now + 10 * k + 1, False) for k in range(1, 60)],
    }
    timeline.set_ghosts(ghosts)
    timeline.canvas.refit(now)
    assert timeline.canvas.span < 120  # about the run's 40 s, not "next 8 min"
    left, right = timeline.canvas.window(now)
    assert right >= now + 40  # the run's end is in view


def noop_task():
    return None

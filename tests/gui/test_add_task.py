"""The add-task dialog checks every field, previews the schedule and adds through undo."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox

from taskloom.engine import TaskState
from taskloom.gui.add_task import AddTaskDialog

S = TaskState


def noop():
    return None


def dialog_for(qtbot, ids=()):
    dialog = AddTaskDialog(list(ids))
    qtbot.addWidget(dialog)
    return dialog


def ok_button(dialog):
    return dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)


def test_problems_are_explained_next_to_the_field(qtbot):
    dialog = dialog_for(qtbot, ["extract"])
    dialog.show()
    assert not ok_button(dialog).isEnabled()
    assert dialog.errors["target"].text() == "say what to run"
    dialog.name.setText("extract")
    assert "already exists" in dialog.errors["name"].text()
    dialog.name.setText("load")
    dialog.target.setText("python3 -c 'print(1)")
    assert "cannot split" in dialog.errors["target"].text()
    dialog.target.setText("python3 -c 'print(1)'")
    assert dialog.errors["target"].isHidden()
    dialog.schedule.setCurrentIndex(dialog.schedule.findData("cron"))
    dialog.cron.setText("61 * * * *")
    assert "bad cron expression" in dialog.errors["schedule"].text()
    assert not ok_button(dialog).isEnabled()
    dialog.timeout.setText("ten minutes")
    assert "bad duration" in dialog.errors["timeout"].text()
    dialog.kind_call.setChecked(True)
    dialog.target.setText("not a reference")
    assert "package.module:function" in dialog.errors["target"].text()
    dialog.close()


def test_cron_preview_lists_the_next_five_times(qtbot):
    dialog = dialog_for(qtbot)
    dialog.name.setText("tick")
    dialog.target.setText("true")
    dialog.schedule.setCurrentIndex(dialog.schedule.findData("cron"))
    dialog.cron.setText("*/15 * * * *")
    lines = [line for line in dialog.preview.text().splitlines() if "(in " in line]
    assert len(lines) == 5
    assert ok_button(dialog).isEnabled()
    dialog.interval.setText("5m")
    dialog.schedule.setCurrentIndex(dialog.schedule.findData("every"))
    assert len(dialog.preview.text().splitlines()) == 5
    assert "(in 5 min)" in dialog.preview.text().splitlines()[0]


def test_dialog_adds_a_command_task_and_undo_removes_it(qtbot, make_window, manual_scheduler):
    manual_scheduler.add(noop, name="extract")
    window = make_window(manual_scheduler)
    window.act_add.trigger()
    dialog = window.add_dialog
    assert dialog.isVisible()
    dialog.name.setText("load")
    dialog.target.setText("python3 -c 'print(42)'")
    dialog.schedule.setCurrentIndex(dialog.schedule.findData("after"))
    dialog.delay.setText("90s")
    dialog.priority.setValue(7)
    dialog.max_attempts.setValue(3)
    dialog.deps.item(0).setCheckState(Qt.CheckState.Checked)
    ok_button(dialog).click()
    info = manual_scheduler.task("load")
    assert info.deps == ("extract",) and info.priority == 7
    assert info.state in (S.PENDING, S.SCHEDULED)
    qtbot.waitUntil(lambda: "load" in window.scene.nodes, timeout=3000)
    assert window.scene.graph.has_edge("extract", "load")
    window.act_undo.trigger()
    assert "load" not in {t.id for t in manual_scheduler.tasks()}
    window.act_redo.trigger()
    assert manual_scheduler.task("load").deps == ("extract",)


def test_edit_dialog_keeps_what_it_does_not_show(qtbot, tmp_path):
    from taskloom.engine import TaskDefinition
    from taskloom.engine.command import Command

    original = TaskDefinition(
        id="load",
        action=Command(["python3", "load.py"], cwd=str(tmp_path), env={"MODE": "full"}),
        every=300.0,
        priority=2,
        deps=("extract",),
        trigger_rule="all_done",
    )
    dialog = AddTaskDialog(["extract", "load"], spec=original, task_id="load")
    qtbot.addWidget(dialog)
    assert dialog.windowTitle() == "Edit load" and ok_button(dialog).text() == "Apply"
    assert dialog.interval.text() == "5m" and dialog.target.text() == "python3 load.py"
    assert dialog.errors["name"].isHidden()  # its own id is not "already taken"
    unchanged = dialog.validate()
    assert unchanged.action is original.action and unchanged.trigger_rule == "all_done"
    assert unchanged.deps == ("extract",)
    dialog.target.setText("python3 load.py --full")
    changed = dialog.validate()
    assert changed.action.argv == ["python3", "load.py", "--full"]
    assert changed.action.cwd == str(tmp_path) and changed.action.env == {"MODE": "full"}


def test_dialog_shows_a_refusal_by_the_field_and_stays_open(qtbot):
    calls = []

    def refuse(spec):
        calls.append(spec)
        return ("schedule", "the engine says no")

    dialog = AddTaskDialog([], submit=refuse)
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.name.setText("job")
    dialog.target.setText("python3 -c pass")
    ok_button(dialog).click()
    assert calls and dialog.isVisible()
    assert dialog.errors["schedule"].text() == "the engine says no"
    dialog.reject()


def test_an_empty_name_is_refused_instead_of_invented(qtbot):
    dialog = dialog_for(qtbot)
    dialog.target.setText("echo hi")
    assert dialog.errors["name"].text() == "give the task a name"
    assert not ok_button(dialog).isEnabled()
    dialog.name.setText("greet")
    assert ok_button(dialog).isEnabled()
    dialog.close()


def test_cron_zone_defaults_to_the_local_zone(qtbot, monkeypatch):
    monkeypatch.setenv("TZ", "Europe/Berlin")
    dialog = dialog_for(qtbot)
    assert dialog.tz.text() == "Europe/Berlin"
    dialog.close()


def test_a_first_wait_longer_than_the_longest_is_refused(qtbot):
    dialog = dialog_for(qtbot)
    dialog.name.setText("load")
    dialog.target.setText("true")
    dialog.max_attempts.setValue(3)
    dialog.backoff.setText("10m")
    dialog.max_delay.setText("5m")
    dialog.validate()
    assert "longer than the longest wait" in dialog.errors["backoff"].text()
    assert not ok_button(dialog).isEnabled()
    dialog.close()


def test_a_callable_that_cannot_be_imported_is_refused_on_ok(qtbot):
    dialog = dialog_for(qtbot)
    dialog.show()
    dialog.name.setText("call")
    dialog.kind_call.setChecked(True)
    dialog.target.setText("no_such_module_here:run")
    assert ok_button(dialog).isEnabled()  # well formed; imported only on OK
    ok_button(dialog).click()
    assert dialog.isVisible()
    assert "cannot import module" in dialog.errors["target"].text()
    dialog.close()


def test_a_command_added_in_the_dialog_runs_in_the_files_folder(qtbot, tmp_path, settings):
    import sys

    from taskloom.app import WorkflowSession
    from taskloom.engine.workflow import load

    source = tmp_path / "flow.toml"
    source.write_text(
        f'[workflow]\nname = "flow"\n\n[tasks.a]\ncommand = ["{sys.executable}", "-c", "pass"]\n'
        'after = "1h"\n',
        encoding="utf-8",
    )
    session = WorkflowSession(load(source), settings)
    try:
        window = session.window
        qtbot.addWidget(window)
        window.act_add.trigger()
        dialog = window.add_dialog
        dialog.name.setText("b")
        dialog.target.setText("python3 scripts/step.py")
        dialog.schedule.setCurrentIndex(dialog.schedule.findData("after"))
        dialog.delay.setText("1h")
        ok_button(dialog).click()
        assert session.scheduler.definition("b").action.cwd == str(tmp_path.resolve())
    finally:
        session.close()


def test_a_task_added_in_the_window_gets_the_workflows_defaults_and_keeps_them_saved(
    qtbot, tmp_path, settings
):
    """[workflow.defaults] reach a task added in the window as they reach the file's own
    tasks: the form starts from them, what it does not show is kept, and Save then
    reopen gives the same task."""
    from taskloom.app import WorkflowSession
    from taskloom.engine.workflow import load

    (tmp_path / "work").mkdir()
    source = tmp_path / "flow.toml"
    source.write_text(
        '[workflow]\nname = "flow"\n\n'
        "[workflow.defaults]\n"
        'priority = 5\ntimeout = "10m"\ncwd = "work"\nenv = { STAGE = "prod" }\npool = "db"\n'
        'retry = { max_attempts = 3, base = "2s" }\n\n'
        "[pools]\ndb = 2\n\n"
        '[tasks.a]\ncommand = ["true"]\nafter = "1h"\n',
        encoding="utf-8",
    )
    session = WorkflowSession(load(source), settings, start=False)
    try:
        window = session.window
        qtbot.addWidget(window)
        window.act_add.trigger()
        dialog = window.add_dialog
        assert dialog.priority.value() == 5 and dialog.max_attempts.value() == 3
        assert dialog.timeout.text() and dialog.backoff.text()
        dialog.name.setText("b")
        dialog.target.setText("python3 step.py")
        dialog.schedule.setCurrentIndex(dialog.schedule.findData("after"))
        dialog.delay.setText("1h")
        ok_button(dialog).click()
        added = session.scheduler.definition("b")
        file_task = session.scheduler.definition("a")
        assert (added.priority, added.timeout, added.pool) == (5, 600.0, "db")
        assert added.retry is not None and added.retry.max_attempts == 3
        assert added.action.cwd == file_task.action.cwd == str((tmp_path / "work").resolve())
        assert added.action.env == {"STAGE": "prod"}
        assert window.save_workflow()
    finally:
        session.close()
    import tomllib

    written = tomllib.loads(source.read_text())["tasks"]["b"]
    assert set(written) == {"command", "after"}  # the defaults give the rest, as to "a"
    reopened = load(source).tasks["b"]
    assert (reopened.priority, reopened.timeout, reopened.pool) == (5, 600.0, "db")
    assert reopened.retry is not None and reopened.retry.max_attempts == 3
    assert reopened.action.env == {"STAGE": "prod"}
    assert reopened.action.cwd == str((tmp_path / "work").resolve())

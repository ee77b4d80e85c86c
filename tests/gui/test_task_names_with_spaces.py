"""A task name with spaces (the engine and the workflow file accept ``"load data"``)
can be added, edited in the Add/Edit dialog and saved back to its file."""

from __future__ import annotations

from PySide6.QtWidgets import QDialogButtonBox

from taskloom.engine.workflow import load
from taskloom.gui.add_task import AddTaskDialog
from tests.gui.test_app_store import open_session

FILE = """
[workflow]
name = "spaces"
[tasks."load data"]
command = ["true"]
after = "1h"
"""


def test_the_dialog_takes_a_name_with_spaces(qtbot):
    dialog = AddTaskDialog([])
    qtbot.addWidget(dialog)
    dialog.name.setText("load data")
    dialog.target.setText("true")
    assert dialog.errors["name"].isHidden()
    assert dialog.validate().id == "load data"


def test_a_files_task_named_with_spaces_is_edited_and_saved(qtbot, tmp_path, settings):
    path = tmp_path / "spaces.toml"
    path.write_text(FILE)
    session = open_session(qtbot, settings, path, tmp_path / "run.db")
    try:
        window = session.window
        qtbot.waitUntil(lambda: "load data" in window.bridge.tasks)
        window.select_tasks(["load data"])
        assert window.act_edit.isEnabled(), window.act_edit.statusTip()
        window.act_edit.trigger()
        dialog = window.edit_dialog
        assert dialog.name.text() == "load data"
        dialog.target.setText("echo loaded")
        dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).click()
        assert not dialog.isVisible(), [e.text() for e in dialog.errors.values()]
        assert session.scheduler.definition("load data").action.argv == ["echo", "loaded"]
        window.act_save.trigger()
        qtbot.waitUntil(lambda: not window.document.dirty)
        assert load(path).tasks["load data"].action.argv == ["echo", "loaded"]
    finally:
        session.close()

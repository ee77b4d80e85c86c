"""The workflow document: Save keeps the file a person wrote; title, dirty flag, close."""

from __future__ import annotations

import sys

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication, QMessageBox

from taskloom.app import WorkflowSession
from taskloom.engine.workflow import load

PY = sys.executable
TEXT = f"""# A pipeline someone wrote by hand.
[workflow]
name = "flow"   # shown in the title
workers = 2

# the first step
[tasks.a]
command = ["{PY}", "-c", "pass"]
after   = "1h"     # an hour from now

[tasks.b]
command = ["{PY}", "scripts/step.py"]
after = "1h"
priority = 0   # states the default
"""


def open_session(qtbot, tmp_path, settings, text=TEXT):
    source = tmp_path / "flow.toml"
    source.write_bytes(text.encode())
    session = WorkflowSession(load(source), settings)
    window = session.window
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    with qtbot.waitActive(window):  # shortcuts fire only in the active window
        window.activateWindow()
    return session, source


def test_save_without_edits_writes_the_file_byte_for_byte(qtbot, tmp_path, settings):
    session, source = open_session(qtbot, tmp_path, settings, TEXT.replace("\n", "\r\n"))
    try:
        before = source.read_bytes()
        window = session.window
        qtbot.keyClick(window, Qt.Key.Key_S, Qt.KeyboardModifier.ControlModifier)  # Save
        assert source.read_bytes() == before
        assert "Saved" in window.statusBar().currentMessage()
    finally:
        session.close()


def test_an_edit_rewrites_only_what_changed_and_keeps_comments(qtbot, tmp_path, settings):
    session, source = open_session(qtbot, tmp_path, settings)
    try:
        window = session.window
        assert not window.isWindowModified()
        assert str(source) in window.windowTitle() and "flow" in window.windowTitle()
        assert window.controller.connect_tasks("a", "b")
        assert window.isWindowModified()  # "[*]" in the title shows as "*"
        qtbot.keyClick(window, Qt.Key.Key_S, Qt.KeyboardModifier.ControlModifier)
        assert not window.isWindowModified()
        expected = TEXT.replace("priority = 0   # states the default\n", "") + 'deps = ["a"]\n'
        text = source.read_text()
        assert "# A pipeline someone wrote by hand." in text
        assert 'after   = "1h"     # an hour from now' in text
        assert text.count("\n") >= expected.count("\n") - 1
        assert load(source).tasks["b"].deps == ("a",)
        assert "priority = 0   # states the default" in text  # unchanged keys stay
    finally:
        session.close()


def test_save_as_elsewhere_writes_folders_relative_to_the_new_file(qtbot, tmp_path, settings):
    session, source = open_session(qtbot, tmp_path, settings)
    try:
        other = tmp_path / "elsewhere"
        other.mkdir()
        assert session.window.save_workflow(str(other / "copy.toml"))
        copy = load(other / "copy.toml")
        # Beside the new file, as in the old one (issue 24: an absolute cwd made a copied
        # folder run the old folder's scripts).
        assert copy.tasks["b"].action.cwd == str(other.resolve())
        assert str(tmp_path.resolve()) not in (other / "copy.toml").read_text()
        assert "# the first step" in (other / "copy.toml").read_text()
        assert str(other / "copy.toml") in session.window.windowTitle()
    finally:
        session.close()


def test_save_as_dialog_does_not_open_on_the_file_itself(qtbot, tmp_path, settings, monkeypatch):
    from PySide6.QtWidgets import QFileDialog

    session, source = open_session(qtbot, tmp_path, settings)
    asked = {}

    def fake(parent, title, start, filters):
        asked["start"] = start
        return "", ""

    monkeypatch.setattr(QFileDialog, "getSaveFileName", fake)
    try:
        session.window.act_save_as.trigger()
        assert asked["start"] != str(source)
        assert asked["start"].startswith(str(tmp_path.resolve()))
    finally:
        session.close()


def test_closing_with_unsaved_edits_asks_and_cancel_keeps_the_window(qtbot, tmp_path, settings):
    session, source = open_session(qtbot, tmp_path, settings)
    window = session.window
    try:
        window.close_question.enabled = True
        assert window.controller.connect_tasks("a", "b")

        def answer(button):
            box = window.close_question.box
            assert box is not None and "unsaved edits" in box.text()
            box.button(button).click()

        QTimer.singleShot(0, lambda: answer(QMessageBox.StandardButton.Cancel))
        assert not window.close()
        assert window.isVisible() and not session.stopped
        QTimer.singleShot(0, lambda: answer(QMessageBox.StandardButton.Save))
        assert window.close()
        assert load(source).tasks["b"].deps == ("a",)  # saved before closing
        QApplication.processEvents()
    finally:
        session.close()


def test_an_edge_the_resumed_run_could_not_take_stays_in_the_file(
    qtbot, tmp_path, make_window, manual_scheduler
):
    """A resumed run keeps a succeeded task as stored (without an edge added to the
    file since): Save must still write the file's edge."""
    from taskloom.engine.workflow import loads

    source = tmp_path / "flow.toml"
    text = (
        f'[workflow]\nname = "flow"\n\n[tasks.a]\ncommand = ["{PY}", "-c", "pass"]\n'
        'after = "1h"\n\n'
        f'[tasks.b]\ncommand = ["{PY}", "-c", "pass"]\ndeps = ["a"]  # added by a drag\n'
    )
    source.write_text(text, encoding="utf-8")
    workflow = loads(text, source)
    workflow.tasks["a"].submit(manual_scheduler)
    workflow.tasks["b"].with_deps(()).submit(manual_scheduler)  # as the stored run had it
    window = make_window(manual_scheduler)
    window.attach_workflow(workflow)
    assert window.save_workflow()
    assert source.read_text(encoding="utf-8") == text  # nothing dropped, byte for byte

"""Reopening a file whose stored run is unfinished and differs from it: the window shows
what differs and the person chooses to resume the stored run or start a new one from
the file (real stores, real commands, the real dialog clicked)."""

from __future__ import annotations

import sys

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox

from taskloom.app import Sessions
from taskloom.engine import TaskState

S = TaskState


def write(path, tasks: dict[str, str]) -> None:
    """One task per body: ``-c`` code, '!after' to wait an hour first."""
    lines = ['[workflow]\nname = "demo"\nworkers = 2\n']
    for tid, body in tasks.items():
        after = body.endswith("!after")
        code = body.removesuffix("!after")
        lines.append(f'[tasks.{tid}]\ncommand = ["{sys.executable}", "-c", "{code}"]')
        if after:
            lines.append('after = "1h"')
        lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")


def wait_state(qtbot, session, tid, state):
    tasks = session.window.bridge.tasks
    qtbot.waitUntil(lambda: tid in tasks and tasks[tid].state is state, timeout=10000)


def first_run(qtbot, settings, path, data):
    """A run left unfinished: 'quick' succeeded, 'later' waits an hour."""
    write(path, {"quick": "print(1)", "later": "pass!after"})
    sessions = Sessions(settings, data_dir=data)
    try:
        sessions.open(path)
        wait_state(qtbot, sessions.current, "quick", S.SUCCEEDED)
    finally:
        sessions.close()


def click_when_asked(label: str, seen: dict) -> None:
    """Click ``label`` in the run-choice dialog once it shows (it runs its own loop)."""

    def attempt():
        for widget in QApplication.topLevelWidgets():
            if widget.objectName() == "run_choice" and widget.isVisible():
                seen["text"] = widget.text() + "\n" + widget.informativeText()
                seen["details"] = widget.detailedText()
                seen["buttons"] = [  # not Qt's own "Show Details..."
                    b.text()
                    for b in widget.buttons()
                    if widget.buttonRole(b) is not QMessageBox.ButtonRole.ActionRole
                ]
                next(b for b in widget.buttons() if b.text() == label).click()
                return
        QTimer.singleShot(10, attempt)

    QTimer.singleShot(0, attempt)


def test_resume_the_stored_run_after_seeing_what_differs(qtbot, tmp_path, settings):
    path, data = tmp_path / "demo.toml", tmp_path / "data"
    first_run(qtbot, settings, path, data)
    write(path, {"quick": "print(1)", "later": "print(2)!after", "extra": "pass!after"})
    seen: dict = {}
    sessions = Sessions(settings, data_dir=data)
    try:
        click_when_asked("Resume the stored run", seen)
        sessions.open(path)
        session = sessions.current
        assert "1 of 2 tasks done" in seen["text"]
        assert "added in the file: extra" in seen["details"]
        assert "changed in the file (a resume runs them as the file says): later" in seen["details"]
        assert seen["buttons"] == ["Resume the stored run", "Apply the file: start a new run"]
        assert session.resumed and session.store.run == 1
        tasks = session.window.bridge.tasks
        assert tasks["quick"].state is S.SUCCEEDED  # not run again
        assert [a.number for a in session.scheduler.attempts("quick")] == [1]
        assert set(tasks) == {"quick", "later", "extra"}
        assert "changed in the file, run as it says now: later" in session.note
    finally:
        sessions.close()


def test_apply_the_file_and_start_a_new_run(qtbot, tmp_path, settings):
    path, data = tmp_path / "demo.toml", tmp_path / "data"
    first_run(qtbot, settings, path, data)
    write(path, {"quick": "print(1)", "later": "print(2)!after", "extra": "pass!after"})
    seen: dict = {}
    sessions = Sessions(settings, data_dir=data)
    try:
        click_when_asked("Apply the file: start a new run", seen)
        sessions.open(path)
        session = sessions.current
        assert "added in the file: extra" in seen["details"]
        assert not session.resumed and session.store.run == 2
        wait_state(qtbot, session, "quick", S.SUCCEEDED)  # run again, in the new run
        assert set(session.window.bridge.tasks) == {"quick", "later", "extra"}
    finally:
        sessions.close()


def test_nothing_is_asked_when_the_file_did_not_change(qtbot, tmp_path, settings):
    path, data = tmp_path / "demo.toml", tmp_path / "data"
    first_run(qtbot, settings, path, data)
    asked = []
    sessions = Sessions(settings, data_dir=data)
    sessions.choose_run = lambda parent, name, differences: asked.append(differences)
    try:
        sessions.open(path)
        assert sessions.current.resumed and asked == []
    finally:
        sessions.close()


def test_a_run_the_file_removed_a_task_from_is_explained_and_not_resumed(qtbot, tmp_path, settings):
    path, data = tmp_path / "demo.toml", tmp_path / "data"
    first_run(qtbot, settings, path, data)
    write(path, {"quick": "print(1)"})
    seen: dict = {}
    sessions = Sessions(settings, data_dir=data)
    try:
        click_when_asked("Apply the file: start a new run", seen)
        sessions.open(path)
        assert "removed from the file: later" in seen["details"]
        assert seen["buttons"] == ["Apply the file: start a new run"]  # no resume offered
        assert "cannot be resumed" in seen["text"]
        assert not sessions.current.resumed and sessions.current.store.run == 2
    finally:
        sessions.close()


def test_escape_keeps_the_stored_run(qtbot, tmp_path, settings):
    from taskloom.gui.run_choice import run_choice_box
    from taskloom.runs import RunDifferences

    differences = RunDifferences(("extra",), (), (), (), 1, 2)
    box = run_choice_box(None, "demo", differences)
    qtbot.addWidget(box)
    assert box.escapeButton() is box.resume and box.defaultButton() is box.resume
    assert isinstance(box, QMessageBox)


def test_an_offscreen_window_resumes_without_asking(qtbot, tmp_path, settings):
    from taskloom.app import run_window
    from taskloom.engine.store import SQLiteStore

    path, db = tmp_path / "demo.toml", tmp_path / "demo.db"
    write(path, {"quick": "print(1)", "later": "pass!after"})
    assert run_window(str(path), quit_after=0.5, db=db) == 0
    write(path, {"quick": "print(1)", "later": "print(2)!after"})  # differs: nobody to ask
    assert run_window(str(path), quit_after=0.3, db=db) == 0  # returns: no modal question
    store = SQLiteStore(db)
    try:
        assert store.run == 1  # resumed, as taskloom run would
    finally:
        store.close()
    assert not [w for w in QApplication.topLevelWidgets() if w.isVisible()]

"""Run again as a new run (Airflow's Trigger): the file from the start as the next run in
the store; the old run's attempts stay readable (real SQLite file, real commands)."""

from __future__ import annotations

import sys

from PySide6.QtCore import Qt

from taskloom.app import Sessions
from taskloom.engine import TaskState

S = TaskState


def write_workflow(tmp_path, tasks: dict[str, str], name="demo"):
    lines = [f'[workflow]\nname = "{name}"\nworkers = 2\n']
    for tid, body in tasks.items():
        script = tmp_path / f"{tid}.py"
        script.write_text(body, encoding="utf-8")
        lines.append(f'[tasks.{tid}]\ncommand = ["{sys.executable}", "{script}"]\n')
    path = tmp_path / f"{name}.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def wait_state(qtbot, session, tid, state, timeout=10000):
    tasks = session.window.bridge.tasks
    qtbot.waitUntil(lambda: tid in tasks and tasks[tid].state is state, timeout=timeout)


def test_run_again_as_a_new_run_starts_the_next_run_and_keeps_the_old_one(
    qtbot, tmp_path, settings
):
    path = write_workflow(tmp_path, {"extract": "print('e')", "load": "print('l')"})
    sessions = Sessions(settings, db=tmp_path / "demo.db")
    try:
        assert sessions.open(str(path))
        first = sessions.current
        wait_state(qtbot, first, "extract", S.SUCCEEDED)
        wait_state(qtbot, first, "load", S.SUCCEEDED)
        assert first.store.run == 1
        window = first.window
        assert window.new_run_possible

        # The dialog says what each choice runs.
        qtbot.waitUntil(lambda: set(window.scene.nodes) == {"extract", "load"})
        window.select_tasks(["extract"])
        assert window.selected == ["extract"]
        window.act_clear.trigger()
        box = window.clear_question.box
        details = box.informativeText()
        assert "In this run (Run again):\n• extract (succeeded)" in details
        assert "every task of demo.toml" in details and "as run 2" in details
        assert "run 1 and its attempts stay in the history" in details
        fresh = next(b for b in box.buttons() if b.text() == "As a new run")
        qtbot.mouseClick(fresh, Qt.MouseButton.LeftButton)

        qtbot.waitUntil(lambda: sessions.current is not first, timeout=10000)
        second = sessions.current
        assert first.stopped  # the old run's engine let go of the store first
        assert second.store.run == 2 and not second.resumed
        wait_state(qtbot, second, "extract", S.SUCCEEDED)
        wait_state(qtbot, second, "load", S.SUCCEEDED)
        # The window shows the new run: its tasks ran once in it.
        assert second.window.isVisible() and second.window is not window
        assert [a.number for a in second.scheduler.attempts("extract")] == [1]
        # The store has both runs; run 1's attempts are intact.
        stored = second.store.attempts("extract")
        assert sorted((a["run"], a["number"], a["outcome"]) for a in stored) == [
            (1, 1, "succeeded"),
            (2, 1, "succeeded"),
        ]
        second.window.select_tasks(["extract"])
        second.window.inspector.earlier_runs.setChecked(True)
        qtbot.waitUntil(
            lambda: second.window.inspector.attempt_list.topLevelItemCount() == 2, timeout=5000
        )
    finally:
        sessions.close()


def test_a_window_without_a_store_offers_no_new_run(qtbot, make_window, manual_scheduler):
    manual_scheduler.add(lambda: None, name="only")
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    qtbot.waitUntil(lambda: window.bridge.tasks["only"].state is S.SUCCEEDED)
    window.select_tasks(["only"])
    window.act_clear.trigger()
    box = window.clear_question.box
    assert "As a new run" not in [b.text() for b in box.buttons()]
    assert "new run" not in box.informativeText()
    box.reject()


def test_a_new_run_asks_about_unsaved_edits_first_and_runs_what_was_saved(
    qtbot, tmp_path, settings
):
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QMessageBox

    path = write_workflow(tmp_path, {"extract": "print('e')", "load": "print('l')"})
    sessions = Sessions(settings, db=tmp_path / "demo.db")
    try:
        assert sessions.open(str(path))
        first = sessions.current
        wait_state(qtbot, first, "extract", S.SUCCEEDED)
        wait_state(qtbot, first, "load", S.SUCCEEDED)
        window = first.window
        window.close_question.enabled = True
        window.controller.add_task(  # an unsaved edit: a third task
            first.scheduler.definition("load").with_deps((), "report")
        )
        assert window.document.dirty
        qtbot.waitUntil(lambda: "report" in window.scene.nodes)
        window.select_tasks(["extract"])
        window.act_clear.trigger()
        box = window.clear_question.box
        assert "unsaved edits are not in it: save first" in box.informativeText()

        asked = []

        def save_when_asked():  # the question is modal: answer it from a timer
            question = window.close_question.box
            if question is None:
                QTimer.singleShot(10, save_when_asked)
                return
            asked.append(question.text())
            question.button(QMessageBox.StandardButton.Save).click()

        save_when_asked()
        next(b for b in box.buttons() if b.text() == "As a new run").click()
        qtbot.waitUntil(lambda: sessions.current is not first, timeout=10000)
        second = sessions.current
        assert "unsaved edits" in asked[0]
        assert second.store.run == 2
        assert set(second.window.bridge.tasks) == {"extract", "load", "report"}  # as saved
    finally:
        sessions.close()

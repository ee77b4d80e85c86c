"""The window on a run store: resume, earlier runs in the inspector and the timeline,
and closing that leaves no program running (real SQLite files, real commands)."""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime, timedelta

import pytest
from PySide6.QtCore import QEvent, QPoint, QPointF, Qt
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QApplication

from taskloom.app import Sessions, WorkflowSession, run_window, store_paths
from taskloom.engine import ManualClock, Scheduler, SyncExecutor, TaskState
from taskloom.engine.store import SQLiteStore
from taskloom.engine.workflow import load

S = TaskState


def write_workflow(tmp_path, tasks: dict[str, str], name="demo"):
    """One task per script body; a body may end in '!after' to wait an hour."""
    lines = [f'[workflow]\nname = "{name}"\nworkers = 2\n']
    for tid, body in tasks.items():
        after = body.endswith("!after")
        script = tmp_path / f"{tid}.py"
        script.write_text(body.removesuffix("!after"), encoding="utf-8")
        lines.append(f'[tasks.{tid}]\ncommand = ["{sys.executable}", "{script}"]')
        if after:
            lines.append('after = "1h"')
        lines.append("")
    path = tmp_path / f"{name}.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def open_session(qtbot, settings, path, db, **kw) -> WorkflowSession:
    session = WorkflowSession(load(path), settings, db_path=db, log_dir=db.parent / "logs", **kw)
    return session


def wait_state(qtbot, session, tid, state, timeout=10000):
    qtbot.waitUntil(
        lambda: (
            tid in session.window.bridge.tasks and session.window.bridge.tasks[tid].state is state
        ),
        timeout=timeout,
    )


def stored_states(db) -> dict[str, str]:
    store = SQLiteStore(db)
    try:
        return {record["id"]: record["state"] for record in store.load_tasks()}
    finally:
        store.close()


def test_second_open_resumes_an_unfinished_run(qtbot, tmp_path, settings):
    path = write_workflow(tmp_path, {"quick": "print('done')", "later": "pass!after"})
    db = tmp_path / "demo.db"
    first = open_session(qtbot, settings, path, db)
    try:
        assert not first.resumed
        wait_state(qtbot, first, "quick", S.SUCCEEDED)
    finally:
        first.close()
    assert first.stopped
    assert stored_states(db) == {"quick": "succeeded", "later": "scheduled"}

    second = open_session(qtbot, settings, path, db)
    try:
        assert second.resumed and "resuming" in second.note
        tasks = second.window.bridge.tasks
        assert tasks["quick"].state is S.SUCCEEDED  # finished work stays finished
        assert tasks["later"].state is S.SCHEDULED
        assert tasks["quick"].attempt == 1  # it did not run again
        assert [a.number for a in second.scheduler.attempts("quick")] == [1]
        assert "resuming" in second.window.statusBar().currentMessage()
    finally:
        second.close()
    store = SQLiteStore(db)
    try:
        assert store.run == 1
    finally:
        store.close()


def test_inspector_lists_attempts_of_an_earlier_run(qtbot, tmp_path, settings):
    path = write_workflow(tmp_path, {"hello": "print('hello from a run')"})
    db = tmp_path / "demo.db"
    first = open_session(qtbot, settings, path, db)
    try:
        wait_state(qtbot, first, "hello", S.SUCCEEDED)
    finally:
        first.close()

    second = open_session(qtbot, settings, path, db)  # the last run finished: a new one
    try:
        assert not second.resumed and second.store.run == 2
        wait_state(qtbot, second, "hello", S.SUCCEEDED)
        window = second.window
        window.select_tasks(["hello"])
        inspector = window.inspector
        assert inspector.earlier_runs.isVisibleTo(inspector)
        attempts = inspector.attempt_list
        qtbot.waitUntil(lambda: attempts.topLevelItemCount() == 2, timeout=5000)
        rows = [
            [attempts.topLevelItem(i).text(c) for c in (0, 3, 5)]
            for i in range(attempts.topLevelItemCount())
        ]
        assert rows == [["1", "succeeded", "1"], ["1", "succeeded", "2"]]  # oldest first
        assert attempts.currentItem() is attempts.topLevelItem(1)  # the latest is selected
        attempts.setCurrentItem(attempts.topLevelItem(0))
        text = inspector.output.toPlainText()
        assert "run 1, attempt 1: succeeded" in text
        assert "hello from a run" in text and "exit code: 0" in text and "log: " in text
        inspector.earlier_runs.setChecked(False)  # only this run
        assert attempts.topLevelItemCount() == 1 and attempts.topLevelItem(0).text(5) == "2"
    finally:
        second.close()


def test_inspector_without_a_store_shows_only_this_run(qtbot, make_window, manual_scheduler):
    manual_scheduler.add("builtins:print", name="p")
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    window.select_tasks(["p"])
    inspector = window.inspector
    qtbot.waitUntil(lambda: inspector.attempt_list.topLevelItemCount() == 1, timeout=3000)
    assert not inspector.earlier_runs.isVisibleTo(inspector)
    assert inspector.attempt_list.isColumnHidden(5)


def run_in_the_past(db, path, hours: float) -> None:
    """Run the workflow to the end on a clock whose wall time is ``hours`` ago."""
    clock = ManualClock(wall=datetime.now(UTC) - timedelta(hours=hours))
    store = SQLiteStore(db)
    scheduler = Scheduler(clock=clock, executor=SyncExecutor(), store=store)
    load(path).schedule_into(scheduler)
    scheduler.start()
    store.flush()  # a success is reported once it is on disk: before the clock moves on
    clock.advance(3700)  # 'later' runs an hour after the rest
    store.flush()
    assert scheduler.wait(10)
    scheduler.shutdown()
    store.close()


def test_timeline_shows_a_past_run_and_pans_back_to_it(qtbot, tmp_path, settings):
    path = write_workflow(tmp_path, {"nightly": "print('ok')", "later": "pass!after"})
    db = tmp_path / "demo.db"
    run_in_the_past(db, path, hours=2)  # run 1, two hours ago
    session = open_session(qtbot, settings, path, db, fresh=True)
    try:
        window = session.window
        window.resize(1400, 900)
        window.show()
        qtbot.waitExposed(window)
        timeline = window.timeline
        canvas = timeline.canvas
        history = timeline.model.history
        assert history is not None and history.run == 2
        history.min_interval = 0.1  # the test need not wait the usual few seconds
        qtbot.waitUntil(lambda: history.reads >= 1, timeout=3000)
        canvas.repaint()
        assert not [tip for _r, _t, tip in canvas._hits if "run 1" in tip]  # 2 h ago: not shown
        before = canvas.window()
        # Zoom out to 3 h (Ctrl+wheel steps) and drag the axis to the right: back in time.
        canvas.set_span(3 * 3600)
        y = 5
        start = QPoint(400, y)
        qtbot.mousePress(canvas, Qt.MouseButton.LeftButton, pos=start)
        end = QPointF(400 + canvas.plot_width() * 0.5, y)
        drag = QMouseEvent(
            QEvent.Type.MouseMove,
            end,
            canvas.mapToGlobal(end),
            Qt.MouseButton.LeftButton,
            Qt.MouseButton.LeftButton,
            Qt.KeyboardModifier.NoModifier,
        )
        QApplication.sendEvent(canvas, drag)
        qtbot.mouseRelease(canvas, Qt.MouseButton.LeftButton, pos=end.toPoint())
        left, right = canvas.window()
        assert not canvas.following and left < before[0] - 3600  # the window went back
        now = session.scheduler.clock.now()
        assert left < now - 2 * 3600 < right
        qtbot.waitUntil(lambda: history.covered[0] <= left, timeout=3000)  # re-read
        canvas.repaint()
        past = [tip for _r, tid, tip in canvas._hits if "run 1" in tip]
        assert any(tip.startswith("nightly run 1 · attempt 1: succeeded") for tip in past)
        rect = next(r for r, tid, tip in canvas._hits if tid == "nightly" and "run 1" in tip)
        x_then = canvas.x_of(now - 2 * 3600, now)
        assert abs(rect.center().x() - x_then) < 6  # drawn where it happened
    finally:
        session.close()


def test_closing_the_window_terminates_a_running_command(qtbot, tmp_path, settings):
    pid_file = tmp_path / "group.txt"
    body = (
        "import os, pathlib, time\n"
        f"pathlib.Path({str(pid_file)!r}).write_text(str(os.getpgid(0)))\n"
        "time.sleep(120)\n"
    )
    path = write_workflow(tmp_path, {"sleeper": body})
    sessions = Sessions(settings, data_dir=tmp_path / "data")
    try:
        sessions.open(path)
        session = sessions.current
        qtbot.waitUntil(lambda: pid_file.exists() and bool(pid_file.read_text()), timeout=10000)
        group = int(pid_file.read_text())
        os.killpg(group, 0)  # running
        session.window.close()  # the user closes the window
        assert session.join(timeout=30)
        with pytest.raises(ProcessLookupError):
            os.killpg(group, 0)  # the whole process group is gone
        db, _logs = store_paths(load(path), data_dir=tmp_path / "data")
        assert stored_states(db) == {"sleeper": "ready"}  # runs again when reopened
        store = SQLiteStore(db)
        try:
            assert [a["outcome"] for a in store.attempts("sleeper")] == ["interrupted"]
        finally:
            store.close()
    finally:
        sessions.close()


def test_run_window_keeps_runs_in_db_and_fresh_starts_a_new_one(qtbot, tmp_path):
    path = write_workflow(tmp_path, {"later": "pass!after"})
    db = tmp_path / "runs.db"

    def run_number():
        store = SQLiteStore(db)
        try:
            return store.run
        finally:
            store.close()

    assert run_window(str(path), quit_after=0.3, db=db) == 0
    assert run_number() == 1
    assert run_window(str(path), quit_after=0.3, db=db) == 0  # unfinished: resumed
    assert run_number() == 1
    assert run_window(str(path), quit_after=0.3, db=db, fresh=True) == 0
    assert run_number() == 2
    picture = tmp_path / "shot.png"
    assert run_window(str(path), screenshot=str(picture), quit_after=0.3, db=db) == 0
    assert run_number() == 3 and picture.exists()  # a screenshot always starts afresh
    assert not [w for w in QApplication.topLevelWidgets() if w.isVisible()]


def test_window_runs_tasks_on_the_workflows_executor(qtbot, tmp_path, settings):
    script = tmp_path / "hello.py"
    script.write_text("print('hello from a pool')\n", encoding="utf-8")
    path = tmp_path / "pooled.toml"
    path.write_text(
        '[workflow]\nname = "pooled"\nworkers = 2\nexecutor = "processes"\n\n'
        f'[tasks.hello]\ncommand = ["{sys.executable}", "{script}"]\n',
        encoding="utf-8",
    )
    session = open_session(qtbot, settings, path, tmp_path / "pooled.db")
    try:
        qtbot.addWidget(session.window)
        wait_state(qtbot, session, "hello", TaskState.SUCCEEDED, timeout=30000)
        (attempt,) = session.scheduler.attempts("hello")
        assert attempt.worker.startswith("pid ")  # ran in a pool process, not a thread
        assert attempt.worker != f"pid {os.getpid()}"
        assert "hello from a pool" in attempt.output
    finally:
        session.close()

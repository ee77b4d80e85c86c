"""Sequences people make in the window, not features alone (issues 24/25 follow-up):
a run's forecast while it goes, as the status bar, the cards and the ring show it."""

from __future__ import annotations

from concurrent.futures import Future
from datetime import datetime

import pytest
from PySide6.QtCore import Qt

from taskloom.engine import ManualClock, Scheduler, SyncExecutor, TaskState

_held: list[Holding] = []


@pytest.fixture(autouse=True)
def end_held_attempts():
    """A failed test's attempts in flight end, so its scheduler can shut down."""
    yield
    while _held:
        _held.pop().finish_all()


class Holding(SyncExecutor):
    """Attempts stay in flight until the test ends them (a RUNNING task to look at)."""

    def __init__(self):
        self.futures = {}
        _held.append(self)

    def submit(self, fn, /, *args, **kwargs):
        future = Future()
        future.set_running_or_notify_cancel()
        self.futures[fn()] = future
        return future

    def finish_all(self):
        # A result may start the next attempt (a submit here): until none is left.
        while left := [f for f in list(self.futures.values()) if not f.done()]:
            for future in left:
                future.set_result(None)


def named(name):
    def run():
        return name

    return run


def chain(*names, executor=None):
    """a -> b -> c ... on a ManualClock, started."""
    held = executor or Holding()
    scheduler = Scheduler(workers=2, clock=ManualClock(), executor=held)
    previous = None
    for name in names:
        scheduler.add(named(name), name=name, deps=[previous] if previous else [])
        previous = name
    scheduler.start()
    return scheduler, held


def ringed(view, window, tid) -> bool:
    """Whether the critical path's ring covers the task's card."""
    item = window.scene.item_of(tid)  # a task's card, or a collapsed group's
    return view.critical.path().contains(item.sceneBoundingRect().center())


def test_ring_and_expected_starts_follow_the_run_between_two_forecasts(make_window, qtbot):
    """The lead's screenshot: the ring stayed on a task that had succeeded and a running
    task kept its expected-start badge, until the next forecast (seconds later under
    load). A task that settles leaves the ring, one that starts loses its badge, at once."""
    scheduler, held = chain("a", "b", "c")
    window = make_window(scheduler)
    view = window.forecast_view
    view.forecaster.expected = lambda: {"a": 10.0, "b": 10.0, "c": 10.0}
    view.forecaster.request()
    qtbot.waitUntil(
        lambda: view.live is not None and view.live.forecast.critical_path == ["a", "b", "c"],
        timeout=5000,
    )
    assert ringed(view, window, "a") and set(view.badges) == {"b", "c"}
    view.forecaster.forecastReady.disconnect(view.show)  # the next forecast is slow to come

    scheduler.clock.advance(10.0)
    held.futures["a"].set_result(None)
    qtbot.waitUntil(lambda: window.scene.tasks["b"].state is TaskState.RUNNING, timeout=3000)
    assert window.scene.tasks["a"].state is TaskState.SUCCEEDED
    assert not ringed(view, window, "a")  # done: not on the way to the finish any more
    assert ringed(view, window, "b")
    assert "b" not in view.badges  # it runs: no expected start on it
    assert set(view.badges) == {"c"}
    scheduler.shutdown(wait=False)
    held.finish_all()


def test_the_last_task_ends_and_the_eta_and_ghosts_go_at_once(make_window, qtbot):
    """The run is over: the status bar said 'ETA ~02:17:44 (in 1s, a guess)' and the
    timeline drew the last task's ghost beside a header saying 'finished', until the
    next forecast (seconds later under load)."""
    scheduler, held = chain("a", "b")
    window = make_window(scheduler)
    view = window.forecast_view
    scheduler.clock.advance(1.0)
    held.futures["a"].set_result(None)
    qtbot.waitUntil(lambda: window.bridge.tasks["b"].state is TaskState.RUNNING, timeout=3000)
    view.forecaster.request()
    qtbot.waitUntil(
        lambda: (
            view.live is not None
            and "a" not in view.live.forecast.starts
            and view.eta.isVisible()
            and bool(window.timeline.model.ghosts.get("b"))
        ),
        timeout=5000,
    )
    view.forecaster.forecastReady.disconnect(view.show)  # the next forecast is slow to come
    held.futures["b"].set_result(None)
    qtbot.waitUntil(lambda: window.bridge.tasks["b"].state is TaskState.SUCCEEDED, timeout=3000)
    assert not view.eta.isVisible(), view.eta.text()
    assert not any(window.timeline.model.ghosts.values())
    assert view.critical.path().isEmpty()
    scheduler.shutdown(wait=False)


def test_an_expected_start_is_never_in_the_past(make_window, qtbot):
    """A forecast is seconds old when shown, and a task may wait past the start it
    forecast (the lead saw '≈ 01:39:58' at 01:40:00): the card says now at the
    earliest, and again as time passes."""
    from taskloom.gui.forecast_view import clock_text

    scheduler, held = chain("a", "b", "c")  # a ManualClock's wall: 1 Jan 2026, long past
    window = make_window(scheduler)
    view = window.forecast_view
    view.forecaster.expected = lambda: {"a": 10.0, "b": 10.0, "c": 10.0}
    view.forecaster.request()
    qtbot.waitUntil(lambda: view.live is not None and set(view.badges) == {"b", "c"}, timeout=5000)
    f = view.live.forecast
    assert f.at(f.starts["b"]) < datetime.now().astimezone()  # what the forecast says
    before = datetime.now().astimezone().replace(microsecond=0)
    view.tick()
    for tid in ("b", "c"):
        shown = view.badge_times[tid]
        assert shown >= before, (tid, shown, before)
        assert view.badges[tid].text() == "≈ " + clock_text(shown, shown)[-8:]
    assert view.badge_times["b"] <= view.badge_times["c"]
    scheduler.shutdown(wait=False)
    held.finish_all()


def test_eta_says_it_is_a_guess_without_history_and_learns_from_this_run(make_window, qtbot):
    """A first run: no task has a past run, so each is given a guessed second. The ETA
    says it is a guess; once a task has run, the others are guessed from it (the
    durations were kept 10 s, so the run's first successes changed nothing)."""
    from taskloom.gui.forecast_view import guessed_tasks

    scheduler, held = chain("a", "b", "c")
    window = make_window(scheduler)
    view = window.forecast_view
    view.forecaster.request()
    qtbot.waitUntil(lambda: view.live is not None and bool(view.eta.text()), timeout=5000)
    assert "guess" in view.eta.text(), view.eta.text()
    assert "no past runs" in view.eta.toolTip()
    qtbot.waitUntil(lambda: "ETA ~" in window.run_header.text(), timeout=3000)  # about

    scheduler.clock.advance(5.0)
    held.futures["a"].set_result(None)  # a took 5 s
    qtbot.waitUntil(
        lambda: view.live is not None and "a" not in view.live.forecast.starts, timeout=5000
    )
    qtbot.waitUntil(lambda: view.live.model.estimate("b") == 5.0, timeout=5000)
    assert "guess" in view.eta.text()  # b and c still have no run of their own
    assert guessed_tasks(view.live) == ["b", "c"]
    assert "a guess: b, c have no past runs" in view.eta.toolTip()

    view.forecaster.expected = lambda: {"b": 5.0, "c": 5.0}  # the file says
    view.forecaster.request()
    qtbot.waitUntil(lambda: "guess" not in view.eta.text(), timeout=5000)
    assert view.eta.text().startswith("ETA ")
    scheduler.shutdown(wait=False)
    held.finish_all()


TWO = """
[workflow]
name = "two"
workers = 2
[tasks.a]
command = ["sleep", "60"]
[tasks.b]
command = ["sleep", "60"]
[tasks.c]
command = ["true"]
deps = ["a", "b"]
"""


@pytest.mark.slow
def test_two_processes_then_a_window_then_a_cancel_from_a_shell(qtbot, tmp_path, settings):
    """`taskloom run F` twice (the second exits 75 naming the owner), a window on F
    watches the first, and `taskloom cancel F a` from a shell shows in it within a second."""
    import os
    import subprocess
    import sys
    import time
    from pathlib import Path

    from taskloom.app import Sessions
    from taskloom.watching import WatchSession

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "XDG_DATA_HOME": str(tmp_path / "xdg")}
    path, db = tmp_path / "two.toml", tmp_path / "run.db"
    path.write_text(TWO)
    taskloom = [sys.executable, "-m", "taskloom"]
    owner = subprocess.Popen(
        [*taskloom, "run", str(path), "--db", str(db)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    sessions = Sessions(settings, db=db, data_dir=tmp_path / "data")
    try:
        assert owner.stdout is not None
        first = owner.stdout.readline()  # "running two: 3 tasks" once the run is open
        assert first.startswith("running two"), first
        second = subprocess.run(
            [*taskloom, "run", str(path), "--db", str(db)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert second.returncode == 75, second
        assert f"in use by taskloom run (pid {owner.pid}" in second.stderr
        assert second.stderr.count("\n") == 1  # one line

        assert sessions.open(path)
        watch = sessions.current
        assert isinstance(watch, WatchSession)
        bridge = watch.window.bridge
        qtbot.waitUntil(
            lambda: (
                bridge.tasks["a"].state is TaskState.RUNNING
                and bridge.tasks["b"].state is TaskState.RUNNING
            ),
            timeout=30000,
        )
        cancel = subprocess.run(
            [*taskloom, "cancel", str(path), "a", "--db", str(db)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        told = time.monotonic()
        assert cancel.returncode == 0, cancel
        qtbot.waitUntil(lambda: bridge.tasks["a"].state is TaskState.CANCELLED, timeout=5000)
        shown = time.monotonic() - told
        qtbot.waitUntil(
            lambda: watch.window.scene.nodes["a"].status_text.text().startswith("⊘"), timeout=2000
        )
        assert shown < 1.0, f"the window showed the cancel {shown:.2f} s after the shell did"
        assert bridge.tasks["b"].state is TaskState.RUNNING
        assert bridge.tasks["c"].state is TaskState.SKIPPED
    finally:
        sessions.close()
        owner.kill()
        owner.wait(10)


def etl_copy(tmp_path):
    """The bundled etl example and its scripts, in a folder of the test's own."""
    import shutil
    from pathlib import Path

    examples = Path(__file__).resolve().parents[2] / "resources" / "examples"
    shutil.copytree(examples / "scripts", tmp_path / "scripts")
    path = tmp_path / "etl.toml"
    shutil.copy(examples / "etl.toml", path)
    return path


def press(qtbot, window, key, modifiers):
    from PySide6.QtCore import Qt

    # Offscreen, nothing gives the window the focus back after a question closed (a
    # desktop's window manager does): as a person clicking on it would.
    if not window.isActiveWindow():
        window.activateWindow()
        qtbot.waitUntil(window.isActiveWindow, timeout=3000)
    qtbot.keyClick(window.graph_view, key, Qt.KeyboardModifier(modifiers))


@pytest.mark.slow
def test_etl_to_the_end_then_remove_undo_redo_save_and_reopen(qtbot, tmp_path, settings):
    """Run the etl example to the end in the window; remove a finished task (it asks);
    Undo; Redo; Save; open the file again: the window, the file and what runs agree."""
    import tomllib

    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    from taskloom.app import Sessions, WorkflowSession

    path = etl_copy(tmp_path)
    db = tmp_path / "run.db"
    sessions = Sessions(settings, db=db, data_dir=tmp_path / "data", start=False)
    try:
        assert sessions.open(path)
        window = sessions.current.window
        window.resize(1400, 900)
        window.show()
        qtbot.waitExposed(window)
        press(qtbot, window, Qt.Key.Key_F5, Qt.KeyboardModifier.NoModifier)  # Start
        qtbot.waitUntil(
            lambda: all(i.state.settled for i in window.bridge.tasks.values()), timeout=60000
        )
        assert {i.state for i in window.bridge.tasks.values()} == {TaskState.SUCCEEDED}

        window.select_tasks(["report"])
        press(qtbot, window, Qt.Key.Key_Delete, Qt.KeyboardModifier.ControlModifier)
        qtbot.waitUntil(lambda: window.remove_question is not None, timeout=3000)
        box = window.remove_question
        remove = next(b for b in box.buttons() if b.text() == "Remove")
        qtbot.mouseClick(remove, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(
            lambda: "report" not in window.scene.nodes and "report" not in window.bridge.tasks,
            timeout=3000,
        )
        assert window.isWindowModified()

        assert window.act_undo.isEnabled(), window.act_undo.statusTip()
        press(qtbot, window, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)  # Undo
        qtbot.waitUntil(
            lambda: "report" in window.scene.nodes and "report" in window.bridge.tasks,
            timeout=3000,
        )
        assert window.bridge.tasks["report"].state is TaskState.SUCCEEDED  # as it was
        assert window.scene.graph.has_edge("load", "report")
        assert window.scene.graph.has_edge("report", "cleanup")
        assert not window.isWindowModified()

        redo = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier
        press(qtbot, window, Qt.Key.Key_Z, redo)
        qtbot.waitUntil(
            lambda: "report" not in window.scene.nodes and "report" not in window.bridge.tasks,
            timeout=3000,
        )
        window.grab().save(str(tmp_path / "removed-1400.png"))

        press(qtbot, window, Qt.Key.Key_S, Qt.KeyboardModifier.ControlModifier)
        qtbot.waitUntil(lambda: not window.isWindowModified(), timeout=3000)
        saved = tomllib.loads(path.read_text())
        assert "report" not in saved["tasks"]
        assert saved["tasks"]["cleanup"].get("deps", []) in ([], ["load"]), saved["tasks"]
        QApplication.processEvents()

        assert sessions.open(path)  # File > Open of the same file
        # The run of the file, here (its --db store): not a watcher of this very window's
        # run, which then said "owner gone, Take over".
        session = sessions.current
        assert isinstance(session, WorkflowSession), session
        assert session.db_path == db
        again = session.window
        again.resize(1400, 900)
        # The run had finished: the file as saved is a new run, waiting for Start.
        tasks = {"extract", "clean_a", "clean_b", "load", "cleanup"}
        qtbot.waitUntil(lambda: set(again.bridge.tasks) == tasks, timeout=10000)
        states = {i.state for i in again.bridge.tasks.values()}
        assert states <= {TaskState.PENDING, TaskState.READY}, states  # nothing runs yet
        assert "report" not in again.scene.nodes
        assert again.run_header.text().startswith("Run 2"), again.run_header.text()
        again.grab().save(str(tmp_path / "reopened-1400.png"))
        again.resize(820, 520)
        QApplication.processEvents()
        again.grab().save(str(tmp_path / "reopened-820.png"))
        again.resize(1400, 900)
        again.act_start.trigger()
        qtbot.waitUntil(
            lambda: all(i.state.settled for i in again.bridge.tasks.values()), timeout=60000
        )
        assert {i.state for i in again.bridge.tasks.values()} == {TaskState.SUCCEEDED}
        assert [a.outcome for a in session.scheduler.attempts("cleanup")] == ["succeeded"]
    finally:
        sessions.close()


def test_the_inspector_leaves_a_task_that_was_removed(make_window, qtbot):
    """A selected finished task removed (then Redo after Undo): the inspector still
    showed it as 'succeeded, After load, Before cleanup'."""
    from taskloom.engine import Scheduler

    scheduler = Scheduler(workers=2)
    for name, deps in (("a", []), ("b", ["a"]), ("c", ["b"])):
        scheduler.add(named(name), name=name, deps=deps)
    scheduler.start()
    window = make_window(scheduler)
    qtbot.waitUntil(
        lambda: (
            len(window.bridge.tasks) == 3
            and all(i.state is TaskState.SUCCEEDED for i in window.bridge.tasks.values())
        ),
        timeout=10000,
    )
    window.select_tasks(["b"])
    qtbot.waitUntil(lambda: window.inspector.task_id == "b", timeout=3000)
    window.controller.remove_tasks(["b"])
    qtbot.waitUntil(lambda: "b" not in window.scene.nodes, timeout=3000)
    window.act_undo.trigger()
    qtbot.waitUntil(lambda: "b" in window.scene.nodes, timeout=3000)
    window.select_tasks(["b"])
    window.act_redo.trigger()
    qtbot.waitUntil(lambda: "b" not in window.scene.nodes, timeout=3000)
    assert window.inspector.task_id != "b"
    scheduler.shutdown(wait=True)


EDITED = """
[workflow]
name = "edited"
[tasks.a]
command = ["true"]
[tasks.b]
command = ["sh", "-c", "echo original > out_b"]
deps = ["a"]
"""


def test_edit_discard_reopen_the_edit_is_gone_everywhere(qtbot, tmp_path, settings):
    """Ctrl+E on a task, a new command, OK; close without saving (Discard); open the
    file again: the graph, the inspector and a new Start all have the file's command."""
    import sys

    from PySide6.QtCore import Qt, QTimer
    from PySide6.QtWidgets import QDialogButtonBox, QMessageBox

    from taskloom.app import Sessions

    path, db = tmp_path / "edited.toml", tmp_path / "run.db"
    path.write_text(EDITED)
    sessions = Sessions(settings, db=db, data_dir=tmp_path / "data", start=False)
    try:
        assert sessions.open(path)
        window = sessions.current.window
        window.show()
        qtbot.waitExposed(window)
        qtbot.waitUntil(lambda: "b" in window.scene.nodes, timeout=5000)
        window.select_tasks(["b"])
        press(qtbot, window, Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)
        qtbot.waitUntil(lambda: getattr(window, "edit_dialog", None) is not None, timeout=3000)
        dialog = window.edit_dialog
        dialog.target.clear()
        qtbot.keyClicks(dialog.target, f"{sys.executable} -c \"open('out_b','w').write('edited')\"")
        qtbot.mouseClick(
            dialog.buttons.button(QDialogButtonBox.StandardButton.Ok), Qt.MouseButton.LeftButton
        )
        qtbot.waitUntil(lambda: window.isWindowModified(), timeout=3000)
        assert "edited" in " ".join(sessions.current.scheduler.definition("b").action.argv)

        window.close_question.enabled = True

        def discard():
            box = window.close_question.box
            if box is None:
                QTimer.singleShot(20, discard)
                return
            box.button(QMessageBox.StandardButton.Discard).click()

        QTimer.singleShot(20, discard)
        window.close()
        qtbot.waitUntil(lambda: not window.isVisible(), timeout=5000)
        sessions.current.join(10)
    finally:
        sessions.close()
    assert path.read_text() == EDITED  # Discard wrote nothing

    again = Sessions(settings, db=db, data_dir=tmp_path / "data", start=False)
    again.choose_run = lambda *_args: True  # resume, were it asked
    try:
        assert again.open(path)
        window = again.current.window
        scheduler = again.current.scheduler
        assert list(scheduler.definition("b").action.argv) == ["sh", "-c", "echo original > out_b"]
        window.select_tasks(["b"])
        qtbot.waitUntil(lambda: window.inspector.task_id == "b", timeout=3000)
        window.grab().save(str(tmp_path / "reopened-1400.png"))
        shown = window.inspector.grab()  # what it says of the command: the file's
        assert not shown.isNull()
        window.act_start.trigger()
        qtbot.waitUntil(lambda: (tmp_path / "out_b").exists(), timeout=30000)
        qtbot.waitUntil(
            lambda: window.bridge.tasks["b"].state is TaskState.SUCCEEDED, timeout=30000
        )
        assert (tmp_path / "out_b").read_text().strip() == "original"
    finally:
        again.close()


# What the offscreen platform itself says (no window manager, no tray): not ours.
OFFSCREEN_NOISE = ("propagateSizeHints", "systemTrayWindowChanged")


def test_filter_then_forecast_refresh_while_a_run_goes(make_window, qtbot, monkeypatch, tmp_path):
    """'Failed only', a name filter, a collapsed group, each while the run goes and the
    forecast refreshes: no exception, no Qt warning of ours, and the ring and the
    expected starts only on cards the graph shows, of work left."""
    import sys

    from PySide6.QtCore import Qt, QtMsgType, qInstallMessageHandler

    errors: list[str] = []
    monkeypatch.setattr(sys, "excepthook", lambda *info: errors.append(repr(info[1])))
    previous = qInstallMessageHandler(
        lambda kind, _ctx, text: (
            errors.append(text)
            if kind in (QtMsgType.QtCriticalMsg, QtMsgType.QtFatalMsg)
            or (kind is QtMsgType.QtWarningMsg and not any(n in text for n in OFFSCREEN_NOISE))
            else None
        )
    )
    held = Holding()
    scheduler = Scheduler(workers=2, clock=ManualClock(), executor=held)
    for name, deps in (
        ("ingest.a", []),
        ("ingest.b", []),
        ("ingest.c", ["ingest.a", "ingest.b"]),
        ("report.x", ["ingest.c"]),
        ("report.y", ["ingest.c"]),
        ("publish", ["report.x", "report.y"]),
    ):
        scheduler.add(named(name), name=name, deps=deps)
    scheduler.start()
    try:
        window = make_window(scheduler)
        shots = tmp_path
        view, bar = window.forecast_view, window.filter_bar
        view.forecaster.expected = lambda: dict.fromkeys(window.bridge.tasks, 10.0)

        def refreshed():
            done = view.forecaster.computed
            view.forecaster.request()
            qtbot.waitUntil(lambda: view.forecaster.computed > done, timeout=5000)
            qtbot.waitUntil(lambda: not window._structure_timer.isActive(), timeout=3000)

        def consistent():
            scene, tasks = window.scene, window.bridge.tasks
            for tid, badge in view.badges.items():
                assert tid in scene.nodes and badge.parentItem() is scene.nodes[tid], tid
                assert not tasks[tid].state.settled and tasks[tid].state is not TaskState.RUNNING
            assert all(not tasks[t].state.settled for t in view._ringed)
            if view.live is not None and view.live.forecast.critical_path:
                assert view.eta.isVisible()

        refreshed()
        consistent()
        failed = bar.states.findText("Failed only", Qt.MatchFlag.MatchContains)
        bar.states.setCurrentIndex(failed)
        scheduler.clock.advance(5.0)
        held.futures["ingest.a"].set_exception(RuntimeError("boom"))  # c, x, y, publish skip
        held.futures["ingest.b"].set_result(None)
        qtbot.waitUntil(
            lambda: window.bridge.tasks["ingest.a"].state is TaskState.FAILED, timeout=3000
        )
        refreshed()
        qtbot.waitUntil(lambda: set(window.scene.nodes) == {"ingest.a"}, timeout=3000)
        consistent()

        bar.states.setCurrentIndex(0)
        scheduler.retry("ingest.a")
        qtbot.waitUntil(
            lambda: window.bridge.tasks["ingest.a"].state is TaskState.RUNNING, timeout=3000
        )
        qtbot.keyClicks(bar.text, "report")
        refreshed()
        consistent()
        bar.text.clear()
        qtbot.mouseClick(bar.collapse, Qt.MouseButton.LeftButton)  # ⊟ All
        scheduler.clock.advance(5.0)
        held.futures["ingest.a"].set_result(None)
        refreshed()
        consistent()
        window.grab().save(str(shots / "collapsed-1400.png"))
        window.resize(820, 520)
        refreshed()
        consistent()
        window.grab().save(str(shots / "collapsed-820.png"))
        qtbot.mouseClick(bar.expand, Qt.MouseButton.LeftButton)
        refreshed()
        consistent()
    finally:
        qInstallMessageHandler(previous)
        scheduler.shutdown(wait=False)
        held.finish_all()
    assert errors == []


def test_the_ring_goes_on_a_collapsed_group_on_the_critical_path(make_window, qtbot):
    """Groups collapsed (⊟ All) while the run goes: the ring was only on the one loose
    task left, as if the groups it waits for were not on the way to the finish."""
    from PySide6.QtCore import Qt

    from taskloom.gui.graph.groups import group_rep

    held = Holding()
    scheduler = Scheduler(workers=2, clock=ManualClock(), executor=held)
    for name, deps in (
        ("ingest.a", []),
        ("ingest.b", ["ingest.a"]),
        ("report.x", ["ingest.b"]),
        ("report.y", ["ingest.b"]),
        ("publish", ["report.x", "report.y"]),
    ):
        scheduler.add(named(name), name=name, deps=deps)
    scheduler.start()
    window = make_window(scheduler)
    view = window.forecast_view
    view.forecaster.expected = lambda: dict.fromkeys(window.bridge.tasks, 10.0)
    qtbot.waitUntil(lambda: "publish" in window.scene.nodes, timeout=3000)
    qtbot.mouseClick(window.filter_bar.collapse, Qt.MouseButton.LeftButton)  # ⊟ All
    qtbot.waitUntil(lambda: group_rep("report") in window.scene.group_items, timeout=3000)
    view.forecaster.request()
    qtbot.waitUntil(
        lambda: view.live is not None and "ingest.a" in view.live.forecast.critical_path,
        timeout=5000,
    )
    view._show_critical_path()
    assert ringed(view, window, group_rep("ingest"))
    assert ringed(view, window, group_rep("report"))
    assert ringed(view, window, "publish")
    scheduler.shutdown(wait=False)
    held.finish_all()


@pytest.mark.slow
def test_kill_9_of_the_owner_a_watching_window_takes_over_and_the_output_goes_on(
    qtbot, tmp_path, settings
):
    """A window watches a `taskloom run` owner; kill -9 of the owner: the window says
    so, shows nothing running whose process is gone, Take over works, and the adopted
    command's output goes on in the inspector (lines written after the take-over)."""
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    from taskloom.app import Sessions, WorkflowSession
    from taskloom.watching import WatchSession

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "XDG_DATA_HOME": str(tmp_path / "xdg")}
    gate, tick = tmp_path / "gate", tmp_path / "tick"
    script = (
        "import os, time\n"
        "n = 0\n"
        f"while not os.path.exists({str(gate)!r}):\n"
        "    n += 1\n"
        "    print('line', n, flush=True)\n"
        f"    open({str(tick)!r}, 'w').write(str(n))\n"
        "    time.sleep(0.1)\n"
        "print('the end', flush=True)\n"
    )
    (tmp_path / "talk.py").write_text(script)
    path, db = tmp_path / "talk.toml", tmp_path / "run.db"
    path.write_text(
        f'[workflow]\nname = "talk"\n[tasks.talk]\ncommand = ["{sys.executable}", "talk.py"]\n'
    )
    owner = subprocess.Popen(
        [sys.executable, "-m", "taskloom", "run", str(path), "--db", str(db)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    sessions = Sessions(settings, db=db, data_dir=tmp_path / "data")
    try:
        qtbot.waitUntil(tick.exists, timeout=30000)
        assert sessions.open(path)
        watch = sessions.current
        assert isinstance(watch, WatchSession)
        window = watch.window
        qtbot.waitUntil(
            lambda: window.bridge.tasks["talk"].state is TaskState.RUNNING, timeout=30000
        )
        owner.send_signal(signal.SIGKILL)
        owner.wait(10)
        qtbot.waitUntil(watch.status.take_over.isVisible, timeout=10000)
        assert "stopped" in watch.status.label.text()
        # The command goes on under its supervisor: shown running, as it is.
        assert window.bridge.tasks["talk"].state is TaskState.RUNNING
        window.resize(1400, 900)
        window.grab().save(str(tmp_path / "owner-gone-1400.png"))

        qtbot.mouseClick(watch.status.take_over, Qt.MouseButton.LeftButton)
        session = sessions.current
        assert isinstance(session, WorkflowSession) and session is not watch
        mine = session.window
        qtbot.waitUntil(lambda: mine.bridge.tasks["talk"].state is TaskState.RUNNING, timeout=10000)
        assert session.scheduler.adopted_tasks() == ["talk"]
        mine.select_tasks(["talk"])
        output = mine.inspector.output
        after = int(tick.read_text()) + 5  # a line written after the take-over
        qtbot.waitUntil(lambda: f"line {after}\n" in output.toPlainText(), timeout=15000)
        gate.write_text("")
        qtbot.waitUntil(
            lambda: mine.bridge.tasks["talk"].state is TaskState.SUCCEEDED, timeout=15000
        )
        mine.resize(820, 520)
        mine.grab().save(str(tmp_path / "taken-over-820.png"))
    finally:
        sessions.close()
        if owner.poll() is None:
            owner.kill()
            owner.wait(10)


def test_a_busy_run_to_its_end_then_one_cancel_shows_at_the_quiet_pace(make_window, qtbot):
    """A run busy enough to pace the window (batches 250 ms apart), then, once it is
    over, one change from the shell: it comes in the next drain at the quiet pace, and
    the window says what the engine says."""
    import time

    from taskloom.gui import bridge as bridge_module

    scheduler = Scheduler(workers=4)
    for i in range(400):
        scheduler.add(lambda: None, name=f"n{i}")
    scheduler.schedule_after(lambda: None, 3600, name="later")
    window = make_window(scheduler)
    bridge = window.bridge
    paced = []
    bridge.tasksChanged.connect(lambda _changed: paced.append(bridge._wake_ms))
    try:
        scheduler.start()
        qtbot.waitUntil(lambda: bridge.state_counts()[TaskState.SUCCEEDED] == 400, timeout=30_000)
        assert bridge_module.BUSY_INTERVAL_MS in paced  # the run was busy for the window

        # The burst is over (its last drain's busy pace has passed): a cancel from the
        # shell now shows at the quiet pace, not 250 ms later.
        def settled():
            idle = not bridge.reading() and not bridge.pending() and not bridge._timer.isActive()
            return idle and time.monotonic() > bridge._busy_until

        qtbot.waitUntil(settled, timeout=5000)
        waits = []
        wake = bridge._wake

        def spied_wake():
            wake()
            waits.append(bridge._timer.interval())

        bridge._wake = spied_wake
        batches = bridge.batches
        scheduler.cancel("later")
        qtbot.waitUntil(lambda: bridge.tasks["later"].state is TaskState.CANCELLED, timeout=5000)
        assert waits == [33] and bridge.batches == batches + 1  # one drain, at the quiet pace
        assert window.status_panel.counts.text().count("cancelled") == 1
    finally:
        scheduler.shutdown()

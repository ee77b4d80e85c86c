"""Issues 24/25 follow-up: what a tester found in offscreen grabs of a small window."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QColor

from taskloom.engine import TaskState

S = TaskState


def noop():
    return None


def test_a_long_message_ends_before_the_state_counts_at_820x520(
    qtbot, make_window, manual_scheduler
):
    """At 820x520 the message ran into the counts ("…: 0 of✓ 1 succeeded"): now it is
    elided and a gap of plain background is left before the counts."""
    manual_scheduler.add(noop, name="ok")
    window = make_window(manual_scheduler, size=(820, 520))
    manual_scheduler.start()
    counts = window.status_panel.counts
    qtbot.waitUntil(lambda: "1 succeeded" in counts.text(), timeout=3000)
    bar = window.statusBar()
    bar.showMessage("W" * 300)
    qtbot.waitUntil(lambda: counts.isVisible() and counts.x() > 100)
    image = bar.grab().toImage()
    background = bar.palette().window().color()

    def inked(x: int) -> bool:
        return any(QColor(image.pixel(x, y)) != background for y in range(2, image.height() - 2))

    start = counts.x() - 8  # the columns just before the counts' frame
    assert not any(inked(x) for x in range(start, counts.x() - 2)), "the message runs on"
    assert any(inked(x) for x in range(6, 40)), "the message is drawn"
    assert bar.shown_message().endswith("…")


def _etl_tail(tmp_path):
    """load → report → cleanup (cleanup runs whatever happened), as in the etl example."""
    import sys

    source = tmp_path / "etl.toml"
    quick = f'["{sys.executable}", "-c", "pass"]'
    source.write_text(
        f'[workflow]\nname = "etl"\nworkers = 2\n\n'
        f"[tasks.load]\ncommand = {quick}\n\n"
        f'[tasks.report]\ncommand = {quick}\ndeps = ["load"]\n\n'
        f'[tasks.cleanup]\ncommand = {quick}\ndeps = ["report"]\ntrigger_rule = "all_done"\n',
        encoding="utf-8",
    )
    return source


def test_removing_a_task_between_two_offers_to_connect_them_as_one_undo_step(
    qtbot, tmp_path, settings
):
    """Removing ``report`` left ``cleanup`` with no dependency (it started first on the
    next run): the question's default removes it and connects load → cleanup, one
    step that Undo and Redo take back and make again, and Save writes."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QMessageBox

    from taskloom.app import WorkflowSession
    from taskloom.engine.workflow import load

    source = _etl_tail(tmp_path)
    session = WorkflowSession(
        load(source), settings, db_path=tmp_path / "run.db", log_dir=tmp_path / "logs", start=False
    )
    try:
        window = session.window
        qtbot.addWidget(window)
        window.resize(1400, 900)
        window.show()
        with qtbot.waitActive(window):
            window.activateWindow()
        scheduler = session.scheduler
        qtbot.waitUntil(lambda: "report" in window.scene.nodes)
        window.select_tasks(["report"])
        qtbot.keyClick(window.graph_view, Qt.Key.Key_Delete)
        box = window.remove_question
        assert isinstance(box, QMessageBox) and box.isVisible(), "a pending task between two"
        default = box.defaultButton()
        assert default is not None
        assert default.text() == "Remove report and connect load → cleanup"
        qtbot.keyClick(box, Qt.Key.Key_Return)  # the default
        qtbot.waitUntil(lambda: "report" not in window.scene.nodes)
        assert scheduler.task("cleanup").deps == ("load",)
        qtbot.waitUntil(lambda: window.scene.graph.has_edge("load", "cleanup"))
        stack = window.controller.undo_stack
        assert stack.count() == 1
        assert stack.undoText() == "remove report and connect load → cleanup"

        with qtbot.waitActive(window):
            window.activateWindow()
        qtbot.keyClick(window.graph_view, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
        assert scheduler.task("cleanup").deps == ("report",)
        assert scheduler.task("report").deps == ("load",)
        qtbot.waitUntil(lambda: window.scene.graph.has_edge("report", "cleanup"))
        assert not window.scene.graph.has_edge("load", "cleanup")

        window.act_redo.trigger()
        assert "report" not in {t.id for t in scheduler.tasks()}
        assert scheduler.task("cleanup").deps == ("load",)
        qtbot.waitUntil(lambda: window.scene.graph.has_edge("load", "cleanup"))
        assert scheduler.task("cleanup").state is S.PENDING  # it still waits for load
        assert not any(scheduler.attempts(t.id) for t in scheduler.tasks())  # nothing ran

        assert window.save_workflow()
        saved = load(source)
        assert sorted(saved.tasks) == ["cleanup", "load"]
        assert tuple(saved.tasks["cleanup"].deps) == ("load",)
    finally:
        session.close()


def test_the_graph_recolours_in_the_bridges_batch(qtbot, make_window, manual_scheduler):
    """A grab right after a task succeeded showed its card "running": the graph
    recoloured one event-loop turn after the batch the status bar and inspector showed.
    Every slot after the window's sees the card in the batch's state."""
    from taskloom.engine import ManualClock

    clock = manual_scheduler.clock
    assert isinstance(clock, ManualClock)
    manual_scheduler.schedule_after(noop, 5, name="later")
    window = make_window(manual_scheduler)
    manual_scheduler.start()
    qtbot.waitUntil(lambda: "later" in window.scene.nodes)
    seen = []

    def probe(changed):
        for tid, info in changed.items():
            node = window.scene.nodes.get(tid)
            if node is not None:
                seen.append((tid, info.state, node.info.state))

    window.bridge.tasksChanged.connect(probe)  # after the window's own slots
    clock.advance(5)
    qtbot.waitUntil(lambda: any(t == "later" and s is S.SUCCEEDED for t, s, _ in seen))
    assert seen and all(shown is state for _, state, shown in seen), seen


def test_a_long_owner_in_the_status_bar_leaves_the_window_820_wide(
    qtbot, make_window, manual_scheduler
):
    """A watching window's owner label ("◉ Watching the run of taskloom run (pid …
    on …, since …)") held the window 1,163 px wide when made 820: it is elided."""
    from taskloom.gui.status_message import ElidedLabel

    window = make_window(manual_scheduler, size=(1400, 900))
    text = (
        "⏸ taskloom run (pid 15580 on build-machine-7.example.org) is not answering"
        " (stopped or frozen): requests wait for it"
    )
    label = ElidedLabel(text)
    window.statusBar().insertPermanentWidget(0, label)
    window.resize(820, 520)
    qtbot.waitUntil(lambda: window.width() == 820)
    assert label.text() == text  # whole, for whoever reads it
    qtbot.waitUntil(lambda: label.shown_text() != text)
    assert label.shown_text().endswith("…")


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_a_watched_run_that_finished_is_not_offered_to_be_resumed(qtbot, tmp_path, settings):
    """A `taskloom run` owner that finished its run and exited: the watching window said
    "Take over to resume the run here", with nothing left to resume."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from taskloom.app import Sessions
    from taskloom.watching import WatchSession

    root = Path(__file__).resolve().parents[2]
    gate = tmp_path / "gate"
    wait = f"i=0; while [ ! -e '{gate}' ] && [ $i -lt 1000 ]; do sleep 0.02; i=$((i+1)); done"
    path = tmp_path / "gated.toml"
    path.write_text(
        f'[workflow]\nname = "gated"\n[tasks.wait]\ncommand = ["sh", "-c", "{wait}"]\n'
        '[tasks.after]\ncommand = ["true"]\ndeps = ["wait"]\n'
    )
    db = tmp_path / "run.db"
    env = {
        **os.environ,
        "PYTHONPATH": str(root),
        "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
    }
    env.pop("TASKLOOM_OWNER", None)
    owner = subprocess.Popen(
        [sys.executable, "-m", "taskloom", "run", str(path), "--db", str(db)],
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    sessions = Sessions(settings, db=db, data_dir=tmp_path / "data")
    try:
        qtbot.waitUntil(db.exists, timeout=30000)
        assert sessions.open(path)
        watch = sessions.current
        assert isinstance(watch, WatchSession)
        window = watch.window
        qtbot.waitUntil(
            lambda: (
                "wait" in window.bridge.tasks and window.bridge.tasks["wait"].state is S.RUNNING
            ),
            timeout=30000,
        )
        gate.touch()
        assert owner.wait(30) == 0
        qtbot.waitUntil(lambda: watch.status.take_over.isVisible(), timeout=10000)
        assert {i.state for i in window.bridge.tasks.values()} == {S.SUCCEEDED}
        message = window.statusBar().currentMessage()
        assert message == (
            "The run had finished when its owner stopped: Take over to work on it here"
        )
    finally:
        sessions.close()
        if owner.poll() is None:
            owner.kill()
            owner.wait(10)

"""Saving writes the workflow with the dependencies as edited in the window."""

from __future__ import annotations

import sys

import pytest

from engine.workflow import load
from gui.app import WorkflowSession


def test_save_keeps_edges_added_in_the_window(qtbot, tmp_path, settings):
    source = tmp_path / "flow.toml"
    source.write_text(
        '[workflow]\nname = "flow"\nworkers = 2\n\n'
        f'[tasks.a]\ncommand = ["{sys.executable}", "-c", "pass"]\nafter = "1h"\n\n'
        f'[tasks.b]\ncommand = ["{sys.executable}", "-c", "pass"]\nafter = "1h"\n',
        encoding="utf-8",
    )
    session = WorkflowSession(load(source), settings)
    try:
        qtbot.addWidget(session.window)
        assert session.window.controller.connect_tasks("a", "b")
        qtbot.waitUntil(lambda: session.window.bridge.tasks["b"].deps == ("a",), timeout=3000)
        target = tmp_path / "saved.toml"
        session.save(str(target))
        assert load(target).tasks["b"].deps == ["a"]
        assert "Saved" in session.window.statusBar().currentMessage()
    finally:
        session.close()


def test_open_replaces_the_engine_and_the_window(qtbot, tmp_path, settings):
    from PySide6.QtWidgets import QApplication

    from gui.app import Sessions

    first = tmp_path / "one.toml"
    second = tmp_path / "two.toml"
    for path, task in ((first, "alpha"), (second, "beta")):
        path.write_text(
            f'[workflow]\nname = "{path.stem}"\nworkers = 1\n\n'
            f'[tasks.{task}]\ncommand = ["{sys.executable}", "-c", "pass"]\nafter = "1h"\n',
            encoding="utf-8",
        )
    sessions = Sessions(settings)
    try:
        sessions.open(first)
        old = sessions.current
        assert set(old.window.bridge.tasks) == {"alpha"}
        old.window.openRequested.emit(str(second))  # what File > Open does after the dialog
        assert sessions.current is not old
        assert set(sessions.current.window.bridge.tasks) == {"beta"}
        assert "two" in sessions.current.window.windowTitle()
        with pytest.raises(RuntimeError):  # the old engine was shut down
            old.scheduler.schedule_after(print, 1)
        bad = tmp_path / "bad.toml"
        bad.write_text("[workflow\\n", encoding="utf-8")
        assert not sessions.open(bad)  # refused, explained, current session kept
        assert "⚠" in sessions.current.window.statusBar().currentMessage()
        QApplication.processEvents()
    finally:
        sessions.close()

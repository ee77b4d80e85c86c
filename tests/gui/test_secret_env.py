"""secret_env: a secret's value is read from Taskloom's environment when a run
starts and is written nowhere: not in the store (its feed tables included), not in
the logs, not in what `taskloom run` prints, not in the window. Echoed by a command,
it is masked as ***. Real `taskloom run`, a real SQLite file, a real window offscreen."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap

import pytest
from PySide6.QtCore import QModelIndex
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QGraphicsView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QTextEdit,
    QWidget,
)

from taskloom.app import WorkflowSession
from taskloom.engine import TaskState
from taskloom.engine.workflow import load
from taskloom.places import log_dir_for
from taskloom.runs import default_db_path

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]
SECRET = "tl-secret-" + os.urandom(8).hex()

FLOW = """
[workflow]
name = "secretive"
secret_env = ["API_TOKEN"]

[tasks.echoes]
command = "echo token=$API_TOKEN; echo api_token is $API_TOKEN >&2"
shell = true

[tasks.fails]
command = "echo 'denied for' $API_TOKEN >&2; exit 3"
shell = true
retry = { max_attempts = 2, base = 0, jitter = 0 }
"""


def all_texts(window) -> str:
    """Every text a person could read in the window: labels, buttons, fields, text
    panes, every cell (and tooltip) of every list, table and tree, the scenes' text."""
    texts = [window.windowTitle()]
    for widget in [window, *window.findChildren(QWidget)]:
        texts.append(widget.toolTip())
        texts.append(widget.accessibleName())
        if isinstance(widget, (QLabel, QAbstractButton, QLineEdit)):
            texts.append(widget.text())
        elif isinstance(widget, (QPlainTextEdit, QTextEdit)):
            texts.append(widget.toPlainText())
        elif isinstance(widget, QAbstractItemView) and widget.model() is not None:
            model = widget.model()
            stack = [QModelIndex()]
            while stack:
                parent_index = stack.pop()
                try:
                    columns = model.columnCount(parent_index)
                except TypeError:  # a list model: one column, no children, no public count
                    columns = 1
                    if parent_index.isValid():
                        continue
                for row in range(model.rowCount(parent_index)):
                    for column in range(columns):
                        index = model.index(row, column, parent_index)
                        for role in (0, 3):  # display, tooltip
                            value = model.data(index, role)
                            if value is not None:
                                texts.append(str(value))
                    if columns and model.rowCount(model.index(row, 0, parent_index)):
                        stack.append(model.index(row, 0, parent_index))
        elif isinstance(widget, QGraphicsView) and widget.scene() is not None:
            for item in widget.scene().items():
                for name in ("toPlainText", "text", "toolTip"):
                    read = getattr(item, name, None)
                    if callable(read):
                        texts.append(str(read()))
    return "\n".join(texts)


def files_holding(folder, needle: bytes) -> list[str]:
    found = []
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            path = os.path.join(dirpath, name)
            try:
                with open(path, "rb") as handle:
                    if needle in handle.read():
                        found.append(path)
            except OSError:
                continue
    return found


@pytest.mark.slow  # two real runs and a window: about 30 s on a loaded machine
def test_a_secret_is_written_nowhere_and_masked_in_output(qtbot, tmp_path, settings):
    data = tmp_path / "data"
    path = tmp_path / "flow.toml"
    path.write_text(textwrap.dedent(FLOW))
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "XDG_DATA_HOME": str(data),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "API_TOKEN": SECRET,
    }
    result = subprocess.run(
        [sys.executable, "-m", "taskloom", "run", str(path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1, result.stdout + result.stderr  # "fails" failed
    assert SECRET not in result.stdout + result.stderr
    assert "denied for ***" in result.stdout + result.stderr  # its error, masked

    # Without the secret in its environment, a run refuses to start, naming the key.
    del env["API_TOKEN"]
    refused = subprocess.run(
        [sys.executable, "-m", "taskloom", "run", str(path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode == 2
    assert refused.stderr.strip() == (
        f"{path}:4:1: workflow.secret_env: API_TOKEN is not set in Taskloom's environment"
    )

    # The window, on the same store: its second run runs in this process.
    os.environ["XDG_DATA_HOME"] = str(data)
    workflow = load(path)
    db = default_db_path(workflow)
    assert db.exists()
    os.environ["API_TOKEN"] = SECRET
    try:
        session = WorkflowSession(workflow, settings, db_path=db, log_dir=log_dir_for(db))
    finally:
        del os.environ["API_TOKEN"]  # read at the start: not needed after
    try:
        window = session.window
        bridge = window.bridge
        qtbot.waitUntil(
            lambda: all(
                tid in bridge.tasks and bridge.tasks[tid].state in (TaskState.SUCCEEDED,
                                                                    TaskState.FAILED)
                for tid in ("echoes", "fails")
            ),
            timeout=20000,
        )  # fmt: skip
        inspector = window.inspector
        seen = []
        attempts = inspector.attempt_list
        for tid in ("echoes", "fails"):
            window.select_tasks([tid])
            qtbot.waitUntil(lambda: attempts.topLevelItemCount() >= 2, timeout=10000)
            for n in range(attempts.topLevelItemCount()):
                attempts.setCurrentItem(attempts.topLevelItem(n))
                qtbot.waitUntil(lambda: "***" in inspector.output.toPlainText(), timeout=10000)
                seen.append(inspector.output.toPlainText())
                assert SECRET not in all_texts(window)
        assert any("token=***" in text for text in seen)
        assert any("denied for ***" in text for text in seen)
    finally:
        session.close()
        from taskloom.engine import secret_env

        secret_env.forget()  # this process masks it no more: other tests run here

    # Nothing on disk holds it: store (its feed tables too), logs, supervisor records.
    assert files_holding(tmp_path, SECRET.encode()) == []
    assert files_holding(data, b"token=***")  # the logs were written, masked
    with sqlite3.connect(db) as connection:
        for table in ("tasks", "attempts", "events", "feed_events", "feed_tasks", "feed_state"):
            rows = connection.execute(f"SELECT * FROM {table}").fetchall()
            assert SECRET not in repr(rows), table

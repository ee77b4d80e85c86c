"""The window's run has the workflow's hooks too: on_failure when a task fails, and
on_finish once every task has settled, while the window stays open (real commands)."""

from __future__ import annotations

import json
import sys

from taskloom.app import WorkflowSession
from taskloom.engine.workflow import load

KEEP = "import sys; open(sys.argv[1], 'w').write(sys.stdin.read())"


def hook(name: str) -> str:
    return json.dumps([sys.executable, "-c", KEEP, name])


def test_the_windows_run_calls_its_hooks_and_on_finish_once_settled(qtbot, tmp_path, settings):
    path = tmp_path / "flow.toml"
    path.write_text(
        f"""
[workflow]
name = "windowed"
on_failure = {hook("failure.json")}
on_finish = {hook("finish.json")}

[tasks.good]
command = ["true"]

[tasks.bad]
command = ["false"]
"""
    )
    db = tmp_path / "s.db"
    session = WorkflowSession(load(path), settings, db_path=db, log_dir=tmp_path / "logs")
    try:
        qtbot.waitUntil(lambda: (tmp_path / "finish.json").exists(), timeout=20000)
        qtbot.waitUntil(lambda: (tmp_path / "finish.json").read_text().endswith("\n"))
        finish = json.loads((tmp_path / "finish.json").read_text())
        failure = json.loads((tmp_path / "failure.json").read_text())
        assert not session.stopped  # the window is still open
    finally:
        session.close()
    assert finish["event"] == "finish" and finish["outcome"] == "failed"
    assert finish["counts"] == {"succeeded": 1, "failed": 1} and finish["run"] == 1
    assert failure["task"] == "bad" and failure["exit_code"] == 1
    # closing the window does not call on_finish a second time
    assert session.hooks.ran.count(("on_finish", "", 0)) == 1

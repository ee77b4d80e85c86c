"""The window's run is assembled by the same code as ``taskloom run``'s (taskloom/owner.py):
what had drifted between the two copies is the same now."""

from __future__ import annotations

import re
import sys

from taskloom.app import WorkflowSession
from taskloom.engine.workflow import load

WRITE_ID = "import os, sys; open(sys.argv[1], 'w').write(os.environ.get('TASKLOOM_RUN_ID', ''))"


def test_the_windows_commands_get_the_runs_id_as_taskloom_runs_do(
    qtbot, tmp_path, settings, monkeypatch
):
    # taskloom run set TASKLOOM_RUN_ID for its commands (examples/scripts/attempts.py keys
    # its state by it); the window's copy of the assembly did not.
    monkeypatch.delenv("TASKLOOM_RUN_ID", raising=False)
    out = tmp_path / "id.txt"
    path = tmp_path / "flow.toml"
    path.write_text(
        f"""
[workflow]
name = "ids"

[tasks.tell]
command = [{sys.executable!r}, "-c", {WRITE_ID!r}, {str(out)!r}]
"""
    )
    session = WorkflowSession(
        load(path), settings, db_path=tmp_path / "s.db", log_dir=tmp_path / "logs"
    )
    try:
        qtbot.waitUntil(
            lambda: all(info.state.settled for info in session.scheduler.tasks()), timeout=20000
        )
    finally:
        session.close()
    assert re.fullmatch(r"[0-9a-f]{12}", out.read_text())
    # the feed for watchers and the pruner came from the same assembly, and stopped
    assert session.feed is not None and session.pruner is not None

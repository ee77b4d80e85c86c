"""The Start bar's params: a new run started from the window tells its commands
TASKLOOM_PARAM_KEY and keeps the params in its store; bad ones refuse to start."""

from __future__ import annotations

import json
import sys

from taskloom.app import WorkflowSession
from taskloom.engine.store import SQLiteStore
from taskloom.engine.workflow import load

DUMP = (
    "import json, os; json.dump({k: v for k, v in os.environ.items() "
    "if k.startswith('TASKLOOM_PARAM_') or k == 'TASKLOOM_RUN'}, open('env.json', 'w'))"
)


def workflow(tmp_path):
    path = tmp_path / "flow.toml"
    path.write_text(f"[tasks.job]\ncommand = {json.dumps([sys.executable, '-c', DUMP])}\n")
    return load(path)


def test_params_typed_in_the_start_bar_reach_the_commands_and_the_store(qtbot, tmp_path, settings):
    db = tmp_path / "s.db"
    session = WorkflowSession(
        workflow(tmp_path), settings, db_path=db, log_dir=tmp_path / "logs", start=False
    )
    try:
        bar = session.window.start_bar
        assert bar.params.isVisibleTo(session.window)  # a new run: params can be given
        bar.params.setText('day=2026-12-01 "title=a b"')
        assert session.start()
        qtbot.waitUntil(lambda: (tmp_path / "env.json").exists(), timeout=20000)
        qtbot.waitUntil(lambda: (tmp_path / "env.json").read_text().endswith("}"))
    finally:
        session.close()
    seen = json.loads((tmp_path / "env.json").read_text())
    assert seen == {
        "TASKLOOM_RUN": "1",
        "TASKLOOM_PARAM_DAY": "2026-12-01",
        "TASKLOOM_PARAM_TITLE": "a b",
    }
    store = SQLiteStore.reader(db)
    try:
        assert json.loads(store.meta("params")) == {"DAY": "2026-12-01", "TITLE": "a b"}
    finally:
        store.close()


def test_bad_params_are_said_and_nothing_starts(qtbot, tmp_path, settings):
    session = WorkflowSession(workflow(tmp_path), settings, start=False)
    try:
        session.window.start_bar.params.setText("2day=x")
        assert not session.start()
        assert not session.started
        message = session.window.statusBar().currentMessage()
        assert message.startswith("⚠ Params: must be KEY=VALUE") and "'2day=x'" in message
    finally:
        session.close()

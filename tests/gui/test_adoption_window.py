"""A window's run outlives the window: kill -9 of a window that owns a long command,
the background hand-off, and Take over all leave the command running under its
supervisor; the window that opens the run next shows it running, with its output,
and records its one success.

Real processes (``python -m taskloom``, offscreen), real stores, real signals.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from taskloom.app import CLOSE_BACKGROUND, Sessions, WorkflowSession
from taskloom.engine import TaskState
from taskloom.engine.store import SQLiteStore
from taskloom.engine.workflow import load
from taskloom.watching import WatchSession

pytestmark = pytest.mark.slow  # real processes: owners, watchers, signals, kills

ROOT = Path(__file__).resolve().parents[2]
S = TaskState


def env(tmp_path) -> dict:
    environment = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "QT_QPA_PLATFORM": "offscreen",
        "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
    }
    environment.pop("TASKLOOM_OWNER", None)
    return environment


def gated_workflow(tmp_path, *, recurring: bool = False) -> tuple[Path, Path, Path]:
    """``long`` notes its pid, prints a line, waits (up to 20 s) for the gate, notes its end."""
    ledger, gate = tmp_path / "ledger", tmp_path / "gate"
    script = (
        f"echo start $$ >> '{ledger}'; echo working on it; "
        f"i=0; while [ ! -e '{gate}' ] && [ $i -lt 1000 ]; do sleep 0.02; i=$((i+1)); done; "
        f"echo end >> '{ledger}'"
    )
    text = f'[workflow]\nname = "gated"\n[tasks.long]\ncommand = ["sh", "-c", "{script}"]\n'
    text += '[tasks.after]\ncommand = ["true"]\ndeps = ["long"]\n'
    if recurring:
        text += '[tasks.hourly]\ncommand = ["true"]\nevery = "1h"\n'
    path = tmp_path / "gated.toml"
    path.write_text(text)
    return path, ledger, gate


def started_pid(ledger: Path) -> int | None:
    if not ledger.exists():
        return None
    lines = [line for line in ledger.read_text().splitlines() if line.startswith("start ")]
    return int(lines[0].split()[1]) if lines else None


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def stored_outcomes(db: Path, task: str) -> list[tuple[int, str]]:
    reader = SQLiteStore.reader(db)
    try:
        return [(row["number"], row["outcome"]) for row in reader.attempts(task)][::-1]
    finally:
        reader.close()


def assert_adopted_then_succeeds_once(qtbot, session, ledger: Path, gate: Path, pid: int) -> None:
    """The next owner's window: ``long`` is running (the same attempt, its real start),
    its output is shown, and once the gate opens it succeeds, once."""
    window = session.window
    qtbot.waitUntil(lambda: window.bridge.tasks["long"].state is S.RUNNING, timeout=10000)
    attempts = session.scheduler.attempts("long")
    assert [(a.number, str(a.outcome)) for a in attempts] == [(1, "running")]
    log_path = session.scheduler.live_log("long")
    assert log_path is not None
    qtbot.waitUntil(lambda: "working on it" in Path(log_path).read_text(), timeout=10000)
    assert alive(pid)
    gate.touch()
    qtbot.waitUntil(lambda: window.bridge.tasks["after"].state is S.SUCCEEDED, timeout=20000)
    assert [(a.number, str(a.outcome)) for a in session.scheduler.attempts("long")] == [
        (1, "succeeded")
    ]
    assert ledger.read_text().splitlines() == [f"start {pid}", "end"]


@pytest.mark.timeout(90)
def test_kill_9_of_a_window_leaves_its_command_running_for_the_next_window(
    qtbot, tmp_path, settings
):
    path, ledger, gate = gated_workflow(tmp_path)
    db = tmp_path / "run.db"
    window = subprocess.Popen(
        [sys.executable, "-m", "taskloom", str(path), "--db", str(db), "--start"],
        cwd=ROOT,
        env=env(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        qtbot.waitUntil(lambda: started_pid(ledger) is not None, timeout=30000)
    finally:
        window.send_signal(signal.SIGKILL)
        window.wait(10)
    pid = started_pid(ledger)
    assert pid is not None and alive(pid), "the command died with its window"

    sessions = Sessions(settings, db=db, data_dir=tmp_path / "data", start=False)
    try:
        assert sessions.open(path)
        session = sessions.current
        assert isinstance(session, WorkflowSession)
        assert session.started, "adopted commands run: the run goes on without Start"
        assert_logged_as_adopted(qtbot, session, "still running under its supervisor")
        assert_adopted_then_succeeds_once(qtbot, session, ledger, gate, pid)
    finally:
        sessions.close()


def assert_logged_as_adopted(qtbot, session, found: str) -> None:
    """The event log says ``long`` was adopted and what was found, not "restored"; the
    inspector says it beside the attempts while the adopted attempt runs."""
    window = session.window
    model = window.event_log.model

    def row():
        for r, event in enumerate(model.events):
            if event.task_id == "long" and event.kind == "restored":
                return r
        return None

    qtbot.waitUntil(lambda: row() is not None, timeout=10000)
    r = row()
    assert model.data(model.index(r, 3)) == "• adopted"
    assert model.data(model.index(r, 5)) == found
    window.select_tasks(["long"])
    window.inspector.show_task("long")
    text = window.inspector.fields["attempts"].text()
    if window.bridge.tasks["long"].state is S.RUNNING:
        assert text == f"1 attempt · adopted: {found}"
    else:
        assert text == "1 attempt · adopted"


@pytest.mark.timeout(90)
def test_a_command_that_ended_while_no_owner_ran_is_logged_so(qtbot, tmp_path, settings):
    path, ledger, gate = gated_workflow(tmp_path)
    db = tmp_path / "run.db"
    window = subprocess.Popen(
        [sys.executable, "-m", "taskloom", str(path), "--db", str(db), "--start"],
        cwd=ROOT,
        env=env(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        qtbot.waitUntil(lambda: started_pid(ledger) is not None, timeout=30000)
    finally:
        window.send_signal(signal.SIGKILL)
        window.wait(10)
    gate.touch()
    qtbot.waitUntil(lambda: ledger.read_text().splitlines()[-1:] == ["end"], timeout=20000)
    pid = started_pid(ledger)
    assert pid is not None
    qtbot.waitUntil(lambda: not alive(pid), timeout=10000)
    sessions = Sessions(settings, db=db, data_dir=tmp_path / "data", start=False)
    try:
        assert sessions.open(path)
        session = sessions.current
        assert isinstance(session, WorkflowSession)
        assert session.scheduler.adoptions() == {"long": (1, "adopted: ended while no owner ran")}
        assert_logged_as_adopted(qtbot, session, "ended while no owner ran")
        qtbot.waitUntil(
            lambda: session.window.bridge.tasks["after"].state is S.SUCCEEDED, timeout=20000
        )
        assert stored_outcomes(db, "long") == [(1, "succeeded")]
    finally:
        sessions.close()


@pytest.mark.timeout(90)
def test_the_background_hand_off_hands_running_commands_over(qtbot, tmp_path, settings):
    path, ledger, gate = gated_workflow(tmp_path, recurring=True)
    db = tmp_path / "run.db"
    session = WorkflowSession(load(path), settings, db_path=db, log_dir=tmp_path / "logs")
    background = None
    try:
        session.window.show()
        qtbot.waitUntil(lambda: started_pid(ledger) is not None, timeout=30000)
        pid = started_pid(ledger)
        session.ask_on_close = lambda: CLOSE_BACKGROUND
        session.window.close()
        assert session.join(30)
        background = session.background_owner
        assert background is not None
        assert alive(pid), "the hand-off stopped the running command"
        gate.touch()
        qtbot.waitUntil(lambda: stored_outcomes(db, "after") == [(1, "succeeded")], timeout=30000)
        assert stored_outcomes(db, "long") == [(1, "succeeded")]
        assert ledger.read_text().splitlines() == [f"start {pid}", "end"]
    finally:
        session.window.deleteLater()
        if background is not None and background.poll() is None:
            background.send_signal(signal.SIGTERM)
            background.wait(30)


@pytest.mark.timeout(90)
def test_take_over_adopts_the_dead_owners_running_command(qtbot, tmp_path, settings):
    path, ledger, gate = gated_workflow(tmp_path)
    db = tmp_path / "run.db"
    owner = subprocess.Popen(
        [sys.executable, "-m", "taskloom", "run", str(path), "--db", str(db)],
        cwd=ROOT,
        env=env(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    sessions = Sessions(settings, db=db, data_dir=tmp_path / "data")
    try:
        qtbot.waitUntil(lambda: started_pid(ledger) is not None, timeout=30000)
        assert sessions.open(path)
        watch = sessions.current
        assert isinstance(watch, WatchSession)
        qtbot.waitUntil(lambda: watch.window.bridge.tasks["long"].state is S.RUNNING, timeout=30000)
        owner.send_signal(signal.SIGKILL)
        owner.wait(10)
        pid = started_pid(ledger)
        qtbot.waitUntil(lambda: watch.status.take_over.isVisible(), timeout=10000)
        assert pid is not None and alive(pid)
        watch.status.take_over.click()
        session = sessions.current
        assert isinstance(session, WorkflowSession) and session is not watch
        assert_adopted_then_succeeds_once(qtbot, session, ledger, gate, pid)
    finally:
        sessions.close()
        if owner.poll() is None:
            owner.kill()
            owner.wait(10)

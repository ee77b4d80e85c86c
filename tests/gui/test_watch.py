"""A window that watches a run another process owns: real ``taskloom run`` owners,
real stores, a pytest-qt window attached to them (offscreen)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from taskloom.app import CLOSE_BACKGROUND, CLOSE_CANCEL, Sessions, WorkflowSession
from taskloom.engine import TaskState
from taskloom.engine._store.lock import read_owner
from taskloom.engine.watched_run import WatchOnly
from taskloom.engine.workflow import load
from taskloom.watching import WatchSession

pytestmark = pytest.mark.slow  # real processes: owners, watchers, signals, kills

ROOT = Path(__file__).resolve().parents[2]
LINE = re.compile(r"^\s*[\d.]+s\s+(\S*)\s+(\w+)")
S = TaskState


class Owner:
    """A ``taskloom run`` process; its event lines are collected as they come."""

    def __init__(self, path: Path, db: Path, tmp_path: Path):
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "taskloom", "run", str(path), "--db", str(db)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def events(self, task: str) -> list[str]:
        found = [LINE.match(line) for line in list(self.lines)]
        return [m.group(2) for m in found if m and m.group(1) == task]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self._reader.join(10)


@pytest.fixture
def owners(tmp_path):
    """``owners(path, db)`` starts a ``taskloom run`` owner; every one is stopped after."""
    started: list[Owner] = []

    def start(path, db) -> Owner:
        owner = Owner(path, db, tmp_path)
        started.append(owner)
        return owner

    yield start
    for owner in started:
        owner.stop()


@pytest.fixture
def sessions(settings, tmp_path):
    made: list[Sessions] = []

    def make(db) -> Sessions:
        s = Sessions(settings, db=db, data_dir=tmp_path / "data")
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


def wait_started(qtbot, owner: Owner) -> None:
    """Until the owner has opened its run (it prints its first line then). Not by
    probing the store's lock: a probe at the wrong moment refuses the owner."""
    qtbot.waitUntil(lambda: any(line.startswith("running ") for line in owner.lines), timeout=30000)


DIAMOND = """
[workflow]
name = "diamond"
[tasks.a]
command = ["sh", "-c", "while [ ! -e '{go}' ]; do sleep 0.02; done"]
[tasks.b]
command = ["true"]
deps = ["a"]
[tasks.c]
command = ["sh", "-c", "sleep 0.2"]
deps = ["a"]
[tasks.d]
command = ["true"]
deps = ["b", "c"]
[tasks.r]
command = ["sh", "-c", "if [ -e '{mark}' ]; then exit 0; fi; touch '{mark}'; exit 1"]
deps = ["a"]
retry = {{ max_attempts = 2, base = "100ms" }}
[tasks.tick]
command = ["true"]
every = "300ms"
"""


def test_a_watcher_follows_the_owner_live_in_the_same_order(qtbot, tmp_path, owners, sessions):
    go, mark = tmp_path / "go", tmp_path / "mark"
    path = tmp_path / "diamond.toml"
    path.write_text(DIAMOND.format(go=go, mark=mark))
    db = tmp_path / "run.db"
    owner = owners(path, db)
    wait_started(qtbot, owner)
    qtbot.waitUntil(lambda: "running" in owner.events("a"), timeout=30000)

    s = sessions(db)
    assert s.open(path)
    session = s.current
    assert isinstance(session, WatchSession)
    window = session.window
    seen: list[tuple[str, str]] = []  # task, kind
    window.bridge.eventsArrived.connect(
        lambda events: seen.extend((e.task_id, e.kind) for e in events)
    )
    # Whose run it is, in the title bar and the status bar.
    assert f"pid {owner.process.pid}" in window.windowTitle()
    status = window.findChild(type(session.status), "watchStatus")
    assert f"taskloom run (pid {owner.process.pid} on " in status.label.text()
    assert window.bridge.tasks["a"].state is S.RUNNING  # from the snapshot

    go.touch()
    qtbot.waitUntil(lambda: ("d", "succeeded") in [(t, k) for t, k in seen], timeout=20000)
    qtbot.waitUntil(lambda: ("r", "succeeded") in [(t, k) for t, k in seen], timeout=20000)
    qtbot.waitUntil(lambda: [k for t, k in seen if t == "tick"].count("succeeded") >= 2)

    for task in ("a", "b", "c", "d", "r"):
        watched = [k for t, k in seen if t == task]
        assert watched == owner.events(task)[-len(watched) :], task
    r_events = [k for t, k in seen if t == "r"]
    assert r_events.index("retry_wait") < r_events.index("succeeded")  # the retry, seen
    # Every view follows: graph/inspector/status read the bridge, the timeline has
    # the attempts, the event log the events.
    assert {t: window.bridge.tasks[t].state for t in "abcdr"} == dict.fromkeys("abcdr", S.SUCCEEDED)
    # A watching window reads attempts off the GUI thread: they come a round later.
    qtbot.waitUntil(
        lambda: [a.outcome for a in window.bridge.attempts("r")] == ["failed", "succeeded"]
    )
    qtbot.waitUntil(lambda: "succeeded" in window.scene.nodes["d"].status_text.text())
    window.select_tasks(["r"])  # the inspector lists both attempts, from this run
    qtbot.waitUntil(lambda: window.inspector.attempt_list.topLevelItemCount() == 2)
    timeline = window.timeline.model
    assert [bar[2] for bar in timeline.bars["r"]] == ["failed", "succeeded"]  # by outcome
    # a ran before the window opened: one bar, from its attempt and its replayed events
    assert [bar[2] for bar in timeline.bars["a"]] == ["succeeded"]
    qtbot.waitUntil(lambda: [e.kind for e in timeline.entries.get("tick", ())] == ["recurring"])
    assert window.event_log.model.rowCount() >= len(seen)
    window._refresh_status()
    assert "succeeded" in window.status_panel.counts.text()
    # The run's recent past came first (a's start, before this window opened). How soon
    # a watcher hears of an event (lag p50/p99) is benchmarks/watch_bench.py's figure.
    assert ("a", "running") in seen


STEER = """
[workflow]
name = "steer"
[tasks.slow]
command = ["sleep", "60"]
[tasks.broken]
command = ["false"]
[tasks.hourly]
command = ["true"]
every = "1h"
"""


@pytest.mark.slow
def test_cancel_retry_run_now_and_pause_from_a_watcher_reach_the_owner(
    qtbot, tmp_path, owners, sessions
):
    path = tmp_path / "steer.toml"
    path.write_text(STEER)
    db = tmp_path / "run.db"
    owner = owners(path, db)
    wait_started(qtbot, owner)
    qtbot.waitUntil(lambda: "failed" in owner.events("broken"), timeout=30000)
    s = sessions(db)
    assert s.open(path)
    window = s.current.window
    bridge = window.bridge
    qtbot.waitUntil(lambda: bridge.tasks["slow"].state is S.RUNNING)

    def do(action, task) -> None:
        window.select_tasks([task])
        qtbot.waitUntil(action.isEnabled, timeout=5000)
        action.trigger()

    # A retry of a running task: the owner refuses, and says why.
    window.select_tasks(["slow"])
    window.controller.retry(["slow"])
    qtbot.waitUntil(
        lambda: (
            "The owner refused: cannot retry slow: it is running"
            in window.statusBar().currentMessage()
        ),
        timeout=5000,
    )
    do(window.act_cancel, "slow")
    qtbot.waitUntil(lambda: "cancelled" in owner.events("slow"), timeout=5000)
    qtbot.waitUntil(lambda: bridge.tasks["slow"].state is S.CANCELLED, timeout=5000)

    do(window.act_retry, "broken")
    qtbot.waitUntil(lambda: owner.events("broken").count("failed") == 2, timeout=5000)
    qtbot.waitUntil(lambda: len(bridge.attempts("broken")) == 2, timeout=5000)
    do(window.act_retry_failed, "broken")
    qtbot.waitUntil(lambda: owner.events("broken").count("failed") == 3, timeout=5000)
    qtbot.waitUntil(lambda: len(bridge.attempts("broken")) == 3, timeout=5000)

    do(window.act_run_now, "hourly")
    qtbot.waitUntil(lambda: "succeeded" in owner.events("hourly"), timeout=5000)
    qtbot.waitUntil(lambda: bridge.tasks["hourly"].state is S.SCHEDULED, timeout=5000)

    do(window.act_pause_task, "hourly")
    qtbot.waitUntil(lambda: "paused" in owner.events("hourly"), timeout=5000)
    qtbot.waitUntil(lambda: bridge.tasks["hourly"].paused, timeout=5000)

    window.act_pause_all.setChecked(True)
    qtbot.waitUntil(lambda: "paused" in owner.events(""), timeout=5000)
    qtbot.waitUntil(lambda: "paused" in window.status_panel.paused.text(), timeout=5000)
    window.act_pause_all.setChecked(False)
    qtbot.waitUntil(lambda: "resumed" in owner.events(""), timeout=5000)
    qtbot.waitUntil(lambda: not window.status_panel.paused.isVisibleTo(window), timeout=5000)

    # Graph edits are refused, saying how to edit.
    assert window.controller.connect_tasks("broken", "hourly") is False
    message = window.statusBar().currentMessage()
    assert "only watches" in message and "edit the workflow file" in message
    with pytest.raises(WatchOnly):
        s.current.scheduler.remove("broken")
    window.add_task_dialog()  # refused before any form is shown
    assert window.statusBar().currentMessage().startswith("⚠ Cannot add a task: steer is run by")
    assert not hasattr(window, "add_dialog")
    window.select_tasks(["broken"])
    assert not window.act_edit.isEnabled()
    assert "take the run over" in window.act_edit.statusTip()

    owner.stop()  # its summary counts the states it was steered into
    assert owner.process.returncode == 130  # stopped by SIGINT: 128 + 2, whatever the tasks did
    assert any(line.strip().startswith("FAILED broken") for line in owner.lines)  # for good
    assert "Traceback" not in "\n".join(owner.lines)
    assert any("1 cancelled" in line and "1 failed" in line for line in owner.lines)


@pytest.mark.slow
def test_the_watcher_says_when_the_owner_dies_and_takes_the_run_over(
    qtbot, tmp_path, owners, sessions
):
    path = tmp_path / "steer.toml"
    path.write_text(STEER)
    db = tmp_path / "run.db"
    owner = owners(path, db)
    wait_started(qtbot, owner)
    s = sessions(db)
    assert s.open(path)
    watch = s.current
    window = watch.window
    qtbot.waitUntil(lambda: window.bridge.tasks["slow"].state is S.RUNNING, timeout=30000)

    owner.process.kill()  # no goodbye: the lock going away is what tells
    owner.process.wait(10)
    status = watch.status
    qtbot.waitUntil(lambda: status.take_over.isVisible(), timeout=5000)
    assert "stopped at" in status.label.text()
    assert "stopped" in window.windowTitle()
    window.select_tasks(["slow"])
    assert not window.act_cancel.isEnabled()  # nobody to ask any more

    status.take_over.click()
    session = s.current
    assert isinstance(session, WorkflowSession) and session is not watch
    assert read_owner(db).pid == os.getpid()
    # The run resumes here: the killed owner's command went on, and is adopted.
    qtbot.waitUntil(lambda: session.window.bridge.tasks["slow"].state is S.RUNNING, timeout=10000)
    attempts = session.scheduler.attempts("slow")
    assert [(a.number, str(a.outcome)) for a in attempts] == [(1, "running")]
    assert session.scheduler.adopted_tasks() == ["slow"]
    assert session.window.bridge.tasks["broken"].state is S.FAILED  # kept as it was


ORPHANED = """
[workflow]
name = "orphaned"
workers = 2
[tasks.inproc]
call = "slowmod:wait"
[tasks.cmd]
command = ["sleep", "60"]
"""


@pytest.mark.slow
def test_after_the_owner_dies_nothing_is_shown_running_that_is_not(
    qtbot, tmp_path, owners, sessions
):
    """kill -9 of the owner: a call that ran in it died with it, so the card, the
    status bar, the inspector and the ETA stop saying "running" ("owner gone" until
    someone takes the run over). A command is running exactly while its recorded
    process is (a supervisor may keep it going after its owner: then it IS running)."""
    from taskloom.engine.watched_run import _process_alive

    path = tmp_path / "orphaned.toml"
    path.write_text(ORPHANED)
    (tmp_path / "slowmod.py").write_text("import time\n\ndef wait():\n    time.sleep(60)\n")
    db = tmp_path / "run.db"
    owner = owners(path, db)
    wait_started(qtbot, owner)
    s = sessions(db)
    assert s.open(path)
    window = s.current.window
    window.resize(1400, 900)
    running = lambda tid: window.bridge.tasks[tid].state is S.RUNNING  # noqa: E731
    qtbot.waitUntil(lambda: running("inproc") and running("cmd"), timeout=30000)
    window.select_tasks(["inproc"])
    owner.process.kill()
    owner.process.wait(10)
    qtbot.waitUntil(lambda: not running("inproc"), timeout=15000)
    info = window.bridge.tasks["inproc"]
    assert "owner gone" in (info.error or "")
    qtbot.waitUntil(lambda: "owner gone" in window.scene.nodes["inproc"].status_text.text())
    window.inspector.refresh()
    assert "owner gone" in window.inspector.state.text()

    def outcomes() -> list[str]:  # read off the GUI thread: a round after it is asked
        return [str(a.outcome) for a in window.scheduler.attempts("inproc")]

    qtbot.waitUntil(lambda: bool(outcomes()))
    assert "running" not in outcomes()  # the attempt is lost, as a take-over finds
    qtbot.waitUntil(lambda: not window.forecast_view.eta.isVisible(), timeout=5000)

    def cmd_told_truly() -> bool:
        row = window.scheduler._reader.newest_attempt(window.scheduler.run, "cmd")
        alive = row is not None and _process_alive(row[3], row[4])
        return running("cmd") == alive

    qtbot.waitUntil(cmd_told_truly, timeout=15000)
    window._refresh_status()
    counts = window.status_panel.counts.text()
    assert "owner gone" in counts
    assert ("running" in counts) == running("cmd")


def test_file_open_of_a_workflow_run_elsewhere_watches_it(qtbot, tmp_path, owners, settings):
    from taskloom.app import store_paths

    path = tmp_path / "steer.toml"
    path.write_text(STEER)
    local = tmp_path / "local.toml"
    local.write_text('[workflow]\nname = "local"\n[tasks.t]\ncommand = ["true"]\n')
    data = tmp_path / "data"
    db, _ = store_paths(load(path), data_dir=data)  # where File > Open looks for its run
    owner = owners(path, db)
    wait_started(qtbot, owner)
    s = Sessions(settings, data_dir=data)
    try:
        assert s.open(local)
        first = s.current
        first.window.openRequested.emit(str(path))  # what File > Open does
        assert isinstance(s.current, WatchSession) and s.current is not first
        assert f"pid {owner.process.pid}" in s.current.window.windowTitle()
        # What a watching window refuses is disabled, with the reason as its tip.
        watching = s.current.window
        for action in (watching.act_add, watching.act_save, watching.act_undo, watching.act_remove):
            assert not action.isEnabled(), action.objectName()
        assert "only watches" in watching.act_add.statusTip()
        watching.controller.move_nodes(watching.scene, {"slow": (None, (5.0, 5.0))})
        assert not watching.act_undo.isEnabled()  # the stack enabled it: disabled again
        qtbot.waitUntil(lambda: first.stopped, timeout=10000)  # the old window's run
        assert owner.process.poll() is None  # and the watched one goes on
    finally:
        s.close()


@pytest.mark.slow
def test_a_stopped_owner_is_shown_not_answering_then_watched_again(
    qtbot, tmp_path, owners, sessions
):
    path = tmp_path / "steer.toml"
    path.write_text(STEER)
    db = tmp_path / "run.db"
    owner = owners(path, db)
    wait_started(qtbot, owner)
    s = sessions(db)
    assert s.open(path)
    status = s.current.status
    watching = status.label.text()
    try:
        owner.process.send_signal(signal.SIGSTOP)  # alive, but its heartbeat stops
        qtbot.waitUntil(lambda: "not answering" in status.label.text(), timeout=15000)
        assert f"pid {owner.process.pid}" in status.label.text()
        assert not status.take_over.isVisible()  # frozen is not gone: nothing to take over
    finally:
        owner.process.send_signal(signal.SIGCONT)
    qtbot.waitUntil(lambda: status.label.text() == watching, timeout=15000)


def test_a_window_on_a_file_run_on_another_store_watches_that_store(
    qtbot, tmp_path, owners, sessions
):
    path = tmp_path / "steer.toml"
    path.write_text(STEER)
    elsewhere = tmp_path / "cron-data" / "run.db"  # a cron job's own data folder
    owner = owners(path, elsewhere)
    wait_started(qtbot, owner)
    s = sessions(tmp_path / "run.db")
    assert s.open(path)
    watch = s.current
    assert isinstance(watch, WatchSession) and watch.db_path == elsewhere
    assert f"pid {owner.process.pid}" in watch.window.windowTitle()
    qtbot.waitUntil(lambda: watch.window.bridge.tasks["slow"].state is S.RUNNING, timeout=30000)
    assert not (tmp_path / "run.db").exists()  # no second store, no second run


RECURRING = """
[workflow]
name = "beat"
[tasks.beat]
command = ["true"]
every = "200ms"
"""


@pytest.mark.slow
def test_closing_a_window_can_hand_its_schedule_to_a_background_owner(
    qtbot, tmp_path, settings, sessions
):
    path = tmp_path / "beat.toml"
    path.write_text(RECURRING)
    db = tmp_path / "run.db"
    session = WorkflowSession(load(path), settings, db_path=db, log_dir=tmp_path / "logs")
    background = None
    try:
        session.window.show()
        session.ask_on_close = lambda: CLOSE_CANCEL  # changed their mind
        assert session.window.close() is False
        assert session.window.isVisible() and session._stopper is None  # runs on
        session.ask_on_close = lambda: CLOSE_BACKGROUND
        assert session.asks_on_close()
        session.window.close()
        assert session.join(30)
        background = session.background_owner
        assert background is not None
        log = tmp_path / "logs" / "background.log"
        qtbot.waitUntil(lambda: log.exists() and "running beat" in log.read_text(), timeout=30000)
        assert read_owner(db).pid == background.pid
        # It does not carry this process's owner mark: the reaper that ends what we
        # started once we exit must leave it alone.
        environ = Path(f"/proc/{background.pid}/environ")
        if environ.exists():
            assert b"TASKLOOM_OWNER=" not in environ.read_bytes()
        # The schedule lives on, and a window opened now watches it.
        s = sessions(db)
        assert s.open(path)
        assert isinstance(s.current, WatchSession)
        bridge = s.current.window.bridge
        count = len(bridge.attempts("beat"))
        qtbot.waitUntil(lambda: len(bridge.attempts("beat")) > count, timeout=10000)
    finally:
        session.window.deleteLater()
        if background is not None and background.poll() is None:
            background.send_signal(signal.SIGTERM)
            background.wait(30)
    assert background.returncode is not None


@pytest.mark.parametrize(
    ("button", "choice"),
    [
        ("Keep running in the background", "background"),
        ("Stop the schedule", "stop"),
        ("Cancel", "cancel"),  # the window stays open
    ],
)
def test_the_close_question_offers_background_or_stop(qtbot, button, choice):
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from taskloom.app import ask_keep_schedule

    seen = {}

    def answer() -> None:
        box = next(w for w in QApplication.topLevelWidgets() if w.objectName() == "keep_schedule")
        seen["text"] = box.text()
        seen["buttons"] = [b.text() for b in box.buttons()]
        next(b for b in box.buttons() if b.text() == button).click()

    QTimer.singleShot(0, answer)
    assert ask_keep_schedule(None, "beat") == choice
    assert seen["text"] == "beat has recurring tasks. Keep running them after this window closes?"
    assert sorted(seen["buttons"]) == sorted(
        ["Keep running in the background", "Stop the schedule", "Cancel"]
    )

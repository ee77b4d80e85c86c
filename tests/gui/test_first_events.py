"""The event log shows a workflow's events from the first: the tasks being added
come before the window exists (real sessions, with and without a store)."""

from __future__ import annotations

import sys

from taskloom.app import WorkflowSession
from taskloom.engine import Scheduler, TaskState
from taskloom.engine.workflow import load
from taskloom.gui.bridge import EarlyEvents, EngineBridge


def write(path) -> None:
    path.write_text(
        '[workflow]\nname = "demo"\nworkers = 2\n\n'
        f'[tasks.extract]\ncommand = ["{sys.executable}", "-c", "pass"]\n\n'
        f'[tasks.load]\ncommand = ["{sys.executable}", "-c", "pass"]\ndeps = ["extract"]\n',
        encoding="utf-8",
    )


def logged(window) -> list[tuple[int, str, str]]:
    return [(e.seq, e.kind, e.task_id) for e in window.event_log.model.events]


def check_log_from_the_first(qtbot, session) -> None:
    window = session.window
    tasks = window.bridge.tasks
    qtbot.waitUntil(
        lambda: all(tasks[t].state is TaskState.SUCCEEDED for t in ("extract", "load")),
        timeout=10000,
    )
    qtbot.waitUntil(lambda: ("succeeded", "load") in [(k, t) for _, k, t in logged(window)])
    events = logged(window)
    seqs = [seq for seq, _, _ in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)  # in order, none twice
    assert seqs[0] == 1  # from the very first event
    assert seqs == list(range(1, seqs[-1] + 1))  # and none missing
    # the tasks being added: extract ready at once, load waiting for it
    assert [(k, t) for _, k, t in events[:2]] == [("ready", "extract"), ("pending", "load")]
    assert events[0][0] <= window.bridge.snapshot_seq  # events before the window existed


def test_log_has_the_first_events_without_a_store(qtbot, tmp_path, settings):
    path = tmp_path / "demo.toml"
    write(path)
    session = WorkflowSession(load(path), settings)
    try:
        check_log_from_the_first(qtbot, session)
    finally:
        session.close()


def test_log_has_the_first_events_with_a_store(qtbot, tmp_path, settings):
    path = tmp_path / "demo.toml"
    write(path)
    db = tmp_path / "demo.db"
    session = WorkflowSession(load(path), settings, db_path=db, log_dir=tmp_path / "logs")
    try:
        check_log_from_the_first(qtbot, session)
    finally:
        session.close()


def test_bridge_replays_recorded_events_once_and_detaches_the_recorder(qtbot):
    scheduler = Scheduler(workers=1)
    try:
        early = EarlyEvents()
        early.attach(scheduler)
        a = scheduler.schedule_after("os:getcwd", 3600)
        b = scheduler.schedule_after("os:getcwd", 3600)
        bridge = EngineBridge(scheduler, early=early)
        batches = []
        bridge.eventsArrived.connect(batches.append)
        qtbot.waitUntil(lambda: bridge._early is None)  # every covered event arrived
        assert early._unsubscribe is None  # it listens no more
        scheduler.cancel(b)  # after the snapshot: delivered by the bridge itself

        def seen():
            return [(e.kind, e.task_id) for batch in batches for e in batch]

        qtbot.waitUntil(lambda: ("cancelled", b) in seen())
        assert seen() == [("scheduled", a), ("scheduled", b), ("cancelled", b)]
        seqs = [e.seq for batch in batches for e in batch]
        assert len(seqs) == len(set(seqs)) and seqs == sorted(seqs)
        bridge.close()
    finally:
        scheduler.shutdown(wait=True)


def test_a_resumed_runs_log_starts_with_its_restore_events(qtbot, tmp_path, settings):
    """Resume a run from a real store file: the log's first rows are the restore's
    events (one per task, as restored), numbered on from the stored run's last one."""
    from taskloom.engine.store import SQLiteStore

    path = tmp_path / "demo.toml"
    path.write_text(
        '[workflow]\nname = "demo"\nworkers = 2\n\n'
        f'[tasks.extract]\ncommand = ["{sys.executable}", "-c", "pass"]\n\n'
        f'[tasks.later]\ncommand = ["{sys.executable}", "-c", "pass"]\nafter = "1h"\n',
        encoding="utf-8",
    )
    db, logs = tmp_path / "demo.db", tmp_path / "logs"
    first = WorkflowSession(load(path), settings, db_path=db, log_dir=logs)
    try:
        tasks = first.window.bridge.tasks
        qtbot.waitUntil(lambda: tasks["extract"].state is TaskState.SUCCEEDED, timeout=10000)
    finally:
        first.close()
    store = SQLiteStore(db)
    try:
        last = store.max_seq()
    finally:
        store.close()

    second = WorkflowSession(load(path), settings, db_path=db, log_dir=logs)
    try:
        assert second.resumed
        window = second.window
        qtbot.waitUntil(lambda: window.bridge._early is None)  # every early event arrived
        events = window.event_log.model.events
        assert [(e.seq, e.kind, e.task_id, e.state) for e in events[:2]] == [
            (last + 1, "restored", "extract", TaskState.SUCCEEDED),
            (last + 2, "restored", "later", TaskState.SCHEDULED),
        ]
        seqs = [e.seq for e in events]
        assert seqs == list(range(last + 1, last + 1 + len(seqs)))  # none missing or twice
        model = window.event_log.model
        assert model.index(0, 3).data() == "• restored"
        assert model.index(0, 5).data() == "as succeeded"
    finally:
        second.close()

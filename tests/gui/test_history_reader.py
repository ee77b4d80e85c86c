"""The views never read the run store on the GUI thread: the window's HistoryReader
reads it on its own thread, answers with request ids (a stale answer is dropped),
keeps only the newest waiting request of each kind, reports failures as "unavailable"
and stops with the session. Real SQLite stores where the window is involved."""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest
from PySide6.QtCore import QTimer

from taskloom.engine import ManualClock, StoreError, TaskState
from taskloom.gui.history_reader import HistoryReader
from taskloom.gui.run_history import WindowHistory, WindowRead
from tests.gui.test_app_store import open_session, run_in_the_past, wait_state, write_workflow

S = TaskState
SLOW_READ = 0.3  # seconds each store.attempts() call takes in these tests


def history_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("taskloom-history")]


def slow_attempts(monkeypatch, store, calls: list, delay: float = SLOW_READ):
    """Make the session's store slow to read, and record the thread of every read."""
    real = store.attempts

    def attempts(*args, **kwargs):
        calls.append(threading.current_thread())
        time.sleep(delay)
        return real(*args, **kwargs)

    monkeypatch.setattr(store, "attempts", attempts)


class TickGaps:
    """A 10 ms QTimer; the longest gap between its ticks shows a blocked event loop."""

    def __init__(self):
        self.ticks: list[float] = []
        self.timer = QTimer()
        self.timer.setInterval(10)
        self.timer.timeout.connect(lambda: self.ticks.append(time.monotonic()))
        self.timer.start()

    def stop(self) -> float:
        self.timer.stop()
        return max(b - a for a, b in zip(self.ticks, self.ticks[1:], strict=False))


@pytest.fixture
def two_runs(qtbot, tmp_path, settings):
    """Run 1 of tasks a and b two hours ago; yields run 2's session, both tasks done."""
    path = write_workflow(
        tmp_path, {"a": "print('hello from a')", "b": "print('hello from b')"}, name="two"
    )
    db = tmp_path / "two.db"
    run_in_the_past(db, path, hours=2)
    session = open_session(qtbot, settings, path, db, fresh=True)
    try:
        wait_state(qtbot, session, "a", S.SUCCEEDED)
        wait_state(qtbot, session, "b", S.SUCCEEDED)
        yield session
    finally:
        session.close()


def test_no_store_read_happens_on_the_gui_thread(qtbot, monkeypatch, two_runs):
    session = two_runs
    window = session.window
    calls: list[threading.Thread] = []
    slow_attempts(monkeypatch, session.store, calls)
    window.resize(1400, 900)
    window.show()
    qtbot.waitExposed(window)
    inspector, timeline = window.inspector, window.timeline
    history = timeline.model.history
    history.min_interval = 0.1  # the test need not wait the usual few seconds
    attempts = inspector.attempt_list
    gaps = TickGaps()

    for tid in ("a", "b"):
        window.select_tasks([tid])
        # This run's attempt at once, from memory; the earlier run's once read.
        assert attempts.topLevelItemCount() == 1 and attempts.topLevelItem(0).text(5) == "2"
        assert inspector.history_note.isVisibleTo(inspector)
        assert "loading earlier runs" in inspector.history_note.text()
        qtbot.waitUntil(lambda: attempts.topLevelItemCount() == 2, timeout=5000)
        assert [attempts.topLevelItem(i).text(5) for i in range(2)] == ["1", "2"]
        assert not inspector.history_note.isVisibleTo(inspector)

    # Pan back to run 1: the timeline keeps drawing and adds its bars when read.
    canvas = timeline.canvas
    canvas.set_span(3 * 3600)
    canvas.pan(-2 * 3600)
    left, _right = canvas.window()

    def read_back() -> bool:
        return history.covered is not None and history.covered[0] <= left

    qtbot.waitUntil(read_back, timeout=5000)
    canvas.repaint()
    assert any(tip.startswith("a run 1 · attempt 1") for _r, _t, tip in canvas._hits)
    longest = gaps.stop()

    main = threading.main_thread()
    assert len(calls) >= 3  # a's and b's attempts and at least one window
    assert all(thread is not main for thread in calls), calls
    assert {thread.name.split("_")[0] for thread in calls} == {"taskloom-history"}
    assert longest < SLOW_READ / 2, f"the event loop stalled for {longest * 1000:.0f} ms"


def test_a_stale_answer_is_dropped(qtbot, monkeypatch, two_runs):
    session = two_runs
    window = session.window
    calls: list[threading.Thread] = []
    slow_attempts(monkeypatch, session.store, calls)
    inspector = window.inspector
    reader = window.history_reader
    shown: list[set] = []  # the tasks of the rows listed, each time the list is filled
    fill = inspector._show_attempts

    def show_attempts(rows):
        shown.append({row.task_id for row in rows})
        fill(rows)

    monkeypatch.setattr(inspector, "_show_attempts", show_attempts)
    window.select_tasks(["a"])  # a's read starts...
    window.select_tasks(["b"])  # ...and b is selected before it answers
    attempts = inspector.attempt_list
    qtbot.waitUntil(lambda: attempts.topLevelItemCount() == 2, timeout=5000)
    qtbot.waitUntil(lambda: not reader.busy, timeout=5000)
    qtbot.wait(50)  # any answer still queued is delivered
    assert len(calls) == 2 and reader.reads == 2  # a's read ran, but its answer...
    assert shown[-1] == {"b"} and {"a"} in shown  # ...was never listed under b
    assert all(tasks == {"b"} for tasks in shown[shown.index({"a"}) + 1 :]), shown
    assert "a" not in inspector._stored  # a's answer came too late and was dropped
    attempts.setCurrentItem(attempts.topLevelItem(0))
    text = inspector.output.toPlainText()
    assert "run 1, attempt 1: succeeded" in text and "hello from b" in text


def test_the_reader_stops_with_the_session(qtbot, monkeypatch, two_runs):
    session = two_runs
    calls: list[threading.Thread] = []
    slow_attempts(monkeypatch, session.store, calls)
    session.window.select_tasks(["a"])  # a read is running when the window closes
    qtbot.waitUntil(lambda: bool(calls), timeout=3000)
    assert history_threads()
    session.close()  # joins the reader before the store closes
    assert session.stopped
    assert not history_threads()
    assert session.window.history_reader.closed
    assert session.window.history_reader.request_attempts("a") == 0  # no new reads


class FakeStore:
    """attempts() waits for ``gate`` (when set), then answers or raises ``error``."""

    run = 2

    def __init__(self, error: Exception | None = None):
        self.error = error
        self.gate: threading.Event | None = None
        self.asked: list[dict] = []

    def attempts(self, task_id=None, since=None, limit=200, until=None):
        self.asked.append({"task_id": task_id, "since": since, "until": until})
        if self.gate is not None:
            assert self.gate.wait(5)
        if self.error is not None:
            raise self.error
        return []


@pytest.fixture
def reader_of():
    readers = []

    def make(store):
        reader = HistoryReader(store)
        readers.append(reader)
        return reader

    yield make
    for reader in readers:
        assert reader.join(5)
    assert not history_threads()


@pytest.mark.parametrize(
    "error",
    [
        sqlite3.OperationalError("database is locked"),
        sqlite3.ProgrammingError("Cannot operate on a closed database."),
        StoreError("demo.db: the store is damaged"),
        KeyError("a bug"),  # logged, but the views still get an answer
    ],
    ids=lambda e: type(e).__name__,
)
def test_a_failed_read_answers_unavailable(qtbot, reader_of, error):
    reader = reader_of(FakeStore(error))
    with qtbot.waitSignal(reader.attemptsRead, timeout=3000) as got:
        rid = reader.request_attempts("a", {(2, 1)}, 10)
    assert got.args == [rid, "a", None]
    with qtbot.waitSignal(reader.windowRead, timeout=3000) as got:
        rid = reader.request_window(100.0, 200.0, 50, 0.0)
    assert got.args == [rid, None]


def test_only_the_newest_waiting_request_of_each_kind_is_read(qtbot, reader_of):
    store = FakeStore()
    store.gate = threading.Event()
    reader = reader_of(store)
    answers: list[tuple] = []
    reader.attemptsRead.connect(lambda rid, tid, found: answers.append((rid, tid, found)))
    reader.windowRead.connect(lambda rid, found: answers.append((rid, "window", found)))
    first = reader.request_attempts("a")  # runs, held at the gate
    qtbot.waitUntil(lambda: len(store.asked) == 1, timeout=3000)
    reader.request_attempts("b")  # waits, then is replaced by c
    window = reader.request_window(10.0, 20.0, 5, 0.0)
    last = reader.request_attempts("c")
    assert reader.dropped == 1
    store.gate.set()
    qtbot.waitUntil(lambda: len(answers) == 3, timeout=3000)
    assert {(rid, key) for rid, key, _found in answers} == {
        (first, "a"),
        (window, "window"),
        (last, "c"),
    }
    assert [asked["task_id"] for asked in store.asked] in (["a", None, "c"], ["a", "c", None])
    found = next(f for _rid, key, f in answers if key == "window")
    assert found == WindowRead({}, {}, False, None)


def test_a_window_read_on_its_way_is_not_asked_for_again(qtbot):
    history = WindowHistory(FakeStore(), ManualClock(start=1000.0), min_interval=0.0)
    assert history.needs_read(900.0, 1000.0)
    query = history.plan(900.0, 1000.0)  # reads from 800 (one span of margin)
    # While it is on its way, the same window or one panned within its reach waits for
    # it: asking again would make its answer stale, and slow reads would never land.
    assert not history.needs_read(900.0, 1000.0)
    assert not history.needs_read(850.0, 950.0)
    assert history.needs_read(700.0, 800.0)  # panned further back than it reads
    history.failed(query)  # the store was unavailable: nothing shown, asked again
    assert history.failures == 1 and history.covered is None
    assert history.needs_read(900.0, 1000.0)
    query = history.plan(900.0, 1000.0)
    bars = {"a": [(820.0, 830.0, "succeeded", 1, 1)]}
    history.apply(query, WindowRead(bars, {1: 820.0}, False, 820.0))
    assert history.reads == 1 and history.bars == bars and history.covered == (800.0, 1000.0)
    assert history.pending is None and not history.needs_read(900.0, 1000.0)


def test_stored_attempts_come_back_as_engine_attempts_on_the_scheduler_clock(qtbot, reader_of):
    from taskloom.engine import Attempt, Outcome

    def row(run, number, started):
        return {
            "run": run, "task_id": "a", "number": number, "started": started,
            "ended": started + 1.0, "outcome": "succeeded", "error": None, "traceback": None,
            "output": None, "log_path": None, "exit_code": 0, "worker": None,
        }  # fmt: skip

    class RowStore(FakeStore):
        def attempts(self, task_id=None, since=None, limit=200, until=None):
            return [row(2, 1, 1000.0), row(1, 1, 900.0)]  # newest first, as the store gives

    reader = reader_of(RowStore())
    with qtbot.waitSignal(reader.attemptsRead, timeout=3000) as got:
        rid = reader.request_attempts("a", {(2, 1)}, 10, offset=800.0)
    assert got.args[:2] == [rid, "a"]
    # (2, 1) is known from memory: only run 1's attempt, its times on wall - offset
    expected = Attempt(1, 100.0, 101.0, Outcome.SUCCEEDED, None, None, None, None, 0, None, "a", 1)
    assert got.args[2] == [expected]

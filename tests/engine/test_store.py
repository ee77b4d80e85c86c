"""The SQLite store: a real file, real processes, real kills."""

from __future__ import annotations

import signal
import sqlite3
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from taskloom.engine import Call, Scheduler, TaskState
from taskloom.engine.store import SCHEMA_VERSION, SQLiteStore, StoreError

ROOT = Path(__file__).resolve().parents[2]
JOBS = "tests.engine._store_jobs"


@pytest.fixture
def db(tmp_path):
    return tmp_path / "taskloom.db"


def call(name, log, **kw):
    return Call(f"{JOBS}:record", {"name": name, "log": str(log), **kw})


def log_lines(log: Path) -> list[list[str]]:
    if not log.exists():
        return []
    return [line.split() for line in log.read_text().splitlines()]


# ---------------------------------------------------------------- the file itself
def test_store_file_is_private_and_in_wal_mode(db):
    store = SQLiteStore(db)
    store.close()
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_newer_schema_is_refused_and_left_untouched(db):
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE future (x)")
    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    before = db.read_bytes()
    with pytest.raises(StoreError, match="newer Taskloom"):
        SQLiteStore(db)
    assert db.read_bytes() == before


def test_corrupt_file_is_refused_and_left_untouched(db):
    db.write_bytes(b"this is not a database" * 100)
    before = db.read_bytes()
    with pytest.raises(StoreError, match="not a readable Taskloom store"):
        SQLiteStore(db)
    assert db.read_bytes() == before


def test_foreign_sqlite_file_is_refused(db):
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE customers (name)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="not a Taskloom store"):
        SQLiteStore(db)


def test_unstorable_callable_is_refused_and_engine_unchanged(db):
    store = SQLiteStore(db)
    s = Scheduler(store=store)
    before = s.snapshot()
    with pytest.raises(TypeError, match="cannot be stored"):
        s.schedule(lambda: None, name="lam")
    assert s.snapshot() == before
    s.shutdown()
    store.close()


# ---------------------------------------------------------------- restart
def test_restart_keeps_finished_tasks_finished(db, tmp_path):
    log = tmp_path / "log"
    store = SQLiteStore(db)
    s = Scheduler(workers=2, store=store)
    s.add(call("a", log), name="a")
    s.add(call("b", log, fail_first=True), name="b", deps=["a"])  # one attempt: fails
    s.add(call("c", log), name="c", deps=["b"])
    s.schedule_after(call("later", log), 3600, name="later")
    s.start()
    assert not s.wait(timeout=0.5) or True  # "later" keeps it from settling
    store.flush()
    s.shutdown()
    store.close()
    ran_before = log_lines(log)

    store = SQLiteStore(db)
    s2 = Scheduler(workers=2, store=store)
    states = {t.id: t.state for t in s2.tasks()}
    assert states == {
        "a": TaskState.SUCCEEDED,
        "b": TaskState.FAILED,
        "c": TaskState.SKIPPED,
        "later": TaskState.SCHEDULED,
    }
    assert s2.task("c").deps == ("b",)
    assert [a.outcome for a in s2.attempts("b")] == ["failed"]
    assert s2.attempts("b")[0].error == "RuntimeError: b fails its first attempt"
    entry = s2.upcoming()[0]
    assert entry.task_id == "later" and entry.run_at > s2.clock.now() + 3500
    s2.start()
    s2.shutdown()
    store.close()
    assert log_lines(log) == ran_before  # nothing ran again


def test_retry_after_restart_rearms_skipped_downstream(db, tmp_path):
    log = tmp_path / "log"
    store = SQLiteStore(db)
    with Scheduler(workers=2, store=store) as s:
        s.add(call("a", log, fail_first=True), name="a")
        s.add(call("b", log), name="b", deps=["a"])
        s.wait(10)
    store.close()
    store = SQLiteStore(db)
    with Scheduler(workers=2, store=store) as s:
        assert s.task("b").state is TaskState.SKIPPED
        assert s.retry("a")
        assert s.wait(10)
        assert s.task("a").state is TaskState.SUCCEEDED
        assert s.task("a").attempt == 2
        assert s.task("b").state is TaskState.SUCCEEDED
    store.close()


def _kill_while_blocked(db, log, *, retry: str = "None") -> None:
    """Run task 'blk' in a child process on ``db`` and SIGKILL the child mid-attempt."""
    script = (
        "import sys; from taskloom.engine import *; from taskloom.engine.store import SQLiteStore\n"
        f"s = Scheduler(store=SQLiteStore({str(db)!r}))\n"
        "if 'blk' not in {t.id for t in s.tasks()}:\n"
        f"    s.add(Call('{JOBS}:block_until_cancelled', {{'log': {str(log)!r}}}), name='blk',"
        f" retry={retry})\n"
        "s.start(); s.wait()\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT)
    try:
        _wait_for_line(log, "start block", proc, count=len(log_lines(log)) + 1)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


def test_attempt_cut_off_by_a_kill_is_lost_and_runs_again_without_using_the_budget(db, tmp_path):
    log = tmp_path / "log"
    _kill_while_blocked(db, log, retry="RetryPolicy(max_attempts=2, base=0.01, jitter=0)")
    store = SQLiteStore(db)
    s = Scheduler(store=store)
    info = s.task("blk")
    assert info.state is TaskState.READY  # runs again at once: the kill was not its failure
    assert info.attempt == 1
    (lost,) = s.attempts("blk")
    assert lost.outcome == "lost" and lost.error.startswith("lost: Taskloom stopped")
    assert [row["outcome"] for row in store.attempts("blk")] == ["lost"]
    s.shutdown()
    store.close()


def test_a_lost_attempt_without_retry_policy_does_not_fail_the_task(db, tmp_path):
    log = tmp_path / "log"
    _kill_while_blocked(db, log)
    store = SQLiteStore(db)
    s = Scheduler(store=store)
    try:
        assert s.task("blk").state is TaskState.READY
    finally:
        s.shutdown()
        store.close()


def test_a_task_lost_three_times_in_a_row_fails(db, tmp_path):
    log = tmp_path / "log"
    for _ in range(3):
        _kill_while_blocked(db, log)
    store = SQLiteStore(db)
    s = Scheduler(store=store)
    try:
        info = s.task("blk")
        assert info.state is TaskState.FAILED
        assert info.error == "lost 3 times: it may be what brings Taskloom down"
        assert [a.outcome for a in s.attempts("blk")] == ["lost"] * 3
        assert [a.number for a in s.attempts("blk")] == [1, 2, 3]
    finally:
        s.shutdown()
        store.close()


def test_code_that_brings_the_process_down_at_once_is_lost_three_times_then_fails(db):
    # The call kills its owner before any commit could carry its start row: only the
    # in-flight slot (engine/_store/inflight.py) tells the next owner it was running.
    script = (
        "from taskloom.engine import *; from taskloom.engine.store import SQLiteStore\n"
        f"st = SQLiteStore({str(db)!r}); s = Scheduler(store=st)\n"
        "if 'down' not in {t.id for t in s.tasks()}:\n"
        f"    s.add(Call('{JOBS}:bring_the_process_down'), name='down')\n"
        # The task's row on disk first (a workflow file adds it again anyway): without
        # it a loaded machine killed the first process before the row was committed,
        # and the next one added the task afresh (lost twice, not three times).
        "    st.flush()\n"
        "s.start(); s.wait()\n"
    )
    for _ in range(3):
        proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, timeout=60)
        assert proc.returncode == -signal.SIGKILL
    store = SQLiteStore(db)
    s = Scheduler(store=store)
    try:
        assert s.task("down").state is TaskState.FAILED
        assert [a.outcome for a in s.attempts("down")] == ["lost"] * 3
    finally:
        s.shutdown()
        store.close()
    assert not Path(f"{db}-inflight").exists()  # a clean close leaves no slot file


def test_a_clean_run_of_in_process_code_leaves_nothing_to_replay(db):
    store = SQLiteStore(db)
    with Scheduler(workers=2, store=store) as s:
        for i in range(20):
            s.add(Call(f"{JOBS}:noop"), name=f"n{i}")
        s.start()
        assert s.wait(30)
        assert Path(f"{db}-inflight").exists()  # the owner's slots, while it owns the store
    store.close()
    store = SQLiteStore(db)
    with Scheduler(store=store) as s:
        assert {a.outcome for t in s.tasks() for a in s.attempts(t.id)} == {"succeeded"}
    store.close()


def _wait_for_row(db: Path, query: str, proc: subprocess.Popen, timeout: float = 20) -> None:
    """Poll the store (read-only, beside its owner) until ``query`` finds a row."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        reader = SQLiteStore.reader(db)
        try:
            if reader._query(query):
                return
        finally:
            reader.close()
        if proc.poll() is not None:
            raise AssertionError(f"child exited with {proc.returncode} before {query!r}")
        try:
            proc.wait(timeout=0.02)
        except subprocess.TimeoutExpired:
            pass
    raise AssertionError(f"no row for {query!r} within {timeout} s")


def _wait_for_line(
    log: Path, prefix: str, proc: subprocess.Popen, timeout: float = 20, count: int = 1
) -> None:
    """Block on the child until ``log`` has ``count`` lines starting with ``prefix``."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = log.read_text().splitlines() if log.exists() else []
        if sum(line.startswith(prefix) for line in lines) >= count:
            return
        if proc.poll() is not None:
            raise AssertionError(f"child exited with {proc.returncode} before writing {prefix!r}")
        try:
            proc.wait(timeout=0.02)
        except subprocess.TimeoutExpired:
            pass
    raise AssertionError(f"child never wrote {prefix!r}")


# ---------------------------------------------------------------- the writer
def test_writer_keeps_event_order_per_task_under_a_burst(db):
    store = SQLiteStore(db)
    s = Scheduler(workers=4, store=store)
    names = [f"n{i}" for i in range(7000)]

    def produce(chunk):
        for name in chunk:
            s.add(Call(f"{JOBS}:noop"), name=name)

    s.start()
    threads = [threading.Thread(target=produce, args=(names[i::4],)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert s.wait(120)
    s.shutdown()
    events = store.events(limit=100_000)
    store.close()
    assert len(events) >= 3 * len(names)  # ready, running, succeeded: >= 21,000 changes
    seqs = [e[0] for e in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    per_task: dict[str, list[str]] = {}
    for _seq, task_id, kind, *_ in events:
        per_task.setdefault(task_id, []).append(kind)
    assert set(per_task) == set(names)
    assert all(kinds == ["ready", "running", "succeeded"] for kinds in per_task.values())


def test_a_command_is_on_disk_before_it_starts_a_call_needs_no_commit_of_its_own(
    db, tmp_path, monkeypatch
):
    """A command's attempt is committed before the command starts (recovery must find
    it); in-process code dies with the process, so its start costs no commit."""
    from taskloom.engine.command import Command

    flushes: list[str] = []
    original = SQLiteStore.flush

    def counting_flush(self, timeout=None):
        if threading.current_thread().name.startswith("taskloom-worker"):
            flushes.append(threading.current_thread().name)  # before an attempt's code
        return original(self, timeout)

    monkeypatch.setattr(SQLiteStore, "flush", counting_flush)
    store = SQLiteStore(db)
    s = Scheduler(workers=1, store=store, log_dir=str(tmp_path))
    for i in range(5):
        s.add(Call(f"{JOBS}:noop"), name=f"call{i}")
    s.start()
    assert s.wait(20)
    calls = len(flushes)
    for i in range(5):
        s.add(Command(["true"]), name=f"cmd{i}")
    assert s.wait(20)
    commands = len(flushes) - calls
    s.shutdown()
    store.close()
    assert calls == 0, flushes
    assert commands == 5  # one durable start each


def test_a_lost_call_whose_row_never_reached_the_disk_keeps_the_earlier_outcome(db, tmp_path):
    """In-process code starts without a commit of its own: if the process dies before
    its attempt's row is written, recovery adds the lost attempt as a new record and
    the earlier, finished attempt keeps its outcome."""
    log = tmp_path / "log"
    script = (
        "from taskloom.engine import *; from taskloom.engine.store import SQLiteStore\n"
        f"s = Scheduler(store=SQLiteStore({str(db)!r}))\n"
        f"s.add(Call('{JOBS}:fail_then_block', {{'log': {str(log)!r}}}), name='t',"
        " retry=RetryPolicy(max_attempts=3, base=0.01, jitter=0))\n"
        "s.start(); s.wait()\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT)
    try:
        _wait_for_line(log, "start block", proc)
        _wait_for_row(db, "SELECT 1 FROM attempts WHERE number = 1 AND outcome = 'failed'", proc)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    conn = sqlite3.connect(db)  # as if attempt 2's row had not been committed yet
    conn.execute("DELETE FROM attempts WHERE task_id = 't' AND number = 2")
    # Its "running" row is held with its start row for START_DELAY, and a loaded
    # machine may not have committed its "ready" row yet either.
    assert conn.execute("SELECT state FROM tasks WHERE id = 't'").fetchone()[0] in (
        "running",
        "ready",
        "retry_wait",
    )
    conn.commit()
    conn.close()
    store = SQLiteStore(db)
    s = Scheduler(store=store)
    try:
        assert [(a.number, a.outcome) for a in s.attempts("t")] == [(1, "failed"), (2, "lost")]
        assert s.task("t").state is TaskState.READY
        assert [r["outcome"] for r in store.attempts("t")][::-1] == ["failed", "lost"]
    finally:
        s.shutdown()
        store.close()


def test_a_success_on_disk_whose_task_row_is_older_is_not_run_again(db, tmp_path):
    """A short call's "running" row is held with its start row and dropped when its
    end row comes: a kill after the success is committed but before the task's
    outcome row is leaves a task row written before the attempt began. Recovery
    reads the attempt's row as the truth: succeeded, not run again (before: READY,
    run a second time), and its dependent runs."""
    log = tmp_path / "log"
    store = SQLiteStore(db)
    with Scheduler(store=store) as s:
        s.add(call("a", log), name="a")
        s.wait()
    store.close()
    conn = sqlite3.connect(db)  # as if the rows after its "ready" had not been committed
    conn.execute("UPDATE tasks SET state = 'ready', attempt = 0, successes = 0 WHERE id = 'a'")
    conn.commit()
    conn.close()
    store = SQLiteStore(db)
    s = Scheduler(store=store)
    s.add(call("b", log), name="b", deps=["a"])
    try:
        assert s.task("a").state is TaskState.SUCCEEDED
        s.start()
        s.wait()
        assert [line[1] for line in log_lines(log) if line[0] == "start"] == ["a", "b"]
        assert [(a.number, a.outcome) for a in s.attempts("a")] == [(1, "succeeded")]
    finally:
        s.shutdown()
        store.close()


def test_flush_waits_for_every_op_across_capped_commits_and_feed_writes_go_first(db, monkeypatch):
    """More engine ops than one commit takes (MAX_BATCH) are committed in several
    transactions; a feed write queued last rides with the first, and flush()
    returns only once every op queued before it is on disk."""
    from taskloom.engine._store import writer as store_module

    monkeypatch.setattr(store_module, "MAX_BATCH", 10)
    store = SQLiteStore(db)
    store.flush()
    committed: list[list[str]] = []
    original = store._commit

    def recording(batch):
        committed.append([op[0] for op in batch])
        original(batch)

    monkeypatch.setattr(store, "_commit", recording)
    with store._cond:  # queue everything before the writer can take any of it
        for n in range(25):
            store._queue.append(("delete", f"t{n}"))
            store._queued[0] += 1
        store.put_feed(lambda conn: conn.execute("DELETE FROM feed_tasks"))
    assert store.flush(10)
    store.close()
    assert [len(kinds) for kinds in committed] == [11, 10, 5]
    assert committed[0][0] == "feed"
    assert store._committed == [25, 0, 1]


def test_a_feed_time_that_is_infinite_reaches_sqlite_as_one():
    import math

    from taskloom.engine.feed import _json

    text = _json([[1, math.inf, -math.inf, math.nan, 0.25, "words"]])
    conn = sqlite3.connect(":memory:")
    row = conn.execute(
        "SELECT value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5 FROM json_each(?)",
        (text,),
    ).fetchone()
    assert row == (math.inf, -math.inf, None, 0.25, "words")


def test_commit_listeners_run_after_the_batchs_on_commit_callbacks(db):
    """The engine's on_commit only notes a run; its commit listener finishes the
    noted runs together, so it must run after every callback of the batch."""
    store = SQLiteStore(db)
    calls: list[str] = []
    store.add_commit_listener(lambda: calls.append("listener"))
    row = ("t", 1, 0.0, 1.0, "succeeded", None, None, None, None, None, None)
    store.put_attempt(row, on_commit=lambda: calls.append("a"))
    store.put_attempt(row[:1] + (2,) + row[2:], on_commit=lambda: calls.append("b"))
    store.flush()
    store.close()
    # One batch or two: each callback is followed by a listener call, none precedes them.
    assert calls[0] == "a" and calls[-1] == "listener"
    assert "listener" in calls[calls.index("b") :]
    assert [c for c in calls if c != "listener"] == ["a", "b"]


def test_a_clock_without_wall_seconds_still_stamps_rows(db):
    """``wall_seconds`` is a shortcut the engine's clocks have, not part of ``Clock``."""
    import time
    from datetime import UTC, datetime

    from taskloom.engine import SyncExecutor

    class WallOnly:
        manual = False

        def now(self) -> float:
            return time.monotonic()

        def wall(self) -> datetime:
            return datetime.now(UTC)

    store = SQLiteStore(db)
    s = Scheduler(clock=WallOnly(), executor=SyncExecutor(), store=store)
    s.add(Call(f"{JOBS}:noop"), name="t")
    before = time.time()
    assert s.wait(10)
    s.shutdown()
    events = store.events(limit=10)
    store.close()
    assert [e[2] for e in events] == ["ready", "running", "succeeded"]
    assert all(abs(e[4] - before) < 60 for e in events)  # epoch seconds, not monotonic


def test_inflight_slots_grow_and_what_is_left_behind_is_what_still_runs(tmp_path):
    from taskloom.engine._store.inflight import INITIAL_SLOTS, InflightSlots, left_behind

    path = tmp_path / "run.db-inflight"
    slots = InflightSlots(path)
    taken = [
        slots.note((1, f"t{i}", 1, 10.0 + i, None, "running")) for i in range(3 * INITIAL_SLOTS)
    ]
    assert sorted(taken) == list(range(3 * INITIAL_SLOTS))  # the mapping grew twice
    for slot in taken[::2]:
        slots.ended(slot)
    left = left_behind(path)  # read as the next owner would, while this one still holds it
    assert sorted(row[1] for row in left) == sorted(f"t{i}" for i in range(1, 3 * INITIAL_SLOTS, 2))
    assert slots.note((1, "x" * 2000, 1, 0.0)) is None  # too long: the caller flushes instead
    slots.close(remove=True)
    assert not path.exists() and left_behind(path) == []

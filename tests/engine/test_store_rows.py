"""What a run costs the store in rows: a short in-process attempt is one attempts row
(its start row, held back, is replaced by its end; its success is not written twice),
and a held start row still reaches the disk on a flush or after ``START_DELAY``."""

from __future__ import annotations

import time

from taskloom.engine import Call, Scheduler
from taskloom.engine.store import SQLiteStore

JOBS = "tests.engine._store_jobs"


def test_a_short_call_is_one_attempts_row_and_three_event_rows(tmp_path, monkeypatch):
    from taskloom.engine._store import writer

    # Held long enough that no start row is written before its end, however loaded
    # the machine: the count does not depend on timing.
    monkeypatch.setattr(writer, "START_DELAY", 60.0)
    store = SQLiteStore(tmp_path / "run.db")
    count = 200
    with Scheduler(workers=2, store=store) as s:
        for _ in range(count):
            s.add(Call(f"{JOBS}:noop"))
        s.wait()
        store.flush()
        written = dict(store.rows_written)
        attempts = store.attempts(limit=10 * count)
    store.close()
    # Before: two a task (the start row, then the end row queued twice, coalesced once).
    assert written["attempts"] == count, written
    assert written["events"] == 3 * count, written  # ready, running, succeeded: all kept
    assert len(attempts) == count
    assert {row["outcome"] for row in attempts} == {"succeeded"}
    # the stored record is the one reported: ended when the code returned, after it started
    assert all(row["ended"] >= row["started"] for row in attempts)


def test_a_held_start_row_is_written_by_a_flush_and_after_its_delay(tmp_path):
    from taskloom.engine._store.writer import START_DELAY

    db = tmp_path / "run.db"
    log = tmp_path / "log"
    store = SQLiteStore(db)
    with Scheduler(workers=1, store=store) as s:
        s.add(Call(f"{JOBS}:block_until_cancelled", {"log": str(log)}), name="block")
        deadline = time.monotonic() + 30
        while not log.exists() and time.monotonic() < deadline:
            time.sleep(0.01)  # polling a real worker, with a deadline
        assert log.exists()
        reader = SQLiteStore.reader(db)
        try:
            # Without a flush the start row reaches the disk within START_DELAY (and a
            # commit): the writer wakes for it.
            deadline = time.monotonic() + START_DELAY + 10
            while not reader.attempts("block") and time.monotonic() < deadline:
                time.sleep(0.01)
            assert [row["outcome"] for row in reader.attempts("block")] == ["running"]
        finally:
            reader.close()
        s.cancel("block")
        s.wait()
    store.close()


def test_a_flush_writes_a_held_start_row_at_once(tmp_path):
    store = SQLiteStore(tmp_path / "run.db")
    row = ("t", 1, 1.0, None, "running", None, None, None, None, None, None)
    store.put_attempt(row, deferred=True)
    assert store.flush(10)
    assert [r["outcome"] for r in store.attempts("t")] == ["running"]
    end = ("t", 1, 1.0, 2.0, "succeeded", None, None, None, None, None, None)
    store.put_attempt(("t", 2, *row[2:]), deferred=True)
    store.put_attempt(("t", 2, *end[2:]))  # replaces the held start of attempt 2
    assert store.flush(10)
    assert store.rows_written["attempts"] == 2
    assert [r["outcome"] for r in store.attempts("t")] == ["succeeded", "running"]
    store.close()


def tell(value: str) -> None:
    """A call whose output holds ``value`` (a secret_env value in the test below)."""
    from taskloom.engine import current_run

    run = current_run()
    assert run is not None
    run.output = f"the token is {value}"


def test_a_succeeded_calls_one_row_has_its_secret_masked(tmp_path):
    """The row written before the success is reported is the attempt's final record:
    secret_env values are masked in it, in the store and in memory."""
    import os

    from taskloom.engine import secret_env

    value = "tl-secret-" + os.urandom(6).hex()
    store = SQLiteStore(tmp_path / "run.db")
    secret_env.provide({"API_TOKEN": value})
    try:
        with Scheduler(workers=1, store=store) as s:
            s.add(Call("tests.engine.test_store_rows:tell", {"value": value}), name="tell")
            s.wait()
            (attempt,) = s.attempts("tell")
            store.flush()
            rows = store.attempts("tell")
    finally:
        secret_env.forget()
        store.close()
    assert attempt.outcome == "succeeded" and attempt.output == "the token is ***"
    assert [row["output"] for row in rows] == ["the token is ***"]


def test_a_short_call_costs_one_tasks_update_one_attempts_row_and_two_events(tmp_path, monkeypatch):
    """Statements per task on the store's connection while no-op calls run (their
    ready rows written before): the "running" update of the task row is held with the
    start row and dropped with it, so the task row is written once, with its outcome.
    Before: two tasks updates a task (running, then succeeded)."""
    from taskloom.engine._store import writer

    monkeypatch.setattr(writer, "START_DELAY", 60.0)  # no start row is due during the run
    store = SQLiteStore(tmp_path / "run.db")
    count = 300
    statements: dict[str, int] = {}

    def traced(sql: str) -> None:
        words = sql.split()
        if words[0] == "UPDATE" or words[:2] == ["INSERT", "INTO"]:
            table = words[1] if words[0] == "UPDATE" else words[2]
            statements[table] = statements.get(table, 0) + 1

    s = Scheduler(workers=2, store=store)
    for _ in range(count):
        s.add(Call(f"{JOBS}:noop"))
    store.flush()
    store._conn.set_trace_callback(traced)
    s.start()
    s.wait()
    store.flush()
    store._conn.set_trace_callback(None)
    s.shutdown()
    rows = store._conn.execute("SELECT state, attempt, successes FROM tasks").fetchall()
    store.close()
    assert statements == {"tasks": count, "attempts": count, "events": 2 * count}, statements
    assert set(rows) == {("succeeded", 1, 1)}


def test_a_long_calls_running_row_reaches_the_disk_with_its_start_row(tmp_path):
    """The held "running" update is written with its start row once that is due."""
    from taskloom.engine._store.writer import START_DELAY

    db = tmp_path / "run.db"
    log = tmp_path / "log"
    store = SQLiteStore(db)
    with Scheduler(workers=1, store=store) as s:
        s.add(Call(f"{JOBS}:block_until_cancelled", {"log": str(log)}), name="block")
        reader = SQLiteStore.reader(db)
        try:
            deadline = time.monotonic() + START_DELAY + 30
            state = None
            while time.monotonic() < deadline:  # polling a real worker, with a deadline
                found = reader._query("SELECT state FROM tasks WHERE id = 'block'", ())
                state = found[0][0] if found else None
                if state == "running" and reader.attempts("block"):
                    break
                time.sleep(0.01)
            assert state == "running"
            assert [row["outcome"] for row in reader.attempts("block")] == ["running"]
        finally:
            reader.close()
        s.cancel("block")
        s.wait()
    store.close()


def test_the_journals_rows_are_the_records_rows(tmp_path):
    """``Journal.persist_state`` and ``attempt_row`` build their rows in one go; they
    are the rows ``StateRow`` and ``Attempt.to_row`` describe, for every kind of
    column value (a cron cursor, a run_at, consumed successes, an error, paused)."""
    from datetime import UTC, datetime

    from taskloom.engine import RetryPolicy
    from taskloom.engine._core.task import Task
    from taskloom.engine._store.journal import Journal
    from taskloom.engine._store.records import StateRow
    from taskloom.engine.clock import ManualClock
    from taskloom.engine.models import Attempt, Outcome
    from taskloom.engine.states import TaskState

    class Recording(SQLiteStore):
        def update_task(self, row, event, hold=False):
            self.rows.append((row, event))
            super().update_task(row, event, hold)

    store = Recording(tmp_path / "run.db")
    store.rows = []
    clock = ManualClock()
    journal = Journal(store, clock)

    def task(name, **fields):
        made = Task(name, Call(f"{JOBS}:noop"), order=0, priority=0, retry=RetryPolicy(),
                    timeout=None, trigger_rule="all_success", run_at=None)  # fmt: skip
        for key, value in fields.items():
            setattr(made, key, value)
        return made

    tasks = [
        task("plain", state=TaskState.READY),
        task("timed", state=TaskState.SCHEDULED, run_at=clock.now() + 30.5, attempt=2),
        task("cron", state=TaskState.SCHEDULED, cron_next=datetime(2030, 1, 2, 3, 4, tzinfo=UTC)),
        task("used", state=TaskState.FAILED, consumed={"a": 2}, error="boom", paused=True),
    ]
    for seq, each in enumerate(tasks, 1):
        journal.persist_state(seq, each, "changed", None)
        row, event = store.rows[-1]
        assert row == StateRow.of(each, journal.to_wall).update_row(each.id)
        assert event == (seq, each.id, "changed", each.state.kind, clock.wall_seconds(),
                         each.attempt, None)  # fmt: skip
    record = Attempt(3, clock.now() - 2, clock.now(), Outcome.FAILED, "e", "tb", "out",
                     "log", 1, "w")  # fmt: skip
    assert journal.attempt_row(tasks[0], record) == record.to_row("plain", journal.to_wall)
    store.close()

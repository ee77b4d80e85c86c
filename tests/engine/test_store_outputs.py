"""The store keeps what succeeded attempts gave their dependents (table ``outputs``)."""

from __future__ import annotations

import sqlite3

from taskloom.engine.store import SQLiteStore


def test_outputs_are_kept_per_run_and_attempt_and_pruned_with_their_run(tmp_path):
    db = tmp_path / "s.db"
    store = SQLiteStore(db)
    store.put_outputs("extract", 1, '{"rows": "17"}')
    store.put_outputs("extract", 2, '{"rows": "18"}')
    store.flush()
    store.close()
    store = SQLiteStore(db)  # the same run, reopened (a resumed run)
    assert store.outputs() == {"extract": {1: '{"rows": "17"}', 2: '{"rows": "18"}'}}
    first = store.run
    store.new_run()
    assert store.outputs() == {} and store.outputs(first) != {}
    store.prune_runs(keep_runs=1, keep_logs=1)
    assert store.outputs(first) == {}
    store.close()


def test_a_store_of_the_schema_before_gets_the_table(tmp_path):
    db = tmp_path / "old.db"
    SQLiteStore(db).close()
    conn = sqlite3.connect(db)
    conn.execute("DROP TABLE outputs")  # as schema 4 had it
    conn.execute("ALTER TABLE attempts DROP COLUMN jitter")
    conn.execute("PRAGMA user_version = 4")
    conn.commit()
    conn.close()
    store = SQLiteStore(db)
    store.put_outputs("a", 1, "{}")
    store.flush()
    assert store.outputs() == {"a": {1: "{}"}}
    assert store.jitter_delays() == {}
    store.close()

"""A store opened for reading (``SQLiteStore.reader``) is a ``StoreReader``: it
answers the queries beside a live owner and has no write to call, for mypy too."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from taskloom.engine import Call, Scheduler
from taskloom.engine.store import SQLiteStore, StoreReader

ROOT = Path(__file__).resolve().parents[2]
JOBS = "tests.engine._store_jobs"
WRITES = (
    "put_task", "update_task", "put_attempt", "put_process", "delete_task", "put_feed",
    "flush", "set_meta", "new_run", "forget_tasks", "prune_runs", "prune_attempts",
    "note_running", "hold",
)  # fmt: skip


def test_a_reader_answers_beside_the_owner_and_has_no_writes(tmp_path):
    db = tmp_path / "run.db"
    owner = SQLiteStore(db)
    with Scheduler(store=owner) as s:
        s.add(Call(f"{JOBS}:noop"), name="a")
        s.wait()
        owner.flush()  # the success's event row is queued once the success is reported
        reader = SQLiteStore.reader(db)
        try:
            assert type(reader) is StoreReader
            assert [row["outcome"] for row in reader.attempts("a")] == ["succeeded"]
            assert [record["id"] for record in reader.load_tasks()] == ["a"]
            assert reader.max_seq() == owner.max_seq() > 0
            assert [name for name in WRITES if hasattr(reader, name)] == []
        finally:
            reader.close()
    owner.close()
    assert [name for name in WRITES if not hasattr(owner, name)] == []


@pytest.mark.slow  # mypy over the engine: about half a minute
def test_mypy_refuses_a_write_on_a_reader(tmp_path):
    snippet = tmp_path / "uses_a_reader.py"
    snippet.write_text(
        "from engine.store import SQLiteStore  # as mypy sees the checkout\n"
        "reader = SQLiteStore.reader('run.db')\n"
        "reader.attempts('a')\n"
        "reader.put_task(('a',))\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"),
         "--follow-imports=silent", str(snippet)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert '"StoreReader" has no attribute "put_task"' in result.stdout, result.stdout
    assert "Found 1 error" in result.stdout, result.stdout

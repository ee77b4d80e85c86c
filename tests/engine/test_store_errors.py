"""A store that cannot be used is one clear line naming its path and the problem,
from the library, `taskloom run` and `taskloom history` alike (exit code 2)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from taskloom.engine import Call, Scheduler
from taskloom.engine.store import SQLiteStore, StoreError

ROOT = Path(__file__).resolve().parents[2]


def open_store_as_a_user(path: Path) -> str:
    """Open a store in a child that file modes apply to (root, here, drops its power
    to override them), and return what ``StoreError`` said."""
    code = (
        "import sys\n"
        "from taskloom.engine.store import SQLiteStore, StoreError\n"
        "try:\n"
        "    SQLiteStore(sys.argv[1]).close()\n"
        "except StoreError as exc:\n"
        "    print(exc)\n"
    )
    prefix = []
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: file modes do not apply")
        prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
    result = subprocess.run(
        [*prefix, sys.executable, "-c", code, str(path)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    return result.stdout.strip()


def finished_store(path: Path) -> None:
    store = SQLiteStore(path)
    s = Scheduler(store=store)
    s.add(Call("builtins:print"), name="p")
    s.start()
    assert s.wait(10)
    s.shutdown()
    store.close()


def taskloom(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "taskloom", *map(str, args)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )


def workflow(tmp_path: Path) -> Path:
    path = tmp_path / "flow.toml"
    path.write_text('[tasks.p]\ncommand = ["true"]\n')
    return path


def one_line(result: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_db_under_a_regular_file(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreError, match=rf"^{blocker}/run.db: .*{blocker} is not a folder"):
        SQLiteStore(blocker / "run.db")
    result = taskloom("run", workflow(tmp_path), "--db", blocker / "run.db")
    assert result.returncode == 2
    assert "is not a folder" in one_line(result)


def test_a_new_store_in_a_read_only_folder(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        said = open_store_as_a_user(folder / "run.db")
    finally:
        folder.chmod(0o700)
    assert said == f"{folder / 'run.db'}: cannot create the store: {folder} is not writable"


def test_a_store_missing_a_table_is_damaged(tmp_path):
    db = tmp_path / "run.db"
    finished_store(db)
    conn = sqlite3.connect(db)
    conn.execute("DROP TABLE attempts")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match=rf"^{db}: the store is damaged"):
        SQLiteStore(db)
    history = taskloom("history", workflow(tmp_path), "--db", db)
    assert history.returncode == 2
    assert one_line(history).startswith(f"{db}: the store is damaged")
    run = taskloom("run", workflow(tmp_path), "--db", db)
    assert run.returncode == 2
    assert one_line(run).startswith(f"{db}: the store is damaged")


@pytest.mark.parametrize(
    "damage",
    [
        "UPDATE tasks SET state = 'bogus'",
        'UPDATE tasks SET spec = \'{"action": {"call": "builtins:print"}}\'',
        "UPDATE tasks SET spec = 'not json'",
    ],
    ids=["state", "spec-key", "spec-json"],
)
@pytest.mark.slow
def test_damaged_rows_are_named_as_store_damage_not_a_file_problem(tmp_path, damage):
    db = tmp_path / "run.db"
    path = tmp_path / "flow.toml"
    path.write_text('[tasks.p]\ncommand = ["true"]\nafter = "1h"\n')
    unfinished = taskloom("run", path, "--db", db, "--for", "0.2s")
    assert unfinished.returncode == 1, unfinished.stderr
    conn = sqlite3.connect(db)
    conn.execute(damage)
    conn.commit()
    conn.close()
    store = SQLiteStore(db)
    try:
        with pytest.raises(StoreError, match=rf"^{db}: the store is damaged"):
            Scheduler(store=store)
    finally:
        store.close()
    result = taskloom("run", path, "--db", db)
    assert result.returncode == 2
    line = one_line(result)
    assert line.startswith(f"{db}: the store is damaged") and str(path) not in line


def test_a_read_only_store_from_a_finished_run(tmp_path):
    db = tmp_path / "run.db"
    finished_store(db)
    for path in tmp_path.glob("run.db*"):
        path.chmod(0o400)
    try:
        said = open_store_as_a_user(db)
    finally:
        for path in tmp_path.glob("run.db*"):
            path.chmod(0o600)
    assert said.startswith(f"{db}: ") and "read-only" in said, said


def test_history_of_a_store_that_is_not_one(tmp_path):
    db = tmp_path / "run.db"
    db.write_text(json.dumps({"not": "sqlite"}) * 100)
    result = taskloom("history", workflow(tmp_path), "--db", db)
    assert result.returncode == 2
    assert one_line(result).startswith(f"{db}: not a readable Taskloom store")


def test_a_call_whose_arguments_cannot_be_stored_is_refused_before_it_is_added(tmp_path):
    store = SQLiteStore(tmp_path / "run.db")
    s = Scheduler(store=store)
    try:
        with pytest.raises(TypeError, match="cannot be stored: its arguments must be plain"):
            s.add(Call("builtins:print", {"x": object()}), name="p")
        assert s.tasks() == []  # nothing half-added
    finally:
        s.shutdown()
        store.close()

"""Files in their place: task logs beside the workflow's store, pruned with its old
runs; a store that keeps its last runs and stops growing; no temp folders left."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from taskloom import places
from tests.test_cli import ENV, EXAMPLES, ROOT, private_store_dir, taskloom, write  # noqa: F401


@pytest.fixture
def private_tmp(tmp_path):
    folder = tmp_path / "tmp"
    folder.mkdir()
    return folder


def _runs_dir(tmp_path: Path) -> Path:
    return tmp_path / "xdg-data" / "taskloom" / "runs"


def test_run_writes_logs_beside_its_store_and_no_temp_folder(tmp_path, private_tmp):
    path = write(tmp_path, '[tasks.say]\ncommand = ["sh", "-c", "echo hello; exit 3"]\n')
    result = taskloom("run", path, TMPDIR=str(private_tmp))
    assert result.returncode == 1
    (store,) = _runs_dir(tmp_path).glob("*.db")
    logs = _runs_dir(tmp_path) / "logs" / store.stem
    assert f"logs: {logs}" in result.stdout
    (log,) = logs.glob("say-1-*.log")
    assert log.read_text() == "hello\n"
    assert f"log: {log}" in result.stdout
    assert list(private_tmp.iterdir()) == []


@pytest.mark.slow
def test_a_screenshot_leaves_no_temp_folder(tmp_path, private_tmp):
    picture = tmp_path / "shot.png"
    env = {**ENV, "QT_QPA_PLATFORM": "offscreen", "TMPDIR": str(private_tmp)}
    shot = subprocess.run(
        [sys.executable, "-m", "taskloom", EXAMPLES / "etl.toml", "--screenshot", picture],
        cwd=ROOT,
        env={**env, "XDG_CONFIG_HOME": str(tmp_path / "config")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shot.returncode == 0, shot.stderr
    assert picture.exists()
    assert list(private_tmp.iterdir()) == []
    assert not (tmp_path / "xdg-data").exists()  # a throwaway store, not the user's


def _size(store: Path) -> int:
    wal = store.with_name(store.name + "-wal")
    return store.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


@pytest.mark.slow
def test_the_store_keeps_its_last_runs_and_stops_growing(tmp_path):
    config = tmp_path / "config"
    (config / "taskloom").mkdir(parents=True)
    (config / "taskloom" / "settings.toml").write_text("keep_runs = 3\nkeep_logs = 2\n")
    # 40 tasks a run: about 12 kB of attempts and events, enough to need new pages
    tasks = "".join(f'[tasks.t{i}]\ncommand = ["sh", "-c", "echo {i}"]\n' for i in range(40))
    path = write(tmp_path, tasks)
    sizes = []
    for _ in range(3 + 5):
        result = taskloom("run", path, XDG_CONFIG_HOME=str(config))
        assert result.returncode == 0, result.stdout + result.stderr
        (store,) = _runs_dir(tmp_path).glob("*.db")
        sizes.append(_size(store))
    per_run = (sizes[2] - sizes[0]) / 2  # while it has fewer runs than it keeps
    assert per_run >= 4096, sizes
    # Then freed pages are reused: over the last four runs it grows less than one
    # run's worth (a page now and then, as free pages fragment), not four.
    assert sizes[-1] - sizes[-5] < per_run, sizes
    history = json.loads(taskloom("history", path, "--json", "--limit", "1000").stdout)
    assert sorted({row["run"] for row in history["attempts"]}) == [6, 7, 8]
    with sqlite3.connect(store) as conn:
        assert conn.execute("SELECT DISTINCT run FROM events ORDER BY run").fetchall() == [
            (6,),
            (7,),
            (8,),
        ]
    logged = [row for row in history["attempts"] if row["log_path"]]
    assert sorted({row["run"] for row in logged}) == [7, 8]  # the last 2 runs' logs
    on_disk = sorted((_runs_dir(tmp_path) / "logs" / store.stem).glob("*.log"))
    assert sorted(str(p) for p in on_disk) == sorted(row["log_path"] for row in logged)
    assert len(on_disk) == 2 * 40


def test_bad_retention_settings_are_refused_naming_the_file(tmp_path):
    config = tmp_path / "config"
    (config / "taskloom").mkdir(parents=True)
    settings = config / "taskloom" / "settings.toml"
    settings.write_text("keep_runs = 0\n")
    path = write(tmp_path, '[tasks.a]\ncommand = ["true"]\n')
    result = taskloom("run", path, XDG_CONFIG_HOME=str(config))
    assert result.returncode == 2
    assert result.stderr.strip() == f"{settings}: keep_runs must be an integer >= 1, got 0"
    settings.write_text("keep_rusn = 3\n")
    typo = taskloom("run", path, XDG_CONFIG_HOME=str(config))
    assert typo.returncode == 2 and "unknown setting 'keep_rusn'" in typo.stderr


def test_retention_defaults_and_keeps_logs_within_runs(tmp_path):
    assert places.retention(tmp_path / "none.toml") == places.Retention(20, 20)
    (tmp_path / "s.toml").write_text("keep_runs = 5\nkeep_logs = 50\n")
    assert places.retention(tmp_path / "s.toml") == places.Retention(5, 5)


def test_the_config_folder_is_lower_case(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert places.config_dir() == tmp_path / "taskloom"


@pytest.mark.slow
def test_a_long_run_keeps_each_tasks_last_attempts(tmp_path):
    """A task every 10 ms: the run's own history is capped per task (keep_attempts),
    with the events and log files of the attempts it drops."""
    config = tmp_path / "config"
    (config / "taskloom").mkdir(parents=True)
    (config / "taskloom" / "settings.toml").write_text("keep_attempts = 50\n")
    path = write(
        tmp_path,
        '[tasks.tick]\ncall = "time:time"\nevery = "10ms"\n'
        '[tasks.say]\ncommand = ["echo", "hi"]\nevery = "20ms"\n',
    )
    result = taskloom("run", path, "--for", "3s", XDG_CONFIG_HOME=str(config))
    assert result.returncode == 0, result.stdout + result.stderr
    (store,) = _runs_dir(tmp_path).glob("*.db")
    with sqlite3.connect(store) as conn:
        counts = dict(conn.execute("SELECT task_id, COUNT(*) FROM attempts GROUP BY task_id"))
        last = dict(conn.execute("SELECT task_id, MAX(number) FROM attempts GROUP BY task_id"))
        oldest_event = dict(
            conn.execute("SELECT task_id, MIN(attempt) FROM events WHERE attempt > 0 GROUP BY 1")
        )
    assert last["tick"] > 50 and last["say"] > 50, last  # it ran more than it keeps
    assert counts == {"tick": 50, "say": 50}
    assert oldest_event["tick"] == last["tick"] - 49
    logs = list((_runs_dir(tmp_path) / "logs" / store.stem).glob("say-*.log"))
    assert len(logs) == 50


def test_prune_attempts_keeps_the_last_per_task_and_refuses_a_bad_count(tmp_path):
    from taskloom.engine.store import SQLiteStore

    store = SQLiteStore(tmp_path / "s.db")
    try:
        with pytest.raises(ValueError, match="keep must be an integer >= 1, got 0"):
            store.prune_attempts(0)
        assert store.prune_attempts(5) == []  # nothing stored: nothing to do
    finally:
        store.close()


def test_the_pruner_prunes_while_the_run_goes_on_and_once_more_at_stop(tmp_path):
    import threading

    from taskloom.runs import AttemptPruner

    old = tmp_path / "old.log"
    old.write_text("x")

    class Store:
        failed = False

        def __init__(self):
            self.calls = []
            self.twice = threading.Event()

        def prune_attempts(self, keep):
            self.calls.append(keep)
            if len(self.calls) == 2:
                self.twice.set()
            return [str(old)] if len(self.calls) == 1 else []

    store = Store()
    pruner = AttemptPruner(store, 77, tmp_path, interval=0.01).start()
    assert store.twice.wait(10)  # on its own, while running
    pruner.stop()
    assert set(store.calls) == {77} and len(store.calls) >= 3  # and once more at stop
    assert not old.exists()  # the dropped attempt's log went with it

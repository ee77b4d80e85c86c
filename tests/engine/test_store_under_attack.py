"""One owner whatever happens to a store's files (issue 21, items 1, 5, 9, 12), in
one process and with real files: flock locks taken through separate descriptors
conflict within a process as between processes, and SQLite's write lock is held
by a second real connection."""

from __future__ import annotations

import os
import shutil
import sqlite3
import threading
import time

import pytest

from taskloom.engine import Call, Scheduler, TaskState, current_run
from taskloom.engine._store.lock import lock_path, read_owner
from taskloom.engine.feed import FeedWriter, watch_path
from taskloom.engine.store import SQLiteStore, StoreBusy, StoreError
from taskloom.engine.watched_run import WatchedRun

S = TaskState


def until(predicate, timeout: float = 15.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        threading.Event().wait(0.02)


def blocked() -> None:
    current_run().wait_cancelled(60)


def quick() -> None:
    pass


# ---------------------------------------------------------------- item 1: one owner
def test_deleting_the_lock_file_under_a_live_owner_lets_no_second_owner_in(tmp_path):
    db = tmp_path / "run.db"
    first = SQLiteStore(db)
    try:
        lock_path(db).unlink()  # rm *.lock, a tmp cleaner
        with pytest.raises(StoreBusy, match=f"pid {os.getpid()} "):
            SQLiteStore(db)
        # The owner's heartbeat makes the lock file again and holds it.
        until(lambda: lock_path(db).exists(), what="the lock file made again")
        until(lambda: read_owner(db) is not None, what="the owner named again")
        assert read_owner(db).pid == os.getpid()
        assert not first.failed
    finally:
        first.close()
    SQLiteStore(db).close()  # once the owner closed, the store can be had


def test_replacing_the_store_folder_by_a_copy_lets_no_second_owner_in(tmp_path):
    folder = tmp_path / "runs"
    db = folder / "run.db"
    first = SQLiteStore(db)
    scheduler = Scheduler(store=first)
    try:
        first.flush()
        copy = tmp_path / "copy"
        shutil.copytree(folder, copy)  # a restore tool: the folder replaced by a copy
        folder.rename(tmp_path / "old")
        copy.rename(folder)
        with pytest.raises(StoreBusy):
            SQLiteStore(db)
        # The owner notices that its path names another store, and stops.
        until(lambda: first.failed, what="the owner to notice")
        with pytest.raises(StoreError, match="the store was replaced under its owner"):
            first.flush()
    finally:
        with pytest.raises(StoreError):
            scheduler.shutdown(wait=True)
        first.close()


def test_deleting_the_store_under_a_live_owner_stops_it_with_one_line(tmp_path):
    db = tmp_path / "run.db"
    store = SQLiteStore(db)
    scheduler = Scheduler(store=store, workers=1)
    scheduler.add(Call("tests.engine.test_store_under_attack:blocked"), name="slow")
    scheduler.start()
    try:
        until(lambda: scheduler.task("slow").state is S.RUNNING)
        db.unlink()
        until(lambda: store.failed, what="the owner to notice its store is gone")
        assert str(store.failure_error()) == (
            f"{db}: the store was deleted under its owner; nothing more is scheduled"
        )
        with pytest.raises(StoreError):
            scheduler.add(Call("tests.engine.test_store_under_attack:quick"), name="more")
    finally:
        try:
            scheduler.shutdown(wait=True, cancel_running=True)
        except StoreError:
            pass
        store.close()


# ---------------------------------------------------------------- item 5: side files
def test_a_symbolic_link_planted_as_the_lock_file_is_refused_and_its_target_untouched(tmp_path):
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")
    db = tmp_path / "run.db"
    lock_path(db).symlink_to(precious)
    with pytest.raises(StoreError, match=r"run\.db\.lock: a symbolic link; refusing to follow it"):
        SQLiteStore(db)
    assert precious.read_text() == "keep me"


def test_a_fifo_planted_as_a_side_file_is_refused_without_hanging(tmp_path):
    from taskloom.engine._store.safe_files import UnsafeFile, open_private

    path = tmp_path / "run.db.watch"
    os.mkfifo(path)
    with pytest.raises(UnsafeFile, match="not a regular file"):
        open_private(path, os.O_RDONLY | os.O_CREAT)


def test_a_new_side_file_is_0600_whatever_the_umask(tmp_path):
    from taskloom.engine._store.safe_files import open_private

    old = os.umask(0)
    try:
        fd = open_private(tmp_path / "side", os.O_RDWR | os.O_CREAT)
        os.close(fd)
    finally:
        os.umask(old)
    assert (tmp_path / "side").stat().st_mode & 0o777 == 0o600


def test_an_own_store_writable_by_others_is_refused(tmp_path):
    db = tmp_path / "run.db"
    SQLiteStore(db).close()
    db.chmod(0o666)
    with pytest.raises(StoreError, match=r"writable by other users \(mode 0666\)"):
        SQLiteStore(db)


# ---------------------------------------------------------------- item 9: a busy store
@pytest.mark.slow
def test_a_process_holding_the_write_lock_longer_than_sqlites_wait_does_not_stop_the_run(
    tmp_path,
):
    db = tmp_path / "run.db"
    store = SQLiteStore(db)
    scheduler = Scheduler(store=store, workers=1)
    scheduler.start()
    other = sqlite3.connect(db, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # a sqlite3 shell left in a transaction
        scheduler.add(Call("tests.engine.test_store_under_attack:quick"), name="q")
        threading.Event().wait(6.0)  # longer than SQLite's 5 s busy wait: the hold itself
        assert not store.failed
        other.execute("COMMIT")
        until(lambda: scheduler.task("q").state is S.SUCCEEDED, what="the task")
        assert store.flush(timeout=30)
        assert not store.failed
        assert store.load_tasks()[0]["state"] == "succeeded"
    finally:
        if other.in_transaction:
            other.execute("COMMIT")
        other.close()
        scheduler.shutdown(wait=True)
        store.close()


# ---------------------------------------------------------------- item 12: watchers
@pytest.fixture
def owner(tmp_path):
    store = SQLiteStore(tmp_path / "run.db")
    scheduler = Scheduler(workers=2, store=store)
    scheduler.add(Call("tests.engine.test_store_under_attack:blocked"), name="slow")
    feed = FeedWriter(scheduler, store).start()
    scheduler.start()
    yield scheduler, store, feed
    scheduler.shutdown(wait=True, cancel_running=True)
    feed.close()
    store.close()


def test_deleting_the_watch_file_does_not_stop_new_windows_from_watching(owner, tmp_path):
    scheduler, store, feed = owner
    first = WatchedRun(tmp_path / "run.db")
    first.close()
    watch_path(tmp_path / "run.db").unlink()
    second = WatchedRun(tmp_path / "run.db", attach_timeout=10)
    try:
        until(lambda: second.task("slow").state is S.RUNNING)
    finally:
        second.close()


def test_the_per_user_lock_folder_deleted_under_a_live_owner_is_made_again(tmp_path, monkeypatch):
    from taskloom.engine._store import safe_files

    monkeypatch.setattr(safe_files, "LOCK_ROOT", tmp_path / "tmp")
    (tmp_path / "tmp").mkdir()
    db = tmp_path / "run.db"
    store = SQLiteStore(db)
    try:
        folder = safe_files.lock_dir_path()
        assert len(list(folder.iterdir())) == 1
        shutil.rmtree(folder)  # a cleaner of /tmp
        until(lambda: folder.exists() and any(folder.iterdir()), what="the lock made again")
        assert oct(folder.stat().st_mode & 0o777) == oct(0o700)
        lock_path(db).unlink()  # and the lock beside the store: one lock still holds
        with pytest.raises(StoreBusy):
            SQLiteStore(db)
        assert not store.failed
    finally:
        store.close()


def test_a_link_planted_as_the_watch_file_is_not_followed_and_said_once(tmp_path, caplog):
    from taskloom.engine.feed import WatcherPresence

    precious = tmp_path / "precious.txt"
    precious.write_text("keep")
    watch_path(tmp_path / "run.db").symlink_to(precious)
    presence = WatcherPresence(tmp_path / "run.db")
    try:
        assert [presence.any() for _ in range(3)] == [False] * 3
    finally:
        presence.close()
    said = [r.getMessage() for r in caplog.records if "who watches" in r.getMessage()]
    assert len(said) == 1 and "a symbolic link; refusing to follow it" in said[0]
    assert precious.read_text() == "keep"


def test_a_lock_folder_another_user_planted_in_tmp_is_not_used_nor_a_refusal(tmp_path, monkeypatch):
    from taskloom.engine._store import safe_files

    if os.geteuid() != 0:
        pytest.skip("making a folder another user's needs root")
    monkeypatch.setattr(safe_files, "LOCK_ROOT", tmp_path / "tmp")
    monkeypatch.setattr(safe_files, "FALLBACK_ROOT", tmp_path / "home")
    planted = safe_files.lock_dir_path()
    planted.mkdir(parents=True, mode=0o777)
    os.chown(planted, 54321, 54321)  # another user's, made before ours
    db = tmp_path / "run.db"
    store = SQLiteStore(db)
    try:
        assert list(planted.iterdir()) == []  # nothing of ours in their folder
        fallback = safe_files.fallback_lock_dir()
        assert len(list(fallback.iterdir())) == 1
        assert oct(fallback.stat().st_mode & 0o777) == oct(0o700)
        lock_path(db).unlink()
        with pytest.raises(StoreBusy):  # the fallback lock holds as the other would
            SQLiteStore(db)
    finally:
        store.close()


@pytest.mark.slow
def test_a_store_folder_unsearchable_for_a_while_does_not_stop_its_owner(tmp_path):
    """A folder made unsearchable (chmod 0) for a few beats: the heartbeat cannot tell
    whether the store is still there, which is no reason to stop the run. Run where
    file modes apply (root drops its power to override them)."""
    import subprocess
    import sys
    from pathlib import Path

    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: file modes do not apply")
    prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
    folder = tmp_path / "runs"
    code = (
        "import os, sys, threading\n"
        "from taskloom.engine.store import SQLiteStore\n"
        "folder = sys.argv[1]\n"
        "store = SQLiteStore(os.path.join(folder, 'run.db'))\n"
        "os.chmod(folder, 0)\n"
        "threading.Event().wait(2.5)  # the condition lasts a few of the owner's beats\n"
        "os.chmod(folder, 0o700)\n"
        "print(store.failed)\n"
        "store.close()\n"
    )
    folder.mkdir()
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [*(prefix if os.geteuid() == 0 else []), sys.executable, "-c", code, str(folder)],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    folder.chmod(0o700)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False", result.stderr


def test_the_per_user_locks_go_with_their_owner(tmp_path, monkeypatch):
    from taskloom.engine._store import safe_files

    monkeypatch.setattr(safe_files, "LOCK_ROOT", tmp_path / "tmp")
    (tmp_path / "tmp").mkdir()
    for n in range(5):
        SQLiteStore(tmp_path / f"run{n}.db").close()
    assert list(safe_files.lock_dir_path().iterdir()) == []  # one file per store ever: no
    first = SQLiteStore(tmp_path / "run0.db")
    try:
        with pytest.raises(StoreBusy):
            SQLiteStore(tmp_path / "run0.db")
    finally:
        first.close()

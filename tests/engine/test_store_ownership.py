"""One owner per run store, and nothing an owner started outlives it.

Real processes and real kills: the lock is the kernel's, the survivors are real
process groups, the process table is read after each kill.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from taskloom.engine import Scheduler, TaskState
from taskloom.engine._jobs.reaper import ENV_KEY
from taskloom.engine._store.lock import read_owner
from taskloom.engine.store import SQLiteStore, StoreBusy
from tests._processes import alive, wait_for

ROOT = Path(__file__).resolve().parents[2]


def owner_script(db: Path, pids: Path, *, extra: str = "") -> str:
    """A child that owns ``db`` and runs one command. The command starts a grandchild
    in its own group and a second one in a session of its own (setsid), writes all
    three pids, then sleeps."""
    body = (
        "import os, subprocess, sys, time\n"
        "a = subprocess.Popen(['sleep', '300'])\n"
        "b = subprocess.Popen(['sleep', '300'], start_new_session=True)\n"
        f"open({str(pids)!r} + '.tmp', 'w').write(f'{{os.getpid()}} {{a.pid}} {{b.pid}}')\n"
        f"os.rename({str(pids)!r} + '.tmp', {str(pids)!r})\n"
        "time.sleep(300)\n"
    )
    return (
        "from taskloom.engine import Scheduler\n"
        "from taskloom.engine.command import Command\n"
        "from taskloom.engine.store import SQLiteStore\n"
        f"s = Scheduler(store=SQLiteStore({str(db)!r}))\n"
        "if 'cmd' not in {t.id for t in s.tasks()}:\n"
        f"    s.add(Command([{sys.executable!r}, '-c', {body!r}]), name='cmd')\n"
        f"{extra}"
        "s.start(); s.wait()\n"
    )


def start_owner(db: Path, pids: Path, **kw) -> tuple[subprocess.Popen, list[int]]:
    proc = subprocess.Popen([sys.executable, "-c", owner_script(db, pids, **kw)], cwd=ROOT)
    wait_for(lambda: pids.exists() or proc.poll() is not None, what="the command's pids")
    assert proc.poll() is None, "the owner exited early"
    return proc, [int(p) for p in pids.read_text().split()]


# ---------------------------------------------------------------- one owner
def test_a_second_owner_in_the_same_process_is_refused(tmp_path):
    db = tmp_path / "run.db"
    first = SQLiteStore(db)
    try:
        with pytest.raises(StoreBusy) as refused:
            SQLiteStore(db)
        assert str(refused.value).startswith(f"{db} is in use by ")
        assert f"pid {os.getpid()} on " in str(refused.value)
        assert refused.value.owner.pid == os.getpid()
    finally:
        first.close()
    SQLiteStore(db).close()  # released by close()


def test_a_live_owner_in_another_process_is_named_and_a_killed_one_releases(tmp_path):
    db, pids = tmp_path / "run.db", tmp_path / "pids"
    proc, left_running = start_owner(db, pids)
    try:
        with pytest.raises(StoreBusy) as refused:
            SQLiteStore(db)
        assert refused.value.owner.pid == proc.pid
        assert f"(pid {proc.pid} on " in str(refused.value)
        assert read_owner(db).pid == proc.pid
    finally:
        proc.kill()
        proc.wait()
    try:
        assert read_owner(db) is None  # the kernel dropped the lock with the process
        store = SQLiteStore(db)
        store.close()
    finally:  # the command outlives its owner by design: not this test's process table
        for pid in left_running:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_a_reader_reads_beside_a_live_owner(tmp_path):
    db = tmp_path / "run.db"
    owner = SQLiteStore(db)
    try:
        s = Scheduler(store=owner)
        s.add("builtins:print", name="p")
        s.start()
        assert s.wait(10)
        s.shutdown()
        reader = SQLiteStore.reader(db)
        try:
            assert [row["outcome"] for row in reader.attempts("p")] == ["succeeded"]
        finally:
            reader.close()
    finally:
        owner.close()


# ---------------------------------------------------------------- no orphans
@pytest.mark.slow
@pytest.mark.timeout(60)
def test_commands_outlive_their_killed_owner_under_their_supervisor(tmp_path):
    """With a store, a command and everything it started go on when their owner is
    killed (its next owner adopts it: test_adoption.py); a stop is still a stop."""
    db, pids = tmp_path / "run.db", tmp_path / "pids"
    proc, (command, grandchild, escaped) = start_owner(db, pids)
    assert all(alive(p) for p in (command, grandchild, escaped))
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    try:
        # The owner's watcher ends what carries the owner's mark within about a second;
        # the command carries its supervisor's, so it is spared.
        watcher_gone_by = time.monotonic() + 2.0
        while time.monotonic() < watcher_gone_by and any(alive(p) for p in (command,)):
            time.sleep(0.05)
        assert all(alive(p) for p in (command, grandchild, escaped))
    finally:
        for pid in (command, grandchild, escaped):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _recorded_pid(db: Path):
    reader = SQLiteStore.reader(db)
    try:
        rows = reader.attempts("cmd")
        return rows[0]["pid"] if rows else None
    finally:
        reader.close()


def _helper_of(owner_pid: int, script: bytes, position: int) -> int:
    """The watcher (reaper.py) or supervisor (supervisor.py) of ``owner_pid``."""
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                cmdline = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if (
                any(part.endswith(script) for part in cmdline)
                and len(cmdline) > position
                and cmdline[position] == str(owner_pid).encode()
            ):
                return int(name)
    raise AssertionError(f"no {script.decode()} for {owner_pid}")


def _watcher_of(owner_pid: int) -> int:
    return _helper_of(owner_pid, b"reaper.py", 3)


def _supervisor_of(owner_pid: int) -> int:
    return _helper_of(owner_pid, b"supervisor.py", 5)


@pytest.mark.timeout(60)
def test_recovery_ends_a_survivor_before_the_task_runs_again(tmp_path):
    """The second line: the supervisor and the watcher are gone too, so the command
    outlives its owner with nobody to record its end; the next owner finds it by its
    recorded pid, group and start time (and its supervisor's mark), ends it, and the
    attempt is lost."""
    db, pids = tmp_path / "run.db", tmp_path / "pids"
    proc, (command, grandchild, escaped) = start_owner(db, pids)
    wait_for(lambda: _watcher_of(proc.pid) > 0, what="the watcher")
    wait_for(lambda: _recorded_pid(db) == command, what="the command's record")
    watcher, supervisor = _watcher_of(proc.pid), _supervisor_of(proc.pid)
    os.kill(watcher, signal.SIGKILL)
    proc.send_signal(signal.SIGKILL)  # before its supervisor: it would end their commands
    proc.wait()
    os.kill(supervisor, signal.SIGKILL)
    time.sleep(0.3)  # would the survivors die on their own? they must not, here
    assert all(alive(p) for p in (command, grandchild, escaped))
    reader = SQLiteStore.reader(db)
    try:
        (row,) = reader.attempts("cmd")
        assert row["outcome"] == "running"
        assert row["pid"] == command and row["pgid"] == command
        assert row["proc_started"] is not None
    finally:
        reader.close()

    store = SQLiteStore(db)  # the new owner
    try:
        assert not any(alive(p) for p in (command, grandchild, escaped))
        s = Scheduler(store=store)
        assert s.task("cmd").state is TaskState.READY
        assert [a.outcome for a in s.attempts("cmd")] == ["lost"]
        s.shutdown()
    finally:
        store.close()


def test_a_recorded_pid_now_used_by_another_process_is_left_alone(tmp_path):
    from taskloom.engine._jobs.survivors import start_time, terminate_survivors

    bystander = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        stale = (bystander.pid, bystander.pid, start_time(bystander.pid) - 1)
        assert terminate_survivors([stale], None) == 0
        assert alive(bystander.pid)
        fresh = (bystander.pid, bystander.pid, start_time(bystander.pid))
        assert terminate_survivors([fresh], None) == 1
        bystander.wait(5)
    finally:
        bystander.kill()
        bystander.wait()


def test_the_owner_marks_its_commands(tmp_path):
    from taskloom.engine import Scheduler
    from taskloom.engine._jobs import supervision
    from taskloom.engine._jobs.reaper import current_token, ensure_started
    from taskloom.engine.command import Command

    out = tmp_path / "env"
    s = Scheduler(workers=1)
    s.add(
        Command(
            [
                sys.executable,
                "-c",
                f"import os; open({str(out)!r}, 'w').write(os.environ.get({ENV_KEY!r}, ''))",
            ]
        ),
        name="c",
    )
    s.start()
    assert s.wait(20)
    s.shutdown()
    # A command carries its supervisor's mark (not the owner's: the owner's watcher
    # ends what carries that once the owner is gone, and commands must outlive it).
    assert out.read_text() == supervision.client().token
    assert ensure_started() == current_token() != out.read_text()


def test_reopening_a_store_this_process_owned_spares_its_other_runs_commands(tmp_path):
    # The owner mark is per process: a store this process owned before carries our own
    # mark, and so does every command another store of ours runs now (two windows).
    from taskloom.engine.command import Command

    pid_file = tmp_path / "pid"
    store_a = SQLiteStore(tmp_path / "a.db")
    a = Scheduler(store=store_a)
    a.add(Command(["sh", "-c", f"echo $$ > '{pid_file}'; exec sleep 60"]), name="long")
    a.start()
    try:
        wait_for(lambda: pid_file.exists() and pid_file.read_text().strip(), what="the command")
        pid = int(pid_file.read_text())
        SQLiteStore(tmp_path / "b.db").close()  # owned once, in this process
        store_b = SQLiteStore(tmp_path / "b.db")  # and opened again
        store_b.close()
        assert alive(pid), "reopening b ended a command of a"
        assert a.task("long").state is TaskState.RUNNING
    finally:
        a.shutdown(cancel_running=True)
        store_a.close()

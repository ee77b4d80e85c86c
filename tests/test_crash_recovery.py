"""Crash tests: SIGKILL the real `taskloom run` at random moments and start it again.

No retry policy anywhere: a kill must never count as a task's failure. A ledger
that the commands themselves write proves what happened:

- no task is lost: the run ends with every task succeeded, in the run it began;
- no task whose success was on disk at a kill runs again, and a task that ended
  runs again only when its owner was killed within `RECORD_WINDOW` of its end,
  before its success reached the disk;
- no two copies of one task ever run at the same time;
- within 2 s of each kill, no process the killed owner started is left (the
  process table is read: its mark in a process's environment finds even a
  process that left its group).
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# A command: append "start NAME PID T" to the ledger, work for a while, append "end ...".
RECORD = (
    "import os, sys, time\n"
    "name, ledger, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])\n"
    "def note(what):\n"
    "    with open(ledger, 'a') as f:\n"
    "        f.write(f'{what} {name} {os.getpid()} {time.monotonic()} {os.getppid()}\\n')\n"
    "note('start')\n"
    "time.sleep(seconds)\n"
    "note('end')\n"
    # Exit at once: what is measured is Taskloom's time from exit to record, not
    # the interpreter's own teardown.
    "os._exit(0)\n"
)


# A success is on disk this soon after its command exits, even on a loaded machine
# (a few ms when idle): a kill later than this never runs the command again.
RECORD_WINDOW = 1.0


def _tasks() -> list[tuple[str, list[str], float]]:
    # Long enough that kills mostly land mid-attempt, not in the few milliseconds
    # between a command's exit and its success reaching the disk.
    tasks = [(f"a{i:02d}", [], 0.2 + 0.1 * (i % 4)) for i in range(8)]
    tasks += [
        (f"b{i:02d}", [f"a{i:02d}", f"a{(i + 3) % 8:02d}"], 0.3 + 0.1 * (i % 3)) for i in range(8)
    ]
    tasks += [(f"c{i:02d}", [f"b{i:02d}", f"b{(i + 1) % 8:02d}"], 0.2) for i in range(8)]
    return tasks + [("final", [f"c{i:02d}" for i in range(8)], 0.1)]


def _workflow(tmp_path: Path, ledger: Path) -> Path:
    script = tmp_path / "record.py"
    script.write_text(RECORD)
    lines = ['[workflow]\nname = "crashy"\nworkers = 3\n']
    for name, deps, seconds in _tasks():
        argv = [sys.executable, str(script), name, str(ledger), str(seconds)]
        lines.append(f"[tasks.{name}]\ncommand = {json.dumps(argv)}\ndeps = {json.dumps(deps)}\n")
    path = tmp_path / "crashy.toml"
    path.write_text("\n".join(lines))
    return path


def _ledger(ledger: Path) -> list[tuple[str, str, int, float, int]]:
    """(start|end, task, pid, monotonic time, parent pid) per line written."""
    if not ledger.exists():
        return []
    rows = []
    for line in ledger.read_text().splitlines():
        parts = line.split()
        if len(parts) == 5:  # a line cut short by a kill is ignored
            rows.append((parts[0], parts[1], int(parts[2]), float(parts[3]), int(parts[4])))
    return rows


def _query(db: Path, sql: str, args=()) -> list[tuple]:
    if not db.exists():
        return []
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(sql, args).fetchall()
    except sqlite3.OperationalError:  # killed before the schema was written
        return []
    finally:
        conn.close()


def _succeeded_on_disk(db: Path) -> set[str]:
    rows = _query(db, "SELECT value FROM meta WHERE key = 'run'")
    run = int(rows[0][0]) if rows else 1
    sql = "SELECT task_id FROM attempts WHERE outcome = 'succeeded' AND run = ?"
    return {row[0] for row in _query(db, sql, (run,))}


def _run(db: Path) -> int:
    rows = _query(db, "SELECT value FROM meta WHERE key = 'run'")
    return int(rows[0][0]) if rows else 0


def _marked_alive(token: str) -> list[int]:
    """Live processes (not zombies) carrying the owner's mark."""
    from taskloom.engine._jobs.reaper import marked_processes

    return marked_processes(token)


@pytest.mark.timeout(400)
def test_random_kills_lose_nothing_rerun_nothing_and_leave_no_process(tmp_path):
    ledger = tmp_path / "ledger"
    db = tmp_path / "run.db"
    workflow = _workflow(tmp_path, ledger)
    names = {name for name, *_ in _tasks()}
    rng = random.Random(20261201)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("TASKLOOM_OWNER", None)  # the owners under test are marked afresh
    command = [sys.executable, "-m", "taskloom", "run", str(workflow), "--db", str(db)]

    kills = 0
    kill_times: list[float] = []
    all_clear: list[float] = []  # after each kill: when no process of the owner was left
    at_kills: list[tuple[set[str], int]] = []  # success on disk, ledger length
    cut_off: set[str] = set()  # tasks running at the last kill: must finish before the next
    leftovers_after_kill = []
    new_runs_at: list[int] = []  # ledger lengths where a new run of the file began
    owner_pids: list[int] = []
    for _ in range(200):
        start_len = len(_ledger(ledger))
        run_before = _run(db)
        proc = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        owner_pids.append(proc.pid)
        # Let the run make progress: what the last kill cut off runs again and ends.
        deadline = time.monotonic() + 30
        while proc.poll() is None and time.monotonic() < deadline:
            ended = {task for kind, task, *_ in _ledger(ledger)[start_len:] if kind == "end"}
            if cut_off <= ended and len(_ledger(ledger)) > start_len:
                break
            time.sleep(0.01)
        if kills < 20 or rng.random() < 0.5:
            try:
                proc.wait(timeout=rng.uniform(0.05, 0.8))
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
        else:
            proc.wait(timeout=120)
        if _run(db) != run_before:  # the last run had finished: this one began afresh
            new_runs_at.append(start_len)
        if proc.returncode == -signal.SIGKILL:
            kills += 1
            kill_times.append(time.monotonic())
            token = _query(db, "SELECT value FROM meta WHERE key = 'owner_token'")
            at_kills.append((_succeeded_on_disk(db), len(_ledger(ledger))))
            # Within 2 s, nothing the killed owner started is alive.
            left: list[int] = []
            if token:
                give_up = time.monotonic() + 2.0
                while time.monotonic() < give_up:
                    left = _marked_alive(token[0][0])
                    if not left:
                        break
                    time.sleep(0.05)
            leftovers_after_kill.append(left)
            all_clear.append(time.monotonic())  # every copy the owner started is gone
            rows = _ledger(ledger)[start_len:]
            starts = {task for kind, task, *_ in rows if kind == "start"}
            ends = {task for kind, task, *_ in rows if kind == "end"}
            cut_off = (cut_off - ends) | (starts - ends)
            continue
        assert proc.returncode == 0, proc.stderr.read().decode()
        if kills >= 20:
            break
        # Finished before enough kills: the next start begins a new run of the file.
        cut_off = set()
    assert kills >= 20
    assert not any(leftovers_after_kill), leftovers_after_kill

    rows = _ledger(ledger)
    # Only the final run counts for "nothing lost": it must have all tasks succeeded.
    run = _query(db, "SELECT value FROM meta WHERE key = 'run'")[0][0]
    states = dict(_query(db, "SELECT id, state FROM tasks"))
    assert set(states) == names
    assert set(states.values()) == {"succeeded"}, states
    outcomes = {o for (o,) in _query(db, "SELECT outcome FROM attempts WHERE run = ?", (run,))}
    assert outcomes <= {"succeeded", "lost"}, outcomes  # a kill is never a failure

    # Never two copies of one task at once: each start comes after the previous copy
    # ended, or after a kill that was followed by an empty process table. (A copy
    # started just before a kill may write its first line just after it.)
    running: dict[str, float] = {}
    for kind, task, _pid, at, _parent in rows:
        if kind == "start":
            if task in running:
                gone_between = any(running[task] < clear < at for clear in all_clear)
                assert gone_between, f"{task} started again while a copy ran"
            running[task] = at
        else:
            running.pop(task, None)

    # A success on disk at a kill never runs again in that run.
    def run_end(length: int) -> int:
        return next((begin for begin in new_runs_at if begin >= length), len(rows))

    for succeeded, length in at_kills:
        later = {task for kind, task, *_ in rows[length : run_end(length)] if kind == "start"}
        assert not (succeeded & later), succeeded & later
    # A copy that ended while its owner lived but whose success was not yet on disk
    # may run again (at least once): only if a kill came between its end and the new
    # start, and within RECORD_WINDOW of its end, so a success is never left
    # unrecorded for long. (How many kills land in that window is luck and load;
    # how long the window is, is ours.) A command that ended after its owner was
    # killed (its parent is no longer the owner) could not be recorded by anyone.
    owners = set(owner_pids)
    kill_rows = [length for _succeeded, length in at_kills]
    reruns = []
    for begin, end in zip([0, *new_runs_at], [*new_runs_at, len(rows)], strict=True):
        ended: dict[str, tuple[int, float]] = {}  # task -> (ledger row, time) of its end
        for row, (kind, task, _pid, at, parent) in enumerate(rows[begin:end], start=begin):
            if kind == "start" and task in ended:
                end_row, end_at = ended.pop(task)
                kill = next((k for k, length in enumerate(kill_rows) if length > end_row), None)
                assert kill is not None and kill_rows[kill] <= row, f"{task} ran twice in one owner"
                reruns.append((task, round(kill_times[kill] - end_at, 3)))
            if kind == "end" and parent in owners:
                ended[task] = (row, at)
    assert all(gap < RECORD_WINDOW for _task, gap in reruns), reruns


@pytest.mark.timeout(120)
def test_a_killed_owner_on_a_process_pool_leaves_no_worker_tracker_or_command(tmp_path):
    fifo = tmp_path / "announce"
    os.mkfifo(fifo)
    workflow = tmp_path / "pool.toml"
    workflow.write_text(
        '[workflow]\nname = "pool"\nworkers = 2\nexecutor = "processes"\n'
        "[tasks.long]\n"
        f'command = ["sh", "-c", "sleep 60 & echo $$ > \'{fifo}\'; wait"]\n'
    )
    db = tmp_path / "run.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("TASKLOOM_OWNER", None)
    owner = subprocess.Popen(
        [sys.executable, "-m", "taskloom", "run", str(workflow), "--db", str(db)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    with open(fifo) as stream:  # the command runs in a pool worker
        group = int(stream.read())
    (token,) = _query(db, "SELECT value FROM meta WHERE key = 'owner_token'")[0]
    pool = _marked_alive(token)  # the pool's processes carry the owner's mark
    assert pool
    owner.send_signal(signal.SIGKILL)
    owner.wait()
    # The owner's watcher ends the pool's processes; each pool worker's own watcher
    # then ends the commands it started (they carry the worker's mark).
    deadline = time.monotonic() + 2.0
    while (_marked_alive(token) or _group_alive(group)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _marked_alive(token) == []
    assert not _group_alive(group)


def _group_alive(pgid: int) -> bool:
    from taskloom.engine._jobs.survivors import _group_alive as alive

    return alive(pgid)

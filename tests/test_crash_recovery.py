"""Crash tests: SIGKILL the real `taskloom run` at random moments and start it again.

No retry policy anywhere: a kill must never count as a task's failure. Commands run
under a supervisor that outlives their owner, and the next owner adopts them, so a
ledger that the commands themselves write proves the promise exactly:

- each command ran to its end exactly once, whatever was killed when;
- no two copies of one task ever ran at the same time;
- the final run ends with every task succeeded, none failed or lost;
- 2 s after the last owner exits, no process of Taskloom is left (supervisors,
  watchers, commands).
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


def _tasks() -> list[tuple[str, list[str], float]]:
    """30 commands of 0.1 to 3 s in three layers."""
    rng = random.Random(7)
    tasks = [(f"a{i:02d}", [], round(rng.uniform(0.1, 3.0), 2)) for i in range(10)]
    tasks += [
        (f"b{i:02d}", [f"a{i:02d}", f"a{(i + 3) % 10:02d}"], round(rng.uniform(0.1, 3.0), 2))
        for i in range(10)
    ]
    tasks += [
        (f"c{i:02d}", [f"b{i:02d}", f"b{(i + 1) % 10:02d}"], round(rng.uniform(0.1, 3.0), 2))
        for i in range(9)
    ]
    return tasks + [("final", [f"c{i:02d}" for i in range(9)], 0.1)]


def _workflow(tmp_path: Path, ledger: Path) -> Path:
    script = tmp_path / "record.py"
    script.write_text(RECORD)
    lines = ['[workflow]\nname = "crashy"\nworkers = 2\n']
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


def _taskloom_processes(owner_pids: set[int], script: Path) -> list[str]:
    """What is left of the owners: their supervisors and watchers (they name their
    owner's pid on their command line), and commands (they run ``script``)."""
    left = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            argv = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
            state = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state in ("Z", "X"):
            continue
        text = [part.decode(errors="replace") for part in argv]
        helper = any(part.endswith(("supervisor.py", "reaper.py")) for part in text)
        mine = helper and any(part.isdigit() and int(part) in owner_pids for part in text)
        if mine or str(script) in text:
            left.append(" ".join(text))
    return left


def _kill_and_restart(tmp_path: Path, *, whole_group: bool) -> None:
    """SIGKILL the owner (or its whole process group) at random moments until KILLS
    kills landed. A run that finishes first is checked, and the kills go on in a run of
    a fresh copy of the workflow (its own store and ledger): each round must hold."""
    rng = random.Random(20261201 + whole_group)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("TASKLOOM_OWNER", None)  # the owners under test are marked afresh
    kills = 0
    round_number = 0
    while kills < KILLS:
        round_number += 1
        kills += _one_round(tmp_path / f"round{round_number}", rng, env, KILLS - kills, whole_group)


def _one_round(folder: Path, rng: random.Random, env: dict, most: int, whole_group: bool) -> int:
    """Kill the owners of one run of the workflow at most ``most`` times, then let it
    finish; check the promise; return how many kills landed."""
    folder.mkdir()
    ledger = folder / "ledger"
    db = folder / "run.db"
    workflow = _workflow(folder, ledger)
    names = {name for name, *_ in _tasks()}
    command = [sys.executable, "-m", "taskloom", "run", str(workflow), "--db", str(db)]
    kills = 0
    owner_pids: set[int] = set()
    while True:
        proc = subprocess.Popen(
            command,
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,  # a group of its own: killing it spares the test
        )
        owner_pids.add(proc.pid)
        if kills < most:
            try:
                proc.wait(timeout=rng.uniform(0.2, 1.2))
            except subprocess.TimeoutExpired:
                if whole_group:  # as a closing terminal may do
                    os.killpg(proc.pid, signal.SIGKILL)
                else:
                    proc.send_signal(signal.SIGKILL)
                proc.wait()
                kills += 1
                continue
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err.decode()
        break
    finished = time.monotonic()

    # Nothing of Taskloom is left 2 s after the last owner exits.
    script = folder / "record.py"
    left = _taskloom_processes(owner_pids, script)
    while left and time.monotonic() < finished + 2.0:
        time.sleep(0.05)
        left = _taskloom_processes(owner_pids, script)
    assert not left, left

    # Each command ran to its end exactly once, and no two copies overlapped.
    rows = _ledger(ledger)
    starts = sorted(task for kind, task, *_ in rows if kind == "start")
    ends = sorted(task for kind, task, *_ in rows if kind == "end")
    assert starts == sorted(names), [t for t in set(starts) if starts.count(t) > 1]
    assert ends == sorted(names)

    # The final run: every task succeeded in the run it began; no failure, no loss.
    assert {run for (run,) in _query(db, "SELECT DISTINCT run FROM attempts")} == {1}
    states = dict(_query(db, "SELECT id, state FROM tasks"))
    assert set(states) == names
    assert set(states.values()) == {"succeeded"}, states
    outcomes = {o for (o,) in _query(db, "SELECT outcome FROM attempts WHERE run = 1")}
    assert outcomes <= {"succeeded", "interrupted"}, outcomes  # never started: not lost
    return kills


KILLS = 30


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_random_kills_of_the_owner_run_each_command_exactly_once(tmp_path):
    _kill_and_restart(tmp_path, whole_group=False)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_random_kills_of_the_owners_process_group_run_each_command_exactly_once(tmp_path):
    _kill_and_restart(tmp_path, whole_group=True)


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
    from tests._processes import group_alive

    return group_alive(pgid)

"""The in-flight file (``<store>-inflight``) cannot bring the owner down (issue 21,
items 7 and 8): a full disk, a truncation, a FIFO, a directory, a link, garbage, a
huge file or another store's leftovers are one clear error or nothing at all."""

from __future__ import annotations

import os
import resource
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from taskloom.engine import Call, Scheduler
from taskloom.engine._store.inflight import SLOT_BYTES, left_behind
from taskloom.engine.store import SQLiteStore, StoreError

ROOT = Path(__file__).resolve().parents[2]
JOBS = "tests.engine._store_jobs"
NOBODY = 65534


@pytest.fixture
def db(tmp_path):
    return tmp_path / "taskloom.db"


def _inflight(db: Path) -> Path:
    return db.with_name(db.name + "-inflight")


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text
    return text


# ---------------------------------------------------------------------- odd files
def test_a_fifo_there_is_refused_at_once_not_a_hang(db):
    os.mkfifo(_inflight(db))
    script = (
        "from taskloom.engine.store import SQLiteStore, StoreError\n"
        f"try:\n    SQLiteStore({str(db)!r})\nexcept StoreError as e:\n    print(e)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=30
    )
    assert proc.stdout.strip().endswith("not a regular file; remove it to go on")
    assert proc.stderr == ""


def test_a_directory_there_is_one_line(db):
    _inflight(db).mkdir()
    with pytest.raises(StoreError) as info:
        SQLiteStore(db)
    assert "in-flight file" in _one_line(info.value)
    assert "not a regular file" in str(info.value)
    assert SQLiteStore(db.with_name("other.db")).close() is None  # the lock was let go


def test_a_symlink_there_is_refused_and_its_target_untouched(db, tmp_path):
    victim = tmp_path / "precious.txt"
    victim.write_text("mine")
    _inflight(db).symlink_to(victim)
    with pytest.raises(StoreError) as info:
        SQLiteStore(db)
    assert "symbolic link" in _one_line(info.value)
    assert victim.read_text() == "mine"


def _store_id(db: Path) -> str:
    conn = sqlite3.connect(db)
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
        return row[0] if row else ""
    finally:
        conn.close()


def _attempts(db: Path) -> list[tuple]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT task_id, number, outcome FROM attempts").fetchall()
    finally:
        conn.close()


def _write_slots(path: Path, rows: list[str]) -> None:
    path.unlink(missing_ok=True)
    path.write_bytes(b"".join(r.encode().ljust(SLOT_BYTES, b"\0") for r in rows))


def test_slots_holding_huge_ints_or_garbage_are_ignored(db):
    SQLiteStore(db).close()
    tag = _store_id(db)
    huge = 10**30
    _write_slots(
        _inflight(db),
        [
            f"(1, 't', 1, {huge}, None, 'running', None, None, None, None, None, None)",
            f"({tag!r}, 1, 't', 1, {huge}, None, 'running', None, None, None, None, None, None)",
            f"({tag!r}, 1, 't', 2, float('nan'))",
            "((((((((((((((((((((((((((((((((((((((((((((((((((",
            "\xff\xfe garbage",
            f"({tag!r}, 1, 't', 3, 1e999, None, 'running', None, None, None, None, None, None)",
        ],
    )
    store = SQLiteStore(db)  # an OverflowError on every start before
    store.close()
    assert _attempts(db) == []


def test_a_huge_file_is_not_read_whole(db):
    SQLiteStore(db).close()
    with open(_inflight(db), "wb") as f:
        f.truncate(2 << 30)  # 2 GiB, sparse
    script = (
        "import resource\n"
        "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
        "from taskloom.engine.store import SQLiteStore\n"
        f"SQLiteStore({str(db)!r}).close(); print('opened')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert proc.stdout.strip() == "opened", proc.stderr[-2000:]
    assert len(left_behind(_inflight(db))) == 0


def test_left_behind_reads_at_most_the_slots_there_can_be(tmp_path):
    from taskloom.engine._store.inflight import MAX_SLOTS

    path = tmp_path / "x-inflight"
    row = "('', 1, 't{}', 1, 0.0, None, 'running', None, None, None, None, None, None)"
    _write_slots(path, [row.format(i) for i in range(MAX_SLOTS + 5)])
    assert len(left_behind(path)) == MAX_SLOTS


# ---------------------------------------------------------------------- another store's rows
def test_a_store_moved_aside_leaves_rows_the_next_store_does_not_replay(db, tmp_path):
    script = (
        "from taskloom.engine import *; from taskloom.engine.store import SQLiteStore\n"
        f"s = Scheduler(store=SQLiteStore({str(db)!r}))\n"
        f"s.add(Call('{JOBS}:bring_the_process_down'), name='down')\n"
        "s.start(); s.wait()\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, timeout=60)
    assert proc.returncode == -9
    assert _inflight(db).exists()
    aside = tmp_path / "aside"
    aside.mkdir()
    for path in tmp_path.glob("taskloom.db*"):
        if not path.name.endswith("-inflight"):
            path.rename(aside / path.name)  # "move the store aside", its side file stays
    store = SQLiteStore(db)
    with Scheduler(store=store) as s:
        s.add(Call(f"{JOBS}:noop"), name="fresh")
        s.start()
        assert s.wait(30)
    store.close()
    assert _attempts(db) == [("fresh", 1, "succeeded")]  # no "down" running for ever


def test_the_store_it_belongs_to_still_replays_its_rows(db):
    script = (
        "from taskloom.engine import *; from taskloom.engine.store import SQLiteStore\n"
        f"s = Scheduler(store=SQLiteStore({str(db)!r}))\n"
        f"s.add(Call('{JOBS}:bring_the_process_down'), name='down')\n"
        "s.start(); s.wait()\n"
    )
    subprocess.run([sys.executable, "-c", script], cwd=ROOT, timeout=60)
    store = SQLiteStore(db)
    # Not started: ``with Scheduler`` starts it, and the lost task would run again here,
    # killing the test process itself (it did, now and then, in a full run).
    s = Scheduler(store=store)
    try:
        assert [a.outcome for a in s.attempts("down")][:1] == ["lost"]
    finally:
        s.shutdown()
        store.close()


# ---------------------------------------------------------------------- truncation, full disk
_OWNER = """
import sys
from taskloom.engine.store import SQLiteStore
store = SQLiteStore(sys.argv[1])
row = ("t", 1, 1.0, None, "running", None, None, None, None, None, None)
slots = [store.note_running(row) for _ in range(40)]
for slot in slots:
    store.running_ended(slot)
print("ready", flush=True)
sys.stdin.readline()
for _ in range(200):
    slots = [store.note_running(row) for _ in range(40)]
    for slot in slots:
        store.running_ended(slot)
print("alive", flush=True)
store.close()
"""


def _truncate_as_the_same_user(path: Path) -> subprocess.CompletedProcess:
    """``truncate -s 0 path`` as this user: as root, without the capabilities that
    let root write any file (a plain user cannot either)."""
    command = ["truncate", "-s", "0", str(path)]
    if os.geteuid() == 0:
        command = ["setpriv", "--inh-caps=-all", "--bounding-set=-all", *command]
    return subprocess.run(command, capture_output=True, text=True, timeout=30)


def test_the_same_user_cannot_truncate_the_slots_under_a_live_owner(db):
    owner = subprocess.Popen(
        [sys.executable, "-c", _OWNER, str(db)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert owner.stdout.readline().strip() == "ready", owner.stderr.read()
        cut = _truncate_as_the_same_user(_inflight(db))
        assert "Permission denied" in cut.stderr
        out, err = owner.communicate("go\n", timeout=60)
    finally:
        owner.kill()
        owner.wait()
    assert owner.returncode == 0, err  # -7 (SIGBUS) before
    assert out.strip() == "alive"


def _mount_tmpfs(where: Path, size: str) -> None:
    where.mkdir()
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({proc.stderr.strip()})")


def _fill(folder: Path) -> None:
    with open(folder / "filler", "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
                f.flush()
        except OSError:
            pass


_FULL_OWNER = """
import sys
from pathlib import Path
from taskloom.engine.store import SQLiteStore, StoreError
store = SQLiteStore(sys.argv[1])
with open(Path(sys.argv[1]).parent / "filler", "wb", buffering=0) as f:
    try:
        while True:
            f.write(b"\\0" * 4096)
    except OSError:
        pass
row = ("t", 1, 1.0, None, "running", None, None, None, None, None, None)
taken = [store.note_running(row) for _ in range(300)]  # all 64 first slots, then growth
print(sum(1 for t in taken if t is not None), "noted", flush=True)
"""


@pytest.mark.slow
def test_a_full_disk_is_never_a_sigbus(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "small"
    _mount_tmpfs(mnt, "2m")
    try:
        db = mnt / "taskloom.db"
        proc = subprocess.run(
            [sys.executable, "-c", _FULL_OWNER, str(db)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])  # -7 before
        assert proc.stdout.strip() == "64 noted"  # the first slots were allocated at open
        # A disk full before the slots are made: refused, no half-made file left.
        script = (
            "from taskloom.engine._store.inflight import InflightSlots, InflightFileError\n"
            "try:\n"
            f"    slots = InflightSlots(__import__('pathlib').Path({str(mnt / 'x-inflight')!r}))\n"
            "    print([slots.note(('t', 1)) for _ in range(64)][-1])\n"
            "except InflightFileError as e:\n"
            "    print('refused:', e.strerror)\n"
        )
        proc = subprocess.run(
            [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60
        )
        assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])  # -7 before
        assert "refused:" in proc.stdout and "No space left" in proc.stdout
        assert not (mnt / "x-inflight").exists()
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


@pytest.mark.slow
def test_taskloom_run_on_a_full_disk_ends_with_one_line_and_exit_2(tmp_path):
    # The whole path: 100 in-process calls start on a disk a task just filled (the
    # slots must grow). Before, SQLite's own full-disk error usually came first here.
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "small"
    _mount_tmpfs(mnt, "3m")
    try:
        flow = mnt / "wf.toml"
        lines = ['[workflow]\nname = "full"\nworkers = 100\n']
        lines.append(f'[tasks.fill]\ncall = "{JOBS}:fill_folder"\nargs = ["{mnt}"]\n')
        for i in range(100):
            lines.append(f'[tasks.p{i}]\ncall = "{JOBS}:pause"\ndeps = ["fill"]\n')
        flow.write_text("\n".join(lines))
        proc = subprocess.run(
            [sys.executable, "-m", "taskloom", "run", str(flow), "--db", str(mnt / "x.db")],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert proc.returncode == 2, (proc.returncode, proc.stderr[-3000:])  # 135/-7 before
        errors = [line for line in proc.stderr.splitlines() if line.strip()]
        assert len(errors) == 1, proc.stderr
        assert "full" in errors[0] or "space" in errors[0]
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_a_limit_on_memory_is_what_the_huge_file_test_relies_on():
    # RLIMIT_AS is honoured here: a 2 GiB read under a 1 GiB limit fails.
    script = (
        "import resource\n"
        "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
        "b = bytearray(2 << 30)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert "MemoryError" in proc.stderr
    assert resource.RLIMIT_AS


def test_a_row_of_a_task_the_store_does_not_keep_is_not_replayed(db):
    SQLiteStore(db).close()
    tag = _store_id(db)
    nobody = "None, 'running', None, None, None, None, None, None"
    _write_slots(_inflight(db), [f"({tag!r}, 1, 'gone', 1, 10.0, {nobody})"])
    SQLiteStore(db).close()
    assert _attempts(db) == []  # it would have stayed "running" for ever

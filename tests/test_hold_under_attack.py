"""Issue 21 at the command line: one owner per workflow file whatever the
environment, stores and side files another user planted, private logs, no
import of a workflow folder's modules, a frozen or vanished owner seen by its
heartbeat, and a validate that runs nothing. Real subprocesses, real files; the
other user is a real second uid (``setpriv``), when this runs as root."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # real processes: owners, watchers, signals, kills

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
OTHER_UID = 54321  # a second user: no account needed, a uid is enough for the kernel
SYSTEM_PYTHON = Path("/usr/bin/python3")  # one the second user can run


@pytest.fixture(autouse=True)
def private_store_dir(tmp_path, monkeypatch):
    monkeypatch.setitem(ENV, "XDG_DATA_HOME", str(tmp_path / "xdg-data"))


def taskloom(*args, cwd=ROOT, timeout: float = 90, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "taskloom", *map(str, args)],
        cwd=cwd,
        env={**ENV, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def start(*args, umask: int | None = None, **env) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "taskloom", *map(str, args)],
        cwd=ROOT,
        env={**ENV, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=None if umask is None else (lambda: os.umask(umask)),
    )


def write(folder: Path, text: str, name: str = "flow.toml") -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def wait_for(predicate, timeout: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def lines(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.strip()]


@pytest.fixture
def shared():
    """A folder other users can write to (a shared group folder)."""
    path = Path(tempfile.mkdtemp(prefix="taskloom-shared-", dir="/tmp"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def as_other_user(code: str, cwd: Path) -> None:
    """Run ``code`` (Python, standard library only) as the second user."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None or not SYSTEM_PYTHON.exists():
        pytest.skip("needs root, setpriv and /usr/bin/python3 to act as a second user")
    done = subprocess.run(
        ["setpriv", f"--reuid={OTHER_UID}", f"--regid={OTHER_UID}", "--clear-groups"]
        + [str(SYSTEM_PYTHON), "-c", code],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


def announcing_flow(folder: Path) -> tuple[Path, Path, Path]:
    """A workflow whose command says (through a FIFO) that it runs, then waits for ``go``."""
    fifo, go = folder / "announce", folder / "go"
    os.mkfifo(fifo)
    path = write(
        folder,
        f"""
        [tasks.first]
        command = ["sh", "-c", "echo $$ > '{fifo}'; while [ ! -e '{go}' ]; do sleep 0.05; done"]
        """,
    )
    return path, fifo, go


# ---------------------------------------------------------------- item 1
def test_a_deleted_lock_file_lets_no_cron_keep_alive_start_a_second_owner(tmp_path):
    path, fifo, go = announcing_flow(tmp_path)
    db = tmp_path / "run.db"
    owner = start("run", path, "--db", db)
    try:
        with open(fifo) as stream:
            stream.read()
        Path(f"{db}.lock").unlink()  # rm *.lock, or a tmp cleaner ageing files by mtime
        second = taskloom("run", path, "--db", db, timeout=30)
    finally:
        go.touch()
    out, err = owner.communicate(timeout=30)
    assert second.returncode == 75, second.stderr
    assert f"is in use by taskloom run (pid {owner.pid} on " in second.stderr
    assert owner.returncode == 0, out + err  # its command was left alone
    assert "first" in out and "succeeded" in out


# ---------------------------------------------------------------- item 2
def test_a_second_run_of_a_file_with_another_data_dir_and_db_is_refused(tmp_path):
    path, fifo, go = announcing_flow(tmp_path)
    owner = start("run", path)  # the session's XDG_DATA_HOME
    try:
        with open(fifo) as stream:
            stream.read()
        # cron or systemd: no XDG_DATA_HOME of the session, and another --db too
        second = taskloom(
            "run", path, "--db", tmp_path / "other.db", XDG_DATA_HOME=str(tmp_path / "cron")
        )
    finally:
        go.touch()
    owner.communicate(timeout=30)
    assert second.returncode == 75, second.stderr
    (said,) = lines(second)  # one line, naming the owner and the store it runs on
    assert said.startswith(f"taskloom: {path} is in use by taskloom run (pid {owner.pid} on ")
    store = tmp_path / "xdg-data" / "taskloom" / "runs"
    assert f", on the store {store}/flow-" in said and said.endswith("not starting a second run")
    assert not (tmp_path / "other.db").exists()  # nothing opened, nothing started
    assert owner.returncode == 0


def test_status_of_a_file_run_on_another_store_finds_that_run(tmp_path):
    path, fifo, go = announcing_flow(tmp_path)
    elsewhere = tmp_path / "cron" / "run.db"
    owner = start("run", path, "--db", elsewhere)
    try:
        with open(fifo) as stream:
            stream.read()
        seen = taskloom("status", path)  # the session's data folder has no store of it
    finally:
        go.touch()
    owner.communicate(timeout=30)
    assert seen.returncode == 0, seen.stderr
    assert f"owner: taskloom run (pid {owner.pid} on " in seen.stdout


# ---------------------------------------------------------------- item 4
def unfinished_run(folder: Path, db: Path) -> Path:
    """A file whose task runs a second after the start, and a run of it stopped before."""
    path = write(
        folder,
        """
        [tasks.p]
        command = ["sh", "-c", "echo \\"$0\\" > said.txt", "the file"]
        after = "1s"
        """,
    )
    first = taskloom("run", path, "--db", db, "--for", "0.1s", cwd=folder)
    assert first.returncode == 1, first.stderr  # the task had not run: resumable
    return path


EDIT_SPEC = (
    "import sqlite3, sys\n"
    "conn = sqlite3.connect(sys.argv[1])\n"
    "spec = conn.execute(\"SELECT spec FROM tasks WHERE id = 'p'\").fetchone()[0]\n"
    "conn.execute(\"UPDATE tasks SET spec = ? WHERE id = 'p'\",\n"
    "             (spec.replace('the file', 'the store'),))\n"
    "conn.commit()\n"
)


def test_a_resumed_run_runs_what_the_file_says_not_an_edited_stored_spec(tmp_path):
    db = tmp_path / "run.db"
    path = unfinished_run(tmp_path, db)
    subprocess.run([sys.executable, "-c", EDIT_SPEC, str(db)], check=True)
    result = taskloom("run", path, "--db", db, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "said.txt").read_text() == "the file\n"


def test_a_store_another_user_owns_is_refused_and_nothing_runs(shared):
    db = shared / "x.db"
    path = unfinished_run(shared, db)
    for file in shared.glob("x.db*"):  # the other user's now, as if planted
        os.chown(file, OTHER_UID, OTHER_UID)
    as_other_user(EDIT_SPEC.replace("sys.argv[1]", repr(str(db))), shared)
    result = taskloom("run", path, "--db", db, cwd=shared)
    assert result.returncode == 2
    (said,) = lines(result)  # its lock file is the first of its files to be looked at
    assert said == (
        f"{db}.lock: the file belongs to another user (uid {OTHER_UID}, not {os.geteuid()}); "
        "refusing to use it"
    )
    os.chown(f"{db}.lock", os.geteuid(), os.getegid())  # the store itself is refused too
    again = taskloom("run", path, "--db", db, cwd=shared)
    assert again.returncode == 2
    assert lines(again) == [
        f"{db}: the store belongs to another user (uid {OTHER_UID}, not {os.geteuid()}); "
        "refusing to use it"
    ]
    assert not (shared / "said.txt").exists()


def test_a_store_made_writable_by_others_is_refused(tmp_path):
    db = tmp_path / "run.db"
    path = unfinished_run(tmp_path, db)
    db.chmod(0o666)
    result = taskloom("run", path, "--db", db, cwd=tmp_path)
    assert result.returncode == 2
    assert lines(result) == [
        f"{db}: the store is writable by other users (mode 0666); refusing to use it "
        "(chmod go-w to allow)"
    ]


# ---------------------------------------------------------------- item 5
def test_links_planted_by_another_user_in_a_shared_folder_are_not_followed(shared, tmp_path):
    precious = tmp_path / "precious.txt"
    precious.write_text("the victim's own file\n")
    tmp_path.chmod(0o755)  # the other user can reach it (the link must point somewhere)
    path = write(tmp_path, '[tasks.t]\ncommand = ["true"]\n')
    db = shared / "x.db"
    as_other_user(f"import os\nos.symlink({str(precious)!r}, 'x.db.lock')\n", shared)
    result = taskloom("run", path, "--db", db)
    assert result.returncode == 2
    assert lines(result) == [f"{db}.lock: a symbolic link; refusing to follow it"]
    assert precious.read_text() == "the victim's own file\n"


def test_a_log_folder_another_user_made_writable_to_all_is_refused(shared, tmp_path):
    path = write(tmp_path, '[tasks.t]\ncommand = ["true"]\n')
    logs = shared / "logs"
    as_other_user("import os\nos.mkdir('logs')\nos.chmod('logs', 0o2777)\n", shared)
    result = taskloom("run", path, "--log-dir", logs)
    assert result.returncode == 2
    assert lines(result) == [
        f"taskloom: {logs}: the log folder belongs to another user (uid {OTHER_UID}, "
        f"not {os.geteuid()}); refusing to use it"
    ]
    assert list(logs.iterdir()) == []


def test_a_link_planted_as_taskloom_log_is_refused(tmp_path):
    precious = tmp_path / "precious.txt"
    precious.write_text("keep\n")
    path = write(tmp_path, '[tasks.t]\ncommand = ["true"]\n')
    logs = tmp_path / "logs"
    logs.mkdir(mode=0o700)
    (logs / "taskloom.log").symlink_to(precious)
    result = taskloom("run", path, "--log-dir", logs)
    assert result.returncode == 2
    assert lines(result) == [
        f"taskloom: {logs}/taskloom.log: a symbolic link; refusing to follow it"
    ]
    assert precious.read_text() == "keep\n"


# ---------------------------------------------------------------- item 6
def test_the_run_log_is_0600_and_its_folders_0700_under_a_loose_umask(tmp_path):
    path = write(tmp_path, '[tasks.t]\ncommand = ["sh", "-c", "echo hi"]\n')
    run = start("run", path, "-v", umask=0o002)
    out, err = run.communicate(timeout=60)
    assert run.returncode == 0, err
    runs = tmp_path / "xdg-data" / "taskloom" / "runs"
    (folder,) = (runs / "logs").iterdir()
    log = folder / "taskloom.log"
    assert log.exists()
    assert oct(log.stat().st_mode & 0o777) == oct(0o600)
    for each in (folder, runs / "logs", runs, runs.parent):
        assert oct(each.stat().st_mode & 0o777) == oct(0o700), each


def test_python_m_taskloom_does_not_import_the_workflow_folders_own_modules(tmp_path):
    marker = tmp_path / "imported.txt"
    for name in ("uuid", "logging"):
        (tmp_path / f"{name}.py").write_text(
            f"open({str(marker)!r}, 'a').write({name!r} + '\\n')\nraise SystemExit(9)\n"
        )
    path = write(tmp_path, '[tasks.t]\ncommand = ["true"]\n')
    result = taskloom("run", path.name, cwd=tmp_path)
    assert not marker.exists(), marker.read_text()
    assert result.returncode == 0, result.stderr


# ---------------------------------------------------------------- item 12
def test_a_stopped_owner_is_not_answering_and_a_resumed_one_answers_again(tmp_path):
    from taskloom.engine.watched_run import WatchedRun

    path, fifo, go = announcing_flow(tmp_path)
    db = tmp_path / "run.db"
    owner = start("run", path, "--db", db)
    watcher = None
    try:
        with open(fifo) as stream:
            stream.read()
        watcher = WatchedRun(db, attach_timeout=20)
        assert watcher.owner_answering
        owner.send_signal(signal.SIGSTOP)
        wait_for(lambda: not watcher.owner_answering, what="the owner seen not answering")
        assert watcher.owner_alive  # frozen, not gone
        owner.send_signal(signal.SIGCONT)
        wait_for(lambda: watcher.owner_answering, what="the owner answering again")
    finally:
        owner.send_signal(signal.SIGCONT)
        go.touch()
        owner.communicate(timeout=30)
        if watcher is not None:
            watcher.close()


@pytest.mark.slow
def test_a_watcher_tells_an_owner_in_another_pid_namespace_alive_then_gone(tmp_path):
    from taskloom.engine.watched_run import WatchedRun

    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare for a PID namespace")
    path, fifo, go = announcing_flow(tmp_path)
    db = tmp_path / "run.db"
    owner = subprocess.Popen(  # a container sharing the folder: its own PID namespace
        ["unshare", "--pid", "--fork", "--kill-child", sys.executable, "-m", "taskloom"]
        + ["run", str(path), "--db", str(db)],
        cwd=ROOT,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    watcher = None
    try:
        with open(fifo) as stream:
            stream.read()
        watcher = WatchedRun(db, attach_timeout=20)
        time.sleep(2.5)  # several of the owner's beats: it must still count as alive
        assert watcher.owner_alive
        owner.kill()  # unshare's child dies with it (--kill-child)
        owner.communicate(timeout=30)
        wait_for(lambda: not watcher.owner_alive, what="the killed owner seen gone")
    finally:
        go.touch()
        if owner.poll() is None:
            owner.kill()
            owner.communicate(timeout=30)
        if watcher is not None:
            watcher.close()


def test_deleting_the_store_under_a_running_owner_stops_it_with_one_line(tmp_path):
    path, fifo, go = announcing_flow(tmp_path)
    db = tmp_path / "run.db"
    owner = start("run", path, "--db", db)
    try:
        with open(fifo) as stream:
            stream.read()
        db.unlink()
        out, err = owner.communicate(timeout=30)
    finally:
        go.touch()
        if owner.poll() is None:
            owner.kill()
            owner.communicate()
    assert owner.returncode == 2, out + err
    said = [line for line in err.splitlines() if "deleted" in line]
    assert said == [
        f"taskloom: {db}: the store was deleted under its owner; nothing more is scheduled; "
        "the run stopped"
    ]


# ---------------------------------------------------------------- item 15
def test_validate_no_import_runs_nothing_of_the_file_and_the_default_imports(tmp_path):
    marker = tmp_path / "ran.txt"
    (tmp_path / "evil.py").write_text(
        f"open({str(marker)!r}, 'w').write('top-level code ran')\ndef job():\n    pass\n"
    )
    path = write(tmp_path, '[tasks.t]\ncall = "evil:job"\n')
    checked = taskloom("validate", "--no-import", path)
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.strip() == f"{path} is valid (1 tasks)"
    as_json = taskloom("validate", "--no-import", "--json", path)
    assert as_json.returncode == 0 and json.loads(as_json.stdout)["valid"] is True
    assert not marker.exists()
    default = taskloom("validate", path)  # the default imports the calls' modules
    assert default.returncode == 0 and marker.exists()
    assert "--no-import" in taskloom("validate", "--help").stdout

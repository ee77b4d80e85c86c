"""A run outlives the process that runs it: commands go on when their owner dies without
warning, and the store's next owner adopts them; nothing runs twice, nothing is lost.

Real processes throughout: an owner process (a Scheduler on a SQLite store) runs
commands through its supervisor; the test kills the owner with SIGKILL and opens the
store itself as the next owner.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from taskloom.engine import Scheduler, TaskState
from taskloom.engine._jobs import supervision
from taskloom.engine.command import Command
from taskloom.engine.store import SQLiteStore
from tests._processes import alive, wait_for

pytestmark = pytest.mark.slow  # real processes: owners, watchers, signals, kills

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable


def gated_body(ledger: Path, gate: Path, code: int = 0) -> str:
    """A command that notes its start, waits for ``gate`` to exist, notes its end."""
    return (
        "import os, sys, time\n"
        f"open({str(ledger)!r}, 'a').write(f'start {{os.getpid()}}\\n')\n"
        "print('output before the owner died', flush=True)\n"
        "give_up = time.monotonic() + 60  # a failed test leaves nothing waiting for ever\n"
        f"while not os.path.exists({str(gate)!r}) and time.monotonic() < give_up:\n"
        "    time.sleep(0.01)\n"
        "print('output after', flush=True)\n"
        f"open({str(ledger)!r}, 'a').write('end\\n')\n"
        f"sys.exit({code})\n"
    )


def owner_script(db: Path, ledger: Path, gate: Path, *, code: int = 0, store: bool = True,
                 retry: str = "") -> str:  # fmt: skip
    make = f"SQLiteStore({str(db)!r})" if store else "None"
    return (
        "from taskloom.engine import Scheduler, RetryPolicy\n"
        "from taskloom.engine.command import Command\n"
        "from taskloom.engine.store import SQLiteStore\n"
        f"s = Scheduler(store={make})\n"
        "if 'cmd' not in {t.id for t in s.tasks()}:\n"
        f"    body = {gated_body(ledger, gate, code)!r}\n"
        f"    s.add(Command([{PY!r}, '-c', body]), name='cmd'{retry})\n"
        f"    s.add(Command(['sh', '-c', 'echo after >> {ledger}']), name='after', deps=['cmd'])\n"
        "s.start(); s.wait(); s.shutdown()\n"
    )


def start_owner(script: str, ledger: Path) -> subprocess.Popen:
    proc = subprocess.Popen([PY, "-c", script], cwd=ROOT)
    wait_for(lambda: _started(ledger) or proc.poll() is not None, what="the command's start")
    assert proc.poll() is None, "the owner exited early"
    return proc


def _started(ledger: Path) -> bool:
    return ledger.exists() and ledger.read_text().endswith("\n")


def kill_owner(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def ledger_lines(ledger: Path) -> list[str]:
    return ledger.read_text().split("\n")[:-1]


def command_pid(ledger: Path) -> int:
    return int(ledger_lines(ledger)[0].split()[1])


def assert_next_owner_records_one_success(db: Path, gate: Path) -> None:
    """As the store's next owner: open the gate, and the adopted command's one attempt
    ends as the run's one success of ``cmd``."""
    store = SQLiteStore(db)
    try:
        s = Scheduler(store=store)
        s.start()
        gate.touch()
        assert s.wait(20)
        assert [(a.number, a.outcome.value) for a in s.attempts("cmd")] == [(1, "succeeded")]
        s.shutdown()
    finally:
        store.close()


@pytest.fixture
def files(tmp_path):
    ledger = tmp_path / "ledger"
    yield tmp_path / "run.db", ledger, tmp_path / "gate"
    if ledger.exists():  # a failed test: end the commands it left waiting
        for line in ledger_lines(ledger):
            if line.startswith("start "):
                try:
                    os.kill(int(line.split()[1]), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass


@pytest.mark.timeout(60)
def test_a_command_outlives_its_killed_owner_and_the_next_owner_adopts_it(files):
    db, ledger, gate = files
    kill_owner(start_owner(owner_script(db, ledger, gate), ledger))
    pid = command_pid(ledger)
    assert alive(pid), "the command died with its owner"

    store = SQLiteStore(db)  # the next owner
    try:
        s = Scheduler(store=store)
        assert s.task("cmd").state is TaskState.RUNNING
        (attempt,) = s.attempts("cmd")
        assert attempt.number == 1 and attempt.ended is None
        assert alive(pid), "the next owner ended the command instead of adopting it"
        log_path = s.live_log("cmd")
        assert log_path is not None
        # The supervisor writes the output as it reads it: soon, not at once.
        wait_for(lambda: "output before the owner died" in Path(log_path).read_text())
        s.start()
        gate.touch()
        assert s.wait(20)
        (attempt,) = s.attempts("cmd")
        assert attempt.outcome.value == "succeeded" and attempt.number == 1
        assert s.task("after").state is TaskState.SUCCEEDED
        s.shutdown()
    finally:
        store.close()
    assert ledger_lines(ledger) == [f"start {pid}", "end", "after"]
    assert "output after" in Path(log_path).read_text()


@pytest.mark.timeout(60)
def test_a_command_that_ended_while_no_owner_ran_keeps_its_outcome(files):
    db, ledger, gate = files
    kill_owner(start_owner(owner_script(db, ledger, gate), ledger))
    pid = command_pid(ledger)
    gate.touch()
    wait_for(lambda: not alive(pid), what="the command's end")
    wait_for(lambda: _reader_outcome(db, "cmd") == "succeeded", what="the recorded end")

    store = SQLiteStore(db)
    try:
        s = Scheduler(store=store)
        s.start()
        assert s.wait(20)
        (attempt,) = s.attempts("cmd")
        assert attempt.outcome.value == "succeeded"
        s.shutdown()
    finally:
        store.close()
    assert ledger_lines(ledger) == [f"start {pid}", "end", "after"]  # never run again


def _reader_outcome(db: Path, task: str) -> str:
    """What ``taskloom history`` sees: a reader of the store, no owner."""
    reader = SQLiteStore.reader(db)
    try:
        return reader.attempts(task)[0]["outcome"]
    finally:
        reader.close()


@pytest.mark.timeout(60)
def test_history_shows_an_end_recorded_after_the_owner_died(files, tmp_path):
    db, ledger, gate = files
    kill_owner(start_owner(owner_script(db, ledger, gate, code=3), ledger))
    workflow = tmp_path / "flow.toml"  # what `taskloom history` is given: any file of that name
    workflow.write_text('[workflow]\nname = "flow"\n[tasks.cmd]\ncommand = ["true"]\n')
    history = [PY, "-m", "taskloom", "history", str(workflow), "--db", str(db)]
    before = subprocess.run(history, cwd=ROOT, capture_output=True, text=True, check=True)
    assert "still running under its supervisor" in before.stdout
    status = [PY, "-m", "taskloom", "status", str(workflow), "--db", str(db)]
    told = subprocess.run(status, cwd=ROOT, capture_output=True, text=True)
    assert "still running under its supervisor (the next start adopts it)" in told.stdout
    gate.touch()
    wait_for(lambda: _reader_outcome(db, "cmd") == "failed", what="the recorded end")
    reader = SQLiteStore.reader(db)
    try:
        (row,) = reader.attempts("cmd")
    finally:
        reader.close()
    assert row["exit_code"] == 3
    assert row["error"].startswith("exit code 3")
    assert "recorded by its supervisor" in row["error"]
    after = subprocess.run(history, cwd=ROOT, capture_output=True, text=True, check=True)
    line = next(line for line in after.stdout.splitlines() if " cmd " in line)
    assert "failed" in line and "exit code 3" in line, after.stdout
    status = [PY, "-m", "taskloom", "status", str(workflow), "--db", str(db)]
    told = subprocess.run(status, cwd=ROOT, capture_output=True, text=True)
    assert "ended after its owner stopped: cmd failed" in told.stdout, told.stdout + told.stderr


@pytest.mark.timeout(60)
def test_a_failure_that_ended_while_no_owner_ran_follows_the_retry_policy(files):
    db, ledger, gate = files
    retry = ", retry=RetryPolicy(max_attempts=2, base=0.01)"
    kill_owner(start_owner(owner_script(db, ledger, gate, code=3, retry=retry), ledger))
    pid = command_pid(ledger)
    gate.touch()
    wait_for(lambda: not alive(pid), what="the command's end")

    store = SQLiteStore(db)
    try:
        s = Scheduler(store=store)
        s.start()
        assert s.wait(20)
        outcomes = [(a.number, a.outcome.value) for a in s.attempts("cmd")]
        assert outcomes == [(1, "failed"), (2, "failed")]  # retried, not lost, not rerun
        assert "exit code 3" in s.attempts("cmd")[0].error
        assert s.task("cmd").state is TaskState.FAILED
        s.shutdown()
    finally:
        store.close()


@pytest.mark.timeout(60)
def test_without_a_store_commands_die_with_their_owner(files):
    """Nobody could adopt them: as before, no command outlives its owner."""
    db, ledger, gate = files
    kill_owner(start_owner(owner_script(db, ledger, gate, store=False), ledger))
    pid = command_pid(ledger)
    wait_for(lambda: not alive(pid), timeout=5, what="the command's end")


def _supervisor_of(owner_pid: int) -> int:
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                cmdline = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if (
                any(part.endswith(b"supervisor.py") for part in cmdline)
                and len(cmdline) > 5
                and cmdline[5] == str(owner_pid).encode()
            ):
                return int(name)
    raise AssertionError(f"no supervisor for {owner_pid}")


@pytest.mark.timeout(60)
def test_a_command_whose_supervisor_was_killed_too_is_lost_and_ended(files):
    db, ledger, gate = files
    proc = start_owner(owner_script(db, ledger, gate), ledger)
    supervisor = _supervisor_of(proc.pid)
    pid = command_pid(ledger)
    kill_owner(proc)  # first: a living owner ends the commands of a supervisor killed alone
    os.kill(supervisor, signal.SIGKILL)
    wait_for(lambda: not alive(supervisor), what="the supervisor's end")  # as a restart sees it
    assert alive(pid)  # unsupervised now, until the next owner ends it

    store = SQLiteStore(db)
    try:
        # Ended by the new owner's open (a kill lands a moment later on a loaded machine).
        wait_for(lambda: not alive(pid), timeout=5.0, what="the unsupervised command's end")
        s = Scheduler(store=store)
        assert s.task("cmd").state is TaskState.READY
        assert [a.outcome.value for a in s.attempts("cmd")] == ["lost"]
        s.shutdown()
    finally:
        store.close()


@pytest.mark.timeout(60)
def test_hand_over_leaves_running_commands_to_the_next_owner(tmp_path):
    db, ledger, gate = tmp_path / "run.db", tmp_path / "ledger", tmp_path / "gate"
    store = SQLiteStore(db)
    s = Scheduler(store=store)
    s.add(Command([PY, "-c", gated_body(ledger, gate)]), name="cmd")
    s.start()
    wait_for(lambda: _started(ledger), what="the command's start")
    pid = command_pid(ledger)
    s.shutdown(wait=True, hand_over=True)
    store.close()
    assert alive(pid), "the hand-over stopped the command"

    store = SQLiteStore(db)
    try:
        s = Scheduler(store=store)
        assert s.task("cmd").state is TaskState.RUNNING
        s.start()
        gate.touch()
        assert s.wait(20)
        assert [(a.outcome.value, a.error) for a in s.attempts("cmd")] == [("succeeded", None)]
        s.shutdown()
    finally:
        store.close()
    assert ledger_lines(ledger) == [f"start {pid}", "end"]


@pytest.mark.timeout(60)
def test_an_adopted_command_can_be_cancelled(files):
    db, ledger, gate = files
    kill_owner(start_owner(owner_script(db, ledger, gate), ledger))
    pid = command_pid(ledger)
    store = SQLiteStore(db)
    try:
        s = Scheduler(store=store)
        s.start()
        s.cancel("cmd")
        wait_for(lambda: not alive(pid), what="the cancelled command's end")
        wait_for(lambda: s.task("cmd").state is TaskState.CANCELLED, what="CANCELLED")
        s.shutdown()
    finally:
        store.close()


@pytest.mark.timeout(60)
def test_a_stop_is_still_a_stop(files):
    """shutdown(cancel_running=True) ends the command; its attempt is interrupted and
    the next owner runs it again."""
    db, ledger, gate = files
    store = SQLiteStore(db)
    s = Scheduler(store=store)
    s.add(Command([PY, "-c", gated_body(ledger, gate)]), name="cmd")
    s.start()
    wait_for(lambda: _started(ledger), what="the command's start")
    pid = command_pid(ledger)
    s.shutdown(wait=True, cancel_running=True)
    store.close()
    assert not alive(pid)
    store = SQLiteStore(db)
    try:
        s = Scheduler(store=store)
        assert [a.outcome.value for a in s.attempts("cmd")] == ["interrupted"]
        assert s.task("cmd").state is TaskState.READY
        s.shutdown()
    finally:
        store.close()


def test_a_start_asked_by_a_dead_owner_is_not_carried_out_once_the_store_has_a_new_owner(
    tmp_path,
):
    """The race the owner file closes: a start request still in the supervisor's socket
    when its owner dies must not start the command after the next owner has read the
    records (it would run it again)."""
    folder = tmp_path / "run.db-supervised"
    supervision.prepare_folder(folder, "owner-a")
    client = supervision.client()
    supervision.prepare_folder(folder, "owner-b")  # the next owner took the store over
    marker = tmp_path / "ran"
    log = tmp_path / "log"
    log.touch()
    pending = client.start({
        "argv": ["sh", "-c", f"touch {marker}"], "shell": False, "cwd": None,
        "env": dict(os.environ), "log": str(log), "max_log_bytes": 1000, "tail_bytes": 100,
        "grace": 1.0, "folder": str(folder), "key": [1, "t", 1], "owner": "owner-a",
        "timeout": None,
    })  # fmt: skip
    assert pending.ended.wait(10)
    assert pending.end is not None and pending.end["error"].startswith("not started")
    assert not marker.exists()
    (attempt,) = supervision.scan(folder).values()
    assert attempt.end is not None and attempt.pid is None


@pytest.mark.timeout(60)
def test_the_supervisor_enforces_the_timeout_once_its_owner_is_gone(files):
    db, ledger, gate = files
    script = owner_script(db, ledger, gate).replace("name='cmd'", "name='cmd', timeout=1.5")
    kill_owner(start_owner(script, ledger))
    pid = command_pid(ledger)
    wait_for(lambda: not alive(pid), timeout=10, what="the timed-out command's end")
    store = SQLiteStore(db)
    try:
        s = Scheduler(store=store)
        s.start()
        wait_for(lambda: s.task("cmd").state is TaskState.FAILED, what="FAILED")
        (attempt,) = s.attempts("cmd")
        assert "timeout" in attempt.error or attempt.error.startswith("timed out")
        s.shutdown()
    finally:
        store.close()
    assert "end" not in ledger_lines(ledger)


def test_the_records_are_json_lines_the_docs_describe(files):
    db, ledger, gate = files
    gate.touch()
    store = SQLiteStore(db)
    try:
        s = Scheduler(store=store)
        s.add(Command([PY, "-c", gated_body(ledger, gate)]), name="cmd")
        s.start()
        assert s.wait(20)
        s.shutdown()
        folder = supervision.supervised_folder(db)
        (path,) = folder.glob("*.jsonl")
        kinds = [json.loads(line)["ev"] for line in path.read_text().splitlines()]
        assert kinds == ["start", "pid", "end"]
    finally:
        store.close()
    # The supervisor drops the file once told the store closed (a message: not at once).
    wait_for(lambda: not list(folder.glob("*.jsonl")), what="a clean close to drop the records")


@pytest.mark.timeout(90)
def test_a_command_whose_owner_is_killed_three_times_is_never_lost(files):
    """'Lost 3 times' is for code that brings Taskloom down; a command cannot."""
    db, ledger, gate = files
    kill_owner(start_owner(owner_script(db, ledger, gate), ledger))
    pid = command_pid(ledger)
    ready = db.with_name("ready")
    for _ in range(3):  # each next owner adopts it (and says so), and is killed too
        ready.unlink(missing_ok=True)
        script = owner_script(db, ledger, gate).replace(
            "s.start(); s.wait()",
            f"assert s.adopted_tasks() == ['cmd']; s.start(); open({str(ready)!r}, 'w'); s.wait()",
        )
        owner = subprocess.Popen([PY, "-c", script], cwd=ROOT)
        wait_for(lambda p=owner: ready.exists() or p.poll() is not None, what="the adoption")
        assert owner.poll() is None, "the next owner did not adopt the command"
        kill_owner(owner)
        assert alive(pid)
    assert_next_owner_records_one_success(db, gate)
    assert ledger_lines(ledger) == [f"start {pid}", "end", "after"]


@pytest.mark.timeout(60)
def test_an_adopted_command_holds_a_worker_slot(files):
    """With one worker, the adopted command is the one run in flight: a ready task
    waits for its end (not started beside it)."""
    db, ledger, gate = files
    script = owner_script(db, ledger, gate).replace(
        "Scheduler(store=", "Scheduler(workers=1, store="
    )
    script = script.replace(
        "    s.add(Command(['sh'",
        f"    s.add(Command(['sh', '-c', 'echo other >> {ledger}']), name='other', priority=-1)\n"
        "    s.add(Command(['sh'",
    )
    kill_owner(start_owner(script, ledger))
    pid = command_pid(ledger)
    store = SQLiteStore(db)
    try:
        s = Scheduler(workers=1, store=store)
        s.start()
        assert s.task("other").state is TaskState.READY
        # A negative can only be shown over some time: half a second in which a free
        # worker would certainly have started it.
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline:
            assert s.task("other").state is TaskState.READY
            time.sleep(0.02)
        gate.touch()
        assert s.wait(20)
        s.shutdown()
    finally:
        store.close()
    assert ledger_lines(ledger) == [f"start {pid}", "end", "after", "other"]


@pytest.mark.timeout(60)
def test_an_owner_that_never_starts_leaves_adopted_commands_to_the_next(files):
    """Opening the store only to read or steer it (the shell's steering of a stored run)
    and shutting down without start() neither waits for nor disturbs the command."""
    db, ledger, gate = files
    kill_owner(start_owner(owner_script(db, ledger, gate), ledger))
    pid = command_pid(ledger)
    store = SQLiteStore(db)
    s = Scheduler(store=store)
    assert s.adopted_tasks() == ["cmd"]
    s.shutdown(wait=True)  # returns at once: nothing of this scheduler ran
    store.close()
    assert alive(pid)
    assert_next_owner_records_one_success(db, gate)


@pytest.mark.timeout(60)
def test_a_live_owners_supervisor_killed_alone_loses_the_attempt_which_runs_again(files):
    """The owner lives but its supervisor was killed: the command is ended (nobody would
    record it), its attempt is lost (not failed) and the task runs again."""
    db, ledger, gate = files
    store = SQLiteStore(db)
    try:
        s = Scheduler(store=store)
        s.add(Command([PY, "-c", gated_body(ledger, gate)]), name="cmd")
        s.start()
        wait_for(lambda: _started(ledger), what="the command's start")
        first = command_pid(ledger)
        supervisor = supervision.client().pid
        os.kill(supervisor, signal.SIGKILL)
        wait_for(lambda: not alive(first), what="the unsupervised command's end")
        wait_for(lambda: len(ledger_lines(ledger)) == 2, what="the second attempt's start")
        gate.touch()
        assert s.wait(20)
        outcomes = [(a.number, a.outcome.value) for a in s.attempts("cmd")]
        assert outcomes == [(1, "lost"), (2, "succeeded")]
        s.shutdown()
    finally:
        store.close()

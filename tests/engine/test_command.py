"""Commands: real subprocesses, captured output, and nothing left running afterwards."""

from __future__ import annotations

import os
import pickle
import signal
import stat
import sys
import threading
from pathlib import Path

import pytest

from taskloom.engine import RetryPolicy, SystemClock, TaskState
from taskloom.engine.command import Command, CommandFailed
from taskloom.engine.errors import TaskCancelled
from taskloom.engine.testing import RunContext, run_in_context
from tests._processes import group_exists

PY = sys.executable


def run_command(command: Command, tmp_path: Path, task_id: str = "job") -> RunContext:
    ctx = RunContext(task_id, 1, log_dir=str(tmp_path / "logs"))
    run_in_context(ctx, command)
    return ctx


@pytest.fixture
def fifo(tmp_path):
    """A named pipe: the command writes its pids into it, the test blocks reading them."""
    path = tmp_path / "announce"
    os.mkfifo(path)
    return path


def read_pids(fifo: Path) -> list[int]:
    with open(fifo) as stream:  # returns once the command has written and closed it
        return [int(word) for word in stream.read().split()]


# A shell that starts a grandchild, announces both pids, then waits.
FAMILY = 'sleep 60 & echo "$$ $!" > "{fifo}"; wait'


def test_exit_zero_succeeds_and_reports_output(tmp_path):
    script = "import sys; print('hello'); print('warn', file=sys.stderr)"
    ctx = run_command(Command([PY, "-c", script]), tmp_path)
    assert ctx.exit_code == 0
    assert "hello" in ctx.output and "warn" in ctx.output
    log = Path(ctx.log_path)
    assert log.parent == tmp_path / "logs" and log.name.startswith("job-1-")
    assert sorted(log.read_text().split()) == ["hello", "warn"]  # two pipes: any order


def test_nonzero_exit_raises_with_the_last_stderr_line(tmp_path):
    script = (
        "import sys; print('working'); print('first problem', file=sys.stderr);"
        "print('disk full', file=sys.stderr); sys.exit(3)"
    )
    with pytest.raises(CommandFailed) as caught:
        run_command(Command([PY, "-c", script]), tmp_path)
    assert str(caught.value) == "exit code 3: disk full"
    assert caught.value.exit_code == 3


def test_exit_without_stderr_says_just_the_code(tmp_path):
    ctx = RunContext("job", 1, log_dir=str(tmp_path))
    with pytest.raises(CommandFailed, match=r"^exit code 4$"):
        run_in_context(ctx, Command([PY, "-c", "raise SystemExit(4)"]))
    assert ctx.exit_code == 4


def test_each_attempt_gets_its_own_log(tmp_path):
    command = Command([PY, "-c", "print('run')"])
    first = run_command(command, tmp_path)
    second = RunContext("job", 2, log_dir=str(tmp_path / "logs"))
    run_in_context(second, command)
    assert first.log_path != second.log_path
    assert Path(second.log_path).name.startswith("job-2-")


def test_without_a_run_the_log_goes_to_the_private_cache_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = tmp_path / "cache" / "taskloom" / "logs"
    # No RunContext: it still runs, returns, and its output is kept in the user's cache.
    assert Command([PY, "-c", "print('outside')"])() is None
    [log] = folder.iterdir()
    assert log.name.endswith(".log") and log.read_text() == "outside\n"
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    with pytest.raises(CommandFailed, match="exit code 5"):  # and it still fails like one
        Command([PY, "-c", "raise SystemExit(5)"])()


def test_big_output_is_capped_with_its_tail_kept(tmp_path, monkeypatch):
    import taskloom.engine.command as command_module

    monkeypatch.setattr(command_module, "MAX_LOG_BYTES", 100_000)
    script = "import sys\nfor i in range(20000): print(f'line {i:05d}')\nprint('THE END')"
    ctx = run_command(Command([PY, "-c", script]), tmp_path)
    text = Path(ctx.log_path).read_text()
    assert len(text) < 100_000 + 5_000
    assert text.startswith("line 00000\n")
    assert "bytes left out" in text
    assert text.rstrip().endswith("THE END")
    assert ctx.output.rstrip().endswith("THE END") and len(ctx.output) <= 4096


def test_shell_string_env_and_cwd(tmp_path):
    (tmp_path / "here.txt").write_text("x")
    command = Command('echo "$GREETING"; ls', shell=True, cwd=tmp_path, env={"GREETING": "hi"})
    ctx = run_command(command, tmp_path)
    assert ctx.output.split()[0] == "hi"
    assert "here.txt" in ctx.output.split()


def test_env_merges_over_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("TASKLOOM_TEST_OUTER", "outer")
    script = "import os; print(os.environ['TASKLOOM_TEST_OUTER'], os.environ['INNER'])"
    ctx = run_command(Command([PY, "-c", script], env={"INNER": "inner"}), tmp_path)
    assert ctx.output.split() == ["outer", "inner"]


def test_a_missing_program_is_a_failed_attempt(tmp_path):
    with pytest.raises(CommandFailed, match="cannot start 'no-such-program-here'"):
        run_command(Command(["no-such-program-here"]), tmp_path)


@pytest.mark.parametrize(
    ("args", "kwargs", "error"),
    [
        (("echo hi",), {}, ValueError),  # a string needs shell=True
        (([],), {}, ValueError),
        ((["", "x"],), {}, ValueError),
        (("   ",), {"shell": True}, ValueError),
        ((["echo", "hi"],), {"shell": True}, ValueError),
        ((["echo", 3],), {}, TypeError),
        ((["echo"],), {"env": {"N": 3}}, TypeError),
    ],
)
def test_bad_arguments_are_refused_up_front(args, kwargs, error):
    with pytest.raises(error):
        Command(*args, **kwargs)


def test_command_is_a_plain_picklable_value():
    command = Command(["python3", "/srv/etl.py", "--full"], cwd="/srv", env={"A": "1"})
    assert pickle.loads(pickle.dumps(command)) == command
    assert command != Command(["python3", "/srv/etl.py"], cwd="/srv", env={"A": "1"})
    assert hash(command) == hash(Command(["python3", "/srv/etl.py", "--full"], cwd="/srv"))
    assert repr(command) == (
        "Command(['python3', '/srv/etl.py', '--full'], cwd='/srv', env={'A': '1'})"
    )
    assert command.__name__ == "python3"
    assert Command("/usr/bin/make -j4 all", shell=True).__name__ == "make"


def test_cancel_terminates_the_whole_process_group(tmp_path, fifo):
    ctx = RunContext("job", 1, log_dir=str(tmp_path))
    outcome = []

    def run():
        try:
            run_in_context(ctx, Command(["sh", "-c", FAMILY.format(fifo=fifo)]))
        except BaseException as exc:
            outcome.append(exc)

    runner = threading.Thread(target=run)
    runner.start()
    shell_pid, grandchild_pid = read_pids(fifo)
    assert os.getpgid(grandchild_pid) == shell_pid  # one group, led by the command
    ctx.request_cancel()
    runner.join(10)
    assert not runner.is_alive()
    assert isinstance(outcome[0], TaskCancelled)
    assert ctx.exit_code == -signal.SIGTERM
    assert not group_exists(shell_pid)


def test_processes_left_behind_after_exit_are_stopped(tmp_path, fifo):
    script = f'sleep 60 & echo "$$ $!" > "{fifo}"'
    done = threading.Event()
    runner = threading.Thread(
        target=lambda: (run_command(Command(["sh", "-c", script]), tmp_path), done.set())
    )
    runner.start()
    shell_pid, grandchild_pid = read_pids(fifo)
    runner.join(10)
    assert done.is_set()
    assert not group_exists(shell_pid)


def test_a_process_ignoring_sigterm_is_killed_after_the_grace(tmp_path, fifo, monkeypatch):
    import taskloom.engine.command as command_module

    monkeypatch.setattr(command_module, "GRACE_SECONDS", 0.5)
    script = f"trap '' TERM; echo $$ > '{fifo}'; while :; do sleep 0.1; done"
    ctx = RunContext("job", 1, log_dir=str(tmp_path))
    outcome = []
    runner = threading.Thread(
        target=lambda: outcome.append(_outcome(ctx, Command(["sh", "-c", script])))
    )
    runner.start()
    (pid,) = read_pids(fifo)
    ctx.request_cancel()
    runner.join(10)
    assert isinstance(outcome[0], TaskCancelled)
    assert "SIGKILL" in str(outcome[0])
    assert not group_exists(pid)


def _outcome(ctx, command):
    try:
        return run_in_context(ctx, command)
    except BaseException as exc:
        return exc


# ---------------------------------------------------------------------- through the engine
def test_engine_records_output_and_exit_code(make_sched, recorder, tmp_path):
    s = make_sched(threads=True, clock=SystemClock(), log_dir=str(tmp_path))
    events = recorder(s)
    script = "import sys; print('to stdout'); print('bad input', file=sys.stderr); sys.exit(2)"
    s.schedule(Command([PY, "-c", script]), name="job")
    event = events.wait_kind("job", "failed")
    assert event.error == "CommandFailed: exit code 2: bad input"
    (attempt,) = s.attempts("job")
    assert attempt.exit_code == 2
    assert "to stdout" in attempt.output
    assert Path(attempt.log_path).parent == tmp_path


def test_engine_retries_a_command_until_it_succeeds(make_sched, recorder, tmp_path):
    counter = tmp_path / "count"
    script = (
        "import pathlib, sys; p = pathlib.Path(sys.argv[1]);"
        "n = int(p.read_text()) + 1 if p.exists() else 1; p.write_text(str(n));"
        "sys.exit(0 if n >= 3 else 1)"
    )
    s = make_sched(threads=True, clock=SystemClock())
    events = recorder(s)
    retry = RetryPolicy(max_attempts=3, base=0.01, jitter=0.0)
    s.schedule(Command([PY, "-c", script, str(counter)]), name="flaky", retry=retry)
    events.wait_kind("flaky", "succeeded")
    assert counter.read_text() == "3"
    assert [a.exit_code for a in s.attempts("flaky")] == [1, 1, 0]


def test_engine_cancel_leaves_no_process_behind(make_sched, recorder, tmp_path, fifo):
    s = make_sched(threads=True, clock=SystemClock())
    events = recorder(s)
    s.schedule(Command(["sh", "-c", FAMILY.format(fifo=fifo)]), name="long")
    shell_pid, _ = read_pids(fifo)
    assert s.cancel("long") is True
    events.wait_kind("long", "cancelled")
    assert s.task("long").state is TaskState.CANCELLED
    assert not group_exists(shell_pid)


def test_engine_timeout_leaves_no_process_behind(make_sched, recorder, tmp_path, fifo):
    s = make_sched(threads=True, clock=SystemClock())
    events = recorder(s)
    s.schedule(Command(["sh", "-c", FAMILY.format(fifo=fifo)]), name="slow", timeout=0.5)
    shell_pid, _ = read_pids(fifo)
    failed = events.wait_kind("slow", "failed")
    assert "Timeout" in failed.error
    s.shutdown(wait=True)  # returns once the terminated command's attempt has ended
    assert not group_exists(shell_pid)


def test_a_command_ignores_no_signal_its_supervisor_might(tmp_path):
    """Ignored signals survive exec: the supervisor must pass none on (not Python's
    own SIGPIPE either), so a program is stopped by SIGINT or SIGPIPE as it expects."""
    ctx = run_command(Command(["grep", "SigIgn", "/proc/self/status"]), tmp_path)
    ignored = int(ctx.output.split()[1], 16)
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGTERM, signal.SIGPIPE):
        assert not ignored & (1 << (sig - 1)), signal.Signals(sig).name

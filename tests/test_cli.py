"""The taskloom command, run as a real subprocess on real workflow files."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests._processes import group_exists

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "resources" / "examples"
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}


@pytest.fixture(autouse=True)
def private_store_dir(tmp_path, monkeypatch):
    """Each test's runs get their own store directory (XDG_DATA_HOME)."""
    monkeypatch.setitem(ENV, "XDG_DATA_HOME", str(tmp_path / "xdg-data"))


def taskloom(*args, timeout: float = 90, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "taskloom", *map(str, args)],
        cwd=ROOT,
        env={**ENV, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def write(tmp_path: Path, text: str, name: str = "flow.toml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_version():
    result = taskloom("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == "taskloom 0.1.0"


def test_validate_a_valid_file():
    result = taskloom("validate", EXAMPLES / "etl.toml")
    assert result.returncode == 0
    assert result.stdout.strip() == f"{EXAMPLES / 'etl.toml'} is valid (6 tasks)"


def test_validate_lists_every_problem_and_exits_2(tmp_path):
    path = write(
        tmp_path,
        """
        [tasks.a]
        command = ["true"]
        prioity = 1

        [tasks.b]
        command = ["true"]
        deps = ["nope"]
        cron = "0 25 * * *"
        """,
    )
    result = taskloom("validate", path)
    assert result.returncode == 2  # invalid input, as for run
    lines = result.stdout.strip().splitlines()
    assert lines == [
        f"{path}:4:1: tasks.a.prioity: unknown key (did you mean 'priority'?)",
        f"{path}:9:1: tasks.b.cron: bad cron expression '0 25 * * *': Bad hour",
        f"{path}:8:1: tasks.b.deps: unknown task 'nope'",
    ]


def test_validate_reports_a_tzdata_folder_as_an_unknown_time_zone(tmp_path):
    path = write(
        tmp_path, '[tasks.a]\ncommand = ["true"]\ncron = "0 2 * * *"\ntimezone = "Europe"\n'
    )
    result = taskloom("validate", path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    (line,) = result.stdout.strip().splitlines()
    assert line.startswith(f"{path}:4:1: tasks.a.timezone: unknown time zone 'Europe'")


def test_run_an_invalid_file_exits_2(tmp_path):
    path = write(tmp_path, '[tasks.a]\ncommand = "echo no shell"\n')
    result = taskloom("run", path)
    assert result.returncode == 2
    assert f"{path}: tasks.a.command: a command string needs shell = true" in result.stderr


def test_run_a_syntax_error_exits_2(tmp_path):
    path = write(tmp_path, "[tasks.a\n")
    result = taskloom("run", path)
    assert result.returncode == 2
    assert f"{path}:1:" in result.stderr


@pytest.mark.slow
def test_run_etl_succeeds():
    result = taskloom("run", EXAMPLES / "etl.toml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "etl: 6 succeeded" in result.stdout
    lines = result.stdout.splitlines()
    finished = [
        line.split()[1] for line in lines if line.rstrip().endswith("succeeded (attempt 1)")
    ]
    assert finished[0] == "extract" and finished[-1] == "cleanup"
    assert finished.index("load") > max(finished.index("clean_a"), finished.index("clean_b"))


@pytest.mark.slow
def test_run_flaky_exits_1_with_a_retried_success_and_a_skip():
    result = taskloom("run", EXAMPLES / "flaky.toml")
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    assert "flaky            succeeded (attempt 3)" in out
    assert "broken           failed (attempt 2): CommandFailed: exit code 2" in out
    assert "publish          skipped" in out
    assert "flaky: 1 failed, 1 skipped, 3 succeeded" in out
    assert "FAILED broken" in out


@pytest.mark.slow
def test_run_recurring_for_a_while_exits_0():
    result = taskloom("run", EXAMPLES / "recurring.toml", "--for", "5s")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "health           succeeded (attempt 1)" in result.stdout
    # The first check is due at 3 s; its downstream report starts right after it.
    assert "report           running (attempt 1)" in result.stdout
    assert "recurring: " in result.stdout


def test_for_stops_an_unfinished_workflow_and_exits_1(tmp_path):
    path = write(tmp_path, '[tasks.slow]\ncommand = ["sleep", "60"]\n')
    result = taskloom("run", path, "--for", "1s", timeout=30)
    assert result.returncode == 1
    # the attempt was interrupted, not the task's fault: it waits, READY, for the next run
    assert "slow             ready (attempt 1)" in result.stdout
    assert "flow: 1 ready" in result.stdout


@pytest.mark.slow
def test_next_run_resumes_an_interrupted_one_and_then_starts_afresh(tmp_path):
    marker = tmp_path / "first-done"
    path = write(
        tmp_path,
        f"""
        [tasks.first]
        command = ["sh", "-c", "touch '{marker}'"]

        [tasks.second]
        command = ["sh", "-c", "test -e '{marker}.go' || sleep 60"]
        deps = ["first"]
        """,
    )
    interrupted = taskloom("run", path, "--for", "1.5s", timeout=30)
    assert interrupted.returncode == 1
    assert "second           ready (attempt 1)" in interrupted.stdout
    (tmp_path / "first-done.go").touch()
    marker.unlink()
    resumed = taskloom("run", path, timeout=30)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "resuming the unfinished run" in resumed.stdout
    assert "first " not in resumed.stdout.split("resuming", 1)[1].split("\n", 1)[1]
    assert not marker.exists()  # the finished task did not run again
    assert "second           succeeded (attempt 2)" in resumed.stdout
    again = taskloom("run", path, timeout=30)
    assert "run 2 of flow" in again.stdout  # the last run finished: a new one starts
    assert marker.exists()


@pytest.mark.slow
def test_run_with_processes_executor(tmp_path):
    path = write(
        tmp_path,
        f"""
        [tasks.a]
        command = ["{sys.executable}", "-c", "print('a')"]

        [tasks.b]
        command = ["{sys.executable}", "-c", "print('b')"]
        deps = ["a"]
        """,
    )
    result = taskloom("run", path, "--executor", "processes", "--workers", "2")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 succeeded" in result.stdout


def test_unknown_executor_exits_2(tmp_path):
    path = write(tmp_path, '[tasks.a]\ncommand = ["true"]\n')
    result = taskloom("run", path, "--executor", "gpu")
    assert result.returncode == 2
    assert "executor must be" in result.stderr


def test_bad_for_is_a_usage_error():
    result = taskloom("run", EXAMPLES / "etl.toml", "--for", "soon")
    assert result.returncode == 2
    assert "bad duration 'soon'" in result.stderr


def test_ctrl_c_terminates_running_commands(tmp_path):
    fifo = tmp_path / "announce"
    os.mkfifo(fifo)
    path = write(
        tmp_path,
        f"""
        [tasks.long]
        command = ["sh", "-c", "sleep 60 & echo $$ > '{fifo}'; wait"]
        """,
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "taskloom", "run", str(path)],
        cwd=ROOT,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    with open(fifo) as stream:  # returns once the command runs
        group = int(stream.read())
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 130, out + err  # 128 + SIGINT, not a failed task
    assert "interrupted" in out
    assert "long             ready (attempt 1)" in out  # interrupted, resumable
    assert not group_exists(group)


def test_sigterm_stops_a_recurring_workflow_cleanly(tmp_path):
    fifo = tmp_path / "announce"
    os.mkfifo(fifo)
    path = write(
        tmp_path,
        f"""
        [tasks.watch]
        command = ["sh", "-c", "sleep 60 & echo $$ > '{fifo}'; wait"]
        every = "100ms"
        """,
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "taskloom", "run", str(path)],
        cwd=ROOT,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    with open(fifo) as stream:
        group = int(stream.read())
    process.terminate()
    out, err = process.communicate(timeout=30)
    assert process.returncode == 143, out + err  # 128 + SIGTERM
    assert "watch            ready (attempt 1)" in out  # interrupted, resumable
    assert not group_exists(group)


# ---------------------------------------------------------------------- bad files
@pytest.mark.timeout(60)
@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_fifo_is_refused_in_one_line_with_exit_2(tmp_path, command):
    fifo = tmp_path / "flow.toml"
    os.mkfifo(fifo)
    result = taskloom(command, fifo, timeout=30)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.splitlines() == [f"{fifo}: cannot read: not a regular file"]
    assert result.stdout == ""


@pytest.mark.timeout(60)
@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_huge_file_is_refused_in_one_line_with_exit_2(tmp_path, command):
    path = tmp_path / "flow.toml"
    with open(path, "wb") as stream:
        stream.truncate(33 * 1024 * 1024)
    result = taskloom(command, path, timeout=30)
    assert result.returncode == 2, result.stdout + result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"{path}: cannot read: ") and "32 MiB" in line


def test_validate_a_missing_file_exits_2(tmp_path):
    result = taskloom("validate", tmp_path / "missing.toml")
    assert result.returncode == 2
    assert result.stderr.startswith(f"{tmp_path / 'missing.toml'}: cannot read: ")


@pytest.mark.parametrize("value", ["[" * 2000 + "]" * 2000, "{ a = " * 5000 + "1" + " }" * 5000])
def test_deeply_nested_toml_is_a_problem_not_a_crash(tmp_path, value):
    path = write(tmp_path, f'x = {value}\n[tasks.a]\ncommand = ["true"]\n')
    checked = taskloom("validate", path)
    assert checked.returncode == 2, checked.stderr
    # validate gives every problem a place: where the key is, else the file's start
    assert re.match(rf"{re.escape(str(path))}:\d+:\d+: (x: )?nested too deeply", checked.stdout)
    ran = taskloom("run", path)
    assert ran.returncode == 2, ran.stderr
    assert f"{path}: nested too deeply" in ran.stderr
    assert "Traceback" not in checked.stderr + ran.stderr


@pytest.mark.parametrize("name", ["../up", "a/b", "dot\\u0007"])
def test_a_path_like_workflow_name_is_refused_by_validate_and_run(tmp_path, name):
    path = write(tmp_path, f'[workflow]\nname = "{name}"\n[tasks.a]\ncommand = ["true"]\n')
    checked = taskloom("validate", path)
    assert checked.returncode == 2
    assert f"{path}:2:1: workflow.name: must not contain" in checked.stdout
    ran = taskloom("run", path)
    assert ran.returncode == 2
    assert f"{path}: workflow.name: must not contain" in ran.stderr
    assert "Traceback" not in ran.stderr


@pytest.mark.parametrize("text", ["1e400", "nan"])
def test_validate_refuses_the_durations_run_refuses(tmp_path, text):
    path = write(tmp_path, f'[tasks.a]\ncommand = ["true"]\nafter = "{text}"\n')
    result = taskloom("validate", path)
    assert result.returncode == 2
    assert f"{path}:3:1: tasks.a.after: bad duration '{text}'" in result.stdout


def test_validate_refuses_a_dask_port_out_of_range(tmp_path):
    path = write(
        tmp_path, '[workflow]\nexecutor = "dask://localhost:99999"\n[tasks.a]\ncommand = ["true"]\n'
    )
    result = taskloom("validate", path)
    assert result.returncode == 2
    assert f"{path}:2:1: workflow.executor: port must be 1 to 65535" in result.stdout


@pytest.mark.timeout(30)
def test_run_refuses_an_executor_option_with_a_port_out_of_range_at_once(tmp_path):
    path = write(tmp_path, '[tasks.a]\ncommand = ["true"]\n')
    result = taskloom("run", path, "--executor", "dask://localhost:99999", timeout=8)
    assert result.returncode == 2
    assert "port must be 1 to 65535" in result.stderr


def test_run_and_validate_never_import_qt():
    code = (
        "import sys; from taskloom.cli import main; "
        f"main(['validate', {str(EXAMPLES / 'etl.toml')!r}]); "
        "qt = ('PySide6', 'taskloom.gui', 'taskloom.app'); "
        "assert not [m for m in sys.modules if m.startswith(qt)]"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=ENV, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.slow
def test_window_takes_a_screenshot(tmp_path):
    picture = tmp_path / "window.png"
    env = {**ENV, "QT_QPA_PLATFORM": "offscreen"}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "taskloom",
            EXAMPLES / "etl.toml",
            "--screenshot",
            picture,
            "--quit-after",
            "2",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ---------------------------------------------------------------- one owner, no orphans
def start_run(path: Path, *extra) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "taskloom", "run", str(path), *map(str, extra)],
        cwd=ROOT,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_second_run_of_a_running_workflow_is_refused_and_the_first_is_untouched(tmp_path):
    fifo, go = tmp_path / "announce", tmp_path / "go"
    os.mkfifo(fifo)
    path = write(
        tmp_path,
        f"""
        [tasks.first]
        command = ["sh", "-c", "echo $$ > '{fifo}'; while [ ! -e '{go}' ]; do sleep 0.05; done"]

        [tasks.cleanup]
        command = ["true"]
        deps = ["first"]
        """,
    )
    owner = start_run(path)
    try:
        with open(fifo) as stream:  # the first run's command is running
            stream.read()
        second = taskloom("run", path, timeout=30)
    finally:
        go.touch()  # whatever happened, the first run may finish
    assert second.returncode == 75, second.stdout + second.stderr  # EX_TEMPFAIL
    assert f"is in use by taskloom run (pid {owner.pid} on " in second.stderr
    assert "not starting a second run" in second.stderr
    out, err = owner.communicate(timeout=30)
    assert owner.returncode == 0, out + err
    assert "first            succeeded (attempt 1)" in out
    assert "cleanup          succeeded (attempt 1)" in out
    assert "WorkerLost" not in out and "lost" not in out


@pytest.mark.slow
def test_workflows_with_one_name_in_two_folders_keep_separate_stores(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    for folder, word in ((one, "one"), (two, "two")):
        folder.mkdir()
        write(folder, f'[tasks.say]\ncommand = ["echo", "{word}"]\nafter = "1h"\n', "etl.toml")
    interrupted = taskloom("run", one / "etl.toml", "--for", "0.3s")
    assert interrupted.returncode == 1
    second = taskloom("run", two / "etl.toml", "--for", "0.3s")
    assert "resuming" not in second.stdout  # not the other project's run
    history = taskloom("history", two / "etl.toml")
    assert history.returncode == 0


def test_a_closed_output_pipe_ends_the_run_promptly(tmp_path):
    fifo = tmp_path / "announce"
    os.mkfifo(fifo)
    path = write(
        tmp_path,
        f"""
        [tasks.long]
        command = ["sh", "-c", "sleep 60 & echo $$ > '{fifo}'; wait"]
        """,
    )
    process = start_run(path)
    with open(fifo) as stream:
        group = int(stream.read())
    process.stdout.readline()  # like `| head -1`: read a line, then go away
    process.stdout.close()
    process.wait(timeout=20)  # it notices at its next line of output or look
    assert process.returncode == 141  # 128 + SIGPIPE, what a reader going away means
    assert not group_exists(group)
    assert "Traceback" not in process.stderr.read()


@pytest.mark.parametrize(
    "signals", [["SIGHUP"], ["SIGQUIT"], ["SIGINT", "SIGINT", "SIGINT"]], ids="+".join
)
@pytest.mark.slow
def test_stop_signals_end_every_command_and_leave_the_run_resumable(tmp_path, signals):
    fifo = tmp_path / "announce"
    os.mkfifo(fifo)
    # The command's child ignores SIGTERM: it must still be gone when taskloom exits.
    stubborn = "trap '' TERM; sleep 60"
    path = write(
        tmp_path,
        f"""
        [tasks.long]
        command = ["sh", "-c", "sh -c \\"{stubborn}\\" & echo $$ > '{fifo}'; wait"]
        """,
    )
    process = start_run(path)
    with open(fifo) as stream:
        group = int(stream.read())
    for name in signals:
        process.send_signal(getattr(signal, name))
    out, err = process.communicate(timeout=60)
    assert "Traceback" not in err, err
    assert process.returncode == 128 + getattr(signal, signals[0]), out + err
    if signals[0] != "SIGHUP":  # a hang-up means no terminal: nothing more is written
        assert f"interrupted by {signals[0]}: stopping running tasks" in out
        assert "long             ready (attempt 1)" in out  # interrupted, resumable
    assert not group_exists(group)
    history = taskloom("history", path)
    assert history.stdout.splitlines()[-1].split()[5] == "interrupted", history.stdout
    resumed = taskloom("run", path, "--for", "0.5s")
    assert "resuming the unfinished run" in resumed.stdout


@pytest.mark.slow
def test_a_resumed_run_runs_what_the_file_says_now(tmp_path):
    ledger = tmp_path / "ledger"
    fifo = tmp_path / "announce"
    os.mkfifo(fifo)
    template = """
        [tasks.first]
        command = ["sh", "-c", "echo {first} >> '{ledger}'"]

        [tasks.second]
        command = ["sh", "-c", "{second}"]
        deps = ["first"]

        [tasks.third]
        command = ["sh", "-c", "echo third >> '{ledger}'"]
        deps = ["second"]
        """
    old_second = f"echo old-second >> '{ledger}'; echo $$ > '{fifo}'; sleep 60"
    path = write(tmp_path, template.format(first="first", second=old_second, ledger=ledger))
    process = start_run(path)
    with open(fifo) as stream:  # second runs its old command
        group = int(stream.read())
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=30)
    assert not group_exists(group)
    assert ledger.read_text().split() == ["first", "old-second"]

    # The user fixes second (and rewords first, which already succeeded).
    new_second = f"echo new-second >> '{ledger}'"
    write(tmp_path, template.format(first="first-v2", second=new_second, ledger=ledger))
    assert taskloom("validate", path).returncode == 0
    resumed = taskloom("run", path, timeout=30)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "changed in the file, run as it says now: second" in resumed.stdout
    assert "changed after they succeeded, kept: first" in resumed.stdout
    # the old command never ran again, the new one did; first stayed done
    assert ledger.read_text().split() == ["first", "old-second", "new-second", "third"]
    history = taskloom("history", path).stdout
    assert [line.split()[4] for line in history.splitlines()[1:] if " second " in line] == [
        "1",
        "2",
    ]  # the redefined task numbers its attempts on: nothing overwritten


def _limit_file_size(limit: int):
    def apply():
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


@pytest.mark.timeout(90)
def test_a_store_that_cannot_be_written_stops_the_run_with_exit_2_and_its_cause(tmp_path):
    """The file size limit (a full disk) hits the store mid-run: a few tasks set up in
    a few kB, then four fast recurring ones grow the write-ahead log until it may not.
    The run stops, terminating what runs, and says why in one line."""
    ticks = "".join(f'[tasks.tick{i}]\ncommand = ["true"]\nevery = "10ms"\n\n' for i in range(4))
    path = write(tmp_path, ticks + '[tasks.sleeper]\ncommand = ["sleep", "60"]\npriority = 9\n')
    process = subprocess.Popen(
        [sys.executable, "-m", "taskloom", "run", str(path)],
        cwd=ROOT,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_limit_file_size(1_000_000),
    )
    out, err = process.communicate(timeout=60)  # the sleeper is terminated, not waited for
    assert process.returncode == 2, out + err
    (line,) = err.splitlines()
    assert line.startswith("taskloom: "), line  # mid-run, not refused at open
    assert ".db: writing failed: OperationalError: disk I/O error; the run stopped" in line
    assert "cannot rollback" not in line
    assert "sleeper" in out  # it had started


# ---------------------------------------------------------------- exit codes, typos
@pytest.mark.parametrize(
    ("typed", "meant"), [("histroy", "history"), ("valdiate", "validate"), ("rnu", "run")]
)
def test_a_mistyped_command_gets_did_you_mean_and_exit_2(typed, meant):
    result = taskloom(typed, EXAMPLES / "etl.toml")
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"taskloom: {typed!r} is not a taskloom command nor a file; did you mean {meant!r}?"
    )


@pytest.mark.slow
def test_a_file_named_like_a_command_still_opens_in_the_window(tmp_path):
    """Only a word that is no file is taken for a typo: ./histroy exists, so it is opened."""
    write(tmp_path, '[tasks.a]\ncommand = ["true"]\n', "histroy")
    picture = tmp_path / "shot.png"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "taskloom",
            "histroy",
            "--screenshot",
            picture,
            "--quit-after",
            "0.3",
        ],
        cwd=tmp_path,
        env={**ENV, "QT_QPA_PLATFORM": "offscreen"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "did you mean" not in result.stderr
    assert result.returncode == 0, result.stderr
    assert picture.exists()


def test_a_failed_task_exits_1_and_an_unknown_option_exits_2(tmp_path):
    path = write(tmp_path, '[tasks.a]\ncommand = ["false"]\n')
    assert taskloom("run", path).returncode == 1
    usage = taskloom("run", path, "--no-such-option")
    assert usage.returncode == 2
    assert "unrecognized arguments: --no-such-option" in usage.stderr


# ---------------------------------------------------------------- -q / -v
def test_quiet_run_prints_nothing_when_all_went_well(tmp_path):
    # Commands that print on stdout and stderr, in a chain of dependencies: all went well.
    flow = """
    [tasks.extract]
    command = ["python3", "-c", "print('extracting')"]
    [tasks.load]
    command = ["sh", "-c", "echo loading; echo warning >&2"]
    deps = ["extract"]
    [tasks.report]
    command = ["true"]
    deps = ["load"]
    """
    result = taskloom("run", "-q", write(tmp_path, flow))
    assert result.returncode == 0, result.stderr
    assert (result.stdout, result.stderr) == ("", "")


def test_quiet_run_says_only_what_failed_on_stderr(tmp_path):
    path = write(tmp_path, '[tasks.ok]\ncommand = ["true"]\n[tasks.bad]\ncommand = ["false"]\n')
    result = taskloom("-q", "run", path)
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert lines[0] == "taskloom: FAILED bad: CommandFailed: exit code 1"
    assert lines[1].startswith("taskloom: log: ") and lines[1].endswith(".log")
    assert len(lines) == 2


@pytest.mark.slow
def test_verbose_logs_the_store_and_log_folder_and_quiet_validate_is_silent(tmp_path):
    path = write(tmp_path, '[tasks.ok]\ncommand = ["true"]\n')
    ran = taskloom("run", path, "-v")
    assert ran.returncode == 0
    (info,) = [line for line in ran.stderr.splitlines() if line.startswith("taskloom: info: ")]
    assert "store " in info and ".db, task logs in " in info and "4 workers" in info
    assert "taskloom: info:" not in taskloom("run", path).stderr  # not without -v
    assert taskloom("validate", "-q", path).stdout == ""
    assert "taskloom: info:" in taskloom("-vv", "run", path).stderr  # -vv before the command
    both = taskloom("validate", "-q", "-v", path)
    assert both.returncode == 2 and "cannot be used together" in both.stderr

"""The taskloom command, run as a real subprocess on real workflow files."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "resources" / "examples"
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}


@pytest.fixture(autouse=True)
def private_store_dir(tmp_path, monkeypatch):
    """Each test's runs get their own store directory (XDG_DATA_HOME)."""
    monkeypatch.setitem(ENV, "XDG_DATA_HOME", str(tmp_path / "xdg-data"))


def taskloom(*args, timeout: float = 90) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "taskloom", *map(str, args)],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def write(tmp_path: Path, text: str, name: str = "flow.toml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def group_exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_version():
    result = taskloom("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == "taskloom 0.1.0"


def test_validate_a_valid_file():
    result = taskloom("validate", EXAMPLES / "etl.toml")
    assert result.returncode == 0
    assert result.stdout.strip() == f"{EXAMPLES / 'etl.toml'} is valid (6 tasks)"


def test_validate_lists_every_problem_and_exits_1(tmp_path):
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
    assert result.returncode == 1
    lines = result.stdout.strip().splitlines()
    assert lines == [
        f"{path}: tasks.a.prioity: unknown key (did you mean 'priority'?)",
        f"{path}: tasks.b.cron: bad cron expression '0 25 * * *': Bad hour",
        f"{path}: tasks.b.deps: unknown task 'nope'",
    ]


def test_validate_reports_a_tzdata_folder_as_an_unknown_time_zone(tmp_path):
    path = write(
        tmp_path, '[tasks.a]\ncommand = ["true"]\ncron = "0 2 * * *"\ntimezone = "Europe"\n'
    )
    result = taskloom("validate", path)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    (line,) = result.stdout.strip().splitlines()
    assert line.startswith(f"{path}: tasks.a.timezone: unknown time zone 'Europe'")


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


def test_run_flaky_exits_1_with_a_retried_success_and_a_skip():
    result = taskloom("run", EXAMPLES / "flaky.toml")
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    assert "flaky            succeeded (attempt 3)" in out
    assert "broken           failed (attempt 2): CommandFailed: exit code 2" in out
    assert "publish          skipped" in out
    assert "flaky: 1 failed, 1 skipped, 3 succeeded" in out
    assert "FAILED broken" in out


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
    assert process.returncode == 1, out + err
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
    assert process.returncode == 0, out + err  # no one-shot task: nothing failed
    assert "watch            ready (attempt 1)" in out  # interrupted, resumable
    assert not group_exists(group)


def test_run_and_validate_never_import_qt():
    code = (
        "import sys; from taskloom.cli import main; "
        f"main(['validate', {str(EXAMPLES / 'etl.toml')!r}]); "
        "assert not [m for m in sys.modules if m.startswith(('PySide6', 'gui'))]"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=ENV, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def test_window_takes_a_screenshot(tmp_path):
    if not (ROOT / "gui" / "app.py").exists():
        pytest.skip("gui/app.py is not written yet")
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

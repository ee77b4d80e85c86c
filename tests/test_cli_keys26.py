"""Issue 26 keys through real `taskloom run` processes: the run's deadline
([workflow] timeout) and [workflow.defaults]."""

from __future__ import annotations

import json
import sys
import time

import pytest

from tests.test_cli import taskloom, write

PY = sys.executable
KEEP = (
    "import json, os, sys; name = sys.argv[1]; "
    "json.dump({'stdin': json.loads(sys.stdin.read()), "
    "'env': {k: v for k, v in os.environ.items() if k.startswith('TASKLOOM_')}}, "
    "open(name + '.json', 'w'))"
)


def keep(name: str) -> str:
    return json.dumps([PY, "-c", KEEP, name])


def test_past_its_deadline_a_run_cancels_what_is_unfinished_and_fails(tmp_path):
    path = write(
        tmp_path,
        f"""
        [workflow]
        name = "deadline"
        timeout = "2s"
        on_failure = {keep("failure")}
        on_finish = {keep("finish")}

        [tasks.quick]
        command = ["true"]

        [tasks.slow]
        command = ["sleep", "60"]

        [tasks.after]
        command = ["true"]
        deps = ["slow"]
        """,
    )
    began = time.monotonic()
    result = taskloom("run", path, XDG_DATA_HOME=str(tmp_path / "data"))
    took = time.monotonic() - began
    assert result.returncode == 1, result.stdout + result.stderr
    assert took < 30  # not the 60 s of sleep: it was ended
    assert "the run passed its deadline: [workflow] timeout = 2s" in result.stderr
    failure = json.loads((tmp_path / "failure.json").read_text())
    finish = json.loads((tmp_path / "finish.json").read_text())
    told = {failure["stdin"]["task"]}
    assert told <= {"slow", "after"}
    assert "passed its deadline" in failure["env"]["TASKLOOM_ERROR"]
    assert finish["stdin"]["outcome"] == "failed"
    assert "passed its deadline" in finish["stdin"]["reason"]
    assert finish["stdin"]["counts"] == {"succeeded": 1, "cancelled": 2}


def test_status_tells_a_runs_deadline(tmp_path):
    path = write(
        tmp_path,
        """
        [workflow]
        name = "deadline"
        timeout = "2h"

        [tasks.quick]
        command = ["true"]

        [tasks.later]
        command = ["true"]
        after = "1h"
        """,
    )
    env = {"XDG_DATA_HOME": str(tmp_path / "data")}
    began = time.time()
    assert taskloom("run", "--for", "1", path, **env).returncode == 1  # later not yet run
    told = taskloom("status", path, "--json", **env)
    deadline = json.loads(told.stdout)["deadline"]
    from datetime import datetime

    at = datetime.fromisoformat(deadline).timestamp()
    assert began + 7200 - 5 <= at <= time.time() + 7200
    text = taskloom("status", path, **env).stdout
    (line,) = [line for line in text.splitlines() if line.startswith("deadline: ") and "in" in line
               and "[workflow] timeout" in line]  # fmt: skip
    assert line.endswith("; [workflow] timeout = 2h)") and "(in 1 h 5" in line, text


def test_defaults_reach_a_real_command(tmp_path):
    (tmp_path / "work").mkdir()
    path = write(
        tmp_path,
        """
        [workflow.defaults]
        cwd = "work"
        env = { GREETING = "hello", WHO = "defaults" }

        [tasks.a]
        command = "echo $GREETING $WHO > said.txt"
        shell = true
        env = { WHO = "task" }
        """,
    )
    result = taskloom("run", path, XDG_DATA_HOME=str(tmp_path / "data"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "work" / "said.txt").read_text() == "hello task\n"


def test_a_calendar_day_leaves_a_real_recurring_command_out(tmp_path):
    from datetime import date, timedelta

    today, tomorrow = date.today(), date.today() + timedelta(days=1)
    # today in UTC and in the local zone, whichever the machine's day is
    (tmp_path / "days.toml").write_text(f'skip = ["{today - timedelta(days=1)}..{tomorrow}"]\n')
    path = write(
        tmp_path,
        """
        [tasks.skipped]
        command = "echo ran >> skipped.txt"
        shell = true
        every = "1s"
        calendar = "days.toml"

        [tasks.kept]
        command = "echo ran >> kept.txt"
        shell = true
        every = "1s"
        """,
    )
    result = taskloom("run", "--for", "3", path, XDG_DATA_HOME=str(tmp_path / "data"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "kept.txt").read_text().count("ran") >= 1
    assert not (tmp_path / "skipped.txt").exists()


@pytest.mark.slow  # two real runs, one of them stopped: about 13 s
def test_a_resumed_run_reads_its_secrets_again(tmp_path):
    """Only names are kept: a resume takes the values Taskloom's environment has then."""
    import signal
    import subprocess

    from tests._processes import wait_for
    from tests.test_cli import ENV, ROOT

    told = tmp_path / "told.txt"
    path = write(
        tmp_path,
        f"""
        [workflow]
        secret_env = ["API_TOKEN"]

        [tasks.tick]
        command = "echo $API_TOKEN >> {told}"
        shell = true
        every = "1s"
        """,
    )
    env = {**ENV, "XDG_DATA_HOME": str(tmp_path / "data"), "API_TOKEN": "first-value"}
    first = subprocess.Popen(
        [sys.executable, "-m", "taskloom", "run", str(path)],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_for(lambda: told.exists() and "first-value" in told.read_text(), what="a tick")
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(30)
    env["API_TOKEN"] = "second-value"
    resumed = taskloom(
        "run", "--for", "2.5", path, **{k: env[k] for k in ("XDG_DATA_HOME", "API_TOKEN")}
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "resum" in resumed.stdout + resumed.stderr  # the same run, resumed
    lines = told.read_text().split()
    assert "second-value" in lines and lines.index("second-value") > lines.index("first-value")


def test_an_env_file_reaches_a_real_command_and_validate_names_a_bad_line(tmp_path):
    (tmp_path / ".env").write_text('GREETING="hello there"\nexport WHO=file\n')
    path = write(
        tmp_path,
        """
        [workflow]
        env_file = ".env"

        [tasks.a]
        command = "echo $GREETING $WHO > said.txt"
        shell = true
        env = { WHO = "task" }
        """,
    )
    result = taskloom("run", path, XDG_DATA_HOME=str(tmp_path / "data"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "said.txt").read_text() == "hello there task\n"
    (tmp_path / ".env").write_text("GREETING=hi\nWHO 'nobody'\n")
    checked = taskloom("validate", path)
    assert checked.returncode == 2
    assert f"{tmp_path / '.env'}:2:5: env file: expected '=' after WHO" in checked.stdout


def test_a_hook_that_echoes_a_secret_writes_it_masked_to_hooks_log(tmp_path):
    # Hooks inherit Taskloom's environment, where the secret's value is: what they
    # print reaches hooks.log, which must not hold the value either.
    path = write(
        tmp_path,
        """
        [workflow]
        secret_env = ["API_TOKEN"]
        on_finish = "echo finish saw $API_TOKEN"

        [tasks.a]
        command = "echo a saw $API_TOKEN"
        shell = true
        """,
    )
    logs = tmp_path / "logs"
    result = taskloom(
        "run", path, "--db", tmp_path / "s.db", "--log-dir", logs, API_TOKEN="s3cr3t-value"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    hooks_log = (logs / "hooks.log").read_text()
    assert "finish saw ***" in hooks_log
    for file in tmp_path.rglob("*"):
        if file.is_file():
            assert b"s3cr3t-value" not in file.read_bytes(), file

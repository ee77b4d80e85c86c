"""Hooks and what a command knows, through real `taskloom run` processes: the JSON and
variables a hook gets for a failure, a retry, a success and a finished run; a hanging
hook is ended and the run goes on; the webhook and the desktop notification sinks;
TASKLOOM_* and --param as a real command sees them, and kept for a resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from tests._dbus import FakeNotifications, session_bus
from tests._processes import group_exists
from tests.test_cli import ENV, ROOT, taskloom, write

PY = sys.executable
# A hook that keeps what it was told: its stdin as NAME.json, its TASKLOOM_* as NAME.env
KEEP = (
    "import json, os, sys; name = sys.argv[1]; "
    "open(name + '.json', 'w').write(sys.stdin.read()); "
    "json.dump({k: v for k, v in os.environ.items() if k.startswith('TASKLOOM_')}, "
    "open(name + '.env', 'w'))"
)
PAYLOAD_KEYS = {
    "version",
    "event",
    "workflow",
    "file",
    "run",
    "task",
    "attempt",
    "outcome",
    "error",
    "exit_code",
    "log_path",
    "scheduled_at",
    "at",
}


def keep(name: str) -> str:
    return json.dumps([PY, "-c", KEEP, name])


def told(folder, name: str) -> tuple[dict, dict]:
    payload = json.loads((folder / f"{name}.json").read_text())
    env = json.loads((folder / f"{name}.env").read_text())
    return payload, env


def test_hooks_get_the_json_and_variables_of_a_failure_a_retry_a_success_and_the_end(
    tmp_path,
):
    flow = write(
        tmp_path,
        f"""
        [workflow]
        name = "nightly"
        on_failure = {keep("failure")}
        on_finish = {keep("finish")}
        on_retry = "exit 1"  # the task's own on_retry wins over this one

        [tasks.ok]
        command = ["true"]
        on_success = {keep("success")}

        [tasks.bad]
        command = ["sh", "-c", "echo disk full >&2; exit 3"]
        retry = {{ max_attempts = 2, base = "0.1s", jitter = 0 }}
        on_retry = {keep("retry")}
        """,
    )
    result = taskloom("run", flow, "--db", tmp_path / "s.db")
    assert result.returncode == 1, result.stderr
    failure, failure_env = told(tmp_path, "failure")
    retry, retry_env = told(tmp_path, "retry")
    success, _ = told(tmp_path, "success")
    finish, finish_env = told(tmp_path, "finish")
    for payload in (failure, retry, success, finish):
        assert set(payload) >= PAYLOAD_KEYS
        assert payload["version"] == 1
        assert payload["workflow"] == "nightly"
        assert payload["file"] == str(flow.resolve())
        assert payload["run"] == 1

    assert failure["event"] == "failure" and failure["task"] == "bad"
    assert failure["attempt"] == 2 and failure["outcome"] == "failed"
    assert failure["exit_code"] == 3
    assert failure["error"] == "CommandFailed: exit code 3: disk full"
    assert "disk full" in Path(failure["log_path"]).read_text()
    assert retry["event"] == "retry" and retry["attempt"] == 1 and retry["exit_code"] == 3
    # one occurrence: the retry and the failure name the same nominal time
    assert retry["scheduled_at"] == failure["scheduled_at"]
    datetime.fromisoformat(failure["scheduled_at"])
    assert success["event"] == "success" and success["task"] == "ok"
    assert success["exit_code"] == 0 and success["error"] is None

    assert finish["event"] == "finish" and finish["task"] is None
    assert finish["outcome"] == "failed"
    assert finish["counts"] == {"succeeded": 1, "failed": 1} and finish["failed"] == ["bad"]

    assert failure_env["TASKLOOM_HOOK_EVENT"] == "failure"
    assert failure_env["TASKLOOM_TASK"] == "bad"
    assert failure_env["TASKLOOM_ATTEMPT"] == "2"
    assert failure_env["TASKLOOM_OUTCOME"] == "failed"
    assert failure_env["TASKLOOM_EXIT_CODE"] == "3"
    assert failure_env["TASKLOOM_RUN"] == "1"
    assert failure_env["TASKLOOM_SCHEDULED_AT"] == failure["scheduled_at"]
    assert retry_env["TASKLOOM_HOOK_EVENT"] == "retry"
    assert finish_env["TASKLOOM_HOOK_EVENT"] == "finish"
    assert finish_env["TASKLOOM_OUTCOME"] == "failed"
    assert "TASKLOOM_TASK" not in finish_env


@pytest.mark.slow
def test_a_hanging_hook_is_ended_and_the_run_goes_on(tmp_path):
    flow = write(
        tmp_path,
        """
        [workflow]
        on_retry = "echo $$ > hook.pid; exec sleep 120"
        hook_timeout = "1s"

        [tasks.flaky]
        # fails once, then succeeds (the marker file tells the second attempt)
        command = ["sh", "-c", "if [ -f tried ]; then exit 0; fi; touch tried; exit 1"]
        retry = { max_attempts = 2, base = "0.1s", jitter = 0 }

        [tasks.after]
        command = ["true"]
        deps = ["flaky"]
        """,
    )
    began = time.monotonic()
    result = taskloom("run", flow, "--db", tmp_path / "s.db", "--log-dir", tmp_path / "logs")
    took = time.monotonic() - began
    assert result.returncode == 0, result.stderr
    assert took < 60  # not the hook's 120 s
    pid = int((tmp_path / "hook.pid").read_text())
    assert not group_exists(pid)  # ended with its group
    said = (tmp_path / "logs" / "taskloom.log").read_text()
    assert "hook on_retry of flaky ran past its 1s timeout (hook_timeout): ended" in said
    history = taskloom("history", flow, "--db", tmp_path / "s.db", "--json")
    attempts = json.loads(history.stdout)["attempts"]
    outcomes = {(a["task"], a["number"]): a["outcome"] for a in attempts}
    assert outcomes == {
        ("flaky", 1): "failed",
        ("flaky", 2): "succeeded",
        ("after", 1): "succeeded",
    }


def test_a_failing_hook_is_logged_and_changes_nothing(tmp_path):
    flow = write(
        tmp_path,
        """
        [workflow]
        on_success = "echo nope >&2; exit 7"
        on_finish = ["/nonexistent/program"]

        [tasks.a]
        command = ["true"]
        """,
    )
    result = taskloom("run", flow, "--db", tmp_path / "s.db", "--log-dir", tmp_path / "logs")
    assert result.returncode == 0
    said = (tmp_path / "logs" / "taskloom.log").read_text()
    assert "hook on_success of a failed: exit code 7" in said
    assert "hook on_finish could not start" in said
    assert "nope" in (tmp_path / "logs" / "hooks.log").read_text()  # a hook's output


def test_commands_see_their_task_attempt_run_scheduled_time_and_params(tmp_path):
    flow = write(
        tmp_path,
        f"""
        [tasks.report]
        command = {keep("report")}
        at = "2020-01-01T02:30:00+00:00"
        """,
    )
    result = taskloom(
        "run", flow, "--db", tmp_path / "s.db", "--param", "day=2026-12-01", "--param", "X=a b"
    )
    assert result.returncode == 0, result.stderr
    assert "with DAY=2026-12-01 X=a b" in result.stdout
    env = json.loads((tmp_path / "report.env").read_text())
    assert env["TASKLOOM_TASK"] == "report"
    assert env["TASKLOOM_ATTEMPT"] == "1"
    assert env["TASKLOOM_RUN"] == "1"
    assert env["TASKLOOM_PARAM_DAY"] == "2026-12-01"
    assert env["TASKLOOM_PARAM_X"] == "a b"
    assert len(env["TASKLOOM_RUN_ID"]) == 12  # kept as it was
    # an 'at' already past runs at once, and is told the time it stands for
    moment = datetime.fromisoformat(env["TASKLOOM_SCHEDULED_AT"])
    assert moment == datetime.fromisoformat("2020-01-01T02:30:00+00:00")
    assert moment.utcoffset() is not None
    again = taskloom("run", flow, "--db", tmp_path / "s.db", "--fresh")
    assert again.returncode == 0
    assert json.loads((tmp_path / "report.env").read_text())["TASKLOOM_RUN"] == "2"


@pytest.mark.parametrize("bad", ["day", "=x", "1x=y", "a-b=c"])
def test_a_bad_param_is_a_usage_error(tmp_path, bad):
    flow = write(tmp_path, "[tasks.a]\ncommand = ['true']\n")
    result = taskloom("run", flow, "--param", bad)
    assert result.returncode == 2
    assert "--param" in result.stderr and "KEY=VALUE" in result.stderr


@pytest.mark.slow
def test_a_resumed_run_keeps_its_params(tmp_path):
    keeper = tmp_path / "keep.py"
    keeper.write_text(KEEP.replace("sys.stdin.read()", "''").replace("; ", "\n"))
    script = f"if [ -f go ]; then {PY} {keeper} job; else touch started; sleep 60; fi"
    flow = write(tmp_path, f"[tasks.job]\ncommand = {json.dumps(['sh', '-c', script])}\n")
    db = tmp_path / "s.db"
    first = subprocess.Popen(
        [PY, "-m", "taskloom", "run", str(flow), "--db", str(db), "--param", "day=1"],
        cwd=ROOT,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not (tmp_path / "started").exists():
        assert time.monotonic() < deadline and first.poll() is None
        time.sleep(0.05)
    first.send_signal(signal.SIGTERM)
    assert first.wait(60) == 143
    (tmp_path / "go").touch()
    result = taskloom("run", flow, "--db", db, "--param", "day=2")
    assert result.returncode == 0, result.stderr
    assert "it keeps the params it started with (DAY=1): --fresh to change them" in result.stdout
    assert json.loads((tmp_path / "job.env").read_text())["TASKLOOM_PARAM_DAY"] == "1"


class _Recorder(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.posts.append((self.path, self.headers["Content-Type"], json.loads(body)))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_the_webhook_posts_the_same_json_to_a_loopback_server(tmp_path):
    server = HTTPServer(("127.0.0.1", 0), _Recorder)
    server.posts = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/hook"
        flow = write(
            tmp_path,
            f"""
            [workflow]
            name = "web"
            notify = {{ webhook = "{url}", events = ["failure", "success", "finish"] }}

            [tasks.good]
            command = ["true"]

            [tasks.bad]
            command = ["false"]
            """,
        )
        result = taskloom("run", flow, "--db", tmp_path / "s.db")
        assert result.returncode == 1
    finally:
        server.shutdown()
        server.server_close()
    seen = {post[2]["event"] + ":" + str(post[2]["task"]): post for post in server.posts}
    assert set(seen) == {"success:good", "failure:bad", "finish:None"}
    path, kind, payload = seen["failure:bad"]
    assert path == "/hook" and kind == "application/json"
    assert payload["version"] == 1 and payload["workflow"] == "web"
    assert payload["exit_code"] == 1 and payload["run"] == 1
    assert seen["finish:None"][2]["outcome"] == "failed"


def test_a_webhook_nobody_answers_is_logged_and_the_run_goes_on(tmp_path):
    import socket

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    flow = write(
        tmp_path,
        f"""
        [workflow.notify]
        webhook = "http://127.0.0.1:{port}/x"

        [tasks.bad]
        command = ["false"]
        """,
    )
    result = taskloom("run", flow, "--db", tmp_path / "s.db", "--log-dir", tmp_path / "logs")
    assert result.returncode == 1
    assert (
        f"webhook http://127.0.0.1:{port}/x failed"
        in (tmp_path / "logs" / "taskloom.log").read_text()
    )


def test_the_desktop_notification_reaches_the_session_bus(tmp_path):
    with session_bus(tmp_path) as address:
        service = FakeNotifications(address)
        try:
            flow = write(
                tmp_path,
                """
                [workflow]
                name = "nightly"
                notify = { desktop = true }

                [tasks.backup]
                command = ["sh", "-c", "echo no space left >&2; exit 2"]
                """,
            )
            result = taskloom(
                "run", flow, "--db", tmp_path / "s.db", DBUS_SESSION_BUS_ADDRESS=address
            )
            assert result.returncode == 1
        finally:
            service.close()
    # failure and finish: the default events
    assert service.calls == [
        (
            "Taskloom",
            "backup failed",
            "nightly run 1, attempt 1: CommandFailed: exit code 2: no space left",
            2,
        ),
        ("Taskloom", "nightly run 1 failed", "1 failed", 2),
    ]


def test_without_a_session_bus_the_desktop_sink_says_so_and_the_run_goes_on(tmp_path):
    flow = write(
        tmp_path,
        """
        [workflow.notify]
        desktop = true

        [tasks.bad]
        command = ["false"]
        """,
    )
    env = {k: v for k, v in os.environ.items()}
    env.pop("DBUS_SESSION_BUS_ADDRESS", None)
    result = taskloom(
        "run", flow, "--db", tmp_path / "s.db", "--log-dir", tmp_path / "logs",
        DBUS_SESSION_BUS_ADDRESS="",
    )  # fmt: skip
    assert result.returncode == 1
    said = (tmp_path / "logs" / "taskloom.log").read_text()
    assert "desktop notification not shown: no session bus" in said

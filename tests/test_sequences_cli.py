"""Sequences people make on the command line (issues 24/25 follow-up), with real
`taskloom` processes on a real store: two owners, a cancel from another shell, a
kill -9, status, and the next run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SEQ = """
[workflow]
name = "seq"
workers = 2
[tasks.a]
command = ["sleep", "60"]
[tasks.b]
command = ["sh", "-c", "while [ ! -e go ]; do sleep 0.05; done; echo b-done"]
[tasks.c]
command = ["true"]
deps = ["b"]
"""


@pytest.mark.slow
def test_two_owners_cancel_from_a_shell_kill_9_status_and_the_next_run(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_DATA_HOME": str(tmp_path / "xdg")}
    env.pop("TASKLOOM_OWNER", None)
    path = tmp_path / "seq.toml"
    path.write_text(SEQ)

    def taskloom(*args, timeout=60):
        return subprocess.run(
            [sys.executable, "-m", "taskloom", *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    owner = subprocess.Popen(
        [sys.executable, "-m", "taskloom", "run", str(path)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(owner.stdout), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 30
        while sum("running (attempt 1)" in line for line in lines) < 2:
            assert time.monotonic() < deadline and owner.poll() is None, lines
            time.sleep(0.05)

        second = taskloom("run", str(path))
        assert second.returncode == 75, second
        assert f"in use by taskloom run (pid {owner.pid}" in second.stderr
        assert second.stderr.count("\n") == 1  # one line

        cancel = taskloom("cancel", str(path), "a")
        told = time.monotonic()
        assert cancel.returncode == 0, cancel
        assert f"done by taskloom run (pid {owner.pid})" in cancel.stdout
        while not any(" a " in line and "cancelled" in line for line in lines):
            assert time.monotonic() - told < 1.0, lines  # the owner did it, at once
            time.sleep(0.02)

        owner.send_signal(signal.SIGKILL)
        owner.wait(10)
        status = taskloom("status", str(path))
        assert status.returncode == 0, status
        assert "owner: none" in status.stdout
        assert "1 cancelled" in status.stdout and "1 running" in status.stdout
        assert "still running under its supervisor" in status.stdout  # b: it is
        assert "\n  b for " in status.stdout

        (tmp_path / "go").write_text("")
        again = taskloom("run", str(path))
        assert again.returncode == 1, again  # a was cancelled: not all succeeded
        assert "resuming the unfinished run" in again.stdout
        assert "b                succeeded (attempt 1)" in again.stdout  # adopted, once
        assert "c                succeeded (attempt 1)" in again.stdout
        assert "1 cancelled, 2 succeeded" in again.stdout
        logs = list((tmp_path / "xdg").rglob("b-1-*.log"))
        assert len(logs) == 1 and logs[0].read_text().strip() == "b-done"
        final = taskloom("status", str(path))
        assert "1 cancelled, 2 succeeded" in final.stdout, final.stdout
    finally:
        (tmp_path / "go").write_text("")  # b, under its supervisor, ends whatever happened
        if owner.poll() is None:
            owner.kill()
            owner.wait(10)
        reader.join(10)

"""Shared limits and jitter through the real command: ``taskloom run`` keeps a pool's
tasks under its limit, ``taskloom status`` tells the wait, ``validate`` names bad keys."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests._processes import wait_for
from tests.test_cli import ENV, ROOT, private_store_dir, taskloom, write

__all__ = ["private_store_dir"]  # autouse: each test its own store folder

GATED = """
[workflow]
workers = 4

[pools]
one = 1

[tasks.a]
command = "echo start a >> out.log; while [ ! -e gate ]; do sleep 0.02; done; echo end a >> out.log"
shell = true
pool = "one"
priority = 3

[tasks.b]
command = "echo start b >> out.log; sleep 0.2; echo end b >> out.log"
shell = true
pool = "one"
priority = 2

[tasks.c]
command = "echo start c >> out.log; sleep 0.2; echo end c >> out.log"
shell = true
pool = "one"
priority = 1

[tasks.free]
command = "echo free >> out.log"
shell = true
jitter = "300ms"
"""


@pytest.mark.slow
def test_a_pool_of_one_runs_one_at_a_time_and_status_tells_the_wait(tmp_path):
    path = write(tmp_path, GATED)
    run = subprocess.Popen(
        [sys.executable, "-m", "taskloom", "run", str(path)],
        cwd=ROOT,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    log = tmp_path / "out.log"
    try:
        wait_for(lambda: log.exists() and "start a" in log.read_text(), what="a starts")
        seen = {}

        def status_tells_the_wait():
            seen["status"] = taskloom("status", path)
            return "waiting for pool one: 1 of 1 busy: b, c" in seen["status"].stdout

        wait_for(status_tells_the_wait, what="status shows the pool wait")
        assert "running:\n  a" in seen["status"].stdout
        (tmp_path / "gate").touch()
        out, err = run.communicate(timeout=60)
    finally:
        (tmp_path / "gate").touch()
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 0, err
    lines = [line for line in log.read_text().splitlines() if line != "free"]
    # Never two of the pool at once, and the freed slot goes by priority.
    assert lines == ["start a", "end a", "start b", "end b", "start c", "end c"]
    assert "free" in log.read_text()


def test_validate_names_bad_pool_and_jitter_keys(tmp_path):
    path = write(
        tmp_path,
        """
        [pools]
        db = 0

        [tasks.a]
        command = ["true"]
        pool = "gpu"
        jitter = "soon"
        """,
    )
    result = taskloom("validate", path)
    assert result.returncode == 2
    lines = result.stdout.strip().splitlines()
    assert lines[0] == f"{path}:3:1: pools.db: must be an integer >= 1, got 0"
    assert lines[1].startswith(f"{path}:7:1: tasks.a.pool: must name a pool of [pools] ('db')")
    assert lines[2].startswith(f"{path}:8:1: tasks.a.jitter: bad duration 'soon'")


def test_the_forecast_shows_pool_waits_as_collisions_and_jitter_as_a_window(tmp_path):
    path = write(
        tmp_path,
        """
        [workflow]
        workers = 4

        [pools]
        one = 1

        [tasks.a]
        command = ["true"]
        pool = "one"
        after = "1m"
        expected = "10m"

        [tasks.b]
        command = ["true"]
        pool = "one"
        after = "1m"
        expected = "10m"

        [tasks.nightly]
        command = ["true"]
        after = "2m"
        jitter = "5m"
        expected = "1s"
        """,
    )
    result = taskloom("forecast", path)
    assert result.returncode == 0, result.stderr
    assert "pool     b: waits 10.0m for pool one: 1 of 1 busy" in result.stdout
    assert "nightly (may start up to 5 min later: jitter)" in result.stdout

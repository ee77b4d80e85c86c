"""``taskloom status`` and the steering commands (retry, cancel, pause, resume,
run-now, clear) on a run another real ``taskloom run`` owns, and on a stored run
that no process owns; ``run --until-idle``, the "waiting for" line, ``run --example``."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.test_cli import ENV, ROOT, taskloom, write  # one way to run the command

pytestmark = pytest.mark.slow  # real processes: owners, watchers, signals, kills


@pytest.fixture(autouse=True)
def private_store_dir(tmp_path, monkeypatch):
    monkeypatch.setitem(ENV, "XDG_DATA_HOME", str(tmp_path / "xdg-data"))


def start_run(path: Path, *extra) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "taskloom", "run", str(path), *map(str, extra)],
        cwd=ROOT,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_until(predicate, timeout: float = 20.0, what: str = "the condition"):
    """Polls a real process's effect, with a deadline."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def status_json(path: Path) -> dict:
    result = taskloom("status", path, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def state_of(path: Path, task: str) -> str:
    return {t["id"]: t["state"] for t in status_json(path)["tasks"]}[task]


# A workflow with one of everything status shows: a task that runs until told
# (a file appears), one that fails for good, what it blocks, a succeeded one, and
# a recurring one far ahead.
LIVE = """
    [tasks.slow]
    command = ["sh", "-c", "echo $$ > '{fifo}'; while [ ! -e '{go}' ]; do sleep 0.05; done"]

    [tasks.bad]
    command = ["sh", "-c", "echo oops >&2; exit 3"]

    [tasks.after_bad]
    command = ["true"]
    deps = ["bad"]

    [tasks.ok]
    command = ["true"]

    [tasks.backup]
    command = ["true"]
    cron = "30 2 * * *"
    timezone = "Asia/Tokyo"
"""


@pytest.fixture
def live(tmp_path):
    """(workflow path, owner process, go file): a live ``taskloom run`` whose
    ``slow`` task is running and whose ``bad`` task has failed."""
    fifo, go = tmp_path / "announce", tmp_path / "go"
    os.mkfifo(fifo)
    path = write(tmp_path, LIVE.format(fifo=fifo, go=go))
    owner = start_run(path)
    try:
        with open(fifo) as stream:  # slow is running
            stream.read()
        wait_until(lambda: state_of(path, "bad") == "failed", what="bad to fail")
        yield path, owner, go
    finally:
        go.touch()
        if owner.poll() is None:
            owner.send_signal(signal.SIGINT)
        owner.communicate(timeout=30)


@pytest.mark.slow
def test_status_of_a_live_run_names_owner_counts_running_failures_and_next(live):
    path, owner, _ = live
    result = taskloom("status", path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert f"owner: taskloom run (pid {owner.pid} on " in out
    assert re.search(r"tasks: .*1 failed, 1 running", out), out
    assert re.search(r"running:\n  slow for [\d.]+ m?s \(attempt 1\)", out), out
    assert "bad attempt 1 at " in out and ": CommandFailed: exit code 3: oops" in out
    assert re.search(r"next:\n  backup at [\d-]*\s?02:30 \(Asia/Tokyo\), in \d+ h", out), out

    document = status_json(path)
    assert document["version"] == 1
    assert document["live"] is True
    assert document["owner"]["pid"] == owner.pid
    assert document["counts"]["failed"] == 1 and document["counts"]["running"] == 1
    (running,) = document["running"]
    assert running["task"] == "slow" and running["elapsed"] >= 0
    assert document["failures"][0]["task"] == "bad"
    assert document["failures"][0]["exit_code"] == 3
    assert document["failures"][0]["error"] == "CommandFailed: exit code 3: oops"
    assert document["next"][0]["task"] == "backup"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d", document["next"][0]["at"])


@pytest.mark.slow
def test_retry_cancel_pause_resume_clear_reach_a_live_owner(live):
    path, owner, go = live
    pid = owner.pid
    # a refusal: one line, exit 1, and nothing sent
    refused = taskloom("retry", path, "slow")
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        "retry: task 'slow' is running; only a failed, skipped or cancelled task can be retried"
    )
    unknown = taskloom("cancel", path, "nope")
    assert unknown.returncode == 2
    assert "the run has no task 'nope' (it has: slow, bad, after_bad, ok, backup)" in unknown.stderr

    retried = taskloom("retry", path, "bad")
    assert retried.returncode == 0, retried.stderr
    assert retried.stdout.strip() == f"retry: retried bad (done by taskloom run (pid {pid}))"
    wait_until(
        lambda: any(f["attempt"] == 2 for f in status_json(path)["failures"]),
        what="bad's second attempt",
    )

    paused = taskloom("pause", path, "backup")
    assert paused.returncode == 0, paused.stderr
    assert "pause: paused backup (done by" in paused.stdout
    assert "paused: backup" in taskloom("status", path).stdout
    assert taskloom("pause", path, "backup").returncode == 1  # already paused: refused
    assert taskloom("resume", path, "backup").returncode == 0
    whole = taskloom("pause", path)
    assert whole.returncode == 0 and "paused the whole run" in whole.stdout
    assert status_json(path)["paused"] is True
    assert taskloom("resume", path).returncode == 0
    assert status_json(path)["paused"] is False

    now = taskloom("run-now", path, "backup")  # a recurring task: an extra run, now
    assert now.returncode == 0, now.stderr
    assert now.stdout.strip() == f"run-now: made backup due now (done by taskloom run (pid {pid}))"

    cleared = taskloom("clear", path, "ok")
    assert cleared.returncode == 0, cleared.stderr
    assert "clear: cleared ok (done by" in cleared.stdout
    not_finished = taskloom("clear", path, "slow")
    assert not_finished.returncode == 1
    assert "only a finished one-shot task can be cleared" in not_finished.stderr

    cancelled = taskloom("cancel", path, "slow")
    assert cancelled.returncode == 0, cancelled.stderr
    wait_until(lambda: state_of(path, "slow") == "cancelled", what="slow cancelled")
    owner.send_signal(signal.SIGINT)
    out, _ = owner.communicate(timeout=30)
    assert "bad              running (attempt 2)" in out
    assert "ok               running (attempt 2)" in out  # cleared: ran again
    assert "slow             cancelled (attempt 1)" in out
    assert "backup           paused" in out and "backup           resumed" in out
    assert "backup           succeeded (attempt 1)" in out


@pytest.mark.slow
def test_an_owner_that_does_not_answer_gives_75(live):
    path, owner, _ = live
    owner.send_signal(signal.SIGSTOP)
    try:
        result = taskloom("retry", path, "bad", "--timeout", "1s")
    finally:
        owner.send_signal(signal.SIGCONT)
    assert result.returncode == 75, result.stdout + result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert f"pid {owner.pid}" in result.stderr


STORED = """
    [tasks.ok]
    command = ["true"]

    [tasks.bad]
    command = ["sh", "-c", "echo oops >&2; exit 3"]

    [tasks.after_bad]
    command = ["true"]
    deps = ["bad"]

    [tasks.ok_after]
    command = ["true"]
    deps = ["ok"]

    [tasks.later]
    command = ["true"]
    after = "1h"

    [tasks.soon]
    command = ["true"]
    after = "1h"

    [tasks.tick]
    command = ["true"]
    every = "1h"
"""


@pytest.mark.slow
def test_status_and_steering_of_a_stored_run_with_no_owner(tmp_path):
    path = write(tmp_path, STORED)
    first = taskloom("run", path, "--for", "2s", "-q")
    assert first.returncode == 1  # bad failed, later not yet due
    seen = taskloom("status", path)
    assert seen.returncode == 0
    assert "owner: none (no process runs it now" in seen.stdout
    assert "bad attempt 1 at " in seen.stdout and "exit code 3: oops" in seen.stdout
    assert re.search(r"next:\n(  .*\n)*  later at .*, in 59 min", seen.stdout), seen.stdout
    document = status_json(path)
    assert document["owner"] is None and document["live"] is False
    assert document["counts"] == {"failed": 1, "skipped": 1, "succeeded": 2, "scheduled": 3}

    retried = taskloom("retry", path, "--failed")
    assert retried.returncode == 0, retried.stderr
    assert retried.stdout.strip() == (
        f"retry: retried bad in the stored run 1 (no process runs flow now; the next "
        f"'taskloom run {path}' carries it out)"
    )
    assert state_of(path, "bad") == "ready" and state_of(path, "after_bad") == "pending"

    assert taskloom("cancel", path, "later").returncode == 0
    assert state_of(path, "later") == "cancelled"
    assert taskloom("pause", path, "tick").returncode == 0
    assert status_json(path)["tasks"][-1]["paused"] is True
    cleared = taskloom("clear", path, "ok", "--downstream")
    assert cleared.returncode == 0, cleared.stderr
    assert "cleared ok, ok_after in the stored run 1" in cleared.stdout
    assert state_of(path, "ok") in ("pending", "ready")
    assert state_of(path, "ok_after") == "pending"
    now = taskloom("run-now", path, "soon")
    assert now.returncode == 0 and "made soon due now in the stored run 1" in now.stdout
    assert state_of(path, "soon") == "ready"

    whole = taskloom("pause", path)  # a whole-run pause lives in a live dispatcher only
    assert whole.returncode == 1
    assert "name a TASK to pause it in the stored run" in whole.stderr
    extra = taskloom("run-now", path, "tick")
    assert extra.returncode == 1 and "recurring task 'tick'" in extra.stderr
    assert taskloom("retry", path, "ok").returncode == 1  # not failed: refused

    # the next start carries it all out, in the same run
    second = taskloom("run", path, "--until-idle")
    assert "resuming the unfinished run" in second.stdout
    assert "bad              running (attempt 2)" in second.stdout
    assert "ok               running (attempt 2)" in second.stdout
    assert "ok_after         running (attempt 2)" in second.stdout
    assert "soon             succeeded (attempt 1)" in second.stdout
    assert "later            running" not in second.stdout
    assert "tick             running" not in second.stdout  # paused
    assert second.returncode == 1  # bad failed again, later was cancelled


def test_status_and_steering_without_a_stored_run(tmp_path):
    path = write(tmp_path, STORED)
    seen = taskloom("status", path)
    assert seen.returncode == 0 and seen.stdout.startswith("no run of flow yet")
    assert json.loads(taskloom("status", path, "--json").stdout)["run"] is None
    retried = taskloom("retry", path, "bad")
    assert retried.returncode == 2
    assert "no run of flow is stored" in retried.stderr
    usage = taskloom("retry", path)
    assert usage.returncode == 2 and "--failed" in usage.stderr


RECURRING = """
    [tasks.prep]
    command = ["true"]

    [tasks.backup]
    command = ["true"]
    cron = "30 2 * * *"
    timezone = "Asia/Tokyo"
"""


@pytest.mark.slow
def test_run_says_once_what_it_waits_for(tmp_path):
    path = write(tmp_path, RECURRING)
    result = taskloom("run", path, "--for", "2s")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = [line for line in result.stdout.splitlines() if line.startswith("waiting for")]
    assert len(lines) == 1, result.stdout
    assert re.fullmatch(
        r"waiting for recurring tasks: next backup at ([\d-]+ )?02:30 \(Asia/Tokyo\), "
        r"in (\d+ h( \d+ min)?|\d+ min( \d+ s)?); Ctrl-C to stop",
        lines[0],
    ), lines[0]
    assert re.search(r"\nflow: 1 scheduled, 1 succeeded in \d+(\.\d)? s\n", result.stdout)


def test_until_idle_ends_a_run_once_only_recurring_tasks_remain(tmp_path):
    path = write(tmp_path, RECURRING)
    started = time.monotonic()
    result = taskloom("run", path, "--until-idle")
    assert result.returncode == 0, result.stdout + result.stderr
    assert time.monotonic() - started < 30
    assert "every one-shot task has settled; stopping (--until-idle); backup would next run at" in (
        result.stdout
    )
    failing = write(tmp_path, RECURRING.replace('["true"]', '["false"]', 1), "bad.toml")
    assert taskloom("run", failing, "--until-idle").returncode == 1


def test_run_takes_a_file_or_an_example_not_both(tmp_path):
    path = write(tmp_path, RECURRING)
    both = taskloom("run", path, "--example", "etl")
    assert both.returncode == 2 and "give a FILE or --example NAME" in both.stderr
    neither = taskloom("run")
    assert neither.returncode == 2
    unknown = taskloom("run", "--example", "nope")
    assert unknown.returncode == 2 and "invalid choice" in unknown.stderr


@pytest.mark.slow
def test_run_example_etl_runs_the_bundled_example_headless():
    result = taskloom("run", "--example", "etl", timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    for task in ("extract", "clean_a", "clean_b", "load", "report", "cleanup"):
        assert re.search(rf"{task}\s+succeeded \(attempt 1\)", result.stdout), task
    assert re.search(r"etl: 6 succeeded in \d+(\.\d)? s", result.stdout), result.stdout


def test_cancel_of_a_command_still_running_after_its_owner_was_killed_ends_it(tmp_path):
    # Found by hand: 'taskloom cancel' said "cancelled long" of a command that went on
    # under its supervisor, and the next start adopted it and recorded a success.
    fifo = tmp_path / "announce"
    os.mkfifo(fifo)
    path = write(
        tmp_path,
        f"""
        [tasks.long]
        command = ["sh", "-c", "echo $$ > '{fifo}'; exec sleep 300"]

        [tasks.after]
        command = ["true"]
        deps = ["long"]
        """,
    )
    owner = start_run(path)
    with open(fifo) as stream:
        command = int(stream.read())
    owner.send_signal(signal.SIGKILL)
    owner.wait(timeout=30)  # (its supervisor still holds the stderr pipe it inherited)
    owner.stdout.close()
    owner.stderr.close()
    os.kill(command, 0)  # its supervisor keeps it running

    cancelled = taskloom("cancel", path, "long")
    assert cancelled.returncode == 0, cancelled.stderr
    assert "cancelled long" in cancelled.stdout and "its command was ended" in cancelled.stdout

    def gone() -> bool:
        try:
            os.kill(command, 0)
        except ProcessLookupError:
            return True
        return False

    wait_until(gone, what="the cancelled command to end")
    assert state_of(path, "long") == "cancelled"
    assert state_of(path, "after") == "skipped"
    history = taskloom("history", path, "--json")
    (attempt,) = [a for a in json.loads(history.stdout)["attempts"] if a["task"] == "long"]
    assert attempt["outcome"] == "cancelled", attempt

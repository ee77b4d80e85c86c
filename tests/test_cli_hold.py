"""``taskloom run`` under attack (issue 21, item 14), with real processes: Ctrl-C
right after the start, a store that fails, a folder made read-only during the
run, and the shipped crontab line in a home without ``~/.cache``."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
CRON = ROOT / "resources" / "background" / "taskloom.cron"


def _flow(folder: Path, text: str) -> Path:
    path = folder / "flow.toml"
    path.write_text(text)
    return path


# ---------------------------------------------------------------------- Ctrl-C early
@pytest.mark.slow
def test_ctrl_c_in_the_first_moments_exits_130_without_a_traceback(tmp_path):
    flow = _flow(tmp_path, '[tasks.s]\ncommand = ["sleep", "30"]\n')
    landed = []
    for n, delay in enumerate((0.1, 0.15, 0.2, 0.25, 0.3, 0.4)):
        proc = subprocess.Popen(
            [sys.executable, "-m", "taskloom", "run", str(flow), "--db", str(tmp_path / f"{n}.db")],
            cwd=ROOT,
            env=ENV,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(delay)  # the point of the test: a signal at a given moment of the start
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        if "init_import_site" in err:  # Python itself was still starting: not ours
            continue
        landed.append(delay)
        assert "Traceback" not in err, (delay, err)
        assert proc.returncode == 130, (delay, proc.returncode, err)  # -2 or 1 before
    assert len(landed) >= 3, landed  # most signals landed in Taskloom's own start


# ---------------------------------------------------------------------- store failures
def _mount_tmpfs(where: Path, size: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    where.mkdir()
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({proc.stderr.strip()})")


@pytest.mark.slow
@pytest.mark.parametrize("quiet", [False, True])
def test_a_store_that_fails_during_the_run_is_one_line_and_exit_2(tmp_path, quiet):
    mnt = tmp_path / "small"
    _mount_tmpfs(mnt, "3m")
    try:
        flow = _flow(
            mnt,
            "[tasks.fill]\n"
            f'command = ["sh", "-c", "cat /dev/zero > {mnt}/filler 2>/dev/null; true"]\n'
            '[tasks.after]\ncommand = ["true"]\ndeps = ["fill"]\n',
        )
        args = ["-q"] if quiet else []
        proc = subprocess.run(
            [sys.executable, "-m", "taskloom", "run", *args, str(flow), "--db", str(mnt / "x.db")],
            cwd=ROOT,
            env=ENV,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr  # "--- Logging error ---" tracebacks before
    assert lines[0].startswith("taskloom: ") and "full" in lines[0]


def _without_root_powers(command: list[str]) -> list[str]:
    """As root, the command runs without the capabilities that ignore file modes."""
    if os.geteuid() != 0:
        return command
    if shutil.which("setpriv") is None:
        pytest.skip("root, and no setpriv to run without root's file powers")
    return ["setpriv", "--inh-caps=-all", "--bounding-set=-all", *command]


def test_a_store_folder_made_read_only_during_the_run_is_one_line_at_exit(tmp_path):
    folder = tmp_path / "store"
    folder.mkdir()
    flow = _flow(
        tmp_path,
        f'[tasks.lock]\ncommand = ["chmod", "555", "{folder}"]\n'
        '[tasks.after]\ncommand = ["true"]\ndeps = ["lock"]\n',
    )
    try:
        proc = subprocess.run(
            _without_root_powers(
                [sys.executable, "-m", "taskloom", "run", str(flow), "--db", str(folder / "x.db")]
            ),
            cwd=ROOT,
            env=ENV,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        folder.chmod(0o755)
    assert "Traceback" not in proc.stderr, proc.stderr  # a PermissionError at exit before
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert "cannot remove" in lines[0] and "x.db-inflight" in lines[0]
    assert proc.returncode == 0  # the run itself succeeded


# ---------------------------------------------------------------------- the crontab line
def test_the_shipped_crontab_line_runs_in_a_home_without_a_cache_folder(tmp_path):
    line = next(text for text in CRON.read_text().splitlines() if text and not text.startswith("#"))
    command = line.split(None, 5)[5]  # after the five time fields, as cron runs it
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / "flows").mkdir()
    _flow(home / "flows", '[tasks.hello]\ncommand = ["true"]\n').rename(
        home / "flows" / "recurring.toml"
    )
    shim = home / ".local" / "bin" / "taskloom"
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} -m taskloom "$@"\n')
    shim.chmod(0o755)
    assert not (home / ".cache").exists()
    env = {
        "HOME": str(home),
        "PATH": os.defpath,  # cron's short PATH
        "PYTHONPATH": str(ROOT),
        "XDG_DATA_HOME": str(tmp_path / "data"),
    }
    proc = subprocess.run(
        [shutil.which("sh") or "sh", "-c", command],
        cwd=home,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr  # 2 before: the redirection had no folder
    log = (home / ".cache" / "taskloom-recurring.log").read_text()
    assert "1 succeeded" in log, log

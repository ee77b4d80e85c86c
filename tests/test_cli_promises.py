"""The command line keeps the README's word: -q/-v on every command, "version" in
every --json answer, --help and 'help' list every command, and an unusable store
path is one line and exit 2 wherever a store is taken."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from taskloom.cli import SUBCOMMANDS, command_summaries

ROOT = Path(__file__).resolve().parents[1]
ETL = ROOT / "resources" / "examples" / "etl.toml"
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}


@pytest.fixture(autouse=True)
def private_dirs(tmp_path, monkeypatch):
    monkeypatch.setitem(ENV, "XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setitem(ENV, "HOME", str(tmp_path / "home"))  # install-desktop writes there


def taskloom(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "taskloom", *map(str, args)],
        cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


# one harmless, quick invocation of each command
EVERY = {
    "run": ["run", ETL, "--dry-run"],
    "status": ["status", ETL],
    "retry": ["retry", ETL, "--failed"],
    "cancel": ["cancel", ETL, "load"],
    "pause": ["pause", ETL, "load"],
    "resume": ["resume", ETL, "load"],
    "run-now": ["run-now", ETL, "load"],
    "clear": ["clear", ETL, "load"],
    "validate": ["validate", ETL],
    "history": ["history", ETL],
    "list": ["list", ETL],
    "next": ["next", ETL],
    "forecast": ["forecast", ETL, "--for", "1m"],
    "backfill": [
        "backfill",
        ETL.with_name("recurring.toml"),
        "--from",
        "2026-11-01",
        "--to",
        "2026-11-01",
        "--dry-run",
    ],  # fmt: skip
    "install-desktop": ["install-desktop", "--uninstall"],
    "completion": ["completion", "bash"],
    "help": ["help", "run"],
}


def test_every_command_is_tried_here():
    assert set(EVERY) == set(SUBCOMMANDS)


@pytest.mark.slow
@pytest.mark.parametrize("flag", ["-q", "-v", "--quiet", "--verbose"])
@pytest.mark.parametrize("command", sorted(EVERY))
def test_every_command_takes_quiet_and_verbose_after_the_command(command, flag):
    result = taskloom(*EVERY[command], flag)
    assert "unrecognized arguments" not in result.stderr, result.stderr
    assert result.returncode in (0, 2), result.stdout + result.stderr  # 2: no stored run
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("command", ["status", "list", "next", "history", "validate", "forecast"])
def test_every_json_answer_has_a_version(command):
    extra = ["--for", "1m"] if command == "forecast" else []
    result = taskloom(command, ETL, "--json", *extra)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["version"] == 1


def test_help_lists_every_command_with_a_summary():
    result = taskloom("--help")
    assert result.returncode == 0
    listing = result.stdout.split("commands:\n", 1)[1]
    for name, summary in command_summaries():
        assert summary, name
        assert f"  {name}" in listing and summary in listing, name
    assert {name for name, _ in command_summaries()} == set(SUBCOMMANDS)
    assert taskloom("help").stdout == result.stdout


def test_help_command_shows_one_commands_help_and_never_opens_a_file(tmp_path):
    shown = taskloom("help", "status")
    assert shown.returncode == 0
    assert shown.stdout.startswith("usage: taskloom status")
    unknown = taskloom("help", "nope")
    assert unknown.returncode == 2
    assert unknown.stderr.strip() == "taskloom help: no command 'nope' (see 'taskloom help')"


@pytest.mark.parametrize(
    "command", ["run", "status", "history", "forecast", "retry", "cancel", "pause", "clear"]
)
@pytest.mark.parametrize("db", ["/proc/nope/x.db", "/proc/self"])
def test_an_unusable_store_path_is_one_line_and_exit_2(command, db):
    tasks = ["load"] if command in ("cancel", "pause", "clear", "retry") else []
    result = taskloom(command, ETL, "--db", db, *tasks)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and db in lines[0], result.stderr
    assert "Traceback" not in result.stderr

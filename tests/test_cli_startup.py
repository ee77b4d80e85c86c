"""The command line starts quickly: each command imports only what it needs, and
``taskloom run`` starts the engine before it sets up what can wait (issue 25).

Times are never asserted (benchmarks/cli_bench.py measures them); what is asserted
is what a process imported, and in what order a run was set up.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ETL = ROOT / "resources" / "examples" / "etl.toml"

# What no quick command needs: the window, the live panel, the graph library, and
# the engine's heavier parts (its scheduler, forecaster, feed, process pools).
HEAVY = (
    "PySide6",
    "shiboken6",
    "rich",
    "networkx",
    "taskloom.gui",
    "taskloom.engine._core.scheduler",
    "taskloom.engine.forecast",
    "taskloom.engine.feed",
    "taskloom.engine.pools",
    "tomlkit",  # the writer: reading a file does not need it
)
# ...and a command that reads no store opens none.
STORE = ("sqlite3", "taskloom.engine.store")

# Runs the command line's main in a fresh interpreter, then tells which modules it
# imported (on stderr, after whatever the command printed).
MODULES = (
    "import json, sys\n"
    "from taskloom.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "sys.stdout.flush()\n"
    "sys.stderr.write('\\nMODULES ' + json.dumps(sorted(sys.modules)))\n"
    "raise SystemExit(code)\n"
)


def env_for(tmp_path: Path) -> dict:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }


def imported_by(tmp_path: Path, *args) -> tuple[subprocess.CompletedProcess, set[str]]:
    result = subprocess.run(
        [sys.executable, "-c", MODULES, *map(str, args)],
        cwd=tmp_path,
        env=env_for(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    _, marker, listing = result.stderr.rpartition("\nMODULES ")
    assert marker, result.stderr
    return result, set(json.loads(listing))


def loaded(modules: set[str], names) -> list[str]:
    """Which of ``names`` (or their submodules) are in ``modules``."""
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


@pytest.mark.parametrize(
    "command", ["list", "next", "validate", "history", "list --json", "validate --json"]
)
def test_quick_commands_import_neither_qt_rich_networkx_nor_the_scheduler(tmp_path, command):
    result, modules = imported_by(tmp_path, *command.split(), ETL)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()  # it did answer
    assert loaded(modules, HEAVY) == []
    assert loaded(modules, STORE) == []  # no run yet: history opens no store
    assert "taskloom.engine.workflow" in modules  # it did read the file


def test_a_file_with_a_cycle_is_still_refused_with_the_cycle_named(tmp_path):
    path = tmp_path / "flow.toml"
    path.write_text(
        textwrap.dedent(
            """
            [tasks.a]
            command = ["true"]
            deps = ["c"]
            [tasks.b]
            command = ["true"]
            deps = ["a", "a"]
            [tasks.c]
            command = ["true"]
            deps = ["b"]
            [tasks.d]
            command = ["true"]
            deps = ["d"]
            """
        )
    )
    result, _ = imported_by(tmp_path, "validate", path)
    assert result.returncode == 2
    assert "dependency cycle: a -> b -> c -> a" in result.stdout
    assert "dependency cycle: d -> d" in result.stdout


def test_the_version_is_looked_up_only_when_asked_for(tmp_path):
    _, modules = imported_by(tmp_path, "list", ETL)
    assert "importlib.metadata" not in modules
    result = subprocess.run(
        [sys.executable, "-m", "taskloom", "--version"],
        env=env_for(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.stdout.strip() == "taskloom 0.1.0"


# Runs ``taskloom run FILE`` with each setup step noted as it begins, in order.
ORDER = (
    "import json, sys\n"
    "from taskloom import cli, runs\n"
    "from taskloom.engine import Scheduler\n"
    "from taskloom.engine.feed import FeedWriter\n"
    "order = []\n"
    "def note(owner, name, label):\n"
    "    real = getattr(owner, name)\n"
    "    def noted(*args, **kwargs):\n"
    "        order.append(label)\n"
    "        return real(*args, **kwargs)\n"
    "    setattr(owner, name, noted)\n"
    "note(Scheduler, 'start', 'engine')\n"
    "note(FeedWriter, 'start', 'feed thread')\n"
    "note(runs, 'prune', 'old runs pruned')\n"
    "note(runs.AttemptPruner, 'start', 'pruner')\n"
    "note(cli, '_report', 'report')\n"
    "code = cli.main(sys.argv[1:])\n"
    "sys.stdout.flush()\n"
    "sys.stderr.write('\\nORDER ' + json.dumps(order))\n"
    "raise SystemExit(code)\n"
)


def test_run_starts_the_engine_before_what_can_wait_and_tells_every_event(tmp_path):
    path = tmp_path / "flow.toml"
    path.write_text(
        textwrap.dedent(
            """
            [tasks.first]
            command = ["true"]
            [tasks.second]
            command = ["true"]
            deps = ["first"]
            """
        )
    )
    result = subprocess.run(
        [sys.executable, "-c", ORDER, "run", str(path)],
        cwd=tmp_path,
        env=env_for(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    order = json.loads(result.stderr.rpartition("\nORDER ")[2])
    assert order[0] == "engine", order
    assert set(order[1:]) == {"feed thread", "old runs pruned", "pruner", "report"}, order
    # The events that came before the report existed are told too, in order, after
    # its header and the run's note.
    lines = result.stdout.splitlines()
    assert lines[0] == "running flow: 2 tasks"
    assert lines[1].startswith("run 1 of flow in ")
    events = [line.split()[1:3] for line in lines[2:] if line.split()[0].endswith("s")]
    assert ["first", "succeeded"] in events
    assert events.index(["first", "succeeded"]) < events.index(["second", "succeeded"])
    times = [float(line.split()[0][:-1]) for line in lines[2:] if line.split()[1] in "first second"]
    assert times == sorted(times)

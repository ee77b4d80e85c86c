"""How long the command line takes to answer, side by side with an earlier checkout.

    python -m benchmarks.cli_bench [--before DIR] [--repeats 10] [--quick]

Each command runs as a person runs it, ``python -m taskloom COMMAND FILE`` in a
fresh process, on a small workflow (6 tasks, one of them on a cron schedule) with a
store folder of its own (``XDG_DATA_HOME``): wall time from spawn to exit, median
of ``--repeats`` runs, for ``list``, ``next``, ``history`` (of a store one earlier
run wrote), ``validate``; and ``run`` of a one-task file, until its command
starts (the command touches a file: its modification time, to the nanosecond) and
until it exits. There is no ``status`` command.

``--before DIR`` takes a checkout of an earlier commit with its own ``.venv``
(``git worktree add DIR <commit>``, then ``python3 -m venv .venv &&
.venv/bin/pip install -e .`` there): its Python runs the same commands,
interleaved with this checkout's run by run, so both columns see the same load;
the ratio is before / now. Then the top-level imports of ``taskloom list`` by
``-X importtime`` (cumulative ms, one run), for each.

Writes ``results/cli.json`` and ``results/cli.md``. Timings are never asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .report import machine_now, write_results

RESULTS = Path(__file__).resolve().parent / "results"
ROOT = Path(__file__).resolve().parents[1]

SMALL = """\
[workflow]
name = "small"
workers = 2

[tasks.extract]
command = ["true"]

[tasks.clean_a]
command = ["true"]
deps = ["extract"]

[tasks.clean_b]
command = ["true"]
deps = ["extract"]

[tasks.load]
command = ["true"]
deps = ["clean_a", "clean_b"]
retry = { max_attempts = 2, base = "1s" }

[tasks.report]
command = ["true"]
deps = ["load"]

[tasks.nightly]
command = ["true"]
cron = "30 2 * * *"
"""

FIRST = """\
[workflow]
name = "first"

[tasks.touch]
command = ["touch", "started"]
"""

COMMANDS = ("list", "next", "history", "validate")
ROWS = (*COMMANDS, "run: first command starts", "run: exits")


class Tree:
    """A checkout and the Python that runs it, with a scratch folder of its own."""

    def __init__(self, label: str, python: str, scratch: Path):
        self.label = label
        self.python = python
        self.home = scratch / label.replace(" ", "-")
        self.home.mkdir(parents=True)
        self.small = self.home / "small.toml"
        self.small.write_text(SMALL)
        self.times: dict[str, list[float]] = {row: [] for row in ROWS}
        self.cpu: dict[str, list[float]] = {row: [] for row in ROWS}  # user + system

    def env(self, data: Path) -> dict:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env.update(XDG_DATA_HOME=str(data), XDG_CONFIG_HOME=str(data), COLUMNS="100")
        return env

    def command(self, *args) -> list[str]:
        return [self.python, "-m", "taskloom", *map(str, args)]

    def prepare(self) -> None:
        """One run of the small file, so that ``history`` has a store to read."""
        subprocess.run(
            self.command("run", self.small, "--for", "3s"),
            cwd=self.home,
            env=self.env(self.home / "data"),
            capture_output=True,
            timeout=120,
        )

    def time_command(self, name: str) -> None:
        start = time.perf_counter()
        process = subprocess.Popen(
            self.command(name, self.small),
            cwd=self.home,
            env=self.env(self.home / "data"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        cpu, status = _wait(process)
        took = time.perf_counter() - start
        if status != 0:
            raise SystemExit(f"{self.label}: taskloom {name} failed ({status})")
        self.times[name].append(took)
        self.cpu[name].append(cpu)

    def time_run(self) -> None:
        folder = Path(tempfile.mkdtemp(dir=self.home))
        path = folder / "first.toml"
        path.write_text(FIRST)
        started = folder / "started"
        begin = time.time()
        process = subprocess.Popen(
            self.command("run", path),
            cwd=folder,
            env=self.env(folder / "data"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while not started.exists():  # a real process: polled, with a deadline
            if time.monotonic() > deadline or process.poll() not in (None, 0):
                process.kill()
                raise SystemExit(f"{self.label}: taskloom run did not start its command")
            time.sleep(0.001)
        cpu, _status = _wait(process)
        ended = time.time()
        self.cpu["run: exits"].append(cpu)
        self.times["run: first command starts"].append(started.stat().st_mtime_ns / 1e9 - begin)
        self.times["run: exits"].append(ended - begin)
        shutil.rmtree(folder, ignore_errors=True)

    def imports(self, top: int) -> list[tuple[str, float]]:
        """The ``top`` top-level imports of ``taskloom list`` by cumulative time (ms)."""
        done = subprocess.run(
            [self.python, "-X", "importtime", "-m", "taskloom", "list", str(self.small)],
            cwd=self.home,
            env=self.env(self.home / "data"),
            capture_output=True,
            text=True,
            timeout=120,
        )
        found = []
        for line in done.stderr.splitlines():
            if not line.startswith("import time:") or "cumulative" in line:
                continue
            _self, cumulative, name = line[len("import time:") :].split("|")
            if name.startswith("  "):  # imported by another import: counted there
                continue
            found.append((name.strip(), int(cumulative) / 1000))
        return sorted(found, key=lambda item: -item[1])[:top]


def _wait(process: subprocess.Popen) -> tuple[float, int]:
    """Wait for ``process``; (its CPU seconds, user + system, all threads; exit status).
    On a loaded machine a command's CPU time is close to what its wall time would be
    on an idle one."""
    _pid, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime, process.returncode


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="an earlier checkout with its own .venv")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--top", type=int, default=8, help="import entries shown")
    parser.add_argument("--quick", action="store_true", help="2 repeats (the smoke test)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder for the results")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    repeats = 2 if args.quick else args.repeats
    scratch = Path(tempfile.mkdtemp(prefix="taskloom-cli-bench-"))
    try:
        trees = [Tree("now", sys.executable, scratch)]
        if args.before is not None:
            python = args.before / ".venv" / "bin" / "python"
            if not python.exists():
                raise SystemExit(f"--before {args.before}: no .venv/bin/python there")
            trees.append(Tree("before", str(python), scratch))
        for tree in trees:
            tree.prepare()
        for number in range(repeats):
            order = trees if number % 2 == 0 else trees[::-1]  # each goes first in turn
            for name in COMMANDS:
                for tree in order:
                    tree.time_command(name)
            for tree in order:
                tree.time_run()
        imports = {tree.label: tree.imports(args.top) for tree in trees}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    medians = {t.label: {row: statistics.median(t.times[row]) for row in ROWS} for t in trees}
    cpu = {
        t.label: {row: statistics.median(t.cpu[row]) for row in ROWS if t.cpu[row]} for t in trees
    }
    result = {
        "repeats": repeats,
        "medians_s": medians,
        "cpu_medians_s": cpu,
        "all_s": {t.label: t.times for t in trees},
        "imports_ms": imports,
        "machine": machine_now(),
    }
    table = markdown(result)
    print(table)
    if not args.no_write:
        write_results(args.out, "cli", result, table)
    return 0


def markdown(result: dict) -> str:
    medians, cpu = result["medians_s"], result["cpu_medians_s"]
    labels = list(medians)
    head = "| command (small file) | " + " | ".join(f"{label}: wall (CPU) s" for label in labels)
    head += " | before / now (wall) |" if "before" in medians else " |"
    rule = "| --- |" + " ---: |" * (len(labels) + ("before" in medians))
    lines = [head, rule]
    for row in ROWS:
        cells = []
        for label in labels:
            used = cpu[label].get(row)
            cells.append(f"{medians[label][row]:.3f}" + ("" if used is None else f" ({used:.3f})"))
        if "before" in medians:
            cells.append(f"{medians['before'][row] / medians['now'][row]:.1f}×")
        lines.append(f"| `taskloom {row}` | " + " | ".join(cells) + " |")
    machine = result["machine"]
    lines.append("")
    lines.append(
        f"Median of {result['repeats']} runs each, interleaved; {machine['cpus']} cores, "
        f"Python {machine['python']}, load average {machine['load_average'][0]:.1f} at the "
        f"end, {machine['when']}."
    )
    for label, entries in result["imports_ms"].items():
        lines.append("")
        lines.append(f"Top-level imports of `taskloom list` ({label}, cumulative ms):")
        lines.append(", ".join(f"{name} {ms:.1f}" for name, ms in entries))
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())

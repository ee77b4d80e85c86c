"""What an open window costs while nothing happens, side by side with an earlier checkout.

    python -m benchmarks.idle_bench [--before DIR] [--seconds 60] [--quick]

The window is opened the way a person opens it, ``python -m taskloom FILE --start``
(offscreen: ``QT_QPA_PLATFORM=offscreen``), with its run store, the watchers' feed
and the forecast on, on a workflow whose next run is at 02:30 (a cron task and one
after it): nothing is due for hours. After a warm-up (the window drawn, the first
forecast made), the CPU time of the window's process and of every process it
started (the forecast helper, the reaper's watcher) is read from ``/proc`` at the
start and the end of ``--seconds``: CPU seconds over wall seconds, in % of one core.

``--before DIR`` (a checkout with its own ``.venv``, as for ``cli_bench``) opens
the same window from that checkout at the same time, so both columns see the same
load; the ratio is before / now. Writes ``results/idle.json`` and ``results/idle.md``.
Timings are never asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .report import machine_now, write_results

RESULTS = Path(__file__).resolve().parent / "results"

NIGHTLY = """\
[workflow]
name = "nightly"

[tasks.backup]
command = ["true"]
cron = "30 2 * * *"

[tasks.report]
command = ["true"]
deps = ["backup"]
"""

TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds: user + system) of a live process, from /proc."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            text = handle.read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()  # after "pid (name) "
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICKS


def tree_cpu(root: int) -> dict[int, float]:
    """CPU seconds of ``root`` and each process descending from it, by pid."""
    parents, cpu = {}, {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            found = _stat(int(name))
            if found is not None:
                parents[int(name)], cpu[int(name)] = found
    tree, grew = {root}, True
    while grew:
        more = {pid for pid, parent in parents.items() if parent in tree} - tree
        tree |= more
        grew = bool(more)
    return {pid: cpu[pid] for pid in tree if pid in cpu}


class Window:
    def __init__(self, label: str, python: str, scratch: Path, lasts: float):
        self.label = label
        folder = scratch / label
        folder.mkdir(parents=True)
        path = folder / "nightly.toml"
        path.write_text(NIGHTLY)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env.update(
            QT_QPA_PLATFORM="offscreen",
            XDG_DATA_HOME=str(folder / "data"),
            XDG_CONFIG_HOME=str(folder / "config"),
        )
        self.process = subprocess.Popen(
            [python, "-m", "taskloom", str(path), "--start", "--quit-after", str(lasts)],
            cwd=folder,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.first: dict[int, float] = {}
        self.result: dict = {}

    def begin(self) -> None:
        self.first = tree_cpu(self.process.pid)
        self.began = time.monotonic()

    def end(self) -> None:
        last = tree_cpu(self.process.pid)
        wall = time.monotonic() - self.began
        # Processes present at both ends (one that came and went is not counted: none
        # does while the window rests; a new one counts from zero).
        used = {pid: cpu - self.first.get(pid, 0.0) for pid, cpu in last.items()}
        own = used.get(self.process.pid, 0.0)
        total = sum(used.values())
        self.result = {
            "wall_s": wall,
            "cpu_s": total,
            "cpu_pct": 100 * total / wall,
            "window_process_pct": 100 * own / wall,
            "processes": len(last),
        }

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="an earlier checkout with its own .venv")
    parser.add_argument("--seconds", type=float, default=60.0, help="measured (default 60)")
    parser.add_argument("--warmup", type=float, default=10.0, help="before measuring")
    parser.add_argument("--quick", action="store_true", help="3 s measured (the smoke test)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder for the results")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    seconds = 3.0 if args.quick else args.seconds
    warmup = 5.0 if args.quick else args.warmup
    pythons = {"now": sys.executable}
    if args.before is not None:
        python = args.before / ".venv" / "bin" / "python"
        if not python.exists():
            raise SystemExit(f"--before {args.before}: no .venv/bin/python there")
        pythons["before"] = str(python)
    scratch = Path(tempfile.mkdtemp(prefix="taskloom-idle-bench-"))
    windows = []
    try:
        lasts = warmup + seconds + 30
        windows = [Window(label, python, scratch, lasts) for label, python in pythons.items()]
        deadline = time.monotonic() + warmup
        while time.monotonic() < deadline:  # real processes: looked at, with a deadline
            if any(w.process.poll() is not None for w in windows):
                raise SystemExit("a window exited during the warm-up (no display? see QT_QPA)")
            time.sleep(0.2)
        for window in windows:
            window.begin()
        time.sleep(seconds)  # the measurement itself: the windows rest meanwhile
        for window in windows:
            window.end()
    finally:
        for window in windows:
            window.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    result = {
        "seconds": seconds,
        "windows": {w.label: w.result for w in windows},
        "machine": machine_now(),
    }
    table = markdown(result)
    print(table)
    if not args.no_write:
        write_results(args.out, "idle", result, table)
    return 0


def markdown(result: dict) -> str:
    windows = result["windows"]
    labels = list(windows)
    head = "| a window at rest, next run at 02:30 | " + " | ".join(labels) + " |"
    rule = "| --- |" + " ---: |" * len(labels)
    rows = [
        ("CPU, window and its helpers (% of a core)", "cpu_pct", "{:.2f}%"),
        ("of which the window's process (% of a core)", "window_process_pct", "{:.2f}%"),
        (f"CPU seconds in {result['seconds']:.0f} s", "cpu_s", "{:.2f}"),
    ]
    lines = [head, rule]
    for title, key, fmt in rows:
        cells = [fmt.format(windows[label][key]) for label in labels]
        if "before" in windows and windows["now"][key] > 0:
            cells[-1] += f" ({windows['before'][key] / windows['now'][key]:.0f}×)"
        lines.append(f"| {title} | " + " | ".join(cells) + " |")
    machine = result["machine"]
    lines.append("")
    lines.append(
        f"Measured side by side in one run, offscreen; {machine['cpus']} cores, Python "
        f"{machine['python']}, load average {machine['load_average'][0]:.1f} at the end, "
        f"{machine['when']}. (N×) = before ÷ now."
    )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())

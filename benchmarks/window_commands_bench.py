"""The window's event-loop lag while a workflow file of ``true`` commands runs in it.

    python -m benchmarks.window_commands_bench [--quick] [--other PYTHON]

As a person runs it: the real app session (``taskloom FILE --start``: a store, the
watchers' feed, the forecast, the window shown offscreen at 1400x900) on a
generated file of 2,000 ``true`` commands (4 workers, no dependencies). A 10 ms
timer measures how late the event loop is (p50/p99/max) from Start until every
task has succeeded in the window; the run's wall time and the process's CPU (this
process only, not its children) are reported too.

Each measurement runs in a fresh process; ``--other PYTHON`` (the previous main's
virtualenv) runs the same, interleaved, so both columns come from one run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"

CHILD = r"""
import json, os, statistics, sys, time
from pathlib import Path
os.environ["QT_QPA_PLATFORM"] = "offscreen"
from PySide6.QtCore import QCoreApplication, QEventLoop, Qt, QTimer
from PySide6.QtWidgets import QApplication
from taskloom.app import WorkflowSession
from taskloom.engine import TaskState
from taskloom.engine.workflow import load

path, db, count = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
app = QApplication([])
session = WorkflowSession(load(path), None, db_path=db, log_dir=db.parent / "logs", start=False)
window = session.window
window.resize(1400, 900)
window.show()
deadline = time.monotonic() + 1.0
while time.monotonic() < deadline:
    app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 50)
late = []
last = [time.perf_counter()]
def tick():
    now = time.perf_counter()
    late.append(max(0.0, now - last[0] - 0.010))
    last[0] = now
timer = QTimer()
timer.setTimerType(Qt.TimerType.PreciseTimer)
timer.setInterval(10)
timer.timeout.connect(tick)
cpu0, started = time.process_time(), time.perf_counter()
timer.start()
last[0] = time.perf_counter()
session.start()
def done():
    tasks = window.bridge.tasks
    return len(tasks) == count and all(t.state is TaskState.SUCCEEDED for t in tasks.values())
give_up = time.monotonic() + 600
while not done() and time.monotonic() < give_up:
    app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 20)
elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu0
timer.stop()
ms = sorted(1000 * x for x in late) or [0.0]
print(json.dumps({
    "run_s": elapsed, "cpu_s": cpu, "ticks": len(ms),
    "lag_p50_ms": statistics.median(ms), "lag_p99_ms": ms[int(0.99 * (len(ms) - 1))],
    "lag_max_ms": ms[-1], "finished": done(),
}))
session.quiet = True
session.close()
"""


def run_once(python: str, count: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        lines = ['[workflow]\nname = "bench"\nworkers = 4\n']
        lines += [f'[tasks.t{i:05d}]\ncommand = ["true"]\n' for i in range(count)]
        path = folder / "bench.toml"
        path.write_text("\n".join(lines))
        env = {
            **os.environ,
            "XDG_DATA_HOME": str(folder / "data"),
            "XDG_CONFIG_HOME": str(folder / "config"),
            "QT_QPA_PLATFORM": "offscreen",
        }
        env.pop("TASKLOOM_OWNER", None)
        out = subprocess.run(
            [python, "-c", CHILD, str(path), str(folder / "run.db"), str(count)],
            env=env, cwd=folder, capture_output=True, text=True, timeout=900, check=True,
        )  # fmt: skip
        return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--other", help="another interpreter (the previous main's venv)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    count = 60 if args.quick else 2000
    repeats = 1 if args.quick else args.repeats
    pythons = {"now": sys.executable}
    if args.other:
        pythons = {"before": args.other, **pythons}
    runs: dict[str, list[dict]] = {name: [] for name in pythons}
    for _ in range(repeats):
        for name, python in pythons.items():
            runs[name].append(run_once(python, count))
    keys = ("run_s", "cpu_s", "lag_p50_ms", "lag_p99_ms", "lag_max_ms")
    summary = {
        name: {key: statistics.median(r[key] for r in rs) for key in keys}
        for name, rs in runs.items()
    }
    print(f"{count} true commands in the window (medians of {repeats})")
    print(f"{'column':<7} {'run s':>6} {'CPU s':>6} {'lag p50':>8} {'p99':>8} {'max':>8}")
    for name, row in summary.items():
        print(
            f"{name:<7} {row['run_s']:>6.1f} {row['cpu_s']:>6.1f} {row['lag_p50_ms']:>6.1f}ms"
            f" {row['lag_p99_ms']:>6.1f}ms {row['lag_max_ms']:>6.1f}ms"
        )
    if not args.quick:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "window_commands.json").write_text(json.dumps(runs, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

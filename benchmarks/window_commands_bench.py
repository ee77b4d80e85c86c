"""The window's event-loop lag while a workflow file of ``true`` commands runs in it.

    python -m benchmarks.window_commands_bench [--quick] [--other PYTHON]

As a person runs it: the real app session (``taskloom FILE --start``: a store, the
watchers' feed, the forecast, the window shown offscreen at 1400x900) on a
generated file of 2,000 ``true`` commands (4 workers, no dependencies). A 10 ms
timer measures how late the event loop is (p50/p99/max) from Start until every
task has succeeded in the window; the run's wall time and the process's CPU (this
process only, not its children) are reported too. The same file is run headless
(``taskloom run FILE``, its own run time from Start to the last success, as it
reports it) in the same invocation, interleaved: the window's run time over the
headless one is the "within 10% of headless" ratio (medians).

Each measurement runs in a fresh process; ``--other PYTHON`` (the previous main's
virtualenv) runs the same, interleaved, so both columns come from one run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
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
def done():  # asked after every pass of the loop: a walk of every task here took the
    # GUI thread 2.9 s of a 12 s run (the bridge keeps its counts)
    return window.bridge.state_counts()[TaskState.SUCCEEDED] == count
# The event loop runs as the app's does (it sleeps until something happens):
# processEvents() in a loop spun the GUI thread, which took the GIL from the engine's
# threads (the run took 2.8 times the headless one, with or without the window's work).
loop = QEventLoop()
def check(*_):
    if done():
        loop.quit()
window.bridge.tasksChanged.connect(check)
poll = QTimer()
poll.timeout.connect(check)
poll.start(100)
QTimer.singleShot(600_000, loop.quit)
if not done():
    loop.exec()
poll.stop()
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


# ``taskloom run FILE`` as a person runs it; only its closing "N succeeded in 8.0 s"
# says the time to the millisecond (its own clock: Start to the last success).
HEADLESS = r"""
import sys
from taskloom import cli, human
human.duration = lambda seconds: f"{seconds:.4f} s"
sys.exit(cli.main(["run", sys.argv[1]]))
"""


def run_once(python: str, count: int, headless: bool = False) -> dict:
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
        if headless:
            out = subprocess.run(
                [python, "-c", HEADLESS, str(path)],
                env=env, cwd=folder, capture_output=True, text=True, timeout=900, check=True,
            )  # fmt: skip
            found = re.search(rf"{count} succeeded in ([0-9.]+) s", out.stdout)
            if found is None:
                raise RuntimeError(f"no run time in taskloom run's output: {out.stdout[-300:]}")
            return {"run_s": float(found.group(1))}
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
    headless: dict[str, list[dict]] = {name: [] for name in pythons}
    for repeat in range(repeats):
        # Each checkout goes first every other time: the second of a pair ran 10-20%
        # slower whichever it was (swapping the two columns showed it).
        order = list(pythons.items())
        for name, python in order if repeat % 2 == 0 else order[::-1]:
            runs[name].append(run_once(python, count))
            headless[name].append(run_once(python, count, headless=True))
    keys = ("run_s", "cpu_s", "lag_p50_ms", "lag_p99_ms", "lag_max_ms")
    summary = {
        name: {key: statistics.median(r[key] for r in rs) for key in keys}
        for name, rs in runs.items()
    }
    for name, rs in headless.items():
        summary[name]["headless_s"] = statistics.median(r["run_s"] for r in rs)
        summary[name]["ratio"] = summary[name]["run_s"] / summary[name]["headless_s"]
    print(f"{count} true commands in the window and headless (medians of {repeats})")
    print(
        f"{'column':<7} {'run s':>6} {'headless s':>10} {'ratio':>6} {'CPU s':>6}"
        f" {'lag p50':>8} {'p99':>8} {'max':>8}"
    )
    for name, row in summary.items():
        print(
            f"{name:<7} {row['run_s']:>6.2f} {row['headless_s']:>10.2f} {row['ratio']:>6.2f}"
            f" {row['cpu_s']:>6.1f} {row['lag_p50_ms']:>6.1f}ms"
            f" {row['lag_p99_ms']:>6.1f}ms {row['lag_max_ms']:>6.1f}ms"
        )
    if not args.quick:
        RESULTS.mkdir(exist_ok=True)
        results = {"window": runs, "headless": headless, "summary": summary}
        (RESULTS / "window_commands.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

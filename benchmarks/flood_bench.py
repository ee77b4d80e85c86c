"""G5, the window under a flood, against another checkout in the same run.

    python -m benchmarks.flood_bench [--quick] [--other PYTHON] [--repeats 3]

Another thread adds 20,000 no-op tasks at full speed to a running Scheduler(workers=4)
while the window (offscreen, 1400x900) shows it: the event loop's lag (a 10 ms timer,
p50/p99/max), the engine's time to add and run them all (the window must not slow
it), and how long the window takes to catch up once the engine is done
(benchmarks/big_workflows.py ``measure_stream``). Each measurement runs in a fresh
process; ``--other PYTHON`` (the previous main's virtualenv: its own checkout's
benchmarks and code) runs the same, interleaved. The event loop sleeps between
events as the app's does (``gui_bench.process_until``; a checkout older than a863565
spun it, so compare with a863565 or later).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"

CHILD = r"""
import json, os, sys
os.environ["QT_QPA_PLATFORM"] = "offscreen"
sys.path.insert(0, os.getcwd())
from PySide6.QtWidgets import QApplication
app = QApplication([])
from benchmarks import big_workflows, gui_bench

r = big_workflows.measure_stream(
    "noop via API", int(sys.argv[1]), gui_bench.open_window, gui_bench.close_window,
    gui_bench.process_until, gui_bench.LagProbe,
)
print(json.dumps(r))
"""


def checkout_of(python: str) -> Path:
    """The checkout a virtualenv's interpreter belongs to (``ROOT/.venv/bin/python``)."""
    return Path(python).absolute().parent.parent.parent


def run_once(python: str, count: int) -> dict:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    out = subprocess.run(
        [python, "-c", CHILD, str(count)], env=env, cwd=checkout_of(python),
        capture_output=True, text=True, timeout=900, check=True,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--other", help="another checkout's interpreter (its .venv)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    count = 400 if args.quick else 20_000
    repeats = 1 if args.quick else args.repeats
    pythons = {"now": sys.executable}
    if args.other:
        pythons = {"before": args.other, **pythons}
    runs: dict[str, list[dict]] = {name: [] for name in pythons}
    for repeat in range(repeats):
        # Each checkout goes first every other time: the second of a pair ran 10-20%
        # slower whichever it was (swapping the two columns showed it).
        order = list(pythons.items())
        for name, python in order if repeat % 2 == 0 else order[::-1]:
            runs[name].append(run_once(python, count))
    keys = ("lag_p50_ms", "lag_p99_ms", "lag_max_ms", "engine_s", "catch_up_s")
    print(f"{count:,} no-op tasks added by another thread (medians of {repeats})")
    print(f"{'column':<7} {'lag p50':>8} {'p99':>8} {'max':>8} {'engine s':>9} {'catch-up s':>10}")
    summary = {}
    for name, rs in runs.items():
        row = {key: statistics.median(r[key] or 0.0 for r in rs) for key in keys}
        summary[name] = row
        print(
            f"{name:<7} {row['lag_p50_ms']:>6.1f}ms {row['lag_p99_ms']:>6.1f}ms"
            f" {row['lag_max_ms']:>6.1f}ms {row['engine_s']:>9.2f} {row['catch_up_s']:>10.2f}"
        )
    if not args.quick:
        RESULTS.mkdir(exist_ok=True)
        results = {"runs": runs, "summary": summary}
        (RESULTS / "flood.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

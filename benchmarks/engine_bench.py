"""Benchmark the Taskloom engine against peers, side by side, in one run.

    python -m benchmarks.engine_bench            # full run (~5 min on 2 cores)
    python -m benchmarks.engine_bench --quick    # 1 repeat, small sizes (smoke test)

Prints a markdown table and writes ``results/engine.json`` and ``results/engine.md``.
Each (system, workload) runs in its own process (see runner.py).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from . import report, workloads
from .drivers import DRIVERS, TaskloomBeforeDriver
from .runner import JOBS, applies

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results"
BEFORE = TaskloomBeforeDriver.name
SYSTEMS = ["taskloom", "textbook_timer", "textbook_dag", "apscheduler", "sched"]

# Seconds all repeats of one job may take on one system; a slow peer gets fewer runs.
BUDGET_S = {"W1": 30.0, "W2": 20.0, "W3": 60.0, "W45": 45.0, "W6": 15.0}

NOTES = [
    "Peers: textbook timer = one heap keyed by run time + Condition + ThreadPoolExecutor(4), "
    "cancel leaves a tombstone (benchmarks/peers/textbook_timer.py); textbook DAG = 4 workers "
    "on one (ready time, -priority) heap, ancestor search on every add "
    "(benchmarks/peers/textbook_dag.py); APScheduler 3 = BackgroundScheduler, "
    "ThreadPoolExecutor(4), MemoryJobStore, misfire_grace_time=None; stdlib sched runs every "
    "task in the calling thread (no pool).",
    "Listeners: Taskloom subscribe(cb) (sees every event), APScheduler add_listener, textbook "
    "peers a callback after each task, sched a wrapper call.",
    "W5: stdlib sched.cancel is O(n) (list.remove + heapify), so it is timed on "
    f"{workloads.CANCEL_CAP['sched']} cancels.",
    "W6: all tasks are scheduled before start(), first each due now at its own schedule() "
    "call (due times microseconds apart), then all with one shared due time; APScheduler has "
    "no job priority, the textbook DAG no timers.",
]


def machine() -> dict:
    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        from importlib.metadata import version

        aps = version("apscheduler")
    except Exception:
        aps = "not installed"
    return {
        "nproc": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "cpu": cpu,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(terse=True),
        "apscheduler": aps,
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load_avg_1m_at_start": _load_average(),
    }


def _load_average() -> float | None:
    # Other work on the machine competes for the same cores: worth recording.
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def run_in_subprocess(system, job, mode, repeats, budget, timeout, before=None) -> dict:
    """One runner process. ``system == BEFORE`` runs Taskloom from the checkout
    ``before`` (an earlier commit, with its own ``.venv``), with that checkout's
    runner: the same workloads, the earlier engine, in the same benchmark run."""
    root, python = ROOT, sys.executable
    if system == BEFORE:
        root, python, system = before, str(before / ".venv" / "bin" / "python"), "taskloom"
    cmd = [
        python, "-m", "benchmarks.runner", system, job, "--mode", mode,
        "--repeats", str(repeats), "--budget", str(budget), "--timeout", str(timeout),
    ]  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    try:
        proc = subprocess.run(
            cmd, cwd=root, env=env, capture_output=True, text=True,
            timeout=budget + 2 * timeout + 30,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"error": "killed: the run did not end"}
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = proc.stderr.strip().splitlines()[-1:] or [f"exit code {proc.returncode}"]
        return {"error": tail[0]}
    return json.loads(lines[-1])


def collect(raw: dict, job: str, repeats: int) -> dict[str, dict]:
    """One runner answer -> {workload id: {"median", "runs", "repeats_wanted"}}."""
    workload_ids = JOBS[job][0]
    if "error" in raw:
        return {w: {"error": raw["error"]} for w in workload_ids}
    runs = raw["runs"]
    if len(workload_ids) == 1:
        per_workload = {workload_ids[0]: runs}
    else:
        per_workload = {w: [run[w] for run in runs] for w in workload_ids}
    return {
        w: {"median": report.median_metrics(r), "runs": len(r), "repeats_wanted": repeats}
        for w, r in per_workload.items()
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.engine_bench")
    parser.add_argument("--quick", action="store_true", help="1 repeat, small sizes")
    parser.add_argument("--repeats", type=int, default=None, help="runs per job (default 3)")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated")
    parser.add_argument("--only", default="", help="workloads, e.g. W1,W3 (W4/W5 run together)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder for engine.json/.md")
    parser.add_argument(
        "--before",
        type=Path,
        help="a checkout of an earlier commit with its own .venv: adds its Taskloom as a column",
    )
    args = parser.parse_args(argv)

    mode = "quick" if args.quick else "full"
    repeats = args.repeats or (1 if args.quick else 3)
    timeout = 5.0 if args.quick else workloads.TIMEOUT_S
    systems = [s for s in args.systems.split(",") if s]
    if args.before is not None:
        if not (args.before / ".venv" / "bin" / "python").exists():
            parser.error(f"--before {args.before}: no .venv/bin/python there")
        systems.insert(1, BEFORE)
    unknown = set(systems) - set(DRIVERS)
    if unknown:
        parser.error(f"unknown systems: {', '.join(sorted(unknown))}")
    wanted = {w.strip().upper() for w in args.only.split(",") if w.strip()}
    jobs = [job for job, (ids, _) in JOBS.items() if not wanted or wanted & set(ids)]

    results = {
        "machine": machine(),
        "mode": mode,
        "repeats": repeats,
        "sizes": workloads.SIZES[mode],
        "systems": {s: DRIVERS[s].label for s in systems},
        "notes": NOTES,
        "workloads": {},
    }
    started = time.perf_counter()
    for job in jobs:
        for system in systems:
            if not applies(system, job):
                continue
            t0 = time.perf_counter()
            raw = run_in_subprocess(system, job, mode, repeats, BUDGET_S[job], timeout, args.before)
            for workload, result in collect(raw, job, repeats).items():
                if workload in DRIVERS[system].supports:
                    results["workloads"].setdefault(workload, {})[system] = result
            status = raw.get("error", f"{len(raw.get('runs', []))} run(s)")
            print(f"  {job:<4} {system:<15} {time.perf_counter() - t0:6.1f} s  {status}",
                  file=sys.stderr, flush=True)  # fmt: skip
    results["elapsed_s"] = time.perf_counter() - started
    results["machine"]["load_avg_1m_at_end"] = _load_average()
    report.add_ratios(results["workloads"])

    table = report.markdown(results, [(s, DRIVERS[s].label) for s in systems])
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "engine.json").write_text(json.dumps(results, indent=2) + "\n")
    (args.out / "engine.md").write_text(table)
    print(table)
    print(f"wrote {args.out / 'engine.json'} and engine.md in {results['elapsed_s']:.0f} s",
          file=sys.stderr)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

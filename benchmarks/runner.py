"""Runs one workload on one system in a fresh process and prints its runs as JSON.

``engine_bench`` starts one of these per (system, workload) so that no thread
left over from one system competes for the GIL with the next, and a system
that hangs can be killed.

    python -m benchmarks.runner SYSTEM JOB [--mode full|quick] [--repeats N] [--budget S]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback

from . import workloads
from .drivers import DRIVERS
from .report import BASELINE

# job -> (workload ids it reports, function(make, sizes, system, run index) -> metrics)
JOBS = {
    "W1": (("W1",), lambda make, size, system, i: workloads.throughput(make, **size)),
    "W2": (("W2",), lambda make, size, system, i: workloads.lateness(make, **size)),
    "W3": (("W3",), lambda make, size, system, i: workloads.graph(make, **size)),
    "W45": (
        ("W4", "W5"),
        # Memory is measured in the first run only: it does not vary between runs.
        lambda make, size, system, i: workloads.pending(
            make, **size, system=system, measure_memory=i == 0
        ),
    ),
    "W6": (("W6",), lambda make, size, system, i: workloads.priority(make, **size)),
}


def applies(system: str, job: str) -> bool:
    return bool(set(JOBS[job][0]) & DRIVERS[system].supports)


def run_job(system: str, job: str, mode: str, repeats: int, budget: float) -> dict:
    """Repeat the workload ``repeats`` times; a peer does fewer if it would pass ``budget`` s."""
    make = DRIVERS[system]
    size = workloads.SIZES[mode][job]
    run_once = JOBS[job][1]
    runs, started = [], time.perf_counter()
    for index in range(repeats):
        t0 = time.perf_counter()
        runs.append(run_once(make, size, system, index))
        took = time.perf_counter() - t0
        if system != BASELINE and time.perf_counter() - started + took > budget:
            break
    return {"system": system, "job": job, "mode": mode, "size": size, "runs": runs}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.runner")
    parser.add_argument("system", choices=sorted(DRIVERS))
    parser.add_argument("job", choices=sorted(JOBS))
    parser.add_argument("--mode", choices=sorted(workloads.SIZES), default="full")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--budget", type=float, default=60.0, help="seconds for all repeats")
    parser.add_argument("--timeout", type=float, default=workloads.TIMEOUT_S)
    args = parser.parse_args(argv)
    workloads.TIMEOUT_S = args.timeout
    try:
        result = run_job(args.system, args.job, args.mode, args.repeats, args.budget)
    except Exception as exc:
        traceback.print_exc()
        result = {"system": args.system, "job": args.job, "error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

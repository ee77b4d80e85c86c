"""Where Taskloom spends its time in one workload: cProfile over every thread.

    python -m benchmarks.profile_engine W1      # 20,000 no-op tasks, 4 workers, 1 listener
    python -m benchmarks.profile_engine W3      # chain + random DAG of 20,000
    python -m benchmarks.profile_engine W45     # 100,000 schedule() an hour ahead, 50,000 cancel()

cProfile only sees the thread that enabled it, so ``threading.Thread.run`` is
wrapped to give every thread its own profiler; the stats are merged. Each
profiler counts its thread's CPU time (``time.thread_time``), so waiting for the
GIL or a lock is not charged to whatever function happened to be waiting.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import threading
import time

from . import workloads
from .drivers import TaskloomDriver


def _profile_all_threads() -> list[cProfile.Profile]:
    profiles: list[cProfile.Profile] = []
    original_run = threading.Thread.run

    def profiled_run(self):
        profiler = cProfile.Profile(time.thread_time)
        profiles.append(profiler)
        profiler.enable()
        try:
            original_run(self)
        finally:
            profiler.disable()

    threading.Thread.run = profiled_run
    return profiles


def run_workload(workload: str) -> None:
    size = workloads.SIZES["full"]
    if workload == "W1":
        workloads.throughput(TaskloomDriver, **size["W1"])
    elif workload == "W3":
        workloads.graph(TaskloomDriver, **size["W3"])
    elif workload == "W45":
        workloads._pending_pass(TaskloomDriver, size["W45"]["n"], size["W45"]["cancel"], False)
    else:
        raise SystemExit(f"no profile for {workload}")


def report(profiles: list[cProfile.Profile], top: int) -> str:
    stats = pstats.Stats(profiles[0])
    for profiler in profiles[1:]:
        stats.add(profiler)
    rows = []
    for (filename, line, name), (_cc, calls, tottime, cumtime, _callers) in stats.stats.items():
        where = f"{filename}:{line}({name})" if line else name
        rows.append((tottime, cumtime, calls, where))
    busy = sum(row[0] for row in rows) or 1.0
    rows.sort(reverse=True)
    out = io.StringIO()
    out.write(f"CPU time: {busy:.2f} s over {len(profiles)} threads\n")
    out.write(f"{'self %':>7} {'self s':>7} {'cum s':>7} {'calls':>9}  function\n")
    for tottime, cumtime, calls, where in rows[:top]:
        short = where.replace("/work/main/", "")
        out.write(
            f"{100 * tottime / busy:6.1f}% {tottime:7.3f} {cumtime:7.3f} {calls:9d}  {short}\n"
        )
    return out.getvalue()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.profile_engine")
    parser.add_argument("workload", choices=["W1", "W3", "W45"])
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args(argv)
    profiles = _profile_all_threads()
    main_profiler = cProfile.Profile(time.thread_time)
    profiles.append(main_profiler)
    main_profiler.enable()
    run_workload(args.workload)
    main_profiler.disable()
    print(report(profiles, args.top))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

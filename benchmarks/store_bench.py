"""What the SQLite store costs the engine: throughput with and without it, side by side.

    python -m benchmarks.store_bench [--quick]

Three workloads on 4 workers: no-op tasks (the worst case: the store's work per
task is all there is), tasks that sleep 5 ms (a short real job), both as a
``Call`` (a store needs tasks it can run again after a restart), and ``true``
commands (a real process per attempt; with a store, each records its pid, group
and start time before it works). Medians of 3 runs; every attempt start is
durable before its code runs and every success before it is reported, with
group commit. With a store, the run also holds the store's owner lock.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from taskloom.engine import Call, Scheduler
from taskloom.engine.store import SQLiteStore

RESULTS = Path(__file__).resolve().parent / "results"


def noop() -> None:
    pass


def sleep_5ms() -> None:
    time.sleep(0.005)


def _action(task: str):
    if task == "true_command":
        from taskloom.engine.command import Command

        return Command(["true"])
    return Call(f"benchmarks.store_bench:{task}")


def throughput(task: str, count: int, with_store: bool) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(Path(tmp) / "bench.db") if with_store else None
        scheduler = Scheduler(workers=4, store=store, log_dir=tmp)
        fn = _action(task)
        for _ in range(count):
            scheduler.add(fn)
        started = time.perf_counter()
        scheduler.start()
        scheduler.wait()
        elapsed = time.perf_counter() - started
        scheduler.shutdown()
        if store is not None:
            store.close()
    return count / elapsed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one small run of each")
    args = parser.parse_args(argv)
    repeats = 1 if args.quick else 3
    sizes = {
        "noop": 500 if args.quick else 10_000,
        "sleep_5ms": 100 if args.quick else 2_000,
        "true_command": 50 if args.quick else 600,
    }
    rows = {}
    for task, count in sizes.items():
        without = statistics.median(throughput(task, count, False) for _ in range(repeats))
        with_store = statistics.median(throughput(task, count, True) for _ in range(repeats))
        rows[task] = {
            "tasks": count,
            "without_store": without,
            "with_store": with_store,
            "cost": 1 - with_store / without,
        }
    lines = [
        "| workload (4 workers) | tasks | without store (tasks/s) | with store (tasks/s) | cost |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for task, row in rows.items():
        lines.append(
            f"| {task} | {row['tasks']:,} | {row['without_store']:,.0f} | "
            f"{row['with_store']:,.0f} | {row['cost']:.0%} |"
        )
    table = "\n".join(lines)
    print(table)
    if not args.quick:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "store.json").write_text(json.dumps(rows, indent=2))
        (RESULTS / "store.md").write_text(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The same 2,000-task DAG on the engine's threads, a process pool and a local Dask cluster.

    python -m benchmarks.executors_bench               # all executors, all workloads
    python -m benchmarks.executors_bench --quick       # 200 tasks, to check it runs
    python -m benchmarks.executors_bench --json out.json

Each executor runs in a fresh process (so threads one leaves behind never compete
for the GIL with the next). Every executor gets the same number of slots
(``--slots``, default 4): 4 engine threads, a pool of 4 processes, or a Dask
LocalCluster of 4 single-threaded worker processes on loopback; the engine keeps
that many runs in flight (``dask-deep``: 4 times as many, so the cluster always
has queued work while results travel back). Workloads, each the same random DAG
(every task depends on up to 3 earlier ones, fixed seed):

- noop:  tasks that do nothing: the per-task cost of the executor
- cpu:   each task runs ~5 ms of pure-Python arithmetic (holds the GIL)
- sleep: each task sleeps 10 ms (releases the GIL, like waiting on I/O)
- cmd:   each task is a Command running ``true`` (a subprocess; 1/10 of the tasks)

Reported: seconds to start the executor, wall seconds from ``start()`` until every
task settled, and tasks per second.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import time

SEED = 7
N_TASKS = 2_000
CPU_MS = 5.0
SLEEP_MS = 10.0
EXECUTORS = ("threads", "processes", "dask", "dask-deep")
DEEP = 4  # dask-deep: the engine keeps DEEP x slots runs in flight, hiding round trips
WORKLOADS = ("noop", "cpu", "sleep", "cmd")
HERE = "benchmarks.executors_bench"


# ---------------------------------------------------------------------- task bodies
def noop() -> None:
    return None


def spin(iterations: int) -> int:
    total = 0
    for i in range(iterations):
        total += i * i
    return total & 1


def nap(seconds: float) -> None:
    time.sleep(seconds)


def spin_iterations_for(ms: float) -> int:
    """How many ``spin`` iterations take ``ms`` milliseconds here, single-threaded."""
    probe = 200_000
    best = float("inf")
    for _ in range(5):  # the fastest of a few: other load on the machine only slows
        started = time.perf_counter()
        spin(probe)
        best = min(best, time.perf_counter() - started)
    per_iteration = best / probe
    return max(1, int(ms / 1000.0 / per_iteration))


# ---------------------------------------------------------------------- the DAG
def dag_specs(n: int, seed: int = SEED) -> list[tuple[str, tuple[str, ...]]]:
    """Task i depends on up to 3 of the 50 tasks before it (fixed seed)."""
    rng = random.Random(seed)
    specs = []
    for i in range(n):
        earlier = range(max(0, i - 50), i)
        deps = rng.sample(earlier, min(len(earlier), rng.randint(0, 3)))
        specs.append((f"t{i}", tuple(f"t{d}" for d in sorted(deps))))
    return specs


def task_for(workload: str, iterations: int):
    from taskloom.engine import Call
    from taskloom.engine.command import Command

    if workload == "noop":
        return Call(f"{HERE}:noop")
    if workload == "cpu":
        return Call(f"{HERE}:spin", {"iterations": iterations})
    if workload == "sleep":
        return Call(f"{HERE}:nap", {"seconds": SLEEP_MS / 1000.0})
    if workload == "cmd":
        return Command(["true"])
    raise ValueError(workload)


# ---------------------------------------------------------------------- one executor
def start_executor(name: str, slots: int):
    """(the executor, or None for the engine's threads; a function that stops it)."""
    from taskloom.engine.pools import DaskExecutor, RecoveringProcessPool

    if name == "threads":
        return None, lambda: None
    if name == "processes":
        pool = RecoveringProcessPool(slots)
        for future in [pool.submit(os.getpid) for _ in range(slots)]:
            future.result()  # the children are up before anything is timed
        return pool, lambda: pool.shutdown(wait=True)
    if name in ("dask", "dask-deep"):
        from distributed import Client, LocalCluster

        # One thread per worker process: a task that holds the GIL would otherwise
        # starve the worker's own networking thread and slow every round trip.
        cluster = LocalCluster(
            n_workers=slots,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            silence_logs=50,
        )
        client = Client(cluster)
        client.wait_for_workers(slots)

        def stop():
            client.close()
            cluster.close()

        return DaskExecutor(client), stop
    raise ValueError(name)


def run_workload(executor, in_flight: int, workload: str, n: int, iterations: int) -> dict:
    from taskloom.engine import Scheduler, TaskState

    specs = dag_specs(n if workload != "cmd" else max(1, n // 10))
    task = task_for(workload, iterations)
    s = Scheduler(workers=in_flight, executor=executor)  # not started: the whole DAG goes in first
    try:
        for tid, deps in specs:
            s.add(task, name=tid, deps=deps)
        started = time.perf_counter()
        s.start()
        s.wait()
        wall = time.perf_counter() - started
        failed = sum(1 for info in s.tasks() if info.state is not TaskState.SUCCEEDED)
    finally:
        s.shutdown(wait=True)
    return {"tasks": len(specs), "wall_s": wall, "tasks_per_s": len(specs) / wall, "failed": failed}


def run_one(name: str, slots: int, n: int, workloads: list[str]) -> dict:
    iterations = spin_iterations_for(CPU_MS)
    started = time.perf_counter()
    executor, stop = start_executor(name, slots)
    startup = time.perf_counter() - started
    in_flight = slots * DEEP if name.endswith("-deep") else slots
    try:
        results = {w: run_workload(executor, in_flight, w, n, iterations) for w in workloads}
    finally:
        stop()
    return {"executor": name, "startup_s": startup, "workloads": results}


# ---------------------------------------------------------------------- report
def table(rows: list[dict], workloads: list[str]) -> str:
    header = ["executor", "startup s"]
    for w in workloads:
        header += [f"{w} s", f"{w} tasks/s"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        if "error" in row:
            lines.append(f"| {row['executor']} | error: {row['error']} |")
            continue
        cells = [row["executor"], f"{row['startup_s']:.2f}"]
        for w in workloads:
            result = row["workloads"][w]
            mark = f" ({result['failed']} failed)" if result["failed"] else ""
            cells += [f"{result['wall_s']:.2f}{mark}", f"{result['tasks_per_s']:,.0f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="200 tasks instead of 2,000")
    parser.add_argument("--slots", type=int, default=4, help="parallel runs per executor")
    parser.add_argument("--executors", default=",".join(EXECUTORS))
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: run one executor here
    args = parser.parse_args(argv)
    n = 200 if args.quick else N_TASKS
    workloads = [w for w in args.workloads.split(",") if w]

    if args.one:
        print(json.dumps(run_one(args.one, args.slots, n, workloads)))
        return 0

    rows = []
    for name in [e for e in args.executors.split(",") if e]:
        command = [sys.executable, "-m", HERE, "--one", name, "--slots", str(args.slots)]
        command += ["--workloads", ",".join(workloads)] + (["--quick"] if args.quick else [])
        done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
        if done.returncode != 0:
            rows.append({"executor": name, "error": done.stderr.strip().splitlines()[-1:]})
            continue
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(f"{name}: done", file=sys.stderr)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    machine = (
        f"Python {platform.python_version()}, {os.cpu_count()} cores, "
        f"{platform.platform()}, load average {load:.1f} at the end"
    )
    print(f"{n} tasks per workload ({n // 10} for cmd), {args.slots} slots; {machine}\n")
    print(table(rows, workloads))
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"machine": machine, "tasks": n, "slots": args.slots, "rows": rows}, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
